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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from frontier_qa.errors import ConfigError


@dataclass(frozen=True)
class Labelling:
    """How a run decides which stopped cases are frontier (config ``probing.labels``).

    Attributes:
        mode: ``"set"``: the run's frontier set keeps its expected share of wrong labels ≤
            ``alpha``; ``"case"``: every frontier case on its own reaches the policy's confidence.
        alpha: the expected share of wrong labels the frontier set may hold (``"set"`` mode).
        floor: no case is labelled frontier with P(in band) below this (``"set"`` mode).
    """

    mode: Literal["set", "case"] = "set"
    alpha: float = 0.07
    floor: float = 0.7

    def __post_init__(self) -> None:
        if self.mode not in ("set", "case"):
            raise ConfigError(f"labels mode {self.mode!r} is not one of 'set', 'case'",
                              hint="'set' (the default) or 'case' (every label at the policy's confidence)")
        if not 0.0 < self.alpha < 0.5:
            raise ConfigError(f"labels alpha={self.alpha} must be in (0, 0.5)", hint="0.07 holds 0.9 precision")
        if not 0.5 < self.floor < 1.0:
            raise ConfigError(f"labels floor={self.floor} must be in (0.5, 1)", hint="0.7 is the default")


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

    @property
    def expected_precision(self) -> float | None:
        """1 − the mean posterior error of the labels given (``None`` before the first)."""
        return None if not self.labelled else 1.0 - self.expected_wrong / self.labelled


__all__ = ["Labelling", "Ledger"]
