"""Sequential sampling: stop sampling a case as soon as its band membership is decided.

Agent0 samples the executor k = 10 times per task and keeps the task when the majority
share p̂ (Agent0 Eq. 6) lies in the band 0.3 ≤ p̂ ≤ 0.8 (Eq. 7, δ = 0.25). Against a paid API
target most of those calls are wasted: three identical answers already say "too easy".
Here the probe samples in rounds and asks, after each round, how sure it is of the band.

What is decided. Each case has a true answer distribution; its *true majority probability*
p* is the largest probability any one (merged) answer has per sample, where unparseable
samples are part of the denominator and never an answer. The estimand is whether p* lies in
the band. A fixed-k run classifies by the empirical p̂ instead, which errs by sampling noise
(and p̂ over-states p* when answers are spread over many wrong options, since the largest of
several small counts is biased upwards), so accuracy is judged against p*, never against
what one fixed-k run happened to measure.

Evidence model (why this one). p̂ is a statistic of a categorical distribution whose
categories (answer clusters) are not known in advance, so a Beta on "agrees with the current
majority" is wrong twice over: which answer leads can change between rounds, and picking the
largest count and then treating it as binomial ignores that selection. Instead, per case:

* answers follow π = V·δ(dominant answer) + (1 − V)·DP(θ): one answer has per-sample
  probability V, the others come from a Dirichlet process (small θ: a few stray answers,
  large θ: scattered). A plain DP would tie "one answer dominates" to "few distinct
  answers", so one stray wrong answer among nine agreeing ones would drag P(above) down.
* the likelihood sums over which seen cluster is the dominant answer (or none yet):
  V^{n_d} (1 − V)^{n − n_d} times the Ewens (Chinese-restaurant) probability of the
  others. Given that, the others' weights are Dir(their counts, θ), the unseen part split
  by stick-breaking GEM(θ); R is the largest of them and M = max(V, (1 − V)·R).
* a sample is unparseable with probability u ~ Beta(a_u, b_u); p* = (1 − u)·M. The default
  Beta(0.05, 1) is U-shaped: most cases never fail to parse, some always do, so a few clean
  samples make u ≈ 0 quickly and six unparseable ones in six make it ≈ 1 (a stronger prior,
  Beta(0.1, 10), once called such a case "in band").
* (V, θ) has a discrete prior on a grid (:class:`MajorityPrior`): the population of this
  target's cases. The default is uninformed (Jeffreys on V); :func:`fit_prior` learns it
  from the target's earlier cases (empirical Bayes), and data gathered under this stopping
  rule may be used: the rule depends only on observed counts, so it drops out of the
  likelihood (likelihood principle). ``benchmarks/sequential_bench.py`` shows the savings
  come from that learned prior.

The posterior depends only on the multiset of cluster sizes and the unparseable count, so
it is the same whatever order answers arrived in and whichever answer leads now. The (V, θ,
dominant) posterior is exact on the grid; R is Monte-Carlo with fixed seeds (each cluster
rank has its own prefix-stable exponential stream, so one more vote adds one exponential to
one gamma in every draw); u is integrated exactly. Results are deterministic, cached per state.
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from frontier_qa.errors import ConfigError
from frontier_qa.scoring.consistency import Consistency

AGENT0_BAND = (0.3, 0.8)  # Agent0 §4: δ = 0.25 around 0.5, both ends inclusive
TOOL_R0_BAND = (0.25, 0.75)  # Tool-R0 §4: [P_low, P_high]
_STICKS = 48  # stick-breaking pieces drawn for the unseen rest (θ ≤ 30: the largest comes early)
_BINS = 2000  # resolution of the Monte-Carlo share histograms
# V at cell midpoints (no point on a two-decimal band edge), plus one for "almost always".
SHARE_GRID = tuple(round(0.005 + 0.01 * i, 3) for i in range(100)) + (0.999,)
THETA_GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)

FAILED = object()
"""Label for a sample whose target call failed (for :func:`tally` and :func:`run_sequential`)."""


class Verdict(enum.Enum):
    """What to do with a case after a round."""

    CONTINUE = "continue"
    IN_BAND = "in_band"
    BELOW = "below"
    ABOVE = "above"


@dataclass(frozen=True)
class MajorityPrior:
    """Population prior over a target's cases (see the module docstring for the model).

    Attributes:
        shares: grid of V, the dominant answer's per-sample probability, ascending in (0, 1).
        thetas: grid of θ, the concentration of the other answers (small: few, large: scattered).
        weights: prior probability of each (V, θ) pair, V-major: ``weights[i * len(thetas) + t]``.
        unparseable: (a_u, b_u) of the Beta prior on a sample's unparseable probability u.
    """

    shares: tuple[float, ...]
    thetas: tuple[float, ...]
    weights: tuple[float, ...]
    unparseable: tuple[float, float] = (0.05, 1.0)

    def __post_init__(self) -> None:
        if not self.shares or not self.thetas or len(self.weights) != len(self.shares) * len(self.thetas):
            raise ConfigError("MajorityPrior needs len(shares) * len(thetas) weights (V-major)")
        if not all(0.0 < v < 1.0 for v in self.shares) or any(t <= 0 for t in self.thetas):
            raise ConfigError("MajorityPrior shares must lie in (0, 1) and thetas be > 0")
        if any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
            raise ConfigError("MajorityPrior weights must be ≥ 0 and not all 0")
        if min(self.unparseable) <= 0:
            raise ConfigError(f"unparseable Beta parameters must be > 0, got {self.unparseable}")

    @classmethod
    def jeffreys(cls, shares: Sequence[float] = SHARE_GRID, thetas: Sequence[float] = THETA_GRID) -> MajorityPrior:
        """Uninformed start: V ~ Beta(1/2, 1/2) (Jeffreys), θ uniform on its log grid.

        Use :func:`fit_prior` on a target's first few dozen cases to replace it.
        """
        v = np.asarray(shares, dtype=float)
        cuts = np.concatenate([[0.0], (v[1:] + v[:-1]) / 2, [1.0]])
        # Beta(1/2, 1/2) mass of each grid cell: its CDF is (2/π)·asin(√x).
        mass = np.diff(2 / np.pi * np.arcsin(np.sqrt(cuts)))
        w = np.repeat(mass / mass.sum(), len(thetas)) / len(thetas)
        return cls(tuple(float(x) for x in v), tuple(float(t) for t in thetas), tuple(float(x) for x in w))

    def table(self) -> np.ndarray:
        """Weights as an array of shape (len(shares), len(thetas)), summing to 1."""
        w = np.asarray(self.weights, dtype=float).reshape(len(self.shares), len(self.thetas))
        table: np.ndarray = w / w.sum()
        return table


DEFAULT_PRIOR = MajorityPrior.jeffreys()


@dataclass(frozen=True)
class SequentialConfig:
    """How the probe samples a case in rounds.

    Attributes:
        band: inclusive (low, high) band on the majority share (Agent0: 0.3, 0.8).
        confidence: stop when P(in band) or P(out of band) reaches this, in (0.5, 1).
        k_min: never stop with fewer counted samples (answered + unparseable).
        k_max: never ask for more counted samples (Agent0's fixed k = 10).
        rounds: samples per round; the last size repeats (3 then 2, 2, ...).
        max_failed: stop (forced) once this many calls failed; ``None`` means ``k_max``.
        prior: population prior (:func:`fit_prior` learns one for a target).
        draws: Monte-Carlo draws per posterior (error ≈ 0.5 / sqrt(draws)).
        level: central credible level of the reported intervals.
        seed: seed of the Monte-Carlo streams.
    """

    band: tuple[float, float] = AGENT0_BAND
    confidence: float = 0.9
    k_min: int = 3
    k_max: int = 10
    rounds: tuple[int, ...] = (3, 2)
    max_failed: int | None = None
    prior: MajorityPrior = field(default_factory=lambda: DEFAULT_PRIOR)
    draws: int = 4096
    level: float = 0.9
    seed: int = 0

    def __post_init__(self) -> None:
        lo, hi = self.band
        if not 0.0 <= lo <= hi <= 1.0:
            raise ConfigError(f"band={self.band} must satisfy 0 ≤ low ≤ high ≤ 1", hint="Agent0 uses (0.3, 0.8)")
        if not 0.5 < self.confidence < 1.0:
            raise ConfigError(f"confidence={self.confidence} must be in (0.5, 1)", hint="0.9 is a good start")
        if not 1 <= self.k_min <= self.k_max:
            raise ConfigError(f"need 1 ≤ k_min ≤ k_max, got k_min={self.k_min}, k_max={self.k_max}")
        if not self.rounds or any(r < 1 for r in self.rounds):
            raise ConfigError(f"rounds={self.rounds} must be positive sample counts", hint="e.g. (3, 2)")
        if self.max_failed is not None and self.max_failed < 1:
            raise ConfigError(f"max_failed={self.max_failed} must be ≥ 1 or None (None: k_max)")
        if self.draws < 256 or not 0.0 < self.level < 1.0:
            raise ConfigError(f"need draws ≥ 256 and level in (0, 1), got {self.draws}, {self.level}")

    @classmethod
    def economy(cls, **overrides: object) -> SequentialConfig:
        """Fewer calls for lower in-band recall: k_min 2, rounds of 2 then 1, confidence 0.85.

        Meant for a fitted prior on a mostly-easy target; see ``benchmarks/sequential_bench.py``.
        """
        return cls(**{"k_min": 2, "rounds": (2, 1), "confidence": 0.85, **overrides})  # type: ignore[arg-type]


@dataclass(frozen=True)
class BandPosterior:
    """Posterior of the true majority probability p* relative to the band.

    Attributes:
        below, inside, above: P(p* < low), P(low ≤ p* ≤ high), P(p* > high); sum 1.
        mean: posterior mean of p*.
        credible: central credible interval of p* at the configured level.
    """

    below: float
    inside: float
    above: float
    mean: float
    credible: tuple[float, float]

    @property
    def outside(self) -> float:
        return self.below + self.above


@dataclass(frozen=True)
class Decision:
    """The policy's answer after a round.

    Attributes:
        verdict: continue, or the band class the case stops with.
        next_n: samples to request now (0 once stopped).
        k: counted samples so far (answered + unparseable; failed excluded).
        n_failed: failed calls so far (they cost a call, never a vote).
        p_hat: majority share = largest cluster / k (Agent0 Eq. 6); 0 when k = 0.
        interval: Wilson score interval of p_hat at the configured level (contains p_hat).
        posterior: where p* lies relative to the band.
        forced: stopped by k_max or the failure budget without reaching the confidence.
        reason: one line saying why.
    """

    verdict: Verdict
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
        return self.verdict is not Verdict.CONTINUE

    @property
    def in_band(self) -> bool:
        return self.verdict is Verdict.IN_BAND


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


def _likelihood(counts: tuple[int, ...], prior: MajorityPrior) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Who the dominant answer is, and log P(answers | V, θ, that choice).

    Returns:
        (groups, terms): ``groups[g]`` are the other answers' cluster sizes when the dominant
        answer is a cluster of the g-th distinct size (the last group: not seen yet);
        ``terms[g, i, t]`` = log P(answer sequence | V_i, θ_t, g), dropping ∏ Γ(n_j), which
        no parameter touches. The others form a Chinese-restaurant sequence (Ewens formula).
    """
    n, m = sum(counts), len(counts)
    v, th = np.asarray(prior.shares), np.asarray(prior.thetas)
    log_v, log_1v, log_th = np.log(v), np.log1p(-v), np.log(th)
    lg_th = np.array([math.lgamma(t) for t in th])
    groups, terms = [], []
    for size, mult in sorted(Counter(counts).items(), reverse=True):
        rest = list(counts)
        rest.remove(size)
        crp = (m - 1) * log_th + lg_th - np.array([math.lgamma(t + n - size) for t in th]) - math.lgamma(size)
        terms.append(math.log(mult) + (size * log_v + (n - size) * log_1v)[:, None] + crp[None, :])
        groups.append(tuple(rest))
    crp = m * log_th + lg_th - np.array([math.lgamma(t + n) for t in th])
    terms.append((n * log_1v)[:, None] + crp[None, :])
    groups.append(tuple(counts))
    return groups, np.stack(terms)


def _stream(seed: int, tag: int, index: int, rows: int, draws: int) -> np.ndarray:
    # Rows are drawn one block of `draws` at a time, so row r is the same for any `rows` > r.
    if rows == 0:
        return np.zeros((0, draws))
    return np.random.default_rng([seed, tag, index]).standard_exponential((rows, draws))


@lru_cache(maxsize=16)
def _unseen_draws(thetas: tuple[float, ...], draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per θ: Gamma(θ) mass of the not-yet-seen answers, and their largest GEM(θ) piece."""
    rng = np.random.default_rng([seed, 1])
    th = np.asarray(thetas)[:, None]
    mass = rng.gamma(np.broadcast_to(th, (len(thetas), draws)))
    # GEM(θ) sticks V ~ Beta(1, θ) = 1 − U^{1/θ}; a piece is V_i ∏_{l<i} (1 − V_l).
    sticks = 1.0 - rng.random((_STICKS, len(thetas), draws)) ** (1.0 / th)
    left = np.concatenate([np.ones((1, len(thetas), draws)), np.cumprod(1.0 - sticks, axis=0)[:-1]])
    return mass, (sticks * left).max(axis=0)


def _rest_histogram(rest: tuple[int, ...], thetas: tuple[float, ...], draws: int, seed: int) -> np.ndarray:
    """Histogram (θ × bins) of R, the largest share among the non-dominant answers.

    Given θ, the other answers' weights are Dir(rest..., θ) (DP posterior), the last part
    split further by GEM(θ). Each cluster rank has its own exponential stream, so one more
    vote adds one exponential to one gamma in every draw.
    """
    gam = np.array([_stream(seed, 2, j, c, draws).sum(axis=0) for j, c in enumerate(rest)]).reshape(len(rest), draws)
    mass, largest = _unseen_draws(thetas, draws, seed)
    r = np.maximum(gam.max(axis=0, initial=0.0), mass * largest) / (gam.sum(axis=0) + mass)
    idx = np.minimum((r * _BINS).astype(int), _BINS - 1)
    return np.stack([np.bincount(row, minlength=_BINS) / draws for row in idx])


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
    w /= w.sum()  # posterior over (dominant group, V_i, θ_t)
    v = np.asarray(prior.shares)
    big = v >= 0.5  # then the others' total 1 − V < V and the majority share is V itself
    values, masses = [v[big]], [w[:, big, :].sum(axis=(0, 2))]
    small = ~big
    if small.any():
        hist = np.stack([_rest_histogram(g, prior.thetas, draws, seed) for g in groups])  # (G, T, bins)
        h = np.einsum("git,gtb->ib", w[:, small, :], hist)
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
    )


def _canonical(counts: Iterable[int], n_unparseable: int) -> tuple[int, ...]:
    out = tuple(sorted((int(c) for c in counts), reverse=True))
    if any(c < 0 for c in out) or n_unparseable < 0:
        raise ConfigError(f"vote counts must be ≥ 0, got counts={out}, n_unparseable={n_unparseable}")
    return tuple(c for c in out if c > 0)


def band_posterior(
    counts: Iterable[int],
    n_unparseable: int = 0,
    *,
    band: tuple[float, float] = AGENT0_BAND,
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
        draws: Monte-Carlo draws.
        level: credible level of the reported interval.
        seed: Monte-Carlo seed; the result is a pure function of all arguments.
    """
    votes = _canonical(counts, n_unparseable)
    return _posterior_cached(votes, int(n_unparseable), tuple(band), prior, draws, level, seed)


def _next_n(k: int, config: SequentialConfig) -> int:
    # Checkpoints r1, r1 + r2, ... (last size repeating), capped at k_max; stateless in k.
    target, i = 0, 0
    while target <= k:
        target += config.rounds[min(i, len(config.rounds) - 1)]
        i += 1
    return min(target, config.k_max) - k


def decide(
    counts: Iterable[int], n_unparseable: int = 0, n_failed: int = 0, config: SequentialConfig | None = None
) -> Decision:
    """Decide after a round: continue (and with how many samples) or stop with a band class.

    Args:
        counts: samples per answer cluster so far (equivalent answers merged; any order).
        n_unparseable: samples with no extractable answer (count in k, never vote).
        n_failed: failed target calls (count in neither; the failure budget caps them).
        config: the policy; defaults to :class:`SequentialConfig` ().

    Returns:
        A :class:`Decision`. Stops with the confident class when P(in band) or P(out of
        band) ≥ ``confidence`` and k ≥ k_min; at k_max or the failure budget it stops
        ``forced`` with the Bayes class (in band iff P(in) ≥ 1/2).
    """
    config = config or SequentialConfig()
    votes = _canonical(counts, n_unparseable)
    if n_failed < 0:
        raise ConfigError(f"n_failed must be ≥ 0, got {n_failed}")
    k = sum(votes) + n_unparseable
    top = votes[0] if votes else 0
    c = config
    post = band_posterior(votes, n_unparseable, band=c.band, prior=c.prior, draws=c.draws, level=c.level, seed=c.seed)
    out_verdict = Verdict.BELOW if post.below >= post.above else Verdict.ABOVE
    max_failed = config.k_max if config.max_failed is None else config.max_failed

    def made(verdict: Verdict, forced: bool, reason: str) -> Decision:
        next_n = 0 if verdict is not Verdict.CONTINUE else _next_n(k, config)
        p_hat = top / k if k else 0.0
        interval = wilson_interval(top, k, config.level)
        return Decision(verdict, next_n, k, n_failed, p_hat, interval, post, forced, reason)

    if k >= config.k_min:
        if post.inside >= config.confidence:
            return made(Verdict.IN_BAND, False, f"P(in band) = {post.inside:.3f} ≥ {config.confidence}")
        if post.outside >= config.confidence:
            return made(out_verdict, False, f"P(out of band) = {post.outside:.3f} ≥ {config.confidence}")
    exhausted = "k_max reached" if k >= config.k_max else ("failure budget spent" if n_failed >= max_failed else "")
    if exhausted:
        verdict = Verdict.IN_BAND if post.inside >= 0.5 else out_verdict
        return made(verdict, True, f"{exhausted} with P(in band) = {post.inside:.3f}")
    return made(Verdict.CONTINUE, False, f"P(in band) = {post.inside:.3f}, undecided at k = {k}")


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


def fit_prior(
    observations: Iterable[tuple[Sequence[int], int]],
    *,
    start: MajorityPrior | None = None,
    iterations: int = 100,
    smoothing: float = 1.0,
) -> MajorityPrior:
    """Learn a target's population prior from its earlier cases (empirical Bayes).

    The (V, θ) weights are the maximum-likelihood mixture on the grid (EM), shrunk towards
    ``start`` by ``smoothing`` pseudo-cases so no cell is ruled out; the unparseable Beta is
    the beta-binomial maximum likelihood on a coarse grid. Cases stopped early by
    :func:`decide` are valid input: the stopping rule is ignorable.

    Args:
        observations: (cluster sizes, n_unparseable) per earlier case.
        start: the grid and the prior to shrink towards; :data:`DEFAULT_PRIOR` by default.
        iterations: EM steps.
        smoothing: weight of ``start``, in cases.

    Returns:
        A :class:`MajorityPrior` on the same grid as ``start`` (``start`` when no case is given).
    """
    start = start or DEFAULT_PRIOR
    obs = [(_canonical(c, u), int(u)) for c, u in observations]
    if not obs:
        return start
    base = start.table().ravel()
    loglik = np.empty((len(obs), base.size))
    for row, (counts, _) in enumerate(obs):
        terms = _likelihood(counts, start)[1].reshape(-1, base.size)
        top = terms.max(axis=0)
        loglik[row] = top + np.log(np.exp(terms - top).sum(axis=0))
    lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    w = base.copy()
    for _ in range(iterations):
        resp = lik * w
        resp /= resp.sum(axis=1, keepdims=True)
        w = (resp.sum(axis=0) + smoothing * base) / (len(obs) + smoothing)
    return MajorityPrior(start.shares, start.thetas, tuple(float(x) for x in w), _fit_unparseable(obs))


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
