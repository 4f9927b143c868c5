"""mkdocs hooks: the reference pages, generated from the code at build time.

A reference page holds a marker ``<!-- generated: NAME -->``; :func:`on_page_markdown` replaces it
with the Markdown that NAME's generator renders:

``cli``         every command of the ``frontier-qa`` typer app, with its usage, arguments and options
``config``      every key of the probe config (``frontier_qa.config._schema.ProbeConfig``)
``exit-codes``  the exit codes of ``frontier_qa/exit_codes.py``
``api``         one mkdocstrings block per public package, listing the names the package exports, then one
                per public module (``PUBLIC_MODULES`` of ``tests/package/test_module_rules.py``)

Nothing here is copied by hand, so the pages cannot drift from the code.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
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


# the public modules are the ones tests/package/test_module_rules.py allows (one list, read from there);
# the entry points among them are not API
_MODULE_RULES = Path(__file__).resolve().parent.parent / "tests" / "package" / "test_module_rules.py"
_ENTRY_POINTS = ("frontier_qa/cli/app.py", "plugins/pytest_plugin.py")


def public_modules() -> dict[str, str]:
    """Each public module's import name → why it is public, from ``PUBLIC_MODULES`` of the module rules test."""
    tree = ast.parse(_MODULE_RULES.read_text(encoding="utf-8"))
    table = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "PUBLIC_MODULES" for t in node.targets))
    out = {}
    for path, reason in ast.literal_eval(table).items():
        if path in _ENTRY_POINTS:
            continue
        dotted = path.removesuffix(".py").replace("/", ".")
        out[dotted if dotted.startswith("frontier_qa.") else f"frontier_qa.{dotted}"] = reason
    return out


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
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(f'"{v}"' if isinstance(v, str) else repr(v) for v in typing.get_args(annotation))
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
            # a union of a section and other forms (a preset name, say): the other forms, then the section's keys
            others = [a for a in typing.get_args(field.annotation) if a is not section and a is not type(None)]
            kind = " | ".join([*(_type_name(a) for a in others), f"{section.__name__} (keys below)"]) \
                if others else "section"
            yield f"| `{key}` | {_cell(kind)} | {_cell(_default(field))} | {_cell(description)} |"
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
    if names is None:  # a plain module: its public functions, classes and constants
        names = [n for n, v in vars(module).items() if not n.startswith("_") and not inspect.ismodule(v)
                 and (getattr(v, "__module__", None) == package and callable(v) or n.isupper())]
    return sorted(n for n in names if not n.startswith("_"))


def _griffe_path(module: str) -> str:
    """Where griffe finds a module from the repository root: ``adapters/`` and ``plugins/`` install as
    ``frontier_qa.adapters`` / ``frontier_qa.plugins`` (pyproject's package-dir) but sit at the top.
    """
    for top in ("adapters", "plugins"):
        if module == f"frontier_qa.{top}" or module.startswith(f"frontier_qa.{top}."):
            return module.removeprefix("frontier_qa.")
    return module


@functools.cache
def _griffe_root(top: str) -> Any:
    import griffe

    loader = griffe.GriffeLoader(search_paths=["."])
    root = loader.load(top)
    loader.resolve_aliases(external=False, implicit=True)
    return root


def _renderable(package: str, names: list[str]) -> tuple[list[str], list[str]]:
    """The names griffe can follow to their definition, and those it cannot (lazy or dynamic ones)."""
    import griffe

    path = _griffe_path(package)
    root = _griffe_root(path.split(".")[0])
    obj: Any = root if path == root.path else root[path.split(".", 1)[1]]
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


def _summary(package: str, name: str) -> str:
    """The first paragraph of a name's docstring, read by Python (for names griffe cannot follow)."""
    value = getattr(importlib.import_module(package), name)
    doc = inspect.getdoc(value) if callable(value) or inspect.isclass(value) else None
    return _cell(doc.split("\n\n")[0]) if doc else ""


def _api_section(package: str, purpose: str) -> list[str]:
    good, bad = _renderable(package, _exports(package))
    out = [f"## `{package}`", "", f"{purpose[0].upper()}{purpose[1:]}.", ""]
    if good:
        out += [f"::: {_griffe_path(package)}", "    options:", "      show_root_heading: false",
                "      show_root_toc_entry: false", "      show_submodules: false", "      heading_level: 3",
                "      members:", *[f"        - {n}" for n in good], ""]
    if bad:  # defined in another tree (adapters/ installs under frontier_qa) or bound at run time
        out += [f"Also exported (`from {package} import NAME`):", "", "| name | what it is |", "|---|---|",
                *[f"| `{n}` | {_summary(package, n)} |" for n in bad], ""]
    return out


def api_reference() -> str:
    """A mkdocstrings block per public package, its exported names listed explicitly; then the public modules."""
    out: list[str] = []
    for package, purpose in API_PACKAGES:
        out += _api_section(package, purpose)
    for module in public_modules():
        doc = inspect.getdoc(importlib.import_module(module)) or ""
        out += _api_section(module, "public module: " + (" ".join(doc.split("\n\n")[0].split()).rstrip(".") or module))
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
