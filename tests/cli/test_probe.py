"""`frontier-qa probe / replay / export / merge / schema` end to end, through the real CLI.

The target is a real Python agent (``python:agent.py:answer``) written into the test's folder,
driven by the real runtime (cache, budget, retries) and the real engine; its behaviour per
topic is read from ``behaviour.json`` on every call, so a test can change it between runs:
``right`` (answers the truth), ``coin`` (truth on even sample indices, a wrong answer on odd
ones: p̂ = 0.5, in the frontier band), ``wrong`` (always the same wrong answer). Cases come
from a file curriculum; their truth is ``metadata.truth`` or the reference.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from frontier_qa.probing._engine import ProgressEvent
from frontier_qa.probing._progress import ProbeProgress, resolve_mode
from frontier_qa.store._records import CaseClass
from tests.cli.runner import run_cli
from tests.factories import REPO

AGENT = '''
import json, time
from pathlib import Path

version = "1"
HERE = Path(__file__).parent


def answer(case, sample_index):
    behaviour = json.loads((HERE / "behaviour.json").read_text())
    if behaviour.get("delay"):
        time.sleep(behaviour["delay"])
    truth = case.metadata.get("truth", case.reference)
    mode = behaviour.get("topics", {}).get(case.topic, "right")
    if mode == "coin":
        return "\\\\boxed{%s}" % (truth if sample_index % 2 == 0 else "Blursday")
    if mode == "wrong":
        return "\\\\boxed{wrong}"
    return "\\\\boxed{%s}" % truth
'''

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WEEKDAY_PROMPTS = (
    "{d} plus {n} days is which weekday for traveller {i}?",
    "Counting {n} days forward from {d}, where does hiker {i} land?",
    "If today were {d}, what weekday would sailor {i} see in {n} days?",
    "Parcel {i} leaves on {d} and takes {n} days; arrival weekday?",
)


def cases(extra: list[dict] | None = None) -> list[dict]:
    """6 arithmetic cases (verified references) and 4 weekday cases (truth, no reference)."""
    rows: list[dict] = []
    for i in range(6):
        a, b = 17 + 13 * i, 5 + 7 * i
        rows.append({"id": f"add-{i}", "topic": "arithmetic", "reference": str(a + b), "reference_verified": True,
                     "prompt": f"Case {i}: Ana has {a} apples and gets {b} more from friend number {i * 3}. How many?"})
    for i in range(4):
        rows.append({"id": f"day-{i}", "topic": "weekdays", "metadata": {"truth": DAYS[(2 * i + 3) % 7]},
                     "prompt": WEEKDAY_PROMPTS[i].format(d=DAYS[i], n=i + 3, i=i)})
    return rows + (extra or [])


class Project:
    """A folder with the agent, its behaviour and a cases file; runs the CLI inside it."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self.capsys = capsys
        (root / "agent.py").write_text(AGENT)
        self.behave()
        self.write_cases(cases())

    def behave(self, delay: float = 0.0, **topics: str) -> None:
        (self.root / "behaviour.json").write_text(json.dumps({"delay": delay, "topics": topics}))

    def edit_agent(self, note: str = "# edited") -> None:
        """Change the agent's source (not its behaviour): a new version."""
        path = self.root / "agent.py"
        path.write_text(path.read_text() + f"\n{note}\n")

    def write_cases(self, rows: list[dict]) -> None:
        (self.root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def base(self) -> list[str]:
        return ["--target", "python:agent.py:answer", "--k", "6", "--progress", "off"]

    def cli(self, *args: str) -> tuple[int, str, str]:
        return run_cli(self.root, self.capsys, args)

    def probe(self, *args: str) -> tuple[int, str, str]:
        return self.cli("probe", *self.base(), "--curriculum", "cases.jsonl", *args)

    def report(self, out: str = "out") -> dict:
        return json.loads((self.root / out / "report.json").read_text())

    def case_lines(self, out: str = "out") -> list[dict]:
        return [json.loads(line) for line in (self.root / out / "cases.jsonl").read_text().splitlines()]


def by_topic(report: dict) -> dict[str, dict[str, int]]:
    return {row["topic"]: row["counts"] for row in report["by_topic"]}


# --- (1) (2) (3) what a probe finds ----------------------------------------------------------


def test_inconsistent_topic_is_found_and_mapped_to_its_topic(project: Project) -> None:
    project.behave(weekdays="coin")
    rc, out, err = project.probe("--out", "out", "--store", "store")
    assert rc == 0, err
    report = project.report()
    topics = by_topic(report)
    assert topics["weekdays"]["frontier"] == 4 and topics["weekdays"]["pass"] == 0
    assert topics["arithmetic"]["pass"] == 6 and topics["arithmetic"]["frontier"] == 0
    frontier = {c["id"] for c in report["cases"] if c["case_class"] == "frontier"}
    assert frontier == {"day-0", "day-1", "day-2", "day-3"}
    truth = {r["id"]: r["metadata"]["truth"] for r in cases() if "metadata" in r}
    for case in report["cases"]:
        if case["case_class"] == "frontier":  # the coin alternates the truth and Blursday: 3 of each in 6
            assert case["p_hat"] == pytest.approx(0.5) and case["k"] == 6
            assert {a["answer"]: a["count"] for a in case["answers"]} == {truth[case["id"]]: 3, "Blursday": 3}
    assert report["frontier_share"] == pytest.approx(0.4)
    assert {line["case"]["id"] for line in project.case_lines()} == {c["id"] for c in cases()}
    assert "frontier map: weekdays: 4 frontier, 0 failure of 4" in out
    assert "gate: passed" in out
    for name in ("report.json", "junit.xml", "report.md", "report.html", "cases.jsonl"):
        assert (project.root / "out" / name).stat().st_size > 0


def test_always_right_target_has_no_failures_and_exits_0(project: Project) -> None:
    rc, out, err = project.probe("--out", "out", "--store", "store")
    assert rc == 0, err
    report = project.report()
    assert report["by_class"]["pass"] == 10
    assert report["by_class"]["failure"] == report["by_class"]["frontier"] == report["by_class"]["suspect"] == 0
    assert report["gate"]["passed"] is True


def test_wrong_unverified_reference_is_suspect_not_failure(project: Project) -> None:
    wrong_ref = {"id": "capital", "topic": "trivia", "reference": "Lyon", "metadata": {"truth": "Paris"},
                 "prompt": "Which city is the capital of France?"}
    project.write_cases(cases([wrong_ref]))
    rc, _, err = project.probe("--out", "out", "--store", "store")
    assert rc == 0, err  # suspects do not fail the default gate
    record = next(c for c in project.report()["cases"] if c["id"] == "capital")
    assert record["case_class"] == "suspect"
    assert (record["majority"], record["reference"], record["reference_verified"]) == ("Paris", "Lyon", False)
    assert project.report()["by_class"]["failure"] == 0


MOON = "What day of the week was 20 July 1969?"
PI_DAY = "What day of the week was 14 March 1879?"  # BLEU distance 0.41 from MOON: a near-duplicate
WRITER = f'''
import itertools
_n = itertools.count()


def write(case):  # a prompted curriculum's model: the two weekday prompts, in turn
    prompt = ({MOON!r}, {PI_DAY!r})[next(_n) % 2]
    return "<question>" + prompt + "</question>\\n\\\\boxed{{Sunday}}"
'''


def test_every_removed_case_is_named_with_its_reason(project: Project) -> None:
    # hand-written: both weekday prompts are kept; six identical copies of one are removed
    copies = [{"id": f"moon-copy-{i}", "topic": "weekdays", "prompt": MOON, "reference": "Sunday"} for i in range(6)]
    project.write_cases([{"id": "moon", "topic": "weekdays", "prompt": MOON, "reference": "Sunday"},
                         {"id": "pi", "topic": "weekdays", "prompt": PI_DAY, "reference": "Friday"}, *copies])
    rc, out, err = project.probe("--out", "out", "--store", "store")
    assert rc == 0, err
    report = project.report()
    reasons = {c["id"]: c["reason"] for c in report["cases"] if c["case_class"] == "invalid"}
    assert reasons == {c["id"]: f"identical to a prompt of this batch: {MOON}" for c in copies}
    assert {c["id"]: c["case_class"] for c in report["cases"]}.items() >= {"moon": "pass", "pi": "pass"}.items()
    lines = out.splitlines()
    at = lines.index("  removed by validation: 6")
    assert lines[at + 1:at + 7] == [f'    moon-copy-{i} "{MOON}": identical to a prompt of this batch: {MOON}'
                                    for i in range(5)] + ["    … 1 more in report.md"]
    md = (project.root / "out" / "report.md").read_text()
    assert "## Removed / invalid cases (6)" in md
    assert f"| moon-copy-5 | What day of the week was 20 July 1969? | identical to a prompt of this batch: {MOON} |" in md
    # generated: the same two prompts from a model; the second is a near-duplicate of the first
    (project.root / "writer.py").write_text(WRITER)
    rc, out, err = project.cli("probe", *project.base(), "--curriculum", "prompted:python:writer.py:write",
                               "--set", "probing.max_candidates=2", "--set", "probing.batch_size=2",
                               "--out", "gen", "--store", "gen-store")
    assert rc == 0, err
    [removed] = [c for c in project.report("gen")["cases"] if c["case_class"] == "invalid"]
    [kept] = [c for c in project.report("gen")["cases"] if c["case_class"] != "invalid"]
    assert {removed["prompt"], kept["prompt"]} == {MOON, PI_DAY}
    reason = removed["reason"]
    assert re.fullmatch(r"near-duplicate of this batch \(BLEU distance 0\.4\d < 0\.5\): " + re.escape(kept["prompt"]), reason)
    assert f'    {removed["id"]} "{removed["prompt"]}": {reason}' in out.splitlines()
    assert "  removed by validation: 1" in out and "more in report.md" not in out
    md = (project.root / "gen" / "report.md").read_text()
    assert f"| {removed['id']} | {removed['prompt']} | {reason.replace('<', '&lt;')} |" in md  # HTML kept inert


# --- (4) (8) gate and junit -----------------------------------------------------------------------


def test_failures_over_the_limit_fail_the_gate(project: Project) -> None:
    project.behave(arithmetic="wrong")
    rc, out, _ = project.probe("--out", "out", "--store", "store")
    assert rc == 1
    report = project.report()
    assert report["by_class"]["failure"] == 6
    assert report["gate"]["passed"] is False
    assert report["gate"]["reasons"] == ["6 failures (above the limit of 0)"]
    assert "gate: FAILED" in out and "6 failures (above the limit of 0)" in out
    # the same findings under a looser limit pass
    rc, out, _ = project.probe("--out", "out2", "--store", "store2", "--max-failures", "6")
    assert rc == 0 and "gate: passed" in out


def test_junit_has_one_testcase_per_case(project: Project) -> None:
    project.behave(arithmetic="wrong", weekdays="coin")
    rc, _, _ = project.probe("--out", "out", "--store", "store", "--frontier-as-failure")
    assert rc == 1
    root = ET.parse(project.root / "out" / "junit.xml").getroot()
    testcases = root.findall(".//testcase")
    assert len(testcases) == 10
    assert {tc.get("name") for tc in testcases} == {c["id"] for c in cases()}
    failed = {tc.get("name") for tc in testcases if tc.find("failure") is not None}
    assert failed == {f"add-{i}" for i in range(6)} | {f"day-{i}" for i in range(4)}  # frontier as failure


# --- (5) bad configuration ---------------------------------------------------------------------------


def test_bad_config_exits_2_naming_key_and_line_without_traceback(project: Project) -> None:
    (project.root / "probe.yaml").write_text(
        "version: 1\n"
        "target: python:agent.py:answer\n"
        "probing:\n"
        "  k: 0\n"
        "  bnad: agent0\n"
        "gate:\n"
        "  max_frontier_share: 1.5\n"
    )
    rc, out, err = project.cli("probe", "--config", "probe.yaml")
    assert rc == 2
    assert "probe.yaml:4: probing.k: Input should be greater than or equal to 1 (got 0)" in err
    assert "probe.yaml:5: probing.bnad: unknown key" in err and "did you mean 'band'?" in err
    assert "probe.yaml:7: gate.max_frontier_share" in err and "set gate.max_frontier_share to a number <= 1" in err
    assert "Traceback" not in err + out


def test_missing_target_and_curriculum_errors_say_what_to_do(project: Project) -> None:
    rc, _, err = project.cli("probe", "--curriculum", "cases.jsonl", "--progress", "off")
    assert rc == 2 and "target.spec: no target to probe" in err and "FRONTIER_QA_TARGET" in err
    rc, _, err = project.cli("probe", "--target", "python:agent.py:answer", "--progress", "off")
    assert rc == 2 and "a prompted curriculum needs curriculum.model" in err
    rc, _, err = project.cli("probe", *project.base(), "--curriculum", "cases.txt")
    assert rc == 2 and "--curriculum 'cases.txt' is not understood" in err
    rc, _, err = project.cli("probe", *project.base(), "--curriculum", "cases.jsonl", "--progress", "fancy")
    assert rc == 2 and "--progress 'fancy' is not understood" in err
    rc, _, err = project.cli("probe", *project.base(), "--curriculum", "cases.jsonl", "--run-id", "a", "b")
    assert rc == 2 and "unexpected argument 'b'" in err and "--resume b" in err
    rc, _, err = project.cli("probe", *project.base(), "--curriculum", "cases.jsonl", "--set", "probing.sequental=false")
    assert rc == 2 and "--set probing.sequental=false: probing.sequental: unknown key" in err
    assert "did you mean 'sequential'?" in err


# --- (6) interruption and resume ---------------------------------------------------------------------


def _case_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if '"kind":"case"' in line]


@pytest.mark.slow
def test_sigint_stops_cleanly_and_resume_completes_without_duplicates(project: Project) -> None:
    project.behave(delay=0.15, weekdays="coin")
    run_file = project.root / "store" / "runs" / "nightly.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_QA_")}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from frontier_qa.cli import main; sys.exit(main())", "probe", *project.base(), "--curriculum", "cases.jsonl",
         "--store", "store", "--out", "out", "--run-id", "nightly", "--concurrency", "2", "--progress", "plain"],
        cwd=project.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while len(_case_lines(run_file)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "--resume nightly" in err and "Traceback" not in err
    before = [c["case"]["id"] for c in _case_lines(run_file)]
    assert 2 <= len(before) < 10 and len(set(before)) == len(before)
    assert not (project.root / "out" / "report.json").exists()

    project.behave(delay=0.0, weekdays="coin")
    rc, out, err = project.cli("probe", *project.base(), "--curriculum", "cases.jsonl", "--store", "store",
                               "--out", "out", "--concurrency", "2", "--resume")  # the latest open run
    assert rc == 0, err
    assert "run nightly" in out
    ids = Counter(c["case"]["id"] for c in _case_lines(run_file))
    assert set(ids) == {c["id"] for c in cases()} and set(ids.values()) == {1}
    assert project.report()["total"] == 10 and project.report()["run"]["finished_at"] is not None
    rc, _, err = project.cli("probe", *project.base(), "--curriculum", "cases.jsonl", "--store", "store",
                             "--resume", "nightly")
    assert rc == 2 and "nothing to resume" in err


def test_budget_stop_leaves_the_run_open_and_resume_finishes_it(project: Project) -> None:
    project.behave(weekdays="coin")
    rc, out, err = project.probe("--out", "out", "--store", "store", "--run-id", "b1", "--budget-calls", "11",
                                 "--concurrency", "1")
    # the case in flight when the budget ran out stays unresolved: more than 20% of the few decided
    # (clear cases stop after 3 samples: 3 passes, then 2 calls of the fourth case), so this run
    # could not judge the agent (exit 3), and says so first
    assert rc == 3, out + err
    assert out.startswith("could not judge the agent (exit 3):\n  - ")
    assert "stayed unresolved (budget), above the limit of 20%" in out
    assert "stopped: budget" in out and "continue it with: --resume b1" in out
    assert "budget: calls 11/11" in out
    first = project.report()
    assert first["run"]["finished_at"] is None and first["total"] < 10
    assert first["gate"]["exit_code"] == 3 and first["gate"]["health"][0]["code"] == "unresolved-share"
    rc, out, err = project.probe("--out", "out", "--store", "store", "--resume", "b1", "--budget-calls", "200")
    assert rc == 0, err
    report = project.report()
    assert report["total"] == 10 and report["run"]["finished_at"] is not None
    assert by_topic(report)["weekdays"]["frontier"] == 4


# --- (7) replay ---------------------------------------------------------------------------------------


def test_replay_after_a_behaviour_change_reports_regressions_and_exits_1(project: Project) -> None:
    rc, _, _ = project.probe("--out", "out", "--store", "store")
    assert rc == 0
    rc, out, _ = project.cli("replay", *project.base(), "--store", "store", "--out", "same")
    assert rc == 0 and "replay: same 10" in out

    project.behave(arithmetic="wrong")
    rc, out, _ = project.cli("replay", *project.base(), "--store", "store", "--out", "after")
    assert rc == 1
    report = project.report("after")
    assert report["replay"]["counts"]["regression"] == 6 and report["replay"]["counts"]["same"] == 4
    assert {c["id"] for c in report["replay"]["changed"]} == {f"add-{i}" for i in range(6)}
    assert report["gate"]["reasons"] == ["6 replay regressions (above the limit of 0)"]
    assert "gate: FAILED" in out


def test_export_then_replay_the_committed_suite(project: Project) -> None:
    project.behave(weekdays="coin", arithmetic="wrong")
    assert project.probe("--out", "out", "--store", "store")[0] == 1
    rc, out, _ = project.cli("export", "--store", "store", "--suite", "tests/frontier_suite.yaml")
    assert rc == 0 and "exported 10 case(s) to tests/frontier_suite.yaml: 10 finding(s)" in out
    # a fresh machine (empty store) replays the suite; known failures do not fail the replay gate
    rc, out, err = project.cli("replay", *project.base(), "--suite", "tests/frontier_suite.yaml",
                               "--store", "fresh", "--out", "replayed")
    assert rc == 0, err
    assert project.report("replayed")["replay"]["counts"]["same"] == 10
    project.behave(weekdays="right", arithmetic="wrong")  # the frontier got easier: improved, not regressed
    project.edit_agent()  # a new version of the agent (its source hash changes)
    rc, _, _ = project.cli("replay", *project.base(), "--suite", "tests/frontier_suite.yaml", "--store", "fresh",
                           "--out", "improved")
    assert rc == 0 and project.report("improved")["replay"]["counts"]["improved"] == 4


def test_replay_with_nothing_to_replay_could_not_judge(project: Project) -> None:
    rc, out, _ = project.cli("replay", *project.base(), "--store", "empty", "--out", "nothing")
    assert rc == 3 and out.startswith("could not judge the agent (exit 3):\n  - there was no stored case to replay")
    report = project.report("nothing")
    assert report["gate"]["health"][0]["code"] == "nothing-to-replay" and report["total"] == 0


# --- (9) shards and merge ----------------------------------------------------------------------------


def test_shards_then_merge_give_the_union(project: Project) -> None:
    project.behave(weekdays="coin")
    shard_ids = []
    for i in (1, 2):
        rc, _, err = project.probe("--shard", f"{i}/2", "--run-id", "ci", "--store", f"s{i}", "--out", f"r{i}")
        assert rc == 0, err
        shard_ids.append({c["case"]["id"] for c in project.case_lines(f"r{i}")})
    assert shard_ids[0] and shard_ids[1] and not shard_ids[0] & shard_ids[1]
    rc, out, _ = project.cli("merge", "s1", "s2", "--into", "merged", "--out", "merged-report")
    assert rc == 0
    assert "1 run(s), 10 case(s), 0 duplicate record(s) dropped" in out
    report = project.report("merged-report")
    assert {c["id"] for c in report["cases"]} == shard_ids[0] | shard_ids[1] == {c["id"] for c in cases()}
    assert by_topic(report)["weekdays"]["frontier"] == 4
    # merging again changes nothing
    rc, out, _ = project.cli("merge", "s1", "s2", "--into", "merged")
    assert rc == 0 and "1 run(s), 10 case(s)" in out


# --- schema, config display, progress -------------------------------------------------------------


def test_schema_command_matches_the_committed_schema(project: Project) -> None:
    rc, out, _ = project.cli("schema")
    assert rc == 0
    assert json.loads(out) == json.loads((REPO / "configs" / "probe.schema.json").read_text())


def test_show_config_applies_precedence_and_masks_secrets(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    (project.root / "probe.yaml").write_text("target:\n  spec: python:agent.py:answer\n  options:\n"
                                             "    api_key: sk-in-the-file\nprobing:\n  k: 5\n")
    monkeypatch.setenv("FRONTIER_QA_PROBING__K", "4")
    monkeypatch.setenv("FRONTIER_QA_BUDGET__MAX_CALLS", "300")
    rc, out, _ = project.cli("probe", "--config", "probe.yaml", "--show-config")
    assert rc == 0 and "k: 5" in out and "max_calls: 300" in out
    assert "sk-in-the-file" not in out and "api_key: '***'" in out
    rc, out, _ = project.cli("probe", "--config", "probe.yaml", "--k", "6", "--show-config")
    assert rc == 0 and "k: 6" in out


def test_a_python_agent_in_a_config_is_found_next_to_the_config_from_any_directory(tmp_path: Path) -> None:
    proj, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    proj.mkdir()
    elsewhere.mkdir()
    (proj / "agent.py").write_text(AGENT)
    (proj / "behaviour.json").write_text(json.dumps({"topics": {"weekdays": "coin"}}))
    (proj / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in cases()))
    (proj / "cfg.yaml").write_text("target: python:agent.py:answer\nprobing: {k: 6}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_QA_") and k != "CI"}
    done = subprocess.run([sys.executable, "-m", "frontier_qa", "probe", "--config", "../proj/cfg.yaml",
                           "--curriculum", "../proj/cases.jsonl", "--store", "st", "--out", "out", "--progress", "off"],
                          cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((elsewhere / "out" / "report.json").read_text())
    # the agent ran (the coin makes the weekday cases frontier) and keeps the id written in the config
    assert report["run"]["target_id"] == "python:agent.py:answer"
    assert report["by_class"]["frontier"] == 4 and report["by_class"]["pass"] == 6
    # a flag stays relative to the current directory: there is no agent.py here
    done = subprocess.run([sys.executable, "-m", "frontier_qa", "probe", "--config", "../proj/cfg.yaml",
                           "--target", "python:agent.py:answer", "--curriculum", "../proj/cases.jsonl", "--store",
                           "st", "--progress", "off"], cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and "agent.py" in done.stderr and "Traceback" not in done.stderr


def _event(kind: str, **fields: object) -> ProgressEvent:
    return ProgressEvent(kind, budget="calls 12/100, tokens 0", **fields)  # type: ignore[arg-type]


def test_plain_progress_prints_findings_periodic_counters_and_budget() -> None:
    import io

    now = [0.0]
    stream = io.StringIO()
    progress = ProbeProgress("plain", stream=stream, interval_s=10.0, clock=lambda: now[0])
    with progress:
        progress(_event("classified", case_id="a", case_class=CaseClass.PASS, p_hat=1.0, k=3,
                        counts={"pass": 1, "candidates": 2}))
        assert stream.getvalue().count("\n") == 1  # the started line only: passes are quiet
        now[0] = 2.0
        progress(_event("classified", case_id="b", case_class=CaseClass.FAILURE, p_hat=0.9, k=6,
                        message="majority wrong", counts={"pass": 1, "failure": 1, "candidates": 2}))
        now[0] = 13.0
        progress(_event("classified", case_id="c", case_class=CaseClass.PASS, p_hat=1.0, k=3,
                        counts={"pass": 2, "failure": 1, "candidates": 3}))
        progress(_event("stopped", message="budget", counts={"pass": 2, "failure": 1, "candidates": 3}))
    lines = stream.getvalue().splitlines()
    assert lines == [
        "[probe     0.0s] started   probe; a line at least every 30 s until it ends",
        "[probe     2.0s] failure   b p̂=0.90 k=6 — majority wrong | calls 12/100, tokens 0",
        "[probe    13.0s] 3 cases: failure 1, pass 2 | 3 candidates | calls 12/100, tokens 0",
        "[probe    13.0s] stopped (budget): 3 cases: failure 1, pass 2 | 3 candidates | calls 12/100, tokens 0",
    ]


def test_a_quiet_run_still_writes_a_line_every_heartbeat_with_phase_calls_and_the_estimate_so_far() -> None:
    import io
    import threading

    now = [0.0]
    stream = io.StringIO()
    calls = iter(range(1, 100))
    progress = ProbeProgress("plain", stream=stream, heartbeat_s=0.05, clock=lambda: now[0])
    progress.attach(lambda: f"calls {next(calls)}/100")  # read live, not from the last event
    with progress:
        assert stream.getvalue().startswith("[probe     0.0s] started   probe")  # the first line, at once
        wrote = threading.Event()
        now[0] = 31.0  # 31 s pass without an event (a model loading, a long batch)
        for _ in range(100):
            if "working" in stream.getvalue():
                wrote.set()
                break
            threading.Event().wait(0.02)
        assert wrote.is_set()
        first = [line for line in stream.getvalue().splitlines() if "working" in line][0]
        assert first.startswith("[probe    31.0s] working   starting: opening the target")
        assert "0 cases" in first and "calls " in first
        progress(_event("axis", message="searching arithmetic digits (1/2)"))
        progress(_event("measured", message="arithmetic digits: accuracy 1:1.00 4:0.50; <0.8 at 4"))
        now[0] = 70.0
        for _ in range(100):
            if stream.getvalue().count("working") >= 2:
                break
            threading.Event().wait(0.02)
    beats = [line for line in stream.getvalue().splitlines() if "working" in line]
    assert len(beats) >= 2
    assert "searching arithmetic digits (1/2)" in beats[1]
    assert "so far: arithmetic digits: accuracy 1:1.00 4:0.50; <0.8 at 4" in beats[1]
    assert progress._beat is None  # the heartbeat thread ended with the run


def test_progress_reports_replay_regressions_and_renders_a_rich_bar() -> None:
    import io

    from frontier_qa.store._comparison import Comparison, RegressionVerdict

    regression = Comparison("add-1", RegressionVerdict.REGRESSION, "pass → failure", CaseClass.PASS, CaseClass.FAILURE,
                            1.0, 1.0)
    same = Comparison("add-2", RegressionVerdict.SAME, "unchanged", CaseClass.PASS, CaseClass.PASS, 1.0, 1.0)
    stream = io.StringIO()
    with ProbeProgress("plain", stream=stream, title="replay", clock=lambda: 1.0) as progress:
        for c in (regression, same):
            progress(_event("replayed", case_id=c.case_id, case_class=c.new_class, p_hat=1.0, k=3,
                            message=f"{c.verdict.value}: {c.reason}", comparison=c, counts={"failure": 1}))
    assert stream.getvalue().splitlines() == [
        "[replay     0.0s] started   replay; a line at least every 30 s until it ends",
        "[replay     0.0s] regression add-1 regression: pass → failure | calls 12/100, tokens 0"]
    assert progress.verdicts == {"regression": 1, "same": 1}
    assert progress.status_line() == "1 cases: failure 1 | replay regression 1, same 1 | calls 12/100, tokens 0"

    rich_stream = io.StringIO()
    with ProbeProgress("rich", stream=rich_stream, total=4) as bar:
        bar(_event("proposed", case_id="a", counts={"candidates": 2}))
        bar(_event("classified", case_id="a", case_class=CaseClass.FAILURE, p_hat=1.0, k=3, message="wrong",
                   counts={"failure": 1, "candidates": 2}))
    text = rich_stream.getvalue()
    assert "probe: candidates" in text and "2/4" in text and "failure   a" in text
    assert "proposing and sampling cases | 1 cases: failure 1 | 2 candidates | calls 12/100," in text


def test_progress_mode_is_plain_in_ci_and_off_a_terminal() -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    assert resolve_mode("auto", Tty(), env={}) == "rich"  # type: ignore[arg-type]
    assert resolve_mode("auto", Tty(), env={"CI": "true"}) == "plain"  # type: ignore[arg-type]
    assert resolve_mode("auto", Tty(), env={"CI": "false"}) == "rich"  # type: ignore[arg-type]
    assert resolve_mode("auto", object(), env={}) == "plain"  # type: ignore[arg-type]
    assert resolve_mode("off", Tty(), env={}) == "off"  # type: ignore[arg-type]
