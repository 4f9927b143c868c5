"""A scripted agent for the benchmarks: answers each case from the distribution in its metadata.

``frontier-qa probe --target python:benchmarks/mixture_agent.py:solve --curriculum CASES.jsonl``
with a cases file written by :func:`benchmarks.mixes.write_cases`. Sample ``i`` of a case is
drawn from ``metadata["answers"]`` at a uniform hashed from (``metadata["stream"]``, case
id, i), so every policy sees the same sample stream and a new stream gives fresh samples
(the stream is written into the prompt, so cached samples of one stream never answer another).
An unparseable sample is a reply without a ``\\boxed{}`` answer.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mixes import draw  # noqa: E402

version = "1"


async def solve(task: str, case, sample_index: int) -> str:  # noqa: ANN001 - a frontier_qa Case
    meta = case.metadata
    answer = draw(meta["answers"], meta["stream"], case.id, sample_index)
    return "I am not sure." if answer is None else f"The answer is \\boxed{{{answer}}}."
