"""``@pytest.mark.frontier(generator=...)``: the boundary search's cases become test items (real pytest sessions).

The agent answers the built-in ``arithmetic`` generator (``op`` held at ``mul``) right up to three
digits, right on even samples at four (a frontier) and stably wrong from five: the search records a
pass at 3 digits (a guard), a frontier at 4 and a failure at 5, whose simplest instance is kept too.
"""

from __future__ import annotations

import pytest

from frontier_qa.store._suites import SUITE_KEY
from tests.plugins.test_pytest_plugin import items, run, store_of, summary

AGENT = r'''
def run(case, sample_index):
    d = case.metadata["generator"]["knobs"]["digits"]
    right = d <= 3 or (d == 4 and sample_index % 2 == 0)
    return "\\boxed{%s}" % (case.reference if right else int(case.reference) + 1)
'''

TEST_FILE = '''
import pytest
from frontier_qa.generators import Task, generator, ordinal


@pytest.mark.frontier(target="python:agent.py:run", generator={"use": "arithmetic", "knobs": {"op": ["mul"]}})
def test_arithmetic(frontier_case):
    frontier_case.assert_no_regression()
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".py", agent=AGENT)
    pytester.makepyfile(test_gen=TEST_FILE)
    return pytester


def test_the_boundary_cases_and_the_minimal_failure_become_items_and_replay(project: pytest.Pytester) -> None:
    first = run(project)
    found = items(first)
    kinds = sorted(k.split("-")[1] for k in found)  # arithmetic/arithmetic-digits5-opmul-... -> digits5
    assert kinds == ["digits3", "digits4", "digits5", "digits5"], first.stdout.str()
    lines = summary(first)
    assert any("boundary: arithmetic · digits (op=mul): ≥0.8 up to 3; <0.8 at 4" in line for line in lines)
    assert any(line.strip().startswith("gate: FAILED") for line in lines)
    assert first.ret == 1  # two failures (the failure at 5 digits and its simplest instance): the gate says so
    stored = store_of(project)
    assert all(r.case.metadata.get(SUITE_KEY) == "test_gen.py::test_arithmetic" for r in stored.latest().values())
    # the next session replays the same items from the store (no new search)
    again = run(project, "--frontier-mode=replay")
    assert items(again).keys() == found.keys()
    assert not any(line.startswith("  boundary:") for line in summary(again))


def test_a_bad_generator_argument_is_a_usage_error_naming_the_test(pytester: pytest.Pytester) -> None:
    pytester.makefile(".py", agent=AGENT)
    pytester.makepyfile(test_gen='''
import pytest

@pytest.mark.frontier(target="python:agent.py:run", generator="arithmetic", curriculum="cases.jsonl")
def test_both(frontier_case):
    pass

@pytest.mark.frontier(target="python:agent.py:run", generator=[])
def test_none(frontier_case):
    pass
''')
    result = run(pytester)
    out = result.stdout.str()
    assert "both curriculum= and generator= are given" in out
    assert result.ret != 0
