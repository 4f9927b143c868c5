"""Did a training run change anything? Its reward curve, and how far its weights moved.

A run whose groups all got the same reward has zero advantages and no gradient: its final
model is bit-identical to where it started, whatever the logs say. So a run ends by printing
both sides: the per-step means of the reward terms (from ``tasks.jsonl``) and the change of
the weights (the saved model against the one training started from).

Reading weights needs ``safetensors`` (the ``train`` extra brings it); tensors are read one at
a time, so a multi-GB model costs one tensor of memory at a time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class WeightChange:
    """How far the trained weights are from the starting ones.

    Attributes:
        tensors: tensors compared (by name, present in both models).
        changed: tensors with at least one element different.
        relative_l2: ‖W_trained − W_start‖₂ / ‖W_start‖₂ over all compared tensors together.
        max_abs: the largest absolute change of any element.
    """

    tensors: int
    changed: int
    relative_l2: float
    max_abs: float

    def describe(self) -> str:
        if not self.changed:
            return f"weights: none of {self.tensors} tensors changed (the run had no gradient)"
        return (f"weights: {self.changed} of {self.tensors} tensors changed, relative L2 change "
                f"{self.relative_l2:.2e}, largest element change {self.max_abs:.2e}")


def _tensor_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def weight_change(start: str | Path, trained: str | Path) -> WeightChange | None:
    """Compare two model folders' ``*.safetensors`` weights; ``None`` if either has none."""
    from safetensors import safe_open

    a_files, b_files = _tensor_files(Path(start)), _tensor_files(Path(trained))
    if not a_files or not b_files:
        return None

    def index(files: list[Path]) -> dict[str, Path]:
        out = {}
        for file in files:
            with safe_open(str(file), framework="pt") as handle:
                out.update(dict.fromkeys(handle.keys(), file))
        return out

    a_index, b_index = index(a_files), index(b_files)
    names = sorted(set(a_index) & set(b_index))
    changed, diff_sq, base_sq, max_abs = 0, 0.0, 0.0, 0.0
    for name in names:
        with safe_open(str(a_index[name]), framework="pt") as fa, safe_open(str(b_index[name]), framework="pt") as fb:
            x, y = fa.get_tensor(name).double(), fb.get_tensor(name).double()
        if x.shape != y.shape:
            continue
        delta = y - x
        if bool(delta.any()):
            changed += 1
            max_abs = max(max_abs, float(delta.abs().max()))
        diff_sq += float((delta * delta).sum())
        base_sq += float((x * x).sum())
    return WeightChange(len(names), changed, math.sqrt(diff_sq) / math.sqrt(base_sq) if base_sq else 0.0, max_abs)


def reward_curve(steps: Sequence[Any]) -> str:
    """Per-step means as a table (``StepSummary`` rows of :func:`~frontier_qa.train._tasks.summarize`)."""

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    lines = ["step  tasks  valid  distinct  uncertainty  tool   repetition  reward  in band"]
    for s in steps:
        lines.append(f"{s.step:>4}  {s.tasks:>5}  {s.valid:5.2f}  {s.distinct:8.2f}  {cell(s.uncertainty):>11}  "
                     f"{cell(s.tool):>5}  {s.repetition:10.3f}  {cell(s.reward):>6}  {cell(s.frontier):>7}")
    return "\n".join(lines)


__all__ = ["WeightChange", "reward_curve", "weight_change"]
