"""LangGraph graphs as targets (``langgraph:path/agent.py:graph``, extra ``langgraph``).

The spec names a *compiled* graph: ``create_react_agent(ChatOpenAI(...), tools)``, a hand-built
``StateGraph(...).compile()``, or a functional-API ``@entrypoint``.

How a sample runs: one ``graph.ainvoke`` (or ``graph.astream`` with ``stream=True``) on a thread
of its own (a fresh ``thread_id``), so a graph compiled with a checkpointer never carries one
sample's conversation into the next. Only the async entry points are used: the model gateway
routes the async HTTP clients (``ChatOpenAI`` calls the async OpenAI client under them).

Input: a graph whose input has ``messages`` gets the case's conversation (system prompt, task,
history) as LangChain messages; a graph whose input has ``question``, ``input``, ``task``,
``prompt`` or ``query`` instead gets the task text under that key.

Output: the text of the last message the graph added (an AI message, or a tool's output when a
tool returns directly); content given as a list of parts is joined as LangChain's ``.text`` does.
A state without ``messages`` answers with its ``answer`` or ``output`` value.

Streaming (``stream=True``): ``astream(stream_mode=["values", "messages"])`` is consumed to the
end, so the chat model streams its tokens (the ``messages`` mode) as a streaming app's would, and
the last ``values`` chunk is the final state.

Limits: ``max_turns`` sets LangGraph's ``recursion_limit`` to ``2 * max_turns - 1`` supersteps, a
model node and a tool node per turn (``create_react_agent``'s shape): at most ``max_turns`` model
calls; a graph with more nodes per turn gets fewer. Without it LangGraph's own default applies
(10,007 supersteps). A sample that runs out of turns fails with ``GraphRecursionError``, also when
``create_react_agent`` ends it with its "need more steps" message instead of raising.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from frontier_qa.adapters._agents import AgentContext
from frontier_qa.adapters._framework import FrameworkAgentAdapter, load_agent, text_of
from frontier_qa.errors import ConfigError
from frontier_qa.target import Case

_TEXT_KEYS = ("question", "input", "task", "prompt", "query")
"""Input keys that take the task text, for graphs whose input has no ``messages``."""
_OUT_OF_STEPS = "Sorry, need more steps to process this request."
"""What ``create_react_agent`` answers, instead of raising, when its step limit cuts a tool loop."""


class LangGraphAdapter(FrameworkAgentAdapter):
    """A compiled LangGraph graph as a target (how a sample runs: the module docstring)."""

    framework = "langgraph"
    module_name = "langgraph"
    package = "langgraph"
    takes_tools = False  # a compiled graph's tools are fixed in its ToolNode

    def check_agent(self, agent: Any) -> None:
        from langgraph.graph import StateGraph
        from langgraph.pregel import Pregel

        if isinstance(agent, StateGraph):
            raise ConfigError("the langgraph spec names a StateGraph builder, not a compiled graph",
                              hint="point the spec at the compiled graph: graph = builder.compile()")
        if not isinstance(agent, Pregel):
            raise ConfigError(f"the langgraph spec names a {type(agent).__name__}, not a compiled LangGraph graph",
                              hint="point it at create_react_agent(...)'s result or at StateGraph(...).compile()")
        input_key(agent)

    async def invoke(self, case: Case, ctx: AgentContext) -> Any:
        from langgraph.errors import GraphRecursionError

        graph = self.agent
        config: dict[str, Any] = {"configurable": {"thread_id": f"frontier-qa-{uuid.uuid4().hex}"}}
        if self.max_turns is not None:
            config["recursion_limit"] = 2 * self.max_turns - 1
        limit = "" if self.max_turns is None else f" (max_turns={self.max_turns})"
        try:
            state = await (_streamed(graph, graph_input(graph, case), config) if self.stream
                           else graph.ainvoke(graph_input(graph, case), config))
        except GraphRecursionError as exc:
            raise GraphRecursionError(f"{exc}{limit}") from exc
        answer = final_answer(state)
        if answer == _OUT_OF_STEPS:
            raise GraphRecursionError(f"the agent ran out of steps with tool calls pending{limit}: "
                                      f"create_react_agent answered {_OUT_OF_STEPS!r}")
        return answer


async def _streamed(graph: Any, inputs: Any, config: dict[str, Any]) -> Any:
    """The final state of a streamed run: every event consumed, the last ``values`` chunk kept."""
    state = None
    async for mode, chunk in graph.astream(inputs, config, stream_mode=["values", "messages"]):
        if mode == "values":
            state = chunk
    return state


def input_key(graph: Any) -> str:
    """The input key the case goes under: ``messages``, else one of :data:`_TEXT_KEYS`.

    A graph without a builder (a functional-API ``@entrypoint``) takes ``{"messages": [...]}``.

    Raises:
        ConfigError: the graph's input has none of these keys (the message names its keys).
    """
    builder = getattr(graph, "builder", None)
    schemas, schema = getattr(builder, "schemas", None), getattr(builder, "input_schema", None)
    if not isinstance(schemas, Mapping) or schema not in schemas:
        return "messages"
    keys = list(schemas[schema])
    for key in ("messages", *_TEXT_KEYS):
        if key in keys:
            return key
    raise ConfigError(f"the graph's input has no key frontier-qa can put the case in (its keys: {keys})",
                      hint=f"give its input state a 'messages' key (MessagesState), or one of {list(_TEXT_KEYS)} "
                      "for the task text")


def graph_input(graph: Any, case: Case) -> dict[str, Any]:
    """The case as the graph's input: its conversation as LangChain messages, or the task text."""
    key = input_key(graph)
    if key != "messages":
        return {key: case.prompt}
    from langchain_core.messages import convert_to_messages

    return {"messages": convert_to_messages(case.messages)}


def final_answer(state: Any) -> Any:
    """The answer in a graph's final state, as :func:`~frontier_qa.adapters._agents.to_trajectory` reads it.

    A state with neither messages nor an ``answer`` / ``output`` gives ``{"state_keys": [...]}``,
    which ``to_trajectory`` refuses with those keys in its message: the run stops there, as for a
    ``python:`` agent that breaks its return contract, since every sample would fail the same way.

    Raises:
        TypeError: the last message is no reply (see :func:`_reply_text`): that sample fails.
    """
    if not isinstance(state, Mapping):
        return text_of(state)  # a functional-API graph returns its output as is
    messages = state.get("messages")
    if isinstance(messages, Sequence) and messages:
        return _reply_text(messages[-1])
    for key in ("answer", "output"):
        if state.get(key) is not None:
            return {"answer": text_of(state[key])}
    return {"state_keys": sorted(state)}


def _reply_text(message: Any) -> str:
    """The text of the graph's last message, which must be one it added (not the task)."""
    if isinstance(message, Mapping):
        kind, content, pending = message.get("role") or message.get("type"), message.get("content"), None
        text = content if isinstance(content, str) else None
    else:
        kind, text, pending = getattr(message, "type", None), getattr(message, "text", None), \
            getattr(message, "tool_calls", None)
    if kind in ("human", "user", "system"):
        raise TypeError(f"the graph added no reply: its last message is the {kind} message it was given")
    if not text and pending:
        raise TypeError("the graph stopped with tool calls pending (an interrupt, or no tool node after the "
                        f"model): {[c.get('name') for c in pending]}")
    if not isinstance(text, str):
        raise TypeError(f"the graph's last message has no text: {str(message)[:200]}")
    return text


def create(rest: str, **options: Any) -> FrameworkAgentAdapter:
    """Factory for ``langgraph:MODULE:ATTR`` specs (options: :class:`FrameworkAgentAdapter`'s)."""
    return load_agent(LangGraphAdapter, rest, options)
