"""The store as a person reads it: a filtered list of cases, one case's story, two runs side by side.

``frontier-qa cases list|show|diff`` (:mod:`frontier_qa.cli._cases`) prints these views; this
module only reads the store and decides what belongs in each view:

* :func:`list_cases`: the latest record of each case, filtered by class, topic, run and
  target, most urgent first (:data:`~frontier_qa.store._records.CLASS_ORDER`, then topic, id);
* :func:`find_case` and :func:`case_view`: one case found by the id people see (``id``,
  ``topic/id`` as pytest and the reports write it, or a unique prefix of either), with every
  observation of it, its baseline and every baseline a person accepted;
* :func:`find_run` and :func:`run_diff`: two runs compared case by case with the replay's own
  test (:func:`frontier_qa.store._comparison.compare_all`: run A's record is the baseline, run B's
  the new observation), so a p̂ that moved within the noise is not called a change.

Unknown names raise :class:`~frontier_qa.store._store_error.StoreError` naming what exists and how
to list it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from frontier_qa.store._baselines import base_target_id, current_inputs, first_observations, from_record, still_holds
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import Comparison, RegressionPolicy, RegressionVerdict, compare_all
from frontier_qa.store._lines import latest_by
from frontier_qa.store._records import CLASS_ORDER, Baseline, CaseClass, CaseRecord, RunRecord, count_each
from frontier_qa.store._store_error import StoreError

SHOWN_NAMES = 5
"""Names an error message offers when a case or run is not found."""

NOTEWORTHY = (RegressionVerdict.REGRESSION, RegressionVerdict.IMPROVED, RegressionVerdict.FLAKY)
"""Verdicts that say a case's p̂ moved beyond the noise between two runs."""


def _rank(record: CaseRecord) -> tuple[int, str, str]:
    return (CLASS_ORDER.index(record.case_class), record.topic, record.id)


def _matches_target(record: CaseRecord, target: str) -> bool:
    return target in (record.target_id, base_target_id(record.target_id, record.target_version))


def require_store(store: CaseStore) -> None:
    """Raise when there is no store at all (a missing folder, not an empty one)."""
    if not store.runs_dir.is_dir():
        raise StoreError(f"no case store at {store.root}",
                         hint="probe or replay first (frontier-qa probe ...), or pass --store DIR")


def list_cases(
    store: CaseStore,
    *,
    classes: Iterable[CaseClass] = (),
    topics: Iterable[str] = (),
    run_id: str | None = None,
    target: str | None = None,
) -> list[CaseRecord]:
    """The latest record of each case that passes every filter, most urgent first.

    Args:
        store: the store.
        classes: keep these classes (all when empty).
        topics: keep these topics (all when empty).
        run_id: only records of this run (its own latest record of each case).
        target: only records of this target id (with or without a 0.1 ``@version`` suffix).
    """
    wanted_classes, wanted_topics = set(classes), set(topics)
    records = [r for r in store.case_records(run_id=run_id) if target is None or _matches_target(r, target)]
    latest = latest_by(records, lambda r: r.id).values()
    kept = [r for r in latest if (not wanted_classes or r.case_class in wanted_classes)
            and (not wanted_topics or r.topic in wanted_topics)]
    return sorted(kept, key=_rank)


def count_classes(records: Iterable[CaseRecord]) -> dict[CaseClass, int]:
    """Cases per class, in :data:`CLASS_ORDER`, zeros left out."""
    counts = count_each(CLASS_ORDER, (r.case_class for r in records))
    return {c: n for c, n in counts.items() if n}


def _some(names: Sequence[str]) -> str:
    shown = ", ".join(names[:SHOWN_NAMES])
    return shown + (f", … {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")


def find_case(store: CaseStore, name: str) -> str:
    """The id of the case ``name`` means: an id, ``topic/id``, or a unique prefix of either.

    Raises:
        StoreError: no case or several cases match (the message names some of them).
    """
    latest = latest_by(store.case_records(), lambda r: r.id)
    if name in latest:
        return name
    full = {f"{r.topic}/{cid}": cid for cid, r in latest.items()}
    if name in full:
        return full[name]
    hits = sorted({cid for cid in latest if cid.startswith(name)}
                  | {cid for k, cid in full.items() if k.startswith(name)})
    if len(hits) == 1:
        return hits[0]
    where = f"--store {store.root}"
    if hits:
        raise StoreError(f"{len(hits)} cases start with {name!r}: {_some(hits)}",
                         hint="give more of the id (frontier-qa cases list shows them all)")
    if not latest:
        raise StoreError(f"no case {name!r}: the store {store.root} holds no cases yet",
                         hint="probe or replay first, then frontier-qa cases list")
    raise StoreError(f"no case {name!r} in the store {store.root} ({len(latest)} cases, e.g. "
                     f"{_some(sorted(latest))})",
                     hint=f"list them with: frontier-qa cases list {where}")


def run_ids_by_time(store: CaseStore) -> list[str]:
    """Every run id, oldest start first (a run's shards count once, at their earliest start)."""
    return list(dict.fromkeys(r.run_id for r in store.runs()))


def find_run(store: CaseStore, name: str) -> str:
    """The run ``name`` means: its id or a unique prefix of it.

    Raises:
        StoreError: no run or several runs match (the message names the latest ones).
    """
    ids = run_ids_by_time(store) or store.run_ids()
    if name in ids:
        return name
    hits = [rid for rid in ids if rid.startswith(name)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise StoreError(f"{len(hits)} runs start with {name!r}: {_some(hits)}", hint="give more of the run id")
    latest = list(reversed(ids))
    known = f"runs, latest first: {_some(latest)}" if ids else "no runs yet"
    raise StoreError(f"no run {name!r} in the store {store.root} ({known})",
                     hint=f"frontier-qa cases diff --store {store.root} with no runs compares the last two; "
                          f"frontier-qa cases list --run RUN lists one run's cases")


# --- one case ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseView:
    """Everything the store knows about one case.

    Attributes:
        latest: its latest record (the case, the answers shown).
        history: every record of it, oldest first (runs, agent versions, verdicts).
        baseline: what a replay holds it to now (the latest accepted, else the first observation;
            both since the case's inputs last changed).
        accepted: every baseline a person accepted for it, oldest first.
    """

    latest: CaseRecord
    history: tuple[CaseRecord, ...]
    baseline: Baseline | None
    accepted: tuple[Baseline, ...]


def case_view(store: CaseStore, case_id: str) -> CaseView:
    """The :class:`CaseView` of a case id (find it first with :func:`find_case`)."""
    mine = sorted((r for r in store.case_records() if r.id == case_id), key=lambda r: (r.finished_at, r.run_id))
    if not mine:
        raise StoreError(f"no case {case_id!r} in the store {store.root}", hint="frontier-qa cases list shows them")
    accepted = tuple(sorted((b for b in store.baseline_lines() if b.case_id == case_id),
                            key=lambda b: b.accepted_at))
    first = first_observations(mine).get(case_id)
    changed_at = current_inputs(mine)[case_id][1]
    holding = [b for b in accepted if still_holds(b, changed_at)]  # accepted before an input change: history
    baseline = holding[-1] if holding else (None if first is None else from_record(first))
    return CaseView(latest=latest_by(mine, lambda r: r.id)[case_id], history=tuple(mine), baseline=baseline,
                    accepted=accepted)


# --- two runs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunDiff:
    """Two runs compared case by case.

    Attributes:
        run_a: the earlier run's record (``None`` when the run left no run record).
        run_b: the later run's record.
        a_id: run A's id; ``b_id``: run B's.
        comparisons: every case judged on both sides, by id (the replay's test, run A as baseline).
        changed: the cases whose class changed or whose p̂ moved beyond the noise.
        unjudged: cases on both sides the test cannot compare (invalid or without samples on a side).
        new: cases only run B has; ``vanished``: cases only run A has.
        a_cases: run A's latest record per case; ``b_cases``: run B's.
    """

    a_id: str
    b_id: str
    run_a: RunRecord | None
    run_b: RunRecord | None
    comparisons: tuple[Comparison, ...]
    changed: tuple[Comparison, ...]
    unjudged: tuple[tuple[CaseRecord, CaseRecord], ...]
    new: tuple[CaseRecord, ...]
    vanished: tuple[CaseRecord, ...]
    a_cases: dict[str, CaseRecord]
    b_cases: dict[str, CaseRecord]

    @property
    def unchanged(self) -> int:
        """Cases on both sides with the same class and no p̂ change beyond the noise."""
        return len(self.comparisons) - len(self.changed) + sum(
            a.case_class is b.case_class for a, b in self.unjudged)


def default_runs(store: CaseStore) -> tuple[str, str]:
    """The last two runs, older first.

    Raises:
        StoreError: the store has fewer than two runs.
    """
    ids = run_ids_by_time(store)
    if len(ids) < 2:
        have = f"only run {ids[0]}" if ids else "no run"
        raise StoreError(f"cases diff compares two runs, and the store {store.root} has {have}",
                         hint="probe or replay again to get a second run, or name two runs: "
                              "frontier-qa cases diff RUN_A RUN_B")
    return ids[-2], ids[-1]


def _judgeable(record: CaseRecord) -> bool:
    return record.case_class is not CaseClass.INVALID and record.k > 0


def run_diff(store: CaseStore, a_id: str, b_id: str, *, policy: RegressionPolicy | None = None) -> RunDiff:
    """Compare run ``b_id`` with run ``a_id`` (module docstring)."""
    a = store.latest(run_id=a_id)
    b = store.latest(run_id=b_id)
    both = sorted(a.keys() & b.keys())
    judged = [cid for cid in both if _judgeable(a[cid]) and _judgeable(b[cid])]
    # run A's record is the baseline (its first observation, as a replay would take it); the suite
    # size for the Bonferroni level is the number of cases compared
    comparisons = compare_all({cid: a[cid] for cid in judged}, {cid: b[cid] for cid in judged}, policy=policy)
    changed = tuple(c for c in comparisons if c.old_class is not c.new_class or c.verdict in NOTEWORTHY)
    runs = {r.run_id: r for r in store.runs()}
    return RunDiff(
        a_id=a_id, b_id=b_id, run_a=runs.get(a_id), run_b=runs.get(b_id), comparisons=tuple(comparisons),
        changed=changed,
        unjudged=tuple((a[cid], b[cid]) for cid in sorted(set(both) - set(judged))),
        new=tuple(sorted((b[cid] for cid in b.keys() - a.keys()), key=_rank)),
        vanished=tuple(sorted((a[cid] for cid in a.keys() - b.keys()), key=_rank)),
        a_cases=a, b_cases=b,
    )


__all__ = ["NOTEWORTHY", "CaseView", "RunDiff", "case_view", "count_classes", "default_runs", "find_case",
           "find_run", "list_cases", "require_store", "run_diff", "run_ids_by_time"]
