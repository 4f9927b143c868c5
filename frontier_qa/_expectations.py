"""Trajectory expectations as people write them: one reader for every way a case is written.

A cases file row, a suite entry, a task generator, the pytest marker and the Python API all give a
case's :class:`~frontier_qa.target.Expectations` as a mapping (``{"tools_used": ["search"]}``) or
the value itself. :func:`expectations_from` reads either, so a misspelt key gets the same "did you
mean" wherever it was written.

An argument check may name a file by a relative path (``check: checks.py:is_city``). Like any
path in a file that names another, it is relative to the file that wrote it: the reader sets the
case's metadata :data:`EXPECT_BASE_KEY` to that file's folder (:func:`anchored`), and the prober
finds the check there (:func:`frontier_qa.scoring._paths.resolve_check`'s ``base``). The key is
where the case came from, not what it is: moving a cases file does not change its cases. A
committed suite file keeps it relative to itself (:func:`portable`, :func:`rooted`), so the same
file works in every checkout.

Pure values; no I/O.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import PurePath
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError

from frontier_qa.errors import ConfigError, closest_name
from frontier_qa.target import ORDERS, Case, Expectations, ToolArguments

EXPECT_BASE_KEY: Final = "expect_base"
"""Case metadata key: the folder a relative argument-check file is found in (the cases file's, the
marked test file's, the generator's)."""

EXPECT_KEYS: Final = tuple(Expectations.__dataclass_fields__)
ARGUMENT_KEYS: Final = tuple(ToolArguments.__dataclass_fields__)
_LISTS: Final = frozenset({"tools_used", "tools_not_used", "tool_sequence"})
_EXAMPLE: Final = "e.g. expect: {tools_used: [search], tools_not_used: [delete_account], max_steps: 6}"
_FIXES: Final = {
    "tools_used": "give a list of tool names, e.g. tools_used: [search]",
    "tools_not_used": "give a list of tool names, e.g. tools_not_used: [delete_account]",
    "tool_sequence": "give the tools in order, e.g. tool_sequence: [search, summarise]",
    "arguments": "give a list such as arguments: [{tool: search, arguments: {query: weather}, match: subset}]",
    "max_steps": "give a whole number >= 1 (tool calls plus recorded model calls)",
    "tool": "name the tool whose arguments are checked: {tool: search, arguments: {...}}",
    "check": "name a function: check: checks.py:is_city or check: mypkg.checks:is_city",
}


@functools.cache
def _adapter() -> TypeAdapter[Expectations]:
    return TypeAdapter(Expectations)


def expectations_from(value: Any, where: str) -> Expectations | None:
    """``value`` as :class:`~frontier_qa.target.Expectations`: a mapping as a file, a generator or the
    pytest marker writes it (a lone tool name counts as a list of one), or the value itself.

    Args:
        value: the mapping, an ``Expectations``, or ``None``.
        where: what wrote it, for messages (``cases.jsonl:3``, ``generator 'lookup'``).

    Returns:
        The expectations; ``None`` when ``value`` is ``None`` or expects nothing.

    Raises:
        ConfigError: not a mapping, an unknown key (with the key it most likely means), a value of
            the wrong kind, or a malformed check; the message names ``where`` and the key.
    """
    if value is None or isinstance(value, Expectations):
        return None if value is None or value.empty else value
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expect must be a mapping of keys, not {type(value).__name__}", hint=_EXAMPLE,
                          key=("expect",))
    data = {key: [item] if key in _LISTS and isinstance(item, str) else item for key, item in value.items()}
    try:
        found = _adapter().validate_python(data)
    except ValidationError as err:
        raise _error(err.errors()[0], where) from None
    for i, wanted in enumerate(found.arguments):
        if wanted.check is not None:
            module, sep, name = wanted.check.rpartition(":")
            if not (sep and module and name.isidentifier()):
                raise ConfigError(f"{where}: expect.arguments[{i}].check = {wanted.check!r} is not "
                                  "'module:function' or 'file.py:function'", hint=_FIXES["check"],
                                  key=("expect", "arguments", i, "check"))
    return None if found.empty else found


def _error(error: Mapping[str, Any], where: str) -> ConfigError:
    loc = tuple(error["loc"])
    path = "expect" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    key = ("expect", *loc)
    kind, given = error["type"], error.get("input")
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        inner = len(loc) > 1 and loc[0] == "arguments"
        known = ARGUMENT_KEYS if inner else EXPECT_KEYS
        close = closest_name(str(loc[-1]), known)
        said = f"did you mean {close!r}? " if close else ""
        return ConfigError(f"{where}: {path}: unknown key",
                           hint=f"{said}{'an argument check' if inner else 'expect'} takes: {', '.join(known)}",
                           key=key)
    if kind == "literal_error":
        choices = ORDERS if loc[-1] == "order" else ("subset", "exact")
        close = closest_name(str(given), choices, cutoff=0.5)
        said = f"did you mean {close!r}? " if close else ""
        return ConfigError(f"{where}: {path} = {given!r} is not allowed",
                           hint=f"{said}use one of: {', '.join(choices)}", key=key)
    if kind == "missing":
        return ConfigError(f"{where}: {path}: required key is missing", hint=_FIXES.get(str(loc[-1]), _EXAMPLE),
                           key=key)
    field = next((str(p) for p in reversed(loc) if isinstance(p, str)), "")
    shown = "" if isinstance(given, (Mapping, list)) else f" = {given!r}"
    message = str(error["msg"]).removeprefix("Value error, ").replace("a valid tuple", "a list")
    return ConfigError(f"{where}: {path}{shown}: {message}", hint=_FIXES.get(field, _EXAMPLE), key=key)


def relative_checks(expect: Expectations | None) -> tuple[str, ...]:
    """The argument checks that name a ``.py`` file by a relative path (found under the case's base)."""
    if expect is None:
        return ()
    out = []
    for wanted in expect.arguments:
        file = (wanted.check or "").rpartition(":")[0]
        if file.endswith(".py") and not PurePath(file).is_absolute():
            out.append(str(wanted.check))
    return tuple(out)


def anchored(case: Case, base: str | os.PathLike[str]) -> Case:
    """``case`` with :data:`EXPECT_BASE_KEY` set to ``base`` (made absolute) when its expectations
    name a check file by a relative path; unchanged otherwise (its metadata stays as it was written).
    """
    if not relative_checks(case.expect):
        return case
    return replace(case, metadata={**case.metadata, EXPECT_BASE_KEY: os.path.abspath(base)})


def portable(case: Case, folder: str | os.PathLike[str]) -> Case:
    """``case`` with its :data:`EXPECT_BASE_KEY` written relative to ``folder`` (a committed suite file's),
    so that the file reads the same in every checkout and on every machine.
    """
    base = case.metadata.get(EXPECT_BASE_KEY)
    if not isinstance(base, str) or not os.path.isabs(base):
        return case
    try:
        relative = PurePath(os.path.relpath(base, os.path.abspath(folder))).as_posix()
    except ValueError:  # another drive: only the absolute path says where
        return case
    return replace(case, metadata={**case.metadata, EXPECT_BASE_KEY: relative})


def rooted(case: Case, folder: str | os.PathLike[str]) -> Case:
    """``case`` with a relative :data:`EXPECT_BASE_KEY` (as a suite file keeps it) made absolute against
    ``folder``, the suite file's.
    """
    base = case.metadata.get(EXPECT_BASE_KEY)
    if not isinstance(base, str) or os.path.isabs(base):
        return case
    found = os.path.normpath(os.path.join(os.path.abspath(folder), base))
    return replace(case, metadata={**case.metadata, EXPECT_BASE_KEY: found})


def with_expect(case: Case, expect: Expectations | None, base: str | os.PathLike[str] | None = None) -> Case:
    """``case`` given ``expect`` when it has none of its own (a marker's or a generator's default for
    its cases), anchored at ``base`` when given.
    """
    if case.expect is not None or expect is None:
        return case
    given = replace(case, expect=expect)
    return given if base is None else anchored(given, base)


__all__ = [
    "ARGUMENT_KEYS",
    "EXPECT_BASE_KEY",
    "EXPECT_KEYS",
    "anchored",
    "expectations_from",
    "portable",
    "relative_checks",
    "rooted",
    "with_expect",
]
