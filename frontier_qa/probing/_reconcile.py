"""A suite's stored cases against its case source now: what to replay, refresh, probe again, or name.

Before a run replays the stored cases of a cases file, :func:`reconcile` compares the latest
record of each with the file as it is now (:mod:`frontier_qa.probing._refresh` per case):

* ``unchanged``: the stored inputs are the file's: replay them as they are;
* ``refreshed``: the reference (or its check, the answer format, the trajectory expectations,
  the topic, the metadata) changed; the stored samples were judged again, with no target call, into a new record that
  says what changed. Written (:func:`write_refreshed`), it is the case's latest record and its
  baseline from then on, and the next run sees the same inputs and says nothing: each change is
  reported once;
* ``reprobe``: what the target sees changed under the same id: probe the case again as a new
  observation (not a replay: the old baseline belongs to another question);
* ``removed``: cases this source put in the store that it no longer holds: not replayed,
  named ("removed from cases.jsonl: not replayed");
* ``new``: cases of the file the store has never seen: probe them.

:func:`refresh_store` does it all against a :class:`~frontier_qa.store.CaseStore`: reads the
records of a target, reconciles, and writes the refreshed records under one ``refresh-…`` run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._refresh import Action, Refresh, refresh_case, refresh_prober
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.store._baselines import base_target_id
from frontier_qa.store._case_store import CaseStore, new_run_id
from frontier_qa.store._lines import latest_by
from frontier_qa.store._records import CaseRecord, RunRecord, run_totals

SHOWN_IDS = 5
"""Case ids a message names before it says "and N more"."""


@dataclass(frozen=True)
class Reconciliation:
    """What comparing a suite's stored cases with their source found.

    Attributes:
        source: the source the cases come from, as records name it (``"file:cases.jsonl"``).
        run_id: the run the refreshed records belong to.
        unchanged: ids whose stored inputs are the source's: replay them as they are.
        refreshed: cases judged again from their stored samples; each holds the new record.
        reprobe: cases to probe again as new observations (``Refresh.proposal``).
        removed: the latest records of cases the source no longer holds: not to be replayed.
        new: the source's cases the store has never seen.
    """

    source: str
    run_id: str
    unchanged: tuple[str, ...] = ()
    refreshed: tuple[Refresh, ...] = ()
    reprobe: tuple[Refresh, ...] = ()
    removed: tuple[CaseRecord, ...] = ()
    new: tuple[Proposal, ...] = ()

    @property
    def records(self) -> list[CaseRecord]:
        """The refreshed records, to append to the store."""
        return [r.record for r in self.refreshed if r.record is not None]

    @property
    def changed(self) -> bool:
        """Whether anything needs saying (a refresh, a case to probe again, a removed case)."""
        return bool(self.refreshed or self.reprobe or self.removed)

    def messages(self) -> list[str]:
        """What changed and what was done, one line each; the removed cases in one line."""
        lines = [f"{r.case_id}: {r.message}" for r in (*self.refreshed, *self.reprobe)]
        if self.removed:
            ids = sorted(r.id for r in self.removed)
            shown = ", ".join(ids[:SHOWN_IDS]) + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")
            name = self.source.split(":", 1)[-1]
            lines.append(f"{len(ids)} stored case(s) removed from {name}: not replayed ({shown})")
        return lines


def _source_of(record: CaseRecord) -> str | None:
    value = record.case.metadata.get("source")
    return value if isinstance(value, str) else None


async def reconcile(
    records: Iterable[CaseRecord],
    proposals: Sequence[Proposal],
    settings: ProbeSettings | None = None,
    *,
    source: str | None = None,
    run_id: str | None = None,
    sandbox: Sandbox | None = None,
) -> Reconciliation:
    """Compare stored cases with the cases their source holds now (module docstring).

    Args:
        records: stored case records (of one target: a refresh judges that target's samples);
            several per case allowed, the latest wins.
        proposals: every case the source holds now, e.g. ``FileCurriculum(path).proposals``
            (its ids as the file gives them, derived ids included).
        settings: as for :func:`~frontier_qa.probing._refresh.refresh_case`.
        source: the name records give the source (their ``case.metadata["source"]``, e.g.
            ``"file:cases.jsonl"``): its stored cases missing from ``proposals`` are ``removed``.
            Default: the proposals' own ``source``; with no proposal and no ``source``, none is.
        run_id: the run the refreshed records are written under (default: ``refresh-<new id>``).
        sandbox: runs a changed solution program (see ``refresh_case``).

    Returns:
        A :class:`Reconciliation`; nothing is written (:func:`write_refreshed` does that).
    """
    settings = settings or ProbeSettings()
    run_id = run_id or f"refresh-{new_run_id()}"
    latest: dict[str, CaseRecord] = latest_by(records, lambda r: r.id)
    names = {source} if source is not None else {p.source for p in proposals}
    prober = None
    unchanged: list[str] = []
    refreshed: list[Refresh] = []
    reprobe: list[Refresh] = []
    new: list[Proposal] = []
    held: set[str] = set()
    for proposal in proposals:
        # a file case without an id may be stored under the id frontier-qa 0.1 gave it
        known = next((i for i in (proposal.case.id, *proposal.aliases) if i in latest), None)
        if known is None:
            new.append(proposal)
            held.add(proposal.case.id)
            continue
        held.add(known)
        prober = prober or refresh_prober(settings)
        found = await refresh_case(latest[known], proposal, settings, run_id=run_id, prober=prober, sandbox=sandbox)
        if found.action is Action.UNCHANGED:
            unchanged.append(known)
        elif found.action is Action.REFRESHED:
            refreshed.append(found)
        else:
            reprobe.append(found)
    removed = sorted((r for cid, r in latest.items() if cid not in held and _source_of(r) in names),
                     key=lambda r: r.id)
    return Reconciliation(
        source=source or (min(names) if names else ""), run_id=run_id, unchanged=tuple(unchanged),
        refreshed=tuple(refreshed), reprobe=tuple(reprobe), removed=tuple(removed), new=tuple(new),
    )


def write_refreshed(store: CaseStore, reconciliation: Reconciliation) -> RunRecord | None:
    """Append the refreshed records to the store under their own finished run.

    Returns:
        The finished run's record, ``None`` when nothing was refreshed (nothing is written).
    """
    records = reconciliation.records
    if not records:
        return None
    targets = {(base_target_id(r.target_id, r.target_version), r.target_version) for r in records}
    # one target: the run is that target's (as a probe run is); several: none in particular
    target_id, version = next(iter(targets)) if len(targets) == 1 else ("", None)
    store.start_run(RunRecord(run_id=reconciliation.run_id, target_id=target_id, target_version=version))
    for record in records:
        store.append(record)
    return store.finish_run(reconciliation.run_id, totals=run_totals(records))


async def refresh_store(
    store: CaseStore,
    proposals: Sequence[Proposal],
    settings: ProbeSettings | None = None,
    *,
    target_id: str | None = None,
    source: str | None = None,
    sandbox: Sandbox | None = None,
) -> Reconciliation:
    """Reconcile a store's cases of one target with their source and write what was refreshed.

    Args:
        store: the case store.
        proposals: every case the source holds now.
        settings: as for :func:`reconcile`.
        target_id: the target whose records are compared (its id without a version, as replays
            match it); ``None``: every target's (one latest record per case).
        source: as for :func:`reconcile`.
        sandbox: as for :func:`reconcile`.

    Returns:
        The :class:`Reconciliation`, its refreshed records already in the store.
    """
    records = [r for r in store.case_records()
               if target_id is None or base_target_id(r.target_id, r.target_version) == target_id]
    found = await reconcile(records, proposals, settings, source=source, sandbox=sandbox)
    write_refreshed(store, found)
    return found


__all__ = ["SHOWN_IDS", "Reconciliation", "reconcile", "refresh_store", "write_refreshed"]
