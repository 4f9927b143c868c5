"""The project-local case store, like Hypothesis' example database (``.hypothesis/``).

Layout of a store (default ``.frontier-qa/`` in the project)::

    .frontier-qa/
      .gitignore        "*": the store is a cache of results, never committed (export a suite instead)
      .lock             fcntl.flock lock file shared by every writer and reader
      store.json        {"format": 1}
      runs/<run_id>.jsonl   one JSON record per line: RunRecord and CaseRecord lines
      runs/.<run_id>.<shard>.lease   held (flock) by the one process writing that run shard
      baselines.jsonl   Baseline lines written by ``frontier-qa accept`` (the latest per case wins)
      guards.json       each suite's stored guard set and its picks (:mod:`frontier_qa.store._guards`)

Writes are append-only and atomic per line: each record is one ``os.write`` of a whole
line to a file opened with ``O_APPEND``, under an exclusive ``flock``, then ``fsync``.
A crash can leave at most one torn line at the end of a file; loading skips it with a
:class:`TornLineWarning` and keeps every earlier record, and the next append first ends
the torn line so it never swallows a good record. The latest record wins everywhere:
a case's records are ordered by ``finished_at``, ties broken by the record's content
hash, so a merge gives the same bytes whatever order its sources come in.

Small state files (``guards.json``) are not logs: :meth:`CaseStore.update_state` rewrites one
whole, read-modify-write under the exclusive lock, through a temp file, ``fsync`` and rename, so
a reader sees the old file or the new one, never a mix, and two writers never lose an update.

Nothing here imports torch or any I/O library beyond the standard one and pydantic.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_qa.store import _leases as leases
from frontier_qa.store._lines import _BASELINE, Line, _digest, _order_key, encode_line, latest_by, parse_lines
from frontier_qa.store._records import (
    CLASS_ORDER,
    Baseline,
    BoundaryRecord,
    CaseClass,
    CaseRecord,
    RunRecord,
    RunTotals,
    run_totals,
    utc_now,
)
from frontier_qa.store._shards import Shard
from frontier_qa.store._store_error import StoreError

try:  # POSIX; on other systems appends are still single writes but not cross-process locked
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

DEFAULT_DIR = ".frontier-qa"
STORE_FORMAT = 1
BASELINES_FILE = "baselines.jsonl"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_STATE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

def new_run_id() -> str:
    """A fresh, sortable run id: UTC time and 8 random hex digits (``20250131T120000Z-1a2b3c4d``)."""
    return f"{utc_now().strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}"


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems refuse fsync on directories
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@dataclass(frozen=True)
class ResumeState:
    """An interrupted run to continue: its latest run record and the cases already done."""

    run: RunRecord
    completed: frozenset[str]


@dataclass(frozen=True)
class MergeResult:
    """What a merge wrote: runs rewritten, case records kept, duplicate records dropped."""

    runs: int
    cases: int
    duplicates: int


class CaseStore:
    """An append-only store of case and run records in a directory.

    Args:
        root: the store directory (``.frontier-qa`` in the current directory by default);
            created with its ``.gitignore`` on first write.
    """

    def __init__(self, root: str | os.PathLike[str] = DEFAULT_DIR) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / "runs"

    def __repr__(self) -> str:
        return f"CaseStore({str(self.root)!r})"

    # -- low level -------------------------------------------------------------------

    def _ensure(self) -> None:
        if (self.root / "store.json").exists():
            return
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        gitignore = self.root / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("# frontier-qa case store: export a suite to commit cases\n*\n")
        meta = self.root / "store.json"
        tmp = meta.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"format": STORE_FORMAT}) + "\n")
        os.replace(tmp, meta)
        _fsync_dir(self.root)

    @contextlib.contextmanager
    def _locked(self, *, exclusive: bool) -> Iterator[None]:
        """Hold the store's flock: exclusive for writers, shared for readers."""
        if fcntl is None or not self.root.exists():
            yield
            return
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def run_path(self, run_id: str) -> Path:
        """The JSONL file of a run."""
        if not _RUN_ID.match(run_id):
            raise StoreError(
                f"run id {run_id!r} is not a safe file name",
                hint="use letters, digits, '.', '_' and '-' (at most 128), starting with a letter or digit",
            )
        return self.runs_dir / f"{run_id}.jsonl"

    def _append_locked(self, path: Path, data: bytes) -> None:
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # end a torn line left by a crash so it cannot swallow this record
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            _fsync_dir(path.parent)

    def append(self, record: Line) -> None:
        """Append one record to its run's file, atomically (one line, one write, fsync).

        Raises:
            StoreError: the record cannot be serialised (e.g. metadata that is not JSON).
        """
        try:
            data = encode_line(record)
        except (TypeError, ValueError) as err:
            raise StoreError(
                f"cannot write the record of run {record.run_id!r}: {err}",
                hint="keep case metadata JSON-serialisable (str, numbers, lists, dicts)",
            ) from err
        path = self.run_path(record.run_id)
        self._ensure()
        with self._locked(exclusive=True):
            self._append_locked(path, data)

    def _read_file(self, path: Path, *, lock: bool = True) -> list[Line]:
        with self._locked(exclusive=False) if lock else contextlib.nullcontext():
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                return []
        return list(parse_lines(data, str(path)))

    def run_ids(self) -> list[str]:
        """Ids of every run in the store, sorted."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(p.stem for p in self.runs_dir.glob("*.jsonl"))

    def lines(self, run_id: str | None = None) -> Iterator[Line]:
        """Every record of one run (or of all runs), in file order."""
        for rid in [run_id] if run_id is not None else self.run_ids():
            yield from self._read_file(self.run_path(rid))

    # -- baselines ----------------------------------------------------------------------

    @property
    def baselines_path(self) -> Path:
        """The file of accepted baselines (``baselines.jsonl``)."""
        return self.root / BASELINES_FILE

    def append_baselines(self, baselines: Sequence[Baseline]) -> None:
        """Append accepted baselines, all in one write (one line each, fsync)."""
        if not baselines:
            return
        self._ensure()
        with self._locked(exclusive=True):
            self._append_locked(self.baselines_path, b"".join(encode_line(b) for b in baselines))

    def baseline_lines(self) -> list[Baseline]:
        """Every accepted baseline, in file order (a case's earlier ones are its history)."""
        with self._locked(exclusive=False):
            try:
                data = self.baselines_path.read_bytes()
            except FileNotFoundError:
                return []
        return list(parse_lines(data, str(self.baselines_path), _BASELINE))

    def accepted(self) -> dict[str, Baseline]:
        """The latest accepted baseline of each case id."""
        return latest_by(self.baseline_lines(), lambda b: b.case_id)

    # -- state files ------------------------------------------------------------------------

    def _state_path(self, name: str) -> Path:
        if not _STATE_NAME.match(name):
            raise StoreError(f"state file name {name!r} is not a plain file name in the store",
                             hint="use letters, digits, '.', '_' and '-', e.g. guards.json")
        return self.root / name

    def read_state(self, name: str) -> bytes | None:
        """The bytes of a state file of the store (``guards.json``), read under the shared lock.

        Returns:
            The file's bytes, ``None`` when there is none.
        """
        path = self._state_path(name)
        with self._locked(exclusive=False):
            try:
                return path.read_bytes()
            except FileNotFoundError:
                return None

    def update_state(self, name: str, change: Callable[[bytes | None], bytes | None]) -> bytes | None:
        """Read, change and rewrite a state file, all under the store's exclusive lock.

        The new bytes replace the file atomically (temp file, ``fsync``, rename): readers see the
        old file or the new one, and a concurrent :meth:`update_state` waits, then changes what
        this one wrote. ``change`` runs while the lock is held: it must not call other methods of
        the store that lock (read what it needs first).

        Args:
            name: the file's name in the store folder.
            change: gets the current bytes (``None``: no file yet) and returns the new bytes, or
                ``None`` to leave the file as it is.

        Returns:
            The bytes the file holds afterwards (``None``: still no file).
        """
        path = self._state_path(name)
        self._ensure()
        with self._locked(exclusive=True):
            try:
                old: bytes | None = path.read_bytes()
            except FileNotFoundError:
                old = None
            new = change(old)
            if new is None or new == old:
                return old
            tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(new)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            _fsync_dir(self.root)
            return new

    # -- runs and resume ---------------------------------------------------------------

    def runs(self) -> list[RunRecord]:
        """The latest record of every run shard, sorted by start time then run id and shard."""
        latest = latest_by(
            (r for r in self.lines() if isinstance(r, RunRecord)), lambda r: (r.run_id, r.shard_index)
        )
        return sorted(latest.values(), key=lambda r: (r.started_at, r.run_id, r.shard_index))

    def run_records(self, run_id: str) -> list[RunRecord]:
        """The latest record of each shard of a run in this store (none for a file without one)."""
        found = (r for r in self.lines(run_id) if isinstance(r, RunRecord))
        return sorted(latest_by(found, lambda r: r.shard_index).values(), key=lambda r: r.shard_index)

    def run(self, run_id: str, shard_index: int | None = None) -> RunRecord:
        """The latest record of a run (of one shard of it when the file holds several)."""
        found = [
            r
            for r in self.lines(run_id)
            if isinstance(r, RunRecord) and (shard_index is None or r.shard_index == shard_index)
        ]
        if not found:
            raise StoreError(
                f"no run {run_id!r} in {self.root}",
                hint=f"known runs: {', '.join(self.run_ids()) or 'none'}",
            )
        return max(found, key=_order_key)

    def start_run(self, run: RunRecord) -> None:
        """Record that a run (shard) started; same as :meth:`append`."""
        self.append(run)

    def finish_run(
        self, run_id: str, *, shard_index: int | None = None, totals: RunTotals | None = None,
        boundaries: Sequence[BoundaryRecord] | None = None,
    ) -> RunRecord:
        """Record that a run ended, with totals over its cases (computed when not given).

        Cases count toward a shard when :func:`shard_of` puts them there, so shards that
        share a run id and a store still get their own totals.
        """
        run = self.run(run_id, shard_index)
        if totals is None:
            shard = Shard(run.shard_index, run.shard_count)
            cases = [r for r in self.latest(run_id=run_id).values() if shard.contains(r.id)]
            totals = run_totals(cases)
        now = utc_now()
        update: dict[str, Any] = {"finished_at": now, "written_at": now, "totals": totals}
        if boundaries is not None:
            update["boundaries"] = list(boundaries)
        done = run.model_copy(update=update)
        self.append(done)
        return done

    def interrupted_runs(self, *, live: bool = True) -> list[RunRecord]:
        """Run shards that started but never recorded their end (crashed, killed, or still running).

        Args:
            live: include shards a live process is still writing (``False``: only those
                whose writer is gone, which ``--resume`` may continue).
        """
        return [r for r in self.runs() if not r.finished and (live or not self.is_live(r.run_id, r.shard_index))]

    def lease_run(self, run_id: str, shard_index: int = 1, *, wait: bool | float = False,
                  on_wait: Any = None) -> leases.RunLease:
        """Take the exclusive lease of a run shard: this process is then its only writer.

        Raises:
            RunBusyError: a live process holds it (and ``wait`` ran out or was ``False``).
        """
        self.run_path(run_id)  # a safe file name
        self._ensure()
        return leases.acquire(leases.lease_path(self.runs_dir, run_id, shard_index),
                              f"run {run_id!r} (shard {shard_index})", wait=wait, on_wait=on_wait)

    def discard_run(self, run_id: str, shard_index: int = 1) -> bool:
        """Remove a run shard that recorded no case (it failed before its first): nothing is
        left open to resume. Only a file holding nothing but this shard's run records goes;
        call it while holding the run's lease. Returns whether the file was removed.
        """
        path = self.run_path(run_id)
        with self._locked(exclusive=True):
            records = self._read_file(path, lock=False)
            if not records or any(not isinstance(r, RunRecord) or r.shard_index != shard_index for r in records):
                return False
            path.unlink()
        return True

    def is_live(self, run_id: str, shard_index: int = 1) -> bool:
        """Whether a live process is writing this run shard now (holds its lease)."""
        return leases.is_live(leases.lease_path(self.runs_dir, run_id, shard_index))

    def completed_case_ids(self, run_id: str) -> frozenset[str]:
        """Ids of the cases a run already recorded (skip them when resuming)."""
        return frozenset(r.id for r in self.lines(run_id) if isinstance(r, CaseRecord))

    def resume(
        self, run_id: str, *, shard_index: int | None = None, config_hash: str | None = None
    ) -> ResumeState:
        """What is needed to continue an interrupted run (one shard of it, when given).

        Raises:
            StoreError: the run does not exist, already finished, or ran with another config.
        """
        run = self.run(run_id, shard_index)
        if run.finished:
            raise StoreError(
                f"run {run_id!r} finished at {run.finished_at:%Y-%m-%d %H:%M:%S}Z; nothing to resume",
                hint="start a new run, or replay its cases against the target",
            )
        if config_hash is not None and run.config_hash and config_hash != run.config_hash:
            raise StoreError(
                f"run {run_id!r} ran with config {run.config_hash[:12]}, not {config_hash[:12]}",
                hint="resume with the configuration the run started with, or start a new run",
            )
        shard = Shard(run.shard_index, run.shard_count)
        done = frozenset(i for i in self.completed_case_ids(run_id) if shard.contains(i))
        return ResumeState(run=run, completed=done)

    # -- index and replay ----------------------------------------------------------------

    def case_records(self, *, run_id: str | None = None, target_id: str | None = None) -> list[CaseRecord]:
        """Every case record (all of a case's history), optionally of one run or target."""
        return [
            r
            for r in self.lines(run_id)
            if isinstance(r, CaseRecord) and (target_id is None or r.target_id == target_id)
        ]

    def latest(self, *, run_id: str | None = None, target_id: str | None = None) -> dict[str, CaseRecord]:
        """The index: the latest record of each case id, optionally within one run or target."""
        return latest_by(self.case_records(run_id=run_id, target_id=target_id), lambda r: r.id)

    def replay(self, target_id: str | None = None, *, include_invalid: bool = False) -> list[CaseRecord]:
        """Stored cases to probe first, latest record per case: failures first, then by id.

        Args:
            target_id: only cases recorded for this target; all targets when ``None``.
            include_invalid: also cases that failed validation (skipped by default).
        """
        rank = {c: i for i, c in enumerate(CLASS_ORDER)}
        cases = [
            r
            for r in self.latest(target_id=target_id).values()
            if include_invalid or r.case_class is not CaseClass.INVALID
        ]
        return sorted(cases, key=lambda r: (rank[r.case_class], r.id))

    # -- merge -------------------------------------------------------------------------

    def merge(self, sources: Sequence[CaseStore | str | os.PathLike[str]]) -> MergeResult:
        """Merge other stores (CI shards) into this one, without duplicates.

        For each run found in a source, the run's file here is rewritten atomically
        (temp file, fsync, rename) with the latest record of each (run, case) and of each
        (run, shard); the result does not depend on the order of ``sources``.
        """
        incoming: list[Line] = []
        baselines: list[Baseline] = []
        me = self.root.resolve()
        for src in sources:
            store = src if isinstance(src, CaseStore) else CaseStore(src)
            if not store.root.is_dir():
                raise StoreError(f"no case store at {store.root}", hint="pass the directory that holds runs/")
            if store.root.resolve() != me:
                incoming.extend(store.lines())
                baselines.extend(store.baseline_lines())
        run_ids = sorted({r.run_id for r in incoming})
        self._ensure()
        kept = duplicates = 0
        with self._locked(exclusive=True):
            self._merge_baselines(baselines)
            for rid in run_ids:
                path = self.run_path(rid)
                lines = [r for r in incoming if r.run_id == rid] + self._read_file(path, lock=False)
                runs = latest_by((r for r in lines if isinstance(r, RunRecord)), lambda r: r.shard_index)
                cases = latest_by((r for r in lines if isinstance(r, CaseRecord)), lambda r: r.id)
                duplicates += sum(isinstance(r, CaseRecord) for r in lines) - len(cases)
                kept += len(cases)
                ordered = sorted(runs.values(), key=lambda r: (r.shard_index, *_order_key(r)))
                ordered += sorted(cases.values(), key=lambda r: (*_order_key(r), r.id))
                tmp = path.with_suffix(f".jsonl.{os.getpid()}.tmp")
                with open(tmp, "wb") as fh:
                    fh.write(b"".join(encode_line(r) for r in ordered))
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            _fsync_dir(self.runs_dir)
        return MergeResult(runs=len(run_ids), cases=kept, duplicates=duplicates)

    def _merge_baselines(self, incoming: Sequence[Baseline]) -> None:
        """Add the baselines this store lacks (same bytes = same baseline), in time order."""
        if not incoming:
            return
        try:
            mine = self.baselines_path.read_bytes()
        except FileNotFoundError:
            mine = b""
        have = {_digest(b) for b in parse_lines(mine, str(self.baselines_path), _BASELINE)}
        new: dict[str, Baseline] = {}
        for b in incoming:
            digest = _digest(b)
            if digest not in have:
                new[digest] = b
        if new:
            ordered = sorted(new.values(), key=_order_key)
            self._append_locked(self.baselines_path, b"".join(encode_line(b) for b in ordered))
