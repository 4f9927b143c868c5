"""One definition per concept: frozen values validated by pydantic, used as API types and config sections.

:func:`frozen_value` turns a class body into a frozen :func:`pydantic.dataclasses.dataclass`
that forbids unknown keys. The same class is the value the runtime passes around
(``Sampling(temperature=0.7)``, ``dataclasses.replace`` works) and the type of a config
section (``probing.sampling``): its bounds are written once, on the field.

Validation errors keep pydantic's key path. Built in Python, a bad value raises
:class:`~frontier_qa.errors.ConfigError` whose ``key`` is that path and whose message names
``Class.field``; inside a config file the file's loader reports the same path with where it
was set (:mod:`frontier_qa.config._diagnostics`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, dataclass_transform

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass as _pydantic_dataclass

from frontier_qa.errors import ConfigError

T = TypeVar("T")

_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")
_BOUNDS = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
           "less_than_equal": "<= {le}"}


def rule_of(error: Mapping[str, Any]) -> str:
    """What a value must be, from one pydantic error (``"> 0"``, ``"a valid integer"``)."""
    bound = _BOUNDS.get(error["type"])
    if bound is not None:
        return bound.format(**(error.get("ctx") or {}))
    message = str(error["msg"]).removeprefix("Value error, ")
    for said in ("Input should be ", "should be ", "must be "):
        message = message.removeprefix(said)
    return message


def value_error(err: ValidationError, cls: type, *, section: str | None = None) -> ConfigError:
    """A pydantic error on ``cls``'s fields as one :class:`ConfigError` naming the first bad key.

    ``section`` names the mapping the values came from (``limits``) for unknown keys.
    """
    errors = err.errors()
    unknown = [e for e in errors if e["type"] in _UNKNOWN]
    if unknown:
        names = [str(e["loc"][-1]) for e in unknown]
        parent = tuple(unknown[0]["loc"][:-1])
        where = ".".join([section or cls.__name__, *map(str, parent)])
        return ConfigError(f"unknown key(s) {', '.join(map(repr, names))} in {where}",
                           hint=f"allowed keys: {', '.join(_field_names(cls, parent))}",
                           key=tuple(unknown[0]["loc"]))
    first = errors[0]
    loc = tuple(first["loc"])
    name = ".".join([cls.__name__, *map(str, loc)])
    given = first.get("input")
    shown = "" if isinstance(given, Mapping) else f" = {given!r}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ConfigError(f"{name}{shown} is invalid{more}", hint=f"{name} must be {rule_of(first)}", key=loc)


def _field_names(cls: Any, path: tuple[Any, ...]) -> list[str]:
    """The keys of the value at ``path`` inside ``cls`` (a nested section's own keys)."""
    for part in path:
        field = getattr(cls, "__pydantic_fields__", {}).get(part)
        if field is None:
            return []
        cls = field.annotation
    return sorted(getattr(cls, "__pydantic_fields__", {}))


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, Field))
def frozen_value(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen pydantic dataclass with unknown keys forbidden.

    Constructing it validates every field once (a few microseconds: build values once per
    run, not per sample) and raises :class:`ConfigError` with the key path on a bad value.
    Validated as part of a larger model (a config file), pydantic's own error comes through
    with the full path instead.
    """
    dc: Any = _pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))(cls)
    validated_init: Callable[..., None] = dc.__init__

    @functools.wraps(validated_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            validated_init(self, *args, **kwargs)
        except ValidationError as err:
            raise value_error(err, dc) from None

    dc.__init__ = __init__
    return dc


def field_of(cls: type, name: str) -> Any:
    """Field ``name`` of frozen value ``cls`` (type bounds, default, description) for a config
    section whose layout differs from the value's (``probing`` and ``ProbeSettings``):
    ``k: int = field_of(ProbeSettings, "k")`` states the key's rules once, on the value.
    """
    return copy.copy(cls.__pydantic_fields__[name])  # type: ignore[attr-defined]


def from_mapping(cls: type[T], data: Mapping[str, Any] | None, section: str) -> T:
    """Build ``cls`` from a config mapping (nested values may be mappings); unknown keys raise."""
    try:
        return TypeAdapter(cls).validate_python(dict(data or {}))
    except ValidationError as err:
        raise value_error(err, cls, section=section) from None


__all__ = ["field_of", "from_mapping", "frozen_value", "rule_of", "value_error"]
