"""Prompt, lossless interrupts: Ctrl-C once drains, twice quits; agents cannot exit the probe."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import pytest

from tests.faults.conftest import Faults, case_rows, wait_for

pytestmark = pytest.mark.faults


def test_first_ctrl_c_keeps_the_samples_in_flight_and_resume_pays_nothing_twice(faults: Faults) -> None:
    faults.write_cases(case_rows(6))
    faults.behave(delay=1.5)  # a slow sync agent: 4 samples of one case in flight at once
    log = faults.root / "probe.err"
    proc = faults.start(*faults.probe_args("--run-id", "R", "--concurrency", "1"), stderr_to=log)
    wait_for(lambda: len(faults.agent_calls()) >= 4, what="samples in flight")
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    took = time.monotonic() - started
    err = log.read_text()
    assert proc.returncode == 130, out + err
    assert "waiting for the" in err and "--resume R" in err and "Traceback" not in err
    assert took < 1.5 + 2 + 3  # the calls in flight, the 2 s allowance, the process's own exit
    asked = len(faults.agent_calls())
    faults.behave()
    rc, out, err = faults.cli(*faults.probe_args("--resume", "R", "--out", "out"))
    assert rc == 0, out + err
    counts = Counter((case, index) for _, case, index in faults.agent_calls())
    assert sum(n - 1 for n in counts.values()) == 0  # the samples finished after Ctrl-C were cached, not redone
    assert len(faults.agent_calls()) > asked and len({row["case"]["id"] for row in faults.run_cases("R")}) == 6


def test_second_ctrl_c_quits_at_once_even_with_a_hung_sync_agent(faults: Faults) -> None:
    faults.behave(delay=3600)  # hangs
    log = faults.root / "probe.err"
    proc = faults.start(*faults.probe_args("--run-id", "H"), stderr_to=log)
    wait_for(lambda: len(faults.agent_calls()) >= 1, what="a hung sample")
    os.killpg(proc.pid, signal.SIGINT)
    wait_for(lambda: "Ctrl-C again to quit now" in log.read_text(), what="the first Ctrl-C taken")
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - started < 2.0
    assert "quitting now" in log.read_text()
    assert faults.run_cases("H") == []  # nothing was classified; the run stays open for --resume


def test_an_agent_calling_sys_exit_fails_only_its_sample(faults: Faults) -> None:
    faults.write_cases(case_rows(2))
    faults.behave(**{"raise": 3})
    rc, out, err = faults.cli(*faults.probe_args("--out", "out", "--k", "2"))
    assert "Traceback" not in err and "stopped: curriculum exhausted" in out, out + err
    report = __import__("json").loads((faults.root / "out" / "report.json").read_text())
    assert rc == report["gate"]["exit_code"]  # the probe's own verdict (every sample failed), not the agent's 3
    rows = faults.run_cases(next(p.stem for p in (faults.root / "store" / "runs").glob("*.jsonl")))
    errors = [s["error"] for row in rows for s in row["samples"]]
    assert errors and all("SystemExit(3)" in e for e in errors)
