"""Accepting observations as baselines: ``frontier-qa accept`` and pytest ``--frontier-accept``.

A person says "the agent as it is now is right" for some cases. For each one, the new
baseline takes the samples of the case's latest observation (the replay the person just
looked at) and, when that is fewer than ``baseline_samples`` (40 by default), samples the
same agent (target id and version) for the rest, with fresh indices. A larger baseline is
what lets a replay tell a 0.9 → 0.4 drop from noise at a strict false-alarm rate (see
``docs/method.md`` §9); it is paid for once, at accept time, not on every replay. The top-up
samples are an observation like any other: they are recorded under an ``accept-…`` run.

The new baselines are appended to ``<store>/baselines.jsonl``; the old ones stay there as
history. Nothing else in the store changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frontier_qa.probing._case_prober import CaseProber, answers_of, version_of
from frontier_qa.probing._paths_judge import judge_paths
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.scoring._paths import view_of
from frontier_qa.scoring.consistency import Consistency
from frontier_qa.store import _baselines as baselines
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._lines import latest_by
from frontier_qa.store._records import (
    Baseline,
    CaseClass,
    CaseRecord,
    ClusterCount,
    Interval,
    RunRecord,
    case_record,
    utc_now,
)
from frontier_qa.store._store_error import StoreError
from frontier_qa.target import Case, Target, Trajectory


@dataclass(frozen=True)
class Accepted:
    """What accepting one case did.

    Attributes:
        baseline: the new baseline.
        pooled: samples taken from the case's latest observation.
        sampled: samples drawn now to reach ``baseline_samples`` (target calls, unless cached).
        note: why no samples were drawn although the baseline is small, if so.
    """

    baseline: Baseline
    pooled: int
    sampled: int
    note: str = ""


def _pool(records: Sequence[CaseRecord]) -> tuple[list[str | None], list[bool], set[int], list[str]]:
    """Answers, failed flags, used sample indices and run ids of records (one sample per index)."""
    answers: list[str | None] = []
    failed: list[bool] = []
    seen: set[int] = set()
    runs: list[str] = []
    for r in sorted(records, key=lambda r: (r.finished_at, r.run_id)):
        for s in r.samples:
            if s.sample_index in seen:  # a resumed run records the same sample again
                continue
            seen.add(s.sample_index)
            answers.append(None if s.error else s.answer)
            failed.append(s.error is not None)
        if r.run_id not in runs:
            runs.append(r.run_id)
    return answers, failed, seen, runs


async def _classify(prober: CaseProber, case: Case, consistency: Consistency,
                    verified: bool) -> tuple[CaseClass, str, bool | None]:
    """The probe's class of pooled samples: the band decision on all of them, then the rules."""
    from frontier_qa.probing._classify import CaseEvidence, classify_case
    from frontier_qa.probing._sequential import BandDecision, decide_consistency
    from frontier_qa.probing._validity import task_checked, unchecked_why

    decision = (decide_consistency(consistency, prober.policy) if prober.policy is not None
                else prober.fixed_decision(consistency))
    verdict = decision.verdict
    majority, reference = consistency.majority, case.reference
    correct = None
    if majority is not None and reference is not None:
        correct = await prober.matches(majority, reference, case.answer_format)
    case_class, reason = classify_case(CaseEvidence(
        verdict=None if verdict is BandDecision.CONTINUE else verdict, majority=majority, reference=reference,
        reference_verified=verified, majority_correct=correct, n_answered=consistency.n_answered,
        n_unparseable=consistency.n_unparseable, band=prober.band, p_hat=consistency.p_hat,
        answer_format=case.answer_format, task_checked=task_checked(case, verified),
        unchecked_why=unchecked_why(case)))
    return case_class, reason, correct


async def accept_case(
    store: CaseStore,
    case_id: str,
    prober: CaseProber,
    settings: ProbeSettings,
    *,
    target: Target | None,
    run_id: str,
    records: Sequence[CaseRecord] | None = None,
) -> Accepted:
    """Make the current observations of one case its baseline (module docstring).

    Args:
        store: the store holding the case's records; the baseline is *not* written here.
        case_id: the case.
        prober: scores and matches answers as the probe does (and its target samples more).
        settings: ``baseline_samples``, sampling.
        target: the target to draw the missing samples from; ``None`` draws none.
        run_id: the run the top-up samples are recorded under.
        records: the case's records (default: read from the store).

    Raises:
        StoreError: the store has no usable observation of the case.
    """
    mine = [r for r in (records if records is not None else store.case_records()) if r.id == case_id]
    usable = [r for r in mine if r.case_class is not CaseClass.INVALID and r.samples]
    if not usable:
        raise StoreError(f"no observation of case {case_id!r} to accept in {store.root}",
                         hint="probe or replay the case first (an invalid case has nothing to accept)")
    latest = max(usable, key=lambda r: (r.finished_at, r.run_id))
    agent = (baselines.base_target_id(latest.target_id, latest.target_version), latest.target_version)
    # only the latest observation: an API model can change behind an unchanged id, and older samples
    # of "the same" agent may then describe another one
    answers, failed, used, runs = _pool([latest])
    pooled = len(answers)
    case = latest.case.to_case()
    note = ""
    new: list[Trajectory] = []
    missing = settings.baseline_samples - pooled
    if missing > 0 and target is not None:
        version = prober.target_version
        if (target.id, version) != agent:
            note = (f"the target now is {target.id} {version or ''}, not the agent observed "
                    f"({agent[0]} {agent[1] or ''}): replay the case first to accept what it does now")
        else:
            all_used = {s.sample_index for r in mine if r.target_id == latest.target_id for s in r.samples}
            start = max(all_used | used, default=-1) + 1
            new = list(await target.sample(case, missing, prober.sampling, start=start))
            answers += answers_of(case, new)
            failed += [not t.ok for t in new]
    elif missing > 0:
        note = f"{pooled} samples, fewer than baseline_samples = {settings.baseline_samples}: no target to draw more"
    consistency = await prober.score_answers(case, answers, failed)
    case_class, reason, majority_correct = await _classify(prober, case, consistency, latest.case.reference_verified)
    if new:
        # the top-up is the case's latest observation: its paths and pass^k are judged like a probe's, so
        # a report after accepting still shows them
        drawn = answers_of(case, new)
        found = await judge_paths(case, [view_of(t) for t in new], drawn, settings, prober.policy, prober.judge_answer)
        record = case_record(case, new, drawn, await prober.score(case, new),
                             case_class=case_class, run_id=run_id, target_id=prober.target_id,
                             target_version=prober.target_version, started_at=utc_now(),
                             reference_verified=latest.case.reference_verified, majority_correct=majority_correct,
                             reason=f"drawn to strengthen an accepted baseline (pooled: {reason})",
                             paths=found.paths, misses=found.misses, path=found.path, pass_k=found.pass_k)
        store.append(record)
        runs.append(run_id)
    top = consistency.clusters[0].size if consistency.clusters else 0
    k = len(answers)
    anchor, kind = baselines.anchor_of(latest.case, consistency.majority, top / k if k else None)
    successes = 0
    if kind == "majority":
        successes = top
    elif anchor is not None:
        hits = {a: await prober.matches(a, anchor, case.answer_format) for a in set(answers) if a is not None}
        successes = sum(1 for a in answers if a is not None and hits[a])
    from frontier_qa.probing._sequential import wilson_interval

    low, high = wilson_interval(top, k, 0.9)
    baseline = Baseline(
        case_id=case_id, case_class=case_class, k=k, successes=successes, anchor=anchor,
        anchor_kind=kind,
        p_hat=consistency.p_hat if k else None,
        interval=Interval(low=low, high=high, method="wilson", confidence=0.9) if k else None,
        majority=consistency.majority, majority_correct=majority_correct,
        clusters=[ClusterCount(answer=c.representative, count=c.size) for c in consistency.clusters if c.size],
        n_unparseable=consistency.n_unparseable, n_failed=consistency.n_failed,
        target_id=agent[0], target_version=agent[1], run_ids=runs, source="accept",
    )
    return Accepted(baseline, pooled, len(new), note)


async def accept(
    store: CaseStore,
    case_ids: Sequence[str] | None,
    settings: ProbeSettings,
    *,
    target: Target | None,
    sample: bool = True,
    run_id: str,
) -> list[Accepted]:
    """Accept the current observations of cases and write them to the store as baselines.

    Args:
        store: the case store.
        case_ids: the cases; ``None``: every case of ``target`` (of any target without one).
        settings: ``baseline_samples``, sampling, the band.
        target: the target to draw missing samples from; ``None`` draws none.
        sample: draw samples up to ``baseline_samples`` (else pool only).
        run_id: the run the drawn samples are recorded under.

    Returns:
        What was done per case, in ``case_ids`` order.

    Raises:
        StoreError: a named case has no usable observation, or there is no case at all.
    """
    records = store.case_records()
    if case_ids is None:
        latest = latest_by(records, lambda r: r.id)
        case_ids = sorted(cid for cid, r in latest.items()
                          if r.case_class is not CaseClass.INVALID and (
                              target is None or baselines.base_target_id(r.target_id, r.target_version) == target.id))
        if not case_ids:
            whose = f" of target {target.id!r}" if target is not None else ""
            raise StoreError(f"no case{whose} to accept in {store.root}",
                             hint="probe or replay first, or name the cases")
    prober = CaseProber(settings, target_id="" if target is None else target.id,
                        target_version=None if target is None else version_of(target))
    top_up = target if sample else None
    done = [await accept_case(store, cid, prober, settings, target=top_up, run_id=run_id, records=records)
            for cid in case_ids]
    if any(a.sampled for a in done) and target is not None:
        store.start_run(RunRecord(run_id=run_id, target_id=target.id, target_version=prober.target_version,
                                  seed=settings.seed))
        store.finish_run(run_id)
    store.append_baselines([a.baseline for a in done])
    return done


__all__ = ["Accepted", "accept", "accept_case"]
