"""A small multi-step agent with a Python tool, driven by a local model.

The embedded default target of ``frontier-qa probe``: the kind of agent users write, in plain
Python, around a model they call. For each sample it

1. asks the model to solve the task, writing one ```` ```python ```` block when computing helps;
2. runs that code in frontier-qa's sandbox (no network, no secrets, resource limits) and records
   the call as a tool call of the trajectory;
3. shows the model the output (or, without code, its own reasoning) and asks for the final answer
   in ``\\boxed{}``; a model that can continue a reply (local models) is started inside
   ``\\boxed{`` so that even a 135M model answers in a form the probe reads.

The model defaults to SmolLM2-135M-Instruct, built offline on first use, run by CTranslate2
(``ct2:smollm2``: 1.85× transformers' speed end to end at the same accuracy,
``benchmarks/engine_bench.py``) when the ``ctranslate2`` package is installed (the ``local``
extra), else by transformers (``hf:smollm2``); set ``FRONTIER_QA_AGENT_MODEL`` to any target spec
(``hf:smollm2``, ``openai:MODEL@URL``, ``litellm:…``) to drive it with another model. Model
calls go through frontier-qa's runtime, so they are batched across concurrent samples, cached per
sample index (a re-run is free), and retried on transient errors.

Use it as a target::

    frontier-qa probe --target 'python:examples/agents/smol_agent.py:solve'
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from dataclasses import replace
from typing import Any

from frontier_qa.adapters.tool_executor import find_code, format_output
from frontier_qa.adapters.workflow import AgentContext
from frontier_qa.runtime import Limits, open_target
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.scoring.answers import closing_brace
from frontier_qa.target import Case, Sampling, Target

# The engine is part of the version: samples drawn by one are not reused for the other.
DEFAULT_MODEL = "ct2:smollm2" if importlib.util.find_spec("ctranslate2") is not None else "hf:smollm2"
MODEL = os.environ.get("FRONTIER_QA_AGENT_MODEL") or DEFAULT_MODEL
version = f"4.{MODEL.split(':', 1)[0]}"  # part of the target id: bump it when the agent's behaviour changes

SYSTEM = (
    "You solve problems by writing Python. Reply with one ```python code block that prints only the "
    "answer, then stop.\n\nExample:\nTask: What is 12 * 7 - 3?\n```python\nprint(12 * 7 - 3)\n```"
)
FAILED = "The code failed:\n```output\n{output}\n```"
FIX = "Write the corrected program."
GIVE_UP = "Without code, give only the final answer, written in \\boxed{}."
CODE_PREFILL = "```python\n"
ANSWER_PREFILL = "The final answer is \\boxed{"
MAX_ATTEMPTS = 2  # programs per sample: the first, and one fix after an error or no output
MAX_OUTPUT_CHARS = 2000

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")
_lock = threading.Lock()
_model: Target | None = None
_sandbox: Sandbox | None = None


def _tools() -> tuple[Target, Sandbox]:
    """One model target and one sandbox per process, shared by every sample (the model loads once)."""
    global _model, _sandbox
    with _lock:
        if _model is None:
            spec = os.environ.get("FRONTIER_QA_AGENT_MODEL") or MODEL
            cache = os.environ.get("FRONTIER_QA_AGENT_CACHE", os.path.join(".frontier-qa", "agent-cache"))
            # A local model on a busy CPU is slow, not down: its calls queue behind each other,
            # so a per-call timeout would only turn waiting into failed samples (and, after 25
            # in a row, a halted model). Remote specs keep the runtime's timeout.
            local = spec.split(":", 1)[0] in ("hf", "ct2", "vllm", "tools+hf", "tools+vllm")
            limits = Limits(max_concurrency=16, timeout_s=None) if local else Limits(max_concurrency=16)
            _model = open_target(spec, limits=limits, cache=cache)
            _sandbox = Sandbox(timeout_s=10)
        assert _sandbox is not None
        return _model, _sandbox


async def solve(task: str, ctx: AgentContext, sampling: Sampling, sample_index: int) -> dict[str, Any]:
    """Answer ``task`` with a program (program-of-thought): write it, run it, fix it once if it fails.

    The answer is the program's last printed line. When no program prints anything, the model is
    asked for the answer directly.
    """
    model, sandbox = _tools()
    case_id = ctx.case.id if ctx.case is not None else "task"
    # A model that can continue a reply (local models) is started inside the code block and the
    # answer box, so even a 135M model uses its tool and answers in a form the probe reads.
    prefill = bool(getattr(model, "supports_prefill", False))
    # Started inside the block, the program ends at its closing fence: stopping there, not at
    # max_tokens, is what keeps a step at its few dozen tokens (4x fewer on SmolLM2).
    code_sampling = replace(sampling, max_tokens=min(sampling.max_tokens, 256),
                            stop=("```",) if prefill else ("```output",))
    history: list[dict[str, str]] = []
    transcript: list[str] = []
    failed: str | None = None  # the last program's error report, when every attempt failed
    for attempt in range(MAX_ATTEMPTS):
        opened = ({"role": "assistant", "content": CODE_PREFILL},) if prefill else ()
        case = Case(id=f"{case_id}/code{attempt}", prompt=task, system=SYSTEM, history=(*history, *opened))
        draft = await _step(ctx, model, case, code_sampling, sample_index, f"write code ({attempt + 1})")
        if prefill:
            draft = CODE_PREFILL + draft
            if draft.count("```") < 2:  # it stopped before closing the block
                draft = draft.rstrip() + "\n```"
        block = find_code(draft)
        if block is None:
            transcript.append(draft.strip())
            if "\\boxed{" in draft:  # answered without code
                return {"answer": "\n".join(transcript)}
            history.append({"role": "assistant", "content": draft.strip()})
            failed = None
            break
        code = block.group(1)
        result = await sandbox.arun(code)
        output = format_output(result, MAX_OUTPUT_CHARS) or "(no output)"
        ctx.tool_call("python", code, output, None if result.ok else (result.stderr or result.killed_reason))
        ctx.step("ran code")
        shown = draft[: block.end()]  # anything written after the block was a guess at its output
        transcript.append(f"{shown}\n```output\n{output}\n```")
        printed = [line.strip() for line in (result.stdout or "").splitlines() if line.strip()]
        if result.ok and printed:
            return {"answer": "\n".join(transcript) + f"\n{ANSWER_PREFILL}{_result(printed[-1])}}}"}
        failed = FAILED.format(output=output.strip())
        history.append({"role": "assistant", "content": shown})
        if attempt + 1 < MAX_ATTEMPTS:
            history.append({"role": "user", "content": f"{failed}\n{FIX}"})

    # No program printed an answer: ask for one directly (after the last error, if any).
    history.append({"role": "user", "content": f"{failed}\n{GIVE_UP}" if failed else GIVE_UP})
    if prefill:
        history.append({"role": "assistant", "content": ANSWER_PREFILL})
    case = Case(id=f"{case_id}/answer", prompt=task, system=SYSTEM, history=tuple(history))
    final_sampling = replace(sampling, max_tokens=min(sampling.max_tokens, 32 if prefill else 64),
                             stop=("\n",) if prefill else ())
    final = await _step(ctx, model, case, final_sampling, sample_index, "answer")
    answer = f"{ANSWER_PREFILL}{_box_content(final)}}}" if prefill else final
    return {"answer": "\n".join(transcript) + f"\n{answer}"}


def _result(line: str) -> str:
    """The answer in a printed line: the line, or its last number when it is a sentence."""
    numbers = _NUMBER.findall(line)
    if len(line.split()) > 1 and numbers:
        return numbers[-1].replace(",", "").rstrip(".")
    return line


def _box_content(text: str) -> str:
    """What a continuation of ``\\boxed{`` puts in the box: up to its closing brace (nested kept)."""
    end = closing_brace(text, 0)  # the probe's own brace matching
    return (text if end is None else text[:end]).strip()


async def _step(ctx: AgentContext, model: Target, case: Case, sampling: Sampling, sample_index: int,
                name: str) -> str:
    """One model call, its usage and a step record; the text it wrote."""
    (reply,) = await model.sample(case, 1, sampling, start=sample_index)
    ctx.add_usage(reply.usage.prompt_tokens, reply.usage.completion_tokens)
    if reply.error is not None or reply.text is None:
        raise RuntimeError(f"the model failed at the {name} step: {reply.error}")
    ctx.step(name)
    return reply.text
