"""ADPO, the executor's objective (Agent0 §3.3): per-task advantage scale and upper clip.

The executor trains on pseudo-labels (its own majority answer ỹ), which are unreliable where
its self-consistency p̂ is low. Ambiguity-Dynamic Policy Optimization therefore

- scales each task's advantage by s(p̂): a low-p̂ label is trusted less, so it moves the
  policy less (Agent0 §3.3, "ambiguity-aware advantage scaling");
- widens the upper clip bound ε_high(p̂) for low-p̂ tasks, so tokens the policy found unlikely
  can still gain probability where the answer is genuinely open ("dynamic trust region");
  ε_low stays fixed.

With the reference constants (docs/method.md §5)::

    s(p̂)      = 0.6 + 0.4 · clamp((p̂ − 0.3) / 0.5, 0, 1)
    ε_high(p̂) = 0.2 + 0.1 · clamp((0.8 − p̂) / 0.5, 0, 1)        ε_low = 0.2

The reference code defines these but never runs them (docs/method.md, defect 4); here they are
plain functions of floats, applied by :class:`frontier_qa.train.adpo_trainer.ADPOTrainer`.
The executor's reward, :class:`PseudoLabelReward`, also lives here: it is pure too.

Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from frontier_qa._frozen import frozen_value
from frontier_qa.errors import ConfigError
from frontier_qa.scoring._equivalence import MODES, comparator
from frontier_qa.scoring.answers import extract_boxed
from frontier_qa.scoring.bands import check_p_hat
from frontier_qa.scoring.rewards import completion_text

# a finite number written as one (strict: "0.2" and true are refused, 1 is fine)
Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]


def _clamp01(x: float) -> float:
    return min(1.0, max(0.0, x))


@frozen_value
class ADPOSchedule:
    """The constants of s(p̂) and ε_high(p̂); defaults are the reference's (docs/method.md §5).
    Also the co-evolution config's ``executor.adpo`` section.

    s(p̂) = ``scale_base`` + ``scale_gain`` · clamp((p̂ − ``scale_from``) / ``scale_span``, 0, 1)

    ε_high(p̂) = ``epsilon_high_base``
                + ``epsilon_high_gain`` · clamp((``clip_until`` − p̂) / ``clip_span``, 0, 1)

    Attributes:
        scale_base: advantage scale at and below p̂ = ``scale_from`` (dimensionless, > 0).
        scale_gain: added scale reached at p̂ = ``scale_from + scale_span`` (≥ 0).
        scale_from: p̂ where the scale starts to rise (share of votes, in [0, 1]).
        scale_span: width of the rise, in p̂ units (> 0).
        epsilon_low: fixed lower clip: ratios below 1 − ε_low are clipped (in [0, 1)).
        epsilon_high_base: upper clip at and above p̂ = ``clip_until`` (≥ 0).
        epsilon_high_gain: added upper clip reached at p̂ = ``clip_until − clip_span`` (≥ 0).
        clip_until: p̂ where the upper clip reaches its base (share of votes, in [0, 1]).
        clip_span: width of the fall, in p̂ units (> 0).
    """

    scale_base: Annotated[Number, Field(gt=0, description="> 0: a zero scale erases every advantage")] = 0.6
    scale_gain: Annotated[Number, Field(ge=0)] = 0.4
    scale_from: Annotated[Number, Field(ge=0, le=1, description="a share of votes")] = 0.3
    scale_span: Annotated[Number, Field(gt=0, description="> 0: it divides")] = 0.5
    epsilon_low: Annotated[Number, Field(ge=0, lt=1, description="1 - epsilon_low must stay positive")] = 0.2
    epsilon_high_base: Annotated[Number, Field(ge=0)] = 0.2
    epsilon_high_gain: Annotated[Number, Field(ge=0)] = 0.1
    clip_until: Annotated[Number, Field(ge=0, le=1, description="a share of votes")] = 0.8
    clip_span: Annotated[Number, Field(gt=0, description="> 0: it divides")] = 0.5


REFERENCE = ADPOSchedule()
"""The reference constants (aiming-lab/Agent0; docs/method.md §5)."""


def advantage_scale(p_hat: float, schedule: ADPOSchedule = REFERENCE) -> float:
    """s(p̂), the factor on a task's advantages (Agent0 §3.3, ambiguity-aware scaling).

    Args:
        p_hat: the task's self-consistency, in [0, 1].
        schedule: the constants; :data:`REFERENCE` by default.

    Returns:
        The scale (dimensionless), from ``scale_base`` (ambiguous task, noisy label) up to
        ``scale_base + scale_gain`` (confident task).

    Raises:
        ConfigError: ``p_hat`` is not a number in [0, 1].

    Examples:
        >>> advantage_scale(0.3), advantage_scale(0.55), advantage_scale(0.9)
        (0.6, 0.8, 1.0)
    """
    p = check_p_hat(p_hat)
    return schedule.scale_base + schedule.scale_gain * _clamp01((p - schedule.scale_from) / schedule.scale_span)


def clip_high(p_hat: float, schedule: ADPOSchedule = REFERENCE) -> float:
    """ε_high(p̂), the task's upper clip: ratios above 1 + ε_high stop pushing (Agent0 §3.3).

    Args:
        p_hat: the task's self-consistency, in [0, 1].
        schedule: the constants; :data:`REFERENCE` by default.

    Returns:
        ε_high (dimensionless), from ``epsilon_high_base`` (confident task: a tight trust
        region) up to ``epsilon_high_base + epsilon_high_gain`` (ambiguous task).

    Raises:
        ConfigError: ``p_hat`` is not a number in [0, 1].

    Examples:
        >>> clip_high(0.8), round(clip_high(0.55), 10), clip_high(0.2)
        (0.2, 0.25, 0.30000000000000004)
    """
    p = check_p_hat(p_hat)
    return schedule.epsilon_high_base + schedule.epsilon_high_gain * _clamp01(
        (schedule.clip_until - p) / schedule.clip_span
    )


def clip_low(schedule: ADPOSchedule = REFERENCE) -> float:
    """ε_low, the fixed lower clip (the same for every task)."""
    return schedule.epsilon_low


class PseudoLabelReward:
    """The executor's reward (Agent0 §3.3): 1 when the final ``\\boxed{}`` answer ≡ ỹ, else 0.

    A TRL reward function: ``reward(prompts, completions, **columns) -> list[float]``; the
    pseudo-label comes from the dataset column ``label_column``. A completion without a
    closed box scores 0 (no answer is never the label). The reference pays −1 for a wrong
    answer (docs/method.md §5); group normalisation makes {0, 1} and {−1, 1} give the same
    advantages under ``scale_rewards="group"``, and {0, 1} keeps the logged reward a pass rate.

    Args:
        label_column: dataset column holding ỹ, a string per row.
        mode: equivalence mode, ``"math"``, ``"numeric"`` or ``"string"``
            (:mod:`frontier_qa.scoring._equivalence`).
        timeout_s: limit of one symbolic comparison, seconds.
    """

    def __init__(self, label_column: str = "pseudo_label", *, mode: str = "math", timeout_s: float = 5.0) -> None:
        if mode not in MODES:
            raise ConfigError(f"unknown equivalence mode {mode!r}", hint="use one of: " + ", ".join(MODES))
        self.label_column = label_column
        self.mode = mode
        self._same = comparator(mode, timeout_s=timeout_s)
        self.__name__ = "pseudo_label"  # TRL names the reward's metrics after it

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        labels = columns.get(self.label_column)
        if labels is None:
            raise ConfigError(
                f"the executor's dataset has no {self.label_column!r} column",
                hint=f"add the pseudo-label (the executor's majority answer) as column {self.label_column!r}",
            )
        if len(labels) != len(completions):
            raise ConfigError(f"{len(labels)} pseudo-labels for {len(completions)} completions", hint="one per row")
        rewards = []
        for completion, label in zip(completions, labels, strict=True):
            answer = extract_boxed(completion_text(completion))
            rewards.append(1.0 if label is not None and self._same(answer, str(label)) else 0.0)
        return rewards
