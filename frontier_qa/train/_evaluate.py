"""How well an executor answers labelled questions: held-out accuracy and Agent0's Table 5.

Both are one measurement: sample the executor (with its tools) ``samples`` times per question,
read the last ``\\boxed{}`` answer, compare it with the label by equivalence, and count tool
calls. Held-out accuracy labels are the true answers; Table 5 labels are each iteration's
pseudo-labels, and the executor measured is the *first* one (Agent0 Table 5: the pass rate of
the iteration-1 executor falls on later iterations' tasks when the curriculum gets harder, and
the tool calls per task rise when R_tool works).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from frontier_qa.scoring._equivalence import comparator
from frontier_qa.scoring.answers import extract_answer
from frontier_qa.target import Case, Sampling, Target


@dataclass(frozen=True)
class Question:
    """A question with the answer it is graded against."""

    id: str
    question: str
    label: str
    system: str | None = None


@dataclass(frozen=True)
class PassRate:
    """Pass rate of one executor on a question set.

    Attributes:
        questions: questions asked.
        samples: samples drawn (questions × samples per question).
        correct: samples whose boxed answer ≡ the label.
        answered: samples with a parseable boxed answer.
        tool_calls: code blocks run, all samples together.
        failed: samples whose call failed.
    """

    questions: int
    samples: int
    correct: int
    answered: int
    tool_calls: int
    failed: int

    @property
    def rate(self) -> float | None:
        """Share of samples that are right, ``None`` with no samples."""
        return self.correct / self.samples if self.samples else None

    @property
    def tool_calls_per_task(self) -> float | None:
        """Mean code blocks run per question (summed over its samples, divided by samples per question)."""
        return self.tool_calls / self.samples if self.samples else None

    def as_dict(self) -> dict[str, float | int | None]:
        return {**asdict(self), "rate": self.rate, "tool_calls_per_task": self.tool_calls_per_task}


async def pass_rate(executor: Target, questions: Sequence[Question], *, samples: int, sampling: Sampling,
                    max_concurrent: int = 8, mode: str = "math") -> PassRate:
    """Sample ``executor`` ``samples`` times per question and grade each boxed answer against its label."""
    same = comparator(mode)
    semaphore = asyncio.Semaphore(max_concurrent)

    async def one(q: Question) -> tuple[int, int, int, int]:
        async with semaphore:
            case = Case(id=q.id, prompt=q.question, system=q.system, answer_format="boxed")
            got = await executor.sample(case, samples, sampling)
        correct = answered = calls = failed = 0
        for t in got:
            calls += len(t.tool_calls)
            if not t.ok:
                failed += 1
                continue
            answer = extract_answer(t.text, "boxed")
            answered += answer is not None
            correct += answer is not None and same(answer, q.label)
        return correct, answered, calls, failed

    results = await asyncio.gather(*(one(q) for q in questions))
    return PassRate(len(questions), len(questions) * samples, sum(r[0] for r in results),
                    sum(r[1] for r in results), sum(r[2] for r in results), sum(r[3] for r in results))


__all__ = ["PassRate", "Question", "pass_rate"]
