"""The tasks the curriculum generated at every step, with every reward term, as JSON lines.

``<output_dir>/tasks.jsonl`` gets one :class:`TaskRecord` per generated task as soon as its
reward is known (a batch is written with one ``write`` and flushed, so a crash loses at most
the batch in flight). With several training processes, process ``r > 0`` writes
``tasks-rank<r>.jsonl`` beside it. :func:`read_tasks` reads them back; :func:`summarize`
turns them into per-step means, the numbers behind "the curriculum is learning".
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from frontier_qa.errors import ConfigError
from frontier_qa.scoring.bands import AGENT0_BAND
from frontier_qa.store._lines import encode_line
from frontier_qa.store._records import utc_now

TASKS_SCHEMA_VERSION = 1
TASKS_FILE = "tasks.jsonl"


class TaskRecord(BaseModel):
    """One generated task and its reward (Agent0 Eq. 2-5), as written to ``tasks.jsonl``.

    Attributes:
        step: the optimizer step these tasks were generated for (1-based).
        generation: the reward call that scored them (0-based, counts every batch).
        index: position in the batch of this process.
        topic: the topic the prompt asked for (``""``: any).
        completion: the model's raw text (cut to ``max_chars``).
        question: the parsed task; ``None`` when the format gate failed.
        reference: the curriculum's unverified answer, if any.
        format_error: why the format gate failed.
        case_id: the id of the case put to the target.
        k: target samples drawn (0 when the target was not asked).
        p_hat: the target's self-consistency (majority share of k), ``None`` if not sampled.
        majority: the target's majority answer.
        n_failed: samples whose target call failed.
        n_unparseable: samples without an extractable answer.
        tool_calls: mean executed tool calls per sample.
        format: R_format (1 or 0).
        uncertainty: R_unc (Eq. 2), ``None`` without p̂.
        tool: R_tool before λ_tool (Eq. 3), ``None`` without trajectories.
        repetition: R_rep after λ_rep (Eq. 4), over the whole batch.
        reward: R_C (Eq. 5); ``None`` when the target could not be asked (budget spent).
        skipped: why the target was not asked, when it was not.
        created: when the record was written (UTC).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = TASKS_SCHEMA_VERSION
    step: int
    generation: int
    index: int
    topic: str = ""
    completion: str
    question: str | None = None
    reference: str | None = None
    format_error: str | None = None
    case_id: str | None = None
    k: int = 0
    p_hat: float | None = None
    majority: str | None = None
    n_failed: int = 0
    n_unparseable: int = 0
    tool_calls: float | None = None
    format: float
    uncertainty: float | None = None
    tool: float | None = None
    repetition: float
    reward: float | None = None
    skipped: str | None = None
    created: AwareDatetime = Field(default_factory=utc_now)


class TaskLog:
    """Appends :class:`TaskRecord` batches to a JSONL file (thread-safe: TRL scores on its own thread).

    Args:
        path: the file (its folder is created).
        max_chars: raw completion text kept per record (head and tail of longer text).
    """

    def __init__(self, path: str | os.PathLike[str], *, max_chars: int = 4000) -> None:
        self.path = Path(path)
        self.max_chars = max_chars
        self._lock = threading.Lock()

    def clip(self, text: str) -> str:
        """``text`` cut to ``max_chars`` (head and tail kept around a marker)."""
        if len(text) <= self.max_chars:
            return text
        half = self.max_chars // 2
        return f"{text[:half]}\n…[{len(text) - 2 * half} characters cut]…\n{text[-half:]}"

    def write(self, records: Iterable[TaskRecord]) -> None:
        """Append the records with one write and flush them to disk."""
        payload = b"".join(encode_line(r) for r in records)
        if not payload:
            return
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())


def task_log_path(output_dir: str | os.PathLike[str], rank: int = 0) -> Path:
    """Where process ``rank`` writes its tasks under ``output_dir``."""
    name = TASKS_FILE if rank == 0 else f"tasks-rank{rank}.jsonl"
    return Path(output_dir) / name


def read_tasks(path: str | os.PathLike[str]) -> list[TaskRecord]:
    """Every record of a tasks file, in file order.

    Raises:
        ConfigError: the file is missing, a line is not a record (names the line), or a record
            is from a newer frontier-qa.
    """
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ConfigError(f"cannot read tasks file {file}: {err.strerror}",
                          hint="point at <output_dir>/tasks.jsonl of a training run") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as err:
            raise ConfigError(f"{file}:{number}: not a JSON line: {err}", hint="the file is damaged") from None
        if isinstance(data, dict) and int(data.get("schema_version", 0)) > TASKS_SCHEMA_VERSION:
            raise ConfigError(f"{file}:{number}: written by a newer frontier-qa (schema "
                              f"{data['schema_version']})", hint="upgrade frontier-qa to read it")
        try:
            out.append(TaskRecord.model_validate(data))
        except ValueError as err:
            raise ConfigError(f"{file}:{number}: not a task record: {err}", hint="the file is damaged") from None
    return out


@dataclass(frozen=True)
class StepSummary:
    """Means over the tasks of one step.

    Attributes:
        step: the optimizer step.
        tasks: tasks generated.
        valid: share that passed the format gate.
        distinct: distinct questions / tasks (1: no two alike; 1/B: all the same).
        uncertainty: mean R_unc over tasks the target answered.
        tool: mean R_tool over tasks with trajectories.
        repetition: mean R_rep over all tasks.
        reward: mean R_C over rewarded tasks.
        frontier: share of answered tasks with p̂ in Agent0's band [0.3, 0.8].
    """

    step: int
    tasks: int
    valid: float
    distinct: float
    uncertainty: float | None
    tool: float | None
    repetition: float
    reward: float | None
    frontier: float | None


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def summarize(records: Iterable[TaskRecord]) -> list[StepSummary]:
    """Per-step means of the reward terms, in step order."""
    by_step: dict[int, list[TaskRecord]] = {}
    for record in records:
        by_step.setdefault(record.step, []).append(record)
    out = []
    for step in sorted(by_step):
        rows = by_step[step]
        answered = [r for r in rows if r.p_hat is not None]
        out.append(StepSummary(
            step=step,
            tasks=len(rows),
            valid=sum(r.question is not None for r in rows) / len(rows),
            distinct=len({r.question if r.question is not None else f"\0{i}" for i, r in enumerate(rows)}) / len(rows),
            uncertainty=_mean([r.uncertainty for r in rows if r.uncertainty is not None]),
            tool=_mean([r.tool for r in rows if r.tool is not None]),
            repetition=math.fsum(r.repetition for r in rows) / len(rows),
            reward=_mean([r.reward for r in rows if r.reward is not None]),
            frontier=(sum(r.p_hat is not None and AGENT0_BAND.contains(r.p_hat) for r in answered) / len(answered))
            if answered else None,
        ))
    return out


__all__ = ["TASKS_FILE", "TASKS_SCHEMA_VERSION", "StepSummary", "TaskLog", "TaskRecord", "read_tasks",
           "summarize", "task_log_path"]
