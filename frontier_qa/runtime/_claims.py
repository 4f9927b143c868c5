"""Who is fetching which sample of a cache file: single flight across processes and tasks.

A claim on a sample key is a POSIX record lock (``fcntl`` ``F_SETLK``) on one byte of a sidecar
file next to the cache (``samples.sqlite3.claims``), at an offset taken from a hash of the key,
plus an entry in a table shared by every cache object of this process on that file (record
locks never conflict within one process, so the table is what keeps two tasks of one process
from fetching the same sample).

Why locks and not rows: a claim row cost a SQLite write transaction per cache miss (about
0.1 ms of every call), a heartbeat to keep it alive and an expiry to recover it. A record lock
costs one system call and writes nothing, and the kernel drops every lock of a process that
ends however it ends (``kill -9``, out of memory), so a dead owner's claims are free at once.
SQLite's WAL journal already requires every process sharing the cache to run on one host,
which is where record locks hold.

Offsets are 62-bit hashes of the keys: two keys share a byte with probability 2^-62 per pair of
samples in flight at once, which is left at that.

Without ``fcntl`` (Windows) only the in-process table is kept: two processes sharing a cache
there may both pay for a sample, as with the store's leases.
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: claims hold within one process only
    fcntl = None  # type: ignore[assignment]


def _offset(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big") >> 2


class KeyClaims:
    """The claims of this process on one cache file (get it with :func:`claims_for`). Thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644) if fcntl is not None else -1
        self._owners: dict[str, object] = {}
        self._lock = threading.Lock()
        self._users: weakref.WeakSet[object] = weakref.WeakSet()
        self._finalizer = weakref.finalize(self, os.close, self._fd) if self._fd >= 0 else None

    def _same_file(self) -> bool:
        if self._fd < 0:
            return True
        try:
            return os.path.samestat(os.fstat(self._fd), os.stat(self.path))
        except OSError:
            return False  # deleted (a test's temporary folder, a cleared cache directory)

    def _try_lock(self, key: str) -> bool:
        if self._fd < 0:
            return True
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _offset(key))
        except (BlockingIOError, PermissionError):  # EAGAIN / EACCES: another process holds it
            return False
        return True

    def _unlock(self, key: str) -> None:
        if self._fd >= 0:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, _offset(key))

    def claim(self, keys: Iterable[str], owner: object) -> tuple[list[str], list[str]]:
        """``(mine, theirs)``: the keys ``owner`` now holds, and those another task or process holds."""
        mine: list[str] = []
        theirs: list[str] = []
        with self._lock:
            for key in keys:
                if key not in self._owners and self._try_lock(key):
                    self._owners[key] = owner
                    mine.append(key)
                else:
                    theirs.append(key)
        return mine, theirs

    def release(self, keys: Iterable[str], owner: object) -> None:
        """Drop ``owner``'s claims among ``keys`` (others' claims are left alone)."""
        with self._lock:
            for key in keys:
                if self._owners.get(key) is owner:
                    del self._owners[key]
                    self._unlock(key)

    def detach(self, owner: object) -> None:
        """Drop every claim of ``owner``, which stops using the file (a closed cache)."""
        with self._lock:
            mine = [key for key, who in self._owners.items() if who is owner]
        self.release(mine, owner)
        self._users.discard(owner)
        _forget_unused()

    def _unused(self) -> bool:
        return not self._users and not self._owners

    def _close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closing drops this process's locks on the file: only once none is held
            self._fd = -1

    def held(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` a task of this process or a live process holds."""
        out: set[str] = set()
        with self._lock:
            for key in keys:
                if key in self._owners:
                    out.add(key)
                elif self._try_lock(key):
                    self._unlock(key)
                else:
                    out.add(key)
        return out


_REGISTRY: dict[str, KeyClaims] = {}
_REGISTRY_LOCK = threading.Lock()


def claims_for(cache_file: Path, user: object) -> KeyClaims:
    """The one :class:`KeyClaims` of this process for ``cache_file``, used by ``user`` until it
    calls :meth:`KeyClaims.detach` or is garbage. Record locks belong to the process, and closing
    any descriptor of the lock file drops all of them: one descriptor per file, closed only when
    no cache uses it and no claim is held.
    """
    real = Path(os.path.realpath(cache_file))
    path = real.with_name(real.name + ".claims")
    with _REGISTRY_LOCK:
        found = _REGISTRY.get(str(path))
        if found is None or not found._same_file():  # a new file at that place: new locks
            found = _REGISTRY[str(path)] = KeyClaims(path)
        found._users.add(user)
    _forget_unused()
    return found


def _forget_unused() -> None:
    with _REGISTRY_LOCK:
        for name, claims in list(_REGISTRY.items()):
            if claims._unused():
                del _REGISTRY[name]
                claims._close()


def _after_fork_in_child() -> None:
    """Record locks are not inherited: a forked child holds none of its parent's claims, and
    finds them held by another process (the parent) like any other.
    """
    global _REGISTRY_LOCK
    _REGISTRY_LOCK = threading.Lock()
    for claims in _REGISTRY.values():
        claims._lock = threading.Lock()
        claims._owners.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["KeyClaims", "claims_for"]
