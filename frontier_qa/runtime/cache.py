"""On-disk cache of samples, so a re-run of the same probe costs nothing.

Each successful sample is stored under ``cache_key(target id, messages, sampling, sample
index)``: sample *i* of a case is always the same cached sample, and asking for more
samples (a larger ``start``) calls the backend only for the new indices, so k-sample
statistics stay valid when sampling is sequential. Errors are never cached.

Storage is one SQLite file (stdlib ``sqlite3``, WAL journal): every write is an atomic
transaction, several processes may share the file, and a crash never leaves half a
record. Default location: ``.frontier-qa/cache/samples.sqlite3`` under the working directory.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from frontier_qa.errors import ConfigError
from frontier_qa.target import ToolCall, Trajectory, Usage

DEFAULT_DIR = Path(".frontier-qa") / "cache"
FILENAME = "samples.sqlite3"
FORMAT_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS samples (
    key TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    created REAL NOT NULL,
    record TEXT NOT NULL
)
"""


def trajectory_to_json(trajectory: Trajectory) -> str:
    """A JSON text holding everything in ``trajectory`` (versioned)."""
    record = asdict(trajectory)
    record["v"] = FORMAT_VERSION
    return json.dumps(record, ensure_ascii=False, sort_keys=True, default=str)


def trajectory_from_json(text: str) -> Trajectory:
    """Inverse of :func:`trajectory_to_json`."""
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


class SampleCache:
    """A SQLite-backed map from sample keys to successful trajectories. Thread-safe.

    Args:
        path: a directory (the file ``samples.sqlite3`` is made inside it) or a file
            ending in ``.sqlite3``/``.sqlite``/``.db``. Default: ``.frontier-qa/cache/`` under
            the current directory, resolved when the cache is created.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        base = Path(path) if path is not None else Path.cwd() / DEFAULT_DIR
        self.path = base if base.suffix in (".sqlite3", ".sqlite", ".db") else base / FILENAME
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

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
            conn.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"cannot open the sample cache at {self.path}: {exc}",
                hint="pass cache=PATH (a writable directory) or cache=False to run without a cache",
            ) from exc
        self._conn = conn
        return conn

    def get(self, key: str) -> Trajectory | None:
        """The cached trajectory for ``key``, or ``None``."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, Trajectory]:
        """Every cached trajectory among ``keys`` (unreadable records are skipped)."""
        keys = list(keys)
        if not keys:
            return {}
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return {}
            rows: list[tuple[str, str]] = []
            for i in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                part = keys[i : i + 500]
                marks = ",".join("?" * len(part))
                rows += conn.execute(f"SELECT key, record FROM samples WHERE key IN ({marks})", part).fetchall()
        found: dict[str, Trajectory] = {}
        for key, record in rows:
            try:
                found[key] = trajectory_from_json(record)
            except (ValueError, TypeError, KeyError):
                continue  # a record from another version: treat as a miss, it gets rewritten
        return found

    def put(self, key: str, target_id: str, trajectory: Trajectory, *, record: str | None = None) -> bool:
        """Store a successful trajectory; errored ones are refused (returns ``False``).

        Args:
            key: the sample key (:func:`frontier_qa.target.cache_key`).
            target_id: the target's id, so :meth:`clear` can drop one target's samples.
            trajectory: the sample.
            record: the JSON to store instead of ``trajectory_to_json(trajectory)``
                (the runtime passes a redacted one).
        """
        if not trajectory.ok:
            return False
        text = record if record is not None else trajectory_to_json(trajectory)
        with self._lock:
            conn = self._connect(create=True)
            assert conn is not None
            conn.execute(
                "INSERT OR REPLACE INTO samples (key, target, created, record) VALUES (?, ?, ?, ?)",
                (key, target_id, time.time(), text),
            )
        return True

    def clear(self, target_id: str | None = None) -> int:
        """Delete every entry (or only ``target_id``'s); returns how many were deleted."""
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return 0
            if target_id is None:
                cursor = conn.execute("DELETE FROM samples")
            else:
                cursor = conn.execute("DELETE FROM samples WHERE target = ?", (target_id,))
            return cursor.rowcount

    def __len__(self) -> int:
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return 0
            return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])

    def __bool__(self) -> bool:
        return True  # an empty cache is still a cache (len() would say False)

    def close(self) -> None:
        """Close the database connection (it reopens on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"SampleCache({str(self.path)!r})"


__all__ = ["DEFAULT_DIR", "SampleCache", "trajectory_from_json", "trajectory_to_json"]
