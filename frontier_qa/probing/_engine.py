"""The probe engine: find where a target's ability ends, case by case, and write it all down.

One loop (Agent0 §3.2–3.3, turned into a test harness)::

    replay stored cases first ─► propose ─► validate ─► verify references ─► [skip predicted easy]
        ─► sample in rounds (sequential policy) ─► score ─► classify ─► append to the store
        ─► tell the curriculum ─► repeat until budget / saturation / exhaustion / max candidates

* **Replay first** (Hypothesis' example database): the store's cases for this target are
  probed again with *fresh* samples (sample indices after every earlier one, so the runtime
  cache cannot hand back the old answers) and held to their *baseline* (accepted by a person,
  else the case's first observation; a replay never changes it) by a sequential test
  (:mod:`frontier_qa.probing._regression`): ``regression``, ``improved``, ``same``, ``flaky``,
  ``inconclusive``.
* **Sampling** asks ``target.sample(case, n, sampling, start=k_so_far)`` round by round and
  stops when :func:`frontier_qa.probing._sequential.decide` is sure of the band (or at k); sample ``i``
  of a case is always sample ``i``, so cached samples keep the statistics valid and a resumed
  run re-uses every sample already paid for. The population prior is refit from this run's
  cases every ``prior_refit_every`` cases (empirical Bayes; that is where the savings are).
* **Classification** (:func:`classify_case`): in band → ``frontier`` whatever the reference
  says (a wrong reference never erases the signal: docs/method.md, defect 2); a stable majority is a
  ``failure`` only against a *verified* reference or a judge's "no", ``suspect`` against an
  unverified one; scattered answers are ``suspect`` unless they miss a verified reference.
* **Nothing is lost**: each case is appended to the store the moment it is classified. A
  budget stop records the cases in flight as ``unresolved`` and leaves the run open; a
  cancelled run keeps everything classified; ``resume=True`` skips finished cases and probes
  unresolved ones again (their samples come from the cache).

This module is the public surface (settings, results, :func:`probe`, :func:`replay`); the
run loop is :mod:`frontier_qa.probing._run`, per-case work :mod:`frontier_qa.probing._case_prober`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

from frontier_qa.probing._classify import classify_case
from frontier_qa.probing._curriculum_seam import Curriculum, DrivesRun
from frontier_qa.probing._judge_verdict import judge_prompt, parse_judge_verdict
from frontier_qa.probing._run import ProbeRun, ProgressEvent, case_id_for, config_hash
from frontier_qa.probing._sequential import MajorityPrior
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.probing._validation import Validator
from frontier_qa.redaction import redacted_output
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.scoring._difficulty import CalibrationReport, calibration_report
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import Comparison, RegressionVerdict, count_verdicts
from frontier_qa.store._records import CLASS_ORDER, CaseClass, CaseRecord, ModelSpend, RunRecord, SuiteCase, count_each
from frontier_qa.store._stop_reason import (
    STOP_BUDGET,
    STOP_DONE,
    STOP_EXHAUSTED,
    STOP_INTERRUPTED,
    STOP_MAX_CANDIDATES,
    STOP_SATURATED,
    STOP_UNAVAILABLE,
    StopReason,
)
from frontier_qa.target import Target

# --- results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayResult:
    """What a replay found.

    Attributes:
        run_id: the run the new records were written under.
        run: its run record (with totals).
        records: the new record of every replayed case.
        comparisons: baseline vs replay verdict per case (``regression``, ``same``, ...).
        stop_reason: ``"done"``, ``"budget"`` or ``"target unavailable"``.
        stop_detail: the error behind a budget or unavailable-target stop.
        planned: cases the replay set out to judge (all shards').
    """

    run_id: str
    run: RunRecord
    records: tuple[CaseRecord, ...]
    comparisons: tuple[Comparison, ...]
    stop_reason: str
    stop_detail: str | None = None
    planned: int = 0

    @property
    def verdicts(self) -> dict[RegressionVerdict, int]:
        return count_verdicts(self.comparisons)


@dataclass(frozen=True)
class ProbeResult:
    """What a probe run found.

    Attributes:
        run_id: the run id (give it back with ``resume=True`` to continue an open run).
        run: the run record: finished with totals, or (stopped by budget) open with totals
            computed but not written.
        records: the latest record of every case of the run in this shard, replayed and new,
            resumed ones included, in the order they finished.
        comparisons: replay verdicts from the replay-first phase.
        stop_reason: ``"budget"``, ``"saturated"``, ``"curriculum exhausted"``,
            ``"max candidates"`` or ``"target unavailable"``.
        counts: records by class (every class present).
        candidates: proposals considered (all shards' share of the curriculum).
        skipped: proposals skipped by difficulty prediction.
        calibration: how well difficulty predictions matched observed p̂ (``None`` without any).
        prior: the population prior learnt by the end (empirical Bayes; fixed k uses it for reasons).
        stop_detail: the error behind a budget or unavailable-target stop.
        stop_source: which model stopped the run that way: ``"target"`` or ``"curriculum"``.
    """

    run_id: str
    run: RunRecord
    records: tuple[CaseRecord, ...]
    comparisons: tuple[Comparison, ...]
    stop_reason: str
    counts: Mapping[CaseClass, int]
    candidates: int
    skipped: int
    calibration: CalibrationReport | None = None
    prior: MajorityPrior | None = None
    stop_detail: str | None = None
    stop_source: str | None = None

    @property
    def frontier(self) -> list[CaseRecord]:
        """The frontier cases (p̂ in band)."""
        return [r for r in self.records if r.case_class is CaseClass.FRONTIER]

    @property
    def verdicts(self) -> dict[RegressionVerdict, int]:
        return count_verdicts(self.comparisons)


# --- public entry points -----------------------------------------------------------------


async def probe(
    target: Target,
    curriculum: Curriculum,
    settings: ProbeSettings | None = None,
    *,
    store: CaseStore,
    run_id: str | None = None,
    resume: bool = False,
    validator: Validator | None = None,
    judge: Target | None = None,
    sandbox: Sandbox | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
    wait: bool | float = False,
    meter: Callable[[], Mapping[str, ModelSpend]] | None = None,
    replay_cases: Sequence[CaseRecord | SuiteCase] | None = None,
) -> ProbeResult:
    """Probe ``target`` with cases from ``curriculum`` and record every case in ``store``.

    Args:
        target: what is probed (a :class:`~frontier_qa.runtime.ManagedTarget` brings the
            cache, budget and retries; its budget ends the run gracefully).
        curriculum: proposes cases and hears the outcomes.
        settings: band, k, sequential policy, sampling, stopping rules (default
            :class:`ProbeSettings` ()).
        store: where records go, one append per case as soon as it is classified.
        run_id: the run's id (default: a fresh time-stamped one).
        resume: continue the open run ``run_id``: finished cases are skipped (their outcomes
            are fed to the curriculum again, so a seeded prompted curriculum proposes the
            same cases), unresolved ones are probed again. Starts a new run when the store has
            no run of that id.
        validator: checks proposals before sampling (default :class:`Validator` ()).
        judge: a stronger target asked "is this answer correct?" about stable answers that
            have no verified reference.
        sandbox: runs solution programs to verify references (default: a :class:`Sandbox`
            made on first need).
        progress: called with a :class:`ProgressEvent` for everything the engine does.
        wait: when another live process writes this run shard (one writer per run):
            ``False`` raises :class:`~frontier_qa.store._leases.RunBusyError`, ``True`` waits
            for it, a number waits that many seconds at most.
        meter: what each model of the run spent since it started, by role (``target``,
            ``curriculum``...), kept in the run record's totals (a :class:`~frontier_qa.session.Session`
            passes its models' meter).
        replay_cases: replay these stored cases (records, or a suite's entries) first, instead of
            the store's (``settings.replay_first``): a named suite's cases, as the pytest plugin's.

    Returns:
        A :class:`ProbeResult`. Cancellation (Ctrl-C) propagates after every classified
        case is safely in the store; the run stays open for ``resume=True``.

    Raises:
        ConfigError: the run id exists and ``resume`` is False.
        RunBusyError: another live process writes this run shard.
        StoreError: resuming a finished run, or one started with another configuration.
        TargetError: the target failed in a way retrying will not fix (bad key, bad model).
    """
    settings = settings or ProbeSettings()
    run = ProbeRun(target, store, settings, judge=judge, sandbox=sandbox, progress=progress)
    await run.start(run_id, resume, getattr(curriculum, "name", type(curriculum).__name__), wait=wait)
    with _held(run):
        if replay_cases is not None:
            await run.replay(run.replay_plan(replay_cases, settings.replay_scope == "all"))
        elif settings.replay_first:
            await run.replay(run.replay_plan(None, settings.replay_scope == "all"))
        if run.stop_reason is None:
            await run.generate(curriculum, validator or Validator())
        reason = run.stop_reason or STOP_EXHAUSTED
        record = run.finish(None if meter is None else meter())
    run.emit("stopped", message=reason)
    records = run.records()
    calibration = None
    if run.calibration:
        calibration = calibration_report([p for p, _ in run.calibration], [o for _, o in run.calibration])
    return ProbeResult(
        run_id=run.run_id,
        run=record,
        records=tuple(records),
        comparisons=tuple(run.comparisons),
        stop_reason=reason,
        counts=count_each(CLASS_ORDER, (r.case_class for r in records)),
        candidates=run.candidates,
        skipped=run.skipped,
        calibration=calibration,
        prior=run.prober.prior,
        stop_detail=run.stop_detail,
        stop_source=run.stop_source,
    )


async def replay(
    target: Target,
    store: CaseStore,
    settings: ProbeSettings | None = None,
    *,
    run_id: str | None = None,
    cases: Sequence[CaseRecord | SuiteCase] | None = None,
    judge: Target | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
    wait: bool | float = False,
    meter: Callable[[], Mapping[str, ModelSpend]] | None = None,
    skip: Collection[str] = (),
    recheck: DrivesRun | None = None,
) -> ReplayResult:
    """Only the replay-first part: probe stored cases again with fresh samples and compare.

    Args:
        target: what is probed.
        store: where the old records are read and the new ones written (a new run).
        settings: as for :func:`probe`; ``replay_scope="all"`` replays cases recorded for any
            target (a new agent version has a new target id), ``max_replay`` caps the count.
        run_id: id of the replay run (default: fresh).
        cases: replay these instead of the store's cases: records, or the entries of a
            committed suite (:func:`~frontier_qa.store.import_suite`); compared against them.
        judge: as for :func:`probe`.
        progress: as for :func:`probe`.
        wait: as for :func:`probe`.
        meter: as for :func:`probe`.
        skip: ids of stored cases not to replay (their source dropped them, or changed them past
            judging their samples again); only when ``cases`` is not given.
        recheck: a generators curriculum whose boundaries are searched again after the replay, on
            fresh task instances, and compared with the latest earlier search of each knob (a moved
            boundary is a finding, with the cases that show it).
    """
    settings = settings or ProbeSettings()
    run = ProbeRun(target, store, settings, judge=judge, sandbox=None, progress=progress)
    await run.start(run_id, False, "replay", wait=wait)
    with _held(run):
        await run.replay(run.replay_plan(cases, settings.replay_scope == "all", skip=skip))
        if recheck is not None and run.stop_reason is None:
            run.boundaries = list(await recheck.drive(run))
        reason = run.stop_reason or STOP_DONE
        record = run.finish(None if meter is None else meter())
    run.emit("stopped", message=reason)
    return ReplayResult(run.run_id, record, tuple(run.records()), tuple(run.comparisons), reason,
                        stop_detail=run.stop_detail, planned=run.replay_size)


@contextlib.contextmanager
def _held(run: ProbeRun) -> Iterator[None]:
    """The started run's lease until the block ends: cancelled, it says "stopped: interrupted";
    failed, a run that recorded nothing is discarded; either way the lease is released. What
    the agent and its libraries print meanwhile reaches the console masked (:func:`redacted_output`).
    """
    try:
        with redacted_output():
            yield
    except asyncio.CancelledError:
        run.emit("stopped", message=STOP_INTERRUPTED)
        raise
    except Exception:
        run.discard_if_empty()
        raise
    finally:
        run.release()


__all__ = [
    "STOP_BUDGET",
    "STOP_DONE",
    "STOP_EXHAUSTED",
    "STOP_INTERRUPTED",
    "STOP_MAX_CANDIDATES",
    "STOP_SATURATED",
    "STOP_UNAVAILABLE",
    "ProbeResult",
    "ProbeSettings",
    "ProgressEvent",
    "ReplayResult",
    "StopReason",
    "case_id_for",
    "classify_case",
    "config_hash",
    "judge_prompt",
    "parse_judge_verdict",
    "probe",
    "replay",
]
