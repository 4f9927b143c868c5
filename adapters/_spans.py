"""A framework agent's trajectory read from its OpenTelemetry spans (issue 31, item 3).

The frameworks already say what their agents did, as spans: Pydantic AI natively, the OpenAI
Agents SDK and LangChain / LangGraph through OpenInference. :class:`SpanRecorder` is an
``opentelemetry-sdk`` span processor living in this process; :meth:`SpanRecorder.sample` attributes
every span started inside it (the same context, child tasks included, and any span whose parent it
already holds) to one sample's :class:`~frontier_qa.adapters._agents.AgentContext`. When the sample
ends, the spans it gathered become the context's tool calls and steps in start order, so
:func:`~frontier_qa.adapters._agents.to_trajectory` stores them like a hand-recorded trajectory.

Three conventions are read (:func:`normalise`): the OpenTelemetry GenAI conventions
(``gen_ai.operation.name`` chat / text_completion / execute_tool / invoke_agent / create_agent and
the ``gen_ai.tool.*`` / ``gen_ai.usage.*`` attributes; Pydantic AI's instrumentation versions 3-5),
Pydantic AI's version 2 names (``running tool`` with ``tool_arguments`` / ``tool_response``, ``agent
run``), and OpenInference (``openinference.span.kind`` LLM / TOOL / AGENT, ``tool.name``,
``input.value``, ``output.value``, ``llm.model_name``, ``llm.token_count.*``; the Agents SDK's
``handoff to X`` spans). CHAIN spans (LangGraph's nodes) are plumbing, not steps. Arguments,
results and errors are cut to :data:`MAX_CHARS` so one huge tool output cannot bloat the cache.

No trace leaves the process: the recorder joins the global provider as one more processor (its
exporters stay the user's), and :func:`instrument` makes the OpenInference processor the Agents
SDK's only one, whose default exports every trace to OpenAI's servers.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from frontier_qa._optional import require
from frontier_qa.adapters._agents import AgentContext, _text
from frontier_qa.errors import MissingExtraError

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
    from opentelemetry.sdk.trace import SpanProcessor as _Processor
else:
    try:
        from opentelemetry.sdk.trace import SpanProcessor as _Processor
    except ImportError:  # no opentelemetry-sdk: span_recorder() names the extra to install
        _Processor = object

MAX_CHARS = 4000
"""Characters kept of a tool call's arguments, result or error, and of a step's error."""

_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
_HANDOFF_PREFIX = "handoff to "
_OUTPUT_FUNCTION = "running output function"  # Pydantic AI's structured output, not a tool the agent chose


def _bounded(value: Any) -> str | None:
    if value is None:
        return None
    text = _text(value)
    if len(text) <= MAX_CHARS:
        return text
    return text[:MAX_CHARS] + f"…[{len(text) - MAX_CHARS} characters cut]"


# ----- one span, in any convention, as one step ------------------------------------------------


@dataclass(frozen=True)
class Found:
    """What one finished span says the agent did.

    Attributes:
        kind: ``"model"``, ``"tool"``, ``"agent"`` or ``"handoff"``.
        name: the tool's, model's or agent's name; for a handoff, the agent handed to.
        start_ns: when the span started (nanoseconds since the epoch; orders the steps).
        arguments: a tool call's arguments (text, cut to :data:`MAX_CHARS`).
        result: a tool call's result.
        error: why the call or step failed.
        source: for a handoff, the agent that handed over.
        input_tokens: a model call's prompt tokens.
        output_tokens: a model call's completion tokens.
        asked: the tool calls a model call's output asks for, ``(call id, name, arguments)`` in order.
        call_id: a tool call's id (the one the model gave it), when its span says it.
    """

    kind: str
    name: str
    start_ns: int = 0
    arguments: str | None = None
    result: str | None = None
    error: str | None = None
    source: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    asked: tuple[tuple[str, str, str], ...] = ()
    call_id: str | None = None

    def record(self, ctx: AgentContext) -> None:
        """Add this step to the sample's context (a tool call, or a step with its data)."""
        if self.kind == "tool":
            ctx.tool_call(self.name, self.arguments or "", self.result, self.error)
            return
        data: dict[str, Any] = {"kind": self.kind}
        if self.kind == "model":
            description = "model call"
            data.update(model=self.name, input_tokens=self.input_tokens, output_tokens=self.output_tokens)
        elif self.kind == "handoff":
            description = f"handoff to {self.name}"
            data.update(target=self.name, source=self.source)
        else:
            description = f"agent {self.name}"
            data.update(agent=self.name)
        if self.error is not None:
            data["error"] = self.error
        ctx.step(description, **{k: v for k, v in data.items() if v is not None})


def _first(attributes: Mapping[str, Any], *keys: str) -> Any:
    return next((attributes[k] for k in keys if attributes.get(k) not in (None, "")), None)


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _after(name: str, prefix: str) -> str:
    return name[len(prefix):].strip() if name.startswith(prefix) else ""


def _tool_message(value: Any) -> Mapping[str, Any]:
    """LangChain's tool spans hold the whole ToolMessage as JSON: its fields (none for other spans)."""
    if isinstance(value, str) and value.startswith('{"type": "tool"'):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            data = json.loads(value)["data"]
            if isinstance(data, dict):
                return data
    return {}


def _tool_result(value: Any) -> Any:
    """A tool span's result: a LangChain ToolMessage's content, else the value as is."""
    content = _tool_message(value).get("content")
    return value if content is None else content


def span_kind(name: str, attributes: Mapping[str, Any]) -> str | None:
    """``"model"``, ``"tool"``, ``"agent"``, ``"handoff"``, or ``None`` for a span that is no step."""
    operation = attributes.get("gen_ai.operation.name")
    if operation == "execute_tool":
        message = str(attributes.get("logfire.msg", ""))
        return None if message.startswith(_OUTPUT_FUNCTION) else "tool"
    if operation in _MODEL_OPERATIONS:
        return "model"
    if operation in _AGENT_OPERATIONS:
        return "agent"
    openinference = str(attributes.get("openinference.span.kind", "")).upper()
    if openinference == "TOOL":
        return "handoff" if name.startswith(_HANDOFF_PREFIX) and "tool.name" not in attributes else "tool"
    if openinference == "LLM":
        return "model"
    if openinference == "AGENT":
        return "agent"
    if name == "running tool":  # Pydantic AI's instrumentation version 2
        return "tool"
    if name == "agent run":
        return "agent"
    return None


def _error(span: ReadableSpan) -> str | None:
    from opentelemetry.trace import StatusCode

    raised = next((e for e in span.events if e.name == "exception"), None)
    described = None
    if raised is not None and raised.attributes:
        kind, message = raised.attributes.get("exception.type"), raised.attributes.get("exception.message")
        described = f"{kind}: {message}" if kind and message else str(kind or message or "") or None
    if span.status.status_code is StatusCode.ERROR:  # the exception's type and message before the
        return _bounded(described or span.status.description or "error")  # status (OpenInference: a traceback)
    if span.status.status_code is StatusCode.UNSET and described:
        return _bounded(described)
    return None


def _asked(attributes: Mapping[str, Any]) -> tuple[tuple[str, str, str], ...]:
    """The tool calls in a model span's output messages (OpenInference): ``(id, name, arguments)``."""
    names = [key[:-len("function.name")] for key in attributes
             if key.startswith("llm.output_messages.") and key.endswith(".tool_call.function.name")]
    return tuple((str(attributes.get(f"{k}id") or ""), str(attributes[f"{k}function.name"]),
                  str(attributes.get(f"{k}function.arguments") or "")) for k in names)


def _with_asked_arguments(steps: list[Found]) -> list[Found]:
    """Tool calls with the arguments the model asked for, where their span lost the names: OpenInference
    writes a one-argument LangChain tool's input as the bare value (``France`` for ``{"country":
    "France"}``). A call is matched by its id, else (a failed call has no ToolMessage) it is the
    earliest call of that tool the model asked for and no span has taken yet.
    """
    asked: dict[str, tuple[str, str]] = {}  # call id (or its place) -> (tool name, arguments), in order
    out = []
    for step in steps:
        if step.kind == "model":
            asked.update((call_id or f"{step.start_ns}.{i}", (name, arguments))
                         for i, (call_id, name, arguments) in enumerate(step.asked))
        elif step.kind == "tool":
            key = step.call_id if step.call_id in asked else next(
                (k for k, (name, _) in asked.items() if name == step.name), None)
            if key is not None:
                arguments = asked.pop(key)[1]
                if not _is_object(step.arguments):
                    step = replace(step, arguments=_bounded(arguments))
        out.append(step)
    return out


def _is_object(text: str | None) -> bool:
    try:
        return isinstance(json.loads(text or ""), dict)
    except ValueError:
        return False


def normalise(span: ReadableSpan) -> Found | None:
    """The step a finished span stands for, in whichever convention it was written; ``None`` when
    it stands for none (a LangGraph node, an HTTP request, an output function).
    """
    name, attributes = span.name, dict(span.attributes or {})  # a plain dict: the SDK's mapping is slow to read
    kind = span_kind(name, attributes)
    if kind is None or set(attributes) == {"openinference.span.kind"}:
        return None  # the second: the Agents SDK's trace root (its workflow), which no agent ran
    start, error = span.start_time or 0, _error(span)
    if kind == "tool":
        tool = _first(attributes, "gen_ai.tool.name", "tool.name") or _after(name, "execute_tool") or name
        output = _first(attributes, "gen_ai.tool.call.result", "tool_response", "output.value")
        call_id = _first(attributes, "gen_ai.tool.call.id") or _tool_message(output).get("tool_call_id")
        return Found("tool", str(tool), start, error=error,
                     arguments=_bounded(_first(attributes, "gen_ai.tool.call.arguments", "tool_arguments",
                                               "input.value")),
                     result=_bounded(_tool_result(output)), call_id=None if call_id is None else str(call_id))
    if kind == "model":
        model = (_first(attributes, "gen_ai.request.model", "gen_ai.response.model", "llm.model_name")
                 or _after(name, "chat") or _after(name, "text_completion"))
        return Found("model", str(model or ""), start, error=error,
                     input_tokens=_int(_first(attributes, "gen_ai.usage.input_tokens", "llm.token_count.prompt")),
                     output_tokens=_int(_first(attributes, "gen_ai.usage.output_tokens",
                                               "llm.token_count.completion")),
                     asked=_asked(attributes))
    if kind == "handoff":
        target = _first(attributes, "output.value") or _after(name, _HANDOFF_PREFIX)
        source = _first(attributes, "input.value")
        return Found("handoff", str(target), start, error=error, source=None if source is None else str(source))
    agent = (_first(attributes, "gen_ai.agent.name", "agent_name") or _after(name, "invoke_agent")
             or _after(name, "create_agent") or name)
    return Found("agent", str(agent), start, error=error)


# ----- the recorder: spans to samples -----------------------------------------------------------


@dataclass
class _Capture:
    """The spans of one sample: whose they are, and the steps of those that ended."""

    ctx: AgentContext
    # span id -> (its parent, what it is as it started: "model", "tool:NAME"..., None when it says nothing yet)
    started: dict[int, tuple[int | None, str | None]] = field(default_factory=dict)
    nested: set[int] = field(default_factory=set)  # a step inside the same step: no step of its own
    found: list[tuple[int, int, Found]] = field(default_factory=list)  # (start, end order, step)


def _what(name: str, attributes: Mapping[str, Any]) -> str | None:
    """What a span is as it starts: ``"model"``, ``"tool:NAME"``, ``"agent"``, ``"handoff"``;
    ``None`` for no step, or one that says what it is only when it ends (OpenInference's LangChain spans).
    """
    kind = span_kind(name, attributes)
    if kind != "tool":
        return kind
    return "tool:" + str(_first(attributes, "gen_ai.tool.name", "tool.name") or _after(name, "execute_tool") or name)


def _enclosing(capture: _Capture, parent: int | None) -> str | None:
    """What the nearest enclosing step is. A model call inside a model call is the client library's span
    under the framework's, and a tool inside the same tool an in-process MCP server's span under the
    agent's: one call each.
    """
    while parent is not None and parent in capture.started:
        parent, what = capture.started[parent]
        if what is not None:
            return what
    return None


def _same_arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _drop_recorded(ctx: AgentContext, step: Found, calls: tuple[int, int],
                   events: tuple[int, int]) -> tuple[int, int]:
    """Take the tool call ``step`` stands for (same tool, same arguments as JSON) out of what the
    sample recorded itself: ``ctx.tool_calls[calls[0]:calls[1]]`` and ``ctx.events[events[0]:events[1]]``.
    Returns how many tool calls and events it took out.
    """
    wanted = _same_arguments(step.arguments or "")
    for i in range(*calls):
        call = ctx.tool_calls[i]
        if call.name == step.name and _same_arguments(call.arguments) == wanted:
            del ctx.tool_calls[i]
            for j in range(*events):
                event = ctx.events[j]
                if event.get("role") == "tool" and event.get("name") == call.name \
                        and event.get("arguments") == call.arguments:
                    del ctx.events[j]
                    return 1, 1
            return 1, 0
    return 0, 0


_SAMPLE: contextvars.ContextVar[_Capture | None] = contextvars.ContextVar("frontier_qa_spans", default=None)
_ENDED = itertools.count()


class SpanRecorder(_Processor):
    """A span processor that turns each sample's spans into its trajectory (module docstring).

    Attributes:
        provider: the tracer provider it is installed on; :func:`instrument` points the
            frameworks' instrumentation at it.
    """

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("frontier_qa")  # the samples' own spans (agent_span)
        self._owners: dict[int, _Capture] = {}  # span id -> the sample it belongs to
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def sample(self, ctx: AgentContext) -> Iterator[None]:
        """Attribute every span started inside the block to ``ctx``; on the way out, add their steps
        to it in the order the spans started.

        A tool call the block also recorded itself (``record_tool``, the MCP toolbox) is kept once:
        the span's, which stands in its place among the model calls.
        """
        capture = _Capture(ctx)
        token = _SAMPLE.set(capture)
        calls, events = len(ctx.tool_calls), len(ctx.events)
        try:
            yield
        finally:
            _SAMPLE.reset(token)
            with self._lock:
                for span_id in capture.started:
                    self._owners.pop(span_id, None)
                found = sorted(capture.found, key=lambda item: item[:2])
            recorded = [len(ctx.tool_calls), len(ctx.events)]  # what the block recorded ends here
            for step in _with_asked_arguments([step for _, _, step in found]):
                if step.kind == "tool":
                    dropped = _drop_recorded(ctx, step, (calls, recorded[0]), (events, recorded[1]))
                    recorded = [recorded[0] - dropped[0], recorded[1] - dropped[1]]
                step.record(ctx)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        capture = _SAMPLE.get()
        parent = span.parent.span_id if span.parent is not None else None
        with self._lock:
            if capture is None and parent is not None:
                capture = self._owners.get(parent)  # a span started where the context did not follow
            if capture is None:
                return
            span_id = span.context.span_id
            self._owners[span_id] = capture
            what = _what(span.name, dict(span.attributes or {}))
            capture.started[span_id] = (parent, what)
            if what is not None and what.startswith(("model", "tool:")) and what == _enclosing(capture, parent):
                capture.nested.add(span_id)

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None:
            return
        span_id = span.context.span_id
        with self._lock:
            capture = self._owners.get(span_id)
            if capture is None or span_id in capture.nested:
                return
        step = normalise(span)
        if step is not None:
            capture.found.append((step.start_ns, next(_ENDED), step))

    def shutdown(self) -> None:
        """Nothing to flush: steps go to their samples as the spans end."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_RECORDER: SpanRecorder | None = None
_RECORDER_LOCK = threading.Lock()


def span_recorder() -> SpanRecorder:
    """The process's one :class:`SpanRecorder`, installed on first use.

    It joins the global tracer provider when that is an SDK provider (the user's exporters stay as
    they are); when none is set it sets an SDK ``TracerProvider`` holding only the recorder; a
    global provider of another kind is left alone and the recorder gets a provider of its own.

    Raises:
        MissingExtraError: ``opentelemetry-sdk`` is not installed.
    """
    global _RECORDER
    with _RECORDER_LOCK:
        if _RECORDER is None:
            _RECORDER = _install()
        return _RECORDER


def _install() -> SpanRecorder:
    require("opentelemetry.sdk.trace", extra="agents", purpose="Recording a framework agent's trajectory",
            package="opentelemetry-sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    current = trace.get_tracer_provider()
    if isinstance(current, trace.ProxyTracerProvider):  # none set yet
        trace.set_tracer_provider(TracerProvider())
        current = trace.get_tracer_provider()  # another thread's may have won the race
    provider = current if callable(getattr(current, "add_span_processor", None)) else TracerProvider()
    recorder = SpanRecorder(provider)  # type: ignore[arg-type]
    provider.add_span_processor(recorder)  # type: ignore[attr-defined]
    return recorder


def span_text(span_context: Any) -> str:
    """A span's ids as frontier-qa stores them: ``"<trace id>-<span id>"`` in hex (W3C traceparent's parts)."""
    return f"{span_context.trace_id:032x}-{span_context.span_id:016x}"


@contextlib.contextmanager
def agent_span(agent: str, ctx: AgentContext) -> Iterator[None]:
    """The ``invoke_agent <agent>`` span one sample runs in (the OpenTelemetry GenAI conventions), on
    the recorder's provider, so the framework's spans nest under it; ``ctx.span`` gets its ids.

    The exported verdict of the case (:mod:`frontier_qa.reports._otel_export`) names these spans. An
    exception leaving the block marks the span failed. Without ``opentelemetry-sdk``: no span.
    """
    try:
        tracer = span_recorder().tracer
    except MissingExtraError:
        yield
        return
    from opentelemetry.trace import SpanKind

    attributes: dict[str, str | int] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
        "frontier_qa.case.id": ctx.case.id, "frontier_qa.sample.index": ctx.sample_index}
    with tracer.start_as_current_span(f"invoke_agent {agent}", kind=SpanKind.INTERNAL, attributes=attributes) as span:
        ctx.span = span_text(span.get_span_context())
        yield


# ----- turning each framework's instrumentation on ---------------------------------------------


def _pydantic_ai(provider: TracerProvider) -> None:
    pydantic_ai = require("pydantic_ai", extra="pydantic-ai", purpose="A Pydantic AI agent's trajectory",
                          package="pydantic-ai-slim")
    from pydantic_ai.models.instrumented import InstrumentationSettings

    agent_class = pydantic_ai.Agent
    if getattr(agent_class, "_instrument_default", False):
        return  # the user instrumented every agent already (logfire...): their spans reach the global provider
    agent_class.instrument_all(InstrumentationSettings(tracer_provider=provider, include_content=True))


def _openai_agents(provider: TracerProvider) -> None:
    require("agents", extra="openai-agents", purpose="An OpenAI Agents SDK agent's trajectory",
            package="openai-agents")
    instrumentation = require("openinference.instrumentation.openai_agents", extra="openai-agents",
                              purpose="An OpenAI Agents SDK agent's trajectory",
                              package="openinference-instrumentation-openai-agents")
    instrumentation.OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, exclusive_processor=True)
    keep_agents_traces_local()


def keep_agents_traces_local() -> None:
    """Leave the Agents SDK only OpenInference processors: its default one sends every trace to
    OpenAI's servers, and a probe's traces (prompts, tool arguments) must stay in the process.
    """
    import agents
    from agents.tracing import get_trace_provider
    from openinference.instrumentation.openai_agents._processor import OpenInferenceTracingProcessor

    registered = getattr(getattr(get_trace_provider(), "_multi_processor", None), "_processors", ())
    local: list[agents.TracingProcessor] = [p for p in registered if isinstance(p, OpenInferenceTracingProcessor)]
    if len(local) != len(registered):
        agents.set_trace_processors(local)


def _langchain(provider: TracerProvider) -> None:
    require("langchain_core", extra="langgraph", purpose="A LangGraph agent's trajectory", package="langchain-core")
    instrumentation = require("openinference.instrumentation.langchain", extra="langgraph",
                              purpose="A LangGraph agent's trajectory",
                              package="openinference-instrumentation-langchain")
    instrumentation.LangChainInstrumentor().instrument(tracer_provider=provider)


_INSTRUMENTERS: dict[str, Callable[[TracerProvider], None]] = {
    "pydantic-ai": _pydantic_ai, "openai-agents": _openai_agents, "langgraph": _langchain, "langchain": _langchain,
}
_INSTRUMENTED: set[str] = set()


def instrument(framework: str) -> SpanRecorder:
    """Turn on ``framework``'s span instrumentation (once per process) against the recorder's provider.

    Cheap after the first call: a framework adapter calls it for every run. For the Agents SDK each
    call also checks that no processor but OpenInference's is registered.

    Args:
        framework: ``"pydantic-ai"``, ``"openai-agents"``, ``"langgraph"`` or ``"langchain"``.

    Returns:
        the process's :class:`SpanRecorder`.

    Raises:
        MissingExtraError: the framework or its instrumentation package is not installed.
        ValueError: an unknown framework.
    """
    if framework not in _INSTRUMENTERS:
        raise ValueError(f"no span instrumentation for {framework!r}; known: {', '.join(sorted(_INSTRUMENTERS))}")
    recorder = span_recorder()
    with _RECORDER_LOCK:
        if framework not in _INSTRUMENTED:
            _INSTRUMENTERS[framework](recorder.provider)
            _INSTRUMENTED.add(framework)
            if framework in ("langgraph", "langchain"):
                _INSTRUMENTED.update(("langgraph", "langchain"))
        elif framework == "openai-agents":
            keep_agents_traces_local()  # a processor added since (the SDK's default, by a reset) goes again
    return recorder


__all__ = ["MAX_CHARS", "Found", "SpanRecorder", "agent_span", "instrument", "keep_agents_traces_local", "normalise",
           "span_kind", "span_recorder", "span_text"]
