"""On-disk cache of samples, so a re-run of the same probe costs nothing.

Each successful sample is stored under ``cache_key(target id, messages, sampling, sample
index)``: sample *i* of a case is always the same cached sample, and asking for more
samples (a larger ``start``) calls the backend only for the new indices, so k-sample
statistics stay valid when sampling is sequential. Errors are never cached.

Storage is one SQLite file (stdlib ``sqlite3``, WAL journal): every write is an atomic
transaction, several processes may share the file, and a crash never leaves half a
record. Default location: ``.frontier-qa/cache/samples.sqlite3`` under the working directory.

*Single flight across processes.* Two probes sharing a cache must not pay for one sample
twice. Before a sample is fetched its key is *claimed* (:meth:`SampleCache.acquire`, which
reads the cached ones in the same step): a record lock held by this process
(:mod:`frontier_qa.runtime._claims`). Another process or task finding the claim waits for the
sample instead of fetching it. A claim is dropped once its sample is committed, or when the
call fails; the kernel drops the claims of a process that dies, so the others take them over
at once.

**Batched writes, and what survives a crash.** A commit per sample cost about 0.1–0.2 ms of
every call. :meth:`SampleCache.put` only queues the sample (a read sees it at once); a
writer thread commits the queue in one transaction at most ``flush_interval_s`` (default
0.05 s) after the oldest queued sample arrived, or as soon as ``max_pending`` are queued.
:meth:`SampleCache.flush` commits now; the probe engine calls it before it records a case
(:meth:`frontier_qa.runtime.ManagedTarget.flush`), and ``close`` and interpreter exit do too.
So a process killed outright (``kill -9``) loses at most the samples of its last
``flush_interval_s`` that no recorded case holds: every sample of a recorded case is on
disk, and so is every sample paid more than ``flush_interval_s`` (plus the writer's commit)
before the kill. A commit with ``synchronous=NORMAL`` survives the process, not a power cut
(``tests/runtime/test_cache_crash.py`` kills a real subprocess to check both).
A queued sample keeps its claim until its commit, so a process waiting for it never sees it
unclaimed and unstored.
"""

from __future__ import annotations

import atexit
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any

from frontier_qa.errors import ConfigError
from frontier_qa.redaction import mentions, redact_data
from frontier_qa.runtime._claims import KeyClaims, claims_for
from frontier_qa.target import ToolCall, Trajectory, Usage

DEFAULT_DIR = Path(".frontier-qa") / "cache"
FILENAME = "samples.sqlite3"
FORMAT_VERSION = 1

_LINGER_S = 1.0  # an idle writer thread waits this long for more samples, then exits

_SCHEMA = """
CREATE TABLE IF NOT EXISTS samples (
    key TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    created REAL NOT NULL,
    record TEXT NOT NULL
)
"""


_FIELDS = tuple(f.name for f in fields(Trajectory))


def trajectory_to_json(trajectory: Trajectory) -> str:
    """A JSON text holding everything in ``trajectory`` (versioned).

    The same text as ``json.dumps(dataclasses.asdict(trajectory))`` with sorted keys, without
    asdict's deep copy of every message (a third of the time; the cache's writer runs it for
    every sample, on the same interpreter lock as the calls).
    """
    record: dict[str, Any] = {name: getattr(trajectory, name) for name in _FIELDS}
    record["v"] = FORMAT_VERSION
    return _RECORD_JSON.encode(record)


def _plain(value: object) -> object:
    """What asdict would have made of a dataclass (usage, tool calls, one inside a message), else ``str``."""
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else str(value)


_RECORD_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=_plain)  # json.dumps builds one per call


def trajectory_from_json(text: str) -> Trajectory:
    """Inverse of :func:`trajectory_to_json`; the span is not read back (a hit runs in no span of this run)."""
    record: dict[str, Any] = json.loads(text)
    version = record.pop("v", None)
    if version != FORMAT_VERSION:
        raise ValueError(f"cache record version {version!r}, expected {FORMAT_VERSION}")
    return Trajectory(
        text=record["text"],
        messages=tuple(record.get("messages") or ()),
        tool_calls=tuple(ToolCall(**call) for call in record.get("tool_calls") or ()),
        usage=Usage(**(record.get("usage") or {})),
        cost_usd=record.get("cost_usd"),
        latency_s=float(record.get("latency_s") or 0.0),
        error=record.get("error"),
        sample_index=int(record.get("sample_index") or 0),
        cached=bool(record.get("cached")),
    )


def record_json(trajectory: Trajectory, secrets: tuple[str, ...] = ()) -> str:
    """The JSON the cache stores for a sample, every secret masked (:mod:`frontier_qa.redaction`:
    the known ones, ``secrets`` too, and text shaped like a credential), string by string, so the
    JSON stays whole.
    """
    record = trajectory_to_json(trajectory)
    if not mentions(trajectory, secrets):
        return record
    return _RECORD_JSON.encode(redact_data(json.loads(record), secrets))


class SampleCache:
    """A SQLite-backed map from sample keys to successful trajectories. Thread-safe.

    Args:
        path: a directory (the file ``samples.sqlite3`` is made inside it) or a file
            ending in ``.sqlite3``/``.sqlite``/``.db``. Default: ``.frontier-qa/cache/`` under
            the current directory, resolved when the cache is created.
        flush_interval_s: most seconds a queued sample waits for its commit (see the module
            docstring); 0 commits every :meth:`put` at once.
        max_pending: queued samples that trigger a commit before the interval is over.
    """

    def __init__(self, path: str | Path | None = None, *, flush_interval_s: float = 0.05,
                 max_pending: int = 512) -> None:
        base = Path(path) if path is not None else Path.cwd() / DEFAULT_DIR
        base = base.absolute()  # one spelling per file, for _flush_siblings
        self.path = base if base.suffix in (".sqlite3", ".sqlite", ".db") else base / FILENAME
        if flush_interval_s < 0 or max_pending < 1:
            raise ConfigError(f"need flush_interval_s >= 0 and max_pending >= 1, got {flush_interval_s}, {max_pending}")
        self.flush_interval_s = flush_interval_s
        self.max_pending = max_pending
        self._lock = threading.Lock()  # the connection and the queue
        self._wake = threading.Condition(threading.Lock())
        self._conn: sqlite3.Connection | None = None
        self._claims: KeyClaims | None = None
        self._expect_hits = False  # how acquire() orders its read and its claims
        self._pending: dict[str, tuple[str, float, Trajectory, str | None, tuple[str, ...] | None]] = {}
        self._oldest = 0.0
        self._writer: threading.Thread | None = None
        self._closing = False

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if self._conn is not None:
            return self._conn
        if not create and not self.path.exists():
            return None  # reading an absent cache creates nothing
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            claims = claims_for(self.path, self)  # opens samples.sqlite3.claims beside it
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"cannot open the sample cache at {self.path}: {exc}",
                hint="pass cache=PATH (a writable directory) or cache=False to run without a cache",
            ) from exc
        self._conn = conn
        self._claims = claims
        return conn

    def get(self, key: str) -> Trajectory | None:
        """The cached trajectory for ``key``, or ``None``."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, Trajectory]:
        """Every cached trajectory among ``keys`` (queued ones included; unreadable records are skipped)."""
        keys = list(keys)
        if not keys:
            return {}
        self._flush_siblings()
        found: dict[str, Trajectory] = {}
        with self._lock:
            for key in keys:
                queued = self._pending.get(key)
                if queued is not None:
                    found[key] = queued[2]
            rest = [k for k in keys if k not in found]
            conn = self._connect(create=False) if rest else None
            rows: list[tuple[str, str]] = []
            if conn is not None:
                for i in range(0, len(rest), 500):  # SQLite's bound-parameter limit
                    part = rest[i : i + 500]
                    marks = ",".join("?" * len(part))
                    rows += conn.execute(f"SELECT key, record FROM samples WHERE key IN ({marks})", part).fetchall()
        for key, record in rows:
            try:
                found[key] = trajectory_from_json(record)
            except (ValueError, TypeError, KeyError):
                continue  # a record from another version: treat as a miss, it gets rewritten
        return found

    def put(self, key: str, target_id: str, trajectory: Trajectory, *, record: str | None = None,
            secrets: tuple[str, ...] = (), checked: bool = False) -> bool:
        """Queue a successful trajectory for the next commit; errored ones are refused (``False``).

        Args:
            key: the sample key (:func:`frontier_qa.target.cache_key`).
            target_id: the target's id, so :meth:`clear` can drop one target's samples.
            trajectory: the sample (what :meth:`get` returns until it is committed).
            record: the JSON to store instead of ``trajectory_to_json(trajectory)``
                (the runtime passes a redacted one).
            secrets: values the writer masks in the JSON it makes (:func:`~frontier_qa.redaction.redact`).
            checked: the caller found no secret in ``trajectory`` (the writer need not look again).
        """
        if not trajectory.ok:
            return False
        with self._lock:
            self._connect(create=True)  # an unusable place fails here, at once, not in the writer
            first = not self._pending
            if first:
                self._oldest = time.monotonic()
                _QUEUED.setdefault(self.path, set()).add(self)
            # claimed until committed; ``None``: nothing to mask, the writer serialises it as it is
            self._pending[key] = (target_id, time.time(), trajectory, record, None if checked else secrets)
            due = len(self._pending) >= self.max_pending or self.flush_interval_s == 0
        if due:
            self.flush()
        elif first:  # the writer is idle (or gone): wake it; later puts join the same batch
            self._ensure_writer()
        return True

    def flush(self) -> int:
        """Commit every queued sample now, in one transaction, then drop their claims; returns how many."""
        with self._lock:
            if not self._pending:
                return 0
            rows = [(key, target, created, record if record is not None else
                     trajectory_to_json(trajectory) if secrets is None else record_json(trajectory, secrets))
                    for key, (target, created, trajectory, record, secrets) in self._pending.items()]
            conn = self._connect(create=True)
            assert conn is not None
            with _transaction(conn):
                conn.executemany("INSERT OR REPLACE INTO samples (key, target, created, record) VALUES (?, ?, ?, ?)",
                                 rows)
            self._pending.clear()
            _QUEUED.get(self.path, set()).discard(self)
            claims = self._claims
        if claims is not None:  # after the commit: a waiter never sees a sample unclaimed and unstored
            claims.release([key for key, *_ in rows], self)
        return len(rows)

    def _ensure_writer(self) -> None:
        with self._wake:
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._write_loop, name="frontier-qa-cache-writer", daemon=True)
                self._writer.start()
            self._wake.notify()

    def _write_loop(self) -> None:
        """Commit the queue ``flush_interval_s`` after its oldest sample; leave after a second idle."""
        while True:
            with self._wake:
                if not self._pending and not self._closing:
                    self._wake.wait(_LINGER_S)
                if self._closing or not self._pending:
                    if self._writer is threading.current_thread():
                        self._writer = None
                    return
                deadline = self._oldest + self.flush_interval_s
                while not self._closing and (left := deadline - time.monotonic()) > 0:
                    self._wake.wait(left)  # a put's notify must not cut the interval short
            try:
                self.flush()
            except (OSError, sqlite3.Error):  # a busy or vanished file: try again at the next interval
                time.sleep(self.flush_interval_s)

    def _flush_siblings(self) -> None:
        """Commit what other caches of this process queued for the same file, so that a second
        target opened on it (a re-run, a resumed curriculum) reads every sample the first one paid.
        """
        queued = _QUEUED.get(self.path)
        if queued:
            for other in list(queued):
                if other is not self:
                    other.flush()

    # -- single flight ------------------------------------------------------------------------

    def acquire(self, keys: Iterable[str]) -> tuple[dict[str, Trajectory], list[str], list[str]]:
        """Read the cached ``keys`` and claim the others, in one step.

        A key is read after it is claimed, so a sample another owner committed before dropping
        its claim is read, never fetched again. When the last call found mostly misses (a first
        run), every key is claimed and then read in one query; when it found mostly hits (a
        re-run), the keys are read first, and only the misses are claimed and read again.

        Returns:
            ``(hits, mine, theirs)``: the cached trajectories; keys this cache now owns (fetch
            them, then :meth:`put` or :meth:`release`); keys another task or process is
            fetching (wait for them with :meth:`get_many` and :meth:`pending`).
        """
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}, [], []
        claims = self._open_claims()
        hits = self.get_many(keys) if self._expect_hits else {}
        rest = [k for k in keys if k not in hits]
        mine: list[str] = []
        theirs: list[str] = []
        if rest:
            mine, theirs = claims.claim(rest, self)
            late = self.get_many(rest)  # committed by another owner before it let go
            if late:
                claims.release([k for k in mine if k in late], self)
                hits.update(late)
        self._expect_hits = 2 * len(hits) > len(keys)
        return (hits, [k for k in mine if k not in hits], [k for k in theirs if k not in hits])

    def release(self, keys: Iterable[str]) -> None:
        """Drop this cache's claims on ``keys`` that are not queued (the fetch failed): waiters fetch
        them themselves. Queued samples keep theirs until their commit.
        """
        claims = self._claims
        if claims is None:
            return
        with self._lock:
            keys = [k for k in keys if k not in self._pending]
        claims.release(keys, self)

    def pending(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` another task or a live process still claims (not stored, not released)."""
        return self._open_claims().held(keys)

    def _open_claims(self) -> KeyClaims:
        """This file's claims (opening the cache, and creating it, first)."""
        with self._lock:
            self._connect(create=True)
            claims = self._claims
        assert claims is not None
        return claims

    @contextmanager
    def _all_committed(self) -> Iterator[sqlite3.Connection | None]:
        """The connection under the lock (``None`` while the file does not exist), once every sample
        queued by this cache and by its siblings on the same file is committed: what whole-table
        statements (count, delete) must see.
        """
        self._flush_siblings()
        self.flush()
        with self._lock:
            yield self._connect(create=False)

    def clear(self, target_id: str | None = None) -> int:
        """Delete every entry (or only ``target_id``'s); returns how many were deleted."""
        with self._all_committed() as conn:
            if conn is None:
                return 0
            if target_id is None:
                cursor = conn.execute("DELETE FROM samples")
            else:
                cursor = conn.execute("DELETE FROM samples WHERE target = ?", (target_id,))
            return cursor.rowcount

    def __len__(self) -> int:
        with self._all_committed() as conn:
            return 0 if conn is None else int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])

    def __bool__(self) -> bool:
        return True  # an empty cache is still a cache (len() would say False)

    def close(self) -> None:
        """Commit what is queued, drop this cache's claims, stop its writer, and close
        the connection (it reopens on next use).
        """
        self.flush()
        with self._wake:
            self._closing = True
            self._wake.notify()
        writer = self._writer
        if writer is not None and writer is not threading.current_thread():
            writer.join()
        with self._lock:
            self._writer, self._closing = None, False
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            claims, self._claims = self._claims, None
        if claims is not None:
            claims.detach(self)

    def __repr__(self) -> str:
        return f"SampleCache({str(self.path)!r})"


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")


_QUEUED: dict[Path, set[SampleCache]] = {}  # per file, the caches of this process with queued samples


@atexit.register
def _flush_at_exit() -> None:
    """A normal exit commits every queued sample, even of a cache nobody closed."""
    for caches in list(_QUEUED.values()):
        for cache in list(caches):
            try:
                cache.flush()
            except (OSError, sqlite3.Error):
                pass


__all__ = ["DEFAULT_DIR", "SampleCache", "record_json", "trajectory_from_json", "trajectory_to_json"]
