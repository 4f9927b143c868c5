"""Two binomial samples compared: did the rate drop? Exact tests, a posterior, alpha spending.

A replay holds a case's *baseline* samples (what the agent did when a person accepted it)
against fresh samples of the agent now. Each sample either gives the anchor answer (the
verified reference, or the baseline's majority) or it does not, so each side is a count of
successes out of n, and the question is whether the new rate is lower.

* :func:`fisher_less` / :func:`fisher_greater`: one-sided Fisher exact tests. Conditional on
  the total number of successes, the baseline's count is hypergeometric when both sides
  share one rate, so the p-value is exact for any sample sizes (conservative: discrete).
* :func:`drop_probability`: the posterior probability that the rate dropped by at least
  ``delta``, with independent Jeffreys priors Beta(1/2, 1/2). Used only to *stop early as
  "same"* (futility), which can never raise the false-regression rate.
* :func:`spend`: a per-case level split over sequential looks (Bonferroni over looks).

Pure functions of counts; no I/O. ``docs/method.md`` (§9) states the decision built on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

JEFFREYS = 0.5
"""Pseudo-count of each outcome in the Beta prior of :func:`drop_probability`."""


def _check(successes: int, n: int, side: str) -> None:
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"{side}: need 0 <= successes <= n, got {successes} of {n}")


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


@lru_cache(maxsize=65536)
def _upper_tail(s1: int, n1: int, s2: int, n2: int) -> float:
    """P(X >= s1) for X ~ Hypergeom(population n1 + n2, successes s1 + s2, draws n1)."""
    total, draws = s1 + s2, n1
    population = n1 + n2
    top = min(total, draws)
    if s1 <= max(0, draws - (population - total)):
        return 1.0
    logs = [
        _log_choose(total, x) + _log_choose(population - total, draws - x) - _log_choose(population, draws)
        for x in range(s1, top + 1)
    ]
    peak = max(logs)
    return min(1.0, math.exp(peak) * sum(math.exp(v - peak) for v in logs))


def fisher_less(s1: int, n1: int, s2: int, n2: int) -> float:
    """One-sided Fisher exact p-value that the second rate is *lower* than the first.

    Args:
        s1: successes of the first sample (the baseline), out of ``n1``.
        n1: size of the first sample.
        s2: successes of the second sample (now), out of ``n2``.
        n2: size of the second sample.

    Returns:
        P(baseline count ≥ s1 | both totals, equal rates), in (0, 1]; 1.0 when a side is empty.
    """
    _check(s1, n1, "first sample")
    _check(s2, n2, "second sample")
    if n1 == 0 or n2 == 0:
        return 1.0
    return _upper_tail(s1, n1, s2, n2)


def fisher_greater(s1: int, n1: int, s2: int, n2: int) -> float:
    """One-sided Fisher exact p-value that the second rate is *higher* than the first."""
    return fisher_less(n1 - s1, n1, n2 - s2, n2)


@lru_cache(maxsize=16384)
def drop_probability(s1: int, n1: int, s2: int, n2: int, delta: float, prior: float = JEFFREYS) -> float:
    """Posterior P(rate1 − rate2 ≥ delta) with independent Beta(prior, prior) priors.

    Args:
        s1: successes of the first sample (the baseline), out of ``n1``.
        n1: size of the first sample.
        s2: successes of the second sample (now), out of ``n2``.
        n2: size of the second sample.
        delta: the drop in rate that matters, in [0, 1].
        prior: pseudo-count of each outcome (0.5: Jeffreys).

    Returns:
        The probability in [0, 1] (numerical integration on a 2,000-point grid, error < 1e-4).
    """
    _check(s1, n1, "first sample")
    _check(s2, n2, "second sample")
    import numpy as np
    from scipy.special import betainc  # scipy.special costs about 0.4 s to import

    grid = (np.arange(2000) + 0.5) / 2000
    a1, b1 = s1 + prior, n1 - s1 + prior
    a2, b2 = s2 + prior, n2 - s2 + prior
    # density of rate1 on the grid (log form: counts up to hundreds overflow the plain one)
    log_pdf = (a1 - 1) * np.log(grid) + (b1 - 1) * np.log1p(-grid)
    weights = np.exp(log_pdf - log_pdf.max())
    weights /= weights.sum()
    below = betainc(a2, b2, np.clip(grid - delta, 0.0, 1.0))  # P(rate2 <= rate1 - delta)
    return float(np.clip(weights @ below, 0.0, 1.0))


def spend(alpha: float, looks: Sequence[int]) -> tuple[float, ...]:
    """Split a level over sequential looks, in proportion to each look's sample count.

    Bonferroni over looks: the chance of *any* false rejection is at most the sum, ``alpha``,
    whatever the looks' tests have in common. Later looks (more samples) get more of it.

    Args:
        alpha: the level to split, in (0, 1).
        looks: the sample counts of the looks, increasing.

    Returns:
        The level of each look; they sum to ``alpha``.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not increasing_counts(looks):
        raise ValueError(f"looks must be increasing sample counts >= 1, got {list(looks)}")
    total = sum(looks)
    return tuple(alpha * n / total for n in looks)


def increasing_counts(looks: Sequence[int]) -> bool:
    """Whether ``looks`` are sample counts a sequential test can look at: ≥ 1, strictly increasing."""
    return bool(looks) and all(n >= 1 for n in looks) and list(looks) == sorted(set(looks))


__all__ = ["JEFFREYS", "drop_probability", "fisher_greater", "fisher_less", "increasing_counts", "spend"]
