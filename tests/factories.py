"""Shared factories of the test suite: the repository root, case sets, probed case records, a
Python agent for specs.

The scripted targets and curricula themselves ship with frontier-qa (:mod:`frontier_qa.testing`);
these are the fixed case sets the tests probe with. This file is also loaded by path as a
``python:`` agent (``python:tests/factories.py:scripted_agent``), so it imports nothing from
``tests``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Coroutine, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.scoring.consistency import self_consistency
from frontier_qa.store._records import CaseClass, CaseRecord, Interval, case_record
from frontier_qa.target import Case, Trajectory, Usage
from frontier_qa.testing import case, moody

REPO = Path(__file__).resolve().parents[1]


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module, registered in ``sys.modules`` (its dataclasses need
    that, and the benchmarks import each other by name, e.g. ``mixes``).
    """
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
"""The repository root (tests live one folder down, grouped by layer)."""

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
"""When the factories' records start: a fixed instant, so stored bytes and timelines repeat."""

TARGET = "openai:tiny@http://127.0.0.1:9/v1"
"""The target id of :func:`probed_record`'s records unless a test names another."""

T = TypeVar("T")


def first_closed_folder(path: Path, uid: int) -> Path | None:
    """The first folder on the way to ``path`` that ``uid`` (not the owner, in no group of it)
    cannot enter, ``None`` when every one is open to others (o+x).
    """
    for folder in [*reversed(path.resolve().parents), path.resolve()]:
        info = folder.stat()
        if info.st_uid != uid and not info.st_mode & 0o001:
            return folder
    return None


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion in a fresh event loop."""
    return asyncio.run(coro)


def probed_record(
    case_id: str,
    case_class: CaseClass | str = CaseClass.PASS,
    answers: Sequence[str | None] = ("4", "4", "4", "5"),
    *,
    prompt: str = "What is 2+2? Put the answer in \\boxed{}.",
    topic: str = "algebra",
    reference: str | None = "4",
    run_id: str = "run-1",
    target_id: str = TARGET,
    version: str | None = "v1",
    interval: tuple[float, float] | None = None,
    majority_correct: bool | None = None,
    cost_usd: float | None = 0.001,
    at: int = 0,
) -> CaseRecord:
    """A case record built the way the probe engine builds one, from in-memory values.

    Each of ``answers`` is one sample (``None``: a call that timed out) costing ``cost_usd``
    (``None``: the target reports no price) and 30 tokens; the answers are scored by the real
    self-consistency (an ``invalid`` case is left unscored, as the engine leaves it) and
    written by :func:`~frontier_qa.store._records.case_record`. Probing starts ``at`` seconds
    after :data:`T0` and takes one second; the reference counts as verified.
    """
    trajectories = [
        Trajectory(
            text=None if a is None else f"thinking...\n\\boxed{{{a}}}",
            usage=Usage(10, 20),
            cost_usd=cost_usd,
            sample_index=i,
            error=None if a is not None else "timeout",
        )
        for i, a in enumerate(answers)
    ]
    scored = CaseClass(case_class) is not CaseClass.INVALID
    return case_record(
        Case(id=case_id, prompt=prompt, topic=topic, reference=reference),
        trajectories,
        list(answers),
        self_consistency(answers, failed=[a is None for a in answers]) if scored else None,
        case_class=case_class,
        run_id=run_id,
        target_id=target_id,
        target_version=version,
        seed=100,
        interval=None if interval is None else Interval(low=interval[0], high=interval[1], method="wilson"),
        reference_verified=True,
        majority_correct=majority_correct,
        started_at=T0 + timedelta(seconds=at),
        finished_at=T0 + timedelta(seconds=at + 1),
    )


def arithmetic_cases(n: int, *, topic: str = "arithmetic", start: int = 0, with_reference: bool = True,
                     solution: bool = False) -> list[Proposal]:
    """``n`` distinct addition tasks (no two are BLEU near-duplicates), right answers as truth."""
    out = []
    for i in range(start, start + n):
        a, b = 17 + 13 * i, 5 + 7 * i
        words = ("apples", "books", "coins", "stamps", "marbles", "shells", "cards", "pens")
        prompt = f"Case {i}: Ana has {a} {words[i % len(words)]} and receives {b} more. How many now?"
        c = case(f"{topic}-{i}", prompt, topic=topic, reference=str(a + b) if with_reference else None,
                 truth=str(a + b))
        out.append(Proposal(c, solution=f"print({a} + {b})" if solution else None, source="scripted"))
    return out


_WEEKDAY_TEMPLATES = (
    "{name} starts a trip on {day} and returns {n} days later. Which weekday is the return?",
    "A parcel sent by {name} on {day} takes {n} days to arrive; on what day does it arrive?",
    "Counting {n} days forward from {day}, which day does {name} reach?",
    "{name}'s exam is {n} days after {day}. Name the weekday of the exam.",
    "If today were {day}, what weekday would {name} see in {n} days?",
    "The library lends {name} a book on {day} for {n} days. When is it due?",
    "{name} plants seeds on {day}; they sprout {n} days afterwards. Sprouting day?",
    "Starting from {day}, {name} waits {n} nights. Which morning follows?",
    "Our ferry leaves {day}. {name} sails {n} days. Landing weekday, please.",
    "Suppose {day} is day zero for {name}. Day {n} is which weekday?",
    "{name} set an alarm for {n} days past {day} — what weekday rings?",
    "Quiz for {name}: {day} plus {n} days equals which day of the week?",
)
_NAMES = ("Ana", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hina", "Ivo", "Jun", "Kemal", "Lior")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def weekday_cases(n: int, *, topic: str = "weekdays", start: int = 0) -> list[Proposal]:
    """``n`` distinct weekday tasks on ``topic`` (at most 12 before templates repeat)."""
    out = []
    for i in range(start, start + n):
        day, later = i % 7, i + 3
        prompt = _WEEKDAY_TEMPLATES[i % len(_WEEKDAY_TEMPLATES)].format(name=_NAMES[i % len(_NAMES)], day=DAYS[day],
                                                                         n=later)
        out.append(Proposal(case(f"{topic}-{i}", prompt, topic=topic, truth=DAYS[(day + later) % 7]),
                            source="scripted"))
    return out


def scripted_agent(case: Case, sample_index: int) -> str:
    """A Python-agent form for spec-driven tests (``python:tests/factories.py:scripted_agent``):
    a coin flip between the truth and a wrong answer on topic ``weekdays``, right elsewhere.
    """
    answer = moody("weekdays")(case, sample_index)
    return "I am not sure; I would need more to go on.\nSorry." if answer is None else f"\\boxed{{{answer}}}"
