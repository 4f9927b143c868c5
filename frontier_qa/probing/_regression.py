"""Replaying one case: sample in looks until the regression test decides, up to a cap.

:class:`ReplayJudge` rides along :class:`~frontier_qa.probing._case_prober.CaseProber`'s sampling
loop. After every round it takes each look it has reached (``policy.looks``: 5, 10, 20, 40,
80 new samples by default) on *exactly* the first ``looks[i]`` new samples, so each look's
Fisher test has a fixed sample size whatever the band decision sampled beyond it, and the
Bonferroni bound over looks holds. It asks for the samples the next look needs, and says 0
once :func:`~frontier_qa.store._comparison.judge` decided; the prober keeps sampling while the
case's class is undecided too.

Matching a sample to the baseline's anchor uses the prober's own equivalence (numbers and
symbols for math, embeddings for open-ended answers, exact calls for tool use), memoised per
distinct answer. Failed and unparseable samples are misses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from frontier_qa.probing._sequential import Decision
from frontier_qa.scoring.consistency import Consistency
from frontier_qa.store._comparison import Evidence, Look, Outcome, RegressionPolicy, judge, was_frequent
from frontier_qa.store._records import Baseline
from frontier_qa.target import Case, Trajectory


def band_of(decision: Decision | None) -> str | None:
    """The band of a *confident* sequential decision (``None`` while undecided or forced)."""
    if decision is None or not decision.stopped or decision.forced:
        return None
    return decision.verdict.value  # "in_band", "below" or "above"


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

    async def _decide(self, index: int, answers: Sequence[str | None], band: str | None, final: bool,
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

    async def want(
        self,
        trajectories: Sequence[Trajectory],
        answers: Sequence[str | None],
        consistency: Consistency | None,
        band: str | None,
    ) -> int:
        """Take every look the samples reached; the samples the next look needs (0: decided).

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
        looks = self.policy.looks
        hits = [None if not t.ok else a for t, a in zip(trajectories, answers, strict=True)]
        while self.look < len(looks) and len(hits) >= looks[self.look]:
            last = self.look == len(looks) - 1
            decided = await self._decide(self.look, hits[: looks[self.look]], band, last, consistency)
            if decided is not None:
                self.outcome = decided
                return 0
            self.look += 1
        self._answers = list(hits)
        return 0 if self.look >= len(looks) else looks[self.look] - len(hits)

    async def finish(self, consistency: Consistency | None, band: str | None) -> Outcome:
        """The verdict once sampling ended: the decided one, or a final look on what came."""
        if self.outcome is None:
            index = min(self.look, len(self.policy.looks) - 1)
            self.outcome = await self._decide(index, self._answers, band, True, consistency)
        assert self.outcome is not None
        return self.outcome


__all__ = ["ReplayJudge", "band_of"]
