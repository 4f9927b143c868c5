"""Configuration errors that name the key, where it was set and the fix.

A pydantic :class:`~pydantic.ValidationError` becomes one :class:`~frontier_qa.errors.ConfigError`
listing every bad key in file order, each as ``WHERE: KEY: PROBLEM`` plus a ``fix:`` line,
with "did you mean" for misspelt keys and values and the bounds of numbers out of range;
never a traceback. :func:`report` is the one reporter of every config file: the probe's
(:class:`~frontier_qa.config._schema.ProbeConfig`) and the trainers'
(:mod:`frontier_qa.train.config`, :mod:`frontier_qa.train._coevolve_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.dataclasses import is_pydantic_dataclass
from pydantic.fields import FieldInfo

from frontier_qa.config._schema import _EXAMPLE_BAND, Path_, ProbeConfig
from frontier_qa.errors import ConfigError, closest_name, closest_value

if TYPE_CHECKING:
    from frontier_qa.config._layers import Sources


# --- errors ----------------------------------------------------------------------------------


def _models_in(annotation: Any) -> list[type[Any]]:
    """The sections an annotation may hold: models and the frozen values (pydantic dataclasses)."""
    if isinstance(annotation, type) and (issubclass(annotation, BaseModel) or is_pydantic_dataclass(annotation)):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def fields_of(section: type[Any]) -> dict[str, FieldInfo]:
    """The keys of a section, a pydantic model or a frozen value alike."""
    if issubclass(section, BaseModel):
        return section.model_fields
    fields: dict[str, Any] = section.__pydantic_fields__
    return fields


def _literals_in(annotation: Any) -> list[str]:
    if get_origin(annotation) is Literal:
        return [str(a) for a in get_args(annotation)]
    return [v for arg in get_args(annotation) for v in _literals_in(arg)]


def _clean(loc: tuple[Any, ...], data: Any, root: type[Any]) -> tuple[Path_, list[type[Any]], Any]:
    """Pydantic's error location as a key path (union tags dropped), the models at its
    parent, and the field annotation at its end (``root``: the config's model).
    """
    models: list[type[Any]] = [root]
    parents = models
    node: Any = data
    path: list[str | int] = []
    annotation: Any = root
    for part in loc:
        fields = {name: field for m in models for name, field in fields_of(m).items()}
        if isinstance(node, list) and isinstance(part, int):
            path.append(part)
            node = node[part] if 0 <= part < len(node) else None
            annotation = get_args(annotation)[0] if get_args(annotation) else annotation
            models = _models_in(annotation)
        elif (isinstance(node, Mapping) and part in node) or part in fields:
            path.append(part)
            parents = models
            node = node.get(part) if isinstance(node, Mapping) else None
            annotation = fields[part].annotation if part in fields else None
            models = _models_in(annotation)
        # anything else is a union member's tag ("BandRange", "literal[...]", "str"): skip it
    return tuple(path), parents, annotation


_FIXES = {
    "int": "set {key} to a whole number",
    "float": "set {key} to a number",
    "bool": "set {key} to true or false",
    "string": "set {key} to a string (quote it)",
    "list": "set {key} to a list, e.g. [a, b]",
    "dict": "write {key} as a mapping of keys",
    "model": "write {key} as a mapping of keys",
}


def _line_of(where: str) -> tuple[int, str, int]:
    file, _, line = where.rpartition(":")
    return (0, file, int(line)) if line.isdigit() else (1, where, 0)


def _describe(error: Mapping[str, Any], data: dict[str, Any], sources: Sources,
              root: type[Any], doc: str) -> tuple[Path_, str]:
    path, parents, annotation = _clean(tuple(error["loc"]), data, root)
    key = ".".join(map(str, path)) or "(top level)"
    where = sources.where(path) if path else sources.where(("version",))
    kind = error["type"]
    given = error.get("input")
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):  # a model's / a frozen value's unknown key
        name = str(path[-1])
        known = sorted({f for m in parents for f in fields_of(m)})
        close = closest_name(name, known)
        fix = f"did you mean '{close}'?" if close else f"known keys here: {', '.join(known)}"
        return path, f"{where}: {key}: unknown key\n  fix: {fix}"
    if kind == "missing":
        return path, f"{where}: {key}: required key is missing\n  fix: add '{path[-1]}:'"
    if kind == "literal_error" and isinstance(given, str):
        choices = _literals_in(annotation) or [str(error.get("ctx", {}).get("expected", ""))]
        close = closest_value(given, choices)
        fix = (f"did you mean '{close}'? " if close else "") + f"use one of: {', '.join(choices)}"
        if _models_in(annotation):
            fix += f" (or a mapping such as {_EXAMPLE_BAND})"
        return path, f"{where}: {key}: {given!r} is not allowed\n  fix: {fix}"
    shown = "" if isinstance(given, (dict, list)) or given is None else f" (got {given!r})"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind == "dataclass_type":  # a frozen value's section given as a scalar: worded as a model's
        message, kind = "Input should be a valid dictionary", "model_type"
    ctx = error.get("ctx") or {}
    bound = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
             "less_than_equal": "<= {le}"}.get(kind)
    if bound is not None:
        fix = f"set {key} to a number {bound.format(**ctx)}"
    else:
        fix = _FIXES.get(kind.split("_")[0], "").format(key=key) or f"see {doc} for {key}"
    return path, f"{where}: {key}: {message}{shown}\n  fix: {fix}"


PROBE_HINT = "`frontier-qa schema` prints every key; configs/example.yaml explains them"


def report(err: ValidationError, data: dict[str, Any], sources: Sources, *, root: type[Any] = ProbeConfig,
           title: str = "the configuration", hint: str = PROBE_HINT, doc: str = "`frontier-qa schema`") -> ConfigError:
    """``err`` as one :class:`ConfigError`: every bad key in file order, with where it was set
    and the fix; its ``key``/``source`` are the first bad key's, as data.

    Args:
        err: pydantic's error from validating ``data`` as ``root``.
        data: the merged config (:func:`~frontier_qa.config._layers.resolve_layers`).
        sources: where each key was set.
        root: the config's model (the probe's; a trainer's).
        title: what the first line calls the config (``"the training configuration"``).
        hint: where every key is documented.
        doc: what documents a key, in a fix that has nothing more specific to say.
    """
    described: dict[Path_, list[tuple[bool, str]]] = {}
    for error in err.errors():
        path, text = _describe(error, data, sources, root, doc)
        # a union (band: a preset or a mapping) fails once per member; the telling error is
        # the one of the member the value was meant for: not a type mismatch, nor a preset
        # name check on a mapping
        kind = error["type"]
        off = kind.endswith("_type") or (kind == "literal_error" and not isinstance(error.get("input"), str))
        described.setdefault(path, []).append((off, text))
    lines = []
    ordered = sorted(described.items(), key=lambda item: _line_of(item[1][0][1].split(": ", 1)[0]))
    for _path, entries in ordered:
        lines.append(next((t for off, t in entries if not off), entries[0][1]))
    head = f"{title} is invalid:" if len(lines) > 1 else f"{title} is invalid: "
    body = "\n".join(f"  {line}".replace("\n  fix:", "\n    fix:") for line in lines) if len(lines) > 1 else lines[0]
    first = ordered[0][0] if ordered else ()  # the first bad key, as data (the CLI and tests read it, not the text)
    return ConfigError(head + ("\n" if len(lines) > 1 else "") + body, hint=hint,
                       key=first or None, source=sources.where(first) if first else None)
