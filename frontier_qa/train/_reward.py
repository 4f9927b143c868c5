"""Agent0's curriculum reward against a real target, as an async TRL reward function.

For a batch of B completions, :class:`TargetReward`:

1. reads each completion as a task (:class:`~frontier_qa.train._prompts.TaskFormat`: the format
   gate R_format is "the probe's parser accepts it");
2. asks the target for k samples of every distinct valid task, many tasks at once (the target
   is a :class:`~frontier_qa.runtime.ManagedTarget`: its rate limits, retries, cache and
   budget apply), so a slow API model or a multi-step agent does not serialise training;
3. scores each task's samples like the probe does (majority vote with equivalent answers
   merged, or embedding clusters for open-ended answers) → p̂ → R_unc (Agent0 Eq. 2);
4. counts the tool calls the target actually executed, plus the task text's tool demand when
   weighted (Eq. 3, QA notes open problem 3), and the BLEU repetition penalty over the whole
   batch, all processes together (Eq. 4); with ``reward.lambda_path`` > 0, the uncertainty of the
   samples' majority path (R_path, issue 32: a task whose samples split between tool paths);
5. returns R_C (Eq. 5) per completion, logs every term per step (TRL metrics) and appends the
   batch to ``tasks.jsonl``.

The math lives in :mod:`frontier_qa.scoring.rewards` and :mod:`frontier_qa.scoring._repetition`; this module
only gathers their inputs. A budget that runs out mid-step leaves the rest of the step's tasks
unscored (``None``: TRL gives them no advantage) and sets :attr:`TargetReward.budget_exhausted`,
which stops training after the step. A target that fails for good (bad key, unreachable)
raises, naming the step.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from frontier_qa.errors import BudgetExceededError, ConfigError, TargetError
from frontier_qa.runtime._aio import gather_or_cancel
from frontier_qa.scoring._case_scoring import score_case
from frontier_qa.scoring._paths import path_key, view_of
from frontier_qa.scoring._repetition import repetition_penalty
from frontier_qa.scoring.bands import AGENT0_BAND
from frontier_qa.scoring.consistency import Consistency
from frontier_qa.scoring.rewards import PAPER, CurriculumScore, RewardConfig, column, completion_text
from frontier_qa.target import Case, Sampling, Target, Trajectory
from frontier_qa.train._prompts import Task, TaskFormat
from frontier_qa.train._tasks import TaskLog, TaskRecord

Gather = Callable[[list[str]], list[str]]
"""All processes' lists joined in process order (``accelerate.utils.gather_object``)."""


def curriculum_rewards(
    questions: Sequence[str | None],
    p_hats: Sequence[float | None],
    tool_calls: Sequence[Sequence[Any] | None],
    *,
    config: RewardConfig = PAPER,
    batch_questions: Sequence[str | None] | None = None,
    offset: int = 0,
    paths: Sequence[Sequence[str | None] | None] | None = None,
) -> list[CurriculumScore]:
    """R_C for parsed tasks (Agent0 Eq. 2-5): the pure part of :class:`TargetReward`.

    Like :func:`frontier_qa.scoring.rewards.score_curriculum_batch`, but for tasks already read by
    their domain's parser (few-shot and plain tasks have no ``<question>`` tags).

    Args:
        questions: the tasks, ``None`` where the format gate failed.
        p_hats: the target's p̂ per task, ``None`` where it was not sampled.
        tool_calls: per task, the target's trajectories (or per-sample counts), ``None`` if none.
        config: the constants.
        batch_questions: the whole batch the repetition penalty runs over (every process's
            tasks); default ``questions``. ``questions`` is the slice at ``offset`` in it.
        offset: where ``questions`` starts in ``batch_questions``.
        paths: per task, its samples' paths (R_path; read only when ``config.lambda_path`` > 0).

    Returns:
        One :class:`~frontier_qa.scoring.rewards.CurriculumScore` per task (``reference`` unset).
    """
    n = len(questions)
    path_lists = [None] * n if paths is None else list(paths)
    if len(p_hats) != n or len(tool_calls) != n or len(path_lists) != n:
        raise ConfigError(f"got {n} tasks, {len(p_hats)} p_hat values, {len(tool_calls)} tool-call entries and "
                          f"{len(path_lists)} path lists")
    batch = list(questions) if batch_questions is None else list(batch_questions)
    if list(batch[offset:offset + n]) != list(questions):
        raise ConfigError("the tasks are not the slice of the batch at the given offset",
                          hint="pass batch_questions gathered in process order and this process's offset")
    # Eq. 4 over the whole batch; a failed parse is an empty question, its own cluster, still in B
    penalties = repetition_penalty([q or "" for q in batch], weight=config.lambda_rep,
                                   threshold=config.rep_threshold, canonical_order=config.canonical_order)
    scores = []
    rows = zip(questions, p_hats, tool_calls, penalties[offset:offset + n], path_lists, strict=True)
    for question, p_hat, calls, rep, sample_paths in rows:
        unc = None if p_hat is None else config.uncertainty(p_hat)
        tool = None if calls is None and config.tool_executor_weight > 0 else config.tool(calls, question or "")
        path = config.path(sample_paths)
        if question is None:
            reward: float | None = 0.0  # Eq. 5's gate
        elif unc is None or (tool is None and config.needs_tool_calls):
            reward = None  # not scored: TRL gives it no advantage
        else:
            reward = config.composite(unc, tool, rep, path)
        scores.append(CurriculumScore(question, None, 1.0 if question is not None else 0.0, unc, tool, rep, reward,
                                      path))
    return scores


@dataclass(frozen=True)
class _Sampled:
    """What the target did on one task."""

    consistency: Consistency | None
    trajectories: tuple[Trajectory, ...] = ()
    skipped: str | None = None


@dataclass(eq=False, repr=False)  # a reward function: compared by identity, its own repr
class TargetReward:
    """R_C with the target sampled k times per task; an async reward function for TRL.

    ``await reward(prompts, completions, **columns) -> list[float | None]``. Columns read:
    ``topic`` and ``shown`` (from :meth:`TaskFormat.rows`), ``trainer_state`` (for the step),
    ``log_metric`` and ``log_extra`` (TRL's logging hooks). Completions are strings or
    conversational messages.

    Args:
        target: the agent under test (a ``ManagedTarget`` brings limits, retries, cache, budget).
        task_format: how completions become tasks and cases.
        k: samples per task (Agent0: 10).
        sampling: the target's sampling (sample i of a task uses ``Sampling.seed_for(case, i)``, so a task seen in
            an earlier step comes from the cache).
        config: the reward constants (:data:`~frontier_qa.scoring.rewards.PAPER` by default).
        max_concurrent_tasks: tasks whose samples are drawn at once.
        embedder: for open-ended answers, an embedder or its spec (default MiniLM).
        log: where each batch's :class:`TaskRecord` s go (``None``: not written).
        gather: joins every process's questions (multi-GPU), for a batch-wide repetition penalty.
        rank: this process's index (its slice of the gathered batch).

    Attributes:
        budget_exhausted: the budget message once the target budget ran out, else ``None``.
        generation: reward calls so far.
        calls: ``(step, start, end)`` of every call (``time.perf_counter`` seconds): how long
            scoring, target sampling above all, took in each step.
    """

    __name__ = "curriculum_reward"  # TRL logs rewards under the callable's name

    target: Target
    task_format: TaskFormat
    _: KW_ONLY
    k: int = 10
    sampling: Sampling = Sampling()
    config: RewardConfig = PAPER
    max_concurrent_tasks: int = 16
    embedder: Any = None
    log: TaskLog | None = None
    gather: Gather | None = None
    rank: int = 0
    generation: int = field(default=0, init=False)
    budget_exhausted: str | None = field(default=None, init=False)
    calls: list[tuple[int, float, float]] = field(default_factory=list, init=False)  # (step, start, end), perf_counter

    def __post_init__(self) -> None:
        if self.k < 1 or self.max_concurrent_tasks < 1:
            raise ConfigError(f"k = {self.k} and max_concurrent_tasks = {self.max_concurrent_tasks} must be >= 1")

    def __repr__(self) -> str:
        return f"TargetReward({getattr(self.target, 'id', self.target)!r}, k={self.k}, {self.config!r})"

    async def __call__(
        self, prompts: Any = None, completions: Sequence[Any] = (), **columns: Any
    ) -> list[float | None]:
        began = time.perf_counter()
        texts = [completion_text(c) for c in completions]
        n = len(texts)
        topics = column(columns, "topic", n)
        shown = column(columns, "shown", n)
        state = columns.get("trainer_state")
        step = int(getattr(state, "global_step", self.generation)) + 1
        tasks = [self.task_format.parse(text, topic=topic or None, shown=tuple(seen or ()))
                 for text, topic, seen in zip(texts, topics, shown, strict=True)]
        calls_before = _stat(self.target, "calls")
        sampled = await self._sample_all(tasks, step)
        questions = [t.question for t in tasks]
        batch, offset = questions, 0
        if self.gather is not None:
            joined = self.gather([q if q is not None else "\0" for q in questions])
            batch = [None if q == "\0" else q for q in joined]
            offset = self.rank * n
        scores = curriculum_rewards(
            questions,
            [s.consistency.p_hat if s and s.consistency else None for s in sampled],
            [s.trajectories if s and s.consistency else None for s in sampled],
            config=self.config, batch_questions=batch, offset=offset,
            paths=[_paths(s.trajectories) if s and s.consistency and self.config.lambda_path else None
                   for s in sampled],
        )
        self._report(columns, tasks, sampled, scores, step, _stat(self.target, "calls") - calls_before)
        if self.log is not None:
            self.log.write(self._records(texts, topics, tasks, sampled, scores, step))
        self.generation += 1
        self.calls.append((step, began, time.perf_counter()))
        return [s.reward for s in scores]

    # --- sampling ---------------------------------------------------------------------------

    async def _sample_all(self, tasks: Sequence[Task], step: int) -> list[_Sampled | None]:
        """K samples of every distinct valid task, ``max_concurrent_tasks`` at a time."""
        unique: dict[str, Case] = {}
        for task in tasks:
            if task.case is not None:
                unique.setdefault(task.question or "", task.case)  # same question, same case: sample once
        semaphore = asyncio.Semaphore(self.max_concurrent_tasks)

        async def one(case: Case) -> _Sampled:
            async with semaphore:
                if self.budget_exhausted is not None:
                    return _Sampled(None, skipped="budget exhausted")
                try:
                    trajectories = await self.target.sample(case, self.k, self.sampling)
                except BudgetExceededError as err:
                    self.budget_exhausted = self.budget_exhausted or err.message
                    return _Sampled(None, skipped="budget exhausted")
                return _Sampled(await score_case(case, trajectories, embedder=self.embedder),
                                tuple(trajectories))

        keys = list(unique)
        try:
            results = dict(zip(keys, await gather_or_cancel([one(unique[key]) for key in keys]), strict=True))
        except TargetError as err:  # bad key, unreachable: say which step, keep the type
            raise type(err)(f"while rewarding the tasks of training step {step}: {err.message}",
                            hint=err.hint) from err
        return [results.get(task.question or "") if task.case is not None else None for task in tasks]

    # --- logging ----------------------------------------------------------------------------

    def _report(self, columns: Mapping[str, Any], tasks: Sequence[Task], sampled: Sequence[_Sampled | None],
                scores: Sequence[CurriculumScore], step: int, calls: int) -> None:
        log_metric = columns.get("log_metric")
        if callable(log_metric):
            def mean(values: Sequence[float | None]) -> float | None:
                known = [v for v in values if v is not None]
                return math.fsum(known) / len(known) if known else None

            p_hats = [s.consistency.p_hat for s in sampled if s is not None and s.consistency is not None]
            valid = [t.question for t in tasks if t.question is not None]
            terms = {
                "curriculum/format": mean([s.format for s in scores]),
                "curriculum/uncertainty": mean([s.uncertainty for s in scores]),
                "curriculum/tool": mean([s.tool for s in scores]),
                "curriculum/repetition": mean([s.repetition for s in scores]),
                "curriculum/path": mean([s.path for s in scores]),
                "curriculum/p_hat": mean(p_hats),
                "curriculum/frontier_share": (sum(map(AGENT0_BAND.contains, p_hats)) / len(p_hats)) if p_hats else None,
                "curriculum/distinct_share": len(set(valid)) / len(tasks) if tasks else None,
                "curriculum/unscored": float(sum(s.reward is None for s in scores)),
                "curriculum/target_calls": float(calls),
            }
            for name, value in terms.items():
                if value is not None:
                    log_metric(name, value)
        log_extra = columns.get("log_extra")
        if callable(log_extra):  # TRL's completions table (log_completions)
            log_extra("question", [t.question for t in tasks])
            log_extra("p_hat", [s.consistency.p_hat if s and s.consistency else None for s in sampled])
            for term in ("uncertainty", "tool", "repetition"):
                log_extra(term, [getattr(s, term) for s in scores])

    def _records(self, texts: Sequence[str], topics: Sequence[Any], tasks: Sequence[Task],
                 sampled: Sequence[_Sampled | None], scores: Sequence[CurriculumScore], step: int) -> list[TaskRecord]:
        assert self.log is not None
        out = []
        rows = zip(texts, topics, tasks, sampled, scores, strict=True)
        for index, (text, topic, task, got, score) in enumerate(rows):
            c = got.consistency if got is not None else None
            calls = [t.n_tool_calls for t in got.trajectories] if got is not None and got.trajectories else []
            out.append(TaskRecord(
                step=step, generation=self.generation, index=index, topic=str(topic or ""),
                completion=self.log.clip(text), question=task.question, reference=task.reference,
                format_error=task.error, case_id=task.case.id if task.case is not None else None,
                k=c.k if c is not None else 0, p_hat=c.p_hat if c is not None else None,
                majority=c.majority if c is not None else None,
                n_failed=c.n_failed if c is not None else 0, n_unparseable=c.n_unparseable if c is not None else 0,
                tool_calls=math.fsum(calls) / len(calls) if calls else None,
                format=score.format, uncertainty=score.uncertainty, tool=score.tool, repetition=score.repetition,
                reward=score.reward, skipped=got.skipped if got is not None else None,
            ))
        return out


def _paths(trajectories: Sequence[Trajectory]) -> list[str | None]:
    """Each sample's path (tools in call order; ``None`` for a failed sample), as a probe reads it."""
    return [path_key(view_of(t)) for t in trajectories]


def _stat(target: Any, name: str) -> int:
    stats = getattr(target, "stats", None)
    return int(getattr(stats(), name, 0)) if callable(stats) else 0


__all__ = ["Gather", "TargetReward", "curriculum_rewards"]


