"""The sandbox limits a run, not only a process (issue 16, item 7): disk in total, stale folders swept."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from frontier_qa.runtime.sandbox import Sandbox
from tests.factories import REPO

pytestmark = pytest.mark.faults

FILL_DISK = """
written = 0
for i in range(40):
    try:
        with open(f"f{i}.bin", "wb") as fh:
            fh.write(b"x" * (15 << 20))
        written += 15 << 20
    except OSError:
        break
print(written >> 20)
"""


def test_the_run_folder_is_capped_in_total_not_per_file() -> None:
    sandbox = Sandbox(timeout_s=30, max_file_mb=16, max_disk_mb=64)
    if not sandbox.capabilities().private_tmp:
        pytest.skip("no mount namespace here: only RLIMIT_FSIZE per file applies (README, Reliability)")
    result = sandbox.run(FILL_DISK)
    assert result.ok, result.stderr
    assert int(result.stdout) <= 64  # before: 600 MB in 40 files of 15 MB, each under the per-file cap
    leftovers = [p for p in Path(tempfile.gettempdir()).glob(f"fqa-sandbox-{os.getpid()}-*")]
    assert leftovers == []


def test_folders_of_a_killed_caller_are_swept_at_the_next_start(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = Path(tempfile.mkdtemp(prefix=f"fqa-sandbox-{dead.pid}-"))
    (stale / "main.py").write_text("print('left behind by kill -9')")
    done = subprocess.run([sys.executable, "-c", "from frontier_qa.runtime.sandbox import Sandbox; "
                           "print(Sandbox(timeout_s=10).run('print(1)').stdout.strip())"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "1", done.stderr
    assert not stale.exists()


SIX_CHILDREN = r'''
import subprocess, sys
kid = "b = bytearray(400 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('held', flush=True)\nimport time; time.sleep(2)"
procs = [subprocess.Popen([sys.executable, "-c", kid], stdout=subprocess.PIPE, text=True) for _ in range(6)]
print(sum(p.communicate()[0].strip() == "held" for p in procs))
'''


def test_the_processes_of_a_run_share_one_memory_cap() -> None:
    sandbox = Sandbox(timeout_s=60, memory_mb=512)  # max_total_memory_mb defaults to memory_mb
    caps = sandbox.capabilities()
    if caps.memory_total == "per process":
        pytest.skip("no memory cgroup here: memory_mb caps each process only (README, Reliability)")
    result = sandbox.run(SIX_CHILDREN)
    assert result.exit_code == 0, result.stderr
    held = int(result.stdout)
    assert held * 400 <= 512  # before: 6 children held 400 MB each (2.4 GB) under memory_mb=512
