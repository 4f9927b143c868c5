"""A small multi-step agent with a Python tool, driven by a local model.

The embedded default target of ``frontier-qa probe``: the kind of agent users write, in plain
Python, around a model they call. For each sample it

1. asks the model to solve the task, writing one ```` ```python ```` block when computing helps;
2. runs that code in frontier-qa's sandbox (no network, no secrets, resource limits) and records
   the call as a tool call of the trajectory;
3. shows the model the output and asks for the final answer in ``\\boxed{}``.

The model defaults to SmolLM2-135M-Instruct (``hf:smollm2``, built offline on first use); set
``FRONTIER_QA_AGENT_MODEL`` to any target spec (``openai:MODEL@URL``, ``litellm:…``) to drive it
with another model. Model calls go through frontier-qa's runtime, so they are batched across
concurrent samples, cached per sample index (a re-run is free), and retried on transient errors.

Use it as a target::

    frontier-qa probe --target 'python:examples/agents/smol_agent.py:solve'
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from typing import Any

from frontier_qa.adapters.tool_executor import find_code, format_output
from frontier_qa.adapters.workflow import AgentContext
from frontier_qa.runtime import Limits, open_target
from frontier_qa.sandbox import Sandbox
from frontier_qa.target import Case, Sampling, Target

version = "1"  # part of the target id: bump it when the agent's behaviour changes

SYSTEM = (
    "You solve problems by writing Python. Reply with one ```python code block that prints the "
    "answer, then stop.\n\nExample:\nTask: What is 12 * 7 - 3?\n```python\nprint(12 * 7 - 3)\n```"
)
FOLLOW_UP = "The code printed:\n```output\n{output}\n```\nNow give only the final answer as \\boxed{{answer}}."
MAX_OUTPUT_CHARS = 2000

_lock = threading.Lock()
_model: Target | None = None
_sandbox: Sandbox | None = None


def _tools() -> tuple[Target, Sandbox]:
    """One model target and one sandbox per process, shared by every sample (the model loads once)."""
    global _model, _sandbox
    with _lock:
        if _model is None:
            spec = os.environ.get("FRONTIER_QA_AGENT_MODEL", "hf:smollm2")
            cache = os.environ.get("FRONTIER_QA_AGENT_CACHE", os.path.join(".frontier-qa", "agent-cache"))
            _model = open_target(spec, limits=Limits(max_concurrency=16), cache=cache)
            _sandbox = Sandbox(timeout_s=10)
        assert _sandbox is not None
        return _model, _sandbox


async def solve(task: str, ctx: AgentContext, sampling: Sampling, sample_index: int) -> dict[str, Any]:
    """Answer ``task`` in up to two model steps with one sandboxed Python run between them."""
    model, sandbox = _tools()
    case_id = ctx.case.id if ctx.case is not None else "task"
    # The model's own sampling: the probe's temperature/seed, a short budget, stop after the code block.
    draft_sampling = replace(sampling, max_tokens=min(sampling.max_tokens, 256), stop=("```output",))
    draft_case = Case(id=f"{case_id}/draft", prompt=task, system=SYSTEM)
    (draft,) = await model.sample(draft_case, 1, draft_sampling, start=sample_index)
    ctx.add_usage(draft.usage.prompt_tokens, draft.usage.completion_tokens)
    if draft.error is not None or draft.text is None:
        raise RuntimeError(f"the model failed: {draft.error}")
    ctx.step("draft")
    block = find_code(draft.text)
    if block is None:
        return {"answer": draft.text}

    code = block.group(1)
    result = await sandbox.arun(code)
    output = format_output(result, MAX_OUTPUT_CHARS) or "(no output)"
    ctx.tool_call("python", code, output, None if result.ok else (result.stderr or result.killed_reason))
    ctx.step("ran code")

    history = (
        {"role": "assistant", "content": draft.text[: block.end()]},
        {"role": "user", "content": FOLLOW_UP.format(output=output.strip())},
    )
    final_case = Case(id=f"{case_id}/final", prompt=task, system=SYSTEM, history=history)
    final_sampling = replace(sampling, max_tokens=min(sampling.max_tokens, 64), stop=())
    (final,) = await model.sample(final_case, 1, final_sampling, start=sample_index)
    ctx.add_usage(final.usage.prompt_tokens, final.usage.completion_tokens)
    if final.error is not None or final.text is None:
        raise RuntimeError(f"the model failed: {final.error}")
    ctx.step("answer")
    draft_text = draft.text[: block.end()]  # anything the model wrote after its code was a guess
    return {"answer": f"{draft_text}\n```output\n{output}\n```\n{final.text}"}
