"""Probing one case: sample in rounds, score, ask the judge, classify, build the record.

The probe engine (:mod:`frontier_qa.probing._engine`) decides *which* cases to probe; a
:class:`CaseProber` does the per-case work and knows nothing of curricula or stores:

1. sample the target in rounds: ``target.sample(case, next_n, sampling, start=k_so_far)``
   until :func:`frontier_qa.probing._sequential.decide` stops (or exactly k with a fixed k);
2. score every round with :func:`frontier_qa.scoring._case_scoring.score_case`: majority vote with
   equivalent answers merged (Agent0 Eq. 6), or clusters of sentence embeddings for
   open-ended ``"text"`` answers;
3. compare the majority with the reference; for a stable answer without a verified
   reference, ask the judge target (when there is one) whether it is correct;
4. :func:`classify_case`, and build the :class:`~frontier_qa.store._records.CaseRecord`.

A budget that runs out (or a target that stops answering) mid-case ends sampling; the
case is then ``unresolved`` with the samples it got, and the engine stops the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from frontier_qa.errors import BudgetExceededError, FrontierQAError, RunInterruptedError, TargetUnavailableError
from frontier_qa.generators._core import GENERATOR_KEY, check_for
from frontier_qa.probing._classify import POSTERIOR_KEY, CaseEvidence, classify_case, confidence_of, posterior_note
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._judge_verdict import judge_prompt, parse_judge_verdict
from frontier_qa.probing._paths_judge import judge_paths, pass_k_need, path_need
from frontier_qa.probing._priors import Carried, PriorBook, observation
from frontier_qa.probing._regression import ReplayJudge, band_of, carried_class
from frontier_qa.probing._sequential import (
    DEFAULT_PRIOR,
    BandDecision,
    BandPosterior,
    Decision,
    SequentialConfig,
    band_posterior,
    checkpoint_after,
    decide_consistency,
    wilson_interval,
)
from frontier_qa.probing._set_labels import Claim, Ledger
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.probing._validity import ModelJudge, task_checked, unchecked_why
from frontier_qa.redaction import redact
from frontier_qa.scoring._case_scoring import TOOL_CALLS_FORMAT, answer_matches, answers_of, score_answers, score_case
from frontier_qa.scoring._paths import view_of
from frontier_qa.scoring.consistency import Consistency, self_consistency
from frontier_qa.store._records import CaseClass, CaseRecord, Interval, Round, case_record, utc_now
from frontier_qa.store._stop_reason import StopReason
from frontier_qa.target import Case, Target, Trajectory

if TYPE_CHECKING:
    from frontier_qa.probing._sequential import MajorityPrior

log = logging.getLogger(__name__)

FIXED_K_LEVEL = 0.9  # Wilson interval level with fixed k (the sequential policy has its own)


# --- generator checks ------------------------------------------------------------------------


def _checked(case: Case) -> bool:
    """Whether the case's generator decides its answers with a check (not the reference's equivalence)."""
    return GENERATOR_KEY in case.metadata and case.answer_format not in ("text", TOOL_CALLS_FORMAT) \
        and check_for(case) is not None


def _by_check(check: Callable[[str], bool], answers: list[str | None], failed: list[bool]) -> Consistency:
    verdicts: dict[str, bool] = {}

    def right(answer: str) -> bool:
        if answer not in verdicts:
            try:
                verdicts[answer] = bool(check(answer))
            except Exception:  # noqa: BLE001 - the user's check: a crash counts as "not right"
                verdicts[answer] = False
        return verdicts[answer]

    def key(answer: str) -> str:
        return " ".join(answer.split())

    return self_consistency(answers, failed=failed, key=key,
                            equivalent=lambda a, b: key(a) == key(b) or (right(a) and right(b)))


OPEN_TEXT_MAX_WORDS = 60
"""Longest answer (in words) that ``auto`` takes for an open answer rather than for unfinished reasoning."""

AUTO_TEXT_KEY = "answer_format_from"
"""Case metadata key saying why a case written ``auto`` was read as open text."""


def as_open_text(case: Case) -> Case:
    """``case`` read as open text, saying why (``auto`` found this target's answers are open text)."""
    meta = {**case.metadata, AUTO_TEXT_KEY: "auto: this target's first answers were open text, compared by meaning "
                                            "(set answer_format to pin a format)"}
    return replace(case, answer_format="text", metadata=meta)


# --- the prober --------------------------------------------------------------------------

Draw = Callable[[Case, int, int], Awaitable[list[Trajectory]]]
"""``draw(case, n, start)``: ``n`` samples of ``case`` from sample index ``start`` on (the run's target)."""


def version_of(target: Target) -> str | None:
    """A target's version (``version()`` or a ``version`` attribute), as records keep it."""
    version = getattr(target, "version", None)
    value = version() if callable(version) else version
    return None if value is None else str(value)


class CaseProber:
    """Decides single cases for one run: how many samples each round draws, their scores, the
    population prior, the class. It never holds the target: the run that owns it hands
    :meth:`probe` the function that draws samples (:data:`Draw`), so the target goes from the run
    to the runtime and nowhere else.

    Args:
        settings: the run's :class:`~frontier_qa.probing._settings.ProbeSettings`.
        target_id: the probed target's id, for the records.
        target_version: its version, if it has one.
        judge: optional stronger target for stable answers without a verified reference.
        on_round: called ``(case, k, p̂)`` after every sampling round.
    """

    def __init__(
        self,
        settings: ProbeSettings,
        *,
        target_id: str,
        target_version: str | None = None,
        judge: Target | None = None,
        on_round: Callable[[Case, int, float], None] | None = None,
    ) -> None:
        self.target_id = target_id
        self.target_version = target_version
        self.settings = settings
        self.judge = judge
        self.on_round = on_round
        self.sampling = settings.run_sampling()
        self.policy: SequentialConfig | None = settings.policy()
        # the population prior: the target's and its topics', refitted as cases come in (issue 33 item 2)
        self.book = PriorBook(settings.prior or (DEFAULT_PRIOR if self.policy is None else self.policy.prior),
                              smoothing=settings.prior_smoothing, topic_min=settings.prior_topic_min,
                              band=(settings.band.low, settings.band.high))
        self.prior: MajorityPrior = self.book.prior
        self.band = (settings.band.low, settings.band.high)
        self.level = FIXED_K_LEVEL if self.policy is None else self.policy.level
        self.ledger = Ledger(settings.labels)  # the run's frontier labels (set-level: their error budget)
        self._fitted_at = 0
        self._embedder: Any = None
        self.stop_detail: str | None = None  # the error that stopped sampling (budget, unavailable target)
        # what `auto` reads for this target once its first samples showed open text (issue 27 item 4)
        self.auto_reads: str | None = None
        # the validity judge model, asked whether a frontier case's answers split along readings of an unclear task
        self.readings: ModelJudge | None = None

    # -- the population prior (empirical Bayes on this target's cases) ---------------------------

    def observe(self, record: CaseRecord) -> None:
        """Remember a scored case's cluster sizes and topic for the next prior refit (latest record per case)."""
        self.book.observe(record.id, observation(record))

    def carry(self, earlier: Carried) -> None:
        """Start from the store's earlier cases (:func:`~frontier_qa.probing._priors.carried`);
        the cases observed already (a resumed run's own) keep their records.
        """
        self.book.start = self.book.prior = earlier.start  # the prior until the first refit
        self.book.observations = {**earlier.observations, **self.book.observations}
        self._adopt()

    def refit(self, *, force: bool = False) -> None:
        """Refit the prior when ``prior_refit_every`` new cases came in (or now, if ``force``)."""
        every = self.settings.prior_refit_every
        seen = len(self.book.observations)
        if every <= 0 or not seen:
            return
        if force or seen - self._fitted_at >= every:
            self.book.refit()
            self._adopt()
            self._fitted_at = seen

    def _adopt(self) -> None:
        self.prior = self.book.prior
        if self.policy is not None:
            self.policy = replace(self.policy, prior=self.prior)

    def policy_for(self, topic: str) -> SequentialConfig | None:
        """The sequential policy for a case of ``topic``: with its topic's prior when it has one."""
        prior = self.book.prior_for(topic)
        if self.policy is None or prior is self.prior:
            return self.policy
        return replace(self.policy, prior=prior)

    def first_round(self, prediction: float | None) -> int:
        """Samples in a case's first round: one look later for cases predicted near the band.

        A case the difficulty predictor (or the curriculum) expects near the band needs more
        than one round anyway, so its first two rounds go out as one (fewer round trips, one
        batch on a local model); cases predicted easy or hopeless start small.
        """
        assert self.policy is not None
        c = self.policy
        first = checkpoint_after(0, c.rounds, c.k_max, c.k_min)
        lo, hi = self.band
        if prediction is not None and lo - 0.05 <= prediction <= hi + 0.05:
            first = checkpoint_after(first, c.rounds, c.k_max, c.k_min)
        return first

    # -- scoring -------------------------------------------------------------------------------

    def _embedder_for_text(self) -> Any:
        if self._embedder is None:
            from frontier_qa.scoring._embedders import get_embedder

            self._embedder = get_embedder(self.settings.embedder)
        return self._embedder

    async def score(self, case: Case, trajectories: Sequence[Trajectory]) -> Consistency:
        """Self-consistency of the samples so far (:func:`frontier_qa.scoring._case_scoring.score_case`)."""
        if _checked(case):
            return await self.score_answers(case, answers_of(case, trajectories), [not t.ok for t in trajectories])
        embedder = self._embedder_for_text() if case.answer_format == "text" else None
        return await score_case(case, trajectories, embedder=embedder)

    async def score_answers(self, case: Case, answers: Sequence[str | None], failed: Sequence[bool]) -> Consistency:
        """Self-consistency of extracted answers (e.g. pooled from several records of a case).

        A case whose generator gives a ``check`` is clustered by it: every answer the check accepts
        is one cluster (right in any form), and the others merge only when they are the same text.
        The math equivalence would merge "12, 21" with "21, 12" as sets, which a check that wants
        the order does not.
        """
        check = check_for(case) if _checked(case) else None
        if check is not None:
            return await asyncio.to_thread(_by_check, check, list(answers), list(failed))
        embedder = self._embedder_for_text() if case.answer_format == "text" else None
        return await score_answers(case.answer_format, answers, failed, embedder=embedder)

    async def matches(self, answer: str, reference: str, answer_format: str) -> bool:
        """Whether an answer is equivalent to the reference (same meaning, for ``"text"``)."""
        embedder = self._embedder_for_text() if answer_format == "text" else None
        return await answer_matches(answer, reference, answer_format, embedder=embedder)

    async def judge_answer(self, case: Case, answer: str) -> bool | None:
        """Whether ``answer`` is right: the case's generator check when it has one, else equivalence
        to the reference (``None`` when there is neither).
        """
        check = check_for(case)
        if check is not None:
            try:
                return bool(check(answer))
            except Exception as err:  # the user's check: a crash is its verdict "wrong", said once in the log
                log.warning("the check of case %r raised %s: %s", case.id, type(err).__name__, err)
                return False
        if case.reference is None:
            return None
        return await self.matches(answer, case.reference, case.answer_format)

    def _round(self, consistency: Consistency) -> Round:
        top = consistency.clusters[0].size if consistency.clusters else 0
        low, high = wilson_interval(top, consistency.k, self.level)
        return Round(
            k=consistency.k,
            p_hat=consistency.p_hat,
            interval=Interval(low=low, high=high, method="wilson", confidence=self.level),
        )

    async def _ask_judge(self, case: Case, majority: str) -> tuple[bool | None, str]:
        assert self.judge is not None
        question = Case(id=f"judge-{case.id}", prompt=judge_prompt(case, majority), topic=case.topic,
                        answer_format="final_answer")
        sampling = self.settings.judge_sampling
        if sampling.seed is None:
            sampling = replace(sampling, seed=self.settings.seed)
        try:
            (reply,) = await self.judge.sample(question, 1, sampling)
        except (BudgetExceededError, TargetUnavailableError) as err:
            log.warning("the judge %s could not judge case %r: %s", redact(self.judge.id), case.id, err.message)
            return None, f"judge unavailable: {err.message}"
        if not reply.ok:
            log.warning("the judge %s failed on case %r: %s", redact(self.judge.id), case.id, redact(reply.error or ""))
            return None, f"judge failed: {reply.error}"
        return parse_judge_verdict(reply.text), reply.text or ""

    # -- one case ------------------------------------------------------------------------------

    def _need(self, decision: Decision | None, k: int, prediction: float | None) -> int:
        """Samples the band decision still wants (0 once decided)."""
        if self.policy is None:
            return max(self.settings.k - k, 0)
        if decision is None:
            return self.first_round(prediction)
        return 0 if decision.stopped else decision.next_n

    def _more(self, case: Case, trajectories: Sequence[Trajectory]) -> int:
        """Samples the path's decision (``probing.path.sample``) and pass^k's k still want; a counted
        case reaches k whatever the policy's k_max.
        """
        views = [view_of(t) for t in trajectories]
        return max(path_need(case, views, self.settings, self.policy), pass_k_need(case, len(views), self.settings))

    def _decision(self, consistency: Consistency, k: int, claim: Claim | None, topic: str = "") -> Decision | None:
        """The band decision of the samples so far (fixed k: ``None`` until k samples), under the prior of
        the case's topic; with a ``claim`` its in-band stop is a label the run's ledger admits (``None``:
        the policy's own confidence).
        """
        policy = self.policy_for(topic)
        if policy is not None:
            if claim is not None:
                return self.ledger.decide(consistency, policy, claim)
            return decide_consistency(consistency, policy)
        return self.fixed_decision(consistency) if k >= self.settings.k else None

    async def _sample(self, case: Case, draw: Draw, start: int, prediction: float | None,
                      judge: ReplayJudge | None = None, claim: Claim | None = None
                      ) -> tuple[Case, list[Trajectory], list[Round], Decision | None, Consistency | None, str | None]:
        """Sample a case round by round until its decision (and the judge's) stops it; the case (read
        as open text when ``auto`` found this target answers so), the samples,
        the rounds, the decision (``None`` when cut short), the last round's scores and the stop
        reason (``None`` unless the run should stop).
        """
        trajectories: list[Trajectory] = []
        rounds: list[Round] = []
        decision: Decision | None = None
        consistency: Consistency | None = None
        stop: str | None = None
        try:
            while True:
                need = max(self._need(decision, len(trajectories), prediction), self._more(case, trajectories))
                if judge is not None:
                    answers = list(consistency.answers) if consistency is not None else []
                    if len(answers) != len(trajectories):
                        answers = answers_of(case, trajectories)
                    need = max(need, await judge.want(trajectories, answers, consistency, band_of(decision)))
                    if judge.settled:  # "same": the class is not decided again (the baseline's is carried)
                        need = self._more(case, trajectories)
                if need == 0:
                    break
                got = await draw(case, need, start + len(trajectories))
                if not got:
                    stop = StopReason.NO_SAMPLES
                    break
                trajectories.extend(got)
                consistency = await self.score(case, trajectories)
                if self._open_text(case, trajectories, consistency):
                    case = as_open_text(case)
                    consistency = await self.score(case, trajectories)
                rounds.append(self._round(consistency))
                if self.on_round is not None:
                    self.on_round(case, len(trajectories), consistency.p_hat)
                decision = self._decision(consistency, len(trajectories), claim, case.topic)
        except BudgetExceededError as err:
            stop = StopReason.INTERRUPTED if isinstance(err, RunInterruptedError) else StopReason.BUDGET
            self.stop_detail = err.message
        except TargetUnavailableError as err:
            stop, self.stop_detail = StopReason.UNAVAILABLE, err.message
        if stop == StopReason.NO_SAMPLES:
            return case, trajectories, rounds, None, consistency, stop
        if stop is not None:
            decision = None
        if judge is not None:
            await judge.finish(consistency, band_of(decision))
        return case, trajectories, rounds, decision, consistency, stop

    def _open_text(self, case: Case, trajectories: Sequence[Trajectory], consistency: Consistency) -> bool:
        """Whether ``auto`` should read this target's answers as open text from now on: the first
        samples that ran are mostly not in any form ``auto`` reads, and each is a short text (at most
        :data:`OPEN_TEXT_MAX_WORDS` words), the shape of an open answer rather than of reasoning that
        never states one. Needs the embedding model (the ``embed`` extra); without it ``auto`` stays
        and the case says "could not judge" with the fix.
        """
        if case.answer_format != "auto" or GENERATOR_KEY in case.metadata:
            # a generator's reference is one computed value: never compared "by meaning"; answers auto
            # cannot read stay unread, and the boundary says so with the fix (Task(answer_format=...))
            return False
        if self.auto_reads is not None:  # decided on another case (cases sample side by side)
            return self.auto_reads == "text"
        if consistency.n_unparseable <= consistency.n_answered:
            return False
        texts = [t.text for t in trajectories if t.ok and t.text and t.text.strip()]
        if not texts or any(len(t.split()) > OPEN_TEXT_MAX_WORDS for t in texts):
            return False
        try:
            self._embedder_for_text()
        except FrontierQAError as err:
            log.warning("the agent answers in open text, but it cannot be compared by meaning here: %s", err.message)
            self.auto_reads = "auto"
            return False
        log.info("the agent answers in open text: `auto` compares its answers by meaning from now on")
        self.auto_reads = "text"
        return True

    def _posterior(self, consistency: Consistency) -> BandPosterior:
        """Where p* lies relative to the band, given the samples so far and the population prior."""
        return band_posterior([c.size for c in consistency.clusters], consistency.n_unparseable, band=self.band,
                              prior=self.prior)

    def fixed_decision(self, consistency: Consistency) -> Decision:
        """Agent0's fixed-k verdict (p̂ in the band), with the posterior for the record's reason."""
        p = consistency.p_hat
        verdict = (BandDecision.IN_BAND if self.settings.band.contains(p)
                   else BandDecision.BELOW if p < self.band[0] else BandDecision.ABOVE)
        top = consistency.clusters[0].size if consistency.clusters else 0
        return Decision(verdict, 0, consistency.k, consistency.n_failed, p,
                        wilson_interval(top, consistency.k, self.level), self._posterior(consistency), False,
                        "fixed k")

    async def probe(self, case: Case, draw: Draw, *, run_id: str, verified: bool, start: int = 0,
                    prediction: float | None = None, judge: ReplayJudge | None = None, per_case: bool = False
                    ) -> tuple[CaseRecord, str | None]:
        """Sample, score and classify one case.

        Args:
            case: the case (its reference already checked).
            draw: draws ``n`` samples of a case from index ``start`` on (:data:`Draw`).
            run_id: the run the record belongs to.
            verified: whether ``case.reference`` is verified.
            start: the first sample index (replays use indices no earlier run drew).
            prediction: the case's predicted p̂, if any (sizes the first round).
            judge: a replay's regression test; sampling goes on until it decides too.
            per_case: decide an in-band stop at the policy's own confidence, not the run's
                set-level threshold (replays always do; the boundary search's probes ask it).

        Returns:
            The record (not yet stored), and ``"budget"`` / ``"target unavailable"`` when
            that ended sampling (the run should stop), else ``None``.
        """
        started = utc_now()
        if case.answer_format == "auto" and self.auto_reads == "text" and GENERATOR_KEY not in case.metadata:
            case = as_open_text(case)
        # a replay keeps the per-case rule its regression test reads; a new case's label is the ledger's
        claim = Claim()
        case, trajectories, rounds, decision, scored, stop = await self._sample(
            case, draw, start, prediction, judge, None if judge is not None or per_case else claim)
        carried = judge is not None and judge.settled and stop is None and not (decision and decision.stopped)
        if carried:  # the test said "same" first: the band's leaning so far is no decision
            decision = None
        verdict = None if decision is None else decision.verdict
        # the last round scored every sample already (text answers: embedded once, not twice)
        consistency = scored if scored is not None and scored.k == len(trajectories) else await self.score(
            case, trajectories)
        posterior = None if decision is None else decision.posterior
        if decision is None and consistency.n_answered:  # cut short (budget): the evidence so far, its leaning
            posterior = self._posterior(consistency)
        majority, reference = consistency.majority, case.reference
        majority_correct = None
        if majority is not None and (reference is not None or check_for(case) is not None):
            majority_correct = await self.judge_answer(case, majority)
        judged = None
        confident = decision is not None and not decision.forced
        if (verdict is BandDecision.ABOVE and confident and not verified and self.judge is not None
                and majority is not None):
            judged, text = await self._ask_judge(case, majority)
            meta = dict(case.metadata)
            meta["judge"] = {"target": self.judge.id, "verdict": judged, "text": text[-500:]}
            if judged:  # a stronger model vouches for the majority: it becomes the verified reference
                if reference is not None and majority_correct is False:
                    meta["stated_reference"] = reference
                reference, verified, majority_correct = majority, True, True
            elif judged is False:
                majority_correct = False
            case = replace(case, reference=reference, metadata=meta)
        case_class, reason = classify_case(CaseEvidence(
            verdict=verdict,
            majority=majority,
            reference=reference,
            reference_verified=verified,
            majority_correct=majority_correct,
            judge_verdict=judged,
            n_answered=consistency.n_answered,
            n_unparseable=consistency.n_unparseable,
            band=self.band,
            p_hat=consistency.p_hat if consistency.k else None,
            stopped_by=stop,
            forced=decision is not None and decision.forced,
            posterior=posterior,
            confidence=self._confidence(verdict, claim),
            k=consistency.k - consistency.n_failed,
            fixed=self.policy is None,
            answer_format=case.answer_format,
            task_checked=task_checked(case, verified),
            unchecked_why=unchecked_why(case),
        ))
        if carried and judge is not None and judge.baseline is not None:
            case_class, reason = carried_class(judge.baseline, consistency.k, consistency.p_hat)
        elif case_class is CaseClass.FRONTIER and self.readings is not None and len(consistency.clusters) >= 2:
            case, case_class, reason = await self._unclear(case, consistency, case_class, reason)
        rule = self.settings.labels.rule(claim)
        if case_class is CaseClass.FRONTIER and rule is not None:
            reason = f"{reason}; {rule}"
        if not per_case:  # the boundary search keeps only some of its probes: they stay out of the ledger
            self.ledger.settle(claim, None if posterior is None else posterior.inside, case_class is CaseClass.FRONTIER)
        if posterior is not None:
            meta = dict(case.metadata)
            meta[POSTERIOR_KEY] = posterior_note(
                posterior, BandDecision.leaning_of(posterior) if decision is None else decision.verdict,
                forced=decision is None or decision.forced, confidence=self._confidence(verdict, claim))
            case = replace(case, metadata=meta)
        answers = (
            list(consistency.answers)
            if len(consistency.answers) == len(trajectories)
            else answers_of(case, trajectories)
        )
        paths = await judge_paths(case, [view_of(t) for t in trajectories], answers, self.settings, self.policy,
                                  self.judge_answer)
        record = case_record(
            case,
            trajectories,
            answers,
            consistency,
            case_class=case_class,
            run_id=run_id,
            target_id=self.target_id,
            started_at=started,
            target_version=self.target_version,
            seed=self.sampling.seed,
            interval=rounds[-1].interval if rounds else None,
            rounds=rounds,
            reference_verified=verified,
            majority_correct=majority_correct,
            reason=reason,
            max_text_chars=self.settings.max_text_chars,
            paths=paths.paths,
            misses=paths.misses,
            path=paths.path,
            pass_k=paths.pass_k,
        )
        return record, stop

    async def _unclear(self, case: Case, consistency: Consistency, case_class: CaseClass,
                       reason: str) -> tuple[Case, CaseClass, str]:
        """A frontier case whose two biggest answers a judge model says are two readings of an unclear
        task is ``unchecked`` ("unclear task"), not frontier (issue 27 item 1).
        """
        assert self.readings is not None
        first, second = (c.representative for c in consistency.clusters[:2])
        try:
            unclear, why = await self.readings.readings(case.prompt, first, second)
        except (BudgetExceededError, TargetUnavailableError) as err:
            unclear, why = None, f"judge unavailable: {err.message}"
        meta = {**case.metadata, "readings": {"judge": self.readings.name, "unclear": unclear, "why": why}}
        case = replace(case, metadata=meta)
        if not unclear:
            return case, case_class, reason
        return case, CaseClass.UNCHECKED, (f"unclear task: the answers split along readings of the task ({first!r} vs "
                                           f"{second!r}; {self.readings.name}: {why or 'unclear'}); {reason}")

    def _confidence(self, verdict: BandDecision | None, claim: Claim) -> float | None:
        """The confidence the verdict had to reach: the ledger's threshold for an in-band one."""
        asked = confidence_of(self.policy, verdict)
        return claim.asked if claim.asked is not None and verdict in (BandDecision.IN_BAND, None) else asked

    def invalid(self, proposal: Proposal, reason: str, *, run_id: str) -> CaseRecord:
        """The record of a proposal that failed validation (never sampled)."""
        return case_record(
            proposal.case,
            [],
            [],
            None,
            case_class=CaseClass.INVALID,
            run_id=run_id,
            target_id=self.target_id,
            started_at=utc_now(),
            target_version=self.target_version,
            seed=self.sampling.seed,
            reason=reason,
        )


__all__ = [
    "POSTERIOR_KEY",
    "TOOL_CALLS_FORMAT",
    "CaseProber",
    "Draw",
    "answers_of",
    "classify_case",
    "confidence_of",
    "judge_prompt",
    "parse_judge_verdict",
    "posterior_note",
    "version_of",
]
