"""Multi-step agent workflows as targets: Python agents and agents behind an HTTP endpoint.

An agent may run many model and tool steps per case; frontier-qa only needs its final
answer, and records its tool calls, steps, messages, usage and cost in the trajectory.

**Python agents** (``python:package.module:attr`` or ``python:path/to/file.py:attr``).
An agent file is imported as ``python path/to/file.py`` runs it: its folder goes first on
``sys.path`` (and stays, for imports at call time), so ``import helpers`` finds ``helpers.py``
beside it. ``attr`` is a sync or async function, an object with an ``arun``/``run``/``__call__``
method (looked up in that order), or a class (instantiated with ``agent_kwargs``).
Arguments are chosen by parameter name:

==================  ===========================================================
``case``            the :class:`~frontier_qa.target.Case`
``ctx``/``context``  the :class:`AgentContext` (records tool calls, steps, usage)
``sample_index``    the sample's index for its case (0-based)
``seed``            ``sampling.seed_for(case, sample_index)`` (``None`` without a seed)
``sampling``        the :class:`~frontier_qa.target.Sampling`
``messages``        ``case.messages`` (system prompt, task, history)
any other           the first other parameter gets the task text (``case.prompt``)
==================  ===========================================================

It returns the answer text, or a mapping/object with ``answer`` (or ``output``,
``final_answer``, ``text``) and optionally ``tool_calls`` (``ToolCall`` or
``{"name", "arguments", "result", "error"}``), ``messages``, ``usage``
(``{"prompt_tokens", "completion_tokens"}``), ``cost_usd``, ``steps`` (a count or a list)
and ``error`` (the agent gave up on this case). Plain agents can instead record as they go:
``current_context().tool_call(...)``, ``ctx.step(...)``, or wrap tools with
:func:`record_tool`. Sync agents run in a daemon thread of their own, so they never block
the event loop, and a hung one never keeps the process from exiting (a thread cannot be
stopped: when a timeout fires or the run is interrupted, it is abandoned).

*Errors.* An exception from the agent fails **that sample only** (``Trajectory.error``
records it) — a ``ValueError`` on one case must not end a run of hundreds. So does a
``SystemExit`` (``sys.exit(3)`` in agent code), and a ``KeyboardInterrupt`` a sync agent raises:
neither ends the probe. Exceptions that
retrying can fix are raised to the runtime instead, which retries them: the ``transient``
types (default ``TimeoutError``, ``ConnectionError``), exceptions whose class name says
timeout / connection / rate limit (``httpx.ConnectTimeout``, ``openai.RateLimitError``...)
and those carrying an HTTP status 429, 408 or 5xx. Exceptions that will fail every case —
the ``fatal`` types, and HTTP 401/403 (a bad API key inside the agent) — stop the run.

**HTTP agents** (``http://host:port/path``, ``https://…``), for agents in any language.
frontier-qa POSTs one JSON object per sample::

    {"case_id": str, "prompt": str, "system": str | null, "messages": [{"role", "content"}],
     "topic": str, "answer_format": str, "tools": [...], "sample_index": int, "n": 1,
     "seed": int | null, "sampling": {"temperature", "top_p", "max_tokens", "stop", "seed"},
     "metadata": {...}}

and expects ``200`` with ``{"answer": str, "tool_calls": [...], "messages": [...],
"usage": {...}, "cost_usd": float, "steps": ..., "error": str | null}`` (only ``answer``
is required; ``"error"`` marks this sample failed). With ``batch=True`` one request asks for
``n`` samples starting at ``sample_index`` and the reply is ``{"samples": [<reply>, ...]}``.
Status 429 (``Retry-After`` honoured) is rate limited; 408, 409, 425, 5xx, timeouts,
dropped connections and malformed JSON are retried; other 4xx stop the run. Header values
may be written ``${ENV_VAR}``; they never appear in errors, reprs or the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import re
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from frontier_qa.errors import ConfigError, TargetError
from frontier_qa.runtime.aio import gather_or_cancel
from frontier_qa.runtime.env import UnsetVariableError, expand_env
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

    def tool_call(self, name: str, arguments: Any, result: Any = None, error: str | None = None) -> ToolCall:
        """Record one executed tool call (arguments/result that are not text become JSON)."""
        call = ToolCall(name, _text(arguments), None if result is None else _text(result), error)
        self.tool_calls.append(call)
        self.events.append({"role": "tool", "name": name, "arguments": call.arguments,
                            "content": call.result or call.error})
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


def to_trajectory(result: Any, ctx: AgentContext, latency_s: float) -> Trajectory:
    """Build the trajectory from an agent's return value and what it recorded in ``ctx``.

    Raises:
        TypeError: the return value does not follow the contract (module docstring).
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


# ----- Python agents ------------------------------------------------------------------------


class PythonAgentAdapter(Adapter):
    """A Python callable or object as a target (see the module docstring for the contract).

    Args:
        agent: a function (sync or async) or an object with ``arun``/``run``/``__call__``.
        id: the target id (default ``python:<module>.<name>``); part of every cache key.
        version: the agent's declared version. Default: the agent's ``version`` or
            ``__version__`` attribute, if any. The reported version adds a hash of the
            agent's source (:mod:`frontier_qa.adapters.agent_source`): ``2+src.3f2a9c1b``,
            so an edited agent never reuses cached answers, bumped or not.
        transient: exception types retried by the runtime (others fail only their sample).
        fatal: exception types that stop the run.
        max_n: samples per ``generate`` call (default 1: each sample is retried alone).
        module: the module whose source is hashed (default: the agent's own module).
        agent_kwargs: the arguments a class agent was made with (part of the hash).
    """

    supports_prefill = False
    in_process = True  # the agent runs in this interpreter: Limits.local_timeout_s applies

    def __init__(
        self,
        agent: Any,
        *,
        id: str | None = None,  # noqa: A002 - matches Adapter.id
        version: str | None = None,
        transient: Sequence[type[BaseException]] = (TimeoutError, ConnectionError),
        fatal: Sequence[type[BaseException]] = (),
        max_n: int = 1,
        module: Any = None,
        agent_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        from frontier_qa.adapters.agent_source import agent_version

        self.agent = agent
        self.call = _entry_point(agent)
        found = _field(agent, "version", "__version__")
        declared = version or (found if isinstance(found, (str, int)) else None)
        if module is None:
            module = sys.modules.get(getattr(agent, "__module__", None) or type(agent).__module__)
        declared_text = None if declared is None else str(declared)
        self._version = declared_text if module is None else agent_version(module, declared_text, agent_kwargs)
        name = getattr(agent, "__qualname__", type(agent).__qualname__)
        # the id names the agent; its version (declared + source hash) is kept apart, so that
        # an edit changes the cache keys and records but not which cases are the agent's
        self.id = id or f"python:{getattr(agent, '__module__', '?')}.{name}"
        self.transient = tuple(transient)
        self.fatal = tuple(fatal)
        self.max_n = max(1, int(max_n))
        self._plan = _argument_plan(self.call)
        self._is_async = inspect.iscoroutinefunction(self.call) or (
            not inspect.isroutine(self.call) and inspect.iscoroutinefunction(type(self.call).__call__))

    def __repr__(self) -> str:
        return f"PythonAgentAdapter({self.id!r})"

    def version(self) -> str | None:
        return None if self._version is None else str(self._version)

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        """Run the agent once per sample index (concurrently when ``n > 1``)."""
        if n == 1:
            return [await self._one(case, sampling, start)]
        return await gather_or_cancel([self._one(case, sampling, i) for i in range(start, start + n)])

    def classify(self, exc: BaseException) -> ErrorClass:
        message = f"{type(exc).__name__}: {exc}"
        kind = _classify_agent_error(exc, self.transient, self.fatal)
        return ErrorClass(kind or ErrorKind.FATAL, message)

    async def _one(self, case: Case, sampling: Sampling, index: int) -> Trajectory:
        ctx = AgentContext(case, index, sampling)
        values = {"case": case, "ctx": ctx, "context": ctx, "sample_index": index, "seed": ctx.seed,
                  "sampling": sampling, "messages": case.messages, "prompt": case.prompt}
        args = [values[value] for how, _, value in self._plan if how == "pos"]
        kwargs = {name: values[value] for how, name, value in self._plan if how == "kw"}
        token = _CONTEXT.set(ctx)  # to_thread copies the context, so sync tools see it too
        started = time.monotonic()
        try:
            if self._is_async:
                try:
                    result = await self.call(*args, **kwargs)
                except SystemExit as exc:
                    raise AgentExitError(exc) from None
            else:
                result = await in_daemon_thread(self.call, *args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
        except Exception as exc:  # noqa: BLE001 - classified below
            if _classify_agent_error(exc, self.transient, self.fatal) is not None:
                raise  # the runtime retries it (or stops the run for fatal ones)
            return Trajectory(text=None, messages=(*case.messages, *ctx.events), tool_calls=tuple(ctx.tool_calls),
                              usage=ctx.usage, cost_usd=ctx.cost_usd, latency_s=time.monotonic() - started,
                              error=f"the agent raised {type(exc).__name__}: {exc}{_where(exc)}", sample_index=index)
        finally:
            _CONTEXT.reset(token)
        try:
            return to_trajectory(result, ctx, time.monotonic() - started)
        except (TypeError, ValueError) as exc:
            raise TargetError(f"agent {self.id!r} broke the return contract: {exc}",
                              hint="return the answer text, or a dict with 'answer' (and optionally "
                              "'tool_calls', 'messages', 'usage', 'cost_usd', 'steps')") from exc


class AgentExitError(Exception):
    """The agent raised ``SystemExit`` or ``KeyboardInterrupt``: that sample fails, the probe goes on."""

    def __init__(self, exc: BaseException) -> None:
        code = f"({exc.code!r})" if isinstance(exc, SystemExit) and exc.code is not None else "()"
        super().__init__(f"{type(exc).__name__}{code}")
        self.__traceback__ = exc.__traceback__


async def in_daemon_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a daemon thread of its own, with the caller's context.

    Unlike ``asyncio.to_thread`` (whose pool threads are joined at interpreter exit), a call
    that never returns is abandoned when the caller is cancelled and never holds up exit.
    ``SystemExit`` / ``KeyboardInterrupt`` raised by ``fn`` come back as :class:`AgentExitError`.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, failed: bool) -> None:
        if not future.done():
            future.set_exception(value) if failed else future.set_result(value)

    def work() -> None:
        value: object  # the function's result, or the exception it raised
        try:
            value, failed = context.run(fn, *args, **kwargs), False
        except (SystemExit, KeyboardInterrupt) as exc:
            value, failed = AgentExitError(exc), True
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            value, failed = exc, True
        try:
            loop.call_soon_threadsafe(settle, value, failed)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for this call any more

    threading.Thread(target=work, name="frontier-qa-agent", daemon=True).start()
    return await future


def _entry_point(agent: Any) -> Callable[..., Any]:
    if inspect.isclass(agent):
        raise ConfigError(f"{agent.__name__} is a class, not an agent",
                          hint="pass an instance, or open it with create_python('module:Class', agent_kwargs=...)")
    for method in ("arun", "run"):
        bound = getattr(agent, method, None)
        if callable(bound):
            return bound
    if callable(agent):
        return agent
    raise ConfigError(f"{agent!r} is not an agent", hint="pass a function or an object with arun/run/__call__")


def _argument_plan(call: Callable[..., Any]) -> list[tuple[str, str, str]]:
    """How to call the agent: ``(how, parameter, value)`` with ``how`` ``"pos"`` or ``"kw"``."""
    try:
        params = list(inspect.signature(call).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: give it the task
        return [("pos", "prompt", "prompt")]
    known = {"case", "ctx", "context", "sample_index", "seed", "sampling", "messages"}
    plan: list[tuple[str, str, str]] = []
    prompt_given = False
    for param in params:
        if param.kind is param.VAR_KEYWORD:
            continue
        positional_only = param.kind in (param.POSITIONAL_ONLY, param.VAR_POSITIONAL)
        if param.name in known and param.kind is not param.VAR_POSITIONAL:
            plan.append(("pos" if positional_only else "kw", param.name, param.name))
        elif not prompt_given and param.kind is not param.KEYWORD_ONLY:
            plan.append(("pos" if positional_only else "kw", param.name, "prompt"))
            prompt_given = True
        elif param.default is param.empty and param.kind is not param.VAR_POSITIONAL:
            raise ConfigError(f"agent parameter {param.name!r} has no value frontier-qa can give",
                              hint=f"name it one of {sorted(known)}, make it the task parameter, or give it a default")
    return plan


def _load(target: str) -> tuple[Any, Any]:
    module_ref, sep, attr = target.rpartition(":")
    if not sep or not module_ref or not attr:
        raise ConfigError(f"python target {target!r} is not MODULE:ATTR",
                          hint="write python:package.module:attr or python:path/to/agent.py:attr")
    if module_ref.endswith(".py") or "/" in module_ref:
        path = Path(module_ref).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"agent file {path} does not exist", hint="check the path in the python: spec")
        from frontier_qa.adapters.agent_source import sibling_modules

        siblings = sibling_modules(path)
        # the module is named by the sources too: an agent or a helper edited since this process loaded
        # it runs as it is now (its version, a hash of the same files, already says it changed)
        files = [path, *(f for p in siblings.values() for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p]))]
        stamp = hashlib.sha256(b"\0".join(f.read_bytes() for f in files if f.is_file()))
        name = f"frontier_qa_agent_{path.stem}_{abs(hash(str(path))):x}_{stamp.hexdigest()[:12]}"
        added = _put_folder_on_path(path.parent)  # every time: the agent may import lazily, at call time
        module = sys.modules.get(name)
        if module is None:
            for loaded in [m for m in sys.modules if m.split(".")[0] in siblings]:
                del sys.modules[loaded]  # imported again, from their files as they are now
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # dataclasses and pickling look modules up by name
            try:
                spec.loader.exec_module(module)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of the user's file
                del sys.modules[name]
                if added:
                    sys.path.remove(str(path.parent))
                raise _import_failed(path, exc) from None
            try:
                _check_siblings(path)
            except ConfigError:
                del sys.modules[name]
                raise
            _AGENT_FOLDERS.add(path.parent)
    else:
        try:
            module = importlib.import_module(module_ref)
        except ImportError as exc:
            raise ConfigError(f"cannot import agent module {module_ref!r}: {exc}",
                              hint="install the package or run from the folder that contains it") from exc
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the module itself failed
            raise _import_failed(Path(module_ref), exc) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{module_ref!r} has no attribute {attr!r}", hint="check the name after the last ':'")
        obj = getattr(obj, part)
    return module, obj


_AGENT_FOLDERS: set[Path] = set()
"""The folders of the agent files loaded in this process (each put on ``sys.path`` by :func:`_load`)."""


def _put_folder_on_path(folder: Path) -> bool:
    """Put an agent file's folder first on ``sys.path``, as ``python agent.py`` does, unless it is
    there already (as ``''``, relative or absolute); whether it was added.

    It stays there after the import: an agent may import a sibling module lazily, inside the
    function that answers a case.
    """
    cwd = Path.cwd()
    if any((cwd / entry).resolve() == folder for entry in sys.path if isinstance(entry, str)):
        return False
    sys.path.insert(0, str(folder))
    return True


def _check_siblings(path: Path) -> None:
    """Refuse an agent whose sibling module (``import helpers``) was imported earlier in this
    process from another agent's folder: Python keeps one module per name, so this agent would
    silently run the other one's code (``python FILE`` runs each agent alone and never mixes them).
    """
    from frontier_qa.adapters.agent_source import sibling_modules

    for name, own in sibling_modules(path).items():
        file = getattr(sys.modules.get(name), "__file__", None)
        if not file:
            continue
        found = Path(file).resolve()
        folder = found.parent.parent if found.name == "__init__.py" else found.parent  # where it was found
        if folder != path.parent and folder in _AGENT_FOLDERS:
            raise ConfigError(
                f"agent file {path} imports {name!r} ({own}), but this process already imported {name!r} "
                f"from {found}, beside another agent: Python keeps one module per name, so this agent would "
                "run the other one's code",
                hint=f"give one of the two modules another name, or make {path.parent.name}/ a package "
                "(an __init__.py) and import it by its package name")


def _import_failed(path: Path, exc: BaseException) -> ConfigError:
    """A usage error for an agent file that fails to import, at the file and line that failed."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename or path}:{exc.lineno or '?'}"
        return ConfigError(f"agent file {where}: SyntaxError: {exc.msg}",
                           hint="fix the syntax error (python -m py_compile FILE shows it too)")
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if Path(f.filename).resolve() == path.resolve()] or frames[-1:]
    where = f"{own[-1].filename}:{own[-1].lineno}" if own else str(path)
    message = f"agent file {path} failed while importing, at {where}: {type(exc).__name__}: {exc}"
    # frontier-qa imports the file as `python FILE` runs it (its folder first on sys.path), with
    # this interpreter: the same command shows the whole traceback
    run = f"`{sys.executable} {path}` shows the whole traceback"
    top = str(getattr(exc, "name", None) or "").split(".")[0] if isinstance(exc, ModuleNotFoundError) else ""
    if top and not any((path.parent / name).exists() for name in (f"{top}.py", top)):
        return ConfigError(message, hint=f"{top!r} is neither a module beside the agent ({path.parent / top}.py) "
                           f"nor installed for {sys.executable}: install it there, or put {top}.py beside "
                           f"{path.name}; {run}")
    return ConfigError(message, hint=f"{run}; an agent file must import without side effects that fail "
                       "(no missing packages, files or variables)")


def create_python(rest: str, *, agent_kwargs: Mapping[str, Any] | None = None, **options: Any) -> PythonAgentAdapter:
    """Factory for ``python:MODULE:ATTR`` specs; ``options`` go to :class:`PythonAgentAdapter`.

    A class is instantiated with ``agent_kwargs``; the adapter id defaults to ``python:rest``.
    An agent file's folder goes first on ``sys.path`` (unless it is on it already), as ``python
    FILE`` puts it, and stays for imports at call time. The version is the declared one (the
    option, else the agent's or its module's ``version`` / ``__version__``) plus a hash of the
    agent's source, the modules beside it that it imports, and ``agent_kwargs``
    (:mod:`frontier_qa.adapters.agent_source`), so an edited agent or helper never reuses cached
    answers.

    Raises:
        ConfigError: the spec is malformed, the file or attribute is missing, the file fails to
            import (the message names the file and line), or a module it imports beside it is
            another agent's module of the same name, imported earlier in this process.
    """
    module, agent = _load(rest)
    module_version = _field(module, "version", "__version__")
    if "version" not in options and isinstance(module_version, (str, int)) and not isinstance(
            _field(agent, "version", "__version__"), (str, int)):
        options["version"] = str(module_version)  # a module-level `version` marks the agent's behaviour
    options.setdefault("module", module)
    options.setdefault("agent_kwargs", dict(agent_kwargs or {}))
    if inspect.isclass(agent):
        agent = agent(**dict(agent_kwargs or {}))
    elif agent_kwargs:
        raise ConfigError(f"agent_kwargs were given but {rest!r} is not a class",
                          hint="drop agent_kwargs, or point the spec at the agent class")
    known = {"id", "version", "transient", "fatal", "max_n", "module", "agent_kwargs"}
    unknown = set(options) - known
    if unknown:
        raise ConfigError(f"unknown option(s) for a python agent: {sorted(unknown)}",
                          hint=f"known: {sorted(known - {'module'})}")
    options.setdefault("id", f"python:{rest}")
    return PythonAgentAdapter(agent, **options)


# ----- HTTP agents --------------------------------------------------------------------------


class AgentHTTPError(Exception):
    """An HTTP agent answered with an error status (message already free of header secrets)."""

    def __init__(self, message: str, status: int, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status_code = status
        self.retry_after = retry_after


class MalformedReplyError(Exception):
    """An HTTP agent answered 200 with a body that is not the JSON contract."""


def _expand(value: str, header: str) -> str:
    try:
        return expand_env(value)
    except UnsetVariableError as err:
        raise ConfigError(f"header {header!r} {err.message}", hint=err.hint) from None


class HttpAgentAdapter(Adapter):
    """An agent behind an HTTP JSON endpoint (contract in the module docstring).

    Args:
        url: the endpoint that receives the POST.
        headers: extra request headers (auth); values may be ``${ENV_VAR}``. Never logged.
        timeout_s: seconds for one request (connect + read).
        batch: ask for all ``n`` samples in one request and read ``{"samples": [...]}``.
        max_n: samples per request when ``batch`` (default 16; 1 otherwise).
        id: the target id (default ``http:<url>``); part of every cache key.
        version: the agent's version (``target.version`` in a config): part of every cache
            key and record, so answers of another version are never replayed from the cache.
    """

    supports_prefill = False

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 300.0,
        batch: bool = False,
        max_n: int | None = None,
        id: str | None = None,  # noqa: A002 - matches Adapter.id
        version: str | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"agent URL {url!r} must start with http:// or https://")
        self.url = url
        self.headers = {str(k): _expand(str(v), str(k)) for k, v in (headers or {}).items()}
        self.secrets = tuple(v for v in self.headers.values() if len(v) >= 4)
        self.timeout_s = float(timeout_s)
        self.batch = bool(batch)
        self.max_n = int(max_n or (16 if batch else 1)) if batch else 1
        self._version = version
        shown = re.sub(r"//[^/@]*@", "//", url)  # never put user:password@ into ids
        self.id = id or f"http:{shown}"
        # one httpx.AsyncClient per event loop: a client's connections belong to the loop that made them
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        shown = {k: "***" for k in self.headers}
        return f"HttpAgentAdapter({self.id!r}, headers={shown}, timeout_s={self.timeout_s}, batch={self.batch})"

    def version(self) -> str | None:
        return self._version

    def _client(self) -> Any:
        import httpx

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(timeout=self.timeout_s, headers=self.headers, follow_redirects=False)
            self._clients[loop] = client
        return client

    def request_body(self, case: Case, sampling: Sampling, index: int, n: int) -> dict[str, Any]:
        """The JSON object POSTed for samples ``index..index+n-1`` (the documented contract)."""
        return {
            "case_id": case.id,
            "prompt": case.prompt,
            "system": case.system,
            "messages": case.messages,
            "topic": case.topic,
            "answer_format": case.answer_format,
            "tools": list(case.tools),
            "sample_index": index,
            "n": n,
            "seed": sampling.seed_for(case, index),
            "sampling": sampling.as_dict(),
            "metadata": dict(case.metadata),
        }

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        """One request per sample (concurrently), or one for all ``n`` with ``batch``."""
        if self.batch:
            return await self._post(case, sampling, start, n)
        parts = await gather_or_cancel([self._post(case, sampling, i, 1) for i in range(start, start + n)])
        return [t for part in parts for t in part]

    async def _post(self, case: Case, sampling: Sampling, index: int, n: int) -> list[Trajectory]:
        from frontier_qa.redaction import redact
        from frontier_qa.runtime.retry import parse_retry_after

        started = time.monotonic()
        response = await self._client().post(self.url, json=self.request_body(case, sampling, index, n))
        latency = time.monotonic() - started
        if response.status_code != 200:
            body = redact(response.text[:300], self.secrets)
            retry_after = parse_retry_after(response.headers) if response.status_code == 429 else None
            status = response.status_code
            raise AgentHTTPError(f"HTTP {status} from {self.id}: {body}", status, retry_after)
        try:
            reply = response.json()
        except ValueError as exc:
            raise MalformedReplyError(f"{self.id} answered with invalid JSON: {response.text[:200]!r}") from exc
        replies = reply.get("samples") if self.batch and isinstance(reply, Mapping) else [reply]
        if not isinstance(replies, list) or not replies or not all(isinstance(r, Mapping) for r in replies):
            raise MalformedReplyError(f"{self.id} answered {str(reply)[:200]!r}, not the agent JSON contract")
        out = []
        for j, item in enumerate(replies[:n]):
            ctx = AgentContext(case, index + j, sampling)
            try:
                out.append(to_trajectory(item, ctx, latency))
            except (TypeError, ValueError) as exc:
                raise MalformedReplyError(f"{self.id} sample {index + j}: {exc}") from exc
        return out

    def classify(self, exc: BaseException) -> ErrorClass:
        from frontier_qa.redaction import redact
        from frontier_qa.runtime.retry import classify_status

        message = redact(f"{type(exc).__name__}: {exc}", self.secrets)
        if isinstance(exc, AgentHTTPError):
            kind = classify_status(exc.status_code) or ErrorKind.FATAL
            return ErrorClass(kind, message, exc.retry_after)
        if isinstance(exc, MalformedReplyError):
            return ErrorClass(ErrorKind.TRANSIENT, message)
        import httpx

        if isinstance(exc, (httpx.TimeoutException, httpx.TransportError, TimeoutError, ConnectionError)):
            return ErrorClass(ErrorKind.TRANSIENT, message)
        return ErrorClass(ErrorKind.FATAL, message)

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None and not client.is_closed:
            await client.aclose()


def create_http(url: str, **options: Any) -> HttpAgentAdapter:
    """Factory for ``http://…`` / ``https://…`` specs; ``options`` go to :class:`HttpAgentAdapter`."""
    try:
        return HttpAgentAdapter(url, **options)
    except TypeError as exc:
        raise ConfigError(f"bad option for an HTTP agent: {exc}",
                          hint="known: headers, timeout_s, batch, max_n, id, version") from exc


__all__ = [
    "AgentContext",
    "AgentHTTPError",
    "HttpAgentAdapter",
    "MalformedReplyError",
    "PythonAgentAdapter",
    "create_http",
    "create_python",
    "current_context",
    "record_tool",
    "to_trajectory",
]
