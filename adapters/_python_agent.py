"""Python agents as targets (``python:package.module:attr`` or ``python:path/to/file.py:attr``).

The contract (how an agent is loaded, which arguments it gets, what it may return, which errors
fail one sample and which are retried) is in :mod:`frontier_qa.adapters.workflow`'s docstring.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import inspect
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from frontier_qa._optional import exec_file_module, import_module_ref
from frontier_qa.adapters._agents import (
    AgentContext,
    InProcessAgent,
    T,
    _field,
)
from frontier_qa.errors import ConfigError
from frontier_qa.target import Case

# ----- Python agents ------------------------------------------------------------------------


class PythonAgentAdapter(InProcessAgent):
    """A Python callable or object as a target (the contract is in :mod:`frontier_qa.adapters.workflow`).

    Args:
        agent: a function (sync or async) or an object with ``arun``/``run``/``__call__``.
        id: the target id (default ``python:<module>.<name>``); part of every cache key.
        version: the agent's declared version. Default: the agent's ``version`` or
            ``__version__`` attribute, if any. The reported version adds a hash of the
            agent's source (:mod:`frontier_qa.adapters._agent_source`): ``2+src.3f2a9c1b``,
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
        from frontier_qa.adapters._agent_source import agent_version

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

    async def invoke(self, case: Case, ctx: AgentContext) -> Any:
        values = {"case": case, "ctx": ctx, "context": ctx, "sample_index": ctx.sample_index, "seed": ctx.seed,
                  "sampling": ctx.sampling, "messages": case.messages, "prompt": case.prompt}
        args = [values[value] for how, _, value in self._plan if how == "pos"]
        kwargs = {name: values[value] for how, name, value in self._plan if how == "kw"}
        if not self._is_async:
            result = await in_daemon_thread(self.call, *args, **kwargs)
            return await result if inspect.isawaitable(result) else result
        try:
            return await self.call(*args, **kwargs)
        except SystemExit as exc:
            raise AgentExitError(exc) from None


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
            raise ConfigError(f"agent file {path} does not exist",
                              hint="check the path in the spec (a relative one starts at the current folder, "
                              "or at the config file's when the spec is in one)")
        from frontier_qa.adapters._agent_source import sibling_modules

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
            try:
                module = exec_file_module(name, path)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of the user's file
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
            module = import_module_ref(module_ref, "agent")
        except ConfigError:
            raise
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
    from frontier_qa.adapters._agent_source import sibling_modules

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
    (:mod:`frontier_qa.adapters._agent_source`), so an edited agent or helper never reuses cached
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
