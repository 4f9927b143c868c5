"""Pydantic AI agents as targets (``pydantic-ai:path/agent.py:agent``, extra ``pydantic-ai``).

How a sample runs: one ``await agent.run(...)`` per sample, so every sample is a fresh
conversation (Pydantic AI keeps no state between runs). With ``stream=True`` the same run goes
through Pydantic AI's streaming path: an ``event_stream_handler`` consumes every event of every
model request and tool call, and the run still goes on to the end (``run_stream`` would stop at
the first text and skip the tool calls that follow it). The answer is the run's ``output``: text
as is, a structured output (a pydantic model, a dataclass) as a mapping whose ``answer`` field
is read.

How the input is built: the case's task is the run's user prompt and its system prompt is
passed as the run's ``instructions``, which Pydantic AI adds to the agent's own (its
``system_prompt`` and ``instructions`` still apply). A case with ``history`` (earlier turns, tool
outputs) becomes the run's ``message_history``: the task and the agent's static system prompts
open it, the turns follow as ``ModelRequest`` / ``ModelResponse`` messages. Pydantic AI sends a
history as is, so the agent's *dynamic* system-prompt functions do not run for such a case (its
``instructions`` do).

Limits: ``max_turns`` is Pydantic AI's ``UsageLimits(request_limit=max_turns)``; a run that needs
more model requests fails its sample with ``UsageLimitExceeded``. Agents whose tools need
``deps`` get ``None``. Model calls go through frontier-qa's gateway whatever model class the
agent uses (``OpenAIChatModel``, ``OpenAIResponsesModel``, or a string such as
``"openai:gpt-4o-mini"``); the trajectory comes from Pydantic AI's own OpenTelemetry spans.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping, Sequence
from typing import Any

from frontier_qa.adapters._agents import AgentContext
from frontier_qa.adapters._framework import FrameworkAgentAdapter, load_agent, text_of
from frontier_qa.errors import ConfigError
from frontier_qa.target import Case


class PydanticAIAdapter(FrameworkAgentAdapter):
    """A Pydantic AI ``Agent`` (any ``AbstractAgent``) as a target; options as in the base class."""

    framework = "pydantic-ai"
    module_name = "pydantic_ai"
    package = "pydantic-ai-slim[openai]"

    def check_agent(self, agent: Any) -> None:
        from pydantic_ai.agent import AbstractAgent

        if isinstance(agent, type):
            raise ConfigError(f"{agent.__qualname__} is a class, not a Pydantic AI agent",
                              hint="point the spec at an instance: agent = Agent(model, ...)")
        if not isinstance(agent, AbstractAgent):
            raise ConfigError(f"{type(agent).__module__}.{type(agent).__qualname__} is not a Pydantic AI agent",
                              hint="point the spec at a pydantic_ai.Agent (agent = Agent(model, tools=[...]))")
        if agent.model is None:
            raise ConfigError(f"Pydantic AI agent {agent.name or ''!r} has no model",
                              hint="give the agent its model: Agent('openai:gpt-4o-mini', ...) or "
                              "Agent(OpenAIChatModel(...))")

    async def invoke(self, case: Case, ctx: AgentContext) -> Any:
        from pydantic_ai.usage import UsageLimits

        prompt, history = _conversation(case, self.agent)
        options: dict[str, Any] = {"message_history": history or None}
        if case.system:  # run-time instructions came with pydantic-ai 1.x (PR 3309): only asked for when needed
            options["instructions"] = case.system
        if self.max_turns is not None:
            options["usage_limits"] = UsageLimits(request_limit=self.max_turns)
        if self.stream:
            options["event_stream_handler"] = _consume
        if self.mcp is not None:  # the MCP servers' tools beside the agent's own
            from frontier_qa.adapters._mcp_frameworks import pydantic_ai_toolset

            options["toolsets"] = [pydantic_ai_toolset(self.mcp)]
        result = await self.agent.run(prompt, infer_name=False, **options)  # never renames the user's agent
        if self.gateway is None:  # the gateway counts each routed call's usage itself
            usage = result.usage() if callable(result.usage) else result.usage  # a method in 1.x, a property in 2.x
            ctx.add_usage(usage.input_tokens or 0, usage.output_tokens or 0)
        return text_of(result.output)


async def _consume(_run_context: Any, events: AsyncIterable[Any]) -> None:
    """Read a streamed model request or tool call to its end (the trajectory comes from spans)."""
    async for _ in events:
        pass


def _conversation(case: Case, agent: Any) -> tuple[str | None, list[Any]]:
    """The run's user prompt and message history for ``case``: no history for a plain task."""
    if not case.history:
        return case.prompt, []
    from pydantic_ai.messages import ModelRequest, ModelResponse, SystemPromptPart, UserPromptPart

    # Pydantic AI adds the agent's system prompts only to a run without history: put them first
    opening = [SystemPromptPart(text) for text in getattr(agent, "_system_prompts", ()) if isinstance(text, str)]
    messages: list[Any] = [ModelRequest([*opening, UserPromptPart(case.prompt)])]
    for message in case.history:
        turn = _turn(message)
        last = messages[-1]
        if isinstance(turn, ModelRequest) and isinstance(last, ModelRequest):
            messages[-1] = ModelRequest([*last.parts, *turn.parts])  # tool results and a prompt: one request
        elif isinstance(turn, ModelResponse) and isinstance(last, ModelResponse):
            messages[-1] = ModelResponse([*last.parts, *turn.parts])
        else:
            messages.append(turn)
    return None, messages  # no new prompt: Pydantic AI goes on from the history's last message


def _turn(message: Mapping[str, Any]) -> Any:
    """One OpenAI-style message of a case's history as a Pydantic AI message."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    role, content = message.get("role"), message.get("content")
    text = "" if content is None else content if isinstance(content, str) else str(content)
    if role == "assistant":
        parts: list[Any] = [TextPart(text)] if text else []
        for call in _calls(message.get("tool_calls")):
            function = call.get("function") or call
            name = str(function.get("name"))
            parts.append(ToolCallPart(name, function.get("arguments"), str(call.get("id") or f"call_{name}")))
        return ModelResponse(parts)
    if role == "tool":  # without ids, a result answers the call of its tool's name
        name = str(message.get("name") or "")
        return ModelRequest([ToolReturnPart(name, text, str(message.get("tool_call_id") or f"call_{name}"))])
    if role == "system":
        return ModelRequest([SystemPromptPart(text)])
    return ModelRequest([UserPromptPart(text)])


def _calls(value: Any) -> Sequence[Mapping[str, Any]]:
    return [c for c in value if isinstance(c, Mapping)] if isinstance(value, Sequence) else []


def create(rest: str, **options: Any) -> FrameworkAgentAdapter:
    """Factory for ``pydantic-ai:MODULE:ATTR`` specs; ``options`` as :class:`PydanticAIAdapter` takes them."""
    return load_agent(PydanticAIAdapter, rest, options)
