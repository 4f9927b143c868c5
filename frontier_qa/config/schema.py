"""The probe configuration: one versioned YAML file, ``FRONTIER_QA_*`` variables and CLI flags.

Precedence, highest first: **flags** (``--target``, ``--set probing.k=6`` …) > **the config
file** > **environment** (``FRONTIER_QA_*``) > defaults. The environment is the machine's
fallback (a CI secret store sets ``FRONTIER_QA_TARGET``), the file is the project's choice,
a flag is this one run's exception.

Environment mapping: ``FRONTIER_QA_<SECTION>[__<KEY>...]``, ``__`` separating nesting levels,
names lower-cased, values read as YAML scalars (``100`` is a number, ``true`` a boolean,
``[a, b]`` a list; anything else stays the raw string)::

    FRONTIER_QA_TARGET=litellm:openai/gpt-4o-mini       → target.spec
    FRONTIER_QA_BUDGET__MAX_CALLS=500                   → budget.max_calls
    FRONTIER_QA_PROBING__K=6                            → probing.k
    FRONTIER_QA_TARGET__OPTIONS__API_BASE=http://…/v1   → target.options.api_base
    FRONTIER_QA_SHARD=2/4                               → shard

Only names whose first part is a section of :class:`ProbeConfig` are read; other
single-part ``FRONTIER_QA_*`` variables (``FRONTIER_QA_CACHE``, ``FRONTIER_QA_SMOLLM2_GGUF``) belong
to other parts of frontier-qa, and a nested name with an unknown section is an error. Values
of secret-named keys (``api_key``, ``token`` …) are kept as strings.

Model sections (``target``, ``curriculum.model``, ``validation.critic``, ``probing.judge``) may
be written as a bare spec string. String values of ``options`` may say ``${ENV_VAR}``
(resolved when the models are opened, so keys never sit in the file).

A bad configuration is a :class:`~frontier_qa.errors.ConfigError` naming each bad key, where it
came from (``probe.yaml:12``, ``FRONTIER_QA_PROBING__K``, ``--set probing.k=0``) and the fix,
with "did you mean" for misspelt keys and values; never a traceback. Relative paths (store,
output, curriculum files) are relative to the working directory.

:func:`build_probe` wires a config to the engine's parts: the target (limits, one run budget
shared by every model of the run, the sample cache under the store), the curriculum, the
validator (with SAGE's critic when configured), the judge, the store and the settings.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Optional, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from frontier_qa.scoring.bands import AGENT0_BAND, TOOL_R0_BAND, Band
from frontier_qa.curricula.base import Curriculum
from frontier_qa.errors import ConfigError
from frontier_qa.reports.gate import GateThresholds
from frontier_qa.runtime.budget import BudgetTracker
from frontier_qa.runtime.cache import SampleCache
from frontier_qa.runtime.limits import Budget, Limits
from frontier_qa.runtime.redact import is_secret_name
from frontier_qa.probing.sequential import SequentialConfig
from frontier_qa.store.case_store import CaseStore, Shard, StoreError
from frontier_qa.target import Sampling, Target
from frontier_qa.probing.validation import Validator

if TYPE_CHECKING:
    from frontier_qa.probing.engine import ProbeSettings

CONFIG_VERSION = 1
ENV_PREFIX = "FRONTIER_QA_"
MODEL_SECTIONS = (("target",), ("curriculum", "model"), ("validation", "critic"), ("probing", "judge"))
Path_ = tuple[Union[str, int], ...]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


def _spec_shorthand(value: Any) -> Any:
    return {"spec": value} if isinstance(value, str) else value


# --- sections ----------------------------------------------------------------------------


class BackoffConfig(_Section):
    """Waits between retries of one call, in seconds (see :class:`frontier_qa.runtime.Backoff`)."""

    initial_s: float = Field(1.0, ge=0)
    max_s: float = Field(60.0, ge=0)
    jitter_s: float = Field(1.0, ge=0)
    max_retry_after_s: float = Field(300.0, ge=0)


class LimitsConfig(_Section):
    """How one model may be called (see :class:`frontier_qa.runtime.Limits`)."""

    rpm: Optional[float] = Field(None, gt=0, description="requests per minute; null: no limit")
    tpm: Optional[float] = Field(None, gt=0, description="tokens per minute; null: no limit")
    max_concurrency: int = Field(16, ge=1, description="backend calls in flight at once")
    timeout_s: Optional[float] = Field(120.0, gt=0, description="seconds per call before a retry")
    max_retries: int = Field(5, ge=0)
    backoff: BackoffConfig = Field(default_factory=BackoffConfig)
    max_consecutive_failures: Optional[int] = Field(25, ge=1)
    rpm_burst: int = Field(1, ge=1)


class ModelConfig(_Section):
    """A model used by the run (curriculum, critic, judge): a target spec and its options."""

    spec: str = Field(min_length=1, description="target spec, e.g. litellm:openai/gpt-4o-mini or hf:/path")
    options: dict[str, Any] = Field(default_factory=dict, description="adapter options (api_base, api_key: ${VAR})")
    limits: LimitsConfig = Field(default_factory=LimitsConfig)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _spec_shorthand(value)


class TargetConfig(_Section):
    """The target under test."""

    spec: Optional[str] = Field(None, min_length=1, description="target spec; --target / FRONTIER_QA_TARGET")
    options: dict[str, Any] = Field(default_factory=dict, description="adapter options (api_base, api_key: ${VAR})")
    tool_options: dict[str, Any] = Field(default_factory=dict, description="tools+ specs: executor options")
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    cache: Union[bool, str] = Field(True, description="true: <store>/cache; false: off; or a directory")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _spec_shorthand(value)


class BudgetConfig(_Section):
    """What the whole run may spend: target, curriculum model, critic and judge together."""

    max_calls: Optional[int] = Field(None, ge=0, description="backend calls (each retry counts)")
    max_tokens: Optional[int] = Field(None, ge=0, description="prompt + completion tokens")
    max_cost_usd: Optional[float] = Field(None, ge=0, description="US dollars")
    max_wall_s: Optional[float] = Field(None, ge=0, description="seconds since the first call")


class SamplingConfig(_Section):
    """Sampling of a model (see :class:`frontier_qa.target.Sampling`)."""

    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(512, ge=1)
    stop: list[str] = Field(default_factory=list)
    seed: Optional[int] = Field(None, description="null: probing.seed")


class CurriculumConfig(_Section):
    """Where cases come from."""

    type: Literal["prompted", "file", "trained"] = Field(
        "prompted", description="prompted: a model writes tasks; file: cases from path; trained: an hf: checkpoint"
    )
    model: Optional[ModelConfig] = Field(None, description="prompted/trained: the model that writes tasks")
    domain: Literal["math", "general", "tools", "open_ended", "workflow"] = "math"
    topics: list[str] = Field(default_factory=list, description="topics to rotate through (empty: the model picks)")
    tools: Optional[str] = Field(None, description="JSON/YAML file of OpenAI tool schemas (domain tools/workflow)")
    agent_description: Optional[str] = Field(None, description="what the agent under test does (domain workflow)")
    answer_format: Optional[Literal["text", "final_answer"]] = Field(None, description="domain workflow only")
    path: Optional[str] = Field(None, description="file: JSONL/YAML cases or an exported suite")
    shuffle: bool = False
    limit: Optional[int] = Field(None, ge=0, description="file: propose at most this many cases")
    sampling: SamplingConfig = Field(
        default_factory=lambda: SamplingConfig(temperature=1.0, top_p=0.99, max_tokens=1024)  # Agent0 A.1
    )
    history_examples: int = Field(3, ge=0)
    ask_solution: bool = True
    ask_difficulty: bool = True
    style: Literal["instruct", "few_shot"] = Field(
        "instruct", description="instruct: tagged templates; few_shot: worked examples, for small models (math/general)"
    )
    examples: Optional[str] = Field(None, description="few_shot: JSONL/YAML worked examples {problem, answer, program}")


class CriticConfig(ModelConfig):
    """SAGE's question critic (a stronger model than the target is best)."""

    threshold: float = Field(0.7, ge=0, le=1, description="least score / 10 that passes (SAGE α)")
    on_error: Literal["reject", "accept"] = "reject"


class ValidationConfig(_Section):
    """Checks on proposals before any target call."""

    critic: Optional[CriticConfig] = None
    dedupe_threshold: Optional[float] = Field(0.5, gt=0, le=1, description="BLEU distance τ; null: off")


class BandRange(_Section):
    """A custom frontier band, inclusive, on p̂."""

    low: float = Field(ge=0, le=1)
    high: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> BandRange:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) is above high ({self.high}); write e.g. {{low: 0.3, high: 0.8}}")
        return self


class ProbingConfig(_Section):
    """How cases are sampled, classified and when the run stops."""

    k: int = Field(10, ge=1, description="samples per case (k_max with sequential sampling)")
    sequential: bool = Field(True, description="stop sampling a case once its band is clear")
    confidence: float = Field(0.9, gt=0.5, lt=1, description="sequential: posterior confidence to stop")
    band: Union[Literal["agent0", "tool-r0"], BandRange] = Field(
        "agent0", description="agent0 (0.3 ≤ p̂ ≤ 0.8), tool-r0 (0.25–0.75) or {low, high}"
    )
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    batch_size: int = Field(8, ge=1, description="proposals asked per round")
    max_candidates: Optional[int] = Field(200, ge=0, description="proposals considered in total; null: no cap")
    saturation_window: int = Field(100, ge=1)
    saturation_min_new: int = Field(1, ge=0)
    concurrency: int = Field(8, ge=1, description="cases sampled at once")
    predict_difficulty: bool = False
    explore_rate: float = Field(0.1, ge=0, le=1)
    judge: Optional[ModelConfig] = Field(None, description="a stronger model asked whether stable answers are right")
    verify_references: bool = True
    seed: int = 0
    replay_first: bool = Field(True, description="replay stored cases before generating new ones")
    replay_scope: Literal["target", "all"] = "target"
    max_replay: Optional[int] = Field(None, ge=0)
    embedder: Optional[str] = Field(None, description="open-ended answers: embedding model (null: bundled MiniLM)")


class GateConfig(_Section):
    """CI gate limits; null turns a check off (see :class:`frontier_qa.reports.GateThresholds`)."""

    max_failures: Optional[int] = Field(0, ge=0)
    max_suspects: Optional[int] = Field(None, ge=0)
    max_frontier_share: Optional[float] = Field(None, ge=0, le=1)
    max_unresolved_share: Optional[float] = Field(None, ge=0, le=1)
    max_regressions: Optional[int] = Field(0, ge=0)
    max_flaky: Optional[int] = Field(None, ge=0)


class ReplayGateConfig(GateConfig):
    """The replay gate: regressions fail it; known failures in a suite do not (by default)."""

    max_failures: Optional[int] = Field(None, ge=0)


class ReplayConfig(_Section):
    """``frontier-qa replay``: what is replayed and its gate."""

    suite: Optional[str] = Field(None, description="a committed suite (frontier-qa export); null: the store")
    gate: ReplayGateConfig = Field(default_factory=ReplayGateConfig)


class OutputConfig(_Section):
    """The report folder."""

    dir: str = "frontier-qa-report"
    formats: list[Literal["json", "junit", "md", "html"]] = Field(
        default_factory=lambda: ["json", "junit", "md", "html"]  # type: ignore[arg-type]
    )
    frontier_as_failure: bool = Field(False, description="junit.xml: frontier cases fail")


class ProbeConfig(_Section):
    """Everything ``frontier-qa probe`` and ``replay`` need (YAML layout, version 1)."""

    version: Literal[1] = CONFIG_VERSION
    target: TargetConfig = Field(default_factory=TargetConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    curriculum: CurriculumConfig = Field(default_factory=CurriculumConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    probing: ProbingConfig = Field(default_factory=ProbingConfig)
    store: str = Field(".frontier-qa", description="case store directory")
    output: OutputConfig = Field(default_factory=OutputConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    replay: ReplayConfig = Field(default_factory=ReplayConfig)
    shard: Optional[str] = Field(None, description="CI shard i/n, e.g. 2/4")

    _sources: Any = PrivateAttr(default=None)  # Sources, set by load_config

    @field_validator("shard")
    @classmethod
    def _shard(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                Shard.parse(value)
            except StoreError as err:
                raise ValueError(f"{err.message}; write i/n with 1 <= i <= n, e.g. 2/4") from None
        return value

    def where(self, path: str | Path_) -> str:
        """Where a key's value came from: ``probe.yaml:12``, an environment variable or a flag."""
        keys = tuple(path.split(".")) if isinstance(path, str) else path
        return self._sources.where(keys) if self._sources is not None else "defaults"

    def error(self, path: str, message: str, hint: str) -> ConfigError:
        """A :class:`ConfigError` about key ``path`` (dotted), naming where it was set."""
        return ConfigError(f"{self.where(path)}: {path}: {message}", hint=hint)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (``frontier-qa schema``; editors validate with it)."""
    schema = ProbeConfig.model_json_schema()
    spec_refs = {f"#/$defs/{m.__name__}" for m in (ModelConfig, CriticConfig, TargetConfig)}

    def shorthand(node: Any) -> Any:  # a model section may be a bare spec string
        if isinstance(node, dict):
            if node.get("$ref") in spec_refs:
                return {"anyOf": [{"type": "string", "description": "a target spec"}, node]}
            return {k: shorthand(v) for k, v in node.items()}
        return [shorthand(v) for v in node] if isinstance(node, list) else node

    schema = shorthand(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "frontier-qa probe configuration"
    return schema


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
        """The line, variable or flag that set ``path`` (or its closest written parent)."""
        for n in range(len(path), 0, -1):
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
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read config {file}: {err.strerror}", hint="check the --config path") from None
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
    node = data
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
                close = difflib.get_close_matches(str(path[0]), sorted(sections), n=1)
                raise ConfigError(f"environment variable {name}: unknown config section {path[0]!r}",
                                  hint=f"did you mean FRONTIER_QA_{close[0].upper()}__...?" if close
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


# --- errors ----------------------------------------------------------------------------------


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _literals_in(annotation: Any) -> list[str]:
    if get_origin(annotation) is Literal:
        return [str(a) for a in get_args(annotation)]
    return [v for arg in get_args(annotation) for v in _literals_in(arg)]


def _clean(loc: tuple[Any, ...], data: Any) -> tuple[Path_, list[type[BaseModel]], Any]:
    """Pydantic's error location as a key path (union tags dropped), the models at its
    parent, and the field annotation at its end."""
    models: list[type[BaseModel]] = [ProbeConfig]
    parents = models
    node: Any = data
    path: list[str | int] = []
    annotation: Any = ProbeConfig
    for part in loc:
        fields = {name: m.model_fields[name] for m in models for name in m.model_fields}
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


def _describe(error: Mapping[str, Any], data: dict[str, Any], sources: Sources) -> tuple[Path_, str]:
    path, parents, annotation = _clean(tuple(error["loc"]), data)
    key = ".".join(map(str, path)) or "(top level)"
    where = sources.where(path) if path else sources.where(("version",))
    kind = error["type"]
    given = error.get("input")
    if kind == "extra_forbidden":
        name = str(path[-1])
        known = sorted({f for m in parents for f in m.model_fields})
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        fix = f"did you mean '{close[0]}'?" if close else f"known keys here: {', '.join(known)}"
        return path, f"{where}: {key}: unknown key\n  fix: {fix}"
    if kind == "missing":
        return path, f"{where}: {key}: required key is missing\n  fix: add '{path[-1]}:'"
    if kind == "literal_error" and isinstance(given, str):
        choices = _literals_in(annotation) or [str(error.get("ctx", {}).get("expected", ""))]
        close = difflib.get_close_matches(given, choices, n=1, cutoff=0.5)
        fix = (f"did you mean '{close[0]}'? " if close else "") + f"use one of: {', '.join(choices)}"
        if _models_in(annotation):
            fix += " (or a mapping such as {low: 0.3, high: 0.8})"
        return path, f"{where}: {key}: {given!r} is not allowed\n  fix: {fix}"
    shown = "" if isinstance(given, (dict, list)) or given is None else f" (got {given!r})"
    message = str(error["msg"]).removeprefix("Value error, ")
    ctx = error.get("ctx") or {}
    bound = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
             "less_than_equal": "<= {le}"}.get(kind)
    if bound is not None:
        fix = f"set {key} to a number {bound.format(**ctx)}"
    else:
        fix = _FIXES.get(kind.split("_")[0], "").format(key=key) or f"see `frontier-qa schema` for {key}"
    return path, f"{where}: {key}: {message}{shown}\n  fix: {fix}"


def _report(err: ValidationError, data: dict[str, Any], sources: Sources) -> ConfigError:
    described: dict[Path_, list[tuple[bool, str]]] = {}
    for error in err.errors():
        path, text = _describe(error, data, sources)
        # a union (band: a preset or a mapping) fails once per member; the telling error is
        # the one of the member the value was meant for: not a type mismatch, nor a preset
        # name check on a mapping
        kind = error["type"]
        off = kind.endswith("_type") or (kind == "literal_error" and not isinstance(error.get("input"), str))
        described.setdefault(path, []).append((off, text))
    lines = []
    for entries in sorted(described.values(), key=lambda e: _line_of(e[0][1].split(": ", 1)[0])):
        lines.append(next((t for off, t in entries if not off), entries[0][1]))
    head = "the configuration is invalid:" if len(lines) > 1 else "the configuration is invalid: "
    body = "\n".join(f"  {line}".replace("\n  fix:", "\n    fix:") for line in lines) if len(lines) > 1 else lines[0]
    return ConfigError(head + ("\n" if len(lines) > 1 else "") + body,
                       hint="`frontier-qa schema` prints every key; configs/example.yaml explains them")


# --- loading ----------------------------------------------------------------------------------


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
                                   hint="upgrade frontier-qa (pip install -U frontier-qa)")
    try:
        config = ProbeConfig.model_validate(data)
    except ValidationError as err:
        raise _report(err, data, sources) from None
    config._sources = sources
    return config


# --- wiring: config → the engine's parts --------------------------------------------------------


class ProbeParts(NamedTuple):
    """What :func:`build_probe` wires; unpacks as ``(target, curriculum, settings, store,
    validator, judge)``. ``curriculum`` is ``None`` when it was not asked for (replay)."""

    target: Target
    curriculum: Curriculum | None
    settings: ProbeSettings
    store: CaseStore
    validator: Validator
    judge: Target | None

    async def aclose(self) -> None:
        """Close every model the parts opened (target, curriculum model, critic, judge)."""
        critic = getattr(self.validator.critic, "model", None)
        for part in (self.curriculum, critic, self.judge, self.target):
            close = getattr(part, "aclose", None)
            if close is not None:
                await close()


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def resolve_options(config: Any, section: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Adapter options with ``${VAR}`` resolved from the environment (top-level strings only:
    nested mappings such as HTTP headers are resolved by their adapter).

    ``config`` is any loaded config with ``error(key, message, hint)`` (the probe's or the
    trainer's), so an unset variable is reported by key and where it was set."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if isinstance(value, str):
            missing = [m.group(1) for m in _ENV_REF.finditer(value) if m.group(1) not in os.environ]
            if missing:
                raise config.error(f"{section}.options.{name}", f"refers to ${{{missing[0]}}}, which is not set",
                                   f"export {missing[0]}=... before running")
            value = _ENV_REF.sub(lambda m: os.environ[m.group(1)], value)
        out[name] = value
    return out


def budget_tracker(config: ProbeConfig) -> BudgetTracker:
    """One tracker for the whole run: every model of it spends from the same budget."""
    return BudgetTracker(Budget(**config.budget.model_dump()))


def sample_cache(config: ProbeConfig) -> SampleCache | bool:
    """The sample cache: ``<store>/cache`` by default, a directory, or ``False`` (off)."""
    cache = config.target.cache
    if cache is False:
        return False
    return SampleCache(Path(config.store) / "cache" if cache is True else Path(str(cache)))


def _open(config: ProbeConfig, section: str, model: ModelConfig | TargetConfig, tracker: BudgetTracker,
          cache: SampleCache | bool, **extra: Any) -> Target:
    from frontier_qa.runtime import open_target

    assert model.spec is not None
    try:
        return open_target(model.spec, limits=Limits.from_dict(model.limits.model_dump()), budget=tracker,
                           cache=cache, **extra, **resolve_options(config, section, model.options))
    except ConfigError as err:
        if err.message.startswith(config.where(f"{section}.spec")):
            raise
        raise config.error(f"{section}.spec", err.message, err.hint or "check the spec and its options") from None


def build_settings(config: ProbeConfig) -> ProbeSettings:
    """The engine's :class:`~frontier_qa.probing.settings.ProbeSettings` from ``probing`` and ``shard``."""
    from frontier_qa.probing.engine import ProbeSettings

    p = config.probing
    if isinstance(p.band, BandRange):
        band = Band(p.band.low, p.band.high, name="custom")
    else:
        band = TOOL_R0_BAND if p.band == "tool-r0" else AGENT0_BAND
    s = p.sampling
    return ProbeSettings(
        band=band,
        k=p.k,
        sequential=SequentialConfig(confidence=p.confidence) if p.sequential else None,
        sampling=Sampling(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                          stop=tuple(s.stop), seed=s.seed),
        batch_size=p.batch_size,
        max_candidates=p.max_candidates,
        saturation_window=p.saturation_window,
        saturation_min_new=p.saturation_min_new,
        max_concurrent_cases=p.concurrency,
        explore_rate=p.explore_rate,
        predict_difficulty=p.predict_difficulty,
        seed=p.seed,
        shard=Shard.parse(config.shard) if config.shard else None,
        replay_first=p.replay_first,
        verify_references=p.verify_references,
        replay_scope=p.replay_scope,
        max_replay=p.max_replay,
        embedder=p.embedder,
    )


def gate_thresholds(gate: GateConfig) -> GateThresholds:
    """The gate section as :class:`~frontier_qa.reports.GateThresholds`."""
    return GateThresholds(**gate.model_dump())


def load_tools(config: ProbeConfig) -> list[dict[str, Any]]:
    """The OpenAI tool schemas of ``curriculum.tools`` (a JSON or YAML list, or ``{tools: [...]}``)."""
    path = config.curriculum.tools
    if path is None:
        return []
    try:
        text = Path(path).read_text(encoding="utf-8")
        loaded = yaml.safe_load(text)  # JSON is YAML
    except OSError as err:
        raise config.error("curriculum.tools", f"cannot read {path}: {err.strerror}", "check the path") from None
    except yaml.YAMLError as err:
        raise config.error("curriculum.tools", f"{path} is not valid JSON/YAML: {err}", "fix the file") from None
    if isinstance(loaded, dict) and "tools" in loaded:
        loaded = loaded["tools"]
    if not isinstance(loaded, list) or not all(isinstance(t, dict) for t in loaded):
        raise config.error("curriculum.tools", f"{path} must hold a list of tool schemas",
                           'write [{"type": "function", "function": {"name": ..., "parameters": ...}}, ...]')
    return loaded


def load_examples(config: ProbeConfig) -> list[dict[str, Any]] | None:
    """The few-shot worked examples of ``curriculum.examples`` (a JSONL file or a YAML/JSON list)."""
    path = config.curriculum.examples
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
        if path.endswith(".jsonl"):
            loaded: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            loaded = yaml.safe_load(text)
    except OSError as err:
        raise config.error("curriculum.examples", f"cannot read {path}: {err.strerror}", "check the path") from None
    except (ValueError, yaml.YAMLError) as err:
        raise config.error("curriculum.examples", f"{path} is not valid JSONL/YAML: {err}", "fix the file") from None
    if not isinstance(loaded, list) or not all(isinstance(row, dict) for row in loaded):
        raise config.error("curriculum.examples", f"{path} must hold a list of worked examples",
                           'write rows like {"problem": "...", "answer": "...", "program": "print(...)"}')
    from frontier_qa.curricula.few_shot import load_examples as check_examples

    try:
        check_examples(loaded)
    except ConfigError as err:
        raise config.error("curriculum.examples", f"{path}: {err.message}", err.hint or "fix the file") from None
    return loaded


def build_curriculum(config: ProbeConfig, tracker: BudgetTracker, cache: SampleCache | bool) -> Curriculum:
    """The curriculum: cases from a file, or a (trained) model prompted for tasks."""
    c = config.curriculum
    if c.type == "file":
        if not c.path:
            raise config.error("curriculum.type", "a file curriculum needs curriculum.path",
                               "set curriculum.path to a JSONL/YAML file of cases (or pass --curriculum FILE)")
        from frontier_qa.curricula.file import FileCurriculum

        return FileCurriculum(c.path, shuffle=c.shuffle, seed=config.probing.seed, limit=c.limit)
    if c.model is None:
        example = "hf:/runs/curriculum/checkpoint-50" if c.type == "trained" else "litellm:openai/gpt-4o-mini"
        raise config.error("curriculum.type", f"a {c.type} curriculum needs curriculum.model",
                           f"set curriculum.model to a target spec, e.g. {example}")
    model = c.model
    if c.type == "trained" and not model.spec.startswith("hf:"):
        if ":" in model.spec.split("/", 1)[0]:
            raise config.error("curriculum.model.spec", f"{model.spec!r} is not a trained checkpoint",
                               "a trained curriculum is an hf:/path/to/checkpoint (or use type: prompted)")
        model = model.model_copy(update={"spec": f"hf:{model.spec}"})
    if c.domain == "tools" and not c.tools:
        raise config.error("curriculum.domain", "the tools domain writes tasks for your tools, but none are given",
                           "set curriculum.tools to a JSON/YAML file of OpenAI tool schemas (or pass --tools FILE)")
    if c.domain == "workflow" and not (c.agent_description or "").strip():
        raise config.error("curriculum.domain", "the workflow domain needs a description of the agent under test",
                           "set curriculum.agent_description, e.g. 'a support agent that can search and refund orders'")
    from frontier_qa.curricula.prompted import PromptedCurriculum

    tools = load_tools(config)
    examples = load_examples(config)
    opened = _open(config, "curriculum.model", model, tracker, cache)
    s = c.sampling
    try:
        return PromptedCurriculum(
            opened,
            domain=c.domain,
            tools=tools,
            agent_description=c.agent_description,
            topics=c.topics or None,
            sampling=Sampling(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                              stop=tuple(s.stop), seed=s.seed),
            seed=config.probing.seed,
            history_examples=c.history_examples,
            ask_solution=c.ask_solution,
            ask_difficulty=c.ask_difficulty,
            answer_format=c.answer_format,
            close_model=True,
            style=c.style,
            examples=examples,
            dedupe_threshold=config.validation.dedupe_threshold,
        )
    except ConfigError as err:
        _close_now([opened])
        key = ("curriculum.examples" if err.message.startswith("examples are used")
               else "curriculum.style" if "style" in err.message else "curriculum.domain")
        raise config.error(key, err.message, err.hint or "see configs/example.yaml") from None


def build_probe(config: ProbeConfig, *, curriculum: bool = True) -> ProbeParts:
    """Wire a config to the engine's parts.

    Args:
        config: the resolved configuration (:func:`load_config`).
        curriculum: also build the curriculum (``False`` for replay, which needs none).

    Returns:
        :class:`ProbeParts`: ``(target, curriculum, settings, store, validator, judge)``;
        ``await parts.aclose()`` closes every model it opened.

    Raises:
        ConfigError: no target, a missing curriculum model or file, an unknown spec, an
            unset ``${VAR}``; the message names the key and where it was set.
    """
    if not config.target.spec:
        raise config.error("target.spec", "no target to probe",
                           "pass --target SPEC, set 'target:' in the config, or export FRONTIER_QA_TARGET")
    settings = build_settings(config)
    tracker = budget_tracker(config)
    cache = sample_cache(config)
    tool_options = {"tool_options": config.target.tool_options} if config.target.tool_options else {}
    target = _open(config, "target", config.target, tracker, cache, **tool_options)
    opened: list[Any] = [target]
    try:
        cur = build_curriculum(config, tracker, cache) if curriculum else None
        opened.append(cur)
        critic = None
        if config.validation.critic is not None:
            from frontier_qa.curricula.critic import SageCritic

            c = config.validation.critic
            critic_model = _open(config, "validation.critic", c, tracker, cache)
            opened.append(critic_model)
            critic = SageCritic(critic_model, c.threshold, on_error=c.on_error)
        judge = _open(config, "probing.judge", config.probing.judge, tracker, cache) if config.probing.judge else None
        validator = Validator(critic=critic, dedupe_threshold=config.validation.dedupe_threshold)
    except BaseException:
        _close_now(opened)
        raise
    return ProbeParts(target, cur, settings, CaseStore(config.store), validator, judge)


def _close_now(parts: Iterable[Any]) -> None:
    # building failed half-way: close what was opened (no event loop is running here)
    import asyncio

    async def close() -> None:
        for part in parts:
            if hasattr(part, "aclose"):
                await part.aclose()

    asyncio.run(close())


__all__ = [
    "CONFIG_VERSION",
    "BackoffConfig",
    "BandRange",
    "BudgetConfig",
    "CriticConfig",
    "CurriculumConfig",
    "GateConfig",
    "LimitsConfig",
    "ModelConfig",
    "OutputConfig",
    "Override",
    "ProbeParts",
    "ProbeConfig",
    "ProbingConfig",
    "ReplayConfig",
    "ReplayGateConfig",
    "SamplingConfig",
    "Sources",
    "TargetConfig",
    "ValidationConfig",
    "budget_tracker",
    "build_curriculum",
    "build_probe",
    "build_settings",
    "gate_thresholds",
    "json_schema",
    "load_config",
    "load_tools",
    "parse_set",
    "read_env",
    "read_yaml",
    "sample_cache",
]
