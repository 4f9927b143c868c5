"""The path of a sample, its self-consistency, trajectory expectations and pass^k: pure functions.

A sample's *path* is the tools it called, read at a granularity the user picks
(:class:`PathSettings`): the set of tools, their sequence, or the sequence with (key)
arguments. Across k samples the paths vote like answers do (:func:`path_counts`): the majority
path's share is the path's p̂, decided against the band by the same sequential rule as the
answers' (:func:`frontier_qa.probing._sequential.decide`).

A case's :class:`~frontier_qa.target.Expectations` are checked per sample
(:func:`expectation_misses`): each miss is one line a report can show ("called delete_account,
which must not be called"). pass^k (τ-bench) is the chance that k samples drawn from a case all
pass: ``C(c, k) / C(n, k)`` for ``c`` passing samples of ``n`` (:func:`pass_hat_k`), exactly 1
or 0 when ``n == k``.

No I/O but the import of a user's argument check (``"module:function"``), once per spec.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from frontier_qa._frozen import frozen_value
from frontier_qa.errors import ConfigError
from frontier_qa.scoring._tool_calls import _canonical_value, load_relaxed
from frontier_qa.target import Expectations, ToolArguments, Trajectory

GRANULARITIES = ("tools", "sequence", "arguments")
"""What a path is made of: the set of tools called, their sequence, or the sequence with arguments."""

NO_TOOL = "(no tool)"
"""The path of a sample that called no tool."""

ARROW = " → "


@frozen_value
class PathSettings:
    """How a sample's path is read and compared (config: ``probing.path``).

    Attributes:
        enabled: analyse paths at all (only cases whose samples call tools, or that carry
            expectations, are analysed).
        granularity: ``"tools"`` (the set of tools called), ``"sequence"`` (the default: the
            tools in call order, repeats collapsed) or ``"arguments"`` (the sequence with each
            call's arguments).
        key_arguments: at ``"arguments"`` granularity, the arguments compared per tool
            (``{"search": ["query"]}``); a tool not named here is compared on all its arguments.
        ignore: tools left out of every path (logging, a scratchpad).
        sample: keep sampling a case until its path is decided too, with the answers' policy
            (its confidences and k_max); off: the path is judged on the samples the answers took.
    """

    enabled: Annotated[bool, Field(description="analyse paths (cases whose samples call tools or that "
                                                "carry expectations)")] = True
    granularity: Annotated[Literal["tools", "sequence", "arguments"], Field(
        description="a path is the set of tools, their sequence, or the sequence with arguments")] = "sequence"
    key_arguments: Mapping[str, tuple[str, ...]] = Field(default_factory=dict, description=(
        "granularity arguments: the arguments compared per tool ({search: [query]}); others: all"))
    ignore: Annotated[tuple[str, ...], Field(description="tools left out of every path")] = ()
    sample: Annotated[bool, Field(description="sample a case until its path is decided too (within k_max); "
                                              "false: judge the path on the answers' samples")] = True


PASS_K_CASES = ("expectations", "judged", "off")


@frozen_value
class PassKSettings:
    """pass^k: the share of cases whose k samples all pass (config: ``probing.pass_k``).

    Attributes:
        k: the k of pass^k; every counted case is sampled at least k times, whatever the
            adaptive policy would stop at (τ-bench reports pass^1 … pass^8).
        cases: which cases count: ``"expectations"`` (the default: cases with trajectory
            expectations), ``"judged"`` (those and every case with a reference or a check: a
            sample passes when its answer is right and it meets the expectations) or ``"off"``.
    """

    k: Annotated[int, Field(ge=1, le=64, description="the k of pass^k; counted cases get at least k samples")] = 8
    cases: Annotated[Literal["expectations", "judged", "off"], Field(
        description="expectations: cases with trajectory expectations; judged: those and every case with a "
                    "reference or check (the answer must be right too); off")] = "expectations"


@dataclass(frozen=True)
class ToolUse:
    """One tool call as a path sees it: its name, its arguments as sent (JSON text), its error."""

    name: str
    arguments: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class PathView:
    """What a sample did, as paths and expectations read it.

    Attributes:
        tools: its tool calls in order.
        steps: tool calls plus model calls where the target recorded them.
        failed: the sample's call failed (it has no path; it passes nothing).
    """

    tools: tuple[ToolUse, ...] = ()
    steps: int = 0
    failed: bool = False


def view_of(trajectory: Trajectory) -> PathView:
    """A live trajectory's path view: its tool calls, and its steps (tool calls + recorded model calls)."""
    tools = tuple(ToolUse(c.name, c.arguments, c.error) for c in trajectory.tool_calls)
    model_calls = sum(1 for m in trajectory.messages
                      if isinstance(m, Mapping) and m.get("role") == "step" and m.get("kind") == "model")
    return PathView(tools, len(tools) + model_calls, failed=trajectory.error is not None)


def view_of_steps(steps: Iterable[Any], *, failed: bool = False) -> PathView:
    """A stored sample's path view, from its recorded steps (``kind``/``name``/``arguments``/``error``)."""
    tools: list[ToolUse] = []
    n = 0
    for step in steps:
        if step.kind == "tool":
            tools.append(ToolUse(step.name, step.arguments, step.error))
            n += 1
        elif step.kind == "model":
            n += 1
    return PathView(tuple(tools), n, failed=failed)


def _arguments(text: str | None) -> Any:
    """A call's arguments as a value: the parsed JSON object, else the text itself."""
    if text is None or not str(text).strip():
        return {}
    try:
        return load_relaxed(str(text))
    except ValueError:
        return str(text)


def _call_key(call: ToolUse, settings: PathSettings) -> str:
    if settings.granularity != "arguments":
        return call.name
    args = _arguments(call.arguments)
    keys = settings.key_arguments.get(call.name)
    if isinstance(args, Mapping):
        if keys is not None:
            args = {k: args.get(k) for k in keys}
        canon = _canonical_value(dict(args))
        inside = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, sort_keys=True)}" for k, v in sorted(canon.items()))
    else:
        inside = str(args)
    return f"{call.name}({inside})"


def path_key(view: PathView, settings: PathSettings | None = None) -> str | None:
    """The sample's path at ``settings.granularity``; ``None`` for a failed sample (no vote).

    ``"sequence"`` collapses immediate repeats (a retried call is the same step of the path);
    ``"tools"`` is the sorted set; ``"arguments"`` keeps every call with its (key) arguments.
    """
    if view.failed:
        return None
    settings = settings or PathSettings()
    calls = [c for c in view.tools if c.name not in settings.ignore]
    keys = [_call_key(c, settings) for c in calls]
    if settings.granularity == "tools":
        keys = sorted(set(keys))
    elif settings.granularity == "sequence":
        keys = [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]
    return ARROW.join(keys) if keys else NO_TOOL


def path_counts(paths: Sequence[str | None]) -> list[tuple[str, int]]:
    """The paths' clusters, largest first (ties: the path that sorts first); failed samples left out."""
    counts = Counter(p for p in paths if p is not None)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


# --- expectations ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def resolve_check(spec: str, base: str | None = None) -> Callable[[Mapping[str, Any]], Any]:
    """The function an argument check names: ``"package.module:function"`` or ``"path/file.py:function"``
    (a relative path is found under ``base``, the directory of the file that names it, else the
    working directory).

    Raises:
        ConfigError: the spec is malformed, or its module or function cannot be found.
    """
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise ConfigError(f"argument check {spec!r} is not 'module:function' or 'file.py:function'",
                          hint="e.g. check: checks.py:is_metric or check: mypkg.checks:is_metric")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_absolute() and base is not None:
                path = Path(base) / path
            if not path.is_file():
                raise ConfigError(f"argument check {spec!r}: no file {path}", hint="give a path relative to the "
                                  "cases file, or a module on the Python path ('package.module:function')")
            loaded = importlib.util.spec_from_file_location(f"frontier_qa_check_{abs(hash(str(path)))}", path)
            assert loaded is not None and loaded.loader is not None
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ConfigError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's module: say which and why
        raise ConfigError(f"argument check {spec!r} could not be loaded: {type(err).__name__}: {err}") from None
    found = getattr(module, name, None)
    if not callable(found):
        raise ConfigError(f"argument check {spec!r}: {where} has no function {name!r}")
    return found  # type: ignore[no-any-return]


def _arguments_match(expected: ToolArguments, call: ToolUse, base: str | None) -> bool:
    args = _arguments(call.arguments)
    if not isinstance(args, Mapping):
        return False
    if expected.arguments:
        want, got = _canonical_value(dict(expected.arguments)), _canonical_value(dict(args))
        if expected.match == "exact" and want != got:
            return False
        if expected.match == "subset" and any(k not in got or got[k] != v for k, v in want.items()):
            return False
    if expected.check is not None:
        try:
            return bool(resolve_check(expected.check, base)(dict(args)))
        except ConfigError:
            raise
        except Exception:  # noqa: BLE001 - the user's check: a crash is "no match"
            return False
    return True


def _in_order(wanted: Sequence[str], names: Sequence[str]) -> bool:
    it = iter(names)
    return all(any(n == w for n in it) for w in wanted)


def _order_miss(expect: Expectations, names: Sequence[str]) -> str | None:
    wanted = list(expect.tool_sequence)
    if not wanted:
        return None
    got = ARROW.join(names) or NO_TOOL
    if expect.order == "strict":
        ok = list(names) == wanted
    elif expect.order == "in_order":
        ok = _in_order(wanted, names)
    else:
        have = Counter(names)
        ok = all(have[name] >= n for name, n in Counter(wanted).items())
    return None if ok else f"tool order {got} does not match {ARROW.join(wanted)} ({expect.order.replace('_', ' ')})"


def expectation_misses(view: PathView, expect: Expectations, *, base: str | None = None) -> tuple[str, ...]:
    """What a sample's trajectory misses of ``expect``, one line per miss; ``()`` when it meets them all.

    Args:
        view: the sample's tools and steps.
        expect: the case's expectations.
        base: the directory relative argument-check files are found in.
    """
    if view.failed:
        return ("the sample failed",)
    names = [c.name for c in view.tools]
    called = set(names)
    misses = [f"never called {t}" for t in expect.tools_used if t not in called]
    misses += [f"called {t}, which must not be called" for t in expect.tools_not_used if t in called]
    order = _order_miss(expect, names)
    if order is not None:
        misses.append(order)
    for wanted in expect.arguments:
        calls = [c for c in view.tools if c.name == wanted.tool]
        if not calls:
            if wanted.tool not in expect.tools_used:  # said once, above, when also required
                misses.append(f"never called {wanted.tool} (its arguments are checked)")
        elif not any(_arguments_match(wanted, c, base) for c in calls):
            said = json.dumps(dict(wanted.arguments), ensure_ascii=False, sort_keys=True) if wanted.arguments else ""
            how = f"{wanted.match} of {said}" if said else ""
            how = " and ".join(x for x in (how, f"check {wanted.check}" if wanted.check else "") if x)
            misses.append(f"{wanted.tool} arguments {calls[0].arguments or '{}'} fail {how}")
    if expect.max_steps is not None and view.steps > expect.max_steps:
        misses.append(f"{view.steps} steps, more than the {expect.max_steps} allowed")
    return tuple(misses)


def check_trajectory(trajectory: Trajectory, expect: Expectations | Mapping[str, Any], *,
                     base: str | None = None) -> tuple[str, ...]:
    """What one trajectory misses of ``expect``, one line per miss (``()``: it meets them all).

    The check every probed sample gets, for a trajectory in hand: an agent's unit test, a notebook.

    Args:
        trajectory: one sample (its tool calls; its recorded model calls count as steps).
        expect: the expectations, or their mapping as a cases file writes it.
        base: the directory a relative argument-check file is found in (default: the working directory).

    Raises:
        ConfigError: ``expect`` is malformed, or names a check that cannot be found.
    """
    from frontier_qa._expectations import expectations_from

    expected = expectations_from(expect, "check_trajectory")
    return () if expected is None else expectation_misses(view_of(trajectory), expected, base=base)


def pass_hat_k(n: int, passed: int, k: int) -> float | None:
    """τ-bench's pass^k of one case: the chance that k of its n samples, drawn without replacement,
    all pass (``C(passed, k) / C(n, k)``); ``None`` when there are fewer than k samples.
    """
    if not 0 <= passed <= n:
        raise ValueError(f"need 0 <= passed <= n, got passed={passed}, n={n}")
    if k < 1 or n < k:
        return None
    return math.comb(passed, k) / math.comb(n, k)


def top_misses(misses: Iterable[Sequence[str]], most: int = 3) -> list[str]:
    """The most common misses over samples, with how many samples had each (``"… (5 of 8)"``)."""
    rows = list(misses)
    counts = Counter(m for row in rows for m in dict.fromkeys(row))
    return [f"{m} ({n} of {len(rows)})" for m, n in counts.most_common(most)]


__all__ = [
    "ARROW",
    "GRANULARITIES",
    "NO_TOOL",
    "PASS_K_CASES",
    "PassKSettings",
    "PathSettings",
    "PathView",
    "ToolUse",
    "check_trajectory",
    "expectation_misses",
    "pass_hat_k",
    "path_counts",
    "path_key",
    "resolve_check",
    "top_misses",
    "view_of",
    "view_of_steps",
]
