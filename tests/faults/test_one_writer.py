"""One writer per run: a second writer is refused or waits; a dead one is taken over."""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest

from tests.faults.conftest import Faults, start_held_writer, wait_for

pytestmark = pytest.mark.faults


def paid_twice(faults: Faults) -> int:
    """Samples (case, index) the agent was asked for more than once, over every process."""
    counts = Counter((case, index) for _, case, index in faults.agent_calls())
    return sum(n - 1 for n in counts.values())


def test_a_second_writer_of_a_run_is_refused_while_the_first_runs(faults: Faults) -> None:
    first = start_held_writer(faults, "R", "--out", "out")
    rc, out, err = faults.cli(*faults.probe_args("--run-id", "R", "--out", "out2"))
    assert rc == 2, out + err
    assert f"run 'R' (shard 1) is being written by pid {first.pid} on host" in err
    assert "--wait" in err and "Traceback" not in err
    rc, out, err = faults.cli(*faults.probe_args("--resume", "R", "--out", "out2"))  # a second resumer too
    assert rc == 2 and f"is being written by pid {first.pid}" in err, out + err
    faults.release()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
    ids = Counter(row["case"]["id"] for row in faults.run_cases("R"))
    assert len(ids) == 8 and set(ids.values()) == {1}  # 8 cases, one record each
    assert paid_twice(faults) == 0
    assert not list((faults.root / "store" / "runs").glob(".*.lease"))  # released at the end


def test_wait_takes_the_run_over_when_its_writer_stops(faults: Faults) -> None:
    first = start_held_writer(faults)
    log = faults.root / "second.err"
    second = faults.start(*faults.probe_args("--resume", "R", "--wait", "--out", "out"), stderr_to=log)
    wait_for(lambda: "waiting for it (--wait)" in log.read_text(), what="the second writer waiting")
    assert f"run R is being written by pid {first.pid} on host" in log.read_text()
    os.killpg(first.pid, signal.SIGINT)  # the first writer stops (Ctrl-C): the run stays open
    faults.release()
    first.communicate(timeout=60)
    out, _ = second.communicate(timeout=120)
    assert first.returncode == 130 and second.returncode == 0, out + log.read_text()
    assert "run R" in out
    ids = Counter(row["case"]["id"] for row in faults.run_cases("R"))
    assert len(ids) == 8


def test_kill_9_then_two_resumers_one_takes_over_and_resume_without_id_skips_live_runs(faults: Faults) -> None:
    faults.behave(hold_after=8)
    dead = faults.start(*faults.probe_args("--run-id", "old", "--concurrency", "1"))
    faults.hold(dead.pid)
    wait_for(lambda: len(faults.run_cases("old")) >= 2, what="two cases of the doomed run")
    os.killpg(dead.pid, signal.SIGKILL)
    dead.communicate()
    before = {row["case"]["id"] for row in faults.run_cases("old")}

    # a live run of the same target: --resume without an id must not pick it
    faults.behave(hold_after=1)
    live = faults.start(*faults.probe_args("--run-id", "live", "--concurrency", "1", "--out", "out-live"))
    faults.hold(live.pid)
    wait_for(lambda: any(pid == str(live.pid) for pid, _, _ in faults.agent_calls()), what="the live run sampling")
    # hold_after stays 1: holds are per process, so the live run stays live until released below
    # while the two resumers sample freely (resetting it let the live run finish before `a` looked)
    a = faults.start(*faults.probe_args("--resume", "--out", "out-a"))  # the latest open run not live
    b = faults.start(*faults.probe_args("--resume", "old", "--out", "out-b"))
    (out_a, err_a), (out_b, err_b) = a.communicate(timeout=120), b.communicate(timeout=120)
    assert sorted([a.returncode, b.returncode]) == [0, 2], (out_a + err_a, out_b + err_b)
    loser_err = err_a if a.returncode == 2 else err_b
    winner_out = out_a if a.returncode == 0 else out_b
    # the loser found the lease held, or (without an id, started after the other took it) no run idle,
    # or (started after the winner had already finished the 6 cases left) the run finished
    assert ("is being written by pid" in loser_err or "2 still running: old, live" in loser_err
            or ("run 'old' finished at" in loser_err and "nothing to resume" in loser_err)), loser_err
    assert "Traceback" not in loser_err
    assert "run old" in winner_out  # the killed run was taken over at once, not the live one
    faults.release(live.pid)
    live_out, live_err = live.communicate(timeout=120)
    assert live.returncode == 0, live_out + live_err

    old = Counter(row["case"]["id"] for row in faults.run_cases("old"))
    assert len(old) == 8 and before <= set(old)  # 0 cases lost
    assert all(n == 1 for case, n in old.items() if case in before)  # finished ones were not redone
    assert len(faults.run_cases("live")) == 8


def test_ctrl_c_ends_a_wait_for_a_busy_run(faults: Faults) -> None:
    first = start_held_writer(faults)
    log = faults.root / "second.err"
    second = faults.start(*faults.probe_args("--resume", "R", "--wait"), stderr_to=log)
    wait_for(lambda: "waiting for it (--wait)" in log.read_text(), what="the second writer waiting")
    os.killpg(second.pid, signal.SIGINT)
    second.communicate(timeout=30)
    assert second.returncode == 130 and "Traceback" not in log.read_text()
    assert first.poll() is None  # the writer goes on, undisturbed
    faults.release()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
