"""Baselines: what a replay holds each case to, and how they are found.

A replay never changes a baseline; only a person does (``frontier-qa accept``, pytest
``--frontier-accept``), and every accepted baseline stays in ``<store>/baselines.jsonl`` as
history. Which baseline a case has (:func:`resolve`):

1. the latest one accepted for it;
2. else its *first* observation: the earliest record that is neither invalid nor unresolved
   (``source="first"``): the run that found a case gave it a baseline, and later replays
   never move it;
3. a case from a committed suite carries its own (a version-1 suite entry has only
   ``observed``; :func:`from_observed` turns that into a baseline, ``source="suite"``).

1 and 2 count only since the case's inputs last changed (:func:`current_inputs`): when a person
fixes a reference or rewrites a prompt under the same id, the refreshed or re-probed
observation is the case's first, and what was accepted before no longer holds (it stays in
``baselines.jsonl`` as history).

The compared quantity is the share of samples equivalent to the *anchor* (:func:`anchor_of`):
the verified reference when the case has one, else the baseline's majority answer when it
holds at least :data:`MIN_ANCHOR_SHARE` of the samples; scattered answers without a verified
reference have no anchor (nothing to hold the agent to: such a case can only improve).
Failed calls and unparseable samples are misses.

Targets: from frontier-qa 0.2 a target's id no longer carries its version (``python:a.py:f``
and version ``1+src.3f2a…``); records of 0.1 say ``python:a.py:f@1``. :func:`base_target_id`
gives both the same id, so old stores keep replaying.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._inputs import recorded_hash
from frontier_qa.store._lines import latest_by
from frontier_qa.store._records import (
    Baseline,
    BaselineSource,
    CaseClass,
    CaseRecord,
    ClusterCount,
    Observed,
    SuiteCase,
)
from frontier_qa.target import Case

MIN_ANCHOR_SHARE = 0.3
"""Least majority share (Agent0's band low edge) for the majority to be a baseline's anchor."""

Matcher = Callable[[str, str], bool]
"""Whether an answer is equivalent to the anchor: ``matches(answer, anchor)``."""


def base_target_id(target_id: str, target_version: str | None) -> str:
    """A target's id without the ``@version`` suffix frontier-qa 0.1 appended to it."""
    if target_version and target_id.endswith(f"@{target_version}"):
        return target_id[: -len(target_version) - 1]
    return target_id


def same_answer(answer: str, anchor: str, answer_format: str) -> bool:
    """Equivalence as the probe scores it (numeric and symbolic for math, exact for tool calls).

    Open-ended ``text`` answers compare by their case-folded words here; the probe engine
    passes its embedding matcher instead where it has one.
    """
    if answer == anchor:
        return True
    if answer_format == "json:calls":
        return False
    if answer_format == "text":
        return " ".join(answer.casefold().split()) == " ".join(anchor.casefold().split())
    from frontier_qa.scoring._equivalence import comparator

    return comparator("math")(answer, anchor)


def anchor_of(case: Case, majority: str | None, top_share: float | None) -> tuple[str | None, str | None]:
    """The answer a baseline holds the agent to, and its kind (module docstring).

    Args:
        case: the case (its reference and whether it is verified).
        majority: the baseline's majority answer.
        top_share: the majority's share of all baseline samples, in [0, 1].

    Returns:
        ``(anchor, "reference" | "majority")``, or ``(None, None)``.
    """
    if case.reference is not None and case.reference_verified:
        return case.reference, "reference"
    if majority is not None and top_share is not None and top_share >= MIN_ANCHOR_SHARE - 1e-9:
        return majority, "majority"
    return None, None


def count_anchor(clusters: Iterable[ClusterCount], anchor: str, matches: Matcher) -> int:
    """Samples of the clusters equivalent to the anchor."""
    return sum(c.count for c in clusters if matches(c.answer, anchor))


def from_record(
    record: CaseRecord,
    *,
    source: BaselineSource = "first",
    matches: Matcher | None = None,
    accepted_at: datetime | None = None,
) -> Baseline:
    """The baseline one observation gives.

    Args:
        record: the observation.
        source: how it becomes the baseline.
        matches: answer equivalence (default: :func:`same_answer` in the case's format).
        accepted_at: when it became the baseline (default: when it was observed).
    """
    fmt = record.case.answer_format
    match = matches or (lambda a, b: same_answer(a, b, fmt))
    top = record.clusters[0].count if record.clusters else 0
    anchor, kind = anchor_of(record.case, record.majority, top / record.k if record.k else None)
    successes = 0
    if anchor is not None:
        successes = top if kind == "majority" else count_anchor(record.clusters, anchor, match)
    return _baseline(record, record.id, successes, anchor, kind, list(record.clusters), source,
                     n_unparseable=record.n_unparseable, n_failed=record.n_failed, run_ids=[record.run_id],
                     accepted_at=accepted_at or record.finished_at)


def from_observed(entry: SuiteCase) -> Baseline | None:
    """A baseline from a version-1 suite entry's ``observed`` (no per-answer counts there).

    The majority's count is p̂·k; against a verified reference that the majority missed, the
    count of right answers is unknown and taken as 0 (the lowest it can be: a drop below an
    understated baseline is harder to show, so this never adds false regressions).
    """
    o = entry.observed
    if o is None:
        return None
    top = round((o.p_hat or 0.0) * o.k)
    anchor, kind = anchor_of(entry.case, o.majority, o.p_hat)
    correct = o.majority_correct
    if correct is None and kind == "reference" and o.majority is not None and anchor is not None:
        correct = same_answer(o.majority, anchor, entry.case.answer_format)
    successes = top if kind == "majority" or (kind == "reference" and correct) else 0
    clusters = [ClusterCount(answer=o.majority, count=top)] if o.majority is not None and top else []
    return _baseline(o, entry.case.id, successes, anchor, kind, clusters, "suite")


# what a baseline takes as is from the record or the suite entry's ``observed`` it is made of
_OBSERVED = ("case_class", "k", "p_hat", "interval", "majority", "majority_correct", "target_version")


def _baseline(of: CaseRecord | Observed, case_id: str, successes: int, anchor: str | None, kind: str | None,
              clusters: list[ClusterCount], source: BaselineSource, **more: Any) -> Baseline:
    """A :class:`Baseline` of observation ``of`` (at most ``of.k`` successes; the target id
    without its version suffix), with ``more`` fields that only a full record has.
    """
    return Baseline(case_id=case_id, successes=min(successes, of.k), anchor=anchor, anchor_kind=kind,
                    clusters=clusters, target_id=base_target_id(of.target_id, of.target_version), source=source,
                    **{name: getattr(of, name) for name in _OBSERVED}, **more)


def of_entry(entry: SuiteCase) -> Baseline | None:
    """A suite entry's baseline: its own (version 2), else one from ``observed`` (version 1)."""
    return entry.baseline if entry.baseline is not None else from_observed(entry)


def current_inputs(records: Iterable[CaseRecord]) -> dict[str, tuple[list[CaseRecord], datetime | None]]:
    """Each case's records since its inputs last changed, oldest first, and when that was.

    A change is a record whose input hash (:func:`~frontier_qa.store._inputs.recorded_hash`: what
    the target sees and how answers are judged; not the topic) differs from the one before it;
    the current inputs are those of the case's latest record.

    Returns:
        ``{case_id: (records, changed_at)}``; ``changed_at`` is when the first record of the
        current inputs was written, ``None`` when the case's inputs never changed.
    """
    by_case: dict[str, list[CaseRecord]] = {}
    for r in sorted(records, key=lambda r: (r.finished_at, r.run_id)):
        by_case.setdefault(r.id, []).append(r)
    out: dict[str, tuple[list[CaseRecord], datetime | None]] = {}
    for case_id, mine in by_case.items():
        keys = [recorded_hash(r.case).observed for r in mine]
        start = len(mine) - 1
        while start > 0 and keys[start - 1] == keys[-1]:
            start -= 1
        out[case_id] = (mine[start:], mine[start].finished_at if start > 0 else None)
    return out


def first_observations(records: Iterable[CaseRecord]) -> dict[str, CaseRecord]:
    """Each case's earliest record that is neither invalid nor unresolved, since its inputs last
    changed (:func:`current_inputs`): an observation of other inputs is no baseline for these.
    """
    first: dict[str, CaseRecord] = {}
    for case_id, (mine, _) in current_inputs(records).items():
        usable = [r for r in mine if r.case_class not in (CaseClass.INVALID, CaseClass.UNRESOLVED)]
        if usable:
            first[case_id] = usable[0]
    return first


def still_holds(baseline: Baseline, changed_at: datetime | None) -> bool:
    """Whether an accepted baseline still holds: accepted after the case's inputs last changed."""
    return changed_at is None or baseline.accepted_at >= changed_at


def resolve(
    store: CaseStore,
    records: Iterable[CaseRecord] | None = None,
    *,
    matches: Callable[[CaseRecord], Matcher] | None = None,
) -> dict[str, Baseline]:
    """Every case's baseline: the latest accepted one, else its first observation; both only
    since the case's inputs last changed (a fixed reference, a rewritten prompt under the same id).

    Args:
        store: the store (its accepted baselines, and its records when ``records`` is not given).
        records: the case records to look for first observations in (default: the store's).
        matches: the answer matcher to use for a record (default: :func:`same_answer`).
    """
    pool = store.case_records() if records is None else list(records)
    changed = {case_id: at for case_id, (_, at) in current_inputs(pool).items()}
    accepted = {cid: b for cid, b in store.accepted().items() if still_holds(b, changed.get(cid))}
    out: dict[str, Baseline] = {}
    for case_id, record in first_observations(pool).items():
        if case_id not in accepted:
            out[case_id] = from_record(record, matches=None if matches is None else matches(record))
    out.update(accepted)
    return out


def history(store: CaseStore, case_ids: Iterable[str] | None = None) -> dict[str, list[CaseRecord]]:
    """Every observation of each case, oldest first (p̂ by agent version and date, for trends)."""
    wanted = None if case_ids is None else set(case_ids)
    out: dict[str, list[CaseRecord]] = {}
    for r in sorted(store.case_records(), key=lambda r: (r.finished_at, r.run_id)):
        if r.case_class is not CaseClass.INVALID and (wanted is None or r.id in wanted):
            out.setdefault(r.id, []).append(r)
    return out


def latest_accepted(baselines: Iterable[Baseline]) -> Mapping[str, Baseline]:
    """The latest of each case's baselines."""
    return latest_by(baselines, lambda b: b.case_id)


__all__ = [
    "MIN_ANCHOR_SHARE",
    "Matcher",
    "anchor_of",
    "base_target_id",
    "count_anchor",
    "current_inputs",
    "first_observations",
    "from_observed",
    "from_record",
    "history",
    "latest_accepted",
    "of_entry",
    "resolve",
    "same_answer",
    "still_holds",
]
