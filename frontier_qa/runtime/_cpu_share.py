"""Threads for a model that computes on the CPU of a shared machine.

torch runs a CPU model with one thread per core. Its threads meet at a barrier after every
operation, so when other processes hold some of the cores, every operation waits for the thread
that was descheduled: measured on the 2-core machine (``benchmarks/cpu_share.py``), SmolLM2-135M
took 13.2 s for 48 tokens with two threads beside two busy processes and 7.8 s with one thread
(4.0 s and 4.7 s on the quiet machine). :class:`ThreadFitter` gives the model the cores nobody
else is using, read from the kernel's count of running threads just before each generation.

The user decides when they say so: ``FRONTIER_QA_CPU_THREADS=N`` (or ``OMP_NUM_THREADS``, which
torch reads) fixes the count and nothing is adapted.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

CPU_THREADS_ENV = "FRONTIER_QA_CPU_THREADS"
RECHECK_S = 2.0
"""Seconds between two readings of the machine's load (a generation takes longer than that)."""


def others_running(stat: Path = Path("/proc/stat"), samples: int = 5,
                   own: Path = Path("/proc/self/task")) -> int | None:
    """Threads of other processes running or waiting for a core on this machine.

    The median of a few instant readings, a millisecond apart, of ``procs_running``
    (``/proc/stat``) minus this process's own running threads (``own``: the caller, and torch's
    worker threads, which spin for a while after each operation and would otherwise take the
    model's own cores for someone else's); ``None`` where the kernel does not say (not Linux).
    """
    readings = []
    for i in range(samples):
        try:
            text = stat.read_text()
        except OSError:
            return None
        found = next((line.split()[1] for line in text.splitlines() if line.startswith("procs_running ")), None)
        if found is None:
            return None
        readings.append(int(found) - max(1, own_running(own)))
        if i + 1 < samples:
            time.sleep(0.001)
    return max(0, int(statistics.median(readings)))


def own_running(tasks: Path = Path("/proc/self/task")) -> int:
    """This process's threads that are running or runnable now (state ``R``); 0 where unknown."""
    count = 0
    try:
        entries = list(tasks.iterdir())
    except OSError:
        return 0
    for task in entries:
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended
            continue
        if stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] == "R":  # the field after "(name)"
            count += 1
    return count


def fixed_threads() -> int | None:
    """The thread count the user fixed (``FRONTIER_QA_CPU_THREADS``, else ``OMP_NUM_THREADS``)."""
    for name in (CPU_THREADS_ENV, "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def fitting_threads(ceiling: int, others: int | None, cores: int | None = None) -> int:
    """Threads for the model: the cores the other running threads leave free, 1 to ``ceiling``."""
    if others is None:
        return ceiling
    free = (cores or os.cpu_count() or 1) - others
    return max(1, min(ceiling, free))


_STARTING_THREADS: list[int] = []
"""torch's thread count before any fitter changed it (every fitter in the process shares torch's)."""


class ThreadFitter:
    """Sets torch's thread count to the free cores before each generation (see module doc).

    Args:
        torch: the torch module.
        ceiling: the most threads (default: the count torch starts with, one per core).
    """

    def __init__(self, torch: Any, ceiling: int | None = None) -> None:
        self._torch = torch
        self.fixed = fixed_threads()
        if not _STARTING_THREADS:
            _STARTING_THREADS.append(int(torch.get_num_threads()))
        self.ceiling = ceiling or _STARTING_THREADS[0]
        self.threads = self.fixed or self.ceiling
        self._checked = float("-inf")
        if self.fixed is not None and int(torch.get_num_threads()) != self.fixed:
            torch.set_num_threads(self.fixed)

    def fit(self) -> int:
        """Adapt the thread count to the machine's load now (at most every ``RECHECK_S``); the count."""
        if self.fixed is not None or time.monotonic() - self._checked < RECHECK_S:
            return self.threads
        self._checked = time.monotonic()
        wanted = fitting_threads(self.ceiling, others_running())
        if wanted != self.threads or int(self._torch.get_num_threads()) != wanted:
            self._torch.set_num_threads(wanted)
            self.threads = wanted
        return self.threads
