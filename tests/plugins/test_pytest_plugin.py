"""The pytest plugin, tested with real pytest sessions (``pytester``).

Every session probes a real Python agent (``agent.py`` below, written into the session's
folder) through the real runtime, engine and case store; no model is loaded. The agent reads
``mode.txt`` at every call, so one target (same id and version: its source does not change)
can change behaviour between sessions: ``v1`` (a frontier on weekdays: Monday, Monday, Friday
by sample index; a stable wrong 42 on a case whose verified reference is 43; right on add-1),
``fixed`` (the reference everywhere), ``broken`` (always Sunday on weekdays) or ``wrong-add``
(v1, but add-1 answered 41).

Expected values are worked out by hand from that script: with k = 6 fixed samples a weekday
case gets 4 Mondays of 6 (p̂ = 0.6667, in the Agent0 band: frontier). A replay samples in looks
of 5, 10, 20, 40, 80 new samples until the regression test decides; samples 6..15 of a weekday
case give 7 Mondays of 10 (p̂ 0.70, still in the band: ``same``).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import math_verify  # noqa: F401
import nltk.translate.bleu_score  # noqa: F401
import pytest
import scipy.special  # noqa: F401
import sklearn.cluster  # noqa: F401

# In-process pytester runs drop every module first imported during the run, and importing
# numpy / scipy a second time breaks them: load what a probe run uses before any run.
import frontier_qa.adapters.workflow  # noqa: F401
import frontier_qa.curricula._file  # noqa: F401
import frontier_qa.plugins._pytest_suite  # noqa: F401
import frontier_qa.probing._baseline_accept  # noqa: F401
import frontier_qa.reports._explain  # noqa: F401
from frontier_qa.store import _baselines as baselines
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._suites import import_suite
from tests.factories import REPO

PLUGIN = "frontier_qa.plugins.pytest_plugin"

AGENT = r'''
from pathlib import Path

version = "1"


def run(case, sample_index):
    mode_file = Path(__file__).with_name("mode.txt")
    mode = mode_file.read_text().strip() if mode_file.exists() else "v1"
    if mode == "fixed":
        return "\\boxed{%s}" % case.reference
    if case.topic == "weekdays":
        if mode == "broken":
            return "\\boxed{Sunday}"
        return "\\boxed{%s}" % ("Monday" if sample_index % 3 != 2 else "Friday")
    if mode == "wrong-add" and case.id == "add-1":
        return "\\boxed{41}"
    return "\\boxed{%s}" % case.metadata["truth"]
'''

CASES = [
    {"id": "add-1", "prompt": "What is 17 + 25?", "reference": "42", "reference_verified": True, "topic": "arithmetic",
     "metadata": {"truth": "42"}},
    {"id": "mul-1", "prompt": "What is 6 * 7 in this puzzle?", "reference": "43", "reference_verified": True,
     "topic": "arithmetic", "metadata": {"truth": "42"}},
    {"id": "wd-1", "prompt": "Which weekday comes 3 days after Friday?", "reference": "Monday", "topic": "weekdays"},
    {"id": "wd-2", "prompt": "Counting back four days from a Tuesday, what day is it?", "reference": "Friday",
     "topic": "weekdays"},
]

MARKER = 'target="python:agent.py:run", curriculum="cases.jsonl", k=6, sequential=False'

TEST_FILE = f'''
import pytest


@pytest.mark.frontier({MARKER})
def test_agent(frontier_case):
    frontier_case.assert_no_regression()
'''

FINDINGS = ["arithmetic/mul-1", "weekdays/wd-1", "weekdays/wd-2"]
ITEMS = ["arithmetic/add-1", *FINDINGS]  # add-1 always passes: a guard

# the curriculum as an object made by a factory that logs each call (only generating calls it)
FACTORY_TEST = '''
import pytest
from frontier_qa.curricula import FileCurriculum


def make_curriculum():
    with open("curriculum_calls.txt", "a") as log:
        log.write("called\\n")
    return FileCurriculum("cases.jsonl")


@pytest.mark.frontier(target="python:agent.py:run", curriculum=make_curriculum, k=6, sequential=False)
def test_agent(frontier_case):
    frontier_case.assert_no_regression()
'''


def plugin_args() -> list[str]:
    """``-p`` the plugin, unless the installed package already registers its pytest11 entry point."""
    installed = any(ep.value == PLUGIN for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", PLUGIN]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A folder with the scripted agent, its cases and a marked test."""
    pytester.makefile(".py", agent=AGENT)
    pytester.makefile(".jsonl", cases="\n".join(json.dumps(c) for c in CASES))
    pytester.makepyfile(test_agent=TEST_FILE)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # the plugin module is already imported here, so pytest cannot assertion-rewrite it: expected
    return pytester.runpytest(*plugin_args(), "-p", "no:cacheprovider",
                              "-W", "ignore::pytest.PytestAssertRewriteWarning", "-v", *args)


def items(result: pytest.RunResult) -> dict[str, str]:
    """Test id -> outcome word, from ``-v`` output."""
    found = re.findall(r"::test_\w+\[(.+?)\] (PASSED|FAILED|XFAIL|SKIPPED|ERROR)", result.stdout.str())
    return dict(found)


def summary(result: pytest.RunResult) -> list[str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if re.match(r"=+ frontier-qa =+", line))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    return [line for line in lines[start + 1 : end] if line.strip()]


def failure_lines(result: pytest.RunResult, item: str) -> list[str]:
    """The ``E`` lines of one item's failure."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("E") and item in line)
    out = []
    for line in lines[start:]:
        if not line.startswith("E"):
            break
        out.append(line)
    return out


def store_of(pytester: pytest.Pytester) -> CaseStore:
    return CaseStore(pytester.path / ".frontier-qa")


def junit(path: Path) -> dict[str, dict[str, str]]:
    """Test name -> its properties, from a JUnit XML file."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        out[case.get("name")] = {p.get("name"): p.get("value") for p in case.iter("property")}
    return out


# --- inert when unused ---------------------------------------------------------------------


def test_plugin_is_inert_for_suites_that_do_not_use_it(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(
        """
        import sys
        from pathlib import Path

        def pytest_unconfigure(config):
            names = sorted(m for m in sys.modules if m.split(".")[0] in
                           ("frontier_qa", "numpy", "pydantic", "litellm", "yaml", "torch"))
            Path("modules.txt").write_text("\\n".join(names))
        """
    )
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    # options set but no marked test: nothing may happen (no store, no import of the engine). Other
    # installed plugins are kept out (langsmith's, which langchain-core brings, imports pydantic): this
    # is about what frontier-qa's plugin loads
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", "--frontier-mode=generate",
                                           "--frontier-store=store", "--frontier-budget-calls=5")
    result.assert_outcomes(passed=1)
    loaded = (pytester.path / "modules.txt").read_text().split()
    # the root package and the plugin: nothing else
    assert loaded == ["frontier_qa", "frontier_qa.plugins", PLUGIN]
    assert not (pytester.path / "store").exists() and not (pytester.path / ".frontier-qa").exists()
    assert not re.search(r"=+ frontier-qa =+", result.stdout.str())  # no summary section either


# --- generate, replay, regression, flaky -------------------------------------------------------


def test_first_run_generates_and_saves_the_cases(project: pytest.Pytester) -> None:
    result = run(project)
    assert items(result) == {i: "PASSED" for i in ITEMS}
    # the probe found a failure (mul-1): the config's gate (max_failures 0) fails the session, as the CLI's probe does
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    store = store_of(project)
    runs = [r for r in store.run_ids() if r.startswith("pytest-")]
    assert len(runs) == 1 and runs[0].endswith("-gen")  # one probe run
    latest = store.latest()
    assert {i: r.case_class.value for i, r in latest.items()} == {
        "add-1": "pass", "mul-1": "failure", "wd-1": "frontier", "wd-2": "frontier"}
    assert {r.case.metadata["pytest_suite"] for r in latest.values()} == {"test_agent.py::test_agent"}
    assert latest["wd-1"].p_hat == pytest.approx(4 / 6) and latest["wd-1"].majority == "Monday"
    lines = summary(result)
    assert lines[0] == "test_agent.py::test_agent: target python:agent.py:run, mode auto, 4 test(s)"
    assert "  items: 4 (4 new, 0 replayed; 1 guard)" in lines
    assert "  cases: 4 (failure 1, frontier 2, pass 1)" in lines
    assert "  candidates: 4 = 4 cases + 0 invalid" in lines
    assert "  spent: target 24 calls, 0 tokens, cost unknown" in lines  # 4 cases × k = 6, no cache hit
    assert "  frontier map: weekdays: 2 frontier, 0 failure of 2" in lines
    assert "  frontier map: arithmetic: 0 frontier, 1 failure of 2" in lines
    assert lines[lines.index("gate: FAILED") + 1] == "  - 1 failure (above the limit of 0)"
    assert "  replay the stored cases: pytest test_agent.py::test_agent --frontier-mode=replay" in lines


def test_the_summary_names_every_case_validation_removed_with_the_reason(project: pytest.Pytester) -> None:
    copies = [{**CASES[0], "id": f"add-copy-{i}"} for i in range(6)]  # a person's cases: only identical ones go
    project.makefile(".jsonl", cases="\n".join(json.dumps(c) for c in [*CASES, *copies]))
    result = run(project)
    assert items(result) == {i: "PASSED" for i in ITEMS}
    lines = summary(result)
    at = lines.index("  removed by validation: 6")
    named = [re.fullmatch(r'    (add-copy-\d) "What is 17 \+ 25\?": identical to a prompt of (this batch|a recent '
                          r'case): What is 17 \+ 25\?', line) for line in lines[at + 1:at + 6]]
    assert [m.group(1) for m in named if m] == [f"add-copy-{i}" for i in range(5)]
    assert lines[at + 6] == "    … 1 more: frontier-qa cases list --class invalid --store .frontier-qa"
    assert "removed by validation" not in "\n".join(summary(run(project)))  # a replay removes nothing


def test_replay_only_reproduces_the_items_without_the_curriculum(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=FACTORY_TEST)
    first = run(project, "--frontier-mode=generate", "--junitxml=first.xml")
    assert items(first) == {i: "PASSED" for i in ITEMS}
    calls = project.path / "curriculum_calls.txt"
    assert calls.read_text() == "called\n"
    command = next(line for line in summary(first) if line.startswith("  replay the stored cases: "))
    command = command.removeprefix("  replay the stored cases: ")
    assert command == "pytest test_agent.py::test_agent --frontier-mode=replay"
    (project.path / "cases.jsonl").unlink()  # not needed any more
    again = run(project, *shlex.split(command)[1:], "--junitxml=again.xml")
    assert items(again) == {i: "PASSED" for i in ITEMS}
    assert calls.read_text() == "called\n"  # never called
    replayed = junit(project.path / "again.xml")
    assert {n: p["frontier_verdict"] for n, p in replayed.items()} == {f"test_agent[{i}]": "same" for i in ITEMS}
    # samples 6..11: 4 Mondays of 6, in the band once k = 6 is reached: "same" at the first look
    assert (replayed["test_agent[weekdays/wd-1]"]["frontier_p_hat"], replayed["test_agent[weekdays/wd-1]"][
        "frontier_k"]) == ("0.6667", "6")
    assert replayed["test_agent[arithmetic/add-1]"]["frontier_role"] == "guard"
    assert "  items: 4 (0 new, 4 replayed; 1 guard)" in summary(again)
    assert "  cases: 4 (failure 1, frontier 2, pass 1)" in summary(again)
    assert again.ret == 0  # a replay holds the stored failure to its baseline: replay.gate fails on regressions only


def test_a_regression_fails_every_replay_until_someone_accepts(project: pytest.Pytester) -> None:
    assert run(project).ret == pytest.ExitCode.TESTS_FAILED  # the probe's gate: a failure found
    (project.path / "mode.txt").write_text("broken")
    for _ in range(2):  # a replay never moves the baseline: the agent stays broken, the test stays red
        result = run(project, "--frontier-mode=replay")
        assert items(result) == {"arithmetic/add-1": "PASSED", "arithmetic/mul-1": "PASSED",
                                 "weekdays/wd-1": "FAILED", "weekdays/wd-2": "FAILED"}
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert store_of(project).accepted() == {}  # nobody accepted anything
    first = baselines.resolve(store_of(project))["wd-1"]
    assert (first.source, first.case_class.value, first.successes, first.k) == ("first", "frontier", 4, 6)
    message = failure_lines(result, "weekdays/wd-1")
    assert message[:3] == ["E       AssertionError: frontier-qa: regression: weekdays/wd-1",
                           "E         prompt:     Which weekday comes 3 days after Friday?",
                           "E         reference:  Monday (unverified)"]
    assert re.fullmatch(r"E         baseline:   frontier, p̂ 0\.67 \[0\.35, 0\.88\], k=6, agent 1\+src\.[0-9a-f]{8}, "
                        r"\d{4}-\d\d-\d\d \(first observation\)", message[3])
    assert re.fullmatch(r"E         now:        suspect, p̂ 1\.00 \[0\.\d\d, 1\.00\], k=32, agent 1\+src\.[0-9a-f]{8}",
                        message[4])
    assert message[5:] == [
        "E         why:        answers 'Monday' (the baseline's majority): 4/6 in the baseline, 0/32 now "
        "(one-sided Fisher p = 2.0e-04 ≤ 3.2e-04)",  # decided at the look of 32 (looks 8, 16, 32, ...)
        "E         answers now:       32 × Sunday",
        "E         answers baseline:  4 × Monday, 2 × Friday",
        "E         replay it:  pytest 'test_agent.py::test_agent[weekdays/wd-1]' --frontier-mode=replay"]
    lines = summary(result)
    assert "  replay: regression 2, same 2 (1 guard case(s) among them)" in lines
    assert "  cases: 4 (failure 1, suspect 2, pass 1)" in lines
    assert lines[lines.index("gate: FAILED") + 1] == "  - 2 replay regressions (above the limit of 0)"
    # a person accepts the new behaviour: the items pass, and the next replays hold the agent to it
    accepted = run(project, "--frontier-mode=replay", "--frontier-accept")
    assert items(accepted) == {i: "PASSED" for i in ITEMS}
    assert "  accepted: 4 baseline(s) now hold what the agent does" in summary(accepted)
    assert accepted.ret == 0
    held = store_of(project).accepted()["wd-1"]
    assert (held.source, held.case_class.value, held.k, held.anchor, held.successes) == (
        "accept", "suspect", 40, "Sunday", 40)  # 40 broken samples pooled: no new draws needed
    assert items(run(project, "--frontier-mode=replay")) == {i: "PASSED" for i in ITEMS}
    (project.path / "mode.txt").write_text("v1")  # back to the old behaviour: now that is the change
    back = items(run(project, "--frontier-mode=replay"))
    # wd-2's majority Monday is no reference of its: a regression from the accepted Sunday; wd-1's majority
    # Monday is its (unverified) reference: the accepted suspect finding no longer reproduces
    assert (back["weekdays/wd-2"], back["weekdays/wd-1"]) == ("FAILED", "XFAIL")
    assert len([b for b in store_of(project).baseline_lines() if b.case_id == "wd-1"]) == 1  # history kept


def test_a_guard_case_catches_breaking_what_used_to_pass(project: pytest.Pytester) -> None:
    assert run(project).ret == pytest.ExitCode.TESTS_FAILED
    (project.path / "mode.txt").write_text("wrong-add")  # the stable, correct add-1 now answers 41
    result = run(project, "--frontier-mode=replay", "--junitxml=out.xml")
    assert items(result) == {"arithmetic/add-1": "FAILED", **{i: "PASSED" for i in FINDINGS}}
    result.stdout.fnmatch_lines(["*why:        right answers (verified reference '42'): 6/6 in the baseline, 0/16 now*"])
    props = junit(project.path / "out.xml")["test_agent[arithmetic/add-1]"]
    assert (props["frontier_role"], props["frontier_stored_class"], props["frontier_class"]) == (
        "guard", "pass", "failure")
    assert "    why:        right answers (verified reference '42'): 6/6 in the baseline, 0/16 now " \
           "(one-sided Fisher p = 1.3e-05 ≤ 1.6e-04)" in summary(result)  # the regression explained, as the CLI does


def test_a_case_that_no_longer_reproduces_is_reported_flaky(project: pytest.Pytester) -> None:
    assert run(project).ret == pytest.ExitCode.TESTS_FAILED
    (project.path / "mode.txt").write_text("fixed")  # same agent id and version, other behaviour
    result = run(project, "--frontier-mode=replay", "-rx")
    # the failure is fixed, wd-2 now answers its reference: findings that did not reproduce, never a silent pass;
    # wd-1's reference is its baseline majority: answering it always is no significant change on 6 samples
    assert items(result) == {"arithmetic/add-1": "PASSED", "arithmetic/mul-1": "XFAIL", "weekdays/wd-1": "PASSED",
                             "weekdays/wd-2": "XFAIL"}
    lines = summary(result)
    assert any(line.startswith("  flaky: mul-1: right answers (verified reference '43'): 0/6 in the baseline, "
                               "16/16 now") for line in lines)  # decided at the look of 16 (looks 8, 16, ...)
    result.stdout.fnmatch_lines(["XFAIL*test_agent*mul-1* - flaky: *the same agent no longer reproduces the finding"])
    strict = run(project, "--frontier-mode=replay", "--frontier-flaky=fail")
    assert items(strict)["weekdays/wd-2"] == "FAILED" and items(strict)["arithmetic/mul-1"] == "FAILED"
    strict.stdout.fnmatch_lines(["*frontier-qa: flaky case wd-2: *the majority moved to the unverified reference*"])


# --- what a test item gets -----------------------------------------------------------------------


def test_junitxml_has_case_id_p_hat_interval_and_class(project: pytest.Pytester) -> None:
    assert run(project).ret == pytest.ExitCode.TESTS_FAILED
    result = run(project, "--frontier-mode=replay", "--junitxml=out.xml")
    assert result.ret == 0
    props = junit(project.path / "out.xml")
    wd = props["test_agent[weekdays/wd-1]"]
    record = store_of(project).latest()["wd-1"]  # the replay's record
    assert record.interval is not None and record.verdict is not None and record.verdict.verdict == "same"
    assert {k: wd[k] for k in ("frontier_case_id", "frontier_topic", "frontier_class", "frontier_p_hat",
                               "frontier_k", "frontier_majority", "frontier_stored_class", "frontier_verdict",
                               "frontier_role")} == {
        "frontier_case_id": "wd-1", "frontier_topic": "weekdays", "frontier_class": "frontier",
        "frontier_p_hat": "0.6667", "frontier_k": "6", "frontier_majority": "Monday",
        "frontier_stored_class": "frontier", "frontier_verdict": "same", "frontier_role": "finding"}
    assert (wd["frontier_p_low"], wd["frontier_p_high"]) == (f"{record.interval.low:.4f}",
                                                            f"{record.interval.high:.4f}")
    assert 0.0 < float(wd["frontier_p_low"]) < 4 / 6 < float(wd["frontier_p_high"]) < 1.0
    assert wd["frontier_run"] == record.run_id and record.run_id.endswith("-r-main")
    mul = props["test_agent[arithmetic/mul-1]"]
    assert (mul["frontier_class"], mul["frontier_p_hat"], mul["frontier_majority"]) == ("failure", "1.0000", "42")
    assert mul["frontier_target"] == "python:agent.py:run"


def test_a_test_can_sample_the_agent_again(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=f'''
        import pytest

        def weekday(i):
            return "Monday" if i % 3 != 2 else "Friday"

        @pytest.mark.frontier({MARKER})
        def test_agent(frontier_case):
            after = max(s.sample_index for s in frontier_case.replayed.samples) + 1
            answers = frontier_case.answers(3)  # fresh indices after this session's samples of the case
            if frontier_case.topic == "weekdays":
                assert answers == [weekday(i) for i in range(after, after + 3)]
                assert frontier_case.case_class == "frontier" and frontier_case.majority == "Monday"
                assert frontier_case.reference == frontier_case.case.reference
            elif frontier_case.id == "mul-1":
                assert answers == ["42", "42", "42"] and frontier_case.case_class == "failure"
            text = frontier_case.sample(1)[0].text
            assert text.startswith("\\\\boxed{{")
    ''')
    assert items(run(project)) == {i: "PASSED" for i in ITEMS}  # new cases: indices 6, 7, 8
    assert items(run(project, "--frontier-mode=replay")) == {i: "PASSED" for i in ITEMS}


# --- runs that could not judge the agent: exit status 3 ----------------------------------------------


def test_budget_running_out_leaves_the_session_unjudged(project: pytest.Pytester) -> None:
    assert run(project).ret == pytest.ExitCode.TESTS_FAILED
    result = run(project, "--frontier-mode=replay", "--frontier-budget-calls=3", "-rs")
    assert items(result) == {i: "SKIPPED" for i in ITEMS}
    assert result.ret == 3  # frontier_qa.exit_codes.EXIT_NO_JUDGEMENT, not a green run
    result.stdout.fnmatch_lines(["SKIPPED*frontier-qa stopped before case * was decided: budget*calls 3/3*"])
    result.stdout.fnmatch_lines(["could not judge the agent (exit 3):",
                                 "  - 4 of 4 cases (100%) stayed unresolved, above the limit of 20%*"])


def test_replay_mode_with_nothing_stored_errors_the_session(project: pytest.Pytester) -> None:
    result = run(project, "--frontier-mode=replay")
    assert items(result) == {"no-cases": "ERROR"} and result.ret == 3
    result.stdout.fnmatch_lines(["*FrontierUnjudged: nothing to replay: no stored case for "
                                 "'test_agent.py::test_agent'*run pytest --frontier-mode=generate*"])
    assert summary(result)[0] == "could not judge the agent (exit 3):"
    assert summary(result)[1].startswith("  - there was no stored case to replay")
    assert not (project.path / ".frontier-qa").exists()
    collected = run(project, "--collect-only")  # auto mode, but collecting only: never probes
    assert "test_agent[no-cases]" in collected.stdout.str()
    assert not (project.path / ".frontier-qa").exists()


def test_an_empty_curriculum_errors_the_session(project: pytest.Pytester) -> None:
    (project.path / "cases.jsonl").write_text("")
    result = run(project)
    assert items(result) == {"no-cases": "ERROR"} and result.ret == 3
    result.stdout.fnmatch_lines(["*FrontierUnjudged: probing found no failure/suspect/frontier or guard cases*"])


def test_auto_probes_only_a_suite_with_nothing_stored(project: pytest.Pytester) -> None:
    (project.path / "mode.txt").write_text("fixed")  # every case passes: all four become guards
    project.makepyfile(test_agent=FACTORY_TEST)
    first = run(project)
    assert items(first) == {i: "PASSED" for i in ITEMS}
    assert "  items: 4 (4 new, 0 replayed; 4 guards)" in summary(first) and first.ret == 0
    again = run(project)  # the 4 stored passes count as stored: auto does not probe again
    assert items(again) == {i: "PASSED" for i in ITEMS}
    assert (project.path / "curriculum_calls.txt").read_text() == "called\n"
    project.makepyfile(test_agent=FACTORY_TEST.replace("sequential=False", "sequential=False, guards=0"))
    none = run(project, "-rs")  # no guards wanted and nothing else: a skip, not an error
    assert items(none) == {"no-cases": "SKIPPED"} and none.ret == 0
    none.stdout.fnmatch_lines(["SKIPPED*none of the 4 stored case(s) of 'test_agent.py::test_agent' is a "
                               "failure/suspect/frontier or guard case*"])


def test_flags_beat_the_marker_and_the_marker_beats_ini_keys(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nfrontier_target = python:agent.py:run\nfrontier_k = 4\n")
    project.makepyfile(test_agent='''
        import pytest

        @pytest.mark.frontier(curriculum="cases.jsonl", k=6, sequential=False)
        def test_agent(frontier_case):
            frontier_case.assert_no_regression()
    ''')
    assert run(project, "--junitxml=first.xml").ret == pytest.ExitCode.TESTS_FAILED
    first = junit(project.path / "first.xml")["test_agent[weekdays/wd-1]"]
    assert (first["frontier_k"], first["frontier_target"]) == ("6", "python:agent.py:run")  # marker k, ini target
    assert run(project, "--frontier-store=other", "--frontier-k=3", "--junitxml=again.xml").ret == 1
    again = junit(project.path / "again.xml")["test_agent[weekdays/wd-1]"]
    # k = 3 from the flag: samples 0, 1, 2 answer Monday, Monday, Friday
    assert (again["frontier_k"], again["frontier_p_hat"], again["frontier_class"]) == ("3", "0.6667", "frontier")


def test_a_committed_suite_file_replays_without_the_store(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=f'''
        import pytest

        @pytest.mark.frontier({MARKER}, suite="frontier_suite.yaml")
        def test_agent(frontier_case):
            frontier_case.assert_no_regression()
    ''')
    assert run(project, "--frontier-mode=generate").ret == pytest.ExitCode.TESTS_FAILED
    entries = import_suite(project.path / "frontier_suite.yaml")
    assert [(e.case.id, e.observed.case_class.value, e.role, e.baseline.k) for e in entries] == [
        ("add-1", "pass", "guard", 6), ("mul-1", "failure", "finding", 6), ("wd-1", "frontier", "finding", 6),
        ("wd-2", "frontier", "finding", 6)]
    import shutil

    shutil.rmtree(project.path / ".frontier-qa")  # a fresh CI checkout: only the committed suite
    result = run(project, "--frontier-mode=replay", "--junitxml=ci.xml")
    assert items(result) == {i: "PASSED" for i in ITEMS}
    props = junit(project.path / "ci.xml")
    # nothing drawn before in this store: the replay draws indices 0..5 again, deterministically
    assert props["test_agent[weekdays/wd-2]"]["frontier_p_hat"] == "0.6667"
    assert {p["frontier_verdict"] for p in props.values()} == {"same"}
    (project.path / "mode.txt").write_text("broken")  # CI on a broken agent: red, and it stays red
    assert run(project, "--frontier-mode=replay").ret == pytest.ExitCode.TESTS_FAILED
    assert run(project, "--frontier-mode=replay").ret == pytest.ExitCode.TESTS_FAILED
    # accepting writes the new baselines into the committed suite too
    assert run(project, "--frontier-mode=replay", "--frontier-accept").ret == 0
    accepted = {e.case.id: e.baseline for e in import_suite(project.path / "frontier_suite.yaml")}
    assert (accepted["wd-1"].source, accepted["wd-1"].anchor) == ("accept", "Sunday")
    assert run(project, "--frontier-mode=replay").ret == 0


def test_paths_follow_the_test_file_and_the_store_lives_at_the_rootdir(pytester: pytest.Pytester) -> None:
    # run from the parent folder: `cd parent && pytest proj/test_agent.py`, in a project with its own ini (rootdir proj/)
    proj = pytester.mkdir("proj")
    (proj / "pytest.ini").write_text("[pytest]\n")
    (proj / "agent.py").write_text(AGENT)
    (proj / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in CASES))
    (proj / "test_agent.py").write_text(TEST_FILE)
    result = run(pytester, "proj/test_agent.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED and items(result) == {i: "PASSED" for i in ITEMS}
    assert sorted(p.name for p in pytester.path.iterdir()) == ["proj"]  # nothing left in the current directory
    latest = CaseStore(proj / ".frontier-qa").latest()
    assert {i: r.case_class.value for i, r in latest.items()} == {
        "add-1": "pass", "mul-1": "failure", "wd-1": "frontier", "wd-2": "frontier"}
    assert {r.target_id for r in latest.values()} == {"python:agent.py:run"}  # named as written, not absolute
    assert summary(result)[0].startswith("test_agent.py::test_agent: target python:agent.py:run,")
    # an ini key's path is relative to the rootdir, a flag's to the current directory
    (proj / "pytest.ini").write_text("[pytest]\nfrontier_store = ci-store\n")
    assert run(pytester, "proj/test_agent.py", "--frontier-mode=generate").ret == pytest.ExitCode.TESTS_FAILED
    assert len(CaseStore(proj / "ci-store").latest()) == 4
    assert sorted(p.name for p in pytester.path.iterdir()) == ["proj"]
    assert run(pytester, "proj/test_agent.py", "--frontier-store=here", "--frontier-mode=generate").ret == 1
    assert len(CaseStore(pytester.path / "here").latest()) == 4


def test_two_tests_share_a_named_suite(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=f'''
        import pytest

        shared = pytest.mark.frontier({MARKER}, name="agent-suite")

        @shared
        def test_no_regression(frontier_case):
            frontier_case.assert_no_regression()

        @shared
        def test_reference_is_known(frontier_case):
            assert frontier_case.reference is not None
    ''')
    result = run(project)
    assert result.parseoutcomes() == {"passed": 8}
    assert summary(result)[0] == "agent-suite: target python:agent.py:run, mode auto, 8 test(s)"
    assert "  items: 4 (4 new, 0 replayed; 1 guard)" in summary(result)  # each case counted once
    project.makepyfile(test_agent=f'''
        import pytest

        @pytest.mark.frontier({MARKER}, name="agent-suite")
        def test_one(frontier_case):
            pass

        @pytest.mark.frontier({MARKER.replace("k=6", "k=4")}, name="agent-suite")
        def test_two(frontier_case):
            pass
    ''')
    clash = run(project)
    clash.stdout.fnmatch_lines(["*the suite name 'agent-suite' is already used by test_agent.py::test_one "
                                "with other arguments*"])


# --- bad usage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("marker", "lines"),
    [
        pytest.param('targt="python:agent.py:run"',
                     ["*: unknown argument targt=", "  fix: did you mean target=?"], id="misspelt"),
        pytest.param(MARKER + ", budget=10",  # a truncated name beats a similar short one (judge=)
                     ["*: unknown argument budget=", "  fix: did you mean budget_calls=?"], id="truncated"),
        pytest.param('"python:agent.py:run"',
                     ["*: positional argument(s) ('python:agent.py:run',)", "  fix: pass keyword arguments*"],
                     id="positional"),
        pytest.param(MARKER.replace("k=6", "k=0"),
                     ["*@pytest.mark.frontier(k=...) on test_agent.py::test_agent: probing.k: Input should be "
                      "greater than or equal to 1 (got 0)", "  fix: set probing.k to a number >= 1"], id="k=0"),
        pytest.param(MARKER.replace("sequential=False", "band=(0.9, 0.1)"),
                     ["*probing.band*low (0.9) is above high (0.1)*"], id="band"),
        pytest.param('target="python:agent.py:run", curriculum="cases.txt"',
                     ["*: curriculum='cases.txt' is not understood", "  fix: pass cases file (*.jsonl / *.yaml)*"],
                     id="curriculum"),
        pytest.param('target="python:agent.py:run", classes=["frontier", "bogus"]',
                     ["*: classes: unknown case class 'bogus'", "  fix: use some of frontier, failure, *"],
                     id="classes"),
        pytest.param('target="python:agent.py:run"',
                     ["*: no curriculum to generate cases from (mode auto)",
                      "  fix: add curriculum='cases.jsonl' (or 'prompted:MODEL_SPEC') to the marker, "
                      "or run with --frontier-mode=replay"], id="no-curriculum"),
        pytest.param('target="nope", curriculum="cases.jsonl"', ["*target spec 'nope' has no scheme*"], id="spec"),
    ],
)
def test_bad_marker_arguments_are_usage_errors_with_the_fix(project: pytest.Pytester, marker: str,
                                                            lines: list[str]) -> None:
    project.makepyfile(test_agent=f"import pytest\n\n@pytest.mark.frontier({marker})\n"
                                  "def test_agent(frontier_case):\n    pass\n")
    result = run(project)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error stops the session
    result.stdout.fnmatch_lines(["*ERROR collecting test_agent.py*", *lines])
    out = result.stdout.str()
    assert "\n@pytest.mark.frontier on test_agent.py::test_agent: " in out  # names the test
    assert "Traceback" not in out and "pytest_suite.py" not in out  # the message, not the plugin's insides


@pytest.mark.parametrize(
    ("args", "ini", "lines"),
    [
        (["--frontier-k=0"], "", ["ERROR: --frontier-k=0: 0 is below 1", "  fix: give a value >= 1"]),
        (["--frontier-mode=sometimes"], "",
         ["ERROR: --frontier-mode=sometimes: 'sometimes' is not one of auto, replay, generate",
          "  fix: write e.g. --frontier-mode=auto"]),
        (["--frontier-budget-calls=lots"], "", ["ERROR: --frontier-budget-calls=lots: 'lots' is not an integer"]),
        ([], "frontier_max_cost_usd = -1", ["ERROR: ini frontier_max_cost_usd = -1: -1 is below 0"]),
        ([], "frontier_flaky = ignore", ["ERROR: ini frontier_flaky = ignore: 'ignore' is not one of xfail, fail"]),
    ],
)
def test_bad_options_are_usage_errors(pytester: pytest.Pytester, args: list[str], ini: str, lines: list[str]) -> None:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest(*plugin_args(), *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(lines)


def test_fixture_and_marker_need_each_other(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_a(frontier_case):\n    pass\n")
    result = pytester.runpytest(*plugin_args())
    result.stdout.fnmatch_lines(["*test_a.py::test_a takes the 'frontier_case' fixture but has no "
                                 "@pytest.mark.frontier*"])
    pytester.makepyfile(test_a="import pytest\n\n@pytest.mark.frontier(target='python:x.py:f')\n"
                               "def test_a():\n    pass\n")
    result = pytester.runpytest(*plugin_args())
    result.stdout.fnmatch_lines(["*the test does not take the 'frontier_case' fixture*"])


# --- xdist and the worked example (separate processes) -------------------------------------------


@pytest.mark.slow
def test_xdist_generates_once_and_every_worker_collects_the_same_items(project: pytest.Pytester) -> None:
    args = (*plugin_args(), "-p", "no:cacheprovider", "-n", "2", "-v")
    first = project.runpytest_subprocess(*args, "--frontier-mode=generate")
    assert items_xdist(first) == {i: "PASSED" for i in ITEMS}
    runs = store_of(project).run_ids()
    assert len([r for r in runs if r.endswith("-gen")]) == 1  # one probe for the session, not one per worker
    assert "  candidates: 4 = 4 cases + 0 invalid" in summary(first) and first.ret == pytest.ExitCode.TESTS_FAILED
    again = project.runpytest_subprocess(*args, "--frontier-mode=replay", "--junitxml=x.xml")
    assert items_xdist(again) == {i: "PASSED" for i in ITEMS}
    props = junit(project.path / "x.xml")  # written by the controller from the workers' reports
    assert {n: p["frontier_verdict"] for n, p in props.items()} == {f"test_agent[{i}]": "same" for i in ITEMS}
    assert "  items: 4 (0 new, 4 replayed; 1 guard)" in summary(again) and again.ret == 0
    empty = project.runpytest_subprocess(*args, "--frontier-mode=replay", "--frontier-store=nothing")
    assert empty.ret == 3  # the controller ends an unjudged session with exit status 3 too
    assert "could not judge the agent (exit 3):" in empty.stdout.str()


def items_xdist(result: pytest.RunResult) -> dict[str, str]:
    found = re.findall(r"(PASSED|FAILED|XFAIL|SKIPPED|ERROR) test_\w+\.py::test_\w+\[(.+?)\]", result.stdout.str())
    return {item: outcome for outcome, item in found}


@pytest.mark.slow
def test_the_worked_example_runs_offline(pytester: pytest.Pytester) -> None:
    example = REPO / "examples" / "pytest"
    store = pytester.path / "store"
    args = (*plugin_args(), "-p", "no:cacheprovider", str(example), f"--frontier-store={store}")
    first = pytester.runpytest_subprocess(*args)
    first.assert_outcomes(passed=12)
    lines = summary(first)
    assert lines[0].startswith("examples/moody-agent: target example:moody-agent, mode auto, 12 test(s)")
    assert "  items: 6 (6 new, 0 replayed; 2 guards)" in lines
    assert "  cases: 6 (failure 1, frontier 3, pass 2)" in lines
    assert "  frontier map: weekdays: 3 frontier, 0 failure of 3" in lines
    again = pytester.runpytest_subprocess(*args, "--frontier-mode=replay")
    again.assert_outcomes(passed=12)
    lines = summary(again)
    assert "  items: 6 (0 new, 6 replayed; 2 guards)" in lines and again.ret == 0
    # the moody agent hesitates between two weekdays (p* = 1/2): replayed, its frontier cases are the
    # same agent, so no regression
    replay = next(line for line in lines if line.startswith("  replay: "))
    assert "regression" not in replay
