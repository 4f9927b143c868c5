"""Where P(correct) falls through a threshold along one ordinal knob: the adaptive boundary search.

Pure logic (lists in, decisions out). One :class:`AxisSearch` walks the levels of one knob
(easy to hard, the other knobs held fixed) and asks for *batches*: a few new task instances
at a level, each sampled ``samples`` times. It never decides a level from one instance, and it
spends instances where the level's posterior is undecided:

1. **coarse**: every ``stride``-th level and the hardest get one batch (the whole curve, roughly);
2. **bisection**: for each threshold (0.8, then 0.3: the band's ends), the first measured level
   from the easy end that is not confidently above it brackets the crossing with the last
   level that is; the middle of a bracket wider than one step is measured next;
3. **fine**: a level that decides where the crossing is (the first one not confidently above,
   and the bracket's ends) gets more instances until its posterior decides it (P ≥ ``confidence``
   above or below the threshold) or it reaches ``max_instances``: such a level is *close* to the
   threshold, which puts the crossing within one step of it either way.

A level's accuracy is the mean over its instances (a level is a population of tasks, and one
odd instance must not decide it). Samples of one instance are correlated, so the posterior of
the level's mean counts them through a design effect: Beta(½ + C/deff, ½ + (N − C)/deff) with
deff = 1 + (n̄ − 1)·ρ̂, ρ̂ the intra-instance correlation estimated from the spread of the
instances' accuracies (Kish's design effect for cluster samples).

For a non-monotone curve the crossing is the first one from the easy end among measured levels;
a dip narrower than the coarse stride between two levels that are above can be missed
(``stride=1`` scans every level). The whole measured curve is kept for the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["above", "below", "open", "close", "unmeasured", "unread"]


@dataclass(frozen=True)
class SearchSettings:
    """How the boundary search spends samples.

    Attributes:
        thresholds: the P(correct) levels whose crossings are found, high first (the band's ends).
        confidence: posterior probability a level must reach to count as above / below a threshold.
        instances: new task instances per batch at a level.
        samples: samples per instance (≥ 2 gives each instance a p̂, its answers' agreement).
        min_instances: instances a level needs before it can be decided.
        max_instances: instances at most per level; a level still undecided there is *close*.
        stride: coarse pass stride in levels (``None``: about a quarter of the levels).
        grid: instead of the adaptive search, the uniform grid with this many instances at every
            level (:class:`GridSearch`).
        first_crossing: once a crossing is bracketed, measure the levels skipped below it too, so a
            dip between two levels that are above is found (a non-monotone curve's first crossing).
    """

    thresholds: tuple[float, ...] = (0.8, 0.3)
    confidence: float = 0.9
    instances: int = 3
    samples: int = 2
    min_instances: int = 3
    max_instances: int = 18
    stride: int | None = None
    first_crossing: bool = True
    grid: int | None = None

    def __post_init__(self) -> None:
        if not self.thresholds or any(not 0.0 < t < 1.0 for t in self.thresholds):
            raise ValueError(f"thresholds must lie in (0, 1), got {self.thresholds}")
        if not 0.5 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie in (0.5, 1), got {self.confidence}")
        if self.instances < 1 or self.samples < 1 or self.min_instances < 1:
            raise ValueError("instances, samples and min_instances must be at least 1")
        if self.max_instances < max(self.min_instances, self.instances):
            raise ValueError("max_instances must be at least min_instances and instances")
        if self.stride is not None and self.stride < 1:
            raise ValueError(f"stride must be at least 1, got {self.stride}")


@dataclass(frozen=True)
class InstanceResult:
    """One task instance's samples.

    Attributes:
        case_id: the instance's case id.
        correct: samples whose answer was right.
        counted: samples whose answer was read (a failed call or an answer the format cannot read
            decides nothing, so it is not counted: it is in ``unread``).
        agreement: the majority share of its answers (p̂), ``None`` with no answer.
        unread: samples that ran but whose answer could not be read.
        failed: samples whose call failed (the agent raised, the target errored).
    """

    case_id: str
    correct: int
    counted: int
    agreement: float | None = None
    unread: int = 0
    failed: int = 0


@dataclass
class LevelEvidence:
    """What was measured at one level of the knob."""

    index: int
    value: Any
    instances: list[InstanceResult] = field(default_factory=list)

    @property
    def n(self) -> int:
        return sum(r.counted for r in self.instances)

    @property
    def correct(self) -> int:
        return sum(r.correct for r in self.instances)

    @property
    def unread(self) -> int:
        return sum(r.unread for r in self.instances)

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.instances)

    @property
    def measured(self) -> list[InstanceResult]:
        return [r for r in self.instances if r.counted > 0]

    @property
    def accuracy(self) -> float | None:
        """Mean accuracy over instances (each instance weighs the same)."""
        rs = self.measured
        return sum(r.correct / r.counted for r in rs) / len(rs) if rs else None

    @property
    def p_hat(self) -> float | None:
        """Mean agreement (p̂) of the instances' answers."""
        vals = [r.agreement for r in self.instances if r.agreement is not None]
        return sum(vals) / len(vals) if vals else None

    def design_effect(self) -> float:
        """Kish's deff = 1 + (n̄ − 1)·ρ̂ for the samples of one instance being correlated."""
        rs = self.measured
        if len(rs) < 2:
            return 1.0
        rates = [r.correct / r.counted for r in rs]
        mean = sum(rates) / len(rates)
        if mean <= 0.0 or mean >= 1.0:
            return 1.0
        spread = sum((x - mean) ** 2 for x in rates) / (len(rates) - 1)
        within = sum(x * (1 - x) / r.counted for x, r in zip(rates, rs, strict=True)) / len(rs)
        rho = min(max((spread - within) / (mean * (1 - mean)), 0.0), 1.0)
        n_bar = sum(r.counted for r in rs) / len(rs)
        return 1.0 + (n_bar - 1.0) * rho

    def posterior(self) -> tuple[float, float]:
        """Beta(a, b) of the level's mean accuracy (Jeffreys prior, design-effect counts)."""
        deff = self.design_effect()
        return 0.5 + self.correct / deff, 0.5 + (self.n - self.correct) / deff

    def prob_above(self, threshold: float) -> float:
        """P(mean accuracy ≥ threshold) under :meth:`posterior`."""
        from scipy.special import betainc

        a, b = self.posterior()
        return float(1.0 - betainc(a, b, threshold))

    def interval(self, level: float = 0.9) -> tuple[float, float]:
        """Equal-tailed credible interval of the level's mean accuracy."""
        from scipy.special import betaincinv

        a, b = self.posterior()
        tail = (1.0 - level) / 2
        return float(betaincinv(a, b, tail)), float(betaincinv(a, b, 1.0 - tail))


@dataclass(frozen=True)
class Crossing:
    """Where P(correct) falls through one threshold.

    Attributes:
        threshold: the P(correct) level.
        index: the first level index (easy to hard) below the threshold; ``None`` when every
            measured level is above it (not reached); 0 when even the easiest level is below.
        low, high: the level indices the crossing may be at (the interval of the claim):
            ``low`` the first level not confidently above, ``high`` the first confidently
            below (``None``: none is).
        status: ``found``, ``not reached``, ``at the easy end`` or ``undecided`` (the budget
            ran out before the bracket closed).
    """

    threshold: float
    index: int | None
    low: int | None
    high: int | None
    status: str


class AxisSearch:
    """The boundary search along one knob (see the module docstring).

    Args:
        levels: the knob's values from easy to hard.
        settings: how to spend samples.
    """

    def __init__(self, levels: Sequence[Any], settings: SearchSettings | None = None) -> None:
        if len(levels) < 2:
            raise ValueError("a knob needs at least two levels to have a boundary")
        self.settings = settings or SearchSettings()
        self.levels = list(levels)
        self.evidence = [LevelEvidence(i, v) for i, v in enumerate(levels)]
        n = len(levels)
        stride = self.settings.stride or max(1, n // 4)
        self.coarse = sorted({*range(0, n, stride), n - 1})

    # -- what each level says ----------------------------------------------------------------------

    def full(self, index: int) -> bool:
        return len(self.evidence[index].instances) >= self.settings.max_instances

    def status(self, index: int, threshold: float) -> Status:
        ev = self.evidence[index]
        if not ev.measured:
            if len(ev.instances) >= self.settings.min_instances:
                return "unread"  # instances were drawn, no answer was read (or every call failed): more won't help
            return "unmeasured" if not self.full(index) else "close"
        if len(ev.measured) >= self.settings.min_instances:
            p = ev.prob_above(threshold)
            if p >= self.settings.confidence:
                return "above"
            if p <= 1.0 - self.settings.confidence:
                return "below"
        return "close" if self.full(index) else "open"

    def _leans_above(self, index: int, threshold: float) -> bool:
        acc = self.evidence[index].accuracy
        return acc is not None and acc >= threshold

    def estimate(self, threshold: float) -> tuple[int, int | None]:
        """``(ĉ, gap)``: the first measured level leaning below ``threshold`` (``len(levels)`` when
        none does), and the middle of the unmeasured stretch just before it, if there is one
        (bisection's next level).
        """
        last = -1
        for i, ev in enumerate(self.evidence):
            if not ev.measured:
                continue
            if not self._leans_above(i, threshold):
                return i, ((last + i) // 2 if i - last > 1 and last >= 0 else None)
            last = i
        n = len(self.levels)
        return n, ((last + n) // 2 if n - last > 1 and last >= 0 else None)

    def _needs(self, threshold: float) -> list[int]:
        """Levels whose measurement can still move the crossing by more than one step.

        The claim is "the crossing is within one step of ĉ": it holds once every level up to
        ĉ − 2 is confidently above the threshold (none skipped: the *first* crossing) and ĉ or
        ĉ + 1 is confidently below. Level ĉ − 1 needs no decision at all: whichever way it
        goes, ĉ stays within one step (this is where the search saves on a grid).
        """
        c, gap = self.estimate(threshold)
        if gap is not None and not self.evidence[gap].instances:
            return [gap]
        need = []
        for i in range(max(c - 1, 0)):
            if not self.evidence[i].instances:
                if self.settings.first_crossing:
                    need.append(i)
            elif self.status(i, threshold) not in ("above", "unread"):
                need.append(i)
        n = len(self.levels)
        if c < n:
            below = [j for j in (c, c + 1) if j < n and self.status(j, threshold) == "below"]
            if not below:
                # the cheaper one to decide is the one further from the threshold: the next level
                nxt = c + 1 if c + 1 < n and not self.full(c + 1) else c
                need.append(nxt if self.evidence[nxt].instances or nxt == c else c)
                if nxt != c and not self.evidence[nxt].instances:
                    need.append(nxt)
        return [i for i in dict.fromkeys(need) if not self.full(i)]

    # -- the plan ----------------------------------------------------------------------------------

    def next_batch(self) -> list[tuple[int, int]]:
        """``(level index, new instances)`` to measure next; ``[]`` when the search is done."""
        s = self.settings
        want: dict[int, int] = {}
        for i in self.coarse:
            if not self.evidence[i].instances:
                want[i] = s.instances
        if want:
            return sorted(want.items())
        for t in s.thresholds:
            for i in self._needs(t):
                have = len(self.evidence[i].instances)
                want[i] = max(want.get(i, 0), min(s.instances, s.max_instances - have))
        return sorted(want.items())

    @property
    def done(self) -> bool:
        return not self.next_batch()

    def add(self, index: int, results: Sequence[InstanceResult]) -> None:
        self.evidence[index].instances.extend(results)

    # -- the answer --------------------------------------------------------------------------------

    def crossing(self, threshold: float) -> Crossing:
        """The crossing of ``threshold`` from what was measured (valid at any time): the leaning
        estimate ĉ (:meth:`estimate`), ``found`` once every level before ĉ − 1 is confidently above
        and ĉ or ĉ + 1 confidently below, else ``undecided`` (a level before it stayed undecided at
        ``max_instances``, or the budget ran out).

        A level left undecided at the limit two or more steps before ĉ is *not* taken as the
        crossing: on the benchmark's noisy agent (instances of a level differ) that rule cost 5-10
        points of hits for the 5 it gained on the non-monotone one (seeds 0-59, both measured).
        """
        c, _ = self.estimate(threshold)
        n = len(self.levels)
        low = next((i for i in range(n) if self.status(i, threshold) != "above"), n)
        high = next((i for i in range(c, n) if self.status(i, threshold) == "below"), None)
        met = all(self.status(i, threshold) == "above" for i in range(max(c - 1, 0))) and (
            c >= n or any(self.status(j, threshold) == "below" for j in (c, c + 1) if j < n))
        if c >= n:
            return Crossing(threshold, None, min(low, n - 1), None, "not reached" if met else "undecided")
        status = "found" if met else "undecided"
        if c == 0 and met:
            status = "at the easy end"
        return Crossing(threshold, c, min(low, c), high, status)

    @property
    def calls(self) -> int:
        return sum(ev.n for ev in self.evidence)


class GridSearch:
    """The uniform grid: every level gets ``per_level`` instances at once; a crossing is the first
    level whose measured accuracy is below the threshold. The baseline the adaptive search is
    measured against (``benchmarks/boundary_bench.py``), and a way to map every level evenly.
    """

    def __init__(self, levels: Sequence[Any], settings: SearchSettings | None = None, per_level: int = 10) -> None:
        if len(levels) < 2:
            raise ValueError("a knob needs at least two levels to have a boundary")
        self.settings = settings or SearchSettings()
        self.levels = list(levels)
        self.per_level = per_level
        self.evidence = [LevelEvidence(i, v) for i, v in enumerate(levels)]

    def next_batch(self) -> list[tuple[int, int]]:
        return [(i, self.per_level - len(ev.instances)) for i, ev in enumerate(self.evidence)
                if len(ev.instances) < self.per_level]

    def add(self, index: int, results: Sequence[InstanceResult]) -> None:
        self.evidence[index].instances.extend(results)

    def crossing(self, threshold: float) -> Crossing:
        n = len(self.levels)
        c = grid_crossing(self.evidence, threshold)
        if c is None:
            return Crossing(threshold, None, n - 1, None, "not reached")
        if c == 0:
            return Crossing(threshold, 0, 0, 0, "at the easy end")
        return Crossing(threshold, c, c, c, "found")

    @property
    def calls(self) -> int:
        return sum(ev.n for ev in self.evidence)


def grid_crossing(evidence: Sequence[LevelEvidence], threshold: float) -> int | None:
    """A uniform grid's estimate: the first level whose measured accuracy is below ``threshold``."""
    for ev in evidence:
        acc = ev.accuracy
        if acc is not None and acc < threshold:
            return ev.index
    return None


def within_one(estimate: int | None, planted: int | None, n_levels: int) -> bool:
    """Whether an estimated crossing is within one knob step of the planted one (``None`` = past the end)."""
    e = n_levels if estimate is None else estimate
    p = n_levels if planted is None else planted
    return abs(e - p) <= 1
