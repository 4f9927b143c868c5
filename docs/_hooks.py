"""mkdocs hooks: the reference pages, generated from the code at build time.

A reference page holds a marker ``<!-- generated: NAME -->``; :func:`on_page_markdown` replaces it
with the Markdown that NAME's generator renders:

``cli``         every command of the ``frontier-qa`` typer app, with its usage, arguments and options
``config``      every key of the probe config (``frontier_qa.config._schema.ProbeConfig``)
``exit-codes``  the exit codes of ``frontier_qa/exit_codes.py``
``api``         one mkdocstrings block per public package, listing the names the package exports

Nothing here is copied by hand, so the pages cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

import typer
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

_MARKER = re.compile(r"<!-- generated: (?P<name>[\w-]+) -->")

# the packages the API page documents, in reading order: (package, what it is for)
API_PACKAGES: tuple[tuple[str, str], ...] = (
    ("frontier_qa", "the names most programs need, importable from the top"),
    ("frontier_qa.session", "the one front door: a config's probe, replay and accept, and their outcome"),
    ("frontier_qa.probing", "the engine: probe, replay and their settings"),
    ("frontier_qa.runtime", "opening targets, limits, budgets, the sample cache and the sandbox"),
    ("frontier_qa.store", "the case store, suites and replay comparisons"),
    ("frontier_qa.curricula", "where cases come from"),
    ("frontier_qa.generators", "task generators with difficulty knobs"),
    ("frontier_qa.reports", "reports and the gate"),
    ("frontier_qa.config", "the probe config"),
    ("frontier_qa.train", "the curriculum and co-evolution trainers"),
    ("frontier_qa.testing", "test doubles: scripted targets and curricula"),
    ("frontier_qa.errors", "the exceptions frontier-qa raises"),
)


def _cell(text: object) -> str:
    """One Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _commands(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, command
    if hasattr(command, "commands"):
        for name in sorted(command.commands):
            yield from _commands(command.commands[name], [*path, name])


def _param_row(param: Any, ctx: Any) -> str:
    """One table row for an argument or option (typer's own click: attributes, not isinstance)."""
    if param.param_type_name == "argument":
        name = f"`{param.name.upper()}`"
    else:
        name = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    kind = "flag" if getattr(param, "is_flag", False) else param.display_type(ctx).strip("<>")
    default = None if param.required else param.get_default(ctx, call=False)
    shown = "" if default in (None, (), [], False) or callable(default) else f"`{default}`"
    return (f"| {name} | {_cell(kind)} | {'yes' if param.required else ''} | {_cell(shown)} | "
            f"{_cell(getattr(param, 'help', None) or '')} |")


def cli_reference() -> str:
    """Every command of the typer app: usage, help, arguments and options."""
    from frontier_qa.cli.app import build_app

    root = typer.main.get_command(build_app())
    out: list[str] = []
    for path, command in _commands(root, ["frontier-qa"]):
        ctx = command.context_class(command, info_name=" ".join(path))
        out += [f"## `{' '.join(path)}`", ""]
        if command.help:
            out += [command.help.strip(), ""]
        out += ["```text", f"{' '.join(path)} {' '.join(command.collect_usage_pieces(ctx))}".rstrip(), "```", ""]
        params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
        if params:
            out += ["| name | type | required | default | help |", "|---|---|---|---|---|"]
            out += [_param_row(p, ctx) for p in params]
            out.append("")
        if getattr(command, "commands", None):
            out += ["Commands: " + ", ".join(f"`{n}`" for n in sorted(command.commands)), ""]
    return "\n".join(out)


def _model_fields(tp: Any) -> dict[str, Any] | None:
    """The fields of a pydantic model or pydantic dataclass; None for any other type."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return dict(tp.model_fields)
    fields = getattr(tp, "__pydantic_fields__", None)
    return dict(fields) if isinstance(tp, type) and fields is not None else None


def _section_type(annotation: Any) -> Any:
    """The model inside an annotation (``X``, ``X | None``), or None."""
    if _model_fields(annotation) is not None:
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [a for a in typing.get_args(annotation) if _model_fields(a) is not None]
        return models[0] if len(models) == 1 else None
    return None


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return annotation.__name__
    return re.sub(r"\b(?:[a-z_][\w]*\.)+", "", str(annotation)).replace("NoneType", "None")


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
        if dataclasses.is_dataclass(value) or isinstance(value, BaseModel):
            return ""
        return f"`{value!r}`" if not isinstance(value, str) else f'`"{value}"`'
    return ""


def _config_rows(model: Any, prefix: str) -> Iterator[str]:
    for name, field in (_model_fields(model) or {}).items():
        key = f"{prefix}{field.alias or name}"
        section = _section_type(field.annotation)
        description = field.description or ""
        if section is not None:
            yield f"| `{key}` | section | | {_cell(description)} |"
            yield from _config_rows(section, key + ".")
        else:
            kind, default = _cell(_type_name(field.annotation)), _cell(_default(field))
            yield f"| `{key}` | {kind} | {default} | {_cell(description)} |"


def config_reference() -> str:
    """Every key of the probe config, from the pydantic schema."""
    from frontier_qa.config import ProbeConfig

    rows = ["| key | type | default | description |", "|---|---|---|---|", *_config_rows(ProbeConfig, "")]
    return "\n".join(rows) + "\n"


def exit_codes_reference() -> str:
    """The exit codes, from ``frontier_qa.exit_codes``."""
    from frontier_qa import exit_codes

    names = {value: name for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}
    rows = ["| code | name | meaning |", "|---|---|---|"]
    rows += [f"| {code} | `{names[code]}` | {_cell(meaning)} |" for code, meaning in sorted(exit_codes.MEANING.items())]
    return "\n".join(rows) + "\n"


def _exports(package: str) -> list[str]:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    if names is None:  # a plain module: its public functions and classes
        names = [n for n, v in vars(module).items() if not n.startswith("_") and getattr(v, "__module__", None)
                 == package and callable(v)]
    return sorted(n for n in names if not n.startswith("_"))


def _renderable(package: str, names: list[str]) -> tuple[list[str], list[str]]:
    """The names griffe can follow to their definition, and those it cannot (lazy or dynamic ones)."""
    import griffe

    loader = griffe.GriffeLoader(search_paths=["."])
    root = loader.load(package.split(".")[0])
    loader.resolve_aliases(external=False, implicit=True)
    obj: Any = root if package == root.path else root[package.split(".", 1)[1]]
    good, bad = [], []
    for name in names:
        try:
            member = obj.members[name]
            if member.is_alias:
                member.final_target  # noqa: B018 - raises when the alias cannot be followed
            good.append(name)
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            bad.append(name)
    return good, bad


def api_reference() -> str:
    """A mkdocstrings block per public package, its exported names listed explicitly."""
    out: list[str] = []
    for package, purpose in API_PACKAGES:
        good, bad = _renderable(package, _exports(package))
        out += [f"## `{package}`", "", f"{purpose[0].upper()}{purpose[1:]}.", ""]
        if bad:
            out += ["Exported but not rendered here (defined outside the package's source tree, or "
                    "bound at run time): " + ", ".join(f"`{n}`" for n in bad) + ".", ""]
        if good:
            out += [f"::: {package}", "    options:", "      show_root_heading: false",
                    "      show_root_toc_entry: false", "      show_submodules: false", "      heading_level: 3",
                    "      members:", *[f"        - {n}" for n in good], ""]
    return "\n".join(out)


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "config": config_reference,
    "exit-codes": exit_codes_reference,
    "api": api_reference,
}


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each ``<!-- generated: NAME -->`` marker with what NAME's generator renders."""
    return _MARKER.sub(lambda m: GENERATORS[m["name"]](), markdown)
