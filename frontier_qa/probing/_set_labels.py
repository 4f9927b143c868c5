"""Set-level frontier labels: a run labels cases frontier while its labelled *set* stays calibrated.

The per-case rule calls a case frontier only when P(p* in band) ≥ 0.9 on its own evidence. A
case near a band edge needs many samples to get there, and many never do (``unresolved``).
What a user reads, though, is the run's list of frontier cases, and what they need of it is
that few of its entries are wrong. The set-level rule asks that of the list: the expected
share of wrong frontier labels, the mean of 1 − P(in band) over the labelled cases, stays at
most ``alpha``. A case may then be labelled with a lower P(in band) when the labels before it
were surer, never below ``floor``.

Labels are online: a case's label is decided when it stops and never changes afterwards, so
every way in (console, reports, JUnit, pytest) sees the class as soon as the case is recorded,
and a resumed run restores the ledger from the run's own frontier records.

Not the default (``mode="case"`` is), by measurement (``benchmarks/policy_sweep.py`` and
``benchmarks/sequential_bench.py`` on the fair mixes, held-out seeds): a sequentially sampled
case stops as soon as it crosses the threshold, so no label ends much surer than the threshold
and no room builds up; at ``alpha`` 0.07, where the set's precision holds ≥ 0.9, set labels
behave like per-case labels at 0.93 (the same recall, a stricter first label that leaves more
cases unresolved under a small ``k``), and at 0.1 the set's measured precision fell to 0.83.
The gain seen when every case is sampled to a fixed K (``benchmarks/policy_bound.py`` part A)
needs samples past the stop that a sequential probe does not draw.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Annotated, Literal

from pydantic import Field

from frontier_qa._frozen import frozen_value
from frontier_qa.probing._sequential import Decision, SequentialConfig, decide_consistency
from frontier_qa.scoring.consistency import Consistency


@frozen_value
class Labelling:
    """How a run decides which stopped cases are frontier (config ``probing.labels``).

    Attributes:
        mode: ``"set"``: the run's frontier set keeps its expected share of wrong labels ≤
            ``alpha``; ``"case"``: every frontier case on its own reaches the policy's confidence.
        alpha: the expected share of wrong labels the frontier set may hold (``"set"`` mode).
        floor: no case is labelled frontier with P(in band) below this (``"set"`` mode).
    """

    mode: Annotated[Literal["set", "case"], Field(
        description="set: the run's frontier set keeps its expected share of wrong labels <= alpha; "
                    "case: every frontier case reaches the policy's confidence on its own")] = "case"
    alpha: Annotated[float, Field(gt=0.0, lt=0.5, description=(
        "set mode: the expected share of wrong labels the frontier set may hold"))] = 0.07
    floor: Annotated[float, Field(gt=0.5, lt=1.0, description=(
        "set mode: no case is labelled frontier with P(in band) below this"))] = 0.7

    def rule(self, claim: Claim) -> str | None:
        """The set-level rule a case's frontier label met, for its reason; ``None`` when it holds no
        label the ledger admitted, and in ``"case"`` mode (the policy's confidence, as before).
        """
        if self.mode == "case" or claim.held is None or claim.asked is None:
            return None
        return (f"P(in band) = {claim.held:.2f} ≥ {claim.asked:.2f} (set-level labels: the run's frontier set "
                f"holds ≤ {self.alpha:.0%} expected wrong labels)")


@dataclass
class Ledger:
    """The running error budget of one run's frontier labels.

    Attributes:
        labelling: the rule.
        labelled: frontier labels given so far.
        expected_wrong: the sum of 1 − P(in band) over them.
    """

    labelling: Labelling = field(default_factory=Labelling)
    labelled: int = 0
    expected_wrong: float = 0.0

    def threshold(self, confidence: float) -> float:
        """The least P(in band) a case stopping now needs to be labelled frontier.

        Args:
            confidence: the policy's per-case confidence (what ``"case"`` mode asks).
        """
        if self.labelling.mode == "case":
            return confidence
        room = self.labelling.alpha * (self.labelled + 1) - self.expected_wrong
        return min(max(self.labelling.floor, 1.0 - room), 1.0 - 1e-9)

    def admit(self, inside: float, confidence: float) -> bool:
        """Label a case with P(in band) = ``inside`` frontier if the budget allows it now; charge it.

        ``False`` when another case took the room first (cases are sampled side by side): the
        case samples on.
        """
        if inside < self.threshold(confidence):
            return False
        self.labelled += 1
        self.expected_wrong += 1.0 - inside
        return True

    def restore(self, insides: Iterable[float]) -> None:
        """Charge the labels a run already gave (a resumed run's frontier records)."""
        for inside in insides:
            self.labelled += 1
            self.expected_wrong += 1.0 - inside

    def release(self, inside: float) -> None:
        """Give a label's charge back: its case is decided again, or did not end frontier after all."""
        self.labelled -= 1
        self.expected_wrong = self.expected_wrong - (1.0 - inside) if self.labelled else 0.0

    def decide(self, consistency: Consistency, policy: SequentialConfig, claim: Claim) -> Decision:
        """The policy's band decision with this ledger's threshold as the in-band confidence; an in-band
        stop is admitted (charged) at once, in the same step as the threshold it met.

        Args:
            consistency: the case's samples so far.
            policy: the run's sequential policy (its ``confidence`` is what ``"case"`` mode asks).
            claim: the case's standing, updated: a label it held is decided again with the new samples.
        """
        if claim.held is not None:  # sampled on after a stop (its path, pass^k): the label is decided again
            self.release(claim.held)
            claim.held = None
        claim.asked = self.threshold(policy.confidence)
        asked = policy if claim.asked == policy.confidence else replace(policy, confidence=claim.asked)
        decision = decide_consistency(consistency, asked)
        if decision.in_band:
            admitted = self.admit(decision.posterior.inside, policy.confidence)
            assert admitted, "admitted in the step that read the threshold: no other case moved it"
            claim.held = decision.posterior.inside
        return decision

    def settle(self, claim: Claim, inside: float | None, frontier: bool) -> None:
        """Make the ledger hold the case's final label: a charge given back when the case did not end
        frontier (an unclear task, sampling cut short), a frontier label decided without the ledger
        (a replay, fixed k) charged as given.
        """
        if claim.held is not None and not frontier:
            self.release(claim.held)
        elif claim.held is None and frontier and inside is not None:
            self.restore([inside])
        claim.held = inside if frontier else None

    @property
    def expected_precision(self) -> float | None:
        """1 − the mean posterior error of the labels given (``None`` before the first)."""
        return None if not self.labelled else 1.0 - self.expected_wrong / self.labelled


@dataclass
class Claim:
    """One case's standing with the run's :class:`Ledger` while it is sampled.

    Attributes:
        asked: the least P(in band) its last band decision asked (``None``: not decided with the ledger).
        held: the P(in band) charged for its frontier label (``None``: not labelled).
    """

    asked: float | None = None
    held: float | None = None


__all__ = ["Claim", "Labelling", "Ledger"]
