"""Agent0's tool-integrated executor (Agent0 §3.3, "Multi-Turn Rollout") as a Target.

Each sample is generated in turns: the model writes reasoning and, when it closes a
```` ```python ```` block, generation stops; the code runs in the :class:`~frontier_qa.runtime.sandbox.Sandbox`;
its output is appended as ```` ```output ```` … ```` ``` ```` (the reference's format:
``"\\n```output\\n" + (stdout + "\\n" + stderr).strip() + "\\n```\\n"``) and the model
continues, until it gives a ``\\boxed{}`` answer, stops without a code block, or has used
``max_tool_turns`` tool calls (Agent0: at most 4). Every code block runs in a fresh
interpreter (the reference's default, ``enable_history_code_execution = False``).

Every model turn goes through the *inner* target (a managed target: its retries, rate
limits, budget and cache), and sample ``i`` of a case always continues with sample index
``i`` of the inner target, so cached turns are per sample and reruns are deterministic.

Two ways to continue after a tool output:

* ``"prefill"``: the assistant text so far, output block included, is sent as a final
  assistant message in ``Case.history`` and continued (transformers, vLLM: adapters with
  ``supports_prefill``). This is exactly the paper's rollout.
* ``"chat"``: the assistant turn is closed and the output is sent as a user message that
  asks the model to go on (APIs that cannot continue an assistant message).

``"auto"`` picks prefill when the inner target supports it.

With ``mcp_servers``, the tools of those MCP servers (stdio, :mod:`frontier_qa.adapters._mcp`) are
offered to the model as OpenAI function tools next to the python sandbox (chat mode: the inner
adapter must pass ``Case.tools`` on, as the openai and litellm adapters do). A turn that calls them
gets each result back as a ``tool`` message; each call is a :class:`ToolCall` of the trajectory and
counts towards ``max_tool_turns`` like a code block. A turn that calls one of the case's own tools
(not an MCP tool) ends the sample with those calls proposed, not run.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from frontier_qa.adapters._mcp import McpServer, McpToolbox, tool_text
from frontier_qa.errors import ConfigError
from frontier_qa.runtime.sandbox import Sandbox, SandboxResult
from frontier_qa.target import Case, Message, Sampling, Target, ToolCall, Trajectory, Usage

OUTPUT_STOP = "```output"
STOP_AFTER_CODE = "\x00frontier-qa:stop-after-python-block\x00"
"""A :attr:`Sampling.stop` entry asking the model's adapter to end the turn right after the first
closed python block (before any ``\\boxed{}``), the closing fence kept in the text (Agent0 A.3:
"upon detecting a code block via regex, generation halts"). Adapters that declare
``stops_after_code`` honour it (transformers: a stopping criterion on :func:`find_code`; vLLM:
stop at every fence and resume until a block closes); it never matches any text, and the tool
executor asks for it only from such adapters. Others get :data:`OUTPUT_STOP`, which stops only
when the model itself starts an output block."""
# A closed python block: the fence, optional language variants, the code, the closing fence.
_CODE_BLOCK = re.compile(r"```(?:python|py)[ \t]*\r?\n(.*?)```", re.DOTALL)
CONTINUE_PROMPT = "Continue your solution from where you stopped, using this output."
BOXED_HINT = " Put your final answer within \\boxed{}."


@dataclass(frozen=True)
class _Turn:
    """One model turn of one sample: what it wrote and what it cost."""

    text: str
    usage: Usage
    cost_usd: float | None
    cached: bool
    error: str | None
    calls: tuple[ToolCall, ...] = ()  # the function calls the model proposed (MCP tools)


def find_code(text: str) -> re.Match[str] | None:
    """The first closed python block in ``text`` that comes before any ``\\boxed{`` answer."""
    match = _CODE_BLOCK.search(text)
    boxed = text.find("\\boxed{")
    if match is None or (0 <= boxed < match.start()):
        return None
    return match


def turn_stops(stops: Sequence[str], after_code: bool) -> tuple[str, ...]:
    """The stop strings of one model turn: the caller's, plus where a code turn ends."""
    marker = STOP_AFTER_CODE if after_code else OUTPUT_STOP
    return tuple(stops) + (() if marker in stops else (marker,))


def cut_turn(text: str, stops: Sequence[str]) -> str:
    """``text`` cut at the earliest stop string (excluded) or, when :data:`STOP_AFTER_CODE` is
    among ``stops``, right after the first closed python block (included), whichever comes first.
    """
    cut = min((i for i in (text.find(s) for s in stops if s and s != STOP_AFTER_CODE) if i >= 0),
              default=len(text))
    if STOP_AFTER_CODE in stops:
        block = find_code(text[:cut])
        if block is not None:
            cut = block.end()
    return text[:cut]


def format_output(result: SandboxResult, max_chars: int) -> str:
    """What the model sees of a run: stdout then stderr, stripped, capped at ``max_chars``."""
    observation = (result.stdout + "\n" + result.stderr).strip(" \n")
    if result.timed_out:
        observation = f"{observation}\nTimeoutError: the code ran longer than the time limit and was stopped".strip()
    elif result.killed_reason == "output_limit":
        observation = f"{observation}\n[output stopped: too long]".strip()
    if len(observation) > max_chars:
        head = max_chars // 2
        cut = len(observation) - max_chars
        observation = f"{observation[:head]}\n... [{cut} characters cut] ...\n{observation[-(max_chars - head):]}"
    return observation


def _failure(result: SandboxResult) -> str | None:
    if result.ok:
        return None
    reason = f" ({result.killed_reason})" if result.killed_reason else ""
    return (result.stderr.strip()[-2000:] or f"exit status {result.exit_code}") + reason


class ToolExecutor:
    """A :class:`~frontier_qa.target.Target` that runs model-written code between turns.

    Args:
        inner: the model's (managed) target; every turn is one ``inner.sample(..., 1, ...)``.
        sandbox: a :class:`Sandbox`, a mapping of its keyword arguments, or ``None`` for
            the default (10 s, 2 GiB, no network).
        max_tool_turns: the most code blocks executed per sample (Agent0: 4).
        mode: ``"auto"``, ``"prefill"`` or ``"chat"`` (see the module docstring).
        answer_format: ``"boxed"``: a ``\\boxed{}`` before any code block ends the sample
            and the chat continuation asks for one; anything else: only the absence of a
            code block ends it.
        output_max_chars: characters of tool output shown to the model (head and tail kept).
        continue_prompt: the user message text after the output block in chat mode.
        mcp_servers: MCP stdio servers whose tools the model may call too (``McpServer`` values,
            mappings of their fields or command lines); started at the first sample, closed by
            :meth:`aclose`. Needs chat mode.
    """

    def __init__(
        self,
        inner: Target,
        *,
        sandbox: Sandbox | Mapping[str, Any] | None = None,
        max_tool_turns: int = 4,
        mode: str = "auto",
        answer_format: str = "boxed",
        output_max_chars: int = 4000,
        continue_prompt: str = CONTINUE_PROMPT,
        mcp_servers: Sequence[McpServer | Mapping[str, Any] | str] | None = None,
    ) -> None:
        if mode not in ("auto", "prefill", "chat"):
            raise ConfigError(f"tool executor mode={mode!r} is unknown", hint="use 'auto', 'prefill' or 'chat'")
        if max_tool_turns < 0 or output_max_chars < 1:
            raise ConfigError("max_tool_turns must be >= 0 and output_max_chars >= 1",
                              hint=f"got max_tool_turns={max_tool_turns}, output_max_chars={output_max_chars}")
        if not hasattr(inner, "sample"):
            raise ConfigError(f"{type(inner).__name__} is not a Target", hint="pass a target from open_target(spec)")
        if isinstance(sandbox, Mapping):
            sandbox = Sandbox(**dict(sandbox))
        self.inner = inner
        self.sandbox = sandbox if sandbox is not None else Sandbox()
        self.max_tool_turns = int(max_tool_turns)
        self.toolbox = McpToolbox(mcp_servers) if mcp_servers else None
        if mode == "prefill" and self.toolbox is not None:
            raise ConfigError("mode='prefill' cannot offer MCP tools: the model calls them by function calling",
                              hint="use mode='chat' (or 'auto') with mcp_servers")
        prefill = bool(getattr(inner, "supports_prefill", False)) and self.toolbox is None
        if mode == "prefill" and not prefill:
            raise ConfigError(f"mode='prefill' but {getattr(inner, 'id', inner)!r} cannot continue "
                              "an assistant message",
                              hint="use mode='chat' (or 'auto') for API targets")
        self.mode = ("prefill" if prefill else "chat") if mode == "auto" else mode
        # a turn ends at the closed block itself when the inner adapter can stop there
        self.stops_after_code = self.mode == "prefill" and bool(getattr(inner, "stops_after_code", False))
        self.answer_format = answer_format
        self.output_max_chars = int(output_max_chars)
        self.continue_prompt = continue_prompt
        settings = [] if self.max_tool_turns == 4 else [f"max_tool_turns={self.max_tool_turns}"]
        settings += [f"mode={self.mode}"] if mode != "auto" else []
        settings += [f"mcp={server.name}" for server in (self.toolbox.servers if self.toolbox else ())]
        self.id: str = f"tools{'[' + ','.join(settings) + ']' if settings else ''}+{inner.id}"

    def __repr__(self) -> str:
        return (f"ToolExecutor({self.inner!r}, mode={self.mode!r}, "
                f"max_tool_turns={self.max_tool_turns}, {self.sandbox!r})")

    async def sample(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        """``n`` tool-integrated trajectories for sample indices ``start..start+n-1``, in order."""
        if n < 0 or start < 0:
            raise ConfigError(f"sample(n={n}, start={start}) is invalid", hint="n and start must be >= 0")
        turn_sampling = replace(sampling, stop=turn_stops(sampling.stop, self.stops_after_code))
        if self.toolbox is not None:
            await self.toolbox.start()  # once; a server that cannot start fails the run with its stderr
        tasks = [asyncio.ensure_future(self._one(case, turn_sampling, i)) for i in range(start, start + n)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:  # a fatal target error or a budget stop: do not leave siblings running
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def aclose(self) -> None:
        """Stop the MCP servers and close the inner target."""
        if self.toolbox is not None:
            await self.toolbox.aclose()
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    def version(self) -> str | None:
        version = getattr(self.inner, "version", None)
        return version() if callable(version) else None

    # -- one sample ---------------------------------------------------------------------------

    async def _one(self, case: Case, sampling: Sampling, index: int) -> Trajectory:
        started = time.monotonic()
        base_history = tuple(case.history)
        prefix = ""
        if self.mode == "prefill" and case.continues_assistant:  # continue the caller's partial turn
            prefix = str(base_history[-1].get("content") or "")
            base_history = base_history[:-1]
        text = ""  # the assistant's text so far, tool outputs included
        chat: list[Message] = []  # chat mode: the turns after the task
        calls: list[ToolCall] = []
        usage, costs, cached = Usage(), [], True
        error: str | None = None
        tools = case.tools + tuple(self.toolbox.openai_tools()) if self.toolbox is not None else case.tools
        while True:
            if self.mode == "prefill":
                sofar = prefix + text
                history = base_history + (({"role": "assistant", "content": sofar},) if sofar else ())
            else:
                history = base_history + tuple(chat)
            turn = await self._turn(replace(case, history=history, tools=tools), sampling, index)
            usage, cached = usage + turn.usage, cached and turn.cached
            if turn.cost_usd is not None:
                costs.append(turn.cost_usd)
            if turn.error is not None:
                error = turn.error
                break
            if turn.calls and self.toolbox is not None:
                ran, messages = await self._call_mcp(turn, self.max_tool_turns - len(calls), len(chat))
                text += f"{turn.text}\n" if turn.text and ran else turn.text  # the next turn's text on its own line
                chat.extend(messages)
                calls.extend(ran if ran else turn.calls)  # none ran: the sample ends with them proposed
                if not ran:
                    break
                continue
            block = find_code(turn.text) if len(calls) < self.max_tool_turns else None
            if block is None:  # a final answer, no code, or the tool budget is spent
                text += turn.text
                chat.append({"role": "assistant", "content": turn.text})
                break
            piece = turn.text[: block.end()]  # servers differ on stop strings: cut after the block
            code = block.group(1)
            result = await self.sandbox.arun(code)
            observation = format_output(result, self.output_max_chars)
            calls.append(ToolCall(name="python", arguments=code, result=observation, error=_failure(result)))
            output_block = f"\n{OUTPUT_STOP}\n{observation}\n```\n"
            text += piece + output_block
            chat.append({"role": "assistant", "content": piece})
            hint = BOXED_HINT if self.answer_format == "boxed" else ""
            chat.append({"role": "user", "content": f"{output_block.strip()}\n{self.continue_prompt}{hint}"})
        if self.mode == "prefill":
            sofar = prefix + text
            messages = [*case.messages[: len(case.messages) - len(case.history)], *base_history]
            if sofar:
                messages.append({"role": "assistant", "content": sofar})
        else:
            messages = [*case.messages, *chat]
        return Trajectory(
            text=None if error else text,
            messages=tuple(messages),
            tool_calls=tuple(calls),
            usage=usage,
            cost_usd=sum(costs) if costs else None,
            latency_s=time.monotonic() - started,
            error=error,
            sample_index=index,
            cached=cached,
        )

    async def _call_mcp(self, turn: _Turn, budget: int, at: int) -> tuple[list[ToolCall], list[Message]]:
        """Run a turn's MCP tool calls (at most ``budget``): the calls run and the chat messages to add.

        Runs none when one names a tool that is not an MCP tool (the case's own tools: the model's
        answer) or the budget is spent. Call ids are made from the position ``at`` in the chat, so a
        rerun sends the same conversation (and hits the same cached turns).
        """
        assert self.toolbox is not None
        ids = [f"call_{at}_{j}" for j in range(len(turn.calls))]
        assistant = {"role": "assistant", "content": turn.text or None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for i, c in zip(ids, turn.calls, strict=True)]}
        if budget <= 0 or not all(self.toolbox.has(c.name) for c in turn.calls):
            return [], [assistant]
        ran = list(await asyncio.gather(*(self.toolbox.run(c.name, c.arguments) for c in turn.calls[:budget])))
        replies = [{"role": "tool", "tool_call_id": i, "content": tool_text(r)} for i, r in zip(ids, ran, strict=False)]
        replies += [{"role": "tool", "tool_call_id": i, "content": "Error: not run, the tool budget is spent"}
                    for i in ids[len(ran):]]
        return ran, [assistant, *replies]

    async def _turn(self, case: Case, sampling: Sampling, index: int) -> _Turn:
        got = await self.inner.sample(case, 1, sampling, start=index)
        if len(got) != 1:
            return _Turn("", Usage(), None, False, f"{self.inner.id} returned {len(got)} samples for one turn")
        trajectory = got[0]
        if not trajectory.ok:
            return _Turn("", trajectory.usage, trajectory.cost_usd, trajectory.cached,
                         trajectory.error or "the model returned no text")
        return _Turn(trajectory.text or "", trajectory.usage, trajectory.cost_usd, trajectory.cached, None,
                     trajectory.tool_calls)


def create(inner: Target, **options: Any) -> ToolExecutor:
    """Wrap ``inner`` with the tool loop (what ``open_target("tools+<spec>")`` returns)."""
    return ToolExecutor(inner, **options)


__all__ = ["CONTINUE_PROMPT", "OUTPUT_STOP", "STOP_AFTER_CODE", "ToolExecutor", "create", "cut_turn", "find_code",
           "format_output", "turn_stops"]
