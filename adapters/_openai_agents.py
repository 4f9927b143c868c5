"""OpenAI Agents SDK agents as targets (``openai-agents:path/agent.py:triage_agent``; extra ``openai-agents``).

How a sample runs: ``Runner.run(agent, input, context=ctx, max_turns=..., run_config=...)`` on the
spec's ``Agent``, once per sample, with a fresh ``RunConfig`` (so a fresh model provider, whose
client reads ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` at the first call) and no session, so no
sample sees another's conversation. Handoffs run as the SDK runs them; the answer is the final
output of whichever agent ended the run (a structured output counts by its ``answer`` field).

Input: the case's conversation as the SDK's input items — its system prompt as a ``system``
message (after the agent's own instructions), the task as a ``user`` message, then the case's
history; a history turn of another role (a tool's output) becomes a ``user`` message naming it.
Tools get frontier-qa's :class:`~frontier_qa.adapters.workflow.AgentContext` as the run context
(``wrapper.context.seed``, ``.sample_index``).

Streaming (``stream=True``): ``Runner.run_streamed`` with every event consumed, then the final
output read; an error the run hit is raised from the stream as from the plain run.

Limits: ``max_turns`` is the SDK's (``MaxTurnsExceeded`` fails the sample); a tool that raises
is shown to the model as the SDK's error message unless the tool was made with
``failure_error_function=None``, in which case the sample fails. Model calls (Responses or chat
completions) go through frontier-qa's gateway like any OpenAI-SDK call; the trajectory comes
from the SDK's traces through OpenInference's processor, which replaces the SDK's default
exporter, so no trace leaves the process (:mod:`frontier_qa.adapters._spans`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

from frontier_qa.adapters._agents import AgentContext
from frontier_qa.adapters._framework import FrameworkAgentAdapter, load_agent, text_of
from frontier_qa.errors import ConfigError
from frontier_qa.target import Case

log = logging.getLogger(__name__)
_ROLES = ("system", "developer", "user", "assistant")
_OTHER_SCHEMES = {"pydantic_ai": "pydantic-ai", "langgraph": "langgraph", "langchain": "langgraph"}


class OpenAIAgentsAdapter(FrameworkAgentAdapter):
    """An OpenAI Agents SDK ``Agent`` as a target (how a sample runs: the module docstring)."""

    framework = "openai-agents"
    module_name = "agents"
    package = "openai-agents"

    def check_agent(self, agent: Any) -> None:
        from agents import Agent

        if isinstance(agent, Agent):
            return
        kind = type(agent)
        found = f"the class {agent.__name__}" if isinstance(agent, type) else f"a {kind.__module__}.{kind.__qualname__}"
        scheme = _OTHER_SCHEMES.get(kind.__module__.split(".")[0])
        hint = (f"this is a {scheme} object: use the spec {scheme}:MODULE:ATTR" if scheme else
                "point the spec at an agents.Agent instance, e.g. triage_agent = Agent(name=..., "
                "instructions=..., tools=[...]); a python: spec runs a function that calls Runner.run itself")
        raise ConfigError(f"openai-agents target: expected an agents.Agent object, found {found}", hint=hint)

    async def invoke(self, case: Case, ctx: AgentContext) -> Any:
        from agents import RunConfig, Runner

        # sensitive data on: tool arguments and results are what the trajectory records; the spans
        # stay in this process (the recorder's processor replaced the SDK's exporter)
        config = RunConfig(workflow_name=f"frontier-qa {self.id}", trace_include_sensitive_data=True,
                           trace_metadata={"case": case.id, "sample_index": str(ctx.sample_index)})
        _warn_if_tracing_is_off(self.id)
        options: dict[str, Any] = {"context": ctx, "run_config": config}
        if self.max_turns is not None:
            options["max_turns"] = self.max_turns
        agent = self.agent
        if self.mcp is not None:  # the MCP servers' tools beside the agent's own (handoff targets keep theirs)
            from frontier_qa.adapters._mcp_frameworks import openai_agents_tools

            agent = agent.clone(tools=[*agent.tools, *openai_agents_tools(self.mcp)])
        items: Any = input_items(case.messages)  # the SDK types its items as TypedDicts: these are some of them
        if self.stream:
            streamed = Runner.run_streamed(agent, items, **options)
            async for _event in streamed.stream_events():
                pass  # the run advances as its events are read; its error is raised here
            result: Any = streamed
        else:
            result = await Runner.run(agent, items, **options)
        if self.gateway is None:  # the gateway counts the tokens of the calls it routes
            usage = result.context_wrapper.usage
            ctx.add_usage(usage.input_tokens, usage.output_tokens)
        return text_of(result.final_output)


_WARNED: set[str] = set()


def _warn_if_tracing_is_off(target_id: str) -> None:
    """Say once per target when the SDK's tracing is off: its spans are the trajectory, so without
    them the samples keep their answers but record no model calls, tool calls or handoffs.
    """
    from agents.tracing import get_trace_provider

    if target_id in _WARNED or type(get_trace_provider().create_trace("frontier-qa")).__name__ != "NoOpTrace":
        return
    _WARNED.add(target_id)
    log.warning("%s: the Agents SDK's tracing is off (OPENAI_AGENTS_DISABLE_TRACING or set_tracing_disabled), so "
                "frontier-qa cannot record this agent's steps (model calls, tool calls, handoffs); turn tracing on "
                "to record them: frontier-qa keeps the traces in this process and sends none to OpenAI", target_id)


def input_items(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A case's chat messages as the SDK's input items (easy input messages)."""
    items = []
    for message in messages:
        role, content = str(message.get("role", "user")), _content(message.get("content"))
        if role not in _ROLES:  # no item of the SDK's takes a bare tool output: say whose it was
            name = message.get("name")
            role, content = "user", f"[{role}{f' {name}' if name else ''}] {content}"
        items.append({"role": role, "content": content})
    return items


def _content(content: Any) -> str:
    """Text content as is; chat-style parts joined by their text; anything else as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and all(isinstance(p, Mapping) and "text" in p for p in content):
        return "".join(str(p["text"]) for p in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def create(rest: str, **options: Any) -> OpenAIAgentsAdapter:
    """Factory for ``openai-agents:MODULE:ATTR`` specs (options: :class:`FrameworkAgentAdapter`'s)."""
    return cast(OpenAIAgentsAdapter, load_agent(OpenAIAgentsAdapter, rest, options))
