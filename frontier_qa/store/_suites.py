"""A named suite's cases in a store: which are its tests, what each is held to, and its suite file.

A suite (one ``@pytest.mark.frontier`` test, named) tags every case it finds with its name in the
case metadata (:data:`SUITE_KEY`), so one store holds many suites (and the CLI's runs) apart. Its
cases are the tagged cases with a record in one of its ``classes`` (failure, suspect, frontier by
default), its guards (stable pass cases, :mod:`frontier_qa.store._guards`), and the entries of its
committed suite file. A case never drops out because a replay found it better: a flaky finding
stays visible. Each is held to its baseline (:mod:`frontier_qa.store._baselines`): the latest one
accepted in the store, a committed suite entry's own, else the case's first observation.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from frontier_qa._expectations import portable, rooted
from frontier_qa.redaction import restore
from frontier_qa.store import _baselines as baselines
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._guards import guards_for, pytest_suite_key
from frontier_qa.store._lines import _json_line, latest_by, stored_form
from frontier_qa.store._records import SCHEMA_VERSION, Baseline, CaseClass, CaseRecord, SuiteCase
from frontier_qa.store._store_error import StoreError

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
    after an accept: :func:`~frontier_qa.store._guards.guards_for`), and the committed ``entries``
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


# --- committable suite files -------------------------------------------------------------


def _suite_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise StoreError(f"cannot tell the suite format of {path}", hint="name it *.jsonl or *.yaml")


def suite_entries(
    records: Iterable[CaseRecord],
    *,
    volatile: bool = False,
    baselines: Mapping[str, Baseline] | None = None,
    guards: Collection[str] | None = None,
) -> list[SuiteCase]:
    """Suite entries from case records: the latest per case id, sorted by id.

    Args:
        records: case records (several per case allowed; the latest wins).
        volatile: also keep the run id, finish time and cost (off for committed suites,
            so re-exporting an unchanged suite gives an unchanged file).
        baselines: each case's baseline by id (:func:`frontier_qa.store._baselines.resolve`),
            written into the entry so that a replay of the committed suite compares with it;
            default: each case's first observation among ``records``.
        guards: the ids of the guard cases (:func:`frontier_qa.store._guards.guards_for`): these
            are written with role ``guard`` whatever their class now (a guard that broke is still
            the guard it was), every other case with ``finding``. Default: a ``pass`` case is a
            guard, any other class a finding.
    """
    records = list(records)
    if baselines is None:
        from frontier_qa.store._baselines import first_observations, from_record

        baselines = {cid: from_record(r) for cid, r in first_observations(records).items()}
    latest = latest_by(records, lambda r: r.id)
    return [
        SuiteCase(
            case=r.case,
            baseline=baselines.get(r.id),
            observed=r.observed(),
            role="guard" if (r.case_class is CaseClass.PASS if guards is None else r.id in guards) else "finding",
            run_id=r.run_id if volatile else None,
            finished_at=r.finished_at if volatile else None,
            cost=r.cost if volatile else None,
        )
        for _, r in sorted(latest.items())
        if isinstance(r, CaseRecord)
    ]


class _SuiteDumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks so prompts stay readable in diffs."""


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SuiteDumper.add_representer(str, _str_presenter)


def export_suite(
    records: Iterable[CaseRecord] | Iterable[SuiteCase],
    path: str | os.PathLike[str],
    *,
    volatile: bool = False,
) -> int:
    """Write a committable suite (JSONL or YAML by suffix), stable order; returns the case count.

    The file is written atomically (temp file + rename). ``None`` fields are left out.
    """
    path = Path(path)
    fmt = _suite_format(path)
    items = list(records)
    entries = [e for e in items if isinstance(e, SuiteCase)]
    entries += suite_entries([r for r in items if isinstance(r, CaseRecord)], volatile=volatile)
    entries.sort(key=lambda e: e.case.id)
    # where a check file lies, relative to the suite file: the committed file is the same in every checkout
    entries = [e.model_copy(update={"case": portable(e.case, path.parent)}) for e in entries]
    # which runs a baseline pooled, and the frontier-qa that wrote it, would churn a committed file
    churn = None if volatile else {"baseline": {"run_ids", "frontier_qa_version"}}
    dumped = [stored_form(e.model_dump(mode="json", exclude_none=True, exclude=churn)) for e in entries]
    if fmt == "jsonl":
        data = b"".join(_json_line(d) for d in dumped)
    else:
        text = yaml.dump(dumped, Dumper=_SuiteDumper, sort_keys=False, allow_unicode=True, width=100)
        data = text.encode("utf-8", "backslashreplace")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return len(entries)


def import_suite(path: str | os.PathLike[str]) -> list[SuiteCase]:
    """Read a suite written by :func:`export_suite` (or by hand), in file order.

    Raises:
        StoreError: the file is missing, malformed, has an invalid entry or a repeated case id.
    """
    path = Path(path)
    fmt = _suite_format(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise StoreError(f"cannot read suite {path}: {err.strerror}", hint="check the path") from err
    raw: list[tuple[str, Any]] = []
    if fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    raw.append((f"{path}:{number}", json.loads(line)))
                except ValueError as err:
                    raise StoreError(
                        f"{path}:{number}: not JSON: {err}", hint="one JSON object per line"
                    ) from err
    else:
        try:
            loaded = yaml.safe_load(text) or []
        except yaml.YAMLError as err:
            raise StoreError(f"{path}: not valid YAML: {err}", hint="fix the YAML syntax") from err
        if not isinstance(loaded, list):
            raise StoreError(
                f"{path}: a suite is a YAML list of entries", hint="start each entry with '- case:'"
            )
        raw = [(f"{path} entry {i + 1}", obj) for i, obj in enumerate(loaded)]
    entries: list[SuiteCase] = []
    seen: set[str] = set()
    for where, obj in raw:
        if (
            isinstance(obj, dict)
            and isinstance(obj.get("schema_version"), int)
            and obj["schema_version"] > SCHEMA_VERSION
        ):
            raise StoreError(
                f"{where}: schema_version {obj['schema_version']} is newer than this frontier-qa reads",
                hint="upgrade frontier-qa",
            )
        if isinstance(obj, dict) and isinstance(obj.get("case"), dict):
            obj["case"] = restore(obj["case"])
        try:
            entry = SuiteCase.model_validate(obj)
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            raise StoreError(
                f"{where}: {loc}: {first.get('msg')}", hint="fix that field of the entry"
            ) from err
        if entry.case.id in seen:
            raise StoreError(
                f"{where}: case id {entry.case.id!r} appears twice", hint="give each case a unique id"
            )
        seen.add(entry.case.id)
        entries.append(entry.model_copy(update={"case": rooted(entry.case, path.parent)}))
    return entries
