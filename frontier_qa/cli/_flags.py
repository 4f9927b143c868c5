"""Command-line flags → config overrides, and ``--show-config``: shared by every config-driven command.

A command names each flag it has in a table (parameter name → :data:`FlagRule`) and passes the
flags it was given to :func:`overrides`; ``--set KEY=VALUE`` overrides come last, so they win.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import typer

from frontier_qa.config import Override, parse_set

FlagRule = Callable[[Any], "list[Override]"]
"""How a given flag's value becomes config overrides."""


def to_key(key: str, flag: str) -> FlagRule:
    """The value goes to ``key`` as given (a path as its string)."""
    return lambda value: [Override(key, str(value) if isinstance(value, Path) else value, f"{flag} {value}")]


def fixed(key: str, value: Any, flag: str) -> FlagRule:
    """A switch: when given, ``key`` gets ``value``."""
    return lambda _: [Override(key, value, flag)]


def overrides(flags: Mapping[str, Any], sets: Sequence[str], table: Mapping[str, FlagRule]) -> list[Override]:
    """Flag values (``None``, ``[]``, ``False``: not given) as config overrides; ``--set`` ones last (they win)."""
    out: list[Override] = []
    for name, value in flags.items():
        if value is None or value == [] or value is False:
            continue
        rule = table.get(name)
        if rule is None:  # pragma: no cover - a flag added without a table entry
            raise AssertionError(f"flag {name} has no config key")
        out += rule(value)
    return out + [parse_set(s) for s in sets]


def print_config(config: Any) -> None:
    """Print a resolved config (a pydantic model) as YAML, secrets redacted (``--show-config``)."""
    import yaml

    from frontier_qa.redaction import redact_options

    data = redact_options(config.model_dump(mode="json"))
    typer.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)


__all__ = ["FlagRule", "fixed", "overrides", "print_config", "to_key"]
