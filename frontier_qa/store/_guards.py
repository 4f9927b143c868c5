"""Guard cases: stable, correct cases kept next to the findings, so breaking them is caught.

Frontier, failure and suspect cases say where an agent is weak; a suite made of them alone
cannot see the agent start failing what it used to get right. So exported suites and the
pytest plugin's items also carry a budgeted sample of ``pass`` cases (``replay.guards``, 10 by
default), picked evenly across topics: one per topic in turn, topics by name, and within a
topic by a hash of the case id (:func:`select_guards`).

**A suite's guards are stored, not picked again on every read** (issue 26). Picking afresh from
the latest records let the set drift: a guard whose replay came out frontier stopped being a
pass case and another took its place, so a suite grew from replay to replay with nothing probed
in between, and a case broken outside that day's sample went unseen. Each suite's pick is kept
in ``<store>/guards.json`` under a *key* (:func:`export_key` for ``frontier-qa export``,
:func:`pytest_suite_key` for a pytest suite), and :func:`guards_for` gives it back unchanged.
It changes only

* on **accept**: a baseline of one of the suite's cases was accepted (``frontier-qa accept``,
  pytest ``--frontier-accept``) after the set was picked. Accepting says "what the agent does now
  is right", so the suite's next read picks again from the records it then has (reason
  ``"accept"``);
* on an explicit **re-pick** (``frontier-qa export --repick-guards``, :func:`repick_guards`;
  reason ``"repick"``).

The first read of a key picks and stores the pick (reason ``"first"``), unless there is no pass
case to pick yet: then nothing is stored, so a suite read before its first probe is not left
without guards. A stored guard stays a guard whatever its latest class: a guard turned failure is
what it is there to catch, and it is not swapped for a case that still passes. A stored guard
with no record among those read (outside an export's ``--run``/``--target-id``, or a store
rebuilt without it) is left out of that read, with the reason, and stays stored. Every pick is
kept with when, why and what it changed (the last :data:`MAX_PICKS` of each key).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from frontier_qa import __version__
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._lines import latest_by
from frontier_qa.store._records import CaseClass, CaseRecord, utc_now
from frontier_qa.store._store_error import StoreError

GUARDS_FILE = "guards.json"
"""The file in the store folder that holds every suite's guard picks."""

GUARDS_VERSION = 1
"""Layout version of ``guards.json``; readers refuse newer ones."""

MAX_PICKS = 50
"""Picks kept per key (the current one and its history); older ones are dropped."""

GuardReason = Literal["first", "accept", "repick"]
"""Why a guard set was picked: ``first`` (none stored yet), ``accept`` (one of the suite's cases
was accepted after the previous pick), ``repick`` (asked for)."""


def _rank(case_id: str) -> str:
    return hashlib.sha256(case_id.encode("utf-8")).hexdigest()


def select_guards(records: Iterable[CaseRecord], count: int) -> list[CaseRecord]:
    """Up to ``count`` pass cases, spread evenly over topics (module docstring).

    A fresh pick from whatever is passed: the suites keep theirs with :func:`guards_for`.

    Args:
        records: candidate records (the latest per case); only ``pass`` ones are picked.
        count: how many guards at most (0: none).

    Returns:
        The picked records, in pick order.
    """
    by_topic: dict[str, list[CaseRecord]] = {}
    for r in records:
        if r.case_class is CaseClass.PASS:
            by_topic.setdefault(r.topic, []).append(r)
    queues = [sorted(rs, key=lambda r: _rank(r.id)) for _, rs in sorted(by_topic.items())]
    picked: list[CaseRecord] = []
    depth = 0
    while len(picked) < count and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(picked) < count:
                picked.append(queue[depth])
        depth += 1
    return picked


# --- keys -------------------------------------------------------------------------------------------


def export_key(target_id: str | None = None) -> str:
    """The key of ``frontier-qa export``'s guard set: ``export``, or ``export:<target id>`` when
    the export is limited to one target (``--target-id``): each target keeps its own guards.
    """
    return "export" if not target_id else f"export:{target_id}"


def pytest_suite_key(name: str) -> str:
    """The key of a pytest suite's guard set: ``pytest:<suite name>`` (the marker's ``name=``,
    the name its cases are tagged with in the store).
    """
    return f"pytest:{name}"


# --- what guards.json holds -------------------------------------------------------------------------


class GuardPick(BaseModel):
    """One pick of a suite's guard set, as ``guards.json`` keeps it.

    Attributes:
        case_ids: the guards, in pick order (one topic at a time).
        count: the number of guards asked for (``replay.guards``); fewer are picked when fewer
            pass cases exist.
        reason: why it was picked (:data:`GuardReason`).
        detail: the circumstances, in words: which accept, which command.
        request: who asked for a re-pick (a pytest session's id), so that the processes of one
            session re-pick once; empty for a command.
        picked_at: when it was picked (UTC).
        added: guards this pick added to the previous one.
        removed: guards of the previous pick this one left out.
        frontier_qa_version: the frontier-qa that picked it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    case_ids: list[str]
    count: int = Field(ge=0)
    reason: GuardReason
    detail: str = ""
    request: str = ""
    picked_at: AwareDatetime = Field(default_factory=utc_now)
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    frontier_qa_version: str = __version__


class GuardFile(BaseModel):
    """``<store>/guards.json``: each key's picks, oldest first (the last one is the set)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = GUARDS_VERSION
    sets: dict[str, list[GuardPick]] = Field(default_factory=dict)


def _parse(data: bytes | None, where: str) -> GuardFile:
    """``guards.json``'s bytes as a :class:`GuardFile` (an empty one for no file).

    Raises:
        StoreError: not a guard file, or one a newer frontier-qa wrote.
    """
    if data is None:
        return GuardFile()
    fix = "restore it, or delete it: each suite's guards are then picked again at its next read"
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise StoreError(f"{where}: not JSON: {err}", hint=fix) from err
    version = obj.get("schema_version") if isinstance(obj, dict) else None
    if isinstance(version, int) and version > GUARDS_VERSION:
        raise StoreError(f"{where}: schema_version {version} is newer than this frontier-qa reads ({GUARDS_VERSION})",
                         hint="upgrade frontier-qa: reinstall it from its repository")
    try:
        return GuardFile.model_validate(obj)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise StoreError(f"{where}: {loc}: {first.get('msg')}", hint=fix) from err


def _encode(guards: GuardFile) -> bytes:
    return (json.dumps(guards.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def stored_picks(store: CaseStore, key: str) -> list[GuardPick]:
    """Every kept pick of a key, oldest first: the last is the current set (``[]``: none stored).

    Raises:
        StoreError: ``guards.json`` is unreadable or newer than this frontier-qa.
    """
    return list(_parse(store.read_state(GUARDS_FILE), str(store.root / GUARDS_FILE)).sets.get(key, []))


def stored_keys(store: CaseStore) -> list[str]:
    """The keys with a stored guard set, sorted."""
    return sorted(_parse(store.read_state(GUARDS_FILE), str(store.root / GUARDS_FILE)).sets)


# --- a suite's guards ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DroppedGuard:
    """A stored guard left out of one read, and why."""

    case_id: str
    reason: str


@dataclass(frozen=True)
class GuardSet:
    """A suite's guards for one read (:func:`guards_for`).

    Attributes:
        key: the suite's key in ``guards.json``.
        guards: the latest record of each guard, in pick order.
        pick: the stored pick they come from; ``None`` when nothing is stored (no pass case to
            pick from yet).
        picked: whether this read picked the set (first pick, after an accept, re-pick) rather
            than read it back.
        dropped: stored guards with no record among those read, each with why.
        note: something else the user should know (a count above the one the set was picked
            for), or ``""``.
    """

    key: str
    guards: tuple[CaseRecord, ...]
    pick: GuardPick | None
    picked: bool
    dropped: tuple[DroppedGuard, ...] = ()
    note: str = ""

    @property
    def ids(self) -> frozenset[str]:
        """The guards' case ids."""
        return frozenset(r.id for r in self.guards)

    @property
    def broken(self) -> tuple[str, ...]:
        """Guards whose latest record is no longer ``pass`` (still guards: module docstring)."""
        return tuple(r.id for r in self.guards if r.case_class is not CaseClass.PASS)

    def describe(self) -> str:
        """What happened to the set on this read, in one line (``""`` when it was read back unchanged)."""
        if not self.picked or self.pick is None:
            return ""
        p = self.pick
        what = {"first": "picked", "accept": "re-picked after an accept", "repick": "re-picked as asked"}[p.reason]
        change = f" (+{len(p.added)} -{len(p.removed)})" if p.reason != "first" else ""
        why = f": {p.detail}" if p.detail else ""
        return f"{what}{change}, {len(p.case_ids)} guard(s){why}"


def _pick(candidates: Iterable[CaseRecord], count: int, reason: GuardReason, detail: str, request: str,
          previous: GuardPick | None) -> GuardPick:
    ids = [r.id for r in select_guards(candidates, count)]
    before = previous.case_ids if previous is not None else []
    return GuardPick(case_ids=ids, count=count, reason=reason, detail=detail, request=request,
                     added=[i for i in ids if i not in before], removed=[i for i in before if i not in ids])


def guards_for(
    store: CaseStore,
    key: str,
    records: Iterable[CaseRecord],
    count: int,
    *,
    exclude: Collection[str] = (),
    repick: bool = False,
    detail: str = "",
    request: str = "",
) -> GuardSet:
    """A suite's guards: its stored set, picked first if none is stored (module docstring).

    Reading and picking happen under the store's exclusive lock, so processes reading the same
    suite at once (xdist workers) store one pick and all get it.

    Args:
        store: the case store that keeps the set (``guards.json`` in its folder).
        key: the suite's key (:func:`export_key`, :func:`pytest_suite_key`).
        records: the suite's case records (several per case allowed: the latest wins); the stored
            guards are looked up among them, and a pick is made from them.
        count: how many guards at most (``replay.guards``). A set stored for more gives its first
            ``count`` (pick order keeps the topics spread); one stored for fewer stays as it is,
            with a :attr:`GuardSet.note`, until a re-pick.
        exclude: case ids a pick must not take (the suite's findings); a stored guard among them
            stays a guard.
        repick: pick again from ``records`` and store it (reason ``"repick"``).
        detail: why a re-pick was asked for, kept with the pick (e.g. the command).
        request: the id of the request (a pytest session): a re-pick already made under the same
            id is not made again (the processes of a session, a session's several reads).

    Returns:
        The guards for this read.

    Raises:
        StoreError: ``count`` is negative, or ``guards.json`` is unreadable or newer than this
            frontier-qa.
    """
    if count < 0:
        raise StoreError(f"guard count {count} is negative", hint="give a count >= 0 (0: no guard cases)")
    latest: dict[str, CaseRecord] = latest_by(records, lambda r: r.id)
    where = str(store.root / GUARDS_FILE)
    candidates = [r for r in latest.values() if r.id not in exclude]
    if not (store.root / GUARDS_FILE).exists() and not select_guards(candidates, count):
        return GuardSet(key, (), None, False)  # nothing stored, nothing to pick: leave the store untouched
    # read before the write lock: flock does not nest within a process
    accepts = [(b.accepted_at, b.case_id) for b in store.baseline_lines() if b.source == "accept"]
    outcome: dict[str, GuardPick | None] = {"current": None, "new": None}

    def change(data: bytes | None) -> bytes | None:
        guards = _parse(data, where)
        picks = guards.sets.get(key, [])
        current = picks[-1] if picks else None
        outcome["current"] = current
        reason: GuardReason | None = None
        why = detail
        if current is None:
            reason = "first"
            why = f"{sum(r.case_class is CaseClass.PASS for r in latest.values())} pass case(s) to pick from"
        elif repick and not (request and current.request == request):
            reason = "repick"
        else:
            pool = set(latest) | set(current.case_ids)
            newer = sorted((at, cid) for at, cid in accepts if cid in pool and at > current.picked_at)
            if newer:
                reason = "accept"
                last_at, last = newer[-1]
                why = (f"{len({cid for _, cid in newer})} case(s) accepted since the pick of "
                       f"{current.picked_at:%Y-%m-%d %H:%M:%S}Z, the last {last} at {last_at:%Y-%m-%d %H:%M:%S}Z")
        if reason is None:
            return None
        new = _pick(candidates, count, reason, why, request, current)
        if not new.case_ids and current is None:
            return None  # nothing to pick yet: store nothing, pick at a later read
        outcome["new"] = new
        sets = {**guards.sets, key: [*picks, new][-MAX_PICKS:]}
        return _encode(guards.model_copy(update={"sets": sets}))

    store.update_state(GUARDS_FILE, change)
    new, current = outcome["new"], outcome["current"]
    pick = new or current
    if pick is None:
        return GuardSet(key, (), None, False)
    present = [cid for cid in pick.case_ids if cid in latest]
    missing = [cid for cid in pick.case_ids if cid not in latest]
    dropped: tuple[DroppedGuard, ...] = ()
    if missing:
        known = {r.id for r in store.case_records()}
        dropped = tuple(DroppedGuard(cid, f"no record among the {len(latest)} case(s) read (another run, target "
                                          "or suite)" if cid in known else f"no record in {store.root} any more")
                        for cid in missing)
    note = ""
    if count > pick.count:
        note = (f"{count} guard(s) asked for, the stored set was picked for {pick.count}: "
                "re-pick it to use the new count")
    return GuardSet(key, tuple(latest[cid] for cid in present[:count]), pick, new is not None, dropped, note)


def repick_guards(
    store: CaseStore,
    key: str,
    records: Iterable[CaseRecord],
    count: int,
    *,
    exclude: Collection[str] = (),
    detail: str = "",
    request: str = "",
) -> GuardSet:
    """Pick a suite's guards again from ``records`` and store the pick (reason ``"repick"``).

    The same as :func:`guards_for` with ``repick=True``; see it for the arguments.
    """
    return guards_for(store, key, records, count, exclude=exclude, repick=True, detail=detail, request=request)


__all__ = [
    "GUARDS_FILE",
    "GUARDS_VERSION",
    "MAX_PICKS",
    "DroppedGuard",
    "GuardFile",
    "GuardPick",
    "GuardReason",
    "GuardSet",
    "export_key",
    "guards_for",
    "pytest_suite_key",
    "repick_guards",
    "select_guards",
    "stored_keys",
    "stored_picks",
]
