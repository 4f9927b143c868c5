"""Agents built on a framework as targets: what running one sample of any of them takes.

Specs name the framework, then the agent object the way ``python:`` specs do:

=============================================  ==========================================
``openai-agents:path/agent.py:triage_agent``   an OpenAI Agents SDK ``Agent``
``langgraph:package.module:graph``             a compiled LangGraph graph (``create_react_agent``...)
``pydantic-ai:path/agent.py:agent``            a Pydantic AI ``Agent``
=============================================  ==========================================

The framework's own agent object runs, one fresh run (session, thread) per sample. Around each
sample, :meth:`FrameworkAgentAdapter.sample_scope` enters two things:

- the **model gateway** (:mod:`frontier_qa.runtime._gateway`), which the :class:`ManagedTarget`
  binds to adapters that say ``routes_model_calls``: every model call the agent makes through
  an OpenAI-SDK client goes through frontier-qa's rate limits, retries, per-call cache, budgets
  and seeds, whatever client the agent built;
- the **span recorder** (:mod:`frontier_qa.adapters._spans`): the framework's OpenTelemetry spans
  (native, or OpenInference instrumentation) become the sample's trajectory — model calls, tool
  calls with arguments and results, handoffs, errors.

Errors follow the ``python:`` contract (:mod:`frontier_qa.adapters.workflow`): an exception from
the agent fails that sample only; transient ones (rate limits, timeouts, dropped connections)
are raised to the runtime, which retries the sample; fatal ones (HTTP 401/403) stop the run. A
stop the gateway decided inside a sample (budget spent, target unavailable) is raised as itself,
even when the framework wrapped it in its own error on the way out.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from frontier_qa._optional import require
from frontier_qa.adapters._agents import (
    AgentContext,
    InProcessAgent,
    _field,
)
from frontier_qa.errors import ConfigError, TargetError
from frontier_qa.target import Case, Sampling, Trajectory


class FrameworkAgentAdapter(InProcessAgent):
    """A framework's agent object as a target; subclasses say how to run it once.

    Args:
        agent: the framework's agent object (checked by :meth:`check_agent`).
        id: the target id (default ``<framework>:<module>.<name>``); part of every cache key.
        version: the agent's declared version; the reported one adds a hash of the agent's
            source (:mod:`frontier_qa.adapters._agent_source`), so an edited agent never reuses
            cached answers.
        module: the module the agent was loaded from (its source is hashed).
        stream: run the agent in the framework's streaming mode (the events are consumed and
            the final output read) instead of its plain run.
        max_turns: the most model turns one sample may take (``None``: the framework's default).
        mcp_servers: MCP stdio servers whose tools are added to the agent's own
            (:class:`~frontier_qa.adapters._mcp.McpServer` values, mappings or command lines), for
            frameworks that take tools per run (:attr:`takes_tools`); started once, with the first
            sample, and stopped by :meth:`aclose`.
        transient: exception types retried by the runtime (others fail only their sample).
        fatal: exception types that stop the run.
    """

    framework: ClassVar[str] = ""
    """The spec scheme, also the pip extra (``openai-agents``)."""
    module_name: ClassVar[str] = ""
    """The module that must import for this framework (``agents``)."""
    package: ClassVar[str] = ""
    """The pip package that provides :attr:`module_name` (``openai-agents``)."""
    takes_tools: ClassVar[bool] = True
    """Whether a run can be given tools besides the agent's own (``mcp_servers``)."""
    routes_model_calls: ClassVar[bool] = True
    in_process = True  # Limits.local_timeout_s applies
    supports_prefill = False
    max_n = 1

    def __init__(
        self,
        agent: Any,
        *,
        id: str | None = None,  # noqa: A002 - matches Adapter.id
        version: str | None = None,
        module: Any = None,
        stream: bool = False,
        max_turns: int | None = None,
        mcp_servers: Sequence[Any] = (),
        transient: Sequence[type[BaseException]] = (TimeoutError, ConnectionError),
        fatal: Sequence[type[BaseException]] = (),
    ) -> None:
        from frontier_qa.adapters._agent_source import agent_version

        self.check_agent(agent)
        if max_turns is not None and max_turns < 1:
            raise ConfigError(f"max_turns={max_turns} is not a number of turns",
                              hint="give max_turns >= 1, or leave it out")
        self.mcp: Any = None  # an McpToolbox, when the target has MCP servers
        if mcp_servers:
            if not self.takes_tools:
                raise ConfigError(f"{self.framework} targets take no mcp_servers: the agent's tools are fixed "
                                  "when it is built", hint="give the agent its MCP tools where you build it")
            from frontier_qa.adapters._mcp import McpToolbox

            # spans record the framework's tool calls (with the toolbox's errors, by span status): the
            # toolbox records none itself, so each call is in the trajectory once
            self.mcp = McpToolbox(mcp_servers, record=False)
        self.agent = agent
        self.agent_name = f"the {self.framework} agent"
        self.stream = bool(stream)
        self.max_turns = max_turns
        self.transient = tuple(transient)
        self.fatal = tuple(fatal)
        self.gateway: Any = None  # a ModelGateway, bound by the ManagedTarget that wraps this adapter
        name = _field(agent, "name") or getattr(agent, "__qualname__", None) or type(agent).__name__
        where = getattr(module, "__name__", None) or getattr(agent, "__module__", "?")
        self.id = id or f"{self.framework}:{where}.{name}"
        # what changes answers besides the source: how the agent is run
        options = {"stream": self.stream, "max_turns": max_turns,
                   "mcp_servers": [] if self.mcp is None else [repr(s) for s in self.mcp.servers]}
        self._version = version if module is None else agent_version(module, version, options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"

    def version(self) -> str | None:
        return self._version

    # --- what a framework says -------------------------------------------------------------

    def check_agent(self, agent: Any) -> None:
        """Raise :class:`ConfigError` when ``agent`` is not this framework's agent object."""

    async def invoke(self, case: Case, ctx: AgentContext) -> Any:
        """Run the agent once on ``case``; return what :func:`to_trajectory` reads (the answer
        text, or a mapping with ``answer``), recording into ``ctx`` what the spans do not.
        """
        raise NotImplementedError

    async def aclose(self) -> None:
        """Stop the MCP servers, if any."""
        if self.mcp is not None:
            await self.mcp.aclose()

    # --- one sample ------------------------------------------------------------------------

    @contextlib.contextmanager
    def sample_scope(self, ctx: AgentContext) -> Iterator[None]:
        """The model gateway's route and the span recorder's capture, for one sample."""
        from frontier_qa.adapters._spans import instrument, span_recorder

        instrument(self.framework)
        with contextlib.ExitStack() as stack:
            if self.gateway is not None:
                stack.enter_context(self.gateway.sample(ctx))
            stack.enter_context(span_recorder().sample(ctx))
            yield

    async def run_sample(self, case: Case, sampling: Sampling, index: int) -> Trajectory:
        if self.mcp is not None:
            await self.mcp.start()  # once; a server that cannot start stops the run (ConfigError)
        return await super().run_sample(case, sampling, index)

    def unreadable(self, exc: Exception) -> TargetError:
        return TargetError(f"{self.framework} agent {self.id!r} gave no answer frontier-qa can read: {exc}",
                           hint="the agent's final output must be text, or an object with an 'answer' field "
                           "(set the agent's output type accordingly)")


def text_of(output: Any) -> Any:
    """A framework's final output as :func:`to_trajectory` reads it: text as is; a pydantic model
    or a dataclass as a mapping (its ``answer`` field is the answer); anything else as is.
    """
    if isinstance(output, (str, Mapping)) or output is None:
        return output
    dump = getattr(output, "model_dump", None)
    if callable(dump):
        return dump()
    if hasattr(output, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(output)
    return output


def load_agent(adapter: type[FrameworkAgentAdapter], rest: str, options: Mapping[str, Any]) -> FrameworkAgentAdapter:
    """Build ``adapter`` from the ``MODULE:ATTR`` part of a spec, like ``python:`` specs load.

    The framework is imported first, so a missing one is a :class:`MissingExtraError` naming the
    extra rather than an import failure inside the user's file. The agent's module-level
    ``version`` / ``__version__`` counts as the agent's declared version.

    Raises:
        MissingExtraError: the framework is not installed.
        ConfigError: the spec, the file or the attribute is wrong, or the object is not this
            framework's agent; or an option is unknown.
    """
    from frontier_qa.adapters._python_agent import _load

    require(adapter.module_name, extra=adapter.framework, purpose=f"{adapter.framework} targets",
            package=adapter.package)
    known = {name for cls in adapter.__mro__ if "__init__" in vars(cls)
             for name, p in inspect.signature(vars(cls)["__init__"]).parameters.items()
             if p.kind is p.KEYWORD_ONLY}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"unknown option(s) for {adapter.framework} targets: {', '.join(unknown)}",
                          hint=f"known options: {', '.join(sorted(known - {'module'}))}")
    module, agent = _load(rest)
    given = dict(options)
    module_version = _field(module, "version", "__version__")
    if "version" not in given and isinstance(module_version, (str, int)):
        given["version"] = str(module_version)
    given.setdefault("id", f"{adapter.framework}:{rest}")
    return adapter(agent, module=module, **given)
