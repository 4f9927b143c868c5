"""MCP servers' tools (stdio) as the tools of framework agents and of the tool-integrated executor.

An :class:`McpToolbox` starts its servers once (per adapter, not per sample), lists their tools
as OpenAI function-tool schemas and runs calls; every call made through :meth:`McpToolbox.call`
is recorded in the current sample's :class:`~frontier_qa.adapters._agents.AgentContext`, so the
framework converters (:func:`openai_agents_tools`, :func:`pydantic_ai_toolset`,
:func:`langchain_tools`) and the executor record each call exactly once. A tool's error result
(``isError``) is recorded as an error and handed back to the model as text, never raised.

The servers run inside one background task of the event loop that started them: the ``mcp``
SDK's stdio transport is an anyio task group that must be left from the task that entered it,
while the calls come from every sample's task. When that loop ends (``asyncio.run`` returns),
the task is cancelled and the SDK's shielded shutdown stops the server processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from frontier_qa.adapters._agents import current_context
from frontier_qa.errors import ConfigError, MissingExtraError, TargetError
from frontier_qa.redaction import redact, register_secrets
from frontier_qa.runtime._env import ENV_REF, UnsetVariableError, expand_env
from frontier_qa.target import ToolCall

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_KEYS = ("name", "command", "args", "env", "cwd")
_STDERR_TAIL = 2000  # characters of a failed server's stderr shown in the error


@dataclass(frozen=True)
class McpServer:
    """One MCP server to start over stdio.

    Attributes:
        command: the executable (``python``, ``npx``, ``uvx``...).
        args: its arguments.
        env: extra environment variables; values may be ``${ENV_VAR}`` (resolved at start) and
            never appear in a repr, an error or a record.
        cwd: the server's working directory (default: the current one).
        name: the server's name: prefixes its tools' names when two servers offer the same name.
    """

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False, hash=False)
    cwd: str | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if not self.command:
            raise ConfigError("an MCP server needs a command", hint="e.g. {command: python, args: [server.py]}")
        if not self.name:
            words = [a for a in self.args if not a.startswith("-")] or [self.command]
            object.__setattr__(self, "name", re.sub(r"[^A-Za-z0-9_-]", "_", Path(words[0]).stem)[:32] or "mcp")
        if not _NAME.fullmatch(self.name):
            raise ConfigError(f"MCP server name {self.name!r} is not a tool-name prefix",
                              hint="use letters, digits, '_' and '-' only")
        object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        object.__setattr__(self, "env", {str(k): str(v) for k, v in self.env.items()})

    @classmethod
    def parse(cls, value: McpServer | Mapping[str, Any] | str) -> McpServer:
        """From a config entry: a mapping of the fields, or one command line (``"python srv.py"``)."""
        if isinstance(value, McpServer):
            return value
        if isinstance(value, str):
            command, *args = shlex.split(value) or [""]
            return cls(command, tuple(args))
        if not isinstance(value, Mapping):
            raise ConfigError(f"an MCP server entry is a mapping or a command line, not {type(value).__name__}",
                              hint="write {name: facts, command: python, args: [server.py]}")
        unknown = sorted(set(value) - set(_KEYS))
        if unknown:
            raise ConfigError(f"unknown MCP server key(s) {unknown}", hint=f"known: {', '.join(_KEYS)}")
        given = value.get("args") or ()
        words = shlex.split(given) if isinstance(given, str) else [str(a) for a in given]
        return cls(str(value.get("command") or ""), tuple(words), dict(value.get("env") or {}),
                   None if value.get("cwd") is None else str(value["cwd"]), str(value.get("name") or ""))

    def resolved_env(self) -> dict[str, str]:
        """``env`` with ``${VAR}`` resolved (a :class:`ConfigError` naming the server when unset)."""
        try:
            return {k: expand_env(v) for k, v in self.env.items()}
        except UnsetVariableError as err:
            raise ConfigError(f"MCP server {self.name!r}: env {err.message}", hint=err.hint) from None


@dataclass(frozen=True)
class McpTool:
    """A tool as offered to the model: ``name`` (prefixed on a clash) maps to ``remote`` on ``server``."""

    name: str
    server: str
    remote: str
    description: str
    parameters: Mapping[str, Any]

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema (chat completions' ``tools`` entry)."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}}


def tool_text(call: ToolCall) -> str:
    """What the model is shown of a call: its result, or its error text."""
    return call.result if call.error is None and call.result is not None else f"Error: {call.error}"


class McpToolbox:
    """The tools of one or more MCP stdio servers, started once and shared by every sample.

    Use ``async with McpToolbox(servers) as box:`` or call :meth:`start` and :meth:`aclose`.

    Args:
        servers: :class:`McpServer` values, mappings of their fields, or command lines.
        start_timeout_s: seconds a server has to answer ``initialize`` and ``tools/list``.
        call_timeout_s: seconds one tool call may take (then it is an error result).
        record: record each :meth:`call` in the current sample (``False`` where something else
            records the framework's tool calls already, e.g. its OpenTelemetry spans).
    """

    def __init__(self, servers: Sequence[McpServer | Mapping[str, Any] | str], *,
                 start_timeout_s: float = 30.0, call_timeout_s: float = 60.0, record: bool = True) -> None:
        if importlib.util.find_spec("mcp") is None:  # say so when the target opens, not at its first sample
            raise MissingExtraError("mcp", "mcp", "MCP tools")
        self.servers = tuple(McpServer.parse(s) for s in servers)
        names = [s.name for s in self.servers]
        if len(set(names)) != len(names):
            raise ConfigError(f"two MCP servers share a name: {names}", hint="give each server its own 'name'")
        self.start_timeout_s = float(start_timeout_s)
        self.call_timeout_s = float(call_timeout_s)
        self.record = record
        self.tools: tuple[McpTool, ...] = ()
        self._env = {s.name: s.resolved_env() for s in self.servers}  # an unset ${VAR} fails here, early
        # what came from ${VAR}s is secret: masked in every log, record and report from now on
        self._secrets = tuple({v for server in self.servers for k, v in self._env[server.name].items()
                               if ENV_REF.search(server.env[k]) and len(v) >= 4})
        register_secrets(self._secrets)
        self._sessions: dict[str, Any] = {}
        self._errlogs: dict[str, IO[bytes]] = {}  # each server's stderr, for the errors that quote it
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"McpToolbox({[s.name for s in self.servers]}, tools={[t.name for t in self.tools]})"

    async def __aenter__(self) -> McpToolbox:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def openai_tools(self) -> list[dict[str, Any]]:
        """Every tool as an OpenAI function-tool schema (call :meth:`start` first)."""
        return [t.openai_schema() for t in self.tools]

    def has(self, name: str) -> bool:
        """Whether ``name`` is one of the toolbox's tools (as the model sees it)."""
        return any(t.name == name for t in self.tools)

    @property
    def started(self) -> bool:
        """Whether the servers run on this event loop and their tools are listed."""
        ready = self._ready
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        running = ready is not None and ready.done() and not ready.cancelled() and ready.exception() is None
        return running and self._task is not None and not self._task.done() and loop in (None, self._loop)

    async def start(self) -> None:
        """Start the servers and list their tools, once per event loop (later calls wait for the first).

        Raises:
            ConfigError: a server could not start (command not found, it exited, or it did not
                answer within ``start_timeout_s``): names the server and shows its stderr's tail.
        """
        loop = asyncio.get_running_loop()
        if self._ready is None or self._loop is not loop:  # first start, or the last loop is gone
            self._loop, self._stop = loop, asyncio.Event()
            self._ready = loop.create_future()
            self._task = loop.create_task(self._serve(self._ready, self._stop), name="frontier-qa-mcp")
        await asyncio.shield(self._ready)

    async def aclose(self) -> None:
        """Stop the servers (a no-op when they are not running on this loop)."""
        task, stop = self._task, self._stop
        if task is None or stop is None or self._loop is not asyncio.get_running_loop():
            return
        self._task = self._ready = None
        stop.set()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await task

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run tool ``name``, record it in the current sample, and return what the model is shown."""
        call = await self.run(name, arguments)
        ctx = current_context() if self.record else None
        if ctx is not None:
            ctx.tool_call(call.name, call.arguments, call.result, call.error)
        return tool_text(call)

    async def run(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> ToolCall:
        """Run tool ``name`` and return the call (nothing recorded: the caller records it).

        Bad arguments, an unknown tool and the tool's own error results come back as the
        call's ``error``; only a server that is gone raises.
        """
        await self.start()
        text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}), sort_keys=True)
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            known = ", ".join(t.name for t in self.tools)
            return ToolCall(name, text, error=f"unknown tool {name!r}; the tools are: {known}")
        try:
            args = json.loads(text or "{}") if isinstance(arguments, str) else dict(arguments or {})
        except json.JSONDecodeError as exc:
            return ToolCall(name, text, error=f"the arguments are not JSON: {exc}")
        if not isinstance(args, dict):
            return ToolCall(name, text, error="the arguments must be a JSON object")
        try:
            result = await self._sessions[tool.server].call_tool(tool.remote, args,
                                                                  read_timeout_seconds=self.call_timeout_s)
        except Exception as exc:  # noqa: BLE001 - a protocol error or a timeout is this call's error
            if _closed(exc):
                raise TargetError(f"MCP server {tool.server!r} exited during a call of {name!r}"
                                  f"{self._stderr_tail(tool.server)}",
                                  hint="run the server by hand to see why; it starts again on the next run"
                                  ) from None
            return ToolCall(name, text, error=redact(f"{type(exc).__name__}: {exc}", self._secrets))
        shown = redact(_result_text(result), self._secrets)
        failed = bool(getattr(result, "is_error", None) or getattr(result, "isError", None))
        return ToolCall(name, text, None if failed else shown, (shown or "the tool failed") if failed else None)

    # -- the servers' task -----------------------------------------------------------------------

    def _stderr_tail(self, server: str) -> str:
        errlog = self._errlogs.get(server)
        if errlog is None or errlog.closed:
            return ""
        end = errlog.seek(0, 2)
        errlog.seek(max(0, end - 4 * _STDERR_TAIL))
        text = errlog.read().decode("utf-8", errors="replace")
        tail = redact(text[-_STDERR_TAIL:].strip(), self._secrets)
        return f"\n  its stderr ends with:\n{tail}" if tail else ""

    async def _serve(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        from frontier_qa._optional import require

        mcp = require("mcp", extra="mcp", purpose="MCP tools")
        with contextlib.ExitStack() as files:
            try:
                async with contextlib.AsyncExitStack() as stack:
                    sessions, listed = {}, []
                    for server in self.servers:
                        errlog = files.enter_context(tempfile.TemporaryFile("w+b"))
                        self._errlogs[server.name] = errlog
                        sessions[server.name], tools = await self._open(mcp, stack, server)
                        listed.append((server, tools))
                    self._sessions, self.tools = sessions, _exposed(listed)
                    ready.set_result(None)
                    await stop.wait()
            except BaseException as exc:
                if ready.done():
                    raise
                ready.set_exception(_leaf(exc, ConfigError))

    async def _open(self, mcp: Any, stack: contextlib.AsyncExitStack[Any], server: McpServer
                    ) -> tuple[Any, list[Any]]:
        import anyio

        env = self._env[server.name]
        params = mcp.StdioServerParameters(command=server.command, args=list(server.args), env=env or None,
                                           cwd=server.cwd)
        try:
            read, write = await stack.enter_async_context(mcp.stdio_client(params, errlog=self._errlogs[server.name]))
            session = await stack.enter_async_context(mcp.ClientSession(read, write))
            with anyio.fail_after(self.start_timeout_s):
                await session.initialize()
                tools = await _list_all(session)
        except Exception as exc:  # noqa: BLE001 - every way of failing to start reads the same to the user
            raise self._start_error(server, exc) from None
        return session, tools

    def _start_error(self, server: McpServer, exc: BaseException) -> ConfigError:
        cause = _leaf(exc)
        if isinstance(cause, FileNotFoundError | PermissionError):
            what, hint = f"its command {server.command!r} was not found or cannot run", "install it or fix 'command'"
        elif _closed(cause):
            what, hint = "it exited before answering 'initialize'", "run the command by hand to see why"
        elif isinstance(cause, TimeoutError):
            what = f"it did not answer 'initialize' within {self.start_timeout_s:g} s"
            hint = "check that the command starts an MCP server on stdio (not HTTP), or raise start_timeout_s"
        else:
            what = f"it failed to start ({type(cause).__name__}: {cause})"
            hint = "run the command by hand to see why; it must speak MCP on stdin/stdout"
        return ConfigError(redact(f"MCP server {server.name!r} could not start: {what}", self._secrets)
                           + self._stderr_tail(server.name), hint=hint)


async def _list_all(session: Any) -> list[Any]:
    from mcp.types import PaginatedRequestParams

    result = await session.list_tools()
    tools = list(result.tools)
    while getattr(result, "next_cursor", None) or getattr(result, "nextCursor", None):
        cursor = getattr(result, "next_cursor", None) or getattr(result, "nextCursor", None)
        result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        tools += result.tools
    return tools


def _exposed(listed: Sequence[tuple[McpServer, Sequence[Any]]]) -> tuple[McpTool, ...]:
    """The tools under the names the model sees: a name two servers share gets its server's prefix."""
    counts: dict[str, int] = {}
    for _, tools in listed:
        for tool in tools:
            counts[tool.name] = counts.get(tool.name, 0) + 1
    out = []
    for server, tools in listed:
        for tool in tools:
            schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None) or {}
            name = tool.name if counts[tool.name] == 1 else f"{server.name}_{tool.name}"
            out.append(McpTool(name, server.name, tool.name, tool.description or "",
                               {"type": "object", "properties": {}, **schema}))
    return tuple(out)


def _result_text(result: Any) -> str:
    """A tool result's content as text: text blocks joined, other blocks named, else the structured value."""
    parts = []
    for block in getattr(result, "content", None) or ():
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')} "
                                                         f"{getattr(block, 'mime_type', '') or ''}]".replace(" ]", "]"))
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if not parts and structured is not None:
        return json.dumps(structured, sort_keys=True, ensure_ascii=False)
    return "\n".join(parts)


def _closed(exc: BaseException) -> bool:
    """Whether ``exc`` says the server's connection is closed (it exited), not that one call failed."""
    error = getattr(exc, "error", None)
    return getattr(error, "code", None) == -32000 and "closed" in str(getattr(error, "message", "")).lower()


def _leaf(exc: BaseException, prefer: type[BaseException] = BaseException) -> BaseException:
    """The first exception of type ``prefer`` inside the SDK's task groups' ExceptionGroups, else the first."""
    leaves, todo = [], [exc]
    while todo:
        item = todo.pop(0)
        inner = getattr(item, "exceptions", None)
        todo[:0] = list(inner) if inner else []
        leaves += [] if inner else [item]
    return next((e for e in leaves if isinstance(e, prefer)), leaves[0] if leaves else exc)
