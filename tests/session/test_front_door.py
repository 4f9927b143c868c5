"""One front door: the CLI and the pytest plugin run a scenario through the same session and agree on
its records, verdicts, exit codes and every count they print or write.

Each test uses a real ``python:`` agent file, a cases file and a ``frontier-qa.yaml`` with the gate
``frontier-qa init`` writes (``gate.max_failures: 0``); the CLI runs in-process (``main``), pytest as a
real session (``pytester``).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import math_verify  # noqa: F401
import nltk.translate.bleu_score  # noqa: F401
import pytest
import scipy.special  # noqa: F401
import sklearn.cluster  # noqa: F401

# In-process pytester runs drop every module first imported during the run: load what a probe uses first.
import frontier_qa.adapters._agent_source  # noqa: F401
import frontier_qa.adapters._spans  # noqa: F401
import frontier_qa.adapters.workflow  # noqa: F401
import frontier_qa.cli._accept  # noqa: F401
import frontier_qa.cli._cases  # noqa: F401
import frontier_qa.cli._probe  # noqa: F401
import frontier_qa.cli._suite  # noqa: F401
import frontier_qa.curricula._file  # noqa: F401
import frontier_qa.plugins._pytest_suite  # noqa: F401
import frontier_qa.probing._baseline_accept  # noqa: F401
import frontier_qa.probing._engine  # noqa: F401
import frontier_qa.probing._paths_judge  # noqa: F401
import frontier_qa.probing._progress  # noqa: F401
import frontier_qa.probing._reconcile  # noqa: F401
import frontier_qa.reports._explain  # noqa: F401
import frontier_qa.reports._otel_export  # noqa: F401
import frontier_qa.reports._path_findings  # noqa: F401
import frontier_qa.runtime._from_spec  # noqa: F401
from frontier_qa.cli.app import main
from frontier_qa.store._case_store import CaseStore

# answers by sample index: wd-1 is a coin flip of two weekdays (frontier), mul-1 is wrong against its
# verified reference 43 (a failure), add-1 is right (a pass)
AGENTS = {
    "boxed": '''
def run(case, sample_index):
    if case.id == "wd-1":
        return "\\\\boxed{%s}" % ("Monday" if sample_index % 3 != 2 else "Friday")
    return "\\\\boxed{42}"
''',
    "plain": '''
def run(case, sample_index):
    return "42"
''',
    "json": '''
import json


def run(case, sample_index):
    if case.id == "wd-1":
        return json.dumps({"answer": "Monday" if sample_index % 3 != 2 else "Friday", "confidence": 0.6})
    return json.dumps({"answer": 42, "steps": ["add", "check"]})
''',
    "short": '''
def run(case, sample_index):
    if case.id == "wd-1":
        return "**Monday**" if sample_index % 3 != 2 else "The answer is Friday."
    return "42."
''',
    "open": '''
def run(case, sample_index):
    if sample_index % 3 == 2:
        return "I cannot help with that request."
    if sample_index % 2:
        return "Sunlight is scattered by the molecules of the air, and blue light is scattered the most."
    return "The air's molecules scatter blue sunlight much more strongly than red sunlight."
''',
    "raises": '''
def run(case, sample_index):
    raise RuntimeError("flaky backend")
''',
    "sibling": '''
import helpers


def run(case, sample_index):
    return "\\\\boxed{%s}" % helpers.answer(case.id, sample_index)
''',
}
HELPERS = '''
def answer(case_id, sample_index):
    if case_id == "wd-1":
        return "Monday" if sample_index % 3 != 2 else "Friday"
    return "42"
'''
CASES = [
    {"id": "add-1", "prompt": "What is 17 + 25?", "reference": "42", "reference_verified": True, "topic": "arithmetic"},
    {"id": "mul-1", "prompt": "What is 6 * 7 in this puzzle?", "reference": "43", "reference_verified": True,
     "topic": "arithmetic"},
    {"id": "wd-1", "prompt": "Which weekday comes 3 days after Friday?", "reference": "Monday", "topic": "weekdays"},
]
CONFIG = """target: python:agent.py:run
curriculum: {type: file, path: cases.jsonl}
probing: {k: 6, sequential: false}
gate: {max_failures: 0}
"""
TEST_FILE = '''
import pytest


@pytest.mark.frontier(config="frontier-qa.yaml")
def test_agent(frontier_case):
    frontier_case.assert_no_regression()
'''
_INSTALLED = any(ep.value == "frontier_qa.plugins.pytest_plugin"
                 for ep in importlib.metadata.entry_points(group="pytest11"))
PLUGIN: tuple[str, ...] = () if _INSTALLED else ("-p", "frontier_qa.plugins.pytest_plugin")


def project(root: Path, agent: str = "boxed", cases: list[dict] | None = None) -> Path:
    (root / "agent.py").write_text(AGENTS[agent])
    (root / "helpers.py").write_text(HELPERS)
    write_cases(root, cases or CASES)
    (root / "frontier-qa.yaml").write_text(CONFIG)
    (root / "test_agent.py").write_text(TEST_FILE)
    return root


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main([*args, "--config", "frontier-qa.yaml", "--progress", "off"])
    out = capsys.readouterr()
    return code, out.out + out.err


def cli_at(root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str,
           ) -> tuple[int, str]:
    """:func:`cli` run in ``root`` (the working folder stays there)."""
    monkeypatch.chdir(root)
    return cli(capsys, *args)


def pytest_run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning", "-v",
                              *args)


def summary(result: pytest.RunResult) -> list[str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if re.match(r"=+ frontier-qa =+", line))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    return [line for line in lines[start + 1:end] if line.strip()]


def classes(store: Path) -> dict[str, str]:
    return {i: r.case_class.value for i, r in CaseStore(store).latest().items()}


def verdicts(store: Path, run_prefix: str = "") -> dict[str, str]:
    records = [r for r in CaseStore(store).case_records() if r.verdict is not None and r.run_id.startswith(run_prefix)]
    return {r.id: r.verdict.verdict for r in records}  # type: ignore[union-attr]


@pytest.fixture
def both(tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The same project twice: one for the CLI, one for pytest (pytester's folder)."""
    monkeypatch.setenv("FRONTIER_QA_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "cli-project"
    root.mkdir()
    return project(root), project(pytester.path)


def write_cases(root: Path, cases: list[dict]) -> None:
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def probe_both(both: tuple[Path, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
               monkeypatch: pytest.MonkeyPatch, agent: str, cases: list[dict] | None = None,
               ) -> tuple[int, str, pytest.RunResult]:
    """The same agent (and cases) probed by the CLI and by pytest: the CLI's exit code and output, pytest's result."""
    for root in both:
        (root / "agent.py").write_text(AGENTS[agent])
        if cases is not None:
            write_cases(root, cases)
    code, out = cli_at(both[0], monkeypatch, capsys, "probe", "--out", "out")
    monkeypatch.chdir(both[1])
    return code, out, pytest_run(pytester, *PLUGIN)


# --- item 2: the same gate, the same verdicts, the same exit codes ---------------------------------------


def test_the_cli_and_pytest_agree_on_records_verdicts_and_exit_codes(
        both: tuple[Path, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, py_root = both
    probe_code, out = cli_at(cli_root, monkeypatch, capsys, "probe", "--out", "out")
    monkeypatch.chdir(py_root)
    first = pytest_run(pytester, *PLUGIN)
    # the probe found a failure: gate.max_failures 0 fails it, in both ways in
    assert probe_code == first.ret == 1, out
    assert "gate: FAILED" in out and "gate: FAILED" in summary(first)
    assert classes(cli_root / ".frontier-qa") == classes(py_root / ".frontier-qa") == {
        "add-1": "pass", "mul-1": "failure", "wd-1": "frontier"}
    # the agent breaks: a replay holds every case to its baseline, in both ways in, with the replay gate
    for root in (cli_root, py_root):
        (root / "agent.py").write_text(AGENTS["plain"].replace('"42"', '"\\\\boxed{Sunday}"'))
    replay_code, out = cli_at(cli_root, monkeypatch, capsys, "replay", "--out", "out2")
    monkeypatch.chdir(py_root)
    again = pytest_run(pytester, *PLUGIN, "--frontier-mode=replay")
    assert replay_code == again.ret == 1, out
    cli_verdicts = verdicts(cli_root / ".frontier-qa")
    py_verdicts = verdicts(py_root / ".frontier-qa", "pytest-")
    # mul-1 was wrong and still is (the same failure); the right and the unsure case broke
    assert cli_verdicts == py_verdicts == {"add-1": "regression", "mul-1": "same", "wd-1": "regression"}
    assert "  - 2 replay regressions (above the limit of 0)" in out.splitlines()
    assert "  - 2 replay regressions (above the limit of 0)" in summary(again)


# --- item 6: one source of counts ------------------------------------------------------------------------


def test_every_output_of_a_run_gives_the_same_counts(
        both: tuple[Path, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, py_root = both
    code, out = cli_at(cli_root, monkeypatch, capsys, "probe", "--out", "out")
    headline = [line.strip() for line in out.splitlines()
                if line.startswith(("  cases: ", "  frontier precision: ", "  answers: ", "  candidates: ", "  spent: ",
                                     "  prior: "))]
    assert headline[:5] == ["cases: 3 (failure 1, frontier 1, pass 1)",
                            # the frontier set's expected precision (set-level labels)
                            "frontier precision: expected 0.84: the mean P(in band) of the 1 frontier case (0.2 wrong "
                            "labels expected among them)",
                            "answers: 18 of 18 read in format auto (boxed 18)",  # how the agent's answers were read
                            "candidates: 3 = 3 cases + 0 invalid",
                            "spent: target 18 calls, 0 tokens, cost unknown"]  # 3 cases × k = 6
    # where the population prior came from (a first run: nothing earlier in the store)
    assert re.fullmatch(r"prior: no earlier cases of python:agent\.py:run version \S+: uninformed, learnt from this run",
                        headline[5])
    report = json.loads((cli_root / "out" / "report.json").read_text())
    assert report["headline"] == headline
    assert report["spend"]["target"]["calls"] == 18 and report["spend"]["target"]["usd"] is None
    assert report["candidates"]["proposed"] == report["candidates"]["cases"] + report["candidates"]["invalid"] + \
        report["candidates"]["removed"]
    markdown = (cli_root / "out" / "report.md").read_text()
    html = (cli_root / "out" / "report.html").read_text()
    suite = ET.parse(cli_root / "out" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    for line in headline:
        label, text = line.split(": ", 1)
        assert f"- {label}: {text}" in markdown
        assert f"<b>{label}</b>: {text}" in html
        assert props[label] == text
    # the same scenario in pytest: the same numbers, worded the same
    monkeypatch.chdir(py_root)
    result = pytest_run(pytester, *PLUGIN)
    assert [line.strip() for line in summary(result)
            if line.startswith(("  cases: ", "  frontier precision: ", "  answers: ", "  candidates: ", "  spent: ",
                                 "  prior: "))] == headline
    # next steps everywhere
    assert "next steps:" in out and "## Next steps" in markdown and report["next_steps"]
    assert any("frontier-qa cases show mul-1" in s for s in report["next_steps"])


# --- the agents of the report: plain strings, a sibling module, an exception -----------------------------


def test_a_plain_string_agent_is_read_as_it_answers_and_the_gate_fails_on_its_real_failure(
        both: tuple[Path, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, py_root = both
    code, out, result = probe_both(both, pytester, capsys, monkeypatch, "plain")
    lines = summary(result)
    # "42" read as it is (the default `auto`): right on add-1, wrong on mul-1 (verified 43), a stable
    # answer that differs from wd-1's unverified reference; the gate fails on mul-1 in both ways in
    assert code == result.ret == 1, out
    assert classes(cli_root / ".frontier-qa") == classes(py_root / ".frontier-qa") == {
        "add-1": "pass", "mul-1": "failure", "wd-1": "suspect"}
    assert lines[lines.index("gate: FAILED") + 1].endswith("1 failure (above the limit of 0)")
    assert "  answers: 18 of 18 read in format auto (plain reply 18)" in lines


@pytest.mark.parametrize(("agent", "forms"), [("json", "JSON 18"), ("short", "plain reply 18")])
def test_json_and_short_text_agents_are_read_as_they_answer_in_both_ways_in(
        agent: str, forms: str, both: tuple[Path, Path], pytester: pytest.Pytester,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, py_root = both
    code, out, result = probe_both(both, pytester, capsys, monkeypatch, agent)
    # the same findings as the boxed agent's: no format set, no embedding model, each form read as given
    assert code == result.ret == 1, out
    assert classes(cli_root / ".frontier-qa") == classes(py_root / ".frontier-qa") == {
        "add-1": "pass", "mul-1": "failure", "wd-1": "frontier"}
    assert f"  answers: 18 of 18 read in format auto ({forms})" in summary(result)
    assert f"  answers: 18 of 18 read in format auto ({forms})" in out.splitlines()


@pytest.fixture
def embedder_loaded() -> None:
    """The embedding model's modules (torch among them) loaded before pytester's snapshot: imported inside
    it, they were dropped after the test, and a later ``import torch`` in the same process crashed.
    """
    import sentence_transformers  # noqa: F401

    import frontier_qa.scoring._embedders  # noqa: F401
    import frontier_qa.scoring._semantic  # noqa: F401


def test_an_open_text_agent_is_clustered_by_meaning(
        embedder_loaded: None, both: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, _ = both
    (cli_root / "agent.py").write_text(AGENTS["open"])
    # no answer_format: `auto` sees open text in the first samples and compares by meaning from then on
    write_cases(cli_root, [{"id": "sky-1", "prompt": "Why is the sky blue? Answer in one sentence.", "topic": "science"},
                           {"id": "sky-2", "prompt": "Why is the sea blue? Answer in one sentence.", "topic": "science"}])
    code, out = cli_at(cli_root, monkeypatch, capsys, "probe", "--out", "out")
    # two wordings of Rayleigh scattering are one answer, a refusal another: 4 of 6, in the band
    records = CaseStore(cli_root / ".frontier-qa").latest()
    for record in records.values():
        assert [c.count for c in record.clusters] == [4, 2], out
        assert record.case_class.value == "frontier", out
        assert record.case.answer_format == "text"
        assert record.case.metadata["answer_format_from"].startswith("auto: this target's first answers were open text")
    assert code == 0 and "  answers: 12 of 12 read in format text (text 12)" in out.splitlines(), out


def test_answers_not_in_the_cases_format_could_not_be_judged_in_both_ways_in(
        both: tuple[Path, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, _ = both
    boxed = [{**c, "answer_format": "boxed"} for c in CASES]
    code, out, result = probe_both(both, pytester, capsys, monkeypatch, "plain", boxed)
    # a plain "42" under `boxed`: no failure (it was 100 % failure once), could not judge, with the fix
    assert code == result.ret == 3, out
    for text in (out, "\n".join(summary(result))):
        assert "could not judge the agent (exit 3):" in text
        assert "the agent's answers could not be read in 3 of 3 cases (answer_format boxed); one of them: '42'" in text
        assert "Set `answer_format` on the cases" in text
    assert set(classes(cli_root / ".frontier-qa").values()) == {"unresolved"}
    assert "  answers: 0 of 18 read in format boxed; 18 unreadable" in out.splitlines()
    report = json.loads((cli_root / "out" / "report.json").read_text())
    assert [p["code"] for p in report["gate"]["health"]] == ["answers-unreadable"]


def test_an_agent_importing_a_sibling_module_runs_in_both_ways_in(
        both: tuple[Path, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, py_root = both
    code, out, result = probe_both(both, pytester, capsys, monkeypatch, "sibling")
    assert code == result.ret == 1, out  # the found failure, not a refused agent file (exit 2)
    assert classes(cli_root / ".frontier-qa") == classes(py_root / ".frontier-qa") == {
        "add-1": "pass", "mul-1": "failure", "wd-1": "frontier"}


def test_the_agents_own_error_is_shown_and_the_run_could_not_judge(
        both: tuple[Path, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, py_root = both
    code, out, result = probe_both(both, pytester, capsys, monkeypatch, "raises")
    assert code == result.ret == 3, out
    for text in (out, "\n".join(summary(result))):
        assert "RuntimeError: flaky backend" in text and "could not judge the agent (exit 3):" in text
    shown = capsys.readouterr()
    assert main(["cases", "show", "mul-1", "--store", str(cli_root / ".frontier-qa")]) == 0
    assert "call failed: RuntimeError: flaky backend" in capsys.readouterr().out + shown.out


# --- item 3: the cases file as it is now -------------------------------------------------------------------


def test_a_fixed_reference_is_rejudged_without_calls_in_both_ways_in(
        both: tuple[Path, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli_root, py_root = both
    assert cli_at(cli_root, monkeypatch, capsys, "probe", "--out", "out")[0] == 1
    monkeypatch.chdir(py_root)
    assert pytest_run(pytester, *PLUGIN).ret == 1
    fixed = [{**c, "reference": "42"} if c["id"] == "mul-1" else c for c in CASES]
    for root in (cli_root, py_root):
        write_cases(root, fixed)
    code, out = cli_at(cli_root, monkeypatch, capsys, "probe", "--out", "out")
    assert code == 0, out
    assert "changed: mul-1: reference changed 43 → 42: re-judged from the 6 stored samples without a call " \
           "(failure → pass)" in out
    monkeypatch.chdir(py_root)
    again = pytest_run(pytester, *PLUGIN)
    assert again.ret == 0 and "  changed: mul-1: reference changed 43 → 42" in "\n".join(summary(again))
    assert classes(cli_root / ".frontier-qa")["mul-1"] == classes(py_root / ".frontier-qa")["mul-1"] == "pass"
    code, out = cli_at(cli_root, monkeypatch, capsys, "probe", "--out", "out")
    assert code == 0 and "changed:" not in out  # said once


def test_a_changed_prompt_is_probed_again_and_a_removed_case_is_named(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRONTIER_QA_CACHE", str(pytester.path / "cache"))
    project(pytester.path)
    assert pytest_run(pytester, *PLUGIN).ret == 1
    edited = [{**CASES[0], "prompt": "What is 20 + 22?"}, CASES[2]]  # add-1 asks something else; mul-1 is gone
    write_cases(pytester.path, edited)
    result = pytest_run(pytester, *PLUGIN, "--frontier-mode=replay")
    text = "\n".join(summary(result))
    assert "mul-1" not in re.findall(r"test_agent\[(.+?)\]", result.stdout.str())  # no item for the removed case
    assert "1 stored case(s) removed from cases.jsonl: not replayed (mul-1)" in text
    assert "add-1" in text and "probe" in text  # the changed task is asked anew, as a new observation
    latest = CaseStore(pytester.path / ".frontier-qa").latest()
    assert latest["add-1"].case.prompt == "What is 20 + 22?"
    assert result.ret == 0  # nothing regressed: the failure is gone with its case


def test_the_cli_replay_reads_the_cases_file_as_it_is_now(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRONTIER_QA_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "proj"
    root.mkdir()
    project(root)
    assert cli_at(root, monkeypatch, capsys, "probe", "--out", "out")[0] == 1  # mul-1 fails against its verified 43
    edited = [{**CASES[0], "prompt": "What is 20 + 22?"}, {**CASES[1], "reference": "42"}]  # wd-1 is gone
    write_cases(root, edited)
    code, out = cli(capsys, "replay", "--out", "out")
    # the fixed reference judged again with no new call, the changed task and the removed one named
    # and not replayed against answers to another question
    assert "changed: mul-1: reference changed 43 → 42: re-judged from the 6 stored samples without a call" in out
    assert "1 stored case(s) removed from cases.jsonl: not replayed (wd-1)" in out
    assert re.search(r"changed: add-1: .*probed again", out), out
    assert verdicts(root / ".frontier-qa") == {"mul-1": "same"}  # the one case replayed
    assert code == 0, out  # mul-1 now passes: nothing regressed
