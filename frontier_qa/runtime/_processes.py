"""Whether a process still runs: how leases, sandbox folders and memory cgroups
left by a caller killed with -9 are recognised as stale on this host.
"""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


__all__ = ["pid_alive"]
