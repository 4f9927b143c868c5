"""Every bad input is a usage error: exit 2, file and line, no traceback, nothing open."""

from __future__ import annotations

import json
import os

import pytest

from tests.faults.conftest import Faults

pytestmark = pytest.mark.faults

BINARY = bytes(range(128, 256)) * 4  # not UTF-8 from its first byte


def usage_error(faults: Faults, *args: str) -> str:
    rc, out, err = faults.cli(*args)
    assert rc == 2, out + err
    assert "Traceback" not in err and err.startswith("error: "), err
    assert not (faults.root / "store" / "runs").exists() or not any((faults.root / "store" / "runs").glob("*.jsonl"))
    return err


@pytest.mark.parametrize("name", ["cases.jsonl", "cases.yaml"])
def test_a_binary_cases_file(faults: Faults, name: str) -> None:
    (faults.root / name).write_bytes(b'{"id": "a", "prompt": "ok"}\n' + BINARY)
    err = usage_error(faults, "probe", "--target", "python:agent.py:answer", "--curriculum", name, "--store", "store")
    assert f"{name}:2:1: the cases file is not UTF-8 text (byte 0x80); is it a binary file?" in err


def test_a_binary_config_and_a_binary_score_file(faults: Faults) -> None:
    (faults.root / "config.yaml").write_bytes(b"version: 1\n" + BINARY)
    err = usage_error(faults, "probe", "--config", "config.yaml", "--store", "store")
    assert "config.yaml:2:1: the config is not UTF-8 text" in err
    (faults.root / "runs.jsonl").write_bytes(BINARY)
    assert "runs.jsonl:1:1: the runs file is not UTF-8 text" in usage_error(faults, "score", "runs.jsonl")


def test_output_paths_of_the_wrong_kind(faults: Faults) -> None:
    (faults.root / "runs.jsonl").write_text(json.dumps({"id": "a", "task": "t", "answers": ["1", "1"]}) + "\n")
    (faults.root / "folder").mkdir()
    assert "--out folder is a folder" in usage_error(faults, "score", "runs.jsonl", "--out", "folder")
    (faults.root / "report").write_text("a file")
    err = usage_error(faults, *faults.probe_args("--out", "report"))
    assert "--out report is a file; the reports go into a folder" in err
    assert faults.agent_calls() == []  # refused before any sample was paid


def test_agent_files_that_fail_to_import(faults: Faults) -> None:
    (faults.root / "raises.py").write_text("import os\n\nSETTING = os.environ['NO_SUCH_VARIABLE_HERE']\n")
    (faults.root / "broken.py").write_text("def answer(case:\n    return 1\n")
    (faults.root / "exits.py").write_text("raise SystemExit(3)\n")
    err = usage_error(faults, "probe", "--target", "python:raises.py:answer", "--curriculum", "cases.jsonl")
    assert "raises.py failed while importing, at" in err and "raises.py:3: KeyError: 'NO_SUCH_VARIABLE_HERE'" in err
    err = usage_error(faults, "probe", "--target", "python:broken.py:answer", "--curriculum", "cases.jsonl")
    assert "broken.py:1: SyntaxError: '(' was never closed" in err
    err = usage_error(faults, "probe", "--target", "python:exits.py:answer", "--curriculum", "cases.jsonl")
    assert "exits.py:1: SystemExit: 3" in err


def test_a_lone_surrogate_in_a_prompt(faults: Faults) -> None:
    (faults.root / "cases.jsonl").write_text('{"id": "a", "prompt": "fine", "reference": "1"}\n'
                                             '{"id": "s", "prompt": "x \\ud800 y", "reference": "1"}\n')
    err = usage_error(faults, *faults.probe_args("--run-id", "S"))
    assert "cases.jsonl:2: the text holds a lone surrogate '\\ud800' at character 2" in err


def test_a_run_that_fails_before_its_first_case_leaves_nothing_open(faults: Faults) -> None:
    faults.behave(status=401)  # a bad API key inside the agent: fatal on the first sample
    rc, out, err = faults.cli(*faults.probe_args("--run-id", "F"))
    assert rc == 2 and "HTTP 401" in err and "Traceback" not in err, out + err
    runs = faults.root / "store" / "runs"
    assert not (runs / "F.jsonl").exists() and not list(runs.glob(".*.lease"))
    faults.behave()
    rc, out, err = faults.cli(*faults.probe_args("--resume"))
    assert rc == 2 and "no interrupted run" in err  # nothing was left to resume
    assert os.path.exists(faults.root / "calls.log")
