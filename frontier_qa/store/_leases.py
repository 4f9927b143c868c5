"""One writer per run: an exclusive lease on a run shard.

A probe or replay that starts or resumes a run shard first takes its lease: an ``fcntl.flock``
on ``runs/.<run_id>.<shard>.lease`` in the store, kept for the whole run. A second writer is
refused with :class:`RunBusyError` (naming the holder's pid, host and start time), or waits
for the lease (``wait``). The kernel drops a flock when its holder dies, even by ``kill -9``,
so a lease left by a dead process is free at once: the next writer takes it over with no
expiry to wait out and no clock to trust. The file's content only names the holder.

The lease file is removed on release; a writer that locked a file just unlinked by the
previous holder notices (the path no longer names the inode it locked) and locks again, so
two writers never both hold "the" lease. ``flock`` is a local-filesystem lock: on a network
filesystem that does not support it, a run goes on without a lease and says so once.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from frontier_qa.errors import FrontierQAError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process lease
    fcntl = None  # type: ignore[assignment]

_RETRY_S = 0.5  # a lease seen busy is re-tried this long before refusing (a liveness probe may hold it)
_POLL_S = 0.1
_warned_unsupported = False


class RunBusyError(FrontierQAError):
    """Another live process is writing this run (exit 2; add ``--wait`` to wait for it).

    Attributes:
        path: the lease file, whose content names the holder (:func:`describe_holder`).
    """

    def __init__(self, message: str, *, hint: str | None = None, path: Path | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path if path is not None else Path()


def lease_path(runs_dir: Path, run_id: str, shard_index: int) -> Path:
    """The lease file of one shard of a run, hidden beside the run's records."""
    return runs_dir / f".{run_id}.{shard_index}.lease"


def holder(path: Path) -> dict[str, Any] | None:
    """What a lease file says about its holder (pid, host, since), ``None`` if unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def describe_holder(path: Path) -> str:
    """Who holds the lease at ``path``, for an error message ("pid 12 on host h (since ...)")."""
    info = holder(path) or {}
    if not info:
        return "another process"
    return f"pid {info.get('pid')} on host {info.get('host')} (since {info.get('since')})"


class RunLease:
    """The held lease of one run shard; :meth:`release` (or process death) frees it."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # while still locked: a waiter that opened it re-locks the new one
        os.close(fd)

    def __enter__(self) -> RunLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _try_lock(path: Path) -> int | None:
    """Lock ``path`` (created if needed) without blocking; the fd, or ``None`` when busy."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the previous holder unlinked it as we locked: lock the current file


def acquire(path: Path, run_name: str, *, wait: bool | float = False,
            on_wait: Callable[[str], None] | None = None) -> RunLease:
    """Take the lease at ``path``, or raise :class:`RunBusyError`.

    Args:
        path: the lease file (:func:`lease_path`).
        run_name: how the run is named in the error when another process holds it.
        wait: ``False``: refuse at once (after a short re-try); ``True``: wait as long as it
            takes; a number: wait that many seconds at most.
        on_wait: told once, with the holder's description, when this call starts waiting.
    """
    global _warned_unsupported
    if fcntl is None:
        return RunLease(path, None)
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = None if wait is True else time.monotonic() + (_RETRY_S if wait is False else float(wait))
    told = False
    while True:
        try:
            fd = _try_lock(path)
        except OSError as err:  # ENOLCK and friends: a filesystem without flock
            if not _warned_unsupported:
                _warned_unsupported = True
                print(f"frontier-qa: cannot lock {path} ({err}); runs in this store are not protected "
                      "against a second writer", file=sys.stderr)
            return RunLease(path, None)
        if fd is not None:
            os.ftruncate(fd, 0)
            info = {"pid": os.getpid(), "host": socket.gethostname(),
                    "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            os.pwrite(fd, json.dumps(info).encode(), 0)
            return RunLease(path, fd)
        if deadline is not None and time.monotonic() >= deadline:
            who = describe_holder(path)
            waited = "" if wait is False else f" after waiting {float(wait):g} s"
            raise RunBusyError(
                f"{run_name} is being written by {who}{waited}",
                hint="one process writes a run at a time: add --wait to wait for it, or start another "
                "run (a new --run-id); a run whose writer died is taken over at once",
                path=path,
            )
        if wait is not False and not told and on_wait is not None:
            told = True
            on_wait(describe_holder(path))
        time.sleep(_POLL_S)


def is_live(path: Path) -> bool:
    """Whether a live process holds the lease at ``path`` (a dead holder's lease is free)."""
    if fcntl is None or not path.exists():
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


__all__ = ["RunBusyError", "RunLease", "acquire", "describe_holder", "holder", "is_live", "lease_path"]
