"""Replaying one case: sample until the regression test decides, up to a cap.

:class:`ReplayJudge` rides along :class:`~frontier_qa.probing._case_prober.CaseProber`'s sampling
loop. After every round it takes each check it has reached (``policy.checks``: every 2 new
samples from 5 on, and the looks 8, 16, 32, 64, 128 where the Fisher tests spend ``alpha``) on
*exactly* the first ``checks[i]`` new samples, so each look's test has a fixed sample size
whatever the band decision sampled beyond it, and the Bonferroni bound over looks holds. It
asks for the samples the next check needs, and says 0 once
:func:`~frontier_qa.store._comparison.judge` decided. Once it said ``same`` the prober stops
too, band undecided or not (:attr:`ReplayJudge.settled`): re-deciding the class of a case the
test calls unchanged would cost samples without telling the replay anything; the record then
carries the baseline's class, marked as carried. Other verdicts sample on until the class is
decided, since a case that changed needs its new class.

Matching a sample to the baseline's anchor uses the prober's own equivalence (numbers and
symbols for math, embeddings for open-ended answers, exact calls for tool use), memoised per
distinct answer. Failed and unparseable samples are misses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from frontier_qa.probing._sequential import Decision
from frontier_qa.scoring.consistency import Consistency
from frontier_qa.store._comparison import (
    Evidence,
    Look,
    Outcome,
    RegressionPolicy,
    RegressionVerdict,
    judge,
    was_frequent,
)
from frontier_qa.store._records import Baseline, CaseClass
from frontier_qa.target import Case, Trajectory


def band_of(decision: Decision | None) -> str | None:
    """The band of a *confident* sequential decision (``None`` while undecided or forced)."""
    if decision is None or not decision.stopped or decision.forced:
        return None
    return decision.verdict.value  # "in_band", "below" or "above"


CARRIED = "class carried from the baseline"
"""How the reason of a replayed case whose class was not decided again begins (:func:`carried_class`)."""


def carried_class(baseline: Baseline, samples: int, p_hat: float) -> tuple[CaseClass, str]:
    """The class a replay records for a case the regression test called ``same`` before its band
    was decided: the baseline's, with a reason that says so and what the new samples showed.

    Args:
        baseline: the baseline the case was held to.
        samples: new samples drawn.
        p_hat: their majority share.
    """
    return baseline.case_class, (f"{CARRIED} ({baseline.source}, {baseline.k} samples): the regression test "
                                 f"called the case the same after {samples} new samples (p̂ = {p_hat:.2f}), so "
                                 "its band was not decided again")


@dataclass(eq=False)  # a judge is a running test: compared by identity
class ReplayJudge:
    """The sequential regression test of one replayed case.

    Args:
        baseline: what the case is held to (``None``: a new case, decided at once).
        policy: alpha, suite size, looks, the drop that matters.
        case: the case being replayed.
        matches: async ``matches(answer, anchor, answer_format) -> bool`` (the prober's).
        same_target: the replay runs the target id and version the baseline was observed on.
    """

    baseline: Baseline | None
    policy: RegressionPolicy
    case: Case
    matches: object
    same_target: bool = field(default=False, kw_only=True)
    look: int = field(default=0, init=False)
    outcome: Outcome | None = field(default=None, init=False)
    evidence: Evidence | None = field(default=None, init=False)
    _memo: dict[str, bool] = field(default_factory=dict, init=False, repr=False)
    _answers: list[str | None] = field(default_factory=list, init=False, repr=False)

    async def _hit(self, answer: str | None) -> bool:
        anchor = None if self.baseline is None else self.baseline.anchor
        if answer is None or anchor is None:
            return False
        if answer not in self._memo:
            self._memo[answer] = bool(await self.matches(answer, anchor, self.case.answer_format))  # type: ignore[operator]
        return self._memo[answer]

    async def _evidence(self, answers: Sequence[str | None]) -> Evidence:
        hits = [await self._hit(a) for a in answers]
        return Evidence(sum(hits), len(answers))

    async def _majority_is_reference(self, consistency: Consistency | None) -> bool | None:
        ref = self.case.reference
        if consistency is None or consistency.majority is None or ref is None or self.baseline is None:
            return None
        if self.baseline.anchor_kind != "majority":
            return None
        return bool(await self.matches(consistency.majority, ref, self.case.answer_format))  # type: ignore[operator]

    async def _was_frequent(self, majority: str | None) -> bool:
        base = self.baseline
        if majority is None or base is None or base.anchor_kind != "majority":
            return False
        fmt = self.case.answer_format
        anchor = {c.answer: await self._hit(c.answer) for c in base.clusters}
        same = {c.answer: bool(await self.matches(majority, c.answer, fmt)) for c in base.clusters}  # type: ignore[operator]
        return was_frequent(base, anchor.__getitem__, same.__getitem__)

    async def _decide(self, index: int | None, answers: Sequence[str | None], band: str | None, final: bool,
                      consistency: Consistency | None) -> Outcome | None:
        evidence = await self._evidence(answers)
        majority = None if consistency is None else consistency.majority
        look = Look(index=index, evidence=evidence, band=band, final=final, majority=majority,
                    majority_is_reference=await self._majority_is_reference(consistency),
                    majority_was_frequent=await self._was_frequent(majority))
        outcome = judge(self.baseline, look, self.policy, same_target=self.same_target)
        if outcome is not None or final:
            self.evidence = evidence
        return outcome

    @property
    def settled(self) -> bool:
        """Whether the test said ``same``: the replay needs no more samples of the case."""
        return self.outcome is not None and self.outcome.verdict is RegressionVerdict.SAME

    async def want(
        self,
        trajectories: Sequence[Trajectory],
        answers: Sequence[str | None],
        consistency: Consistency | None,
        band: str | None,
    ) -> int:
        """Take every check the samples reached; the samples the next check needs (0: decided).

        Args:
            trajectories: the new samples so far, in sample-index order.
            answers: their extracted answers (``None`` for failed or unparseable ones).
            consistency: their self-consistency (for the majority).
            band: :func:`band_of` the band decision on them.
        """
        if self.outcome is not None:
            return 0
        if self.baseline is None:
            self.outcome = judge(None, Look(0, Evidence(0, 0)), self.policy)
            return 0
        checks, looks = self.policy.checks, self.policy.looks
        hits = [None if not t.ok else a for t, a in zip(trajectories, answers, strict=True)]
        while self.look < len(checks) and len(hits) >= checks[self.look]:
            n = checks[self.look]
            index = looks.index(n) if n in looks else None  # a check between looks spends no level
            decided = await self._decide(index, hits[:n], band, n == looks[-1], consistency)
            if decided is not None:
                self.outcome = decided
                return 0
            self.look += 1
        self._answers = list(hits)
        return 0 if self.look >= len(checks) else checks[self.look] - len(hits)

    async def finish(self, consistency: Consistency | None, band: str | None) -> Outcome:
        """The verdict once sampling ended: the decided one, or a final look on what came."""
        if self.outcome is None:  # a final look on what came, at the level of the first look not taken
            looks = self.policy.looks
            taken = self.policy.checks[self.look - 1] if self.look else 0
            index = next((i for i, n in enumerate(looks) if n > taken), len(looks) - 1)
            self.outcome = await self._decide(index, self._answers, band, True, consistency)
        assert self.outcome is not None
        return self.outcome


__all__ = ["CARRIED", "ReplayJudge", "band_of", "carried_class"]
