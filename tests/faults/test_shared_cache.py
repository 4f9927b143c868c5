"""Two runs on one store share their samples: single flight across processes."""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest

from tests.faults.conftest import Faults, case_rows, wait_for
from tests.faults.test_one_writer import paid_twice

pytestmark = pytest.mark.faults


def test_two_concurrent_probes_on_one_store_pay_each_sample_once(faults: Faults, report_measurement) -> None:  # type: ignore[no-untyped-def]
    faults.write_cases(case_rows(12))
    faults.behave(delay=0.1, coin=True)  # half the samples wrong: sequential sampling asks for all k
    a = faults.start(*faults.probe_args("--run-id", "A", "--out", "out-a", k=6))
    b = faults.start(*faults.probe_args("--run-id", "B", "--out", "out-b", k=6))
    (out_a, err_a), (out_b, err_b) = a.communicate(timeout=180), b.communicate(timeout=180)
    assert a.returncode in (0, 1) and b.returncode in (0, 1), out_a + err_a + out_b + err_b
    calls = faults.agent_calls()
    twice = paid_twice(faults)
    by_pid = Counter(pid for pid, _, _ in calls)
    lost = sum(12 - len({row["case"]["id"] for row in faults.run_cases(run)}) for run in ("A", "B"))
    report_measurement("shared_cache", f"two concurrent probes on one store: {len(calls)} samples paid, {twice} paid "
                                       f"twice, cases lost {lost} (split {sorted(by_pid.values())})")
    assert lost == 0
    assert twice == 0  # how the work splits between the two depends on their start (loaded machines)


def test_a_sample_claimed_by_a_killed_process_is_fetched_by_the_other(faults: Faults) -> None:
    faults.write_cases(case_rows(1))
    faults.behave(hold_after=0)
    doomed = faults.start(*faults.probe_args("--run-id", "A", k=2))
    faults.hold(doomed.pid)  # it claims its samples, then hangs inside the agent
    wait_for(lambda: len(faults.agent_calls()) >= 1, what="the doomed process fetching")
    os.killpg(doomed.pid, signal.SIGKILL)
    doomed.communicate()
    rc, out, err = faults.cli(*faults.probe_args("--run-id", "B", "--out", "out", k=2), timeout=60)
    assert rc in (0, 1), out + err
    assert len(faults.run_cases("B")) == 1  # the dead owner's claims were taken over at once
