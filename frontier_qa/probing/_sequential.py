"""Sequential sampling: sample a case in rounds until its place relative to the band is known.

Agent0 samples the executor k = 10 times per task and keeps the task when the majority
share p̂ (Eq. 6) lies in the band 0.3 ≤ p̂ ≤ 0.8 (Eq. 7). Against a paid target most of those
calls are wasted: five identical answers already say "too easy". Here the probe samples in
rounds and, after each, asks the posterior of the true majority probability p*
(:mod:`frontier_qa.probing._posterior`) how sure it is:

* **in band** when P(in band) ≥ ``confidence``: the case may be called *frontier*;
* **below / above** when P(below) or P(above) ≥ ``confidence_out`` (asymmetric on purpose:
  an out-of-band stop only costs a missed frontier case, so a policy may stop obvious cases
  sooner than it would ever call a frontier);
* otherwise another round, up to ``k_max`` counted samples (or the failure budget). Then the
  decision is **forced**: it keeps the posterior's leaning but is marked ``forced``, and the
  probe never calls a forced "in band" a frontier case (it is ``unresolved``, leaning in band).

Named policies (:data:`POLICIES`, chosen with ``probing.policy`` or ``--policy``) bundle these
settings; ``benchmarks/sequential_bench.py`` measures each against fixed k = 10 end to end.
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from frontier_qa.errors import ConfigError
from frontier_qa.probing._posterior import (
    AGENT0_LIMITS,
    DEFAULT_PRIOR,
    SCATTER_GRID,
    SHARE_GRID,
    THETA_GRID,
    BandPosterior,
    MajorityPrior,
    band_posterior,
    canonical_counts,
    fit_prior,
)
from frontier_qa.scoring.bands import TOOL_R0_BAND as _TOOL_R0
from frontier_qa.scoring.consistency import Consistency

TOOL_R0_BAND: tuple[float, float] = (_TOOL_R0.low, _TOOL_R0.high)  # Tool-R0 §4: [P_low, P_high]

FAILED = object()
"""Label for a sample whose target call failed (for :func:`tally` and :func:`run_sequential`)."""


class BandDecision(enum.Enum):
    """What to do with a case after a round, or where it stopped relative to the band.

    Named apart from the replay's :class:`~frontier_qa.store._comparison.RegressionVerdict`.
    """

    CONTINUE = "continue"
    IN_BAND = "in_band"
    BELOW = "below"
    ABOVE = "above"

    @classmethod
    def leaning_of(cls, posterior: BandPosterior) -> BandDecision:
        """Where the posterior puts p* most probably, as a verdict (an undecided case's leaning)."""
        return {"in band": cls.IN_BAND, "below": cls.BELOW, "above": cls.ABOVE}[posterior.leaning]


@dataclass(frozen=True)
class SequentialConfig:
    """How the probe samples a case in rounds.

    Attributes:
        band: inclusive (low, high) band on the majority share (Agent0: 0.3, 0.8).
        confidence: stop "in band" when P(in band) reaches this, in (0.5, 1); the only way
            a case becomes frontier.
        confidence_out: stop "below" / "above" when P(below) or P(above) reaches this;
            ``None``: ``confidence``.
        k_min: never stop with fewer counted samples (answered + unparseable).
        k_max: never ask for more counted samples; a case undecided there stops forced.
        rounds: samples per round; the last size repeats ((3, 2): 3 then 2, 2, ...).
        max_failed: stop (forced) once this many calls failed; ``None`` means ``k_max``.
        prior: population prior (:func:`fit_prior` learns one for a target).
        draws: Monte-Carlo draws per posterior (error ≈ 0.5 / sqrt(draws)).
        level: central credible level of the reported intervals.
        seed: seed of the Monte-Carlo streams.
    """

    band: tuple[float, float] = AGENT0_LIMITS
    confidence: float = 0.9
    confidence_out: float | None = 0.8
    k_min: int = 3
    k_max: int = 30
    rounds: tuple[int, ...] = (3, 3)
    max_failed: int | None = None
    prior: MajorityPrior = field(default_factory=lambda: DEFAULT_PRIOR)
    draws: int = 4096
    level: float = 0.9
    seed: int = 0

    def __post_init__(self) -> None:
        lo, hi = self.band
        if not 0.0 <= lo <= hi <= 1.0:
            raise ConfigError(f"band={self.band} must satisfy 0 ≤ low ≤ high ≤ 1", hint=f"Agent0 uses {AGENT0_LIMITS}")
        for name in ("confidence", "confidence_out"):
            value = getattr(self, name)
            if value is not None and not 0.5 < value < 1.0:
                raise ConfigError(f"{name}={value} must be in (0.5, 1)", hint="0.9 is a good start")
        if not 1 <= self.k_min <= self.k_max:
            raise ConfigError(f"need 1 ≤ k_min ≤ k_max, got k_min={self.k_min}, k_max={self.k_max}")
        if not self.rounds or any(r < 1 for r in self.rounds):
            raise ConfigError(f"rounds={self.rounds} must be positive sample counts", hint="e.g. (3, 2)")
        if self.max_failed is not None and self.max_failed < 1:
            raise ConfigError(f"max_failed={self.max_failed} must be ≥ 1 or None (None: k_max)")
        if self.draws < 256 or not 0.0 < self.level < 1.0:
            raise ConfigError(f"need draws ≥ 256 and level in (0, 1), got {self.draws}, {self.level}")

    @property
    def out_confidence(self) -> float:
        return self.confidence if self.confidence_out is None else self.confidence_out

    @classmethod
    def economy(cls, **overrides: Any) -> SequentialConfig:
        """The ``economy`` policy's settings (see :data:`POLICIES`), with overrides."""
        base = POLICIES["economy"].sequential
        assert base is not None
        return replace(base, **overrides)


@dataclass(frozen=True)
class Policy:
    """A named way to sample cases: a sequential configuration, or fixed k (``sequential=None``).

    Attributes:
        name: what ``probing.policy`` / ``--policy`` call it.
        sequential: the rounds, confidences and k_max; ``None``: every case ``k`` times.
        k: samples per case (fixed) or k_max (sequential) unless ``probing.k`` says otherwise.
        summary: one line for ``--help``, the schema and the docs.
    """

    name: str
    sequential: SequentialConfig | None
    k: int
    summary: str


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        # up to 30 samples: an in-band case near an edge needs them to reach 90 %; at k_max = 10 a
        # quarter to half of the cases ended unresolved (the gate's limit is a fifth). Rounds of 3 (issue 33
        # item 4): rounds of 2 then 1 took 0.76 / 1.02 / 1.11x fixed k = 10's calls on the fair mixes
        # (realistic / balanced / frontier-heavy, held-out seeds, benchmarks/sequential_bench.py) against
        # 0.83 / 1.25 / 1.34x, but more looks cross 0.9 by chance more often: frontier precision fell to
        # 0.862 on the realistic mix (0.902 with rounds of 3), below the 0.9 these labels promise
        Policy("calibrated", SequentialConfig(confidence=0.9, confidence_out=0.8, k_min=3, k_max=30, rounds=(3, 3)),
               30, "frontier at 90 % posterior confidence, other classes at 80 %, up to 30 samples (default)"),
        Policy("economy", SequentialConfig(confidence=0.9, confidence_out=0.8, k_min=2, k_max=8, rounds=(2, 1)),
               8, "frontier at 90 %, obvious cases stopped at 80 %, rounds of 2 then 1, up to 8 samples"),
        Policy("thorough", SequentialConfig(confidence=0.9, confidence_out=0.95, k_min=3, k_max=40, rounds=(4, 4)),
               40, "frontier at 90 %, out-of-band at 95 %, up to 40 samples: fewer missed frontier cases, more calls"),
        Policy("fixed", None, 10, "Agent0: every case k = 10 times, frontier when p̂ is in the band (no confidence)"),
    )
}
DEFAULT_POLICY: Final = "calibrated"


def policy(name: str) -> Policy:
    """The named policy; a :class:`ConfigError` listing the names for an unknown one."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ConfigError(f"unknown sampling policy {name!r}", hint=f"choose one of: {', '.join(POLICIES)}") from None


@dataclass(frozen=True)
class Decision:
    """The policy's answer after a round.

    Attributes:
        verdict: continue, or where the case stops (its leaning when ``forced``).
        next_n: samples to request now (0 once stopped).
        k: counted samples so far (answered + unparseable; failed excluded).
        n_failed: failed calls so far (they cost a call, never a vote).
        p_hat: majority share = largest cluster / k (Agent0 Eq. 6); 0 when k = 0.
        interval: Wilson score interval of p_hat at the configured level (contains p_hat).
        posterior: where p* lies relative to the band.
        forced: stopped by k_max or the failure budget without reaching the confidence.
        reason: one line saying why.
    """

    verdict: BandDecision
    next_n: int
    k: int
    n_failed: int
    p_hat: float
    interval: tuple[float, float]
    posterior: BandPosterior
    forced: bool
    reason: str

    @property
    def stopped(self) -> bool:
        return self.verdict is not BandDecision.CONTINUE

    @property
    def in_band(self) -> bool:
        """Stopped in band with the configured confidence (a forced leaning does not count)."""
        return self.verdict is BandDecision.IN_BAND and not self.forced


def wilson_interval(successes: int, n: int, level: float = 0.9) -> tuple[float, float]:
    """Wilson score interval for a binomial share; always contains successes / n.

    Args:
        successes: votes for the majority answer.
        n: counted samples.
        level: two-sided coverage in (0, 1).

    Returns:
        (low, high) in [0, 1]; (0, 1) when n = 0.
    """
    if n <= 0:
        return (0.0, 1.0)
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))


def checkpoint_after(k: int, rounds: Sequence[int], k_max: int, k_min: int = 1) -> int:
    """The next checkpoint above ``k``: r1, r1 + r2, ... (last size repeating), capped at k_max, and
    never below k_min: no case stops before k_min, so a round that ends short of it is a round trip
    for nothing (rounds of 1 with k_min 3 would wait three times for what one batch gives).
    """
    target, i = 0, 0
    while target <= k or target < k_min:
        target += rounds[min(i, len(rounds) - 1)]
        i += 1
    return min(target, k_max)


def decide(
    counts: Iterable[int], n_unparseable: int = 0, n_failed: int = 0, config: SequentialConfig | None = None
) -> Decision:
    """Decide after a round: continue (and with how many samples) or stop.

    Args:
        counts: samples per answer cluster so far (equivalent answers merged; any order).
        n_unparseable: samples with no extractable answer (count in k, never vote).
        n_failed: failed target calls (count in neither; the failure budget caps them).
        config: the policy; defaults to :class:`SequentialConfig` ().

    Returns:
        A :class:`Decision`. Once k ≥ k_min it stops in band when P(in band) ≥ ``confidence``,
        below / above when P(below) / P(above) ≥ ``confidence_out``; at k_max or the failure
        budget it stops ``forced`` with the posterior's leaning.
    """
    c = config or SequentialConfig()
    votes = canonical_counts(counts, n_unparseable)
    if n_failed < 0:
        raise ConfigError(f"n_failed must be ≥ 0, got {n_failed}")
    k = sum(votes) + n_unparseable
    top = votes[0] if votes else 0
    post = band_posterior(votes, n_unparseable, band=c.band, prior=c.prior, draws=c.draws, level=c.level, seed=c.seed)
    max_failed = c.k_max if c.max_failed is None else c.max_failed

    def made(verdict: BandDecision, forced: bool, reason: str) -> Decision:
        next_n = 0 if verdict is not BandDecision.CONTINUE else checkpoint_after(k, c.rounds, c.k_max, c.k_min) - k
        interval = wilson_interval(top, k, c.level)
        return Decision(verdict, next_n, k, n_failed, top / k if k else 0.0, interval, post, forced, reason)

    if k >= c.k_min:
        if post.inside >= c.confidence:
            return made(BandDecision.IN_BAND, False, f"P(in band) = {post.inside:.3f} ≥ {c.confidence}")
        for verdict, p in ((BandDecision.BELOW, post.below), (BandDecision.ABOVE, post.above)):
            if p >= c.out_confidence:
                return made(verdict, False, f"P({verdict.value}) = {p:.3f} ≥ {c.out_confidence}")
    exhausted = "k_max reached" if k >= c.k_max else ("failure budget spent" if n_failed >= max_failed else "")
    if exhausted:
        return made(BandDecision.leaning_of(post), True,
                    f"{exhausted} undecided, leaning {post.leaning}: P(in band) = {post.inside:.3f}")
    return made(BandDecision.CONTINUE, False, f"P(in band) = {post.inside:.3f}, undecided at k = {k}")


def decide_consistency(consistency: Consistency, config: SequentialConfig | None = None) -> Decision:
    """:func:`decide` on a :class:`~frontier_qa.scoring.consistency.Consistency` of the samples so far.

    Failed samples are taken out of k here (they carry no evidence), so ``p_hat`` can differ
    from ``consistency.p_hat``, which divides by all samples.
    """
    return decide([c.size for c in consistency.clusters], consistency.n_unparseable, consistency.n_failed, config)


def tally(labels: Iterable[Hashable | None]) -> tuple[tuple[int, ...], int, int]:
    """Count cluster labels: ``None`` is unparseable, :data:`FAILED` a failed call.

    Returns:
        (cluster sizes largest first, n_unparseable, n_failed).
    """
    votes: Counter[Hashable] = Counter()
    unparseable = failed = 0
    for label in labels:
        if label is FAILED:
            failed += 1
        elif label is None:
            unparseable += 1
        else:
            votes[label] += 1
    return tuple(sorted(votes.values(), reverse=True)), unparseable, failed


def run_sequential(
    sample: Callable[[int], Sequence[Hashable | None]], config: SequentialConfig | None = None
) -> tuple[Decision, list[Hashable | None]]:
    """Drive one case to a stop with a synchronous sampler (simulations, scripts).

    Args:
        sample: called with n, returns n labels (answer cluster ids, ``None`` for
            unparseable, :data:`FAILED` for a failed call).
        config: the policy.

    Returns:
        (the stopping decision, every label drawn in order).
    """
    config = config or SequentialConfig()
    labels: list[Hashable | None] = []
    decision = decide((), 0, 0, config)
    while not decision.stopped:
        got = list(sample(decision.next_n))
        if len(got) != decision.next_n:
            raise ConfigError(f"sampler returned {len(got)} labels for a request of {decision.next_n}")
        labels.extend(got)
        decision = decide(*tally(labels), config=config)
    return decision, labels


__all__ = [
    "AGENT0_LIMITS",
    "DEFAULT_POLICY",
    "DEFAULT_PRIOR",
    "FAILED",
    "POLICIES",
    "SCATTER_GRID",
    "SHARE_GRID",
    "THETA_GRID",
    "TOOL_R0_BAND",
    "BandPosterior",
    "Decision",
    "MajorityPrior",
    "Policy",
    "BandDecision",
    "SequentialConfig",
    "band_posterior",
    "checkpoint_after",
    "decide",
    "decide_consistency",
    "fit_prior",
    "policy",
    "run_sequential",
    "tally",
    "wilson_interval",
]

