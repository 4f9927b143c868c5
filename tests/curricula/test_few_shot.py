"""The few-shot curriculum style for small models: prompt, prefill, parsing, copies, adaptation.

The curriculum model is a scripted adapter opened through the real runtime, so the requests are
exactly what a local model would receive; one slow test runs the real SmolLM2 (``model``).
"""

from __future__ import annotations

import asyncio
import random

import pytest

from frontier_qa.curricula import _few_shot as few_shot
from frontier_qa.curricula._prompted import PromptedCurriculum
from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Outcome
from frontier_qa.runtime import open_target
from frontier_qa.target import Adapter, Case, Sampling, Trajectory


class Scripted(Adapter):
    """A model that continues a prefill (``supports_prefill``) with ``reply``; records requests."""

    max_n = 1

    def __init__(self, replies: list[str], prefill: bool = True) -> None:
        self.id = "scripted-small"
        self.replies = replies
        self.supports_prefill = prefill
        self.requests: list[tuple[Case, Sampling]] = []

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        self.requests.append((case, sampling))
        text = self.replies[(len(self.requests) - 1) % len(self.replies)]
        return [Trajectory(text=text, sample_index=start)]


def curriculum(replies: list[str], prefill: bool = True, **options: object) -> tuple[Scripted, PromptedCurriculum]:
    adapter = Scripted(replies, prefill)
    model = open_target(adapter, cache=False)  # type: ignore[arg-type]
    return adapter, PromptedCurriculum(model, domain="math", style="few_shot", **options)  # type: ignore[arg-type]


# --- parsing -------------------------------------------------------------------------------------


def test_parse_reads_the_first_problem_and_its_fields() -> None:
    text = (" A tank holds 90 liters and leaks 6 liters per hour. After how many hours is it empty?\n"
            "Answer: 15 hours\nProgram: print(90 / 6)\n\nProblem: a second one?")
    task = few_shot.parse(text, prefilled=True)
    assert task.question == "A tank holds 90 liters and leaks 6 liters per hour. After how many hours is it empty?"
    assert task.reference == "15"  # the unit is dropped so the program's "15.0" can verify it
    assert task.solution == "print(90 / 6)"
    assert task.error is None


@pytest.mark.parametrize(("answer", "reference"), [
    ("10 * 100 = 1000", "1000"), ("$30", "30"), ("1,200 eggs", "1200"), ("3/4", "3/4"),
    ("Expressed as a decimal", "Expressed as a decimal"),
])
def test_parse_keeps_the_result_of_an_answer_line(answer: str, reference: str) -> None:
    assert few_shot.parse(f"Problem: How many eggs are in six boxes?\nAnswer: {answer}", prefilled=False).reference == reference


def test_parse_skips_chatter_and_blank_lines_but_stops_at_prose() -> None:
    text = ("Sure! Here is one.\n\n**Problem:** How many legs do 7 spiders have in total?\n\nAnswer: 56\n"
            "Program: print(7 * 8)\nThis problem is about spiders.\nProgram: print(0)")
    task = few_shot.parse(text, prefilled=False)
    assert (task.question, task.reference, task.solution) == ("How many legs do 7 spiders have in total?", "56",
                                                             "print(7 * 8)")


@pytest.mark.parametrize(("text", "reason"), [
    ("no fields at all", "no 'Problem:' line"),
    ("Problem: How many?", "too short"),
    ("Problem: 3/4 of 7 equals 4 in this case.", "asks nothing"),
    ("Problem: " + "word " * 100 + "?", "too long"),
])
def test_parse_rejects_unusable_problems_with_a_reason(text: str, reason: str) -> None:
    task = few_shot.parse(text, prefilled=False)
    assert task.question is None and task.error is not None and reason in task.error


def test_a_program_that_prints_nothing_is_not_a_solution() -> None:
    task = few_shot.parse("Problem: Find the sum of 3, 4 and 5.\nAnswer: 12\nProgram: x = 3 + 4 + 5", prefilled=False)
    assert task.question == "Find the sum of 3, 4 and 5." and task.solution is None


def test_choose_puts_preferred_examples_in_and_fills_from_the_pool() -> None:
    found = [few_shot.Example(f"found {i}?", str(i)) for i in range(3)]
    chosen = few_shot.choose(few_shot.MATH_EXAMPLES, found, 5, random.Random(1))
    assert len(chosen) == 5 and set(found) <= set(chosen)
    assert len(set(chosen)) == 5
    assert few_shot.choose(few_shot.MATH_EXAMPLES, found, 2, random.Random(1)).count(found[0]) == 0  # most recent


def test_load_examples_names_the_bad_row() -> None:
    rows = few_shot.load_examples([{"question": "How much is 2 + 2?", "answer": 4, "solution": "print(4)"}])
    assert rows == (few_shot.Example("How much is 2 + 2?", "4", "print(4)"),)
    with pytest.raises(ConfigError, match="example 1 needs a problem and an answer"):
        few_shot.load_examples([{"problem": "x?", "answer": "1"}, {"problem": "y?"}])


# --- the curriculum ------------------------------------------------------------------------------


def test_requests_show_examples_prefill_problem_and_stop_after_one() -> None:
    adapter, cur = curriculum([" How many wheels do 9 bicycles have?\nAnswer: 18\nProgram: print(9 * 2)"],
                              topics=["vehicles"], seed=3)
    (proposal,) = asyncio.run(cur.propose(1))
    case, sampling = adapter.requests[0]
    assert case.history == ({"role": "assistant", "content": "Problem:"},)
    assert case.prompt.count("Problem:") == 5 and "about vehicles" in case.prompt
    assert "\nProblem:" in sampling.stop and sampling.max_tokens <= 200
    assert proposal.case.prompt == "How many wheels do 9 bicycles have?"
    assert proposal.case.reference == "18" and proposal.solution == "print(9 * 2)"
    assert proposal.case.answer_format == "boxed" and proposal.case.topic == "vehicles"
    assert proposal.case.metadata["template"] == "few-shot-math"


def test_models_without_prefill_get_no_partial_turn() -> None:
    adapter, cur = curriculum(["Problem: How many wheels do 9 bicycles have?\nAnswer: 18"], prefill=False)
    (proposal,) = asyncio.run(cur.propose(1))
    assert adapter.requests[0][0].history == ()
    assert proposal.case.prompt == "How many wheels do 9 bicycles have?"


def test_a_copy_of_a_shown_example_is_invalid_with_the_reason() -> None:
    copy = " A box holds 6 rows of 8 eggs. How many eggs are in the box?\nAnswer: 48"
    adapter, cur = curriculum([copy], examples=[{"problem": "A box holds 6 rows of 8 eggs. How many eggs are in "
                                                 "the box?", "answer": "48"}])
    (proposal,) = asyncio.run(cur.propose(1))
    assert proposal.case.prompt == "" and "copies a shown example" in proposal.case.metadata["invalid_reason"]
    _, keep = curriculum([copy], examples=[{"problem": "A box holds 6 rows of 8 eggs. How many eggs are in "
                                            "the box?", "answer": "48"}], dedupe_threshold=None)
    assert asyncio.run(keep.propose(1))[0].case.prompt.startswith("A box holds")


def test_frontier_cases_come_back_as_worked_examples() -> None:
    reply = " How many minutes are in 7 hours?\nAnswer: 420\nProgram: print(7 * 60)"
    adapter, cur = curriculum([reply], history_examples=2)
    (first,) = asyncio.run(cur.propose(1))
    cur.observe([Outcome(first, "frontier", p_hat=0.5), Outcome(first, "pass", p_hat=1.0)])
    asyncio.run(cur.propose(1))
    later = adapter.requests[-1][0].prompt
    assert "Problem: How many minutes are in 7 hours?\nAnswer: 420\nProgram: print(7 * 60)" in later
    assert "Problem: How many minutes are in 7 hours?" not in adapter.requests[0][0].prompt


def test_proposals_are_deterministic_by_seed() -> None:
    a, one = curriculum([" How many days are in 5 weeks?\nAnswer: 35"], seed=11)
    b, two = curriculum([" How many days are in 5 weeks?\nAnswer: 35"], seed=11)
    asyncio.run(one.propose(3))
    asyncio.run(two.propose(3))
    assert [c.prompt for c, _ in a.requests] == [c.prompt for c, _ in b.requests]
    assert len({c.prompt for c, _ in a.requests}) > 1  # examples differ per request


@pytest.mark.parametrize(("options", "match"), [
    ({"domain": "tools", "tools": [{"type": "function", "function": {"name": "f"}}]}, "not available for domain"),
    ({"domain": "general"}, "needs worked examples"),
    ({"style": "tiny"}, "unknown curriculum style"),
])
def test_bad_style_options_are_config_errors(options: dict[str, object], match: str) -> None:
    model = open_target(Scripted(["x"]), cache=False)  # type: ignore[arg-type]
    kwargs = {"domain": "math", "style": "few_shot", **options}
    with pytest.raises(ConfigError, match=match):
        PromptedCurriculum(model, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="style 'few_shot' only"):
        PromptedCurriculum(model, domain="math", examples=[{"problem": "a?", "answer": "1"}])  # type: ignore[arg-type]


@pytest.mark.model
@pytest.mark.slow
def test_smollm2_writes_usable_tasks_in_the_few_shot_style(report_measurement) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("transformers")
    model = open_target("hf:smollm2", cache=False)
    cur = PromptedCurriculum(model, domain="math", style="few_shot", seed=0, topics=["money", "time"],  # type: ignore[arg-type]
                             sampling=Sampling(temperature=0.7, top_p=0.9, max_tokens=120))
    try:
        proposals = asyncio.run(cur.propose(8))
    finally:
        asyncio.run(model.aclose())
    usable = [p for p in proposals if p.case.prompt]
    # The instruct template gets 0 of these from SmolLM2 (test_prompted_curriculum); this style most.
    assert len(usable) >= 4, [p.case.metadata.get("invalid_reason") for p in proposals]
    for p in usable:
        assert p.case.prompt.endswith("?") or few_shot._ASKS.match(p.case.prompt)
    with_reference = sum(p.case.reference is not None for p in usable)
    report_measurement("smollm2_few_shot", f"SmolLM2-135M few-shot curriculum: {len(usable)}/8 usable tasks, "
                                           f"{with_reference} with a reference, "
                                           f"{sum(p.solution is not None for p in usable)} with a program")


def test_a_program_without_an_answer_line_is_dropped() -> None:
    # verify.py would make its output a verified reference; one derivation of a small model is not enough
    task = few_shot.parse("Problem: How many legs do 3 ants have?\nProgram: print(3 * 6)", prefilled=False)
    assert task.question and task.reference is None and task.solution is None
