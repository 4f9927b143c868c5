"""``ADPOTrainer``: TRL's ``GRPOTrainer`` running ADPO for the executor (Agent0 §3.3).

The reference's executor training never runs ADPO (docs/method.md, defect 4: p̂ never reaches the
loss, and ``torch.clamp(min=float, max=Tensor)`` raises). Here two seams change, nothing else:

* ``_generate_and_score_completions`` reads each row's p̂ (dataset column ``p_hat``), lets
  TRL generate, score and group-normalise as usual, then multiplies each sample's advantage
  by s(p̂) and attaches per-sample bounds ``adpo_epsilon_low`` / ``adpo_epsilon_high`` (B,)
  to the batch. TRL shuffles and splits every (B,) tensor of the batch together, so the
  bounds stay with their samples through ``steps_per_generation``.
* ``_compute_loss`` swaps ``self.epsilon_low`` / ``self.epsilon_high`` for those bounds as
  (B, 1) tensors while TRL's loss runs. TRL's two-sided clip
  ``torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)`` then clips each sample
  at its own bounds (both bounds are tensors, which is what torch requires), and its clip
  metrics count against them too. The rest of the loss (KL, aggregation, entropy, logging)
  stays TRL's.

That swap depends on the text of TRL's ``_compute_loss``; :func:`check_trl` verifies it (and
the TRL version it was written for) and the test suite fails loudly when TRL changes.

This module imports TRL at import time; import it only after checking the ``train`` extra.
"""

from __future__ import annotations

import hashlib
import inspect
import warnings
from typing import Any

import torch
import trl
from trl import GRPOTrainer

from frontier_qa.errors import ConfigError
from frontier_qa.train.adpo import REFERENCE, ADPOSchedule, advantage_scale, check_p_hat, clip_high

TRL_VERSION = "1.16.0"
"""The TRL release the overrides were written against and verified on."""

TRL_FINGERPRINTS = {
    "_compute_loss": "80295546bbdbf6f711acce7f6e69b0100ab40aa8f23ed8052cc564ff024e3e40",
    "_generate_and_score_completions": "1fa48922792dcd5c72da155cfe99db477771a7c61cde15519fe8c86d0cdc0b65",
}
"""sha256 of the source of each overridden ``GRPOTrainer`` method in :data:`TRL_VERSION`."""

TRL_SIGNATURES = {"_compute_loss": "(self, model, inputs)", "_generate_and_score_completions": "(self, inputs)"}
"""Parameter names of each overridden method (annotations left out: they are not called on)."""

# The exact lines of TRL's _compute_loss the epsilon swap relies on.
_RELIED_ON = (
    "coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)",
    'advantages = inputs["advantages"]',
    # tool output (frontier_qa.train._rollout) leaves the loss through tool_mask
    'mask = completion_mask if "tool_mask" not in inputs else completion_mask * inputs["tool_mask"]',
)

# Loss types that clip the ratio at 1 − ε_low and 1 + ε_high; the others use epsilon
# differently (cispo: an absolute cap) or not at all (sapo, vespo).
CLIPPED_LOSSES = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")


def trl_source_fingerprint(name: str) -> str:
    """sha256 (hex) of the source text of ``GRPOTrainer.<name>`` in the installed TRL."""
    method = inspect.unwrap(getattr(GRPOTrainer, name))
    return hashlib.sha256(inspect.getsource(method).encode()).hexdigest()


def trl_changes() -> list[str]:
    """What differs between the installed TRL and the one the overrides were written for.

    Returns:
        One line per difference (version, a method's source fingerprint, a relied-on line
        missing); empty when the installed TRL is the verified one.
    """
    changes = []
    if trl.__version__ != TRL_VERSION:
        changes.append(f"TRL is {trl.__version__}, ADPOTrainer was verified on {TRL_VERSION}")
    for name, expected in TRL_FINGERPRINTS.items():
        if not hasattr(GRPOTrainer, name):
            changes.append(f"GRPOTrainer.{name} no longer exists")
            continue
        params = "(" + ", ".join(inspect.signature(getattr(GRPOTrainer, name)).parameters) + ")"
        if params != TRL_SIGNATURES[name]:
            changes.append(f"GRPOTrainer.{name} now takes {params}, the override takes {TRL_SIGNATURES[name]}")
        if trl_source_fingerprint(name) != expected:
            changes.append(f"GRPOTrainer.{name} changed (source sha256 {trl_source_fingerprint(name)[:12]}…)")
    changes.extend(f"GRPOTrainer._compute_loss no longer contains `{line}`" for line in _missing_lines())
    return changes


def _missing_lines() -> list[str]:
    if not hasattr(GRPOTrainer, "_compute_loss"):
        return list(_RELIED_ON)
    source = inspect.getsource(inspect.unwrap(GRPOTrainer._compute_loss))
    return [line for line in _RELIED_ON if line not in source]


def check_trl() -> None:
    """Refuse a TRL whose loss no longer has the clip the override relies on; warn on other drift.

    Raises:
        ConfigError: a relied-on line of ``GRPOTrainer._compute_loss`` is gone, so per-task
            clipping would silently not happen (the reference's defect 4).
    """
    missing = _missing_lines()
    if missing:
        raise ConfigError(
            "ADPOTrainer cannot apply per-task clip bounds with this TRL: GRPOTrainer._compute_loss no longer "
            "contains " + "; ".join(f"`{line}`" for line in missing),
            hint=f"install trl=={TRL_VERSION}, or port frontier_qa/train/adpo_trainer.py to the new loss",
        )
    changes = trl_changes()
    if changes:
        warnings.warn(
            "ADPOTrainer overrides TRL internals; " + "; ".join(changes)
            + f". Its tests (tests/train/test_adpo.py) verify the installed TRL; trl=={TRL_VERSION} is known good.",
            stacklevel=3,
        )


class ADPOTrainer(GRPOTrainer):
    """GRPO with ADPO's per-task advantage scale and upper clip (Agent0 §3.3).

    Takes every ``GRPOTrainer`` argument, plus:

    Args:
        adpo: the schedule of s(p̂) and ε_high(p̂) and the fixed ε_low; the reference constants
            by default. It replaces ``args.epsilon`` / ``args.epsilon_high``.
        p_hat_column: dataset column holding each task's p̂ (share of votes, in [0, 1]).

    Raises:
        ConfigError: ``args.loss_type`` does not clip the ratio (cispo, sapo, vespo), or the
            installed TRL's loss lacks the clip this class relies on.
    """

    def __init__(self, *args: Any, adpo: ADPOSchedule = REFERENCE, p_hat_column: str = "p_hat",
                 **kwargs: Any) -> None:
        check_trl()
        super().__init__(*args, **kwargs)
        if self.loss_type not in CLIPPED_LOSSES:
            raise ConfigError(
                f"ADPO needs a clipped policy loss, but loss_type={self.loss_type!r}",
                hint="set loss_type to one of: " + ", ".join(CLIPPED_LOSSES),
            )
        self.adpo = adpo
        self.p_hat_column = p_hat_column
        # Outside a batch (nothing reads them there) TRL's scalars hold the confident-task bounds.
        self.epsilon_low = adpo.epsilon_low
        self.epsilon_high = adpo.epsilon_high_base

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        p_hats = []
        for i, row in enumerate(inputs):
            if self.p_hat_column not in row:
                raise ConfigError(
                    f"the executor's dataset has no {self.p_hat_column!r} column (row {i})",
                    hint="add each task's self-consistency p̂ (a float in [0, 1]) as that column",
                )
            p_hats.append(check_p_hat(row[self.p_hat_column], where=f"{self.p_hat_column} (row {i})"))
        output = super()._generate_and_score_completions(inputs)
        advantages = output["advantages"]
        if advantages.shape[0] != len(p_hats):
            raise ConfigError(f"{advantages.shape[0]} advantages for {len(p_hats)} rows",
                              hint="ADPOTrainer expects one advantage per sample (no environment routing)")

        def per_sample(values: list[float]) -> torch.Tensor:
            return torch.tensor(values, dtype=torch.float32, device=advantages.device)

        # Agent0 §3.3: Â_i · s(p̂) after TRL's group normalisation.
        output["advantages"] = advantages * per_sample([advantage_scale(p, self.adpo) for p in p_hats]).to(
            advantages.dtype)
        output["adpo_epsilon_low"] = per_sample([self.adpo.epsilon_low] * len(p_hats))
        output["adpo_epsilon_high"] = per_sample([clip_high(p, self.adpo) for p in p_hats])
        return output

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        if "adpo_epsilon_high" not in inputs:
            raise ConfigError("an ADPO batch has no per-task clip bounds",
                              hint="batches must come from ADPOTrainer._generate_and_score_completions")
        scalar_bounds = self.epsilon_low, self.epsilon_high
        # (B, 1): broadcasts over tokens ("token" level) and over the (B, 1) "sequence" level ratio.
        self.epsilon_low = inputs["adpo_epsilon_low"].unsqueeze(1)
        self.epsilon_high = inputs["adpo_epsilon_high"].unsqueeze(1)
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self.epsilon_low, self.epsilon_high = scalar_bounds
