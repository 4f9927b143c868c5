"""Scripted targets and curricula for probe-engine tests (reusable by CLI tests).

A :class:`ScriptedAdapter` is a real :class:`~frontier_qa.target.Adapter` whose answer for
sample ``i`` of a case is a pure function of the case and ``i``; wrapped by the real runtime
(:func:`open_scripted` → :class:`~frontier_qa.runtime.ManagedTarget`) it gets the cache,
budget and retries every real target gets. Answer functions:

* :func:`from_distribution`: a per-case answer distribution, drawn with a low-discrepancy
  sequence, so the first k samples follow it closely (deterministic per case and index);
* :func:`always_right`: answers the case's truth (``metadata["truth"]``, else its reference);
* :func:`moody`: right everywhere except on one topic, where truth and a wrong answer alternate;
* :func:`always`: one fixed answer.

``None`` as an answer means an unparseable sample (text without a box).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from frontier_qa.curricula.file import StaticCurriculum
from frontier_qa.curricula.base import Outcome, Proposal
from frontier_qa.runtime import Backoff, Budget, Limits, ManagedTarget, SampleCache
from frontier_qa.target import Adapter, Case, Sampling, Trajectory, Usage

AnswerFn = Callable[[Case, int], "str | None"]
_PHI = (math.sqrt(5.0) - 1.0) / 2.0  # golden-ratio step: the most even low-discrepancy sequence
FAST = Backoff(initial_s=0.001, max_s=0.005, jitter_s=0.0)


def _offset(key: str) -> float:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2.0**64


def pick(
    distribution: Mapping[str | None, float] | Sequence[tuple[str | None, float]], key: str, index: int
) -> str | None:
    """The answer of sample ``index`` for ``key`` under ``distribution`` (weights, any scale).

    u_i = frac(offset(key) + (i + 1)·φ) is spread evenly over [0, 1), so among the first k
    samples each answer's count is within about one of k·weight.
    """
    items = list(distribution.items()) if isinstance(distribution, Mapping) else list(distribution)
    total = sum(w for _, w in items)
    u = (_offset(key) + (index + 1) * _PHI) % 1.0
    acc = 0.0
    for answer, weight in items:
        acc += weight / total
        if u < acc:
            return answer
    return items[-1][0]


def truth_of(case: Case) -> str | None:
    """The right answer of a scripted case: ``metadata["truth"]``, else the reference."""
    truth = case.metadata.get("truth")
    return str(truth) if truth is not None else case.reference


def always_right(case: Case, index: int) -> str | None:
    return truth_of(case)


def always(answer: str | None) -> AnswerFn:
    return lambda case, index: answer


def from_distribution(table: Mapping[str, Mapping[str | None, float]], default: AnswerFn = always_right) -> AnswerFn:
    """Per case id, an answer distribution; cases not in ``table`` use ``default``."""

    def answer(case: Case, index: int) -> str | None:
        dist = table.get(case.id)
        return default(case, index) if dist is None else pick(dist, case.id, index)

    return answer


def moody(topic: str, wrong: str = "wrong", share_right: float = 0.5) -> AnswerFn:
    """Right everywhere except on ``topic``, where it answers right with ``share_right``."""

    def answer(case: Case, index: int) -> str | None:
        if case.topic != topic:
            return truth_of(case)
        return pick({truth_of(case): share_right, wrong: 1.0 - share_right}, case.id, index)

    return answer


class ScriptedAdapter(Adapter):
    """A backend whose sample ``i`` of a case answers ``answer(case, i)``.

    Args:
        answer: the answer function; may be swapped at any time (a target that changes).
        id: the target id (part of cache keys).
        version: the target version reported to records.
        max_n: samples per backend call (1: calls == samples).
        gate: an :class:`asyncio.Event`; when set to an unset event, calls after
            ``gate_after`` wait on it (to cancel a run mid-way).
        gate_after: calls served before the gate applies.
    """

    def __init__(self, answer: AnswerFn = always_right, *, id: str = "scripted:test", version: str | None = "1",
                 max_n: int = 1, gate: asyncio.Event | None = None, gate_after: int = 0) -> None:
        self.answer = answer
        self.id = id
        self._version = version
        self.max_n = max_n
        self.gate = gate
        self.gate_after = gate_after
        self.calls: list[tuple[str, int, int]] = []  # (case id, start, n) per backend call

    def version(self) -> str | None:
        return self._version

    @property
    def samples(self) -> int:
        return sum(n for _, _, n in self.calls)

    def samples_for(self, case_id: str) -> list[int]:
        """Sample indices the backend produced for a case, in call order."""
        return [i for cid, start, n in self.calls if cid == case_id for i in range(start, start + n)]

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        if self.gate is not None and len(self.calls) >= self.gate_after:
            await self.gate.wait()
        self.calls.append((case.id, start, n))
        await asyncio.sleep(0)
        out = []
        for i in range(start, start + n):
            answer = self.answer(case, i)
            if answer is None:
                text = "I am not sure."
            elif case.answer_format == "text":
                text = answer
            else:
                text = f"Let me think. \\boxed{{{answer}}}"
            out.append(Trajectory(text=text, usage=Usage(12, 6), sample_index=i))
        return out


def open_scripted(adapter: Adapter, cache_dir: Path | None = None, *, budget: Budget | None = None,
                  max_concurrency: int = 16) -> ManagedTarget:
    """The adapter inside the real runtime: cache (when a folder is given), budget, retries."""
    cache = SampleCache(cache_dir) if cache_dir is not None else None
    return ManagedTarget(adapter, Limits(backoff=FAST, max_concurrency=max_concurrency), budget, cache)


def case(id: str, prompt: str, *, topic: str = "general", reference: str | None = None,
         truth: str | None = None, answer_format: str = "boxed", **metadata: object) -> Case:
    """A scripted case; ``truth`` is what an always-right target answers."""
    meta = dict(metadata)
    if truth is not None:
        meta["truth"] = truth
    return Case(id=id, prompt=prompt, topic=topic, reference=reference, answer_format=answer_format, metadata=meta)


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


def curriculum(proposals: Sequence[Proposal], name: str = "scripted") -> StaticCurriculum:
    return StaticCurriculum(proposals, name=name)


class EndlessCurriculum:
    """Proposes ``make(i)`` for i = 0, 1, 2, ... forever; remembers every outcome."""

    def __init__(self, make: Callable[[int], Proposal], name: str = "endless") -> None:
        self.make = make
        self.name = name
        self.proposed = 0
        self.outcomes: list[Outcome] = []

    async def propose(self, n: int) -> Sequence[Proposal]:
        batch = [self.make(self.proposed + j) for j in range(n)]
        self.proposed += n
        return batch

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        self.outcomes.extend(outcomes)


def words_embedder() -> object:
    """A tiny deterministic embedder for open-ended tests: bag of lower-cased words, hashed."""
    import numpy as np

    class Words:
        def encode(self, texts: list[str]) -> np.ndarray:
            rows = np.zeros((len(texts), 1024))
            for r, text in enumerate(texts):
                for word in _words(text):
                    rows[r, int(hashlib.md5(word.encode()).hexdigest(), 16) % 1024] += 1.0
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)

    return Words()


def _words(text: str) -> Iterator[str]:
    yield from text.lower().replace(".", " ").replace(",", " ").split()


def scripted_agent(case: Case, sample_index: int) -> str:
    """A Python-agent form for spec-driven tests (``python:tests/scripted.py:scripted_agent``):
    a coin flip between the truth and a wrong answer on topic ``weekdays``, right elsewhere."""
    answer = moody("weekdays")(case, sample_index)
    return "I am not sure." if answer is None else f"\\boxed{{{answer}}}"
