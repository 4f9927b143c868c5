"""Difficulty prediction: guess a case's p̂ before calling the target (self-aware RL §4.1).

Two sources of a prediction, both in "predicted p̂" units (share of k samples that agree):

* the curriculum's own estimate, a number it wrote in its output. Self-aware RL asks the
  generator for ``<difficulty_prediction>0..8</difficulty_prediction>`` (0 easiest) and
  rewards it with R_dp = 1 − |μ̂ − μ| (self-aware RL Eq. 3);
* :class:`DifficultyPredictor`, a logistic regression fitted online to this target's past
  results on cheap text features (length, digits, numbers, operation words, topic one-hot,
  and the curriculum's estimate when there is one), refit as results arrive.

:func:`should_skip` uses a prediction to skip cases predicted trivially easy (≥ 0.95) or
hopeless (≤ 0.05), keeping an exploration share so the predictor keeps seeing such cases
and a drifting target is noticed. :func:`calibration_report` says whether predictions can be
trusted: Brier score against a constant predictor, and expected calibration error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from frontier_qa.errors import ConfigError

_TAG = re.compile(r"<difficulty_prediction>\s*([-+]?\d+(?:\.\d+)?)\s*</difficulty_prediction>", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
OPERATION_WORDS = (
    "sum", "add", "total", "difference", "product", "multiply", "divide", "quotient", "remainder",
    "modulo", "power", "root", "factorial", "prime", "gcd", "lcm", "probability", "expected",
    "integral", "derivative", "limit", "matrix", "sequence", "prove", "how many", "minimum", "maximum",
)  # fmt: skip


def parse_difficulty_prediction(text: str) -> float | None:
    """The number in the last ``<difficulty_prediction>`` tag of a curriculum output, if any."""
    found = _TAG.findall(text)
    return float(found[-1]) if found else None


def curriculum_estimate(value: float, *, scale: float = 8.0, higher_is_harder: bool = True) -> float:
    """Turn a curriculum's difficulty number into a predicted p̂ in [0, 1].

    Args:
        value: the number the curriculum wrote.
        scale: its range's top (self-aware RL: 8, i.e. N = 8 rollouts).
        higher_is_harder: True for a 0-easiest..scale-hardest difficulty (the template's
            wording), False for "how many of ``scale`` rollouts succeed" (μ = value / N).

    Returns:
        Predicted p̂, clipped to [0, 1].
    """
    if scale <= 0 or not math.isfinite(value):
        raise ConfigError(f"need a finite value and scale > 0, got value={value}, scale={scale}")
    share = min(1.0, max(0.0, value / scale))
    return 1.0 - share if higher_is_harder else share


def difficulty_reward(predicted: float, observed: float) -> float:
    """Self-aware RL Eq. 3: R_dp = 1 − |μ̂ − μ|, both success rates in [0, 1]."""
    return 1.0 - abs(observed - predicted)


def text_features(prompt: str, topic: str = "general", curriculum: float | None = None) -> dict[str, float]:
    """Cheap features of a case's text for :class:`DifficultyPredictor` (no model, no I/O)."""
    lower = prompt.lower()
    numbers = _NUMBER.findall(prompt)
    feats: dict[str, float] = {
        "log_chars": math.log1p(len(prompt)),
        "log_words": math.log1p(len(prompt.split())),
        "log_digits": math.log1p(sum(ch.isdigit() for ch in prompt)),
        "n_numbers": float(len(numbers)),
        "log_max_number": max((math.log10(1.0 + float(x)) for x in numbers), default=0.0),
        "code_blocks": float(prompt.count("```") // 2),
        "has_estimate": 0.0 if curriculum is None else 1.0,
        "estimate": 0.5 if curriculum is None else float(curriculum),
        f"topic={topic}": 1.0,
    }
    for word in OPERATION_WORDS:
        hits = lower.count(word)
        if hits:
            feats[f"op={word}"] = float(hits)
    return feats


class _Random(Protocol):
    def random(self) -> float: ...


def should_skip(
    pred: float | None, explore_rate: float, rng: _Random, *, easy: float = 0.95, impossible: float = 0.05
) -> bool:
    """Skip a case predicted trivially easy or hopeless, except an exploration share.

    Args:
        pred: predicted p̂, or None (no prediction: never skip).
        explore_rate: share of would-be-skipped cases probed anyway, in [0, 1].
        rng: anything with ``random()`` in [0, 1) (``random.Random``, numpy ``Generator``).
        easy: skip at or above this prediction.
        impossible: skip at or below this prediction.
    """
    if not 0.0 <= explore_rate <= 1.0:
        raise ConfigError(f"explore_rate={explore_rate} must be in [0, 1]")
    if pred is None or impossible < pred < easy:
        return False
    return rng.random() >= explore_rate


class DifficultyPredictor:
    """Online predictor of a target's p̂ from case text: binomial logistic regression.

    Each result (majority votes out of k) enters as two weighted rows, label 1 with
    weight votes and label 0 with weight k − votes, so the fit is the binomial maximum
    likelihood on p̂. The model is refit from all results every ``refit_every`` new ones
    (cheap at probe scale; deterministic, unlike SGD's partial_fit).

    Args:
        min_observations: results needed before :meth:`predict` answers.
        refit_every: refit after this many new results.
        c: inverse L2 strength of the logistic regression.
    """

    def __init__(self, *, min_observations: int = 20, refit_every: int = 10, c: float = 1.0) -> None:
        if min_observations < 2 or refit_every < 1 or c <= 0:
            raise ConfigError("need min_observations ≥ 2, refit_every ≥ 1 and c > 0")
        self.min_observations = min_observations
        self.refit_every = refit_every
        self.c = c
        self._rows: list[tuple[dict[str, float], int, int]] = []
        self._model: Any = None
        self._constant: float | None = None
        self._fitted_at = 0

    @property
    def n_observations(self) -> int:
        return len(self._rows)

    def observe(
        self, prompt: str, votes: int, k: int, *, topic: str = "general", curriculum: float | None = None
    ) -> None:
        """Record a result: ``votes`` of ``k`` counted samples agreed with the majority."""
        if not 0 <= votes <= k or k < 1:
            raise ConfigError(f"need 0 ≤ votes ≤ k and k ≥ 1, got votes={votes}, k={k}")
        self._rows.append((text_features(prompt, topic, curriculum), votes, k))
        due = self.n_observations - self._fitted_at >= self.refit_every
        if self.n_observations >= self.min_observations and (self._fitted_at == 0 or due):
            self._fit()

    def _fit(self) -> None:
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self._fitted_at = self.n_observations
        ones = sum(v for _, v, _ in self._rows)
        zeros = sum(k - v for _, v, k in self._rows)
        if ones == 0 or zeros == 0:  # one class only: the (smoothed) pooled rate is all there is
            self._model, self._constant = None, (ones + 0.5) / (ones + zeros + 1.0)
            return
        x: list[Mapping[str, float]] = []
        y: list[int] = []
        w: list[float] = []
        for feats, votes, k in self._rows:
            for label, weight in ((1, votes), (0, k - votes)):
                if weight:
                    x.append(feats)
                    y.append(label)
                    w.append(float(weight))
        model = make_pipeline(
            DictVectorizer(sparse=False), StandardScaler(), LogisticRegression(C=self.c, max_iter=1000)
        )
        model.fit(x, y, logisticregression__sample_weight=w)
        self._model, self._constant = model, None

    def predict(self, prompt: str, *, topic: str = "general", curriculum: float | None = None) -> float | None:
        """Predicted p̂ in (0, 1), or None before ``min_observations`` results."""
        if self._model is None:
            return self._constant
        return float(self._model.predict_proba([text_features(prompt, topic, curriculum)])[0, 1])


@dataclass(frozen=True)
class CalibrationBin:
    """Predictions in [low, high): how many, their mean, and the mean observed p̂."""

    low: float
    high: float
    count: int
    mean_predicted: float
    mean_observed: float


@dataclass(frozen=True)
class CalibrationReport:
    """How far predictions can be trusted.

    Attributes:
        n: predicted cases.
        brier: mean squared error of predictions against observed p̂.
        brier_constant: the same for predicting the mean observed p̂ everywhere (in-sample,
            so the baseline is flattered); a useful predictor has ``brier < brier_constant``.
        ece: expected calibration error, Σ_b (n_b / n)·|mean predicted − mean observed|.
        bins: the equal-width bins over [0, 1] that hold a prediction.
    """

    n: int
    brier: float
    brier_constant: float
    ece: float
    bins: tuple[CalibrationBin, ...]

    @property
    def skill(self) -> float:
        """Brier skill score 1 − brier / brier_constant (> 0: better than a constant)."""
        return 1.0 - self.brier / self.brier_constant if self.brier_constant > 0 else 0.0


def _pairs(pred: Sequence[float], observed: Sequence[float]) -> tuple[list[float], list[float]]:
    p, o = [float(x) for x in pred], [float(x) for x in observed]
    if len(p) != len(o) or not p:
        raise ConfigError(f"need equally many predictions and observations (> 0), got {len(p)} and {len(o)}")
    if any(not 0.0 <= x <= 1.0 for x in p + o):
        raise ConfigError("predictions and observed p̂ must lie in [0, 1]")
    return p, o


def brier_score(pred: Sequence[float], observed: Sequence[float]) -> float:
    """Mean squared difference between predicted and observed p̂ (observed may be fractional).

    With p̂ from k samples it includes the sampling variance p(1 − p)/k no predictor removes.
    """
    p, o = _pairs(pred, observed)
    return sum((a - b) ** 2 for a, b in zip(p, o, strict=True)) / len(p)


def calibration_bins(pred: Sequence[float], observed: Sequence[float], bins: int = 10) -> tuple[CalibrationBin, ...]:
    """Group predictions into ``bins`` equal-width bins over [0, 1] (1.0 goes in the last)."""
    p, o = _pairs(pred, observed)
    if bins < 1:
        raise ConfigError(f"bins={bins} must be ≥ 1")
    groups: dict[int, list[int]] = {}
    for i, x in enumerate(p):
        groups.setdefault(min(int(x * bins), bins - 1), []).append(i)
    return tuple(
        CalibrationBin(
            low=b / bins,
            high=(b + 1) / bins,
            count=len(idx),
            mean_predicted=sum(p[i] for i in idx) / len(idx),
            mean_observed=sum(o[i] for i in idx) / len(idx),
        )
        for b, idx in sorted(groups.items())
    )


def expected_calibration_error(pred: Sequence[float], observed: Sequence[float], bins: int = 10) -> float:
    """Σ_b (n_b / n)·|mean predicted − mean observed| over equal-width bins."""
    table = calibration_bins(pred, observed, bins)
    n = sum(b.count for b in table)
    return sum(b.count / n * abs(b.mean_predicted - b.mean_observed) for b in table)


def calibration_report(pred: Sequence[float], observed: Sequence[float], bins: int = 10) -> CalibrationReport:
    """Brier score (and a constant baseline's), ECE and the bins, in one value."""
    p, o = _pairs(pred, observed)
    mean = sum(o) / len(o)
    return CalibrationReport(
        n=len(p),
        brier=brier_score(p, o),
        brier_constant=brier_score([mean] * len(o), o),
        ece=expected_calibration_error(p, o, bins),
        bins=calibration_bins(p, o, bins),
    )
