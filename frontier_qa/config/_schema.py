"""The probe config file's schema: one pydantic section per key of the YAML (version 1).

A concept the runtime also uses (``Sampling``, ``Limits``, ``Backoff``, ``Budget``,
``GateThresholds`` ...) is one frozen class, defined in the layer that uses it and imported here
as the section's type: no parallel config class, no mapping.
Every section forbids unknown keys, so a misspelt key is an error that names it
(:mod:`~frontier_qa.config._diagnostics`). Model sections (``target``, ``curriculum.model``,
``validation.critic``, ``probing.judge``) may be written as a bare spec string.
:func:`json_schema` is what ``frontier-qa schema`` prints (``configs/probe.schema.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic.fields import FieldInfo

from frontier_qa._frozen import field_of, frozen_value
from frontier_qa.curricula._spec import CURRICULUM_SAMPLING, Domain
from frontier_qa.errors import ConfigError
from frontier_qa.probing._sequential import DEFAULT_POLICY, MajorityPrior, policy
from frontier_qa.probing._set_labels import Labelling
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.reports._gate import GateThresholds
from frontier_qa.runtime._limits import Backoff, Budget, Limits  # noqa: F401 (re-exported: the config's sections)
from frontier_qa.scoring._paths import PassKSettings, PathSettings
from frontier_qa.scoring.bands import AGENT0_BAND, NAMED_BANDS, TOOL_R0_BAND, Band
from frontier_qa.store._comparison import RegressionPolicy
from frontier_qa.store._records import PriorVersions
from frontier_qa.store._shards import Shard
from frontier_qa.store._store_error import StoreError
from frontier_qa.target import Sampling

CONFIG_VERSION: Final = 1
ENV_PREFIX = "FRONTIER_QA_"
MODEL_SECTIONS = (("target",), ("curriculum", "model"), ("validation", "critic"), ("validation", "validity", "model"),
                  ("probing", "judge"))
Path_ = tuple[str | int, ...]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


def _spec_shorthand(value: Any) -> Any:
    return {"spec": value} if isinstance(value, str) else value


# --- sections ----------------------------------------------------------------------------


class ModelConfig(_Section):
    """A model used by the run (curriculum, critic, judge): a target spec and its options."""

    spec: str = Field(min_length=1, description="target spec, e.g. litellm:openai/gpt-4o-mini or hf:/path")
    options: dict[str, Any] = Field(default_factory=dict, description="adapter options (api_base, api_key: ${VAR})")
    limits: Limits = Field(default_factory=Limits)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _spec_shorthand(value)


class TargetConfig(_Section):
    """The target under test."""

    spec: str | None = Field(None, min_length=1, description="target spec; --target / FRONTIER_QA_TARGET")
    options: dict[str, Any] = Field(default_factory=dict, description="adapter options (api_base, api_key: ${VAR})")
    tool_options: dict[str, Any] = Field(default_factory=dict, description="tools+ specs: executor options")
    limits: Limits = Field(default_factory=Limits)
    cache: bool | str = Field(True, description="true: <store>/cache; false: off (--no-cache); or a directory")
    version: str | None = Field(
        None, min_length=1,
        description="the target's version (model revision, deployment tag): in every cache key and record; "
                    "python: agents add a hash of their source to it")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _spec_shorthand(value)


class BoundarySearchConfig(_Section):
    """How a generators curriculum searches each knob for where P(correct) falls through the band's ends."""

    instances: int = Field(3, ge=1, description="new task instances per batch at a knob value")
    samples: int = Field(2, ge=1, description="samples per instance (2 or more gives each instance a p̂)")
    min_instances: int = Field(3, ge=1, description="instances a knob value needs before it is decided")
    max_instances: int = Field(18, ge=1, description="instances at most per knob value; undecided there: close")
    confidence: float = Field(0.9, gt=0.5, lt=1.0, description="posterior probability that decides a knob value")
    stride: int | None = Field(None, ge=1, description="coarse pass stride in knob values (default: a quarter)")
    evidence: bool = Field(True, description="record a case on each side of each crossing (probed to a verdict)")
    shrink: bool = Field(True, description="shrink each failure to the smallest knob values where it still fails")
    shrink_tries: int = Field(2, ge=1, description="fresh instances tried per candidate value while shrinking")

    @model_validator(mode="after")
    def _consistent(self) -> BoundarySearchConfig:
        if self.max_instances < max(self.min_instances, self.instances):
            raise ValueError("max_instances must be at least min_instances and instances")
        return self


class CurriculumConfig(_Section):
    """Where cases come from."""

    type: Literal["prompted", "file", "trained", "generators"] = Field(
        "prompted", description="prompted: a model writes tasks; file: cases from path; trained: an hf: checkpoint; "
                                "generators: task generators with difficulty knobs, searched for boundaries"
    )
    generators: list[str | dict[str, Any]] = Field(
        default_factory=list, description="generators: built-in names (arithmetic, number_words, dates, units, "
                                          "word_problems), FILE.py:NAME / MODULE:NAME, or {use, knobs} entries")
    search: BoundarySearchConfig = Field(default_factory=BoundarySearchConfig)
    model: ModelConfig | None = Field(None, description="prompted/trained: the model that writes tasks")
    domain: Domain = "math"
    topics: list[str] = Field(default_factory=list, description="topics to rotate through (empty: the model picks)")
    topic_from: Literal["text", "asked"] = Field(
        "text", description="a generated task's topic: the nearest of `topics` to its text (sentence embedding, the "
                            "embed extra), or the topic it was asked for")
    tools: str | None = Field(None, description="JSON/YAML file of OpenAI tool schemas (domain tools/workflow)")
    agent_description: str | None = Field(None, description="what the agent under test does (domain workflow)")
    answer_format: Literal["text", "final_answer"] | None = Field(None, description="domain workflow only")
    path: str | None = Field(None, description="file: JSONL/YAML cases or an exported suite")
    shuffle: bool = False
    limit: int | None = Field(None, ge=0, description="file: propose at most this many cases")
    sampling: Sampling = Field(default_factory=lambda: CURRICULUM_SAMPLING)  # Agent0 A.1
    history_examples: int = Field(3, ge=0)
    ask_solution: bool = True
    ask_difficulty: bool = True
    style: Literal["instruct", "few_shot"] = Field(
        "instruct", description="instruct: tagged templates; few_shot: worked examples, for small models (math/general)"
    )
    examples: str | None = Field(None, description="few_shot: JSONL/YAML worked examples {problem, answer, program}")


class CriticConfig(ModelConfig):
    """SAGE's question critic (a stronger model than the target is best)."""

    threshold: float = Field(0.7, ge=0, le=1, description="least score / 10 that passes (SAGE α)")
    on_error: Literal["reject", "accept"] = "reject"


VALIDITY_JUDGES = ("rules", "curriculum", "model", "off")


class ValidityConfig(_Section):
    """Who judges whether a generated task is well-posed before the target is called (README: Is the
    task well-posed?). ``validity: rules`` is short for ``validity: {judge: rules}``; a ``model``
    without a ``judge`` means ``judge: model``.
    """

    judge: Literal["rules", "curriculum", "model", "off"] = Field(
        "rules", description="rules: patterns of ill-posed tasks (free; rejects, never vouches); curriculum: rules, "
                             "then the curriculum model; model: rules, then validation.validity.model; off: none")
    model: ModelConfig | None = Field(None, description="judge: model: a stronger model that judges each task")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"judge": value}
        if isinstance(value, Mapping) and value.get("model") is not None and "judge" not in value:
            return {**value, "judge": "model"}
        return value

    @model_validator(mode="after")
    def _model_given(self) -> ValidityConfig:
        if self.judge == "model" and self.model is None:
            raise ValueError("judge: model needs validity.model, a target spec (e.g. litellm:openai/gpt-4o-mini)")
        return self


class ValidationConfig(_Section):
    """Checks on proposals before any target call."""

    critic: CriticConfig | None = None
    validity: ValidityConfig = Field(default_factory=ValidityConfig)
    dedupe_threshold: float | None = Field(
        0.5, ge=0, le=1, description="BLEU distance τ below which a generated proposal repeats an earlier one "
                                     "(cases from a file are removed only when identical); null or 0: off")

    @field_validator("dedupe_threshold")
    @classmethod
    def _zero_is_off(cls, value: float | None) -> float | None:
        return None if value == 0 else value  # no distance is below 0: the same as off


_EXAMPLE_BAND = f"{{low: {AGENT0_BAND.low}, high: {AGENT0_BAND.high}}}"


class BandRange(_Section):
    """A custom frontier band, inclusive, on p̂."""

    low: float = Field(ge=0, le=1)
    high: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> BandRange:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) is above high ({self.high}); write e.g. {_EXAMPLE_BAND}")
        return self


def setting(name: str, **changes: Any) -> Any:
    """The :class:`~frontier_qa.probing._settings.ProbeSettings` field ``name`` as a ``probing`` key.

    Its bounds, default and description are the setting's, stated once there; ``changes`` are a
    YAML spelling's own (``k``'s ``default=None``: the policy's) and ``note`` is added to the description.
    """
    note = changes.pop("note", "")
    info = field_of(ProbeSettings, name)
    if note:
        changes["description"] = f"{info.description}{note}"
    return FieldInfo.merge_field_infos(info, **changes) if changes else info


class ProbingConfig(_Section):
    """How cases are sampled, classified and when the run stops."""

    # The YAML spelling of ProbeSettings, the one class of the probe settings: a key with a
    # setting's meaning is that setting (setting(): its bounds, default and description; listed in
    # SETTING_KEYS). The other keys spell in the file what the settings hold as values: a named
    # policy tuned by k, confidence, rounds; a band preset; a prior file; a judge spec.
    # to_settings turns the section into ProbeSettings.

    policy: Literal["calibrated", "economy", "thorough", "fixed"] = Field(
        DEFAULT_POLICY, description="how cases are sampled: calibrated (default), economy, thorough or fixed (Agent0)")
    k: int | None = setting("k", default=None, note="; null: the policy's")
    sequential: bool | None = Field(None, description="false: the fixed policy (kept for old configs)")
    confidence: float | None = Field(
        None, gt=0.5, lt=1, description="posterior confidence a frontier needs; null: the policy's")
    confidence_out: float | None = Field(
        None, gt=0.5, lt=1, description="posterior confidence of the other classes; null: the policy's")
    labels: Labelling = setting("labels")
    rounds: list[Annotated[int, Field(ge=1)]] | None = Field(
        None, min_length=1,
        description="samples per round, the last size repeating ([6]: 6 at a time); null: the policy's. Larger "
                    "rounds batch better on local models, smaller ones stop clear cases sooner")
    prior: str | None = Field(None, description="a population prior to start from (JSON, MajorityPrior.to_json)")
    prior_from_store: bool = setting("prior_from_store")
    prior_versions: PriorVersions = setting("prior_versions")
    prior_topic_min: int | None = setting("prior_topic_min")
    band: Literal["agent0", "tool-r0"] | BandRange = Field(
        "agent0", description=f"agent0 ({AGENT0_BAND.low} ≤ p̂ ≤ {AGENT0_BAND.high}), tool-r0 "
                             f"({TOOL_R0_BAND.low}–{TOOL_R0_BAND.high}) or {{low, high}}"
    )
    sampling: Sampling = setting("sampling")
    batch_size: int = setting("batch_size")
    max_candidates: int | None = setting("max_candidates")
    saturation_window: int = setting("saturation_window")
    saturation_min_new: int = setting("saturation_min_new")
    concurrency: int = setting("max_concurrent_cases")
    predict_difficulty: bool = setting("predict_difficulty")
    explore_rate: float = setting("explore_rate")
    judge: ModelConfig | None = Field(None, description="a stronger model asked whether stable answers are right")
    verify_references: bool = setting("verify_references")
    seed: int = setting("seed")
    replay_first: bool = setting("replay_first")
    replay_scope: Literal["target", "all"] = setting("replay_scope")
    max_replay: int | None = setting("max_replay")
    embedder: str | None = setting("embedder")  # a model name in the file; any embedder in Python
    path: PathSettings = setting("path")
    pass_k: PassKSettings = setting("pass_k")

    def to_settings(self, *, prior: MajorityPrior | None = None, **outside: Any) -> ProbeSettings:
        """This section as :class:`~frontier_qa.probing._settings.ProbeSettings`.

        Args:
            prior: ``prior`` read from its file (the caller reports a bad file where it was set).
            outside: settings the config keeps in other sections (``shard``, ``regression`` ...).
        """
        band = Band(self.band.low, self.band.high, name="custom") if isinstance(self.band, BandRange) \
            else NAMED_BANDS[self.band]
        chosen = policy("fixed" if self.sequential is False else self.policy)
        sequential = chosen.sequential
        if sequential is not None:
            if self.confidence is not None:
                sequential = replace(sequential, confidence=self.confidence)
            if self.confidence_out is not None:
                sequential = replace(sequential, confidence_out=self.confidence_out)
            if self.rounds is not None:
                sequential = replace(sequential, rounds=tuple(self.rounds))
        return ProbeSettings(
            **{name: getattr(self, key) for key, name in SETTING_KEYS.items()},
            band=band,
            k=self.k if self.k is not None else chosen.k,
            sequential=sequential,
            prior=prior,
            **outside,
        )


# probing keys the file spells differently from the setting of the same name (to_settings reads them)
_SPELT = frozenset({"k", "band", "sequential", "prior"})
# probing key -> the ProbeSettings field it is (the rest of the section is YAML-only: policy, confidence ...)
SETTING_KEYS: Final[Mapping[str, str]] = MappingProxyType({
    **{key: key for key in ProbingConfig.model_fields
       if key in ProbeSettings.__pydantic_fields__ and key not in _SPELT},  # type: ignore[attr-defined]
    "concurrency": "max_concurrent_cases",
})


@frozen_value
class ReplayGateConfig(GateThresholds):
    """The replay gate: regressions fail it; known failures in a suite do not (by default), and neither
    does a known wrong path (a replay compares answers with the baseline, not paths).
    """

    max_failures: Annotated[int | None, Field(ge=0)] = None
    max_wrong_paths: Annotated[int | None, Field(ge=0)] = None


class ReplayConfig(_Section):
    """``frontier-qa replay``: what is replayed and its gate."""

    suite: str | None = Field(None, description="a committed suite (frontier-qa export); null: the store")
    gate: ReplayGateConfig = Field(default_factory=ReplayGateConfig)
    guards: int = Field(10, ge=0, description="pass cases, sampled across topics, that export and the pytest "
                                              "plugin keep as guards next to the findings")


class OutputConfig(_Section):
    """The report folder."""

    dir: str = "frontier-qa-report"
    formats: list[Literal["json", "junit", "md", "html"]] = Field(
        default_factory=lambda: ["json", "junit", "md", "html"]  # type: ignore[arg-type]
    )
    frontier_as_failure: bool = Field(False, description="junit.xml: frontier cases fail")


class RayConfig(_Section):
    """Sampling on a Ray cluster (the ``ray`` extra; docs/how-to/scaling.md): the driver keeps the
    curriculum, decisions, store and cache; workers draw the samples under one rate limit and budget.
    """

    address: str | None = Field(None, min_length=1, description="the cluster: auto, HOST:6379 or ray://HOST:10001 "
                                                                "(--ray); null: sample in this process")
    workers: int = Field(2, ge=0, description="sampling workers (Ray actors), spread over the nodes; 0: sample "
                                              "in this process, admitted by the cluster's limiter (CI shards)")
    slots: int | list[int] | None = Field(None, description="calls each worker runs at once: one number, or one "
                                                            "per worker; null: target.limits.max_concurrency")
    cpus_per_worker: float = Field(1.0, ge=0, description="CPUs Ray reserves per worker (API targets: 0.25)")
    limiter: str | None = Field(None, min_length=1, description="a name: drivers giving the same one (CI shards) "
                                                                "share one rate limiter and one budget")

    @field_validator("slots")
    @classmethod
    def _positive(cls, value: int | list[int] | None) -> int | list[int] | None:
        if value is not None and min([value] if isinstance(value, int) else value or [0]) < 1:
            raise ValueError("slots must be >= 1 (one number, or a non-empty list of them)")
        return value


class OtelExportConfig(_Section):
    """``export.otel``: each run's case verdicts as OpenTelemetry ``gen_ai.evaluation.result`` events."""

    endpoint: str | None = Field(
        None, min_length=1, description="the collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 (/v1/logs is "
                                        "added); null: OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318")
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP headers sent with the events (values may say ${VAR}; masked "
                                          "wherever text is written)")
    protocol: Literal["http/protobuf"] = Field("http/protobuf", description="OTLP over HTTP with protobuf bodies")
    service_name: str = Field("frontier-qa", min_length=1, description="the events' service.name")
    timeout_s: float = Field(10.0, gt=0, description="most seconds sending may take, retries included")


class ExportConfig(_Section):
    """Where each run's verdicts go besides the store and the reports (nowhere unless a key is set)."""

    otel: OtelExportConfig | None = Field(
        None, description="an OTLP endpoint (off when absent: the OTEL_* variables never turn it on; --otel-endpoint)")


class ProbeConfig(_Section):
    """Everything ``frontier-qa probe`` and ``replay`` need (YAML layout, version 1)."""

    version: Literal[1] = CONFIG_VERSION
    target: TargetConfig = Field(default_factory=TargetConfig)
    budget: Budget = Field(default_factory=Budget)
    curriculum: CurriculumConfig = Field(default_factory=CurriculumConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    probing: ProbingConfig = Field(default_factory=ProbingConfig)
    store: str = Field(".frontier-qa", description="case store directory")
    output: OutputConfig = Field(default_factory=OutputConfig)
    gate: GateThresholds = Field(default_factory=GateThresholds)
    regression: RegressionPolicy = Field(default_factory=RegressionPolicy)
    replay: ReplayConfig = Field(default_factory=ReplayConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)
    shard: str | None = Field(None, description="CI shard i/n, e.g. 2/4")
    ray: RayConfig = Field(default_factory=RayConfig)

    _sources: Any = PrivateAttr(default=None)  # Sources, set by load_config

    @field_validator("regression", mode="before")
    @classmethod
    def _suite_size_is_the_replays(cls, value: Any) -> Any:
        if isinstance(value, dict) and "n_cases" in value:
            raise ValueError("n_cases is set by the replay (the number of cases it replays); delete the key")
        return value

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
        """A :class:`ConfigError` about key ``path`` (dotted), naming where it was set; its ``key``
        and ``source`` say the same as data.
        """
        return located_error(self.where(path), path, message, hint)


def located_error(where: str, path: str, message: str, hint: str | None) -> ConfigError:
    """A :class:`ConfigError` about config key ``path`` (dotted) set at ``where``: the message
    names both, and ``key``/``source`` carry them for callers (no message text to match).
    """
    return ConfigError(f"{where}: {path}: {message}", hint=hint, key=tuple(path.split(".")), source=where)


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
    schema["$defs"]["RegressionPolicy"]["properties"].pop("n_cases")  # set by the replay, not a key
    for section in schema.get("$defs", {}).values():  # a frozen value's docstring: its first paragraph
        if "\n\nAttributes:" in section.get("description", ""):
            section["description"] = " ".join(section["description"].split("\n\n")[0].split())
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "frontier-qa probe configuration"
    return schema


