"""Verdicts a QA team can trust, through the real CLI: baselines, accept, the cache, exit 3.

The project (agent, behaviour file, cases) is the one of ``tests/cli/test_probe.py``: a Python
agent whose behaviour per topic is read from ``behaviour.json`` at every call, so a test can
change what it does without changing its source (same version) or change its source (a new
version, a new source hash).
"""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET

from frontier_qa.store import _baselines as baselines
from frontier_qa.store._case_store import CaseStore
from tests.cli.test_probe import Project


def health(project: Project, out: str) -> tuple[str, list[str], str]:
    """What report.json, report.md and junit.xml say about a run that could not judge the agent."""
    report = project.report(out)
    md = (project.root / out / "report.md").read_text().splitlines()
    junit = ET.parse(project.root / out / "junit.xml").getroot()
    errored = [c for c in junit.iter("testcase") if c.find("error") is not None]
    assert report["gate"]["exit_code"] == 3 and report["gate"]["could_not_judge"] is True
    assert md[4] == "**Could not judge the agent (exit 3).**"  # right after the title and the target line
    assert junit.get("errors") == "1" and [c.get("name") for c in errored] == ["run health"]
    return report["gate"]["health"][0]["code"], md, errored[0].find("error").get("type")


# --- baselines change only when a person says so ------------------------------------------------


def test_a_broken_agent_stays_red_until_accepted_and_every_baseline_is_kept(project: Project) -> None:
    project.behave(weekdays="coin")
    assert project.probe("--out", "out", "--store", "store")[0] == 0
    project.behave(weekdays="coin", arithmetic="wrong")
    for run in ("r1", "r2"):  # replays never move the baseline: red twice, not red then green
        rc, out, _ = project.cli("replay", *project.base(), "--store", "store", "--out", run)
        assert rc == 1 and project.report(run)["replay"]["counts"]["regression"] == 6
    assert "  regression: arithmetic/add-0" in out and "    replay it:  frontier-qa replay --target python:agent.py:answer" \
        in out
    store = CaseStore(project.root / "store")
    assert store.accepted() == {}
    assert baselines.resolve(store)["add-0"].source == "first"
    md = (project.root / "r2" / "report.md").read_text()
    assert md.index("## Regressions (6)") < md.index("## Summary")  # the regressions come first
    assert "*1 more regressions: see report.json*" not in md and "History: " in md
    rc, out, _ = project.cli("accept", "--all", "--target", "python:agent.py:answer", "--store", "store")
    assert rc == 0 and "10 baseline(s) accepted into store; earlier ones stay as history" in out
    held = store.accepted()["add-0"]
    assert (held.source, held.k, held.case_class.value) == ("accept", 40, "failure")  # topped up to 40 samples
    rc, out, _ = project.cli("replay", *project.base(), "--store", "store", "--out", "r3")
    assert rc == 0 and "replay: same 10" in out
    project.behave(weekdays="coin")  # the fix lands: held to the accepted (wrong) answers, that is a change
    rc, _, _ = project.cli("replay", *project.base(), "--store", "store", "--out", "r4")
    assert project.report("r4")["replay"]["counts"]["flaky"] == 6  # same agent, finding gone: flaky, not green
    rc, _, _ = project.cli("accept", "add-0", "--target", "python:agent.py:answer", "--store", "store")
    assert rc == 0 and [b.source for b in store.baseline_lines() if b.case_id == "add-0"] == ["accept", "accept"]
    report = json.loads((project.root / "r4" / "report.json").read_text())
    case = next(c for c in report["cases"] if c["id"] == "add-0")
    assert case["prompt"].startswith("Case 0: Ana has 17 apples") and len(case["history"]) >= 4


def test_export_keeps_guards_and_baselines(project: Project) -> None:
    project.behave(weekdays="coin")
    project.probe("--out", "out", "--store", "store")
    rc, out, _ = project.cli("export", "--store", "store", "--suite", "suite.yaml", "--guards", "3")
    assert rc == 0 and "exported 7 case(s) to suite.yaml: 4 finding(s) (frontier, failure, suspect), 3 guard(s)" in out
    from frontier_qa.store._suites import import_suite

    entries = import_suite(project.root / "suite.yaml")
    assert sorted(e.role for e in entries) == ["finding"] * 4 + ["guard"] * 3
    assert all(e.baseline is not None and e.baseline.k > 0 for e in entries)
    project.behave(weekdays="coin", arithmetic="wrong")  # a guard (a stable right sum) breaks
    rc, out, _ = project.cli("replay", *project.base(), "--suite", "suite.yaml", "--store", "ci", "--out", "ci")
    assert rc == 1 and "(3 guard case(s) among them)" in out
    assert project.report("ci")["replay"]["guards"]["regression"] == 3


# --- agent identity: an edited agent never replays old answers ------------------------------------


def test_an_edited_agent_file_invalidates_the_cache(project: Project) -> None:
    def calls(out: str) -> int:
        return int(out.split("budget: calls ")[1].split(",")[0].split("/")[0])

    # each run samples as the first did: no prior learnt from the earlier runs' cases in the store
    alone = ("--store", "store", "--no-replay", "--set", "probing.prior_from_store=false")
    first = project.probe("--out", "a", *alone)[1]
    assert calls(first) > 0
    assert calls(project.probe("--out", "b", *alone)[1]) == 0  # all from the cache
    assert calls(project.probe("--out", "c", *alone, "--no-cache")[1]) == calls(first)
    before = project.report("b")["cases"][0]["target_version"]
    project.edit_agent()
    after = project.probe("--out", "d", *alone)[1]
    assert calls(after) == calls(first)  # a new source hash: nothing comes from the cache
    version = project.report("d")["cases"][0]["target_version"]
    assert before.startswith("1+src.") and version.startswith("1+src.") and version != before
    assert "target python:agent.py:answer (version 1+src." in after


# --- runs that could not judge the agent: exit 3, the reason first ------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAST_FAIL = ["--set", "target.limits.max_retries=0", "--set", "target.limits.max_consecutive_failures=3"]


def test_an_unreachable_target_could_not_judge(project: Project) -> None:
    url = f"http://127.0.0.1:{free_port()}/agent"  # nothing listens: connection refused
    rc, out, _ = project.cli("probe", "--target", url, "--curriculum", "cases.jsonl", "--k", "3", "--progress", "off",
                             "--store", "store", "--out", "down", *FAST_FAIL)
    assert rc == 3
    assert out.splitlines()[:2] == ["could not judge the agent (exit 3):",
                                    f"  - the target http:{url} stopped answering: target 'http:{url}' "
                                    "failed 3 calls in a row (Limits.max_consecutive_failures = 3); last error: "
                                    f"transient: ConnectError: All connection attempts failed."]
    assert health(project, "down")[0] == "target-unavailable"


def test_an_agent_that_always_raises_could_not_judge(project: Project) -> None:
    (project.root / "agent.py").write_text("def answer(case):\n    raise ValueError('no model configured')\n")
    rc, out, _ = project.probe("--out", "raises", "--store", "store")
    assert rc == 3 and out.startswith("could not judge the agent (exit 3):\n  - every one of the ")
    assert "the agent raised ValueError: no model configured" in out.splitlines()[1]
    code, md, kind = health(project, "raises")
    assert code == "every-call-failed" and kind == "could-not-judge"


def test_an_empty_case_file_could_not_judge(project: Project) -> None:
    project.write_cases([])
    rc, out, _ = project.probe("--out", "empty", "--store", "store")
    assert rc == 3 and "the curriculum proposed no case (is the cases file empty?)" in out.splitlines()[1]
    assert health(project, "empty")[0] == "curriculum-empty"


def test_a_budget_stop_with_every_case_unresolved_could_not_judge(project: Project) -> None:
    rc, out, _ = project.probe("--out", "broke", "--store", "store", "--budget-calls", "2", "--concurrency", "1")
    assert rc == 3 and "1 of 1 cases (100%) stayed unresolved (budget), above the limit of 20%" in out
    code, md, _ = health(project, "broke")
    assert code == "unresolved-share" and "raise the budget or k, or resume the run" in md[5]


def test_cases_that_all_fail_validation_could_not_judge(project: Project) -> None:
    project.write_cases([{"id": f"blank-{i}", "prompt": f"What is {i} + {i}?", "reference": " ", "topic": "arithmetic"}
                         for i in range(2)])
    rc, out, _ = project.probe("--out", "invalid", "--store", "store")
    assert rc == 3 and out.splitlines()[1] == ("  - none of the 2 cases could be classified: every one failed "
                                               "validation (see their reasons in report.md)")
    assert health(project, "invalid")[0] == "no-valid-case"
