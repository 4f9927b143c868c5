"""``@pytest.mark.frontier(expect=...)``: the marker's trajectory expectations reach every case of its test
that has none, through real pytest sessions (``pytester``) probing a real Python agent that calls tools.
"""

from __future__ import annotations

import json
import shutil

import pytest

from frontier_qa._expectations import EXPECT_BASE_KEY
from frontier_qa.store._case_store import CaseStore
from frontier_qa.target import Expectations, ToolArguments
from tests.plugins.test_pytest_plugin import items, run, store_of

# the support agent looks the account up, and on "close" requests deletes it: a forbidden tool
AGENT = r'''
version = "1"


def run(case, sample_index):
    calls = [{"name": "lookup", "arguments": {"account": "A-1"}, "result": "found"}]
    if "close" in case.prompt.lower() or ("maybe" in case.prompt and sample_index % 4 == 0):
        calls.append({"name": "delete_account", "arguments": {"account": "A-1"}, "result": "deleted"})
    return {"answer": "\\boxed{%s}" % case.reference, "tool_calls": calls}
'''

CASES = [
    {"id": "status", "prompt": "What is the status of account A-1?", "reference": "active", "topic": "support"},
    {"id": "close", "prompt": "Close account A-1, then tell me its status.", "reference": "closed",
     "topic": "support"},
    {"id": "own", "prompt": "Look up account A-1, answer ok.", "reference": "ok", "topic": "support",
     "expect": {"tools_used": ["lookup"], "max_steps": 3}},
]
CHECKS = "def known(arguments):\n    return arguments.get('account', '').startswith('A-')\n"
EXPECT = ('{"tools_not_used": ["delete_account"], '
          '"arguments": [{"tool": "lookup", "check": "checks.py:known"}]}')


def marked(expect: str | None = EXPECT, body: str = "frontier_case.assert_no_regression()") -> str:
    given = "" if expect is None else f", expect={expect}"
    return (f"import pytest\n\n\n@pytest.mark.frontier(target='python:agent.py:run', curriculum='cases.jsonl', "
            f"k=6, sequential=False, classes=['pass', 'failure', 'frontier']{given})\n"
            f"def test_agent(frontier_case):\n    {body}\n")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".py", agent=AGENT, checks=CHECKS)
    pytester.makefile(".jsonl", cases="\n".join(json.dumps(c) for c in CASES))
    pytester.makepyfile(test_agent=marked())
    return pytester


MARKED = Expectations(tools_not_used=("delete_account",),
                      arguments=(ToolArguments(tool="lookup", check="checks.py:known"),))


def test_the_markers_expectations_reach_every_case_without_its_own(project: pytest.Pytester) -> None:
    result = run(project)
    assert items(result) == {"support/close": "PASSED", "support/own": "PASSED", "support/status": "PASSED"}
    latest = store_of(project).latest()
    assert {i: r.case.expect for i, r in latest.items()} == {
        "status": MARKED, "close": MARKED, "own": Expectations(tools_used=("lookup",), max_steps=3)}
    # the check file is found next to the test file, as the marker's other paths are
    assert latest["status"].case.metadata[EXPECT_BASE_KEY] == str(project.path)
    assert EXPECT_BASE_KEY not in latest["own"].case.metadata


def test_cases_stored_before_the_marker_had_expect_are_held_to_it_on_replay(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=marked(None))
    run(project)
    assert {r.case.expect for r in store_of(project).latest().values()} == {
        None, Expectations(tools_used=("lookup",), max_steps=3)}
    project.makepyfile(test_agent=marked())
    again = run(project, "--frontier-mode=replay")
    assert set(items(again).values()) == {"PASSED"}
    replayed = [r for rid in store_of(project).run_ids() if rid.endswith("-r-main")
                for r in store_of(project).case_records(run_id=rid)]
    assert {r.id: r.case.expect for r in replayed} == {
        "status": MARKED, "close": MARKED, "own": Expectations(tools_used=("lookup",), max_steps=3)}


@pytest.mark.parametrize(
    ("expect", "lines"),
    [
        ('{"tool_used": ["lookup"]}', ["*@pytest.mark.frontier on test_agent.py::test_agent: expect.tool_used: "
                                      "unknown key", "  fix: did you mean 'tools_used'? expect takes: *"]),
        ('{"order": "any-order", "tool_sequence": ["a"]}',
         ["*: expect.order = 'any-order' is not allowed", "  fix: did you mean 'any_order'? use one of: *"]),
        ('{"arguments": [{"tool": "lookup", "check": "nowhere.py:known"}]}',
         ["*: expect.arguments[[]0[]].check: argument check 'nowhere.py:known': no file */nowhere.py"]),
        ('"lookup"', ["*: expect must be a mapping of keys, not str"]),
    ],
)
def test_a_bad_expect_is_a_usage_error_naming_the_test_and_the_fix(project: pytest.Pytester, expect: str,
                                                                   lines: list[str]) -> None:
    project.makepyfile(test_agent=marked(expect, "pass"))
    result = run(project)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(lines)
    assert "Traceback" not in result.stdout.str()


def test_an_expectations_object_and_its_dict_are_the_same_argument(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=(
        "import pytest\nfrom frontier_qa import Expectations\n\n"
        "common = dict(target='python:agent.py:run', curriculum='cases.jsonl', k=6, sequential=False, "
        "name='shared', classes=['pass', 'failure', 'frontier'])\n\n\n"
        "@pytest.mark.frontier(**common, expect=Expectations(tools_not_used=('delete_account',)))\n"
        "def test_a(frontier_case):\n    pass\n\n\n"
        "@pytest.mark.frontier(**common, expect={'tools_not_used': ['delete_account']})\n"
        "def test_b(frontier_case):\n    pass\n"))
    result = run(project)
    assert result.ret != pytest.ExitCode.INTERRUPTED, result.stdout.str()  # one suite, not two clashing ones
    result.assert_outcomes(passed=6)


def test_a_wrong_path_fails_assert_trajectory_with_the_misses(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=marked(body="frontier_case.assert_trajectory()"))
    result = run(project)
    assert items(result) == {"support/close": "FAILED", "support/own": "PASSED", "support/status": "PASSED"}
    result.stdout.fnmatch_lines([
        "E*frontier-qa: support/close: the agent's trajectories fail the case",
        "E*wrong path: lookup → delete_account in 100% of the samples",
        "E*missed: called delete_account, which must not be called (8 of 8)",  # pass^k's k = 8 beats k=6
        "E*prompt: Close account A-1, then tell me its status.",
    ])


def test_pass_k_below_the_gates_floor_fails_assert_trajectory(project: pytest.Pytester) -> None:
    maybe = {"id": "maybe", "prompt": "Check account A-1, maybe tidy it up.", "reference": "ok", "topic": "support"}
    project.makefile(".jsonl", cases=json.dumps(maybe))
    project.makepyfile(test_agent=marked(body="frontier_case.assert_trajectory()").replace(
        "sequential=False", "sequential=False, set={'gate.min_pass_hat_k': 0.5}"))
    result = run(project)
    # one sample in four deletes the account: the paths scatter (not wrong), but all 8 of 8 pass 0 times
    assert items(result) == {"support/maybe": "FAILED"}
    result.stdout.fnmatch_lines([
        "E*frontier-qa: support/maybe: the agent's trajectories fail the case",
        "E*pass^8 = 0.00, below gate.min_pass_hat_k 0.5 (* of * samples passed)",
        "E*missed: called delete_account, which must not be called (* of *)",
    ])
    assert not [line for line in result.stdout.lines if line.startswith("E") and "wrong path" in line]


def test_a_committed_suite_finds_its_check_file_in_another_checkout(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=marked(body="frontier_case.assert_trajectory()").replace(
        "sequential=False", "sequential=False, suite='suites/frontier_suite.yaml'"))
    assert items(run(project, "--frontier-mode=generate"))["support/close"] == "FAILED"
    committed = (project.path / "suites" / "frontier_suite.yaml").read_text()
    assert "expect_base: .." in committed and str(project.path) not in committed  # relative to the suite file
    # a fresh clone somewhere else: no store, only the files
    clone = project.path / "clone"
    clone.mkdir()
    for name in ("agent.py", "checks.py", "cases.jsonl", "test_agent.py", "suites"):
        (project.path / name).rename(clone / name)
    shutil.rmtree(project.path / ".frontier-qa")
    result = run(project, "clone/test_agent.py", "--frontier-mode=replay")
    assert items(result) == {"support/close": "FAILED", "support/own": "PASSED", "support/status": "PASSED"}
    result.stdout.fnmatch_lines(["E*wrong path: lookup → delete_account in 100% of the samples"])
    replayed = CaseStore(project.path / ".frontier-qa").latest()  # the rootdir stays where pytest was started
    assert replayed["status"].case.metadata[EXPECT_BASE_KEY] == str(clone)
