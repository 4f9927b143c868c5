"""Probing one case: sample in rounds, score, ask the judge, classify, build the record.

The probe engine (:mod:`frontier_qa.probing.engine`) decides *which* cases to probe; a
:class:`CaseProber` does the per-case work and knows nothing of curricula or stores:

1. sample the target in rounds: ``target.sample(case, next_n, sampling, start=k_so_far)``
   until :func:`frontier_qa.probing.sequential.decide` stops (or exactly k with a fixed k);
2. score every round with :func:`frontier_qa.scoring.case.score_case`: majority vote with
   equivalent answers merged (Agent0 Eq. 6), or clusters of sentence embeddings for
   open-ended ``"text"`` answers;
3. compare the majority with the reference; for a stable answer without a verified
   reference, ask the judge target (when there is one) whether it is correct;
4. :func:`classify_case`, and build the :class:`~frontier_qa.store.records.CaseRecord`.

A budget that runs out (or a target that stops answering) mid-case ends sampling; the
case is then ``unresolved`` with the samples it got, and the engine stops the run.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from frontier_qa.curricula.base import Proposal
from frontier_qa.errors import BudgetExceededError, RunInterruptedError, TargetUnavailableError
from frontier_qa.probing.regression import ReplayJudge, band_of
from frontier_qa.probing.sequential import (
    Decision,
    SequentialConfig,
    Verdict,
    decide,
    decide_consistency,
    fit_prior,
    wilson_interval,
)
from frontier_qa.probing.settings import ProbeSettings
from frontier_qa.runtime.redact import redact
from frontier_qa.scoring.case import TOOL_CALLS_FORMAT, answer_matches, answers_of, score_answers, score_case
from frontier_qa.scoring.consistency import Consistency
from frontier_qa.store.records import CaseClass, CaseRecord, Interval, Round, case_record, utc_now
from frontier_qa.store.stop_reason import StopReason
from frontier_qa.target import Case, Target, Trajectory

if TYPE_CHECKING:
    from frontier_qa.probing.sequential import MajorityPrior

log = logging.getLogger(__name__)

STOP_BUDGET = StopReason.BUDGET
STOP_INTERRUPTED = StopReason.INTERRUPTED
STOP_UNAVAILABLE = StopReason.UNAVAILABLE
FIXED_K_LEVEL = 0.9  # Wilson interval level with fixed k (the sequential policy has its own)


# --- classification (the rules of the probe brief) --------------------------------------


def classify_case(
    verdict: Verdict | None,
    *,
    majority: str | None,
    reference: str | None,
    reference_verified: bool,
    majority_correct: bool | None,
    judge_verdict: bool | None = None,
    n_answered: int = 1,
    n_unparseable: int = 0,
    band: tuple[float, float] = (0.3, 0.8),
    p_hat: float | None = None,
    stopped_by: str | None = None,
) -> tuple[CaseClass, str]:
    """The class of a sampled case and why, in words.

    Args:
        verdict: the band verdict (``IN_BAND``, ``ABOVE``, ``BELOW``); ``None`` when sampling
            ended before a decision.
        majority: the majority answer (pseudo-label ỹ), ``None`` when no sample answered.
        reference: the case's reference answer, if any.
        reference_verified: whether that reference was verified (solution program, trusted
            source or judge); only a verified reference can make a ``failure``.
        majority_correct: whether the majority is equivalent to the reference (``None``: unknown).
        judge_verdict: a judge target's "is the majority correct?" (``None``: not asked / no answer).
        n_answered: samples that gave an answer.
        n_unparseable: samples that ran but gave no answer.
        band: (low, high) of the band, for the reason text.
        p_hat: the final p̂, for the reason text.
        stopped_by: why sampling ended early (``"budget"``...), for unresolved cases.

    Returns:
        ``(case_class, reason)``.
    """
    p = "—" if p_hat is None else f"{p_hat:.2f}"
    where = f"[{band[0]:.2f}, {band[1]:.2f}]"
    if verdict is None:
        return CaseClass.UNRESOLVED, f"sampling stopped ({stopped_by or 'no samples'}) before the band was decided"
    if n_answered == 0 and n_unparseable == 0:
        return CaseClass.UNRESOLVED, "every target call failed; nothing to score"
    if n_answered == 0:
        # No answer to be consistent about: never "frontier", whatever the posterior says.
        if reference_verified:
            return CaseClass.FAILURE, (
                f"no sample gave an answer in the case's format ({n_unparseable} unparseable): "
                f"verified reference {reference!r}"
            )
        return CaseClass.SUSPECT, f"no sample gave an answer in the case's format ({n_unparseable} unparseable)"
    which = "verified" if reference_verified else "unverified"
    if verdict is Verdict.IN_BAND:
        # Agent0 §3.3: the uncertainty signal stands on its own; the reference only annotates it
        extra = ""
        if majority_correct is False:
            extra = f"; the majority {majority!r} also differs from the {which} reference"
        return CaseClass.FRONTIER, f"p̂ = {p} inside the band {where}{extra}"
    if verdict is Verdict.ABOVE:
        if reference_verified and majority_correct is not None:
            if majority_correct:
                return CaseClass.PASS, "stable majority matches the verified reference"
            return CaseClass.FAILURE, f"stable majority {majority!r} differs from the verified reference {reference!r}"
        if judge_verdict is not None:
            if judge_verdict:
                return CaseClass.PASS, "stable majority judged correct"
            return CaseClass.FAILURE, f"stable majority {majority!r} judged wrong"
        if reference is not None and majority_correct is not None:
            if majority_correct:
                return CaseClass.PASS, "stable majority matches the (unverified) reference"
            return CaseClass.SUSPECT, (
                f"stable majority {majority!r} differs from the unverified reference {reference!r} "
                "(the reference may be wrong)"
            )
        return CaseClass.PASS, "stable majority; no reference to check it against"
    if reference_verified and majority_correct is not True:
        missed = "no sample gave an answer" if majority is None else f"the majority {majority!r} misses it"
        return CaseClass.FAILURE, (
            f"answers scattered (p̂ = {p} below band) and {missed}: verified reference {reference!r}"
        )
    return CaseClass.SUSPECT, f"answers scattered, p̂ = {p} below band"


# --- the judge ---------------------------------------------------------------------------

_VERDICT = re.compile(r"verdict\s*[:：]?\s*[*_`\"']*\s*(yes|no|correct|incorrect)\b", re.IGNORECASE)
_LEADING = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def judge_prompt(case: Case, answer: str) -> str:
    """The question put to a judge target about a case's majority answer."""
    return (
        "You are grading an answer to a task.\n\n"
        f"Task:\n{case.prompt.strip()}\n\n"
        f"Proposed answer:\n{answer.strip()}\n\n"
        "Is the proposed answer correct? Reason briefly, then end with exactly one line: "
        '"Verdict: yes" or "Verdict: no".'
    )


def parse_judge_verdict(text: str | None) -> bool | None:
    """The judge's yes/no: the last ``Verdict: yes|no`` line, else a leading yes/no; ``None`` otherwise."""
    if not text:
        return None
    found = _VERDICT.findall(text)
    if found:
        return found[-1].lower() in ("yes", "correct")
    lead = _LEADING.match(text.strip())
    return None if lead is None else lead.group(1).lower() == "yes"


# --- the prober --------------------------------------------------------------------------


class CaseProber:
    """Samples, scores and classifies single cases for one run.

    Args:
        target: what is probed.
        settings: the run's :class:`~frontier_qa.probing.settings.ProbeSettings`.
        judge: optional stronger target for stable answers without a verified reference.
        on_round: called ``(case, k, p̂)`` after every sampling round.
    """

    def __init__(
        self,
        target: Target,
        settings: ProbeSettings,
        *,
        judge: Target | None = None,
        on_round: Callable[[Case, int, float], None] | None = None,
    ) -> None:
        self.target = target
        self.settings = settings
        self.judge = judge
        self.on_round = on_round
        self.sampling = settings.run_sampling()
        self.policy: SequentialConfig | None = settings.policy()
        self._start_prior = None if self.policy is None else self.policy.prior
        self.band = (settings.band.low, settings.band.high)
        self.level = FIXED_K_LEVEL if self.policy is None else self.policy.level
        self.observations: list[tuple[tuple[int, ...], int]] = []
        self._fitted_at = 0
        self._embedder: Any = None
        version = getattr(target, "version", None)
        found = version() if callable(version) else None
        self.target_version = None if found is None else str(found)
        self.stop_detail: str | None = None  # the error that stopped sampling (budget, unavailable target)

    # -- the sequential prior (empirical Bayes on this run's cases) ---------------------------

    @property
    def prior(self) -> MajorityPrior | None:
        return None if self.policy is None else self.policy.prior

    def observe(self, record: CaseRecord) -> None:
        """Remember a scored case's cluster sizes for the next prior refit."""
        if record.k - record.n_failed > 0:
            self.observations.append((tuple(c.count for c in record.clusters), record.n_unparseable))

    def refit(self, *, force: bool = False) -> None:
        """Refit the prior when ``prior_refit_every`` new cases came in (or now, if ``force``)."""
        every = self.settings.prior_refit_every
        if self.policy is None or every <= 0 or not self.observations:
            return
        if force or len(self.observations) - self._fitted_at >= every:
            self.policy = replace(self.policy, prior=fit_prior(self.observations, start=self._start_prior))
            self._fitted_at = len(self.observations)

    # -- scoring -------------------------------------------------------------------------------

    def _embedder_for_text(self) -> Any:
        if self._embedder is None:
            from frontier_qa.scoring.embedders import get_embedder

            self._embedder = get_embedder(self.settings.embedder)
        return self._embedder

    async def score(self, case: Case, trajectories: Sequence[Trajectory]) -> Consistency:
        """Self-consistency of the samples so far (:func:`frontier_qa.scoring.case.score_case`)."""
        embedder = self._embedder_for_text() if case.answer_format == "text" else None
        return await score_case(case, trajectories, embedder=embedder)

    async def score_answers(self, case: Case, answers: Sequence[str | None], failed: Sequence[bool]) -> Consistency:
        """Self-consistency of extracted answers (e.g. pooled from several records of a case)."""
        embedder = self._embedder_for_text() if case.answer_format == "text" else None
        return await score_answers(case.answer_format, answers, failed, embedder=embedder)

    async def matches(self, answer: str, reference: str, answer_format: str) -> bool:
        """Whether an answer is equivalent to the reference (same meaning, for ``"text"``)."""
        embedder = self._embedder_for_text() if answer_format == "text" else None
        return await answer_matches(answer, reference, answer_format, embedder=embedder)

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

    def _band_need(self, decision: Decision | None, k: int) -> int:
        """Samples the band decision still wants (0 once decided)."""
        if self.policy is None:
            return max(self.settings.k - k, 0)
        if decision is None:
            decision = decide((), 0, 0, self.policy)
        return 0 if decision.stopped else decision.next_n

    def _band(self, decision: Decision | None, consistency: Consistency | None, k: int) -> Verdict | None:
        """The band verdict of the samples so far (``None`` until decided)."""
        if self.policy is not None:
            return decision.verdict if decision is not None and decision.stopped else None
        if consistency is None or k < self.settings.k:
            return None
        if self.settings.band.contains(consistency.p_hat):
            return Verdict.IN_BAND
        return Verdict.BELOW if consistency.p_hat < self.band[0] else Verdict.ABOVE

    async def _sample(
        self, case: Case, start: int, judge: ReplayJudge | None = None
    ) -> tuple[list[Trajectory], list[Round], Verdict | None, str | None]:
        trajectories: list[Trajectory] = []
        rounds: list[Round] = []
        decision: Decision | None = None
        consistency: Consistency | None = None
        stop: str | None = None
        try:
            while True:
                need = self._band_need(decision, len(trajectories))
                if judge is not None:
                    answers = list(consistency.answers) if consistency is not None else []
                    if len(answers) != len(trajectories):
                        answers = answers_of(case, trajectories)
                    band = band_of(decision) if self.policy is not None else _fixed_band(
                        self._band(decision, consistency, len(trajectories)))
                    need = max(need, await judge.want(trajectories, answers, consistency, band))
                if need == 0:
                    break
                got = await self.target.sample(case, need, self.sampling, start=start + len(trajectories))
                if not got:
                    stop = StopReason.NO_SAMPLES
                    break
                trajectories.extend(got)
                consistency = await self.score(case, trajectories)
                rounds.append(self._round(consistency))
                if self.on_round is not None:
                    self.on_round(case, len(trajectories), consistency.p_hat)
                if self.policy is not None:
                    decision = decide_consistency(consistency, self.policy)
        except BudgetExceededError as err:
            stop = STOP_INTERRUPTED if isinstance(err, RunInterruptedError) else STOP_BUDGET
            self.stop_detail = err.message
        except TargetUnavailableError as err:
            stop, self.stop_detail = STOP_UNAVAILABLE, err.message
        if stop == StopReason.NO_SAMPLES:
            return trajectories, rounds, None, stop
        verdict = None if stop is not None else self._band(decision, consistency, len(trajectories))
        if judge is not None:
            band = band_of(decision) if self.policy is not None else _fixed_band(verdict)
            await judge.finish(consistency, band)
        return trajectories, rounds, verdict, stop

    async def probe(self, case: Case, *, run_id: str, verified: bool, start: int = 0,
                    judge: ReplayJudge | None = None) -> tuple[CaseRecord, str | None]:
        """Sample, score and classify one case.

        Args:
            case: the case (its reference already checked).
            run_id: the run the record belongs to.
            verified: whether ``case.reference`` is verified.
            start: the first sample index (replays use indices no earlier run drew).
            judge: a replay's regression test; sampling goes on until it decides too.

        Returns:
            The record (not yet stored), and ``"budget"`` / ``"target unavailable"`` when
            that ended sampling (the run should stop), else ``None``.
        """
        started = utc_now()
        trajectories, rounds, verdict, stop = await self._sample(case, start, judge)
        consistency = await self.score(case, trajectories)
        majority, reference = consistency.majority, case.reference
        majority_correct = None
        if reference is not None and majority is not None:
            majority_correct = await self.matches(majority, reference, case.answer_format)
        judged = None
        if verdict is Verdict.ABOVE and not verified and self.judge is not None and majority is not None:
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
        case_class, reason = classify_case(
            verdict,
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
        )
        answers = (
            list(consistency.answers)
            if len(consistency.answers) == len(trajectories)
            else answers_of(case, trajectories)
        )
        record = case_record(
            case,
            trajectories,
            answers,
            consistency,
            case_class=case_class,
            run_id=run_id,
            target_id=self.target.id,
            started_at=started,
            target_version=self.target_version,
            seed=self.sampling.seed,
            interval=rounds[-1].interval if rounds else None,
            rounds=rounds,
            reference_verified=verified,
            majority_correct=majority_correct,
            reason=reason,
            max_text_chars=self.settings.max_text_chars,
        )
        return record, stop

    def invalid(self, proposal: Proposal, reason: str, *, run_id: str) -> CaseRecord:
        """The record of a proposal that failed validation (never sampled)."""
        return case_record(
            proposal.case,
            [],
            [],
            None,
            case_class=CaseClass.INVALID,
            run_id=run_id,
            target_id=self.target.id,
            started_at=utc_now(),
            target_version=self.target_version,
            seed=self.sampling.seed,
            reason=reason,
        )


def _fixed_band(verdict: Verdict | None) -> str | None:
    return None if verdict is None else {Verdict.IN_BAND: "in_band", Verdict.ABOVE: "above",
                                         Verdict.BELOW: "below"}.get(verdict)


__all__ = ["TOOL_CALLS_FORMAT", "CaseProber", "answers_of", "classify_case", "judge_prompt", "parse_judge_verdict"]
