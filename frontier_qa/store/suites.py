"""A named suite's cases in a store: which are its tests, what each is held to, and its suite file.

A suite (one ``@pytest.mark.frontier`` test, named) tags every case it finds with its name in the
case metadata (:data:`SUITE_KEY`), so one store holds many suites (and the CLI's runs) apart. Its
cases are the tagged cases with a record in one of its ``classes`` (failure, suspect, frontier by
default), its guards (stable pass cases, :mod:`frontier_qa.store.guards`), and the entries of its
committed suite file. A case never drops out because a replay found it better: a flaky finding
stays visible. Each is held to its baseline (:mod:`frontier_qa.store.baselines`): the latest one
accepted in the store, a committed suite entry's own, else the case's first observation.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from frontier_qa.store import baselines
from frontier_qa.store.case_store import CaseStore, export_suite, import_suite, latest_by, suite_entries
from frontier_qa.store.guards import guards_for, pytest_suite_key
from frontier_qa.store.records import Baseline, CaseRecord, SuiteCase

SUITE_KEY = "pytest_suite"
"""Case metadata key naming the suite that found (or replayed) a case."""


@dataclass(frozen=True)
class SuiteView:
    """A suite's cases as the store holds them.

    Attributes:
        ids: the suite's cases (its test items).
        stored: each case as known before this session (its latest record, or its suite entry).
        baselines: what each case is held to.
        found: this session's records of the cases (a replay or a probe that already ran).
        guards: the cases that are guards.
        known: cases the suite had any record of before this session.
    """

    ids: frozenset[str]
    stored: Mapping[str, CaseRecord | SuiteCase]
    baselines: Mapping[str, Baseline]
    found: Mapping[str, CaseRecord]
    guards: frozenset[str]
    known: int


def tagged(records: Iterable[CaseRecord], name: str) -> list[CaseRecord]:
    """The records of suite ``name``'s cases."""
    return [r for r in records if r.case.metadata.get(SUITE_KEY) == name]


def read_suite(store: CaseStore, name: str, *, classes: Sequence[str], guards: int,
               entries: Sequence[SuiteCase] = (), earlier: Sequence[CaseRecord] = (),
               now: Sequence[CaseRecord] = (), exclude: Collection[str] = (), repick: bool = False,
               request: str = "") -> SuiteView:
    """The suite's cases: the tagged cases of ``earlier`` sessions in one of ``classes``, its
    stored guards (up to ``guards``; picked and stored the first time, again only on ``repick`` or
    after an accept: :func:`~frontier_qa.store.guards.guards_for`), and the committed ``entries``
    (their guards too); ``now`` are this session's records of them. Cases in ``exclude`` (gone from
    the suite's source) are none of them.
    """
    rows = [r for r in (*earlier, *now) if r.id not in exclude]
    earlier = [r for r in earlier if r.id not in exclude]
    by_id = {e.case.id: e for e in entries if e.case.id not in exclude}
    stored: dict[str, CaseRecord | SuiteCase] = dict(by_id)
    stored.update(latest_by(earlier, lambda r: r.id))  # the store is newer than a committed suite
    ids = {r.id for r in rows if r.case_class.value in classes} | set(by_id)
    latest = latest_by(rows, lambda r: r.id)
    kept = guards_for(store, pytest_suite_key(name), latest.values(), guards, exclude=ids, repick=repick,
                      detail="pytest --frontier-repick-guards", request=request) if latest else None
    picked = set() if kept is None else set(kept.ids)
    picked |= {cid for cid, e in by_id.items() if e.role == "guard"}
    ids |= picked
    held = baselines.resolve(store, earlier)  # accepted, else the first observation
    accepted = store.accepted()
    for cid, entry in by_id.items():  # a committed suite's own, unless the store accepted a newer one
        own = baselines.of_entry(entry)
        if own is not None and (cid not in accepted or accepted[cid].accepted_at < own.accepted_at):
            held[cid] = own
    found = latest_by(now, lambda r: r.id)
    return SuiteView(frozenset(ids), {i: stored[i] for i in ids if i in stored},
                     {i: held[i] for i in ids if i in held}, {i: found[i] for i in ids if i in found},
                     frozenset(picked), len(stored))


@contextlib.contextmanager
def suite_lock(store: CaseStore, key: str) -> Iterator[None]:
    """Hold suite ``key``'s lock (``<store>/pytest/<key>.lock``): one process of a session probes for
    its new cases, or writes its suite file, at a time.
    """
    path = store.root / "pytest" / f"{key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no cross-process lock
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def suite_file_entries(path: str | Path, name: str) -> list[SuiteCase]:
    """A committed suite file's entries, tagged with the suite's name (their replays belong to it).

    Raises:
        StoreError: the file cannot be read, or an entry has no observed result.
    """
    from frontier_qa.store.case_store import StoreError

    entries = import_suite(path)
    blind = [e.case.id for e in entries if e.observed is None]
    if blind:
        raise StoreError(f"suite {path}: case {blind[0]!r} has no observed result",
                         hint="write the suite with `frontier-qa export` or --frontier-mode=generate")
    return [e.model_copy(update={"case": replace(e.case, metadata={**e.case.metadata, SUITE_KEY: name})})
            for e in entries]


def write_suite_file(path: str | Path, view: SuiteView) -> int:
    """Write the suite's cases, each with its baseline, into its committed suite file; the count.
    A case found in this session is born with its first observation as baseline.
    """
    records = {**{i: r for i, r in view.stored.items() if isinstance(r, CaseRecord)}, **view.found}
    held = dict(view.baselines)
    for cid, record in view.found.items():
        held.setdefault(cid, baselines.from_record(record))
    entries = suite_entries(records.values(), baselines=held, guards=view.guards)
    entries += [e for i, e in view.stored.items() if isinstance(e, SuiteCase) and i not in records]
    return export_suite(entries, path)


def write_accepted(path: str | Path, accepted: Mapping[str, Baseline]) -> None:
    """Put newly accepted baselines into a committed suite file (the entries of those cases)."""
    file = Path(path)
    if not accepted or not file.exists():
        return
    entries = [e.model_copy(update={"baseline": accepted[e.case.id]}) if e.case.id in accepted else e
               for e in import_suite(file)]
    export_suite(entries, file)


__all__ = ["SUITE_KEY", "SuiteView", "read_suite", "suite_file_entries", "suite_lock", "tagged", "write_accepted",
           "write_suite_file"]
