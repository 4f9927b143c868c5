"""The built-in generators: declared knobs, determinism, and references recomputed from the prompt alone."""

from __future__ import annotations

import calendar
import json
import re
from datetime import date, timedelta
from itertools import product
from statistics import mean

import pytest

from frontier_qa.generators._core import Generator, registered

NAMES = ("arithmetic", "number_words", "dates", "units", "word_problems")


@pytest.fixture(scope="module")
def gens() -> dict[str, Generator]:
    return registered()


def all_knobs(gen: Generator) -> list[dict[str, object]]:
    return [dict(zip((k.name for k in gen.knobs), combo, strict=True))
            for combo in product(*(k.values for k in gen.knobs))]


# -- declarations and determinism ------------------------------------------------------------------


def test_the_built_in_generators_are_registered_with_their_knobs(gens: dict[str, Generator]) -> None:
    assert set(NAMES) <= set(gens)
    declared = {name: {k.name: (k.kind, k.values, k.easy) for k in gens[name].knobs} for name in NAMES}
    assert declared == {
        "arithmetic": {"digits": ("ordinal", tuple(range(1, 9)), "low"),
                       "op": ("categorical", ("add", "sub", "mul"), None)},
        "dates": {"days": ("ordinal", (1, 3, 7, 15, 30, 60, 120, 365), "low"),
                  "crosses": ("categorical", ("month", "year"), None)},
        "units": {"chain": ("ordinal", tuple(range(1, 7)), "low")},
        "word_problems": {"steps": ("ordinal", tuple(range(1, 7)), "low"),
                          "distractors": ("ordinal", (0, 1, 2, 3), "low")},
        "number_words": {"digits": ("ordinal", tuple(range(1, 7)), "low"),
                         "op": ("categorical", ("add", "sub", "mul"), None)},
    }
    assert gens["arithmetic"].easy_knobs() == {"digits": 1, "op": "add"}
    assert gens["arithmetic"].shrink is not None
    assert all(gens[name].description for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_case_and_seeds_differ(gens: dict[str, Generator], name: str) -> None:
    gen = gens[name]
    for knobs in all_knobs(gen):
        assert gen.case(11, knobs) == gen.case(11, knobs)
        prompts = {gen.case(seed, knobs).prompt for seed in range(12)}
        assert len(prompts) >= 6, (knobs, prompts)  # 1-digit sums repeat now and then; most differ
        case = gen.case(3, knobs)
        assert case.reference_verified and case.reference
        json.dumps(dict(case.metadata))  # metadata is JSON-serialisable
        assert re.search(r"Give only the (final number|date, as YYYY-MM-DD)\.$", case.prompt)


# -- arithmetic ------------------------------------------------------------------------------------

ARITH = re.compile(r"What is (\d+) ([-+×]) (\d+)\? Give only the final number\.")


def parse_arithmetic(prompt: str) -> tuple[int, str, int]:
    m = ARITH.fullmatch(prompt)
    assert m, prompt
    return int(m[1]), m[2], int(m[3])


def test_arithmetic_references_and_digit_counts(gens: dict[str, Generator]) -> None:
    gen = gens["arithmetic"]
    for knobs in all_knobs(gen):
        for seed in range(20):
            case = gen.case(seed, knobs)
            a, sym, b = parse_arithmetic(case.prompt)
            assert sym == {"add": "+", "sub": "-", "mul": "×"}[knobs["op"]]
            assert len(str(a)) == len(str(b)) == knobs["digits"]
            expected = a + b if sym == "+" else a - b if sym == "-" else a * b
            assert case.reference == str(expected)
            if sym == "-":
                assert expected >= 0


def test_arithmetic_shrink_draws_smaller_operands_of_the_same_length(gens: dict[str, Generator]) -> None:
    gen = gens["arithmetic"]
    for digits, op in product(range(1, 9), ("add", "sub", "mul")):
        small, normal = [], []
        for seed in range(40):
            simplest = gen.case(seed, {"digits": digits, "op": op}, simplest=True)
            a, _, b = parse_arithmetic(simplest.prompt)
            assert len(str(a)) == len(str(b)) == digits
            assert simplest.reference == str(a * b if op == "mul" else a + b if op == "add" else a - b)
            assert simplest.metadata["generator"]["simplest"] is True
            small += [a, b]
            x, _, y = parse_arithmetic(gen.case(seed, {"digits": digits, "op": op}).prompt)
            normal += [x, y]
        assert mean(small) < mean(normal), (digits, op)
        assert max(small) < 10 ** (digits - 1) + 10


# -- number words ----------------------------------------------------------------------------------

WORD_VALUES = {**{w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                             "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())},
               **{w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split())
                  if w != "_"}}


def read_words(text: str) -> int:
    """An independent reader of the spellings (the test's own, not the generator's)."""
    total, group = 0, 0
    for word in text.replace("-", " ").split():
        if word == "hundred":
            group *= 100
        elif word in ("thousand", "million", "billion"):
            total += group * {"thousand": 1000, "million": 10**6, "billion": 10**9}[word]
            group = 0
        else:
            group += WORD_VALUES[word]
    return total + group


@pytest.mark.parametrize("n", [0, 7, 13, 20, 42, 100, 105, 343, 1000, 7006, 12345, 999999, 1000001, 10**9 + 7])
def test_spell_round_trips_through_an_independent_reader(n: int) -> None:
    from frontier_qa.generators._library import spell

    assert read_words(spell(n)) == n
    assert spell(42) == "forty-two" and spell(343) == "three hundred forty-three"


def test_number_words_references_digit_counts_and_shrink(gens: dict[str, Generator]) -> None:
    gen = gens["number_words"]
    question = re.compile(r"What is ([a-z -]+) (plus|minus|times) ([a-z -]+)\? Give only the final number\.")
    for knobs in all_knobs(gen):
        for seed in range(10):
            for simplest in (False, True):
                case = gen.case(seed, knobs, simplest=simplest)
                m = question.fullmatch(case.prompt)
                assert m is not None, case.prompt
                a, b = read_words(m[1]), read_words(m[3])
                assert len(str(a)) == len(str(b)) == knobs["digits"]
                assert m[2] == {"add": "plus", "sub": "minus", "mul": "times"}[knobs["op"]]
                assert case.reference == str(a + b if m[2] == "plus" else a - b if m[2] == "minus" else a * b)
                assert int(case.reference) >= 0
    long = gen.case(0, {"digits": 5, "op": "add"}).prompt
    short = gen.case(0, {"digits": 5, "op": "add"}, simplest=True).prompt
    assert len(short) < len(long)  # "twenty thousand" is the simpler reading


# -- dates -----------------------------------------------------------------------------------------

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
DATE_Q = re.compile(r"What date is (\d+) days? after (\d{4})-(\d\d)-(\d\d)\? Give only the date, as YYYY-MM-DD\.")


def test_dates_references_and_crossings(gens: dict[str, Generator]) -> None:
    gen = gens["dates"]
    starts = []
    for knobs in all_knobs(gen):
        for seed in range(25):
            case = gen.case(seed, knobs)
            m = DATE_Q.fullmatch(case.prompt)
            assert m, case.prompt
            days, start = int(m[1]), date(int(m[2]), int(m[3]), int(m[4]))
            assert days == knobs["days"]
            assert 1990 <= start.year <= 2030
            end = start + timedelta(days=days)
            assert case.reference == end.isoformat()
            assert (end.year, end.month) != (start.year, start.month)  # a month end is crossed
            if knobs["crosses"] == "year":
                assert end.year == start.year + 1
            elif days < 365:
                assert end.year == start.year
            starts.append(start)
    assert any(calendar.isleap(s.year) for s in starts)
    assert any(s.month == 2 and calendar.isleap(s.year) for s in starts)  # Feb 29 is in play
    assert len({s.year for s in starts}) > 25


def test_date_check_reads_common_forms_and_rejects_the_rest(gens: dict[str, Generator]) -> None:
    gen = gens["dates"]
    case = gen.case(5, {"days": 60, "crosses": "year"})
    check = gen.checks(case)
    assert check is not None
    right = date.fromisoformat(case.reference or "")
    month, weekday = MONTHS[right.month - 1], WEEKDAYS[right.weekday()]
    good = [right.isoformat(), f"{month} {right.day}, {right.year}", f"{right.day} {month} {right.year}",
            f"{month[:3]} {right.day}, {right.year}", f"{right.year}/{right.month:02}/{right.day:02}",
            f" {right.isoformat()}. ", f"{weekday}, {month} {right.day}, {right.year}",
            f"{month} {right.day}th, {right.year}".lower()]
    for answer in good:
        assert check(answer), answer
    wrong = right + timedelta(days=1)
    bad = [wrong.isoformat(), f"{MONTHS[wrong.month - 1]} {wrong.day}, {wrong.year}", "", "garbage", "2024-13-45",
           "Febtember 13, 2024", "13/02", str(right.year), f"{right.isoformat()} or {wrong.isoformat()}", "x" * 500]
    for answer in bad:
        assert not check(answer), answer
    assert check(None) is False  # type: ignore[arg-type]  # never raises


def test_date_check_on_a_known_date() -> None:
    from frontier_qa.generators._library import _date_check

    target = date(2024, 2, 13)
    for answer in ["2024-02-13", "February 13, 2024", "13 February 2024", "Feb 13, 2024", "2024/02/13"]:
        assert _date_check(target, answer), answer
    for answer in ["2024-02-14", "February 12, 2024", "13 March 2024", "2023/02/13", "Ma 13, 2024", "soon"]:
        assert not _date_check(target, answer), answer


# -- units -----------------------------------------------------------------------------------------

FACT = re.compile(r"^- 1 ([a-z]+) = (\d+) ([a-z]+)s$", re.M)
UNIT_Q = re.compile(r"How many ([a-z]+)s are in (\d) ([a-z]+)s\? Give only the final number\.$")


def test_units_references_from_the_stated_facts(gens: dict[str, Generator]) -> None:
    gen = gens["units"]
    for chain in range(1, 7):
        orders = set()
        for seed in range(50):
            case = gen.case(seed, {"chain": chain})
            facts = {a: (int(f), b) for a, f, b in FACT.findall(case.prompt)}
            assert len(facts) == chain
            q = UNIT_Q.search(case.prompt)
            assert q, case.prompt
            last, amount, unit = q[1], int(q[2]), q[3]
            assert 2 <= amount <= 9
            seen = [unit]
            while unit in facts:  # walk the chain from the first unit to the last
                factor, unit = facts[unit]
                assert 2 <= factor <= 12
                amount *= factor
                seen.append(unit)
            assert unit == last and len(seen) == chain + 1 == len(set(seen))
            assert case.reference == str(amount)
            orders.add(tuple(FACT.findall(case.prompt))[0][0] == seen[0])
        if chain > 1:
            assert orders == {True, False}  # the facts are shuffled, not always in chain order


def test_units_check_accepts_separators_and_the_unit_name(gens: dict[str, Generator]) -> None:
    gen = gens["units"]
    case = next(c for c in (gen.case(s, {"chain": 3}) for s in range(200)) if int(c.reference or 0) >= 1000)
    check = gen.checks(case)
    assert check is not None
    value = int(case.reference or 0)
    unit = case.metadata["units"][-1]
    for answer in [f"{value}", f"{value:,}", f"{value} {unit}s", f"{value:,} {unit}s", f"{value} {unit}", f"{value}."]:
        assert check(answer), answer
    other = "zork" if unit != "zork" else "blip"
    for answer in [str(value + 1), f"{value + 1:,}", f"{value} {other}s", f"{value}0", "12,34", "",
                   f"about {value}", f"{value / 1000:.1f}k", "many"]:
        assert not check(answer), answer
    assert check(None) is False  # type: ignore[arg-type]


# -- word problems ---------------------------------------------------------------------------------


def test_word_problem_references_and_distractors(gens: dict[str, Generator]) -> None:
    gen = gens["word_problems"]
    for knobs in all_knobs(gen):
        for seed in range(15):
            case = gen.case(seed, knobs)
            meta = case.metadata
            sentences = re.split(r"(?<=[.?])\s+", case.prompt)
            assert sentences[-1] == "Give only the final number."
            question = sentences[-2]
            item = re.fullmatch(r"How many (.+) does the .+ have now\?", question)
            assert item, question
            story = sentences[:-2]
            assert len(story) == 1 + knobs["steps"] + knobs["distractors"]
            about_item = [s for s in story if item[1] in s]
            noise = [s for s in story if item[1] not in s]
            assert sorted(noise) == sorted(meta["distractors"]) and len(noise) == knobs["distractors"]
            assert all(re.search(r"\d", s) for s in noise)
            # recompute from the prompt: the number in each sentence about the item, in order
            value = int(re.search(r"\d+", about_item[0])[0])  # type: ignore[index]
            used = [value]
            for sentence in about_item[1:]:
                n = int(re.search(r"\d+", sentence)[0])  # type: ignore[index]
                if "times as many" in sentence:
                    value *= n
                elif "more" in sentence or "new" in sentence:
                    value += n
                else:
                    value -= n
                assert value > 0
                used.append(n)
            assert used == list(meta["numbers_used"])
            assert case.reference == str(value)
            assert len(meta["operations"]) == knobs["steps"]
