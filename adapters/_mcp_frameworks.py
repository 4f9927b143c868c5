"""An :class:`~frontier_qa.adapters._mcp.McpToolbox`'s tools as the tools of agent frameworks.

The OpenAI Agents SDK and Pydantic AI have MCP clients of their own; frontier-qa routes their
agents' MCP tools through one toolbox instead, so that there is one recording path (each call is
recorded once, by :meth:`McpToolbox.call`, in the sample that made it) and one server process per
adapter rather than one per agent run. Each function imports its framework when called, never at
import, and wants a started toolbox (``await toolbox.start()``) whose tools it can list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from frontier_qa.adapters._mcp import McpTool, McpToolbox
from frontier_qa.errors import ConfigError


def _tools(toolbox: McpToolbox) -> tuple[McpTool, ...]:
    if not toolbox.started:
        raise ConfigError("the MCP toolbox is not started, so its tools are not known yet",
                          hint="await toolbox.start() (or enter 'async with toolbox') before converting its tools")
    return toolbox.tools


def _caller(toolbox: McpToolbox, name: str) -> Callable[..., Awaitable[str]]:
    async def call(**arguments: Any) -> str:
        return await toolbox.call(name, arguments)

    call.__name__ = name
    return call


def openai_agents_tools(toolbox: McpToolbox) -> list[Any]:
    """The toolbox's tools as OpenAI Agents SDK ``FunctionTool``s (``Agent(tools=...)``)."""
    from agents import FunctionTool

    def invoke(name: str) -> Callable[[Any, str], Awaitable[str]]:
        async def on_invoke_tool(_ctx: Any, arguments: str) -> str:
            return await toolbox.call(name, arguments)

        return on_invoke_tool

    return [FunctionTool(name=t.name, description=t.description, params_json_schema=dict(t.parameters),
                         on_invoke_tool=invoke(t.name), strict_json_schema=False) for t in _tools(toolbox)]


def pydantic_ai_toolset(toolbox: McpToolbox) -> Any:
    """The toolbox's tools as a Pydantic AI ``FunctionToolset`` (``Agent(toolsets=[...])``)."""
    from pydantic_ai import FunctionToolset, Tool

    return FunctionToolset([Tool.from_schema(_caller(toolbox, t.name), name=t.name, description=t.description,
                                             json_schema=dict(t.parameters)) for t in _tools(toolbox)])


def langchain_tools(toolbox: McpToolbox) -> list[Any]:
    """The toolbox's tools as LangChain ``StructuredTool``s (``bind_tools``, LangGraph's ``create_react_agent``)."""
    from langchain_core.tools import StructuredTool

    return [StructuredTool(name=t.name, description=t.description or t.name, args_schema=dict(t.parameters),
                           coroutine=_caller(toolbox, t.name)) for t in _tools(toolbox)]


__all__ = ["langchain_tools", "openai_agents_tools", "pydantic_ai_toolset"]
