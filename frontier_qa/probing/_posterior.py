"""Where a case's true majority probability lies relative to the band: the posterior.

What is estimated. Each case has a true answer distribution; its *true majority probability*
p* is the largest probability any one (merged) answer has per sample, where unparseable
samples are part of the denominator and never an answer. Agent0 keeps a task when the
majority share p̂ of k samples lies in the band 0.3 ≤ p̂ ≤ 0.8 (Eq. 6–7); here the question
is whether p* does. p̂ errs by sampling noise, and over-states p* when answers are spread
over several similar wrong options (the largest of several small counts is biased upwards),
so every decision is made on the posterior of p*, never on p̂.

Evidence model. p̂ is a statistic of a categorical distribution whose categories (answer
clusters) are not known in advance. Per case:

* answers follow π = V·δ(dominant answer) + (1 − V)·G: one answer has per-sample
  probability V, the others come from G, the *rest model*. A rest model is either
  - a Dirichlet process DP(θ): few stray answers (small θ) or many (large θ), in the
    proportions the data show (Chinese-restaurant / Ewens likelihood); or
  - a symmetric Dirichlet(α) over m answers ("scatter"): m answers of similar size. This
    is what an agent that guesses among a handful of plausible numbers looks like, and the
    DP cannot express it: seeing (5, 3, 2, 2) from such a case, a DP reads the 5 as a real
    leader, the scatter model shrinks the counts towards equal shares. On the scattered
    mixes of ``benchmarks/calibration_bench.py``, the DP alone was over-confident about the
    band (stops at P(in band) of 0.68 on average were in band 59 % of the time, those at 0.37
    28 %); with the scatter model 64 % and 32 % (``--no-scatter`` repeats the DP-only run).
* the likelihood sums over which seen cluster is the dominant answer (or none yet). Given
  that, the others' weights are Dir(counts + pseudo-counts) (0 for the DP, α for scatter),
  the unseen part split by GEM(θ) or over the m − K unseen answers; R is the largest of them
  and M = max(V, (1 − V)·R).
* a sample is unparseable with probability u ~ Beta(a_u, b_u); p* = (1 − u)·M. The default
  Beta(0.05, 1) is U-shaped: most cases never fail to parse, some always do.
* (V, rest model) has a discrete prior on a grid (:class:`MajorityPrior`): the population of
  this target's cases. The default is uninformed (Jeffreys on V, uniform over rest models);
  :func:`fit_prior` learns it from the target's earlier cases (empirical Bayes). Data
  gathered under a sequential stopping rule may be used: the rule depends only on observed
  counts, so it drops out of the likelihood (likelihood principle).

Calibration follows from the model: if the prior is the population and the model fits, the
cases stopped with P(in band) ≥ c are in band at least a share c of the time, however the
stopping was decided. Both conditions are approximate, so the claim is measured
(``benchmarks/calibration_bench.py``), not assumed.

The posterior depends only on the multiset of cluster sizes and the unparseable count (the
same whatever order answers arrived in). The (V, rest model, dominant) posterior is exact on
the grid; R is Monte-Carlo with fixed seeds (each cluster rank has its own prefix-stable
streams, so one more vote adds one exponential to one gamma in every draw); u is integrated
exactly. Results are deterministic and cached per state.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from frontier_qa.errors import ConfigError
from frontier_qa.scoring.bands import AGENT0_BAND

AGENT0_LIMITS: tuple[float, float] = (AGENT0_BAND.low, AGENT0_BAND.high)
"""Agent0's band (:data:`frontier_qa.scoring.bands.AGENT0_BAND`) as the (low, high) pair the posterior takes."""
_STICKS = 48  # stick-breaking pieces drawn for the unseen rest (θ ≤ 30: the largest comes early)
_BINS = 2000  # resolution of the Monte-Carlo share histograms
_IMPOSSIBLE = -1e6  # log-likelihood of more seen answers than a scatter model has
# V at cell midpoints (no point on a two-decimal band edge), plus one for "almost always".
SHARE_GRID = tuple(round(0.005 + 0.01 * i, 3) for i in range(100)) + (0.999,)
THETA_GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
SCATTER_GRID = ((1.0, 4), (1.0, 8), (1.0, 16), (3.0, 4), (3.0, 8), (3.0, 16))


@dataclass(frozen=True)
class MajorityPrior:
    """Population prior over a target's cases (see the module docstring for the model).

    Attributes:
        shares: grid of V, the dominant answer's per-sample probability, ascending in (0, 1).
        thetas: DP rest models: concentration θ of the other answers (small: few, large: many).
        weights: prior probability of each (V, rest model) pair, V-major over the
            ``columns`` rest models (the DP ones, then the scatter ones).
        unparseable: (a_u, b_u) of the Beta prior on a sample's unparseable probability u.
        scatter: scatter rest models (α, m): symmetric Dirichlet(α) over m other answers.
    """

    shares: tuple[float, ...]
    thetas: tuple[float, ...]
    weights: tuple[float, ...]
    unparseable: tuple[float, float] = (0.05, 1.0)
    scatter: tuple[tuple[float, int], ...] = ()

    @property
    def columns(self) -> int:
        """Rest models on the grid: the DP ones, then the scatter ones."""
        return len(self.thetas) + len(self.scatter)

    def __post_init__(self) -> None:
        if not self.shares or not self.columns or len(self.weights) != len(self.shares) * self.columns:
            raise ConfigError("MajorityPrior needs len(shares) * (len(thetas) + len(scatter)) weights (V-major)")
        if not all(0.0 < v < 1.0 for v in self.shares) or any(t <= 0 for t in self.thetas):
            raise ConfigError("MajorityPrior shares must lie in (0, 1) and thetas be > 0")
        if any(a <= 0 or int(m) != m or m < 1 for a, m in self.scatter):
            raise ConfigError("MajorityPrior scatter models need α > 0 and a whole number m ≥ 1 of answers")
        if any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
            raise ConfigError("MajorityPrior weights must be ≥ 0 and not all 0")
        if min(self.unparseable) <= 0:
            raise ConfigError(f"unparseable Beta parameters must be > 0, got {self.unparseable}")

    @classmethod
    def jeffreys(
        cls,
        shares: Sequence[float] = SHARE_GRID,
        thetas: Sequence[float] = THETA_GRID,
        scatter: Sequence[tuple[float, int]] = SCATTER_GRID,
    ) -> MajorityPrior:
        """Uninformed start: V ~ Beta(1/2, 1/2) (Jeffreys), the rest models equally likely.

        :func:`fit_prior` on a target's earlier cases replaces it.
        """
        v = np.asarray(shares, dtype=float)
        cuts = np.concatenate([[0.0], (v[1:] + v[:-1]) / 2, [1.0]])
        # Beta(1/2, 1/2) mass of each grid cell: its CDF is (2/π)·asin(√x).
        mass = np.diff(2 / np.pi * np.arcsin(np.sqrt(cuts)))
        columns = len(thetas) + len(scatter)
        w = np.repeat(mass / mass.sum(), columns) / columns
        return cls(tuple(float(x) for x in v), tuple(float(t) for t in thetas), tuple(float(x) for x in w),
                   scatter=tuple((float(a), int(m)) for a, m in scatter))

    def table(self) -> np.ndarray:
        """Weights as an array of shape (len(shares), columns), summing to 1."""
        w = np.asarray(self.weights, dtype=float).reshape(len(self.shares), self.columns)
        table: np.ndarray = w / w.sum()
        return table

    def to_json(self) -> dict[str, object]:
        """A plain mapping (JSON-ready) that :meth:`from_json` reads back."""
        return {"shares": list(self.shares), "thetas": list(self.thetas), "scatter": [list(s) for s in self.scatter],
                "weights": list(self.weights), "unparseable": list(self.unparseable)}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> MajorityPrior:
        """Inverse of :meth:`to_json`; a clear error when the mapping is not one."""
        try:
            return cls(tuple(float(x) for x in data["shares"]), tuple(float(x) for x in data["thetas"]),  # type: ignore[attr-defined]
                       tuple(float(x) for x in data["weights"]),  # type: ignore[attr-defined]
                       tuple(float(x) for x in data["unparseable"]),  # type: ignore[arg-type, attr-defined]
                       tuple((float(a), int(m)) for a, m in data.get("scatter", ())))  # type: ignore[attr-defined]
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"not a MajorityPrior: {err!r}",
                              hint="write it with MajorityPrior.to_json() "
                                   "(keys shares, thetas, scatter, weights, unparseable)") from None


DEFAULT_PRIOR = MajorityPrior.jeffreys()


@dataclass(frozen=True)
class BandPosterior:
    """Posterior of the true majority probability p* relative to the band.

    Attributes:
        below, inside, above: P(p* < low), P(low ≤ p* ≤ high), P(p* > high); sum 1.
        mean: posterior mean of p*.
        credible: central credible interval of p* at ``level``.
        level: the interval's credible level.
    """

    below: float
    inside: float
    above: float
    mean: float
    credible: tuple[float, float]
    level: float = 0.9

    @property
    def outside(self) -> float:
        return self.below + self.above

    @property
    def leaning(self) -> str:
        """The most probable place of p*: ``"below"``, ``"in band"`` or ``"above"``."""
        return max((self.inside, "in band"), (self.below, "below"), (self.above, "above"))[1]

    def describe(self, band: tuple[float, float]) -> str:
        """One line for reason texts: the three probabilities and the interval of p*."""
        lo, hi = band
        return (f"P(below, in, above the band [{lo:.2f}, {hi:.2f}]) = {self.below:.2f}, {self.inside:.2f}, "
                f"{self.above:.2f}; p* {self.level:.0%} interval [{self.credible[0]:.2f}, {self.credible[1]:.2f}]")


# --- likelihood ------------------------------------------------------------------------------


def _rest_terms(rest: Sequence[int], prior: MajorityPrior) -> np.ndarray:
    """Log P(the others' answer sequence | rest model), one per column, up to ∏ Γ(n_j)."""
    k, n = len(rest), sum(rest)
    th = np.asarray(prior.thetas)
    dp = k * np.log(th) + np.array([math.lgamma(t) - math.lgamma(t + n) for t in th])
    scatter = []
    for a, m in prior.scatter:
        if k > m:
            scatter.append(_IMPOSSIBLE)
            continue
        # m!/(m − k)! ways to name the seen answers, then the Dirichlet-multinomial sequence
        # probability Γ(mα)/Γ(mα + n) ∏ Γ(n_j + α)/Γ(α), relative to the DP's dropped ∏ Γ(n_j).
        scatter.append(math.lgamma(m + 1) - math.lgamma(m - k + 1) + math.lgamma(m * a) - math.lgamma(m * a + n)
                       + sum(math.lgamma(c + a) - math.lgamma(a) - math.lgamma(c) for c in rest))
    return np.concatenate([dp, np.asarray(scatter, dtype=float)])


def _likelihood(counts: tuple[int, ...], prior: MajorityPrior) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Who the dominant answer is, and log P(answers | V, rest model, that choice).

    Returns:
        (groups, terms): ``groups[g]`` are the other answers' cluster sizes when the dominant
        answer is a cluster of the g-th distinct size (the last group: not seen yet);
        ``terms[g, i, c]`` = log P(answer sequence | V_i, rest model c, g), dropping ∏ Γ(n_j)
        over all clusters, which no parameter touches.
    """
    n = sum(counts)
    v = np.asarray(prior.shares)
    log_v, log_1v = np.log(v), np.log1p(-v)
    groups, terms = [], []
    for size, mult in sorted(Counter(counts).items(), reverse=True):
        rest = list(counts)
        rest.remove(size)
        others = _rest_terms(rest, prior) - math.lgamma(size)
        terms.append(math.log(mult) + (size * log_v + (n - size) * log_1v)[:, None] + others[None, :])
        groups.append(tuple(rest))
    terms.append((n * log_1v)[:, None] + _rest_terms(counts, prior)[None, :])
    groups.append(tuple(counts))
    return groups, np.stack(terms)


# --- the largest share among the others (Monte Carlo) -------------------------------------------


def _stream(seed: int, tag: int, index: int, rows: int, draws: int) -> np.ndarray:
    # Rows are drawn one block of `draws` at a time, so row r is the same for any `rows` > r.
    if rows == 0:
        return np.zeros((0, draws))
    return np.random.default_rng([seed, tag, index]).standard_exponential((rows, draws))


@lru_cache(maxsize=16)
def _unseen_dp(thetas: tuple[float, ...], draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per θ: Gamma(θ) mass of the not-yet-seen answers, and their largest GEM(θ) piece."""
    rng = np.random.default_rng([seed, 1])
    th = np.asarray(thetas)[:, None]
    mass = rng.gamma(np.broadcast_to(th, (len(thetas), draws)))
    # GEM(θ) sticks V ~ Beta(1, θ) = 1 − U^{1/θ}; a piece is V_i ∏_{l<i} (1 − V_l).
    sticks = 1.0 - rng.random((_STICKS, len(thetas), draws)) ** (1.0 / th)
    left = np.concatenate([np.ones((1, len(thetas), draws)), np.cumprod(1.0 - sticks, axis=0)[:-1]])
    return mass, (sticks * left).max(axis=0)


@lru_cache(maxsize=64)
def _unseen_scatter(alpha: float, m: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """For k = 0..m seen answers: total and largest Gamma(α) weight of the m − k unseen ones."""
    g = np.random.default_rng([seed, 3, round(alpha * 1000), m]).gamma(alpha, size=(m, draws))
    total = np.concatenate([np.cumsum(g[::-1], axis=0)[::-1], np.zeros((1, draws))])
    largest = np.concatenate([np.maximum.accumulate(g[::-1], axis=0)[::-1], np.zeros((1, draws))])
    return total, largest


@lru_cache(maxsize=256)
def _pseudo(alpha: float, rank: int, draws: int, seed: int) -> np.ndarray:
    """The Gamma(α) pseudo-count weight of the seen cluster of this rank (a fixed stream)."""
    return np.random.default_rng([seed, 4, round(alpha * 1000), rank]).gamma(alpha, size=draws)


def _histogram(values: np.ndarray, draws: int) -> np.ndarray:
    idx = np.minimum((values * _BINS).astype(int), _BINS - 1)
    return np.bincount(idx, minlength=_BINS) / draws


def _rest_histogram(rest: tuple[int, ...], prior: MajorityPrior, draws: int, seed: int) -> np.ndarray:
    """Histogram (rest model × bins) of R, the largest share among the non-dominant answers."""
    gam = np.array([_stream(seed, 2, j, c, draws).sum(axis=0) for j, c in enumerate(rest)]).reshape(len(rest), draws)
    mass, largest = _unseen_dp(prior.thetas, draws, seed)
    r = np.maximum(gam.max(axis=0, initial=0.0), mass * largest) / (gam.sum(axis=0) + mass)
    rows = [_histogram(row, draws) for row in r]
    k = len(rest)
    for a, m in prior.scatter:
        if k > m:
            rows.append(np.eye(1, _BINS, 0)[0])  # impossible model: its weight is 0 anyway
            continue
        seen = gam + np.array([_pseudo(a, j, draws, seed) for j in range(k)]).reshape(k, draws)
        total, top = _unseen_scatter(a, m, draws, seed)
        share = np.maximum(seen.max(axis=0, initial=0.0), top[k]) / (seen.sum(axis=0) + total[k])
        rows.append(_histogram(share, draws))
    return np.stack(rows)


@lru_cache(maxsize=8192)
def _posterior_cached(
    counts: tuple[int, ...],
    n_unparseable: int,
    band: tuple[float, float],
    prior: MajorityPrior,
    draws: int,
    level: float,
    seed: int,
) -> BandPosterior:
    from scipy.special import betainc, betaincinv  # scipy.special costs ≈ 0.4 s to import

    groups, terms = _likelihood(counts, prior)
    with np.errstate(divide="ignore"):
        logw = np.log(prior.table())[None] + terms
    w = np.exp(logw - logw.max())
    w /= w.sum()  # posterior over (dominant group, V_i, rest model c)
    v = np.asarray(prior.shares)
    big = v >= 0.5  # then the others' total 1 − V < V and the majority share is V itself
    values, masses = [v[big]], [w[:, big, :].sum(axis=(0, 2))]
    small = ~big
    if small.any():
        hist = np.stack([_rest_histogram(g, prior, draws, seed) for g in groups])  # (G, C, bins)
        h = np.einsum("gic,gcb->ib", w[:, small, :], hist)
        r = (np.arange(_BINS) + 0.5) / _BINS
        vs = v[small][:, None]
        other = (1.0 - vs) * r[None, :]
        at_v = other <= vs  # majority share exactly V: keep the atom exact (band edges)
        values.append(v[small])
        masses.append((h * at_v).sum(axis=1))
        idx = np.minimum((other[~at_v] * _BINS).astype(int), _BINS - 1)
        binned = np.bincount(idx, weights=h[~at_v], minlength=_BINS)
        values.append(r[binned > 0])
        masses.append(binned[binned > 0])
    m_val, m_w = np.concatenate(values), np.concatenate(masses)
    m_w = m_w / m_w.sum()  # posterior of M, the top answer's share among answers
    # p* = (1 − u)·M with u ~ Beta(a', b') independent: P(p* < lo) = P(u > 1 − lo/M).
    a_u, b_u = prior.unparseable[0] + n_unparseable, prior.unparseable[1] + sum(counts)
    lo, hi = band
    below = float(m_w @ (1.0 - betainc(a_u, b_u, np.clip(1.0 - lo / m_val, 0.0, 1.0))))
    above = float(m_w @ betainc(a_u, b_u, np.clip(1.0 - hi / m_val, 0.0, 1.0)))
    # Credible interval from a 64 × 64 grid of quantiles of M and of u.
    levels = (np.arange(64) + 0.5) / 64
    order = np.argsort(m_val)
    m_q = m_val[order][np.minimum(np.searchsorted(np.cumsum(m_w[order]), levels), len(m_val) - 1)]
    p_grid = np.outer(m_q, 1.0 - betaincinv(a_u, b_u, levels)).ravel()
    tail = (1.0 - level) / 2
    return BandPosterior(
        below=below,
        inside=max(0.0, 1.0 - below - above),
        above=above,
        mean=float(m_w @ m_val) * b_u / (a_u + b_u),
        credible=(float(np.quantile(p_grid, tail)), float(np.quantile(p_grid, 1.0 - tail))),
        level=level,
    )


def canonical_counts(counts: Iterable[int], n_unparseable: int) -> tuple[int, ...]:
    """Cluster sizes largest first, zeros dropped; a clear error for negative counts."""
    out = tuple(sorted((int(c) for c in counts), reverse=True))
    if any(c < 0 for c in out) or n_unparseable < 0:
        raise ConfigError(f"vote counts must be ≥ 0, got counts={out}, n_unparseable={n_unparseable}")
    return tuple(c for c in out if c > 0)


def band_posterior(
    counts: Iterable[int],
    n_unparseable: int = 0,
    *,
    band: tuple[float, float] = AGENT0_LIMITS,
    prior: MajorityPrior = DEFAULT_PRIOR,
    draws: int = 4096,
    level: float = 0.9,
    seed: int = 0,
) -> BandPosterior:
    """P(true majority probability below / in / above the band | votes so far).

    Args:
        counts: samples per answer cluster (any order; zeros ignored).
        n_unparseable: samples that yielded no answer (counted, never a vote).
        band: inclusive (low, high) band on the majority share.
        prior: population prior over cases (see :func:`fit_prior`).
        draws: Monte-Carlo draws (error of each probability ≈ 0.5 / sqrt(draws)).
        level: credible level of the reported interval.
        seed: Monte-Carlo seed; the result is a pure function of all arguments.
    """
    votes = canonical_counts(counts, n_unparseable)
    return _posterior_cached(votes, int(n_unparseable), tuple(band), prior, draws, level, seed)


# --- empirical Bayes ---------------------------------------------------------------------------


def fit_prior(
    observations: Iterable[tuple[Sequence[int], int]],
    *,
    start: MajorityPrior | None = None,
    iterations: int = 100,
    smoothing: float = 10.0,
) -> MajorityPrior:
    """Learn a target's population prior from its earlier cases (empirical Bayes).

    The (V, rest model) weights are the maximum-likelihood mixture on the grid (EM), shrunk
    towards ``start`` by ``smoothing`` pseudo-cases: with few cases the prior moves only a
    little (one pseudo-case let five cases decide it, and the labels of a run's first cases
    were then over-confident); the unparseable Beta is the beta-binomial maximum likelihood
    on a coarse grid. Cases stopped early by a sequential rule are valid input.

    Args:
        observations: (cluster sizes, n_unparseable) per earlier case.
        start: the grid and the prior to shrink towards; :data:`DEFAULT_PRIOR` by default.
        iterations: EM steps.
        smoothing: weight of ``start``, in cases.

    Returns:
        A :class:`MajorityPrior` on the same grid as ``start`` (``start`` when no case is given).
    """
    start = start or DEFAULT_PRIOR
    obs = [(canonical_counts(c, u), int(u)) for c, u in observations]
    if not obs:
        return start
    base = start.table().ravel()
    times, lik = _pattern_likelihoods([counts for counts, _ in obs], start)
    w = base.copy()
    for _ in range(iterations):
        resp = lik * w
        resp /= resp.sum(axis=1, keepdims=True)
        w = (times @ resp + smoothing * base) / (len(obs) + smoothing)
    return MajorityPrior(start.shares, start.thetas, tuple(float(x) for x in w), _fit_unparseable(obs),
                         scatter=start.scatter)


def _pattern_likelihoods(counts: Sequence[tuple[int, ...]], prior: MajorityPrior) -> tuple[np.ndarray, np.ndarray]:
    """How often each distinct cluster pattern occurs, and its likelihood on the grid (rows scaled to max 1).

    A store repeats cluster patterns ((30,), (3,) ...): each distinct one is computed once and
    weighted by how often it occurs (an EM over them is the same sum, grouped).
    """
    seen = Counter(counts)
    patterns = list(seen)
    cells = len(prior.shares) * prior.columns
    loglik = np.empty((len(patterns), cells))
    for row, pattern in enumerate(patterns):
        terms = _likelihood(pattern, prior)[1].reshape(-1, cells)
        top = terms.max(axis=0)
        loglik[row] = top + np.log(np.exp(terms - top).sum(axis=0))
    times = np.array([seen[pattern] for pattern in patterns], dtype=float)
    return times, np.exp(loglik - loglik.max(axis=1, keepdims=True))


def share_regions(observations: Iterable[tuple[Sequence[int], int]], prior: MajorityPrior,
                  band: tuple[float, float] = AGENT0_LIMITS) -> np.ndarray:
    """Posterior mass of the dominant share V below, inside and above ``band``, summed over the cases.

    A cheap summary of where a group of cases lies under ``prior``: what a test of "this topic's
    cases lie elsewhere than the target's" compares (:mod:`frontier_qa.probing._priors`).
    """
    obs = [canonical_counts(c, u) for c, u in observations]
    if not obs:
        return np.zeros(3)
    times, lik = _pattern_likelihoods(obs, prior)
    resp = lik * prior.table().ravel()
    resp /= resp.sum(axis=1, keepdims=True)
    by_share = (times @ resp).reshape(len(prior.shares), prior.columns).sum(axis=1)
    v = np.asarray(prior.shares)
    regions = np.array([by_share[v < band[0]].sum(), by_share[(v >= band[0]) & (v <= band[1])].sum(),
                        by_share[v > band[1]].sum()])
    return regions


def _fit_unparseable(obs: list[tuple[tuple[int, ...], int]]) -> tuple[float, float]:
    # Beta-binomial likelihood of each case's unparseable count; the binomial coefficient is
    # constant in (a, b) and dropped.
    pairs = [(u, sum(c)) for c, u in obs]
    best, best_ll = DEFAULT_PRIOR.unparseable, -math.inf
    for mean in (0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5):
        for strength in (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0):
            a, b = mean * strength, (1 - mean) * strength
            ll = sum(math.lgamma(a + u) + math.lgamma(b + n) - math.lgamma(a + b + u + n) for u, n in pairs)
            ll -= len(pairs) * (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
            if ll > best_ll:
                best, best_ll = (a, b), ll
    return best


__all__ = [
    "AGENT0_LIMITS",
    "DEFAULT_PRIOR",
    "SCATTER_GRID",
    "SHARE_GRID",
    "THETA_GRID",
    "BandPosterior",
    "MajorityPrior",
    "band_posterior",
    "canonical_counts",
    "fit_prior",
    "share_regions",
]
