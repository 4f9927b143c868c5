"""Threads for CPU models on a shared machine (frontier_qa/runtime/_cpu_share.py): the kernel's
count of running threads read for real, with real busy processes beside the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontier_qa.runtime import _cpu_share as cpu_share
from frontier_qa.runtime._cpu_share import ThreadFitter, fitting_threads, others_running, own_running

torch = pytest.importorskip("torch")
LINUX = Path("/proc/stat").is_file()


@pytest.fixture
def busy_cores() -> Iterator[int]:
    """One spinning process per core: every core is taken by someone else."""
    cores = os.cpu_count() or 1
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    time.sleep(0.5)  # they are running before the test reads the kernel's count
    try:
        yield cores
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


@pytest.fixture
def restore_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    before = torch.get_num_threads()
    monkeypatch.delenv(cpu_share.CPU_THREADS_ENV, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(cpu_share, "RECHECK_S", 0.0)
    yield
    torch.set_num_threads(before)


def test_the_model_gets_the_cores_others_leave_free() -> None:
    assert fitting_threads(2, 0, cores=2) == 2
    assert fitting_threads(2, 1, cores=2) == 1
    assert fitting_threads(2, 5, cores=2) == 1  # never none
    assert fitting_threads(4, 3, cores=16) == 4  # never more than torch would start with
    assert fitting_threads(3, None, cores=2) == 3  # the kernel did not say: torch's own count


def test_running_threads_are_read_from_the_kernels_count(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3\nprocs_running 4\nprocs_blocked 0\n")
    assert others_running(stat, samples=3) == 3  # the caller is not another
    # this process's own running threads are not someone else's: the caller and torch's workers,
    # which spin after each operation (a thread name may hold spaces and parentheses)
    own = tmp_path / "task"
    for tid, state in ((11, "R"), (12, "R"), (13, "S")):
        (own / str(tid)).mkdir(parents=True)
        (own / str(tid) / "stat").write_text(f"{tid} (pt_main (thread)) {state} 1 2 3\n")
    assert own_running(own) == 2
    assert others_running(stat, samples=3, own=own) == 2
    assert own_running(tmp_path / "absent") == 0
    stat.write_text("cpu  1 2 3\n")
    assert others_running(stat) is None
    assert others_running(tmp_path / "absent") is None


@pytest.mark.skipif(not LINUX, reason="reads /proc/stat")
def test_busy_processes_take_the_models_threads_and_give_them_back(busy_cores: int, restore_threads: None) -> None:
    assert others_running() >= busy_cores - 1  # type: ignore[operator]
    fitter = ThreadFitter(torch, ceiling=2)
    assert fitter.fit() == 1 and torch.get_num_threads() == 1


@pytest.mark.skipif(not LINUX, reason="reads /proc/stat")
def test_a_count_the_user_fixed_is_never_changed(
        busy_cores: int, restore_threads: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cpu_share.CPU_THREADS_ENV, "2")
    fitter = ThreadFitter(torch)
    assert fitter.fit() == 2 and torch.get_num_threads() == 2  # the user said 2, busy or not


@pytest.mark.skipif(not LINUX, reason="reads /proc/stat")
def test_without_load_the_ceiling_stays(restore_threads: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_share, "others_running", lambda: 0)  # the shared CI machine is never quiet
    fitter = ThreadFitter(torch, ceiling=2)
    torch.set_num_threads(1)
    assert fitter.fit() == 2 and torch.get_num_threads() == 2
