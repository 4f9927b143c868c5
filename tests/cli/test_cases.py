"""`frontier-qa cases list|show|diff` through the real CLI, on a store a real probe wrote.

The store comes from real probes, an accept and a replay of scripted ``mock:`` targets
(:mod:`frontier_qa.adapters._mock_adapter`) through the real runtime and engine: run ``run-a``
(script A: arithmetic right, weekdays a coin), ``run-b`` (script B: ``add-1`` answers 999
against its verified reference, weekdays 3:2, ``add-0`` gone, ``new-1`` added) and the replay
``run-c`` of script B. The committed 0.1 store (``tests/data/v1/store``) shows old stores read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from frontier_qa.cli import main
from tests.factories import REPO

SCRIPT_A = """version: "1"
default: $reference
rules:
  - topic: weekdays
    answers: {$reference: 1, Blursday: 1}
"""
SCRIPT_B = """version: "2"
default: $reference
rules:
  - topic: weekdays
    answers: {$reference: 3, Blursday: 2}
  - id: add-1
    answer: "999"
"""
ROW_KEYS = {"id", "topic", "case_class", "p_hat", "interval", "k", "prompt", "reference", "reference_verified",
            "target_id", "target_version", "run_id", "finished_at"}
V1_STORE = REPO / "tests" / "data" / "v1" / "store"


def _rows(first: int, last: int, extra: bool = False) -> str:
    rows = [{"id": f"add-{i}", "topic": "arithmetic", "reference": str(10 + i), "reference_verified": True,
             "prompt": f"What is {i} plus 10?"} for i in range(3)]
    rows += [{"id": f"day-{i}", "topic": "weekdays", "reference": ("Monday", "Friday")[i],
              "prompt": f"Which weekday is case {i}?"} for i in range(2)]
    if extra:
        rows.append({"id": "new-1", "topic": "arithmetic", "reference": "5", "reference_verified": True,
                     "prompt": "What is 2 plus 3?"})
    return "".join(json.dumps(r) + "\n" for r in rows[first:last])


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cases")
    (root / "a.yaml").write_text(SCRIPT_A)
    (root / "b.yaml").write_text(SCRIPT_B)
    (root / "a.jsonl").write_text(_rows(0, 5))
    (root / "b.jsonl").write_text(_rows(1, 6, extra=True))
    # fixed k = 10: the observations these tests read do not depend on when a sequential policy stops
    common = ["--policy", "fixed", "--k", "10", "--store", str(root / "store"), "--out", str(root / "out"), "--progress", "off"]
    assert main(["probe", "--target", f"mock:{root / 'a.yaml'}", "--curriculum", str(root / "a.jsonl"),
                 "--run-id", "run-a", *common]) == 0
    assert main(["accept", "day-0", "--no-sample", "--target", f"mock:{root / 'a.yaml'}", "--store", str(root / "store")]) == 0
    assert main(["probe", "--target", f"mock:{root / 'b.yaml'}", "--curriculum", str(root / "b.jsonl"),
                 "--run-id", "run-b", "--no-replay", *common]) == 1  # add-1 is a failure now
    assert main(["replay", "--target", f"mock:{root / 'b.yaml'}", "--run-id", "run-c", *common]) == 1  # add-1 regressed
    return root / "store"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    rc, out, err = cli(capsys, *args, "--json")
    assert rc == 0, err
    return json.loads(out)


# --- list ------------------------------------------------------------------------------------------


def test_list_puts_failures_first_and_counts_at_the_end(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "cases", "list", "--store", str(store_dir))
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "CLASS", "P̂", "[INTERVAL]", "K", "TOPIC", "PROMPT"]
    assert [line.split()[0] for line in lines[1:-1]] == ["add-1", "day-0", "day-1", "add-0", "add-2", "new-1"]
    assert lines[1].split()[:3] == ["add-1", "failure", "1.00"] and "What is 1 plus 10?" in lines[1]
    assert lines[-1] == f"6 case(s): failure 1, frontier 2, pass 3 · latest observation each · store {store_dir} (3 run(s))"
    rc, out, _ = cli(capsys, "cases", "list", "--store", str(store_dir), "--limit", "2")
    assert len(out.splitlines()) == 4 and out.splitlines()[-1].startswith("6 case(s) (showing 2): failure 1,")


def test_list_filters_by_class_topic_run_and_target(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def ids(*flags: str) -> list[str]:
        return [c["id"] for c in as_json(capsys, "cases", "list", "--store", str(store_dir), *flags)["cases"]]

    assert ids("--class", "frontier") == ["day-0", "day-1"]
    assert ids("--class", "failure", "--class", "pass") == ["add-1", "add-0", "add-2", "new-1"]
    assert ids("--topic", "weekdays") == ["day-0", "day-1"]
    assert ids("--run", "run-a") == ["day-0", "day-1", "add-0", "add-1", "add-2"]  # add-1 passed in run-a
    a_target = as_json(capsys, "cases", "list", "--store", str(store_dir), "--run", "run-a")["cases"][0]["target_id"]
    assert ids("--target", a_target) == ids("--run", "run-a")
    rc, out, _ = cli(capsys, "cases", "list", "--store", str(store_dir), "--topic", "poetry")
    assert rc == 0 and out.startswith("no case matches these filters (6 case(s)") and "topics: arithmetic, weekdays" in out


def test_list_json_has_the_documented_shape(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "cases", "list", "--store", str(store_dir), "--class", "frontier")
    assert set(data) == {"kind", "version", "store", "filters", "cases", "counts", "total"}
    assert (data["kind"], data["version"], data["total"], data["counts"]) == ("cases.list", 1, 2, {"frontier": 2})
    assert data["filters"] == {"classes": ["frontier"], "topics": [], "run": None, "target": None}
    row = data["cases"][0]
    assert set(row) == ROW_KEYS
    assert (row["id"], row["case_class"], row["k"], row["run_id"], row["reference"]) == (
        "day-0", "frontier", 10, "run-c", "Monday")
    assert row["p_hat"] == pytest.approx(0.6) and set(row["interval"]) == {"low", "high"}
    assert row["interval"]["low"] < 0.6 < row["interval"]["high"]


# --- show ------------------------------------------------------------------------------------------


def test_show_tells_a_case_s_story(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "cases", "show", "weekdays/day-0", "--store", str(store_dir))
    assert rc == 0, err
    assert out.splitlines()[0] == "case day-0 · topic weekdays"
    assert "  reference:  Monday (unverified)" in out
    assert "      6 × Monday\n      4 × Blursday\n" in out  # the latest run's answers with their votes
    history = out.split("  history (3 observation(s), oldest first):\n")[1].splitlines()[:3]
    assert [h.split()[2:4] for h in history] == [["run-a", "frontier"], ["run-b", "frontier"], ["run-c", "frontier"]]
    assert history[2].endswith("replay: same") and "agent 1" in history[0] and "agent 2" in history[1]
    assert "(accepted)" in out and "accepted baselines (1, oldest first):" in out
    assert "run-c: same: answers 'Blursday' (the baseline's majority)" in out  # run-a tied 5-5


def test_show_json_and_the_ways_to_name_a_case(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "cases", "show", "add-1", "--store", str(store_dir))
    assert set(data) == {"kind", "version", "store", "case", "latest", "answers", "errors", "history", "baseline",
                         "accepted", "path", "pass_k", "samples"}
    assert (data["path"], data["pass_k"], data["samples"]) == (None, None, [])  # a model without tools
    assert (data["kind"], data["version"], data["case"]["prompt"]) == ("cases.show", 1, "What is 1 plus 10?")
    assert set(data["latest"]) == ROW_KEYS | {"reason"} and data["latest"]["case_class"] == "failure"
    assert data["answers"] == [{"answer": "999", "votes": data["latest"]["k"]}]
    assert data["errors"] == []  # no sample failed
    assert [(h["run_id"], h["case_class"]) for h in data["history"]] == [
        ("run-a", "pass"), ("run-b", "failure"), ("run-c", "failure")]
    assert data["history"][0]["verdict"] is None and data["history"][2]["verdict"]["verdict"] == "regression"
    # nobody accepted add-1: its baseline is its first observation (run-a, a pass)
    assert (data["baseline"]["source"], data["baseline"]["case_class"], data["accepted"]) == ("first", "pass", [])
    for name in ("arithmetic/add-1", "arithmetic/add-1"[:-1] + "1"):
        assert as_json(capsys, "cases", "show", name, "--store", str(store_dir))["case"]["id"] == "add-1"
    assert as_json(capsys, "cases", "show", "new", "--store", str(store_dir))["case"]["id"] == "new-1"  # a prefix


# --- diff ------------------------------------------------------------------------------------------


def test_diff_names_class_changes_new_and_vanished_cases(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "cases", "diff", "run-a", "run-b", "--store", str(store_dir))
    assert rc == 0, err
    assert out.splitlines()[0].startswith("cases diff  A: run-a (")
    changed = out.split("changed (1):\n")[1].splitlines()[0].split()
    assert changed[:6] == ["add-1", "arithmetic", "pass", "→", "failure", "p̂"] and "regression" in changed
    assert "new in B (1):\n  new-1" in out and "vanished from B (1):\n  add-0" in out
    assert out.splitlines()[-1].startswith("1 changed, 1 new, 1 vanished, 3 unchanged")
    assert cli(capsys, "cases", "diff", "run-a", "run-b", "--exit-code", "--store", str(store_dir))[0] == 1


def test_diff_json_keeps_noise_out_and_defaults_to_the_last_two_runs(
        store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "cases", "diff", "run-a", "run-b", "--store", str(store_dir))
    assert set(data) == {"kind", "version", "store", "run_a", "run_b", "changed", "new", "vanished", "unchanged",
                         "verdicts"}
    assert set(data["run_a"]) == {"run_id", "started_at", "target_id", "target_version", "cases"}
    assert (data["run_a"]["run_id"], data["run_a"]["cases"], data["run_b"]["cases"]) == ("run-a", 5, 5)
    [change] = data["changed"]
    assert (change["id"], change["class_a"], change["class_b"], change["verdict"]) == (
        "add-1", "pass", "failure", "regression")
    assert change["p_value"] <= change["level"]
    # the weekday cases moved from a 1:1 to a 3:2 coin: p̂ changed, but within the noise
    assert data["verdicts"] == {"regression": 1, "same": 3} and data["unchanged"] == 3
    assert [r["id"] for r in data["new"]] == ["new-1"] and [r["id"] for r in data["vanished"]] == ["add-0"]
    assert set(data["new"][0]) == ROW_KEYS
    last_two = as_json(capsys, "cases", "diff", "--store", str(store_dir))
    assert (last_two["run_a"]["run_id"], last_two["run_b"]["run_id"]) == ("run-b", "run-c")
    assert last_two["changed"] == last_two["new"] == last_two["vanished"] == []


# --- bad names, empty stores, old stores --------------------------------------------------------------


@pytest.mark.parametrize(("args", "says"), [
    (["show", "nope"], ["no case 'nope' in the store", "add-0, add-1", "fix: list them with: frontier-qa cases list"]),
    (["show", "add"], ["3 cases start with 'add': add-0, add-1, add-2"]),
    (["diff", "run-z", "run-a"], ["no run 'run-z'", "runs, latest first: run-c, run-b, run-a"]),
    (["diff", "run-a", "run-a"], ["got run run-a twice"]),
    (["list", "--run", "run"], ["3 runs start with 'run'"]),
    (["list", "--class", "bogus"], ["unknown case class 'bogus'", "use one of: failure, suspect"]),
])
def test_unknown_names_exit_2_naming_what_exists(store_dir: Path, capsys: pytest.CaptureFixture[str],
                                                 args: list[str], says: list[str]) -> None:
    rc, out, err = cli(capsys, "cases", *args, "--store", str(store_dir))
    assert rc == 2 and out == ""
    for text in says:
        assert text in err
    assert "Traceback" not in err


def test_missing_and_empty_stores_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(capsys, "cases", "list", "--store", str(tmp_path / "nowhere"))
    assert rc == 2 and f"no case store at {tmp_path / 'nowhere'}" in err
    (tmp_path / "empty" / "runs").mkdir(parents=True)
    rc, out, _ = cli(capsys, "cases", "list", "--store", str(tmp_path / "empty"))
    assert rc == 0 and out.startswith(f"the store {tmp_path / 'empty'} holds no cases yet: probe first")
    assert as_json(capsys, "cases", "list", "--store", str(tmp_path / "empty"))["cases"] == []
    rc, _, err = cli(capsys, "cases", "show", "x", "--store", str(tmp_path / "empty"))
    assert rc == 2 and "holds no cases yet" in err
    rc, _, err = cli(capsys, "cases", "diff", "--store", str(tmp_path / "empty"))
    assert rc == 2 and "cases diff compares two runs" in err and "has no run" in err


def test_a_frontier_qa_0_1_store_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = shutil.copytree(V1_STORE, tmp_path / "store")
    listed = as_json(capsys, "cases", "list", "--store", str(store))
    assert listed["counts"] == {"frontier": 1, "pass": 3}
    assert {r["target_id"] for r in listed["cases"]} == {"python:agent.py:run@1"}
    # the 0.1 target id carries its version: --target finds it with or without it
    assert as_json(capsys, "cases", "list", "--store", str(store), "--target", "python:agent.py:run")["total"] == 4
    shown = as_json(capsys, "cases", "show", "case-3648", "--store", str(store))
    assert [h["run_id"] for h in shown["history"]] == ["v1-probe", "v1-replay"]
    assert shown["answers"] == [{"answer": "Friday", "votes": 3}, {"answer": "Monday", "votes": 3}]
    diff = as_json(capsys, "cases", "diff", "--store", str(store))
    assert (diff["run_a"]["run_id"], diff["run_b"]["run_id"], diff["unchanged"], diff["changed"]) == (
        "v1-probe", "v1-replay", 4, [])
