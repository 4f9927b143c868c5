"""Reading the configuration's layers and resolving them: flags > file > environment > defaults.

Each layer holds its values and, per key path, where each was written
(``probe.yaml:12``, ``environment variable FRONTIER_QA_PROBING__K``, ``--set probing.k=0``), so
that :class:`Sources` can say where any value came from. :func:`load_config` merges the
layers and validates the result against :class:`~frontier_qa.config._schema.ProbeConfig`; the
trainers' loaders reuse the readers and :func:`resolve_layers`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails

from frontier_qa.config._diagnostics import report
from frontier_qa.config._schema import CONFIG_VERSION, ENV_PREFIX, MODEL_SECTIONS, Path_, ProbeConfig
from frontier_qa.errors import ConfigError, closest_name, read_text
from frontier_qa.redaction import is_secret_name, register_secrets, secret_values

M = TypeVar("M", bound=BaseModel)

# --- where values came from ---------------------------------------------------------------


@dataclass
class _Layer:
    """One source of values: its data and, per key path, where each key was written."""

    name: str
    data: dict[str, Any]
    where: dict[Path_, str]

    def has(self, path: Path_) -> bool:
        node: Any = self.data
        for key in path:
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
                node = node[key]
            else:
                return False
        return True


class Sources:
    """Answers "where was this key set?" across the layers (flags, file, environment)."""

    def __init__(self, layers: list[_Layer]) -> None:
        self.layers = layers  # highest precedence first

    def where(self, path: Path_) -> str:
        """The line, variable or flag that set ``path``; when nothing set it whole, what set a key
        inside it (``--set executor.trainig.max_steps=2`` is where ``executor.trainig`` came
        from), else its closest written parent.
        """
        for layer in self.layers:
            if path in layer.where and layer.has(path):
                return layer.where[path]
        n = len(path)
        for layer in self.layers:
            inside = [key for key in layer.where if len(key) > n and key[:n] == path and layer.has(key)]
            if inside:
                return layer.where[min(inside, key=len)]
        for n in range(len(path) - 1, 0, -1):
            for layer in self.layers:
                if path[:n] in layer.where and layer.has(path[:n]):
                    return layer.where[path[:n]]
        files = [layer.name for layer in self.layers if layer.name not in ("flags", "environment")]
        return files[0] if files else "defaults"


# --- reading the layers ---------------------------------------------------------------------


def _normalise(data: dict[str, Any], where: dict[Path_, str]) -> None:
    """Model sections given as a bare spec string become ``{spec: ...}`` (before merging)."""
    for path in MODEL_SECTIONS:
        node: Any = data
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(path[-1]), str):
            node[path[-1]] = {"spec": node[path[-1]]}
            if path in where:
                where[path + ("spec",)] = where[path]


def read_yaml(path: str | os.PathLike[str]) -> _Layer:
    """Read a config file, remembering the line of every key.

    Raises:
        ConfigError: missing file, YAML syntax error (with its line), a repeated key, or a
            document that is not a mapping.
    """
    file = Path(path)
    text = read_text(file, what="config", hint="check the --config path")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{file}{line}: not valid YAML: {problem}", hint="fix the YAML syntax at that line") from None
    if data is None:
        data, root = {}, None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}:1: a config is a mapping of sections, not a {type(data).__name__}",
                          hint="start with 'target:' (see configs/example.yaml)")
    lines: dict[Path_, str] = {}

    def walk(node: yaml.Node | None, at: Path_) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else str(key.value)
                here = at + (name,)
                if here in lines:
                    raise ConfigError(
                        f"{file}:{key.start_mark.line + 1}: key '{'.'.join(map(str, here))}' is repeated "
                        f"(first at {lines[here]})", hint="keep one of the two")
                lines[here] = f"{file}:{key.start_mark.line + 1}"
                walk(value, here)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[at + (i,)] = f"{file}:{item.start_mark.line + 1}"
                walk(item, at + (i,))

    walk(root, ())
    _normalise(data, lines)
    return _Layer(str(file), data, lines)


def _scalar(text: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (bool, int, float, list, dict)) or value is None else text


def _set(data: dict[str, Any], path: Path_, value: Any) -> None:
    node: dict[Any, Any] = data  # nested YAML mappings: keys are names or list indices
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


def read_env(env: Mapping[str, str]) -> _Layer:
    """The ``FRONTIER_QA_*`` layer (see the module docstring for the mapping)."""
    sections = set(ProbeConfig.model_fields)
    data: dict[str, Any] = {}
    where: dict[Path_, str] = {}
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX):
            continue
        path: Path_ = tuple(part.lower() for part in name[len(ENV_PREFIX):].split("__"))
        if path[0] not in sections:
            if len(path) > 1:  # nested names are only ever config keys: a misspelt section
                close = closest_name(str(path[0]), sections)
                raise ConfigError(f"environment variable {name}: unknown config section {path[0]!r}",
                                  hint=f"did you mean FRONTIER_QA_{close.upper()}__...?" if close
                                  else f"sections: {', '.join(sorted(sections))}")
            continue  # FRONTIER_QA_CACHE, FRONTIER_QA_SMOLLM2_GGUF ...: other parts of frontier-qa
        if any(not part for part in path):
            continue
        if path in MODEL_SECTIONS:  # FRONTIER_QA_TARGET=spec next to FRONTIER_QA_TARGET__OPTIONS__...
            path += ("spec",)
        # secrets stay strings: YAML would read an all-digit key as a number (0x12 as 18)
        value = env[name] if is_secret_name(str(path[-1])) else _scalar(env[name])
        _set(data, path, value)
        where[path] = f"environment variable {name}"
    _normalise(data, where)
    return _Layer("environment", data, where)


@dataclass(frozen=True)
class Override:
    """One flag's value for a config key: ``Override("budget.max_calls", 100, "--budget-calls")``."""

    key: str
    value: Any
    flag: str


def parse_set(text: str) -> Override:
    """Parse ``--set key.path=value`` (value read as a YAML scalar)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r} is not KEY=VALUE", hint="write e.g. --set probing.k=6")
    return Override(key.strip(), _scalar(value.strip()), f"--set {text}")


def read_overrides(overrides: Iterable[Override]) -> _Layer:
    """The ``--set KEY=VALUE`` layer: nested data, and where each key came from (for error messages)."""
    data: dict[str, Any] = {}
    where: dict[Path_, str] = {}
    for o in overrides:
        path: Path_ = tuple(o.key.split("."))
        if path in MODEL_SECTIONS and isinstance(o.value, str):
            path += ("spec",)
        _set(data, path, o.value)
        where[path] = o.flag
    _normalise(data, where)
    return _Layer("flags", data, where)


def _merge(low: dict[str, Any], high: dict[str, Any]) -> dict[str, Any]:
    out = dict(low)
    for key, value in high.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve_layers(layers: list[_Layer], *, version: int, hint: str) -> tuple[dict[str, Any], Sources]:
    """Merge ``layers`` (highest precedence first) into one dict, refusing a newer ``version`` key.

    Every config loader (probe, curriculum training, co-evolution) reads its layers this way.

    Args:
        layers: flags, file, environment... highest precedence first.
        version: the newest config version this frontier-qa reads.
        hint: the fix shown when the config is newer.

    Raises:
        ConfigError: the config's ``version`` is newer than ``version``.
    """
    data: dict[str, Any] = {}
    for layer in reversed(layers):
        data = _merge(data, layer.data)
    sources = Sources(layers)
    given = data.get("version")
    if isinstance(given, int) and not isinstance(given, bool) and given > version:
        raise ConfigError(f"{sources.where(('version',))}: version {given} is newer than this frontier-qa "
                          f"reads ({version})", hint=hint)
    return data, sources


def validate_layers(schema: type[M], layers: list[_Layer], data: dict[str, Any], sources: Sources,
                    report: Callable[[ValidationError, dict[str, Any], Sources], ConfigError]) -> M:
    """``data`` (the merged ``layers``, highest precedence first) as a ``schema``, and every value a
    lower layer writes checked too, even where a higher one overrides it: ``probing: {k: lots}``
    in the file is an error with ``--k 3`` on the command line as without it. A config is the
    user's contract; a bad value in it is never silently ignored.

    Args:
        schema: the config model.
        layers: flags, file, environment... highest precedence first.
        data: their merge (:func:`resolve_layers`).
        sources: where each key was set.
        report: the loader's error report, ``(error, data, sources) -> ConfigError``.

    Raises:
        ConfigError: the merged config is invalid, or a value a lower layer writes is (named at
            its own line, with the flag or variable that overrides it).
    """
    try:
        config = schema.model_validate(data)
    except ValidationError as err:
        raise report(err, data, sources) from None
    found: list[tuple[ConfigError, str]] = []
    for i, layer in enumerate(layers[1:], start=1):
        higher = layers[:i]
        hidden = {path: h.where[path] for h in reversed(higher) for path in layer.where
                  if path in h.where and h.has(path) and layer.has(path)}
        if not hidden:
            continue
        # the layer's own values where a higher layer overrides them; everything else as merged
        order = [layer, *higher, *layers[i + 1:]]
        shadow: dict[str, Any] = {}
        for each in reversed(order):
            shadow = _merge(shadow, each.data)
        try:
            schema.model_validate(shadow)
        except ValidationError as err:
            # the hidden values' own errors only: a rule across keys (``prompt`` needs ``style: plain``)
            # holds for the merged config, where the flag's value is the one in force
            own = [e for e in err.errors() if any(tuple(e["loc"][:len(p)]) == p for p in hidden)]
            if own:
                details: list[InitErrorDetails] = []
                for e in own:
                    detail = InitErrorDetails(type=e["type"], loc=e["loc"], input=e["input"])
                    if "ctx" in e:
                        detail["ctx"] = e["ctx"]
                    details.append(detail)
                wrong = ValidationError.from_exception_data(err.title, details)
                who = layer.name if layer.name != "environment" else "the environment"
                flags = sorted({hidden[p] for e in own for p in hidden if tuple(e["loc"][:len(p)]) == p})
                found.append((report(wrong, shadow, Sources(order)),
                              f"  ({who} is overridden here by {', '.join(flags)}, but every value it sets must be "
                              "valid)"))
    if found:
        first = found[0][0]
        raise ConfigError("\n".join(f"{error.message}\n{why}" for error, why in found), hint=first.hint,
                          key=first.key, source=first.source)
    return config


# --- loading ----------------------------------------------------------------------------------


AGENT_FILE_SCHEMES = ("python", "openai-agents", "langgraph", "pydantic-ai")
"""The specs that name an agent by ``MODULE:ATTR``, where the module may be a file."""


def python_file(spec: Any) -> tuple[str, str] | None:
    """The file and attribute of an agent file spec, ``python:path/to/agent.py:attr`` or a
    framework's (``openai-agents:path/agent.py:agent``; a name ending in .py or with a ``/``);
    ``None`` for any other spec, ``python:package.module:attr`` included (found on ``sys.path``).
    """
    if not isinstance(spec, str):
        return None
    kind, sep, rest = spec.partition(":")
    module_ref, colon, attr = rest.rpartition(":")
    if kind not in AGENT_FILE_SCHEMES or not sep or not colon or not (module_ref.endswith(".py") or "/" in module_ref):
        return None
    return module_ref, attr


def _spec_file(spec: Any) -> tuple[Path, str] | None:
    """The relative file a spec names and how to write the spec again around an absolute one:
    ``python:path/to/agent.py:attr`` (an agent file) and ``mock:path/to/script.yaml`` (a mock
    script: a name with a ``/`` or ending in .yaml, .yml or .json); ``None`` for any other spec
    (``python:package.module:attr`` is found on ``sys.path``; ``mock:right`` and the other presets,
    ``mock:inline``, are no files).
    """
    if not isinstance(spec, str):
        return None
    kind, sep, rest = spec.partition(":")
    if kind == "mock" and sep:
        if not (rest.endswith((".yaml", ".yml", ".json")) or "/" in rest):  # a preset, or inline
            return None
        file, template = Path(rest).expanduser(), "mock:{}"
    else:
        agent = python_file(spec)
        if agent is None:
            return None
        file, template = Path(agent[0]).expanduser(), f"{kind}:{{}}:{agent[1]}"
    return None if file.is_absolute() else (file, template)


def anchor_spec_files(data: dict[str, Any], layers: list[_Layer], folder: Path) -> None:
    """Files named by specs written in a config file (``python:`` agent files, ``mock:`` scripts)
    are found next to that file, not in the current directory: ``cd elsewhere && frontier-qa probe
    --config proj/cfg.yaml`` probes ``proj/agent.py``. The spec becomes absolute; the target keeps
    the id written in the file (``python:agent.py:run``), so its records and cache are the same
    from every directory. Specs given by a flag or the environment stay relative to the current
    directory.
    """
    for section in MODEL_SECTIONS:
        spec_path = (*section, "spec")
        setter = next((layer for layer in layers if layer.has(spec_path)), None)
        if setter is None or setter.name in ("flags", "environment"):
            continue
        node: Any = data
        for key in section:
            node = node.get(key) if isinstance(node, dict) else None
        found = _spec_file(node.get("spec")) if isinstance(node, dict) else None
        if found is None:
            continue
        file, template = found
        written = node["spec"]
        node["spec"] = template.format((folder / file).resolve())
        options = node.get("options")
        if options is None or isinstance(options, dict):
            node["options"] = {"id": written, **(options or {})}


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: Iterable[Override] = (),
    env: Mapping[str, str] | None = None,
) -> ProbeConfig:
    """Resolve the configuration: flags > the file at ``path`` > ``FRONTIER_QA_*`` > defaults.

    Args:
        path: the YAML config file (``None``: flags, environment and defaults only).
        overrides: flag values (:class:`Override`), e.g. from :func:`parse_set`.
        env: the environment (default ``os.environ``).

    Raises:
        ConfigError: every bad key, with where it was set and the fix.
    """
    layers = [read_overrides(overrides)]
    if path is not None:
        layers.append(read_yaml(path))
    layers.append(read_env(os.environ if env is None else env))
    data, sources = resolve_layers(layers, version=CONFIG_VERSION,
                                   hint="upgrade frontier-qa: reinstall it from its repository "
                                        "(git pull, then pip install -e . in the checkout)")
    if path is not None:
        anchor_spec_files(data, layers, Path(path).parent)
    config = validate_layers(ProbeConfig, layers, data, sources, report)
    register_secrets(secret_values(data))  # its keys and header values are masked everywhere from now on
    config._sources = sources
    return config
