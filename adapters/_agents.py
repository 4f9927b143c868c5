"""What the two agent adapters share: the per-sample context, results as trajectories, errors.

Not an API of its own: users import these names from :mod:`frontier_qa.adapters.workflow`
(the contract of both agent kinds is in its docstring). :mod:`frontier_qa.adapters._python_agent`
and :mod:`frontier_qa.adapters._http_agent` build on it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import json
import re
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from frontier_qa.errors import TargetError
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, ToolCall, Trajectory, Usage

T = TypeVar("T")
_CONTEXT: contextvars.ContextVar[AgentContext | None] = contextvars.ContextVar("frontier_qa_agent", default=None)
_ANSWER_KEYS = ("answer", "output", "final_answer", "text")
_TRANSIENT_NAMES = re.compile(r"timeout|timedout|connecterror|connectionerror|apiconnection|ratelimit", re.I)


class AgentContext:
    """What a Python agent may use while it answers one sample, and what it records.

    Attributes:
        case: the case being answered.
        sample_index: this sample's index for the case (0-based).
        sampling: the sampling parameters of the request.
        seed: ``sampling.seed_for(case, sample_index)`` (the base seed mixed with the case, plus
            the sample index), or ``None`` when no seed was given.
        stop_error: set by the model gateway (:mod:`frontier_qa.runtime._gateway`) when the run
            must stop (budget, unavailable target, fatal reply); raise it after the agent ends.
        span: the ``invoke_agent`` span the sample runs in, ``"<trace id>-<span id>"`` in hex
            (:func:`~frontier_qa.adapters._spans.agent_span`); ``None`` without one.
    """

    def __init__(self, case: Case, sample_index: int, sampling: Sampling) -> None:
        self.case = case
        self.sample_index = sample_index
        self.sampling = sampling
        self.seed = sampling.seed_for(case, sample_index)
        self.tool_calls: list[ToolCall] = []
        self.events: list[dict[str, Any]] = []  # tool calls and steps, in order
        self.usage = Usage()
        self.cost_usd: float | None = None
        # a stop the model gateway met inside the agent's HTTP client (which would wrap and retry
        # it as a connection error): the adapter raises it once the agent returns or raises
        self.stop_error: BaseException | None = None
        self.span: str | None = None

    def tool_call(self, name: str, arguments: Any, result: Any = None, error: str | None = None) -> ToolCall:
        """Record one executed tool call (arguments/result that are not text become JSON)."""
        call = ToolCall(name, _text(arguments), None if result is None else _text(result), error)
        self.tool_calls.append(call)
        event = {"role": "tool", "name": name, "arguments": call.arguments, "content": call.result or call.error}
        self.events.append(event if error is None else {**event, "error": error})
        return call

    def step(self, description: str, **data: Any) -> None:
        """Record one step of the workflow (planning, a model call, a retrieval...)."""
        self.events.append({"role": "step", "content": description, **data})

    def add_usage(self, prompt_tokens: int = 0, completion_tokens: int = 0, cost_usd: float | None = None) -> None:
        """Add tokens and US dollars spent by the agent's own model calls (for budgets)."""
        self.usage = self.usage + Usage(int(prompt_tokens), int(completion_tokens))
        if cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(cost_usd)


def current_context() -> AgentContext | None:
    """The context of the sample the calling code is answering (``None`` outside an agent run)."""
    return _CONTEXT.get()


def record_tool(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Decorator: record every call of a tool function (sync or async) in the current sample.

    Outside an agent run the function just runs. Exceptions are recorded and re-raised.
    Usage: ``@record_tool`` or ``@record_tool(name="search")``.
    """

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        tool_name = name or func.__name__
        signature = inspect.signature(func)

        def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return {"args": list(args), **kwargs}
            bound.apply_defaults()
            return dict(bound.arguments)

        def record(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, exc: BaseException | None) -> None:
            ctx = _CONTEXT.get()
            if ctx is not None:
                error = None if exc is None else f"{type(exc).__name__}: {exc}"
                ctx.tool_call(tool_name, arguments(args, kwargs), result, error)

        @contextlib.contextmanager
        def recorded(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[list[Any]]:
            # Both wrappers' one call site: the body appends the tool's result; the call is recorded
            # on the way out with it, or with the Exception the tool raised (then re-raised as is).
            outcome: list[Any] = []
            try:
                yield outcome
            except Exception as exc:
                record(args, kwargs, None, exc)
                raise
            record(args, kwargs, outcome[0], None)

        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with recorded(args, kwargs) as outcome:
                    outcome.append(await func(*args, **kwargs))
                return outcome[0]

            return async_wrapper

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with recorded(args, kwargs) as outcome:
                outcome.append(func(*args, **kwargs))
            return outcome[0]

        return wrapper

    return wrap(fn) if fn is not None else wrap


# ----- turning what an agent returned into a trajectory -------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _field(result: Any, *names: str) -> Any:
    for name in names:
        value = result.get(name) if isinstance(result, Mapping) else getattr(result, name, None)
        if value is not None:
            return value
    return None


def _tool_call(item: Any) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    name = _field(item, "name")
    if name is None:
        raise TypeError(f"a tool call needs a 'name': {item!r}")
    result, error = _field(item, "result"), _field(item, "error")
    return ToolCall(str(name), _text(_field(item, "arguments", "args") or ""),
                    None if result is None else _text(result), None if error is None else str(error))


def _usage(value: Any) -> Usage:
    if value is None:
        return Usage()
    if isinstance(value, Usage):
        return value
    prompt = _field(value, "prompt_tokens", "input_tokens") or 0
    completion = _field(value, "completion_tokens", "output_tokens") or 0
    return Usage(int(prompt), int(completion))


class InProcessAgent(Adapter):
    """What the in-process agent adapters (``python:``, the frameworks') share: one run of the agent
    per sample index, and the agent's exceptions classified by the ``python:`` contract.
    """

    transient: tuple[type[BaseException], ...] = (TimeoutError, ConnectionError)
    fatal: tuple[type[BaseException], ...] = ()

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        """Run the agent once per sample index (concurrently when ``n > 1``)."""
        from frontier_qa.runtime._aio import gather_or_cancel

        if n == 1:
            return [await self.run_sample(case, sampling, start)]
        return await gather_or_cancel([self.run_sample(case, sampling, i) for i in range(start, start + n)])

    def classify(self, exc: BaseException) -> ErrorClass:
        kind = _classify_agent_error(exc, self.transient, self.fatal)
        return ErrorClass(kind or ErrorKind.FATAL, f"{type(exc).__name__}: {exc}")

    agent_name = "the agent"
    """How errors name the agent (``the openai-agents agent``)."""

    async def invoke(self, case: Case, ctx: AgentContext) -> Any:
        """Run the agent once for the sample ``ctx``; return what it returned."""
        raise NotImplementedError

    def sample_scope(self, ctx: AgentContext) -> contextlib.AbstractContextManager[Any]:
        """What surrounds one run of the agent (the framework adapters' gateway route and span capture)."""
        return contextlib.nullcontext()

    def unreadable(self, exc: Exception) -> TargetError:
        """The error for a result :func:`to_trajectory` cannot read."""
        return TargetError(f"agent {self.id!r} broke the return contract: {exc}",
                           hint="return the answer text, or a dict with 'answer' (and optionally 'tool_calls', "
                           "'messages', 'usage', 'cost_usd', 'steps')")

    async def run_sample(self, case: Case, sampling: Sampling, index: int) -> Trajectory:
        """One sample: the agent run once, as a trajectory.

        An exception from the agent fails this sample only (an error trajectory keeps what it
        recorded); transient and fatal ones are raised to the runtime, which retries them or stops
        the run; a stop the runtime decided inside the sample (``ctx.stop_error``) is raised as itself,
        whatever the agent's framework wrapped it in on the way out.
        """
        ctx = AgentContext(case, index, sampling)
        token = _CONTEXT.set(ctx)  # record_tool records into it (sync agents' threads copy the context)
        started = time.monotonic()
        from frontier_qa.adapters._spans import agent_span

        try:
            # the sample's own span outside the capture: the framework's spans nest under it, it is no step
            with agent_span(self.id, ctx), self.sample_scope(ctx):
                result = await self.invoke(case, ctx)
        except Exception as exc:  # noqa: BLE001 - classified below
            if ctx.stop_error is not None:
                raise ctx.stop_error from None
            if _classify_agent_error(exc, self.transient, self.fatal) is not None:
                raise  # the runtime retries it (or stops the run for fatal ones)
            return failed_sample(ctx, time.monotonic() - started,
                                 f"{self.agent_name} raised {type(exc).__name__}: {exc}{_where(exc)}")
        finally:
            _CONTEXT.reset(token)
        if ctx.stop_error is not None:
            raise ctx.stop_error
        try:
            return to_trajectory(result, ctx, time.monotonic() - started)
        except (TypeError, ValueError) as exc:
            raise self.unreadable(exc) from exc


def failed_sample(ctx: AgentContext, latency_s: float, error: str) -> Trajectory:
    """A sample the agent failed (it raised): what it recorded up to the failure, and why."""
    return Trajectory(text=None, messages=(*ctx.case.messages, *ctx.events), tool_calls=tuple(ctx.tool_calls),
                      usage=ctx.usage, cost_usd=ctx.cost_usd, latency_s=latency_s, error=error,
                      sample_index=ctx.sample_index, span=ctx.span)


def to_trajectory(result: Any, ctx: AgentContext, latency_s: float) -> Trajectory:
    """Build the trajectory from an agent's return value and what it recorded in ``ctx``.

    Raises:
        TypeError: the return value does not follow the contract (:mod:`frontier_qa.adapters.workflow`).
    """
    case, index = ctx.case, ctx.sample_index
    if result is None:
        raise TypeError("the agent returned None; return the answer text or {'answer': ...}")
    if isinstance(result, str):
        answer, error, returned = result, None, {}
    else:
        if not isinstance(result, Mapping) and not any(hasattr(result, k) for k in (*_ANSWER_KEYS, "error")):
            raise TypeError(f"the agent returned {type(result).__name__}; return a str or a mapping with 'answer'")
        answer, error = _field(result, *_ANSWER_KEYS), _field(result, "error")
        returned = result
        if answer is None and error is None:
            raise TypeError(f"the agent's result has none of {_ANSWER_KEYS}: {str(result)[:200]}")
    calls = list(ctx.tool_calls) + [_tool_call(c) for c in (_field(returned, "tool_calls") or [])]
    steps = _field(returned, "steps")
    step_events: list[dict[str, Any]] = []
    if isinstance(steps, Sequence) and not isinstance(steps, str):
        step_events = [{"role": "step", "content": _text(s)} for s in steps]
    if isinstance(steps, int) and not isinstance(steps, bool) and not any(e["role"] == "step" for e in ctx.events):
        step_events = [{"role": "step", "content": f"{steps} steps", "count": steps}]
    text = None if answer is None else _text(answer)
    own_messages = _field(returned, "messages")
    if own_messages:
        messages = [dict(m) for m in own_messages] + step_events
    else:
        messages = [*case.messages, *ctx.events, *step_events]
        if text is not None:
            messages.append({"role": "assistant", "content": text})
    cost = _field(returned, "cost_usd")
    costs = [c for c in (cost, ctx.cost_usd) if c is not None]
    return Trajectory(
        text=None if error else text,
        messages=tuple(messages),
        tool_calls=tuple(calls),
        usage=ctx.usage + _usage(_field(returned, "usage")),
        cost_usd=float(sum(costs)) if costs else None,
        latency_s=latency_s,
        error=None if error is None else f"the agent reported an error: {error}",
        sample_index=index,
        span=ctx.span,
    )


# ----- error classification shared by both adapters -----------------------------------------


def _status(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        for attr in ("status_code", "status"):
            value = getattr(holder, attr, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
    return None


def _classify_agent_error(exc: BaseException, transient: tuple[type[BaseException], ...],
                          fatal: tuple[type[BaseException], ...]) -> ErrorKind | None:
    """RATE_LIMITED / TRANSIENT: retry; FATAL: stop the run; ``None``: fail this sample only."""
    if fatal and isinstance(exc, fatal):
        return ErrorKind.FATAL
    status = _status(exc)
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status is not None and (status in (408, 409, 425) or status >= 500):
        return ErrorKind.TRANSIENT
    if status in (401, 403):
        return ErrorKind.FATAL
    if isinstance(exc, transient) or any(_TRANSIENT_NAMES.search(k.__name__) for k in type(exc).__mro__):
        return ErrorKind.RATE_LIMITED if "ratelimit" in type(exc).__name__.lower() else ErrorKind.TRANSIENT
    return None


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" (at {Path(last.filename).name}:{last.lineno} in {last.name})"
