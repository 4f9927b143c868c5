version = "1"


def run(case, sample_index):
    # right on arithmetic; a coin flip between the truth and "Friday" on weekdays
    truth = case.metadata.get("truth", case.reference)
    if case.topic == "weekdays" and sample_index % 2 == 1:
        return "\\boxed{Friday}"
    return "\\boxed{%s}" % truth
