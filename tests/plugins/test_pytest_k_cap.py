"""``k`` in ``@pytest.mark.frontier`` means what ``--k`` means: the cap of a sequential policy, with the
same warning when it is too low, through real pytest sessions (``pytester``) probing a real agent.

The agent answers right on 7 of every 10 sample indices and spreads its misses: p* = 0.7, in the
band, which the calibrated policy decides within its own 30 samples but not within 10.
"""

from __future__ import annotations

import json

import pytest

from tests.plugins.test_pytest_plugin import run, summary

AGENT = r'''
version = "1"


def run(case, sample_index):
    if sample_index % 10 in (2, 5, 8):
        return "\\boxed{wrong%d}" % (sample_index % 3)
    return "\\boxed{%s}" % case.reference
'''

CASES = [{"id": f"c{i}", "prompt": f"Case {i}: what is {i} + 10?", "reference": str(10 + i),
          "reference_verified": True, "topic": "arithmetic"} for i in range(3)]

TEST_FILE = '''
import pytest


@pytest.mark.frontier(target="python:agent.py:run", curriculum="cases.jsonl", {marker})
def test_agent(frontier_case):
    frontier_case.assert_no_regression()
'''

WARNING = "  warning: k = 10 caps the calibrated policy at 10 samples per case, below the 30 it needs"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".py", agent=AGENT)
    pytester.makefile(".jsonl", cases="\n".join(json.dumps(c) for c in CASES))
    return pytester


def test_a_marker_k_below_the_policy_s_need_warns_and_exit_3_names_it(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=TEST_FILE.format(marker="k=10"))
    result = run(project)
    assert result.ret == 3
    lines = summary(result)
    assert lines[0] == "could not judge the agent (exit 3):"
    assert lines[1].startswith("  - 3 of 3 cases (100%) stayed unresolved") and \
        "k = 10 capped the sampling at 10 samples per case (the run warned as it started); use --policy fixed " \
        "--k 10 (probing.policy: fixed) for Agent0's rule" in lines[1]
    assert any(line.startswith(WARNING) for line in lines)


def test_agent0_s_rule_in_the_marker_does_not_warn(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=TEST_FILE.format(marker="k=10, sequential=False"))
    result = run(project)
    assert result.ret != 3 and not any("warning:" in line for line in summary(result))
