"""Memory cgroups for sandbox runs: a limit on the *total* memory of a run's processes.

RLIMIT_AS caps each process; a run that starts six processes of 400 MB each fits under a
512 MB cap six times over. Where this process may create memory cgroups (cgroup v1 as root,
or a delegated cgroup v2 subtree), each sandbox run gets one, ``fqa-sandbox-<pid>-<n>``
below this process's own memory cgroup, with the limit set before the run's
launcher moves itself in; every process the code starts inherits it, and the kernel's OOM
killer ends the run's processes, not the caller. Elsewhere :func:`create` returns ``None``
and the sandbox says once that only the per-process caps apply.

Groups carry the caller's pid, so those left behind by a caller killed with -9 are removed
by :func:`sweep` at the next start.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import time
from pathlib import Path

from frontier_qa.runtime._processes import pid_alive

log = logging.getLogger(__name__)
_counter = itertools.count(1)
_warned = False
_PREFIX = "fqa-sandbox-"


def memory_root() -> tuple[Path, str] | None:
    """This process's memory cgroup folder and its version (``"v1"``/``"v2"``), if writable."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    found: tuple[Path, str] | None = None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            found = (Path("/sys/fs/cgroup/memory") / path.lstrip("/"), "v1")
            break
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").is_file():
            found = (Path("/sys/fs/cgroup") / path.lstrip("/"), "v2")
    if found is None or not found[0].is_dir() or not os.access(found[0], os.W_OK):
        return None
    return found


class RunGroup:
    """One run's memory cgroup; :meth:`remove` ends what is left in it and deletes it."""

    def __init__(self, path: Path, version: str) -> None:
        self.path = path
        self.version = version

    @property
    def procs(self) -> str:
        return str(self.path / "cgroup.procs")

    def remove(self) -> None:
        for _ in range(50):
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)  # its last processes are still being reaped


def create(limit_bytes: int) -> RunGroup | None:
    """A fresh memory cgroup limited to ``limit_bytes`` (swap included where it can be), or
    ``None`` when this machine does not let this process make one (said once, on the log).
    """
    global _warned
    found = memory_root()
    if found is not None:
        root, version = found
        path = root / f"{_PREFIX}{os.getpid()}-{next(_counter)}"
        try:
            path.mkdir()
            if version == "v1":
                (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                _try_write(path / "memory.memsw.limit_in_bytes", str(limit_bytes))
            else:
                (path / "memory.max").write_text(str(limit_bytes))
                _try_write(path / "memory.swap.max", "0")
            return RunGroup(path, version)
        except OSError as err:
            RunGroup(path, version).remove()
            reason = f"{path}: {err.strerror}"
    else:
        reason = "no memory cgroup this process may write (cgroup v1 needs root; v2 a delegated subtree)"
    if not _warned:
        _warned = True
        log.warning("the sandbox cannot cap a run's total memory here (%s); memory_mb applies "
                    "per process, times max_processes", reason)
    return None


def sweep() -> int:
    """Remove run groups whose caller is gone; returns how many."""
    found = memory_root()
    if found is None:
        return 0
    removed = 0
    for path in found[0].glob(f"{_PREFIX}*"):
        pid = path.name[len(_PREFIX):].split("-")[0]
        if not pid.isdigit() or pid_alive(int(pid)):
            continue
        RunGroup(path, found[1]).remove()
        removed += not path.exists()
    return removed


def _try_write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError:
        pass  # a kernel without swap accounting: the memory limit alone applies


__all__ = ["RunGroup", "create", "memory_root", "sweep"]
