"""Resuming a training run without logging a step twice.

TRL saves ``checkpoint-N`` after optimizer step N, but the run's own logs (``tasks.jsonl``,
``rollouts.jsonl``, ``metrics.jsonl``) are written while a step runs. A run killed during step
N + 1 (``kill -9``, a lost node) has written that step's tasks and rollouts but not its
checkpoint; resuming from ``checkpoint-N`` generates step N + 1 again. So before a resumed run
starts, every log line of a step after N is dropped: each step then appears exactly once, with
the samples that trained the model.

Pure Python; nothing here imports torch.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from frontier_qa.errors import ConfigError

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_step(output_dir: str | os.PathLike[str], resume: bool | str | os.PathLike[str]) -> int | None:
    """The optimizer step a run resumes from, ``None`` when it does not resume from a checkpoint.

    Args:
        output_dir: the run folder holding ``checkpoint-N`` folders.
        resume: ``True`` (the latest checkpoint, as TRL picks it), a checkpoint folder, or
            ``False``.
    """
    if not resume:
        return None
    if resume is True:
        steps = [int(m.group(1)) for p in Path(output_dir).glob("checkpoint-*")
                 if p.is_dir() and (m := _CHECKPOINT.match(p.name))]
        return max(steps) if steps else None
    match = _CHECKPOINT.match(Path(resume).name)
    return int(match.group(1)) if match else None


def drop_after(path: str | os.PathLike[str], step: int, *, key: str = "step") -> int:
    """Rewrite a JSONL log keeping only lines whose ``key`` is at most ``step``.

    Lines without the key, and a torn last line (the run died while writing it), are dropped
    too when anything after ``step`` is; the file is replaced atomically.

    Returns:
        How many lines were dropped (0: the file was left untouched).
    """
    file = Path(path)
    if not file.is_file():
        return 0
    lines = file.read_text(encoding="utf-8").splitlines()
    kept: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            value = json.loads(line).get(key)
        except (ValueError, AttributeError):
            continue  # a torn or foreign line: it cannot belong to a step that was checkpointed
        if isinstance(value, (int, float)) and value <= step:
            kept.append(line)
    dropped = sum(1 for line in lines if line.strip()) - len(kept)
    if dropped:
        tmp = file.with_suffix(file.suffix + ".tmp")
        tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        tmp.replace(file)
    return dropped


def drop_logs_after(step: int | None, paths: Iterable[str | os.PathLike[str]]) -> dict[str, int]:
    """:func:`drop_after` on each log; ``step`` ``None`` (no checkpoint to resume from) does nothing.

    Returns:
        Lines dropped per file, only files that lost some.
    """
    if step is None:
        return {}
    out = {}
    for path in paths:
        dropped = drop_after(path, step)
        if dropped:
            out[str(path)] = dropped
    return out


def train_resuming(trainer: Any, output_dir: str | os.PathLike[str], resume: bool | str | os.PathLike[str],
                   logs: Iterable[str | os.PathLike[str]], *, instrument: Callable[[Any], None] | None = None,
                   say: Callable[[str], None] = lambda line: None) -> None:
    """``trainer.train()``, resuming from ``resume`` after dropping the log lines of the steps
    that will run again (:func:`drop_logs_after`); ``instrument(trainer)`` first, if given.

    Raises:
        ConfigError: the checkpoint to resume from cannot be used.
    """
    dropped = drop_logs_after(checkpoint_step(output_dir, resume), logs)
    if dropped:
        say(f"resuming: dropped the log lines of steps after the checkpoint ({sum(dropped.values())} line(s))")
    if instrument is not None:
        instrument(trainer)
    try:
        trainer.train(resume_from_checkpoint=resume or None)
    except ValueError as err:
        if "checkpoint" in str(err).lower():
            raise ConfigError(f"cannot resume: {err}", hint=f"train without --resume, or check {output_dir}") from None
        raise


__all__ = ["checkpoint_step", "drop_after", "drop_logs_after", "train_resuming"]
