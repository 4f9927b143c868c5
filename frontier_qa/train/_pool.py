"""One iteration's task pool (Agent0 §3.3): frozen curriculum → k tool-using samples → band → labels.

The frozen curriculum writes ``pool.size`` tasks from the prompts it was trained on; every
distinct valid task is answered k times by the current executor *with its tools* (the probe's
``tools+hf:`` executor: sandboxed code, ```` ```output ```` blocks, at most 4 tool turns) and
scored as the probe scores it (majority vote, equivalent answers merged) → p̂ and the majority
answer ỹ. Tasks with ``low ≤ p̂ ≤ high`` (Agent0: 0.3 ≤ p̂ ≤ 0.8, inclusive) are kept and
labelled with ỹ: the executor's own majority is the pseudo-label it is trained towards.

Every stage appends to a JSONL file as it goes (``tasks.jsonl``, ``scored.jsonl``), so an
interrupted pool resumes with the tasks and scores it already has; ``filtered.jsonl`` is the
training set.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from frontier_qa.errors import BudgetExceededError, TargetError
from frontier_qa.scoring._case_scoring import score_case
from frontier_qa.scoring.bands import in_band as _probe_band
from frontier_qa.store._lines import encode_line
from frontier_qa.target import Case, Sampling, Target
from frontier_qa.train._prompts import TaskFormat

TASKS_FILE, SCORED_FILE, FILTERED_FILE = "tasks.jsonl", "scored.jsonl", "filtered.jsonl"
R = TypeVar("R", bound=BaseModel)


class PoolTask(BaseModel):
    """A task the frozen curriculum wrote (one line of ``tasks.jsonl``)."""

    index: int
    task_id: str | None = None
    question: str | None = None
    reference: str | None = None
    topic: str | None = None
    system: str | None = None
    error: str | None = None
    raw: str = ""


class ScoredTask(BaseModel):
    """A task answered k times by the executor (one line of ``scored.jsonl`` / ``filtered.jsonl``)."""

    task_id: str
    question: str
    system: str | None = None
    reference: str | None = None
    topic: str | None = None
    k: int
    p_hat: float
    majority: str | None = None
    answers: list[str | None] = []
    tool_calls: list[int] = []
    failed: int = 0
    kept: bool = False
    reason: str = ""

    @property
    def mean_tool_calls(self) -> float:
        return sum(self.tool_calls) / len(self.tool_calls) if self.tool_calls else 0.0


def read_jsonl(path: Path, model: type[R]) -> list[R]:
    """Rows of ``model`` from ``path``; a torn last line (a run killed mid-write) is dropped."""
    if not path.is_file():
        return []
    rows = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(model.model_validate_json(line))
        except ValueError:
            if i == len(lines) - 1:
                break  # the line being written when the run stopped: it is redone
            raise
    return rows


def append_jsonl(path: Path, rows: Iterable[BaseModel]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for row in rows:  # as every file of records: no secret in it
            f.write(encode_line(row).decode("utf-8"))
        f.flush()


def write_jsonl(path: Path, rows: Iterable[BaseModel]) -> None:
    """Write ``rows`` as JSONL to ``path`` atomically (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(encode_line(r) for r in rows))
    tmp.replace(path)


# --- stage 1: the frozen curriculum writes tasks ---------------------------------------------------


async def generate_tasks(curriculum: Target, task_format: TaskFormat, size: int, sampling: Sampling, out: Path, *,
                         offset: int = 0, max_concurrent: int = 8,
                         say: Callable[[str], None] = lambda line: None) -> list[PoolTask]:
    """``size`` tasks from the frozen curriculum, one per training prompt ``offset + i``.

    Tasks already in ``out`` are kept (resume); each new one is appended as it arrives.
    """
    have = {t.index: t for t in read_jsonl(out, PoolTask)}
    todo = [i for i in range(size) if i not in have]
    if todo:
        say(f"curriculum writes {len(todo)} task(s)" + (f" ({len(have)} already written)" if have else ""))
    semaphore = asyncio.Semaphore(max_concurrent)

    async def one(i: int) -> PoolTask:
        async with semaphore:
            case, shown = task_format.request(offset + i)
            # sample index offset + i: its own seed, so identical prompts still give different tasks
            got = await curriculum.sample(case, 1, sampling, start=offset + i)
            text = got[0].text if got and got[0].ok else None
            topic = task_format.topic(offset + i)
            if text is None:
                return PoolTask(index=i, topic=topic, error=(got[0].error if got else None) or "no text")
            task = task_format.parse(text, topic=topic, shown=shown)
            if task.case is None:
                return PoolTask(index=i, topic=topic, error=task.error, raw=text[:2000])
            return PoolTask(index=i, task_id=task.case.id, question=task.question, reference=task.reference,
                            topic=task.case.topic, system=task.case.system, raw=text[:2000])

    for future in asyncio.as_completed([one(i) for i in todo]):
        task = await future
        append_jsonl(out, [task])
        have[task.index] = task
    return [have[i] for i in sorted(have) if i < size]


# --- stage 2: the executor answers each task k times with its tools -------------------------------


async def label_tasks(executor: Target, tasks: Sequence[PoolTask], *, k: int, sampling: Sampling, out: Path,
                      band: tuple[float, float], max_concurrent: int = 8,
                      say: Callable[[str], None] = lambda line: None) -> list[ScoredTask]:
    """p̂, the majority answer and tool calls of every distinct valid task (resumable through ``out``).

    Raises:
        TargetError: the executor fails for good (the scores so far stay in ``out``).
    """
    done = {s.task_id: s for s in read_jsonl(out, ScoredTask)}
    unique: dict[str, PoolTask] = {}
    for t in tasks:
        if t.task_id and t.question and t.task_id not in unique:
            unique[t.task_id] = t
    todo = [t for tid, t in unique.items() if tid not in done]
    if todo:
        say(f"executor answers {len(todo)} task(s) k = {k} times with tools"
            + (f" ({len(done)} already scored)" if done else ""))
    semaphore = asyncio.Semaphore(max_concurrent)

    async def one(t: PoolTask) -> ScoredTask:
        async with semaphore:
            case = Case(id=t.task_id or "", prompt=t.question or "", system=t.system, topic=t.topic or "general",
                        answer_format="boxed", reference=t.reference)
            trajectories = await executor.sample(case, k, sampling)
            c = await score_case(case, trajectories)
            kept, reason = keep_task(c.p_hat, c.majority, band)
            return ScoredTask(task_id=case.id, question=case.prompt, system=t.system, reference=t.reference,
                              topic=t.topic, k=c.k, p_hat=c.p_hat, majority=c.majority, answers=list(c.answers),
                              tool_calls=[len(tr.tool_calls) for tr in trajectories], failed=c.n_failed,
                              kept=kept, reason=reason)

    futures = [asyncio.ensure_future(one(t)) for t in todo]
    try:
        for future in asyncio.as_completed(futures):
            scored = await future
            append_jsonl(out, [scored])
            done[scored.task_id] = scored
    except (TargetError, BudgetExceededError):
        for f in futures:
            f.cancel()
        await asyncio.gather(*futures, return_exceptions=True)
        raise
    return [done[tid] for tid in unique if tid in done]


def keep_task(p_hat: float, majority: str | None, band: tuple[float, float]) -> tuple[bool, str]:
    """Whether a task joins the executor's training set, and why not (Agent0: 0.3 ≤ p̂ ≤ 0.8).

    The band test is the probe's (:func:`frontier_qa.scoring.bands.in_band`: inclusive, with
    its slack on the edges); a task needs a pseudo-label too.
    """
    low, high = band
    if majority is None:
        return False, "no parsed answer (no pseudo-label)"
    if _probe_band(p_hat, low, high):
        return True, "in band"
    if p_hat < low:
        return False, f"p̂ {p_hat:.2f} < {low}: the executor's answers scatter"
    return False, f"p̂ {p_hat:.2f} > {high}: the executor is sure"


def select(scored: Sequence[ScoredTask], max_tasks: int | None) -> list[ScoredTask]:
    """The kept tasks, most uncertain first when capped (R_unc = 1 − 2|p̂ − 0.5|, then pool order)."""
    kept = [s for s in scored if s.kept]
    if max_tasks is not None and len(kept) > max_tasks:
        order = sorted(range(len(kept)), key=lambda i: (abs(kept[i].p_hat - 0.5), i))
        kept = [kept[i] for i in sorted(order[:max_tasks])]
    return kept


def p_hat_histogram(scored: Sequence[ScoredTask], bins: int = 10) -> list[int]:
    """Counts of p̂ in ``bins`` equal bins over [0, 1] (p̂ = 1 in the last)."""
    counts = [0] * bins
    for s in scored:
        counts[min(bins - 1, int(math.floor(s.p_hat * bins)))] += 1
    return counts


def summary(tasks: Sequence[PoolTask], scored: Sequence[ScoredTask], kept: Sequence[ScoredTask]) -> dict[str, Any]:
    """The pool's numbers for the run report."""
    calls = [c for s in scored for c in s.tool_calls]
    return {
        "written": len(tasks),
        "valid": sum(1 for t in tasks if t.task_id),
        "distinct": len(scored),
        "kept": len(kept),
        "mean_p_hat": (sum(s.p_hat for s in scored) / len(scored)) if scored else None,
        "p_hat_histogram": p_hat_histogram(scored),
        "tool_call_rate": (sum(1 for c in calls if c > 0) / len(calls)) if calls else None,
        "tool_calls_per_sample": (sum(calls) / len(calls)) if calls else None,
        "format_errors": _top_errors(t.error for t in tasks if t.error),
    }


def _top_errors(errors: Iterable[str | None], n: int = 3) -> list[list[Any]]:
    counts: dict[str, int] = {}
    for e in errors:
        key = (e or "").split(":")[0][:80]
        counts[key] = counts.get(key, 0) + 1
    return [[k, v] for k, v in sorted(counts.items(), key=lambda kv: -kv[1])[:n]]


__all__ = ["FILTERED_FILE", "SCORED_FILE", "TASKS_FILE", "PoolTask", "ScoredTask", "generate_tasks", "keep_task",
           "p_hat_histogram", "read_jsonl", "label_tasks", "select", "summary", "write_jsonl"]
