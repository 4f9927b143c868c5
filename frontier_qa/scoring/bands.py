"""Difficulty bands: which p̂ counts as "frontier".

Two published choices:

* Agent0 §3.3 / §4.1 keeps a task for executor training when 0.3 ≤ p̂ ≤ 0.8, both ends
  inclusive as in the reference code. (The paper also writes this as |p̂ − 0.5| ≤ δ with
  δ = 0.25, which would be [0.25, 0.75]; the numbers it reports and the code use [0.3, 0.8].
  :meth:`Band.from_delta` builds the symmetric form.)
* Tool-R0 Eq. 4 scores difficulty with a soft band-pass: 1 inside [0.25, 0.75], a Gaussian
  fall-off exp(−d²/(2σ²)) with σ = 0.12 outside (d = distance to the nearer edge), and 0 when
  p̂ < 1/k — no sample succeeded, so the task is likely ill-posed (Tool-R0 §C, K = 8).

p̂ is usually count/k, and float division puts some of those a hair off the decimal edges
(``1 - 0.7 == 0.30000000000000004``). Every comparison here allows an absolute slack of
:data:`EPSILON` = 1e-9, far below 1/k for any practical k, so p̂ = 3/10 and 8/10 are inside
the Agent0 band however they were computed.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from frontier_qa.errors import ConfigError

EPSILON = 1e-9
"""Absolute slack on band edges and on the 1/k floor (p̂ values are ratios count/k)."""


def check_p_hat(p_hat: Any, *, where: str = "p_hat") -> float:
    """``p_hat`` as a float, checked: a real number in [0, 1] (ints and numpy scalars too).

    The one p̂ check of the bands, the curriculum reward terms and ADPO.

    Args:
        p_hat: self-consistency, the majority's share of the k votes.
        where: what to call it in the error (a column name, a row).

    Raises:
        ConfigError: a bool, not a real number, NaN, or outside [0, 1].
    """
    if isinstance(p_hat, bool) or not isinstance(p_hat, numbers.Real) or not 0.0 <= float(p_hat) <= 1.0:
        raise ConfigError(
            f"{where} must be a number in [0, 1] (the majority's share of k samples); got {p_hat!r}",
            hint="pass Consistency.p_hat, i.e. majority count / k",
        )
    return float(p_hat)


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ConfigError(f"k (samples per task) must be an integer >= 1; got {k!r}")
    return int(k)


def in_band(p_hat: float, low: float | None = None, high: float | None = None) -> bool:
    """Whether low ≤ p̂ ≤ high, both ends inclusive (Agent0's executor filter).

    Args:
        p_hat: self-consistency in [0, 1].
        low: lower edge (``None``: :class:`Band`'s default, Agent0's 0.3).
        high: upper edge (``None``: :class:`Band`'s default, Agent0's 0.8).

    Raises:
        ConfigError: p̂ outside [0, 1] or not a number.
    """
    p = check_p_hat(p_hat)
    low = AGENT0_BAND.low if low is None else low
    high = AGENT0_BAND.high if high is None else high
    return low - EPSILON <= p <= high + EPSILON


def band_distance(p_hat: float, low: float, high: float) -> float:
    """Distance from p̂ to the band [low, high]; 0 inside (within :data:`EPSILON`)."""
    p = check_p_hat(p_hat)
    if p < low - EPSILON:
        return low - p
    if p > high + EPSILON:
        return p - high
    return 0.0


def soft_band(
    p_hat: float,
    k: int | None,
    low: float = 0.25,
    high: float = 0.75,
    sigma: float = 0.12,
) -> float:
    """Tool-R0's band-pass difficulty score (Tool-R0 Eq. 4), in [0, 1].

    Args:
        p_hat: the share of k samples that succeeded / agreed, in [0, 1].
        k: samples per task; p̂ < 1/k (no sample at all) scores 0. ``None`` skips that floor.
        low: lower edge of the flat top (Tool-R0: 0.25).
        high: upper edge of the flat top (Tool-R0: 0.75).
        sigma: Gaussian width of the fall-off, in units of p̂ (Tool-R0: 0.12).

    Returns:
        1 inside [low, high]; exp(−d²/(2σ²)) outside, d the distance to the nearer edge;
        0 when p̂ < 1/k.
    """
    p = check_p_hat(p_hat)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ConfigError(f"sigma must be a positive number; got {sigma!r}")
    if k is not None and p < 1.0 / _check_k(k) - EPSILON:
        return 0.0
    d = band_distance(p, low, high)
    return 1.0 if d == 0.0 else math.exp(-(d * d) / (2.0 * sigma * sigma))


@dataclass(frozen=True)
class Band:
    """A difficulty band on p̂: hard (in or out) or soft (Gaussian shoulders).

    The one definition of the frontier band: its defaults are Agent0's edges (0.3, 0.8), and
    every default band elsewhere (configs, the trainers, reports) is :data:`AGENT0_BAND`.

    Attributes:
        low: lower edge, inclusive, in [0, 1] (default: Agent0's 0.3).
        high: upper edge, inclusive, in [low, 1] (default: Agent0's 0.8).
        sigma: Gaussian width of a soft band's shoulders; ``None`` for a hard band.
        floor_unsolved: score 0 when p̂ < 1/k (Tool-R0); only applies when ``k`` is given.
        name: label used in reports.
    """

    low: float = 0.3
    high: float = 0.8
    sigma: float | None = None
    floor_unsolved: bool = False
    name: str = "band"

    def __post_init__(self) -> None:
        if not (0.0 <= self.low <= self.high <= 1.0):
            raise ConfigError(
                f"band {self.name!r} needs 0 <= low <= high <= 1; got low={self.low!r}, high={self.high!r}",
                hint="e.g. Band() (0.3, 0.8) for Agent0's frontier band",
            )
        if self.sigma is not None and not (math.isfinite(self.sigma) and self.sigma > 0):
            raise ConfigError(f"band {self.name!r}: sigma must be positive or None; got {self.sigma!r}")

    @classmethod
    def from_delta(cls, delta: float, *, name: str = "delta") -> Band:
        """The hard band |p̂ − 0.5| ≤ δ (Agent0 §3.3's symmetric form)."""
        if not 0.0 <= delta <= 0.5:
            raise ConfigError(f"delta must lie in [0, 0.5]; got {delta!r}")
        return cls(0.5 - delta, 0.5 + delta, name=name)

    def contains(self, p_hat: float) -> bool:
        """Whether low ≤ p̂ ≤ high (inclusive, with :data:`EPSILON` slack)."""
        return in_band(p_hat, self.low, self.high)

    @property
    def limits(self) -> tuple[float, float]:
        """``(low, high)``: the band as the configs and the sequential policy write it."""
        return (self.low, self.high)

    def score(self, p_hat: float, k: int | None = None) -> float:
        """How well p̂ fits the band, in [0, 1].

        A hard band gives 1.0 inside and 0.0 outside; a soft band gives :func:`soft_band`.
        With ``floor_unsolved`` and ``k`` given, p̂ < 1/k scores 0 for either kind.
        """
        floor_k = k if self.floor_unsolved else None
        if self.sigma is None:
            if floor_k is not None and check_p_hat(p_hat) < 1.0 / _check_k(floor_k) - EPSILON:
                return 0.0
            return 1.0 if self.contains(p_hat) else 0.0
        return soft_band(p_hat, floor_k, self.low, self.high, self.sigma)


AGENT0_BAND = Band(name="agent0")
"""Agent0's executor-training filter: 0.3 ≤ p̂ ≤ 0.8 (paper §4.1; reference code, inclusive)."""

TOOL_R0_BAND = Band(0.25, 0.75, sigma=0.12, floor_unsolved=True, name="tool-r0")
"""Tool-R0's band-pass difficulty reward (Eq. 4; [0.25, 0.75], σ = 0.12, zero below 1/k)."""

NAMED_BANDS = {"agent0": AGENT0_BAND, "tool-r0": TOOL_R0_BAND}
"""The bands a config, a flag or a command names (``probing.band``, ``--band``)."""
