"""A task generator's trajectory expectations: per instance on its Task, or for every instance on the
declaration; they land on the generated case and reach the records of a probe.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from frontier_qa._expectations import EXPECT_BASE_KEY
from frontier_qa.generators._core import GENERATOR_KEY, GeneratorError, Task, generator, ordinal
from frontier_qa.generators._explore import ExploreSettings, GeneratorCurriculum
from frontier_qa.generators._loading import load_generator
from frontier_qa.probing import ProbeSettings, probe
from frontier_qa.store import CaseStore
from frontier_qa.target import Case, Expectations, ToolArguments
from frontier_qa.testing import ScriptedAdapter, open_scripted

DIGITS = ordinal("digits", 1, 4, easy="low")


@generator(knobs=[DIGITS], name="t_expect_lookup", expect={"tools_not_used": ["delete_account"]})
def lookup(rng: random.Random, digits: int) -> Task:
    n = rng.randrange(10 ** (digits - 1), 10**digits)
    # big numbers need the calculator: the expectation depends on the knob, as the reference does
    expect = {"tools_used": ["calculator"], "max_steps": digits + 1} if digits > 2 else None
    return Task(f"What is {n} squared?", reference=str(n * n), expect=expect)


def test_a_task_gives_its_own_expectations_and_the_generator_the_rest() -> None:
    small, big = lookup.case(1, {"digits": 1}), lookup.case(1, {"digits": 3})
    assert small.expect == Expectations(tools_not_used=("delete_account",))  # the generator's, for every instance
    assert big.expect == Expectations(tools_used=("calculator",), max_steps=4)  # the task's own wins
    assert lookup.case(1, {"digits": 3}) == big  # the same seed and knobs: the same case, expectations too
    assert EXPECT_BASE_KEY not in big.metadata  # no check file to find


def test_a_bad_expectation_names_the_generator() -> None:
    with pytest.raises(GeneratorError, match=r"generator 't_bad_expect': expect.tool_used: unknown key") as err:
        generator(knobs=[DIGITS], name="t_bad_expect", expect={"tool_used": ["x"]}, register=False)(lookup.fn)
    assert "did you mean 'tools_used'?" in (err.value.hint or "")

    @generator(knobs=[DIGITS], name="t_bad_task_expect", register=False)
    def bad(rng: random.Random, digits: int) -> Task:
        return Task("What?", reference="1", expect={"order": "sorted", "tool_sequence": ["a"]})

    with pytest.raises(GeneratorError, match=r"generator 't_bad_task_expect' at digits=2 \(seed 5\): "
                                             r"expect.order = 'sorted' is not allowed"):
        bad.case(5, {"digits": 2})


def test_a_relative_check_file_is_found_next_to_the_generators_file(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("def positive(arguments):\n    return arguments.get('x', 0) > 0\n")
    mine = tmp_path / "gens.py"
    mine.write_text(
        "from frontier_qa.generators import Task, generator, ordinal\n"
        "@generator(knobs=[ordinal('digits', 1, 3, easy='low')], name='t_expect_file', register=False,\n"
        "           expect={'arguments': [{'tool': 'calc', 'check': 'checks.py:positive'}]})\n"
        "def gen(rng, digits):\n"
        "    return Task('Add?', reference='2')\n"
    )
    case = load_generator(f"{mine}:gen").case(3, {"digits": 2})
    assert case.expect is not None and case.expect.arguments == (
        ToolArguments(tool="calc", check="checks.py:positive"),)
    assert case.metadata[EXPECT_BASE_KEY] == str(tmp_path)


def small_only(case: Case, i: int) -> str:
    """Right on one-digit tasks, stably wrong beyond: the boundary's cases on both sides are recorded."""
    right = case.metadata[GENERATOR_KEY]["knobs"]["digits"] == 1
    return f"\\boxed{{{case.reference if right else int(case.reference or 0) + 1}}}"


def test_the_expectations_reach_the_records_of_a_probe(tmp_path: Path) -> None:
    curriculum = GeneratorCurriculum([load_generator({"use": "t_expect_lookup", "knobs": {"digits": [1, 3]}})],
                                     ExploreSettings())
    result = asyncio.run(probe(open_scripted(ScriptedAdapter(small_only)), curriculum, ProbeSettings(),
                               store=CaseStore(tmp_path / "store")))
    expects = {r.case.expect for r in result.records}
    assert expects == {Expectations(tools_not_used=("delete_account",)),
                       Expectations(tools_used=("calculator",), max_steps=4)}
