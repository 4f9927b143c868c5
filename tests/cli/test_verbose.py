"""``frontier-qa -v`` / ``-vv``: the runtime's log on stderr, stdout untouched."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.cli.runner import run_cli

FLAKY = '''
seen = {}


def answer(case, sample_index):
    """Every sample's first attempt fails with an HTTP 503 (transient: the runtime retries)."""
    key = (case.id, sample_index)
    seen[key] = seen.get(key, 0) + 1
    if seen[key] == 1:
        error = RuntimeError("HTTP 503 from the upstream")
        error.status_code = 503
        raise error
    return "\\\\boxed{%s}" % case.reference
'''


def _run(root: Path, capsys: pytest.CaptureFixture[str], *flags: str, store: str = "store",
         cases: str = "cases.jsonl", rpm: int = 0) -> tuple[int, str, str]:
    # fixed k = 2: two samples a case whatever they say (the calibrated policy would leave them unresolved)
    return run_cli(root, capsys, [
        *flags, "probe", "--target", "python:agent.py:answer", "--curriculum", cases, "--policy", "fixed", "--k", "2",
        "--progress", "off", "--store", store, "--out", f"out-{store}", "--set", "target.limits.backoff.initial_s=0.01",
        "--set", "target.limits.backoff.jitter_s=0", "--set", "target.cache=false",
        *(["--set", f"target.limits.rpm={rpm}"] if rpm else [])])


@pytest.fixture
def flaky(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(FLAKY)
    for name, case_id in (("cases.jsonl", "add"), ("more.jsonl", "add-again")):
        (tmp_path / name).write_text(json.dumps({"id": case_id, "topic": "arithmetic", "reference": "7",
                                                 "reference_verified": True, "prompt": f"{case_id}: 3 + 4?"}) + "\n")
    return tmp_path


def test_without_v_retries_are_not_shown(flaky: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(flaky, capsys)
    assert rc == 0, err
    assert "retrying" not in err + out


def test_v_shows_each_retry_on_stderr_and_vv_debug(flaky: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(flaky, capsys, "-v")
    assert rc == 0, err
    retries = [line for line in err.splitlines() if "retrying a call to python:" in line]
    assert len(retries) == 2  # one per sample, k = 2
    assert retries[0].startswith("frontier-qa INFO frontier_qa.runtime._managed: ")
    assert "HTTP 503 from the upstream" in retries[0] and "retrying" not in out
    # a new case in a fresh store: two first attempts again (the agent module stays loaded)
    # rpm 1200: calls 50 ms apart, so the pacer waits, which only DEBUG shows
    rc, out, err = _run(flaky, capsys, "-vv", store="second", cases="more.jsonl", rpm=1200)
    assert rc == 0, err
    assert "frontier-qa DEBUG frontier_qa.runtime._rate_limit: rate limit: waiting" in err
    assert sum("retrying a call to" in line for line in err.splitlines()) == 2  # one handler, not two
    # the command is over: the process's logging is as it was
    logger = logging.getLogger("frontier_qa")
    assert logger.level == logging.NOTSET and not [h for h in logger.handlers if type(h).__name__ == "_Stderr"]
