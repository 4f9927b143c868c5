"""Scoring one case: from its samples to answers, self-consistency (p̂) and reference checks.

The one place that decides how a case's samples are scored, used by the probe
(:class:`frontier_qa.probing._case_prober.CaseProber`), the curriculum reward
(:mod:`frontier_qa.train._reward`) and the co-evolution pool (:mod:`frontier_qa.train._pool`):

* ``"text"`` answers: clusters of sentence embeddings (:mod:`frontier_qa.scoring._semantic`);
* ``"json:calls"`` (tool-calling cases): the canonical JSON of the calls each sample made
  (:func:`frontier_qa.scoring._tool_calls.tool_calls_answer`), compared exactly;
* every other format: the extracted final answer, majority vote with equivalent answers merged
  (:func:`frontier_qa.scoring.consistency.self_consistency`, Agent0 Eq. 6).

Failed samples have no answer and never vote. Symbolic equivalence may wait on a worker
process, so it runs in a thread and the event loop keeps going.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING

from frontier_qa.scoring._tool_calls import tool_calls_answer
from frontier_qa.scoring.answers import sample_answers
from frontier_qa.scoring.consistency import Consistency, consistency_of, self_consistency
from frontier_qa.target import Case, Trajectory

if TYPE_CHECKING:
    from frontier_qa.scoring._embedders import Embedder

TOOL_CALLS_FORMAT = "json:calls"
"""Answer format of tool-calling cases: the canonical list of calls the target made."""

TEXT_FORMAT = "text"
"""Answer format of open-ended cases, scored by embedding clusters."""


def answers_of(case: Case, trajectories: Sequence[Trajectory]) -> list[str | None]:
    """The answer of each sample: extracted from its text, or its tool calls for tool cases.

    A native tool-calling target answers a ``json:calls`` case with ``tool_calls`` and little
    or no text, so its answer is the canonical JSON of those calls (Tool-R0's comparison).
    Failed samples have no answer (they never vote).
    """
    if case.answer_format == TOOL_CALLS_FORMAT:
        return [tool_calls_answer(t) if t.ok else None for t in trajectories]
    return sample_answers(trajectories, case.answer_format)


async def score_case(case: Case, trajectories: Sequence[Trajectory], *,
                     embedder: str | Embedder | None = None) -> Consistency:
    """Self-consistency of a case's samples (semantic clusters for ``"text"`` answers).

    Args:
        case: the case; its ``answer_format`` picks the scoring.
        trajectories: its samples, failed ones included (they count in ``n_failed``).
        embedder: for ``"text"`` cases, an embedder or its spec (default all-MiniLM-L6-v2);
            pass a built one to reuse it across cases.
    """
    if case.answer_format not in (TEXT_FORMAT, TOOL_CALLS_FORMAT):
        return await asyncio.to_thread(consistency_of, list(trajectories), case.answer_format)
    answers = answers_of(case, trajectories)
    return await score_answers(case.answer_format, answers, [not t.ok for t in trajectories], embedder=embedder)


async def score_answers(answer_format: str, answers: Sequence[str | None], failed: Sequence[bool], *,
                        embedder: str | Embedder | None = None) -> Consistency:
    """Self-consistency of answers already extracted (e.g. pooled from several records of a case)."""
    if answer_format == TEXT_FORMAT:
        from frontier_qa.scoring._semantic import asemantic_consistency

        return await asemantic_consistency(answers, failed=list(failed), embedder=embedder)
    if answer_format == TOOL_CALLS_FORMAT:
        # canonical call lists compare exactly (no casefolding of argument values)
        return self_consistency(answers, failed=list(failed), equivalent=operator.eq, key=str)
    return await asyncio.to_thread(self_consistency, list(answers), failed=list(failed))


async def answer_matches(answer: str, reference: str, answer_format: str, *,
                         embedder: str | Embedder | None = None) -> bool:
    """Whether an answer is equivalent to the reference (same meaning, for ``"text"``)."""
    if answer_format == TOOL_CALLS_FORMAT:
        return answer == reference
    if answer_format == TEXT_FORMAT:
        from frontier_qa.scoring._semantic import asemantic_consistency

        both = await asemantic_consistency([answer, reference], embedder=embedder)
        return both.n_clusters == 1
    from frontier_qa.scoring._equivalence import comparator

    return await asyncio.to_thread(comparator("math"), answer, reference)


__all__ = ["TEXT_FORMAT", "TOOL_CALLS_FORMAT", "answer_matches", "answers_of", "score_answers", "score_case"]
