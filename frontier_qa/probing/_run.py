"""One probe run, step by step: start or resume, replay, generate, record, finish.

:class:`ProbeRun` holds the state of one run (one shard of it) and does the work the
public entry points in :mod:`frontier_qa.probing._engine` ask for:

* **start / resume**: a new run writes its :class:`~frontier_qa.store._records.RunRecord`; a resumed
  one reloads its finished cases (unresolved ones are probed again: the cache returns the
  samples they already paid for) and rebuilds what the interrupted run had learnt (the
  population prior, the difficulty predictor, near-duplicate memory); the prior also starts
  from the store's earlier cases of the same target;
* **replay**: stored cases again with *fresh* sample indices (after every index this target
  ever drew for the case), compared with their last record;
* **generate**: propose → validate (every shard checks the whole batch, so validity never
  depends on the sharding; the critic is paid only for this shard's cases) → verify
  references → optional difficulty skip → probe the batch concurrently → tell the curriculum;
  until a stop rule fires;
* **record**: every case is appended to the store the moment it is classified.

Per-case sampling and classification live in :mod:`frontier_qa.probing._case_prober` and
:mod:`frontier_qa.probing._classify`.

Long by design: one job, :class:`ProbeRun`'s steps over one shared state (the store lease,
counts, stop reason, prior, predictor and near-duplicate memory); split apart, each step would
take that state as arguments.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from frontier_qa.errors import BudgetExceededError, ConfigError, RunInterruptedError, TargetUnavailableError
from frontier_qa.probing._case_prober import CaseProber, version_of
from frontier_qa.probing._curriculum_seam import Curriculum, DrivesRun, Outcome, Proposal
from frontier_qa.probing._k_cap import cap_warning
from frontier_qa.probing._priors import carried, observation
from frontier_qa.probing._regression import ReplayJudge
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.probing._validation import ValidationResult, Validator
from frontier_qa.probing._validity import AUTHOR, VALIDITY_KEY, validity_note
from frontier_qa.probing._verify import SOLUTION_KEY, Verification, trusted, verify_references
from frontier_qa.redaction import unresolved
from frontier_qa.runtime._aio import gather_or_cancel
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.scoring._difficulty import DifficultyPredictor, should_skip
from frontier_qa.store import _baselines as baselines
from frontier_qa.store._case_ids import case_id_for, legacy_case_id
from frontier_qa.store._case_store import CaseStore, new_run_id
from frontier_qa.store._comparison import Comparison, comparison, from_record, to_record
from frontier_qa.store._inputs import source_inputs, stamped
from frontier_qa.store._leases import RunBusyError, describe_holder
from frontier_qa.store._lines import latest_by
from frontier_qa.store._records import (
    CLASS_ORDER,
    Baseline,
    BoundaryRecord,
    Candidates,
    CaseClass,
    CaseRecord,
    ModelSpend,
    RunRecord,
    SuiteCase,
    count_each,
    run_totals,
    utc_now,
)
from frontier_qa.store._shards import Shard
from frontier_qa.store._stop_reason import StopReason
from frontier_qa.store._store_error import StoreError
from frontier_qa.target import Case, Target, Trajectory

log = logging.getLogger(__name__)
_OPEN_ENDED = tuple(reason for reason in StopReason if reason.leaves_run_open)  # resume the run to go on


def config_hash(settings: ProbeSettings, target_id: str, curriculum_name: str = "") -> str:
    """Hash of what decides a run's results (resume refuses a run started with another one).

    Left out: limits on *how much* is probed (max_candidates, saturation, concurrency,
    replay) and the shard index, so every shard of a run shares the hash and a resumed run
    may be given a larger candidate budget.
    """
    keep = {
        name: getattr(settings, name)
        for name in ("band", "k", "sequential", "labels", "sampling", "batch_size", "seed", "predict_difficulty",
                     "explore_rate", "verify_references", "prior_refit_every", "prior_smoothing", "prior",
                     "prior_from_store", "prior_versions", "prior_topic_min", "judge_sampling")
    }  # fmt: skip
    keep["shards"] = settings.shard.count if settings.shard else 1
    payload = json.dumps(
        {"settings": _plain(keep), "target": target_id, "curriculum": curriculum_name},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# --- progress ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ProgressEvent:
    """Something the engine did, for progress output.

    Attributes:
        kind: ``"proposed"``, ``"validated"``, ``"skipped"``, ``"sampled"`` (one round),
            ``"classified"``, ``"replayed"`` or ``"stopped"``.
        case_id: the case concerned, if one.
        case_class: its class once classified (``invalid`` for failed validation).
        p_hat: p̂ so far (``sampled``) or final (``classified``, ``replayed``).
        k: samples so far.
        message: a line in words (validation reason, verdict, stop reason...).
        counts: cases recorded by class value, plus ``"candidates"`` and ``"skipped"``.
        budget: the target's spending line (``calls 12/100, tokens ...``) when it has one.
        comparison: the replay verdict (``replayed`` only).
    """

    kind: str
    case_id: str | None = None
    case_class: CaseClass | None = None
    p_hat: float | None = None
    k: int | None = None
    message: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)
    budget: str | None = None
    comparison: Comparison | None = None


@dataclass(frozen=True)
class ReplayItem:
    """One case to replay: the case, the baseline it is held to, its first fresh sample index."""

    case: Case
    baseline: Baseline | None
    start: int = 0


# --- the run ----------------------------------------------------------------------------


class ProbeRun:
    """State of one probe or replay run (one shard); see the module docstring."""

    def __init__(
        self,
        target: Target,
        store: CaseStore,
        settings: ProbeSettings,
        *,
        judge: Target | None,
        sandbox: Sandbox | None,
        progress: Callable[[ProgressEvent], None] | None,
    ) -> None:
        self.target = target
        self.store = store
        self.settings = settings
        self.shard = settings.shard or Shard()
        self.progress = progress
        attach = getattr(progress, "attach", None)
        if callable(attach):  # a progress display that shows the budget between events reads it live
            attach(self._budget_line)
        self._sandbox = sandbox
        self.prober = CaseProber(settings, target_id=target.id, target_version=version_of(target), judge=judge,
                                 on_round=self._on_round)
        self.run_id = ""
        self.recorded: dict[str, CaseRecord] = {}  # this run's latest record per case
        self.known: frozenset[str] = frozenset()  # case ids recorded by earlier runs
        self.flagged: set[str] = set()
        self.seen: deque[str] = deque(maxlen=settings.seen_window)
        self.comparisons: list[Comparison] = []
        self.stop_reason: str | None = None
        self.stop_detail: str | None = None  # the error behind a budget or unavailable-target stop
        self.stop_source: str | None = None  # which model it came from: "target" or "curriculum"
        self.replay_size = 0  # cases in the replay, all shards' (the suite size of the regression test)
        self.candidates = 0  # proposals made (Candidates.proposed)
        self.skipped = 0  # proposals the difficulty predictor skipped
        self.fate = {"cases": 0, "invalid": 0, "repeats": 0, "other_shards": 0}  # what became of the rest
        self.generated = False  # whether the curriculum was asked (a probe; not a replay alone)
        self.predictor = DifficultyPredictor() if settings.predict_difficulty else None
        self.rng = random.Random(settings.seed)
        self.calibration: list[tuple[float, float]] = []
        self.gate = asyncio.Semaphore(settings.max_concurrent_cases)
        self.boundaries: list[BoundaryRecord] = []  # a generators curriculum's findings, kept in the run record

    # -- bookkeeping ------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        out = {c.value: n for c, n in count_each(CLASS_ORDER, (r.case_class for r in self.recorded.values())).items()}
        out["candidates"], out["skipped"] = self.candidates, self.skipped
        return out

    def _budget_line(self) -> str | None:
        snapshot = getattr(self.target, "snapshot", None)
        return snapshot().describe() if callable(snapshot) else None

    def emit(self, kind: str, **fields: Any) -> None:
        if self.progress is None:
            return
        self.progress(ProgressEvent(kind, counts=self.counts(), budget=self._budget_line(), **fields))

    def _on_round(self, case: Case, k: int, p_hat: float) -> None:
        self.emit("sampled", case_id=case.id, p_hat=p_hat, k=k)

    def stop(self, reason: str, detail: str | None = None, source: str | None = None) -> None:
        if self.stop_reason is None:
            self.stop_reason, self.stop_detail, self.stop_source = reason, detail, source

    def keep(self, record: CaseRecord) -> None:
        """Append a record to the store at once and remember it.

        The target's cache commits its queued samples first: a recorded case's samples
        survive any crash (the cache batches its writes; see :mod:`frontier_qa.runtime._cache`).
        """
        flush = getattr(self.target, "flush", None)
        if callable(flush):
            flush()
        self.store.append(record)
        self.recorded[record.id] = record
        if record.case_class is not CaseClass.INVALID:
            self.prober.observe(record)
        self.emit("classified", case_id=record.id, case_class=record.case_class, p_hat=record.p_hat,
                  k=record.k, message=record.reason or "")

    # -- start, resume, finish ----------------------------------------------------------------

    async def start(self, run_id: str | None, resume: bool, curriculum_name: str, *,
                    wait: bool | float = False) -> None:
        """Take the run's lease (one writer per run shard), then start it or load it to resume.

        With ``wait`` the lease is polled without blocking the event loop, so a Ctrl-C while
        waiting (the run's budget interrupted) ends the wait with ``KeyboardInterrupt``.
        """
        self.run_id = run_id or new_run_id()
        deadline = None if wait is True or wait is False else time.monotonic() + float(wait)
        told = False
        while True:
            try:
                self.lease = self.store.lease_run(self.run_id, self.shard.index)
                break
            except RunBusyError as busy:
                if wait is False or (deadline is not None and time.monotonic() >= deadline):
                    raise
                if not told:
                    told = True
                    self._waiting(describe_holder(busy.path))
            if getattr(getattr(self.target, "budget", None), "interrupted", False):
                raise KeyboardInterrupt
            await asyncio.sleep(0.1)
        try:
            self._start(resume, curriculum_name)
        except BaseException:
            self.release()
            raise

    def _waiting(self, holder: str) -> None:
        self.emit("waiting", message=f"run {self.run_id} is being written by {holder}; waiting for it (--wait)")

    def discard_if_empty(self) -> None:
        """A new run that failed before its first case leaves nothing behind to resume."""
        if getattr(self, "created", False) and not self.recorded:
            self.store.discard_run(self.run_id, self.shard.index)

    def release(self) -> None:
        """Give up the run's lease (also when the run failed or was interrupted)."""
        lease = getattr(self, "lease", None)
        if lease is not None:
            lease.release()

    def _start(self, resume: bool, curriculum_name: str) -> None:
        target_version = version_of(self.target)
        digest = config_hash(self.settings, self.target.id, curriculum_name)
        exists = True
        try:
            self.store.run(self.run_id, self.shard.index)
        except StoreError:
            exists = False
        capped = cap_warning(self.settings)  # a --k below what the policy needs: said now, kept in the run record
        if capped is not None:
            log.warning("warning: %s", capped.message)
        if exists and not resume:
            raise ConfigError(
                f"run {self.run_id!r} (shard {self.shard}) is already in the store at {self.store.root}",
                hint="pass resume=True to continue it, or choose another run id",
            )
        if exists:
            state = self.store.resume(self.run_id, shard_index=self.shard.index, config_hash=digest)
            for record in latest_by(self.store.case_records(run_id=self.run_id), lambda r: r.id).values():
                # unresolved cases are probed again; their samples come back from the cache
                if record.id in state.completed and record.case_class is not CaseClass.UNRESOLVED:
                    self.recorded[record.id] = record
                    if record.case_class is not CaseClass.INVALID:
                        self.prober.observe(record)
                        self._learn_difficulty(record, None)
            # the frontier labels the run gave stay given: the ledger charges them again
            self.prober.ledger.restore(r.band_inside for r in self.recorded.values()
                                       if r.case_class is CaseClass.FRONTIER and r.band_inside is not None)
        else:
            self.created = True
            self.store.start_run(
                RunRecord(
                    run_id=self.run_id,
                    config_hash=digest,
                    seed=self.settings.seed,
                    shard_index=self.shard.index,
                    shard_count=self.shard.count,
                    target_id=self.target.id,
                    target_version=target_version,
                    warnings=[capped] if capped is not None else [],
                )
            )
        earlier = [r for r in self.store.case_records() if r.run_id != self.run_id]
        self.known = frozenset(r.id for r in earlier)
        if self.settings.prior_from_store:
            # the population prior starts from this target's earlier cases (their latest records),
            # other versions' as probing.prior_versions says; the run record says where it came from
            self._carry_prior(earlier, target_version)
        # the prior from the resumed run's cases (and, with prior_from_store, the target's earlier ones): fitted once
        self.prober.refit(force=self.settings.prior_from_store)
        # near-duplicate memory as the interrupted run had it: replayed cases now; generated
        # ones come back as the curriculum proposes them again
        for record in self.records():
            if record.id in self.known and record.case_class is not CaseClass.INVALID:
                self.seen.append(record.case.prompt)

    def _carry_prior(self, earlier: Sequence[CaseRecord], version: str | None) -> None:
        mine = latest_by((r for r in earlier if baselines.base_target_id(r.target_id, r.target_version)
                          == self.target.id), lambda r: r.id)
        s = self.settings
        found = carried(((r.id, r.target_version, observation(r)) for r in mine.values()), target_id=self.target.id,
                        version=version, start=self.prober.book.start, versions=s.prior_versions,
                        smoothing=s.prior_smoothing, topic_min=s.prior_topic_min)
        self.prober.carry(found)
        self.prober.refit(force=True)  # which topics start from their own prior
        source = found.source.model_copy(update={"topics": sorted(self.prober.book.topics)})
        run = self.store.run(self.run_id, self.shard.index)
        if run.prior != source:
            self.store.append(run.model_copy(update={"prior": source, "written_at": utc_now()}))

    def finish(self, spend: Mapping[str, ModelSpend] | None = None) -> RunRecord:
        """Record the run's end (unless it stays open to resume) with its totals: counts, what each
        model spent (``spend``, by role), and what became of the curriculum's proposals; then send
        the latest record of each case to ``settings.verdicts``, if any (the OpenTelemetry events).
        """
        records = self.records()
        totals = run_totals(records, spend=spend, candidates=self.proposals() if self.generated else None)
        if self.stop_reason in _OPEN_ENDED:  # left open to resume; what it did so far is recorded
            update: dict[str, Any] = {"totals": totals, "written_at": utc_now()}
            if self.boundaries:
                update["boundaries"] = self.boundaries
            ended = self.store.run(self.run_id, self.shard.index).model_copy(update=update)
            self.store.append(ended)
        else:
            ended = self.store.finish_run(self.run_id, shard_index=self.shard.index, totals=totals,
                                          boundaries=self.boundaries or None)
        if self.settings.verdicts is not None and records:  # every way in ends its run here
            self.settings.verdicts.send(records, self.settings.band)
        return ended

    def records(self) -> list[CaseRecord]:
        return sorted(self.recorded.values(), key=lambda r: (r.finished_at, r.id))

    def proposals(self) -> Candidates:
        """What became of the curriculum's proposals so far (``proposed = cases + invalid + removed``)."""
        f = self.fate
        reached = f["cases"] + f["invalid"] + f["repeats"] + f["other_shards"] + self.skipped
        not_reached = max(self.candidates - reached, 0)
        return Candidates(proposed=self.candidates, cases=f["cases"], invalid=f["invalid"],
                          removed=f["repeats"] + f["other_shards"] + self.skipped + not_reached,
                          repeats=f["repeats"], other_shards=f["other_shards"], predicted_skip=self.skipped,
                          not_reached=not_reached)

    # -- replay ---------------------------------------------------------------------------------

    def _history(self, scope_all: bool) -> list[CaseRecord]:
        """Earlier runs' records of this target (its id without a version), or of any target."""
        records = [r for r in self.store.case_records() if r.run_id != self.run_id]
        if scope_all:
            return records
        return [r for r in records if baselines.base_target_id(r.target_id, r.target_version) == self.target.id]

    def replay_plan(self, olds: Sequence[CaseRecord | SuiteCase] | None, scope_all: bool, *,
                    skip: Collection[str] = ()) -> list[ReplayItem]:
        """The cases to replay, failures first, each with its baseline and first fresh sample index;
        without ``olds``, the stored cases but those in ``skip``.

        Baselines (:func:`frontier_qa.store._baselines.resolve`): the latest accepted one, else the
        case's first observation; a committed suite's own baseline unless the store accepted a
        newer one. The replay never changes them.
        """
        history = self._history(scope_all)
        accepted = self.store.accepted()
        items: list[ReplayItem] = []
        if olds is None:
            latest = latest_by(history, lambda r: r.id)
            rank = {c: i for i, c in enumerate(CLASS_ORDER)}
            chosen = sorted((r for r in latest.values() if r.case_class is not CaseClass.INVALID and r.id not in skip),
                            key=lambda r: (rank[r.case_class], r.id))
            everything = self.store.case_records()
            found = baselines.resolve(self.store, everything)
            items = [ReplayItem(r.case, found.get(r.id)) for r in chosen]
        else:
            found = baselines.resolve(self.store) if any(isinstance(o, CaseRecord) for o in olds) else {}
            for old in olds:
                if isinstance(old, SuiteCase):
                    own = baselines.of_entry(old)
                else:  # a stored case: its baseline in the store, else this record
                    own = found.get(old.case.id) or baselines.from_record(old)
                stored = accepted.get(old.case.id)
                if stored is not None and (own is None or stored.accepted_at >= own.accepted_at):
                    own = stored
                items.append(ReplayItem(old.case, own))
        used: dict[str, int] = {}
        target_records = history if not scope_all else self._history(False)
        for r in target_records:  # fresh indices: after every sample this target drew for the case
            if r.samples:
                used[r.id] = max(used.get(r.id, 0), max(s.sample_index for s in r.samples) + 1)
        if self.settings.max_replay is not None:
            items = items[: self.settings.max_replay]
        self.replay_size = len(items)
        plan = [replace(i, start=used.get(i.case.id, 0)) for i in items if self.shard.contains(i.case.id)]
        plan = [i for i in plan if i.case.id not in self.recorded]
        missing = {i.case.id: names for i in plan if (names := unresolved(dataclasses.asdict(i.case)))}
        if missing:  # the store keeps a secret in a case's inputs as ${secret:NAME}, never its value
            names = sorted({n for found in missing.values() for n in found})
            raise ConfigError(f"{len(missing)} stored case(s) hold the secret(s) {', '.join('$' + n for n in names)} "
                              f"in their inputs, which this environment does not set (first: {min(missing)})",
                              hint=f"export {names[0]}=... before replaying; the store keeps a reference to "
                                   "the variable, never its value")
        return plan

    async def replay(self, plan: Sequence[ReplayItem]) -> None:
        policy = self.settings.regression.for_cases(self.replay_size or len(plan))
        target_version = self.prober.target_version

        async def one(item: ReplayItem) -> None:
            base = item.baseline
            same = base is not None and (base.target_id, base.target_version) == (self.target.id, target_version)
            case = item.case.to_case()
            judge = ReplayJudge(base, policy, case, self.prober.matches, same_target=same)
            record = await self.probe_one(case, verified=item.case.reference_verified, start=item.start, judge=judge)
            if record is None:
                return
            self.seen.append(record.case.prompt)
            verdict = from_record(record, base)
            assert verdict is not None
            self.comparisons.append(verdict)
            self.emit("replayed", case_id=record.id, case_class=record.case_class, p_hat=record.p_hat,
                      k=record.k, message=f"{verdict.verdict.value}: {verdict.reason}", comparison=verdict)

        await gather_or_cancel([one(item) for item in plan])
        self.comparisons.sort(key=lambda c: c.case_id)
        self.prober.refit()

    # -- one case -------------------------------------------------------------------------------

    async def probe_one(self, case: Case, *, verified: bool, start: int = 0, prediction: float | None = None,
                        hint: float | None = None, judge: ReplayJudge | None = None) -> CaseRecord | None:
        """Probe and record one case; ``None`` when the run stopped before it began.

        ``prediction`` is the difficulty predictor's p̂ (learnt from and reported on);
        ``hint`` any predicted p̂ (predictor or curriculum), which sizes the first round;
        ``judge`` a replay's regression test.
        """
        async with self.gate:
            if self.stop_reason is not None:
                return None
            record, stop = await self.prober.probe(case, self.draw, run_id=self.run_id, verified=verified, start=start,
                                                   prediction=prediction if hint is None else hint, judge=judge)
            if stop is not None:  # before the gate opens: cases still waiting must not start
                self.stop(stop, self.prober.stop_detail, "target")
            if stop == StopReason.INTERRUPTED:  # not recorded half-done: resume probes it again from the cache
                return None
            if judge is not None and judge.outcome is not None:  # the verdict is kept with the observation
                verdict = comparison(record.id, judge.baseline, record, judge.outcome, evidence=judge.evidence)
                record = record.model_copy(update={"verdict": to_record(verdict)})
            self.keep(record)
        self._learn_difficulty(record, prediction)
        return record

    async def draw(self, case: Case, n: int, start: int) -> list[Trajectory]:
        """``n`` samples of ``case`` from index ``start`` on, from the run's target (the prober's :data:`Draw`)."""
        return await self.target.sample(case, n, self.prober.sampling, start=start)

    def _learn_difficulty(self, record: CaseRecord, prediction: float | None) -> None:
        if self.predictor is None or record.case_class in (CaseClass.INVALID, CaseClass.UNRESOLVED):
            return
        counted = record.k - record.n_failed
        if counted < 1:
            return
        votes = record.clusters[0].count if record.clusters else 0
        estimate = record.case.metadata.get("predicted_pass_rate")
        self.predictor.observe(record.case.prompt, votes, counted, topic=record.topic,
                               curriculum=estimate if isinstance(estimate, (int, float)) else None)
        if prediction is not None:
            self.calibration.append((prediction, votes / counted))

    # -- generation -----------------------------------------------------------------------------

    async def generate(self, curriculum: Curriculum, validator: Validator) -> None:
        # a validity judge model also says whether a frontier case's answers split along readings
        self.prober.readings = getattr(validator.critic, "model_judge", None)
        if isinstance(curriculum, DrivesRun):  # task generators: the boundary search runs the run
            self.generated = True
            self.boundaries = list(await curriculum.drive(self))
            return
        await self._generate(curriculum, validator)

    async def _generate(self, curriculum: Curriculum, validator: Validator) -> None:
        self.generated = True
        s = self.settings
        flags: deque[bool] = deque(maxlen=s.saturation_window)
        while self.stop_reason is None:
            if s.max_candidates is not None and self.candidates >= s.max_candidates:
                self.stop(StopReason.MAX_CANDIDATES)
                break
            want = s.batch_size if s.max_candidates is None else min(s.batch_size, s.max_candidates - self.candidates)
            try:
                proposals = list(await curriculum.propose(want))[:want]
            except BudgetExceededError as err:  # a curriculum model sharing the budget ran it out
                self.stop(StopReason.INTERRUPTED if isinstance(err, RunInterruptedError) else StopReason.BUDGET,
                          err.message, "curriculum")
                break
            except TargetUnavailableError as err:
                self.stop(StopReason.UNAVAILABLE, err.message, "curriculum")
                break
            if not proposals:
                self.stop(StopReason.EXHAUSTED)
                break
            self.candidates += len(proposals)
            proposals = [self._named(p) for p in proposals]
            for p in proposals:
                self.emit("proposed", case_id=p.case.id, message=p.source)
            outcomes = await self.batch(proposals, validator, flags)
            if outcomes:
                curriculum.observe(outcomes)
            self.prober.refit()
            if self.stop_reason is None and len(flags) == flags.maxlen and sum(flags) < s.saturation_min_new:
                self.stop(StopReason.SATURATED)

    def _named(self, proposal: Proposal) -> Proposal:
        """The proposal with an id: its own, else a readable one; an alias the store knows wins."""
        case = proposal.case
        if not case.id:
            proposal = replace(proposal, case=replace(case, id=case_id_for(case)),
                               aliases=(*proposal.aliases, legacy_case_id(case)))
        if proposal.case.id in self.known or proposal.case.id in self.recorded:
            return proposal
        for alias in proposal.aliases:
            if alias in self.known or alias in self.recorded:  # the id frontier-qa 0.1 gave this case
                return replace(proposal, case=replace(proposal.case, id=alias))
        return proposal

    def _flag(self, record: CaseRecord, flags: deque[bool]) -> None:
        if record.id not in self.flagged:
            self.flagged.add(record.id)
            flags.append(record.case_class is CaseClass.FRONTIER and record.id not in self.known)

    async def batch(self, proposals: Sequence[Proposal], validator: Validator, flags: deque[bool]) -> list[Outcome]:
        done: dict[int, CaseRecord] = {}
        fresh: list[int] = []
        names: set[str] = set()
        for i, p in enumerate(proposals):
            if not self.shard.contains(p.case.id):
                self.fate["other_shards"] += 1
                continue
            if p.case.id in self.recorded:
                done[i] = self.recorded[p.case.id]  # resumed, replayed or repeated: no second record
                self.fate["repeats"] += 1
            elif p.case.id not in names:
                names.add(p.case.id)
                fresh.append(i)
            else:
                self.fate["repeats"] += 1
        # every shard checks the whole batch, so validity never depends on the sharding
        checked = validator.check(proposals, list(self.seen))
        for r in checked:
            if r.ok:
                self.seen.append(r.proposal.case.prompt)
        own = await validator.critique([checked[i] for i in fresh])
        valid: list[tuple[int, ValidationResult]] = []
        for i, result in zip(fresh, own, strict=True):
            self.emit("validated", case_id=result.proposal.case.id, message=result.reason or "ok")
            if result.ok:
                valid.append((i, result))
            else:
                record = self.prober.invalid(result.proposal, result.reason or "invalid", run_id=self.run_id)
                self.keep(record)
                self.fate["invalid"] += 1
                done[i] = record
        verifications = await self._verify([r.proposal for _, r in valid])
        jobs: list[tuple[int, Coroutine[Any, Any, CaseRecord | None]]] = []
        for (i, result), check in zip(valid, verifications, strict=True):
            case = prepared_case(result, check)
            prediction = self._predict(result.proposal)
            if prediction is not None and should_skip(prediction, self.settings.explore_rate, self.rng):
                self.skipped += 1
                self.emit("skipped", case_id=case.id, p_hat=prediction, message="predicted too easy or too hard")
                continue
            hint = prediction if prediction is not None else result.proposal.predicted_pass_rate
            jobs.append((i, self.probe_one(case, verified=check.verified, prediction=prediction, hint=hint)))
        for i, probed in zip([i for i, _ in jobs], await gather_or_cancel([job for _, job in jobs]), strict=True):
            if probed is not None:
                done[i] = probed
                self.fate["cases"] += 1
        outcomes = []
        for i in sorted(done):
            record = done[i]
            self._flag(record, flags)
            outcomes.append(
                Outcome(proposals[i], record.case_class.value, record.p_hat, record.majority, record.reason)
            )
        return outcomes

    async def _verify(self, proposals: Sequence[Proposal]) -> list[Verification]:
        # without a program to run (or with verification off) only a source's own word counts
        out = [
            Verification(p.case.reference, ok, None, "vouched for by its source" if ok else "not verified")
            for p, ok in ((p, trusted(p)) for p in proposals)
        ]
        runs = [i for i, p in enumerate(proposals) if self.settings.verify_references and p.solution]
        if runs:
            if self._sandbox is None:
                self._sandbox = Sandbox()
            checked = await verify_references([proposals[i] for i in runs], self._sandbox)
            for i, verification in zip(runs, checked, strict=True):
                out[i] = verification
        return out

    def _predict(self, proposal: Proposal) -> float | None:
        if self.predictor is None:
            return None
        case = proposal.case
        own = self.predictor.predict(case.prompt, topic=case.topic, curriculum=proposal.predicted_pass_rate)
        return own if own is not None else proposal.predicted_pass_rate


def prepared_case(result: ValidationResult, check: Verification) -> Case:
    """The case as it will be probed and recorded: checked reference, provenance and the hash of
    its inputs (:mod:`frontier_qa.store._inputs`) in metadata.
    """
    proposal = result.proposal
    meta = dict(proposal.case.metadata)
    meta.setdefault("source", proposal.source)
    if proposal.solution:
        meta.setdefault(SOLUTION_KEY, proposal.solution)
    if check.output is not None and check.output != check.reference:
        meta["solution_output"] = check.output
    if check.reason and (proposal.solution or check.verified):
        meta["verification"] = check.reason
    if proposal.predicted_pass_rate is not None:
        meta.setdefault("predicted_pass_rate", proposal.predicted_pass_rate)
    if result.critic is not None:
        meta["critic"] = {"score": result.critic.score, "reason": result.critic.reason}
    note = validity_note(result.critic)
    said = meta.get(VALIDITY_KEY)
    if isinstance(said, Mapping) and said.get("verdict") is not None and (note is None or note["verdict"] is None):
        note = dict(said)  # the source's own verdict (a generator's well-posed) stands where no judge decided
    if note is None and proposal.written:
        note = {"verdict": None, "judge": AUTHOR, "reason": "written by a person: its author vouches for it"}
    if note is not None:
        meta[VALIDITY_KEY] = note
    # the hash of the inputs as the source wrote them: a later edit of the source is then seen
    # (frontier_qa.probing._reconcile), and a baseline is held only while they stay the same
    source = source_inputs(proposal.case, solution=proposal.solution, predicted_pass_rate=proposal.predicted_pass_rate)
    return stamped(replace(proposal.case, reference=check.reference, metadata=meta), source)



__all__ = [
    "ReplayItem",
    "ProbeRun",
    "ProgressEvent",
    "prepared_case",
    "case_id_for",
    "config_hash",
]
