"""From a resolved configuration to the engine's parts: :func:`build_probe`.

Wires the target (limits, one run budget shared by every model of the run, the sample
cache under the store), the curriculum, the validator (with SAGE's critic when configured),
the judge, the store and the :class:`~frontier_qa.probing._settings.ProbeSettings`. Option
values may say ``${ENV_VAR}``: resolved here, when the models are opened, so keys never sit
in the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from frontier_qa.config._schema import (
    CurriculumConfig,
    ModelConfig,
    ProbeConfig,
    TargetConfig,
)
from frontier_qa.errors import ConfigError, read_text
from frontier_qa.probing._curriculum_seam import Curriculum
from frontier_qa.probing._sequential import MajorityPrior
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.probing._validation import Critic, Validator
from frontier_qa.reports._gate import GateThresholds
from frontier_qa.runtime._budget import BudgetTracker
from frontier_qa.runtime._cache import SampleCache
from frontier_qa.runtime._env import UnsetVariableError, expand_env
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import RegressionPolicy
from frontier_qa.store._shards import Shard
from frontier_qa.target import Target

if TYPE_CHECKING:
    from frontier_qa.reports._otel_export import OtelVerdicts

# --- wiring: config → the engine's parts --------------------------------------------------------


class ProbeParts(NamedTuple):
    """What :func:`build_probe` wires; unpacks as ``(target, curriculum, settings, store,
    validator, judge)``. ``curriculum`` is ``None`` when it was not asked for (replay).
    """

    target: Target
    curriculum: Curriculum | None
    settings: ProbeSettings
    store: CaseStore
    validator: Validator
    judge: Target | None

    async def aclose(self) -> None:
        """Close every model the parts opened (target, curriculum model, critics, judge)."""
        critic = getattr(self.validator.critic, "model", None)
        validity = getattr(self.validator.critic, "own_model", None)  # a validity judge model it opened
        for part in (self.curriculum, critic, validity, self.judge, self.target):
            close = getattr(part, "aclose", None)
            if close is not None:
                await close()


def resolve_options(config: Any, section: str, options: Mapping[str, Any], *, key: str = "options") -> dict[str, Any]:
    """Adapter options with ``${VAR}`` resolved from the environment (top-level strings only:
    nested mappings such as HTTP headers are resolved by their adapter).

    ``config`` is any loaded config with ``error(key, message, hint)`` (the probe's or the
    trainer's), so an unset variable is reported by key (``section.key.NAME``) and where it was set.
    """
    out: dict[str, Any] = {}
    for name, value in options.items():
        if isinstance(value, str):
            try:
                value = expand_env(value)
            except UnsetVariableError as err:
                raise config.error(f"{section}.{key}.{name}", err.message, err.hint) from None
        out[name] = value
    return out


def budget_tracker(config: ProbeConfig) -> BudgetTracker:
    """One tracker for the whole run: every model of it spends from the same budget."""
    return BudgetTracker(config.budget)


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
    options = resolve_options(config, section, model.options)  # raises located at its own key
    try:
        return open_target(model.spec, limits=model.limits, budget=tracker, cache=cache, **extra, **options)
    except ConfigError as err:
        if err.source is not None:  # already located by the configuration
            raise
        raise config.error(f"{section}.spec", err.message, err.hint or "check the spec and its options") from None


def _open_on_ray(config: ProbeConfig, cache: SampleCache | bool) -> tuple[Target, BudgetTracker]:
    """The target sampled by Ray workers, and the run's budget as the driver's models share it
    (the governor's: :mod:`frontier_qa.runtime._ray_executor`).
    """
    from frontier_qa.runtime._ray_executor import RaySettings, open_governed_target, open_ray_target

    r, t = config.ray, config.target
    assert r.address is not None and t.spec is not None
    if t.tool_options:
        raise config.error("ray.address", "tools+ targets cannot be sampled on Ray workers",
                           "probe them without --ray, or shard the run (--shard i/n)")
    settings = RaySettings(r.address, workers=r.workers, slots=tuple(r.slots) if isinstance(r.slots, list) else r.slots,
                           cpus_per_worker=r.cpus_per_worker, limiter=r.limiter)
    options = resolve_options(config, "target", t.options)
    opener = open_ray_target if r.workers else open_governed_target
    try:
        target = opener(t.spec, settings, limits=t.limits, budget=config.budget,
                        cache=cache if isinstance(cache, SampleCache) else None, version=t.version, options=options)
    except ConfigError as err:
        if err.source is not None:
            raise
        raise config.error("ray.address", err.message, err.hint or "check the ray section") from None
    return target, target.budget


def build_settings(config: ProbeConfig) -> ProbeSettings:
    """The engine's :class:`~frontier_qa.probing._settings.ProbeSettings`: the ``probing`` section
    (:meth:`~frontier_qa.config._schema.ProbingConfig.to_settings`), its ``prior`` file, ``shard`` and ``regression``.
    """
    return config.probing.to_settings(
        prior=_prior(config) if config.probing.prior else None,
        shard=Shard.parse(config.shard) if config.shard else None,
        regression=regression_policy(config),
        baseline_samples=config.regression.baseline_samples,
    )


def otel_verdicts(config: ProbeConfig) -> OtelVerdicts:
    """``export.otel`` as the run's verdict sink, its headers' ``${VAR}`` resolved (secrets, masked from now on).

    Raises:
        ConfigError: a header refers to an unset variable (named with where it was set).
        MissingExtraError: the OTLP exporter is not installed (the ``otel`` extra).
    """
    from frontier_qa.reports._otel_export import OtelVerdicts

    otel = config.export.otel
    assert otel is not None
    headers = resolve_options(config, "export.otel", otel.headers, key="headers")
    return OtelVerdicts(endpoint=otel.endpoint, headers=tuple((k, str(v)) for k, v in headers.items()),
                        service_name=otel.service_name, timeout_s=otel.timeout_s)


def regression_policy(config: ProbeConfig) -> RegressionPolicy:
    """The ``regression`` section: already the replay's :class:`~frontier_qa.store._comparison.RegressionPolicy`
    (kept so callers written for the 0.1 config keep working).
    """
    return config.regression


def _prior(config: ProbeConfig) -> MajorityPrior:
    """``probing.prior``: a population prior saved with ``MajorityPrior.to_json``."""
    path = config.probing.prior
    assert path is not None
    try:
        data = json.loads(read_text(path, what="prior file"))
    except ConfigError as err:  # missing, a folder, not UTF-8
        raise config.error("probing.prior", err.message, err.hint or "check the path") from None
    except json.JSONDecodeError as err:
        raise config.error("probing.prior", f"{path} is not JSON: {err}",
                           "write it with MajorityPrior.to_json()") from None
    try:
        return MajorityPrior.from_json(data)
    except ConfigError as err:
        raise config.error("probing.prior", f"{path}: {err.message}", err.hint or "") from None


def gate_thresholds(gate: GateThresholds) -> GateThresholds:
    """The gate section: already the :class:`~frontier_qa.reports.GateThresholds` the reports check
    (kept so callers written for the 0.1 config keep working).
    """
    return gate


def load_tools(config: ProbeConfig) -> list[dict[str, Any]]:
    """The OpenAI tool schemas of ``curriculum.tools`` (a JSON or YAML list, or ``{tools: [...]}``)."""
    path = config.curriculum.tools
    if path is None:
        return []
    try:
        text = read_text(path, what="tools file")
        loaded = yaml.safe_load(text)  # JSON is YAML
    except ConfigError as err:
        raise config.error("curriculum.tools", err.message, err.hint or "check the path") from None
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
        text = read_text(path, what="examples file")
        if path.endswith(".jsonl"):
            loaded: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            loaded = yaml.safe_load(text)
    except ConfigError as err:
        raise config.error("curriculum.examples", err.message, err.hint or "check the path") from None
    except (ValueError, yaml.YAMLError) as err:
        raise config.error("curriculum.examples", f"{path} is not valid JSONL/YAML: {err}", "fix the file") from None
    if not isinstance(loaded, list) or not all(isinstance(row, dict) for row in loaded):
        raise config.error("curriculum.examples", f"{path} must hold a list of worked examples",
                           'write rows like {"problem": "...", "answer": "...", "program": "print(...)"}')
    from frontier_qa.curricula._few_shot import load_examples as check_examples

    try:
        check_examples(loaded)
    except ConfigError as err:
        raise config.error("curriculum.examples", f"{path}: {err.message}", err.hint or "fix the file") from None
    return loaded


def build_generators(config: ProbeConfig) -> Curriculum:
    """A generators curriculum: the listed task generators, searched for where the target's ability ends."""
    from frontier_qa.generators._core import GeneratorError
    from frontier_qa.generators._explore import ExploreSettings, GeneratorCurriculum
    from frontier_qa.generators._loading import load_generators
    from frontier_qa.generators._search import SearchSettings

    c = config.curriculum
    if not c.generators:
        raise config.error("curriculum.generators", "a generators curriculum lists no generators",
                           "set curriculum.generators, e.g. [arithmetic, dates] (built in: arithmetic, number_words, "
                           "dates, units, word_problems)")
    try:
        generators = load_generators(c.generators)
    except GeneratorError as err:
        raise config.error("curriculum.generators", err.message, err.hint or "see configs/generators.yaml") from None
    s = c.search
    # the thresholds are the run's band ends (0.8 and 0.3 by default): the explorer sets them from the run
    search = SearchSettings(confidence=s.confidence, instances=s.instances,
                            samples=s.samples, min_instances=s.min_instances, max_instances=s.max_instances,
                            stride=s.stride)
    return GeneratorCurriculum(generators, ExploreSettings(search=search, evidence=s.evidence, shrink=s.shrink,
                                                           shrink_tries=s.shrink_tries, seed=config.probing.seed))


def build_curriculum(config: ProbeConfig, tracker: BudgetTracker, cache: SampleCache | bool) -> Curriculum:
    """The curriculum: cases from a file, or a (trained) model prompted for tasks."""
    c = config.curriculum
    if c.type == "generators":
        return build_generators(config)
    if c.type == "file":
        if not c.path:
            raise config.error("curriculum.type", "a file curriculum needs curriculum.path",
                               "set curriculum.path to a JSONL/YAML file of cases (or pass --curriculum FILE)")
        from frontier_qa.curricula._file import FileCurriculum

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
    card = None
    if c.type == "trained":  # asked the way it was trained: its card fills every key not set here
        from frontier_qa.curricula._card import PlainPromptCurriculum, apply_card, asks_training_prompts

        c, card, _ = apply_card(config, model.spec)
        # a plain prompt: the prompted curriculum has no such style
        if card is not None and asks_training_prompts(config, card):
            return PlainPromptCurriculum(_open(config, "curriculum.model", model, tracker, cache), card,
                                         sampling=c.sampling)
    if c.domain == "tools" and not c.tools:
        raise config.error("curriculum.domain", "the tools domain writes tasks for your tools, but none are given",
                           "set curriculum.tools to a JSON/YAML file of OpenAI tool schemas (or pass --tools FILE)")
    if c.domain == "workflow" and not (c.agent_description or "").strip():
        raise config.error("curriculum.domain", "the workflow domain needs a description of the agent under test",
                           "set curriculum.agent_description, e.g. 'a support agent that can search and refund orders'")
    from frontier_qa.curricula._prompted import PromptedCurriculum

    tools = load_tools(config) or (list(card.tools) if card is not None else [])
    examples = load_examples(config)
    if examples is None and card is not None and c.style == "few_shot":
        examples = card.examples
    opened = _open(config, "curriculum.model", model, tracker, cache)
    try:
        return PromptedCurriculum(
            opened,
            domain=c.domain,
            tools=tools,
            agent_description=c.agent_description,
            topics=c.topics or None,
            sampling=c.sampling,
            seed=config.probing.seed,
            history_examples=c.history_examples,
            ask_solution=c.ask_solution,
            ask_difficulty=c.ask_difficulty,
            answer_format=c.answer_format,
            close_model=True,
            style=c.style,
            examples=examples,
            dedupe_threshold=config.validation.dedupe_threshold,
            topic_from=c.topic_from,
            topic_embedder=config.probing.embedder if c.topic_from == "text" else None,
        )
    except ConfigError as err:
        _close_now([opened])
        # the constructor names its argument; each argument is the curriculum key of the same name
        key = f"curriculum.{err.key[0]}" if err.key and err.key[0] in CurriculumConfig.model_fields \
            else "curriculum.domain"
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
    if config.export.otel is not None:
        settings = replace(settings, verdicts=otel_verdicts(config))
    cache = sample_cache(config)
    if config.ray.address:
        target, tracker = _open_on_ray(config, cache)
    else:
        tracker = budget_tracker(config)
        extra: dict[str, Any] = {"tool_options": config.target.tool_options} if config.target.tool_options else {}
        if config.target.version:
            extra["version"] = config.target.version
        target = _open(config, "target", config.target, tracker, cache, **extra)
    opened: list[Any] = [target]
    try:
        cur = build_curriculum(config, tracker, cache) if curriculum else None
        opened.append(cur)
        critic: Critic | None = None
        if config.validation.critic is not None:
            from frontier_qa.curricula._critic import SageCritic

            c = config.validation.critic
            critic_model = _open(config, "validation.critic", c, tracker, cache)
            opened.append(critic_model)
            critic = SageCritic(critic_model, c.threshold, on_error=c.on_error)
        validity_model = None
        v = config.validation.validity
        if v.judge != "off":
            from frontier_qa.probing._validity import ModelJudge, ValidityJudge

            model_judge = None
            if v.judge == "model":
                assert v.model is not None  # the schema requires it
                validity_model = _open(config, "validation.validity.model", v.model, tracker, cache)
                opened.append(validity_model)
                model_judge = ModelJudge(validity_model)
            elif v.judge == "curriculum":
                own = getattr(cur, "model", None)
                if own is None:
                    raise config.error("validation.validity.judge", "judge: curriculum needs a prompted curriculum "
                                       "with a model", "use judge: rules, or judge: model with validity.model")
                model_judge = ModelJudge(own, name=f"curriculum model {own.id}")
            critic = ValidityJudge(model=model_judge, then=critic, own_model=validity_model)
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
