"""Task generators: a Hypothesis strategy for agents, with knobs that set how hard a task is.

A generator is a small function ``(rng, **knobs) -> Task``: it draws one task instance from a
seeded :class:`random.Random` at the knob values it is given and returns the prompt with a
*computed* reference (the generator is the solution program, so the reference is verified by
construction), or a ``check`` function for answers that are not one value. It declares its
knobs: **ordinal** ones (a range such as digits 1-8, with the end that is easy) and
**categorical** ones (choices such as the operation). The boundary search
(:mod:`frontier_qa.generators._search`) walks each ordinal knob from its easy end to find where
the agent's P(correct) falls through 0.8 and 0.3::

    from frontier_qa.generators import Task, generator, ordinal, categorical

    @generator(knobs=[ordinal("digits", 1, 8, easy="low"), categorical("op", ["+", "*"])])
    def arithmetic(rng, digits, op):
        a, b = (rng.randrange(10 ** (digits - 1), 10 ** digits) for _ in range(2))
        return Task(f"What is {a} {op} {b}?", reference=str(a + b if op == "+" else a * b))

A generator whose tasks are done with tools can say what every sample's trajectory must do:
``Task(..., expect={"tools_used": ["calculator"]})`` per instance (it may depend on the knobs), or
``@generator(..., expect=...)`` for every instance that gives none; a check file named by a
relative path is found next to the generator's own file.

Values only: nothing here imports an I/O or ML library; a generator is checked when it is
registered (knobs) and every time it runs (what it returns), and every error names it.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from typing import Any, Literal

from frontier_qa._expectations import anchored, expectations_from
from frontier_qa.errors import ConfigError
from frontier_qa.target import Case, Expectations

GENERATOR_KEY = "generator"
"""Case metadata: ``{"name", "knobs", "seed"}`` of the generator instance a case is (replays rebuild it)."""

Check = Callable[[str], bool]
"""Says whether one extracted answer is correct (for answers that are not a single value)."""


class GeneratorError(ConfigError):
    """A generator is declared wrong or returned something unusable; the message names it."""


@dataclass(frozen=True)
class Knob:
    """One dimension a generator's tasks vary along.

    Attributes:
        name: the keyword the generator function takes.
        values: the values, in order; for an ordinal knob from easy to hard once ``easy`` is
            applied (see :attr:`levels`).
        kind: ``"ordinal"`` (ordered: the boundary search walks it) or ``"categorical"``
            (choices: the search runs once per choice).
        easy: for an ordinal knob, the end where tasks are easy: ``"low"`` (the first value)
            or ``"high"``; ``None`` for a categorical knob.
    """

    name: str
    values: tuple[Any, ...]
    kind: Literal["ordinal", "categorical"] = "ordinal"
    easy: Literal["low", "high"] | None = None

    @property
    def levels(self) -> tuple[Any, ...]:
        """The values from easy to hard (categorical: as declared; the first is the simplest)."""
        return tuple(reversed(self.values)) if self.easy == "high" else self.values

    @property
    def easiest(self) -> Any:
        return self.levels[0]


def ordinal(name: str, low: int, high: int, *, easy: Literal["low", "high"] | None = None,
            step: int = 1, values: Sequence[Any] | None = None) -> Knob:
    """An ordered knob: ``low..high`` by ``step`` (or the given ``values`` in order).

    Args:
        name: the keyword the generator function takes.
        low: the first value (integers).
        high: the last value, included.
        easy: which end is easy; required (a boundary has a direction).
        step: the step between values.
        values: the values themselves, in order, instead of ``low..high`` (e.g. ``[1, 7, 30, 365]``).
    """
    vals = tuple(values) if values is not None else tuple(range(low, high + 1, step))
    return Knob(name, vals, "ordinal", easy)


def categorical(name: str, choices: Sequence[Any]) -> Knob:
    """A knob of unordered choices; the first choice is the simplest (shrinking goes to it)."""
    return Knob(name, tuple(choices), "categorical", None)


@dataclass(frozen=True)
class Task:
    """What a generator returns: one task instance.

    Attributes:
        prompt: the task as the agent sees it.
        reference: the computed answer (one value); give it, or ``check``, or both.
        check: ``answer -> bool`` for answers that are not one value (any of several dates, a
            set in any order); with a reference too, the reference is what reports show.
        answer_format: how to read the agent's answer (``auto`` reads a box, an answer line,
            JSON or a short reply).
        system: optional system prompt.
        metadata: anything else to keep with the case (JSON-serialisable).
        expect: what every sample's trajectory must do (:class:`~frontier_qa.target.Expectations`
            or its mapping, ``{"tools_used": ["calculator"], "max_steps": 4}``); ``None``: the
            generator's ``expect``, if it gave one.
    """

    prompt: str
    reference: str | None = None
    check: Check | None = None
    answer_format: str = "auto"
    system: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    expect: Expectations | Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Generator:
    """A registered task generator (see the module docstring).

    Attributes:
        name: unique name (``arithmetic``); the topic of its cases.
        fn: ``(rng, **knobs) -> Task``.
        knobs: its knobs, by name.
        description: one line for reports.
        shrink: optional ``(rng, task_knobs) -> Task`` drawing the *simplest* instance at
            those knob values (smallest operands, no carries...); shrinking uses it for the
            minimal failing case when given.
        expect: the trajectory expectations of every instance whose task gives none.
    """

    name: str
    fn: Callable[..., Task]
    knobs: tuple[Knob, ...]
    description: str = ""
    shrink: Callable[..., Task] | None = None
    expect: Expectations | None = None

    def knob(self, name: str) -> Knob:
        for knob in self.knobs:
            if knob.name == name:
                return knob
        raise GeneratorError(f"generator {self.name!r} has no knob {name!r}",
                             hint=f"its knobs: {', '.join(k.name for k in self.knobs)}")

    @property
    def ordinal(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if k.kind == "ordinal")

    @property
    def categorical(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if k.kind == "categorical")

    def easy_knobs(self) -> dict[str, Any]:
        """Every knob at its easy end (categorical: the first choice)."""
        return {k.name: k.easiest for k in self.knobs}

    def contexts(self) -> Iterator[dict[str, Any]]:
        """Every combination of categorical values (one boundary search each); ``{}`` when none."""
        cats = self.categorical
        for combo in product(*(k.values for k in cats)):
            yield dict(zip((k.name for k in cats), combo, strict=True))

    def check_knobs(self, knobs: Mapping[str, Any]) -> dict[str, Any]:
        """``knobs`` completed with easy values, each checked against its declared values."""
        unknown = sorted(set(knobs) - {k.name for k in self.knobs})
        if unknown:
            raise GeneratorError(f"generator {self.name!r} has no knob {', '.join(map(repr, unknown))}",
                                 hint=f"its knobs: {', '.join(k.name for k in self.knobs)}")
        out = self.easy_knobs()
        for name, value in knobs.items():
            knob = self.knob(name)
            if value not in knob.values:
                shown = _span(knob)
                raise GeneratorError(f"generator {self.name!r}: knob {name!r} = {value!r} is out of range ({shown})",
                                     hint=f"give {name} one of {shown}")
            out[name] = value
        return out

    def task(self, seed: int, knobs: Mapping[str, Any], *, simplest: bool = False) -> Task:
        """The instance of ``seed`` at ``knobs`` (the same seed and knobs give the same task).

        Raises:
            GeneratorError: the generator raised, or returned no task, no prompt, or neither a
                reference nor a check; the message names the generator and the knobs.
        """
        values = self.check_knobs(knobs)
        fn = self.shrink if simplest and self.shrink is not None else self.fn
        where = f"generator {self.name!r} at {_shown(values)} (seed {seed})"
        try:
            task = fn(random.Random(seed), **values)
        except Exception as err:  # the user's code: its error, named, never a bare traceback
            raise GeneratorError(f"{where} raised {type(err).__name__}: {err}",
                                 hint="fix the generator function (run it by hand with these knobs)") from err
        if isinstance(task, str):
            raise GeneratorError(f"{where} returned a string, not a Task with a reference",
                                 hint="return Task(prompt, reference=...) so the answer can be checked")
        if not isinstance(task, Task):
            raise GeneratorError(f"{where} returned {type(task).__name__}, not a Task",
                                 hint="return frontier_qa.generators.Task(prompt, reference=...)")
        if not task.prompt or not task.prompt.strip():
            raise GeneratorError(f"{where} returned an empty prompt", hint="give the Task a prompt")
        if task.reference is None and task.check is None:
            raise GeneratorError(f"{where} returned no reference and no check",
                                 hint="compute the answer: Task(prompt, reference=str(answer)) or check=fn")
        if task.reference is not None and not isinstance(task.reference, str):
            raise GeneratorError(f"{where}: the reference must be a string, not {type(task.reference).__name__}",
                                 hint="return reference=str(answer)")
        try:
            expect = expectations_from(task.expect, where)
        except ConfigError as err:
            raise GeneratorError(err.message, hint=err.hint, key=err.key) from None
        return task if expect is task.expect else replace(task, expect=expect)

    def case(self, seed: int, knobs: Mapping[str, Any], *, simplest: bool = False) -> Case:
        """The instance as a :class:`~frontier_qa.target.Case` with a verified reference.

        The id says what it is (``arithmetic-digits4-op_mul-s1234-<hash>``) and is the same for
        the same generator, knobs and seed, so the per-sample cache and resume recognise it.
        """
        values = self.check_knobs(knobs)
        task = self.task(seed, values, simplest=simplest)
        meta = dict(task.metadata)
        meta[GENERATOR_KEY] = {"name": self.name, "knobs": _plain(values), "seed": seed,
                               **({"simplest": True} if simplest else {})}
        digest = hashlib.sha256(f"{self.name}|{sorted(_plain(values).items())}|{seed}|{simplest}|{task.prompt}"
                                .encode()).hexdigest()[:8]
        slug = "-".join(f"{k}{_slug(v)}" for k, v in values.items())
        case = Case(
            id=f"{self.name}-{slug}-s{seed}-{digest}",
            prompt=task.prompt,
            system=task.system,
            topic=self.name,
            answer_format=task.answer_format,
            reference=task.reference,
            reference_verified=task.reference is not None,
            metadata=meta,
            expect=task.expect if isinstance(task.expect, Expectations) else self.expect,  # task() read a mapping
        )
        return case if case.expect is None else anchored(case, _folder_of(self.fn))

    def checks(self, case: Case) -> Check | None:
        """The check function of ``case``'s instance, if its generator gave one."""
        info = case.metadata.get(GENERATOR_KEY)
        if not isinstance(info, Mapping) or info.get("name") != self.name:
            return None
        return self.task(int(info["seed"]), info.get("knobs") or {}, simplest=bool(info.get("simplest"))).check


def check_for(case: Case) -> Check | None:
    """The check function of a generator case whose generator is registered, else ``None``.

    A check gives the verdict on answers that are not one value (any of several date forms); a
    generator whose tasks have only a reference has none, and the reference decides.
    """
    info = case.metadata.get(GENERATOR_KEY)
    if not isinstance(info, Mapping):
        return None
    gen = _REGISTRY.get(str(info.get("name")))
    if gen is None:
        from frontier_qa.generators import _library as library  # noqa: F401  (the built-ins may not be loaded yet)

        gen = _REGISTRY.get(str(info.get("name")))
    if gen is None:
        return None
    try:
        return gen.checks(case)
    except GeneratorError:  # a generator changed since the case was stored: the reference decides
        return None


def _folder_of(fn: Callable[..., Any]) -> str:
    """The folder of the file that defines ``fn`` (the working directory when it has none)."""
    try:
        file = inspect.getsourcefile(fn)
    except TypeError:
        file = None
    return os.path.dirname(os.path.abspath(file)) if file else os.getcwd()


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for k, v in values.items()}


def _slug(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", str(value)).strip("_")[:12] or "x"


def _shown(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items()) or "no knobs"


def _span(knob: Knob) -> str:
    vals = knob.values
    if knob.kind == "ordinal" and len(vals) > 4 and all(isinstance(v, int) for v in vals):
        return f"{vals[0]}..{vals[-1]}"
    return ", ".join(map(repr, vals))


# -- registration ----------------------------------------------------------------------------------

_REGISTRY: dict[str, Generator] = {}


def validate(gen: Generator) -> Generator:
    """Check a generator's declaration (knobs against the function's parameters).

    Raises:
        GeneratorError: no knobs, an ordinal knob without its easy end or with fewer than two
            values, a categorical knob without choices, a knob the function does not take, or a
            parameter with no knob and no default; each names the generator.
    """
    where = f"generator {gen.name!r}"
    if not gen.name or not re.fullmatch(r"[A-Za-z0-9_.-]+", gen.name):
        raise GeneratorError(f"generator name {gen.name!r} is not a plain name",
                             hint="use letters, digits, '_', '-' or '.'")
    if not gen.knobs:
        raise GeneratorError(f"{where} declares no knobs", hint="declare at least one ordinal knob: "
                             "knobs=[ordinal('digits', 1, 8, easy='low')]")
    names = [k.name for k in gen.knobs]
    if len(set(names)) != len(names):
        raise GeneratorError(f"{where} declares a knob twice", hint=f"knobs: {', '.join(names)}")
    for knob in gen.knobs:
        if knob.kind == "ordinal":
            if knob.easy not in ("low", "high"):
                raise GeneratorError(f"{where}: ordinal knob {knob.name!r} does not say which end is easy",
                                     hint=f"ordinal({knob.name!r}, ..., easy='low') or easy='high'")
            if len(knob.values) < 2:
                raise GeneratorError(f"{where}: ordinal knob {knob.name!r} has {len(knob.values)} value(s)",
                                     hint="give it at least two values (low < high)")
        elif knob.kind == "categorical":
            if not knob.values:
                raise GeneratorError(f"{where}: categorical knob {knob.name!r} has no choices",
                                     hint="categorical(name, ['a', 'b'])")
        else:
            raise GeneratorError(f"{where}: knob {knob.name!r} has kind {knob.kind!r}",
                                 hint="use ordinal(...) or categorical(...)")
    if not gen.ordinal:
        raise GeneratorError(f"{where} has no ordinal knob, so it has no difficulty axis",
                             hint="declare an ordinal knob with its easy end")
    for fn in (gen.fn, gen.shrink):
        if fn is None:
            continue
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        named = [p for p in list(params.values())[1:] if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                                    inspect.Parameter.KEYWORD_ONLY)]
        missing = [k for k in names if k not in params and not takes_any]
        if missing:
            raise GeneratorError(f"{where}: the function takes no parameter {', '.join(map(repr, missing))}",
                                 hint="write it as (rng, " + ", ".join(names) + ")")
        orphan = [p.name for p in named if p.name not in names and p.default is inspect.Parameter.empty]
        if orphan:
            raise GeneratorError(f"{where}: parameter(s) {', '.join(map(repr, orphan))} have no knob",
                                 hint="declare a knob for each, or give them defaults")
    return gen


def generator(*, knobs: Sequence[Knob], name: str | None = None, description: str = "",
              shrink: Callable[..., Task] | None = None, register: bool = True,
              expect: Expectations | Mapping[str, Any] | None = None,
              ) -> Callable[[Callable[..., Task]], Generator]:
    """Decorator: make ``(rng, **knobs) -> Task`` a :class:`Generator` (registered by name).

    ``expect`` (an :class:`~frontier_qa.target.Expectations` or its mapping) is what every
    instance's trajectory must do unless its :class:`Task` says otherwise.

    Raises:
        GeneratorError: the declaration is wrong (see :func:`validate`), its ``expect`` is
            malformed, or another generator of that name is registered from different code.
    """

    def wrap(fn: Callable[..., Task]) -> Generator:
        doc = (fn.__doc__ or "").strip().splitlines()
        gen_name = name or fn.__name__
        try:
            expected = expectations_from(expect, f"generator {gen_name!r}")
        except ConfigError as err:
            raise GeneratorError(err.message, hint=err.hint, key=err.key) from None
        gen = validate(Generator(gen_name, fn, tuple(knobs), description or (doc[0] if doc else ""),
                                 shrink, expected))
        if register:
            add(gen)
        return gen

    return wrap


def add(gen: Generator) -> Generator:
    """Register ``gen`` under its name (the same function again is fine: a module imported twice)."""
    old = _REGISTRY.get(gen.name)
    if old is not None and _code_of(old.fn) != _code_of(gen.fn):
        raise GeneratorError(f"two generators are named {gen.name!r}",
                             hint="give one of them another name: @generator(name=..., knobs=...)")
    _REGISTRY[gen.name] = gen
    return gen


def _code_of(fn: Callable[..., Any]) -> tuple[str, str]:
    return getattr(fn, "__module__", "") or "", getattr(fn, "__qualname__", "") or ""


def registered() -> dict[str, Generator]:
    """The registered generators by name (the built-in library included)."""
    from frontier_qa.generators import _library as library  # noqa: F401  (registers the built-ins)

    return dict(_REGISTRY)


def get(name: str) -> Generator:
    """The registered generator ``name``."""
    found = registered()
    if name not in found:
        from frontier_qa.errors import closest_name

        close = closest_name(name, found)
        guess = f"did you mean {close!r}? " if close else ""
        raise GeneratorError(f"no generator named {name!r}",
                             hint=f"{guess}registered: {', '.join(sorted(found))}; or load yours with "
                             "'path/to/file.py:name' or 'package.module:name'")
    return found[name]


def instance_seed(base: int, name: str, knobs: Mapping[str, Any], index: int | str) -> int:
    """The seed of instance ``index`` at ``knobs`` (stable across runs of the same base seed)."""
    key = f"{base}|{name}|{sorted(_plain(knobs).items())}|{index}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:6], "big")
