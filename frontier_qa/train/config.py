"""The curriculum trainer's configuration: one YAML file plus flags, checked key by key.

``frontier-qa train curriculum --config configs/train/curriculum-agent0.yaml`` reads a file
with these sections (every key is documented in ``configs/train/curriculum-agent0.yaml``)::

    model       the curriculum model to train (a local folder, an alias such as smollm2, or a
                Hugging Face name already in the local cache) and optional LoRA
    target      the agent under test, exactly as in a probe config (spec, options, limits, cache)
    budget      what rewarding may spend on the target (calls, tokens, dollars, seconds)
    curriculum  which prompt the model is trained on (Agent0 Table 7 by default)
    reward      k samples per task, the Eq. 2-5 constants (a preset plus overrides)
    training    GRPO: steps, batch, learning rate, KL, sampling, checkpoints
    generation  transformers or vLLM (TRL's colocate or server mode)
    save        what is written at the end (merged model, LoRA adapter)

Flags override the file (``--max-steps``, ``--set training.learning_rate=1e-5``). A bad value is
a :class:`~frontier_qa.errors.ConfigError` naming the key, the file line (or flag) that set it
and the fix, never a traceback. Nothing here imports torch or TRL.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator
from pydantic_core import ArgsKwargs

from frontier_qa._frozen import frozen_value
from frontier_qa.config import (
    Budget,
    Override,
    Sampling,
    TargetConfig,
    parse_set,
    read_overrides,
    read_yaml,
    resolve_layers,
)
from frontier_qa.config._diagnostics import report
from frontier_qa.config._layers import validate_layers
from frontier_qa.config._schema import located_error
from frontier_qa.curricula._spec import CURRICULUM_SAMPLING, STYLES, TRAINED_DOMAINS, PromptOptions, TrainedDomain
from frontier_qa.errors import BudgetExceededError, ConfigError
from frontier_qa.redaction import register_secrets, secret_values
from frontier_qa.scoring.rewards import REWARD_PRESETS, RewardConfig

TRAIN_CONFIG_VERSION: Final = 1
C = TypeVar("C", bound=BaseModel)
DOMAINS = TRAINED_DOMAINS


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class LoraSection(_Section):
    """LoRA through PEFT (``model.lora``); absent: full fine-tuning."""

    r: int = Field(16, ge=1, description="rank")
    alpha: int = Field(32, ge=1, description="lora_alpha (scale = alpha / r)")
    dropout: float = Field(0.05, ge=0, lt=1)
    target_modules: str | list[str] = Field("all-linear", description="modules to adapt")


class ModelSection(_Section):
    """The curriculum model: any local causal LM."""

    path: str = Field(min_length=1, description="local folder, alias (smollm2) or a cached hub name")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    trust_remote_code: bool = False
    chat_template: str | None = Field(None, description="a Jinja chat template overriding the tokenizer's")
    lora: LoraSection | None = None


class PromptSection(_Section):
    """Your own curriculum prompt (``curriculum.style: plain``): the completion is the task."""

    system: str | None = None
    user: str = Field(min_length=1)
    prefill: str = Field("", description="text the assistant turn starts with (continued by the model)")


class CurriculumSection(PromptOptions):
    """The prompt the model learns to answer with tasks (the one `frontier-qa probe` will send): the
    prompt options the card keeps (:class:`~frontier_qa.curricula._spec.PromptOptions`) and the files
    and rows of the training set.
    """

    domain: TrainedDomain = "math"
    tools: str | None = Field(None, description="workflow: JSON/YAML file of the agent's tool schemas")
    examples: str | None = Field(None, description="few_shot: JSONL/YAML worked examples")
    prompt: PromptSection | None = Field(None, description="plain: your own prompt")
    rows: int | None = Field(None, ge=1, description="prompt rows in the dataset (null: one per task)")

    @model_validator(mode="after")
    def _consistent(self) -> CurriculumSection:
        if self.style == "plain" and self.prompt is None:
            raise ValueError("style 'plain' needs curriculum.prompt: {system, user, prefill}")
        if self.style != "plain" and self.prompt is not None:
            raise ValueError("curriculum.prompt is used by style 'plain' only; set style: plain or drop it")
        if self.style == "few_shot" and self.domain not in ("math", "general"):
            raise ValueError(f"style 'few_shot' writes math/general problems, not domain {self.domain!r}")
        if self.style == "few_shot" and self.domain == "general" and self.examples is None:
            raise ValueError("style 'few_shot' for domain 'general' needs curriculum.examples (built-ins are math)")
        if self.examples is not None and self.style != "few_shot":
            raise ValueError("curriculum.examples is used by style 'few_shot' only")
        if self.domain == "workflow" and self.style == "instruct" and not (self.agent_description or "").strip():
            raise ValueError("domain 'workflow' needs curriculum.agent_description (what the agent under test does)")
        if self.answer_format is not None:
            allowed = ("text", "final_answer") if self.domain == "workflow" else ()
            if self.style != "plain" and self.answer_format not in allowed:
                raise ValueError(f"answer_format {self.answer_format!r} is not available here: only domain "
                                 "'workflow' (text | final_answer) or style 'plain' take one")
        return self


_CONSTANTS: Final = tuple(RewardConfig.__dataclass_fields__)


def _with_preset(data: dict[str, Any]) -> dict[str, Any]:
    """A reward section's keys with the preset's value for each constant left out or ``null``."""
    base = REWARD_PRESETS.get(data.get("preset", "paper"))
    if base is None:
        return data  # the preset's own error
    given = {key: value for key, value in data.items() if not (key in _CONSTANTS and value is None)}
    return {**{name: getattr(base, name) for name in _CONSTANTS}, **given}


@frozen_value
class RewardSection(RewardConfig):
    """The curriculum reward (Agent0 Eq. 2-5): its constants, and how the target is sampled.

    The constants are :class:`~frontier_qa.scoring.rewards.RewardConfig`'s fields (this section
    is one, with the trainer's keys added): ``preset`` gives every constant the file leaves out
    or sets to ``null``; the keys set override it. :attr:`constants` is the scoring value.
    """

    preset: Annotated[Literal["paper", "agent0-compat"], Field(
        description="paper: Eq. 2-5; agent0-compat: the reference code's constants, without its defects")] = "paper"
    k: Annotated[int, Field(ge=1, description="target samples per task (Agent0: 10)")] = 10
    sampling: Annotated[Sampling, Field(description="target sampling (Agent0: T=1)")] = Sampling()
    embedder: Annotated[str | None, Field(description="open-ended answers: embedding model (null: MiniLM)")] = None
    max_concurrent_tasks: Annotated[int, Field(ge=1, description="tasks whose k samples are drawn at once")] = 16
    preflight: Annotated[bool, Field(description="ask the target one easy task before loading the model")] = True

    @model_validator(mode="before")
    @classmethod
    def _preset_first(cls, data: Any) -> Any:
        if isinstance(data, ArgsKwargs):  # built in Python: RewardSection(preset=..., k=...)
            return ArgsKwargs(data.args, _with_preset(dict(data.kwargs or {})))
        return _with_preset(data) if isinstance(data, dict) else data

    @property
    def constants(self) -> RewardConfig:
        """The reward constants alone: what :mod:`frontier_qa.scoring.rewards` takes."""
        return RewardConfig(**{name: getattr(self, name) for name in _CONSTANTS})


GRPO_KEYS: Final = ("max_steps", "num_generations", "learning_rate", "weight_decay", "beta", "temperature", "top_p",
                    "max_completion_length", "max_grad_norm", "lr_scheduler_type", "warmup_steps", "save_steps",
                    "save_total_limit", "logging_steps", "seed", "report_to")
"""The ``training`` keys that are TRL ``GRPOConfig`` fields of the same name, passed to it as they are
(TRL documents them; the section gives them Agent0's defaults). The section's other keys are the
trainer's own (``prompts_per_step``, ``updates_per_generation``), resolved per device (``bf16:
auto``) or TRL's only when set (``loss_type``); ``extra`` takes any other ``GRPOConfig`` field.
"""


def grpo_fields() -> frozenset[str]:
    """The field names of TRL's ``GRPOConfig`` (imports TRL: call it when training, not when loading)."""
    import dataclasses

    from trl import GRPOConfig

    return frozenset(f.name for f in dataclasses.fields(GRPOConfig))


class TrainingSection(_Section):
    """GRPO (TRL ``GRPOTrainer``); defaults are Agent0 A.1 (curriculum agent) with one update per round of
    generation; ``configs/train/curriculum-agent0.yaml`` adds the reference's 4 updates per round (20 steps).
    """

    output_dir: str = "frontier-qa-curriculum"
    max_steps: int = Field(5, ge=1, description="optimizer steps (Agent0: 5 per iteration)")
    prompts_per_step: int = Field(128, ge=1, description="prompts per optimizer step (Agent0 global batch 128)")
    num_generations: int = Field(4, ge=2, description="tasks per prompt (Agent0: 4 rollouts)")
    updates_per_generation: int = Field(1, ge=1, description="optimizer steps per batch of generated tasks (1: "
                                        "on-policy, the clip never acts; Agent0's reference: 4)")
    per_device_train_batch_size: int = Field(8, ge=1, description="completions per device per micro-batch")
    learning_rate: float = Field(1e-6, gt=0)
    weight_decay: float = Field(1e-2, ge=0)
    beta: float = Field(1e-2, ge=0, description="KL coefficient (Agent0: 1e-2)")
    temperature: float = Field(CURRICULUM_SAMPLING.temperature, gt=0)
    top_p: float = Field(CURRICULUM_SAMPLING.top_p, gt=0, le=1)
    max_completion_length: int = Field(CURRICULUM_SAMPLING.max_tokens, ge=1, description="tokens per generated task")
    max_grad_norm: float = Field(1.0, gt=0)
    lr_scheduler_type: str = "constant"
    warmup_steps: int = Field(0, ge=0)
    loss_type: str | None = Field(None, description="TRL loss (null: TRL's default)")
    save_steps: int = Field(1, ge=1)
    save_total_limit: int | None = Field(None, ge=1)
    logging_steps: int = Field(1, ge=1)
    seed: int = 0
    bf16: Literal["auto"] | bool = "auto"
    use_cpu: Literal["auto"] | bool = "auto"
    gradient_checkpointing: Literal["auto"] | bool = "auto"
    report_to: list[str] = Field(default_factory=lambda: ["none"], description="wandb, tensorboard, trackio…")
    extra: dict[str, Any] = Field(default_factory=dict, description="any other GRPOConfig field")


class GenerationSection(_Section):
    """How tasks are generated: plain transformers, or vLLM through TRL."""

    backend: Literal["auto", "transformers", "vllm"] = Field(
        "auto", description="auto: vLLM when it is installed and a GPU is present, else transformers")
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_server_base_url: str | None = Field(None, description="server mode: e.g. http://10.0.0.2:8000")
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1, description="colocate mode")
    vllm_tensor_parallel_size: int = Field(1, ge=1, description="colocate mode")


class SaveSection(_Section):
    """What the run leaves besides ``checkpoint-N`` folders."""

    merged: bool = Field(True, description="LoRA: write the merged model to <output_dir>/final")
    adapter: bool = Field(True, description="LoRA: keep the adapter in <output_dir>/final-adapter")


class TrainConfig(_Section):
    """Everything ``frontier-qa train curriculum`` needs (YAML layout, version 1)."""

    version: Literal[1] = TRAIN_CONFIG_VERSION
    model: ModelSection
    target: TargetConfig = Field(default_factory=TargetConfig)
    budget: Budget = Field(default_factory=Budget)
    curriculum: CurriculumSection = Field(default_factory=CurriculumSection)
    reward: RewardSection = Field(default_factory=RewardSection)
    training: TrainingSection = Field(default_factory=TrainingSection)
    generation: GenerationSection = Field(default_factory=GenerationSection)
    save: SaveSection = Field(default_factory=SaveSection)

    _sources: Any = PrivateAttr(default=None)  # Sources, set by load_train_config

    def where(self, key: str) -> str:
        """The file line or flag that set ``key`` (dotted), ``"defaults"`` when none did."""
        if self._sources is None:
            return "defaults"
        return self._sources.where(tuple(key.split(".")))

    def error(self, key: str, message: str, hint: str) -> ConfigError:
        """A :class:`ConfigError` about ``key``, naming where it was set."""
        return located_error(self.where(key), key, message, hint)


# --- loading -----------------------------------------------------------------------------------

def load_train_config(path: str | Path | None = None, overrides: Iterable[Override] = ()) -> TrainConfig:
    """Resolve the training configuration: flags > the file at ``path`` > defaults.

    Args:
        path: the YAML file (``None``: flags and defaults only; then ``model.path`` must be a flag).
        overrides: flag values, e.g. ``parse_set("training.max_steps=2")``.

    Raises:
        ConfigError: every bad key, with the file line or flag that set it and the fix.
    """
    return read_config(TrainConfig, path, overrides, version=TRAIN_CONFIG_VERSION)


def read_config(schema: type[C], path: str | Path | None, overrides: Iterable[Override], *, version: int,
                doc: str = "configs/train/curriculum-agent0.yaml") -> C:
    """A trainer's config of type ``schema``: flags > the file at ``path`` > defaults, its
    sources kept for :meth:`where`; a bad key raises the one report naming each (``doc``
    documents every key).
    """
    layers = [read_overrides(overrides)]
    if path is not None:
        layers.append(read_yaml(path))
    data, sources = resolve_layers(layers, version=version, hint="upgrade frontier-qa")
    config = validate_layers(schema, layers, data, sources,
                             lambda err, data, where: report(err, data, where, root=schema,
                                                             title="the training configuration",
                                                             hint=f"{doc} documents every key", doc=doc))
    register_secrets(secret_values(data))  # its keys and header values are masked everywhere from now on
    located: Any = config  # every trainer config has the private _sources
    located._sources = sources
    return config


# --- derived values ----------------------------------------------------------------------------


def reward_config(config: TrainConfig) -> RewardConfig:
    """The :class:`~frontier_qa.scoring.rewards.RewardConfig` of ``config.reward``: the preset with
    the file's overrides (checked, with their key paths, when the file was read).
    """
    return config.reward.constants


@dataclass(frozen=True)
class StepPlan:
    """How one optimizer step is made up, on ``world_size`` processes.

    Attributes:
        world_size: training processes (GPUs).
        per_device_batch: completions per device per micro-batch.
        gradient_accumulation_steps: micro-batches per optimizer step on each device.
        steps_per_generation: micro-batches served by one round of generation (TRL's name).
        tasks_per_generation: tasks generated per round, all processes together
            (prompts_per_step × num_generations × updates_per_generation).
        tasks_per_process: the share of one process, which samples the target for them.
        samples_per_process: target samples one process asks for per round (tasks × k).
        calls_per_process: backend calls for them in the worst case (no cache hits, no
            duplicate tasks): tasks × ⌈k / max_n⌉, with ``max_n`` the target's samples per call.
    """

    world_size: int
    per_device_batch: int
    gradient_accumulation_steps: int
    steps_per_generation: int
    tasks_per_generation: int
    tasks_per_process: int
    samples_per_process: int
    calls_per_process: int


def plan_step(config: TrainConfig, world_size: int = 1, target_max_n: int = 1) -> StepPlan:
    """Split Agent0's global batch over devices: TRL counts completions, Agent0 counts prompts.

    One optimizer step sees ``prompts_per_step × num_generations`` completions (Agent0 A.1:
    128 prompts × 4 rollouts), whatever the number of GPUs; gradient accumulation makes up
    the difference.

    Raises:
        ConfigError: the completions of one step do not split evenly over devices × micro-batches.
    """
    t = config.training
    per_step = t.prompts_per_step * t.num_generations
    micro = t.per_device_train_batch_size * world_size
    if per_step % micro:
        raise config.error(
            "training.per_device_train_batch_size",
            f"{t.prompts_per_step} prompts × {t.num_generations} generations = {per_step} completions per step do "
            f"not split into micro-batches of {t.per_device_train_batch_size} on {world_size} device(s)",
            f"choose per_device_train_batch_size so that {per_step} is a multiple of it × {world_size}",
        )
    accumulation = per_step // micro
    tasks = per_step * t.updates_per_generation
    local = tasks // world_size
    k = config.reward.k
    return StepPlan(world_size, t.per_device_train_batch_size, accumulation, accumulation * t.updates_per_generation,
                    tasks, local, local * k, local * math.ceil(k / max(1, target_max_n)))


def check_budget(config: TrainConfig, plan: StepPlan, *, extra_calls: int = 0, budget: Any = None) -> None:
    """Refuse to start when the target budget cannot cover one round of generation.

    A round needs up to ``plan.calls_per_process`` backend calls (every task new, every
    sample paid for), plus ``extra_calls`` made before training (the target check). Tokens,
    dollars and seconds cannot be known before the calls; those limits stop a run gracefully
    when they are reached (the step's last tasks get no reward and training ends with a
    checkpoint). ``budget`` (a :class:`~frontier_qa.runtime.Budget`) replaces ``config.budget``
    for a target opened elsewhere.

    Raises:
        BudgetExceededError: ``budget.max_calls`` (or a zero tokens / dollars / seconds limit)
            cannot cover one step.
    """
    b = config.budget if budget is None else budget
    where = config.where("budget.max_calls") if budget is None else "the target's budget"
    needed = plan.calls_per_process + extra_calls
    if b.max_calls is not None and b.max_calls < needed:
        raise BudgetExceededError(
            f"{where}: budget.max_calls = {b.max_calls} cannot cover one training step: it may take "
            f"{plan.tasks_per_process} tasks × k = {config.reward.k} samples = {plan.calls_per_process} target calls"
            + (f" (+{extra_calls} to check the target first)" if extra_calls else ""),
            hint=f"raise budget.max_calls to at least {plan.calls_per_process} per step (× training.max_steps = "
            f"{plan.calls_per_process * config.training.max_steps} for the whole run), or lower reward.k, "
            "training.prompts_per_step or training.num_generations",
        )
    for name in ("max_tokens", "max_cost_usd", "max_wall_s"):
        if getattr(b, name) == 0:
            raise BudgetExceededError(f"{config.where('budget.' + name) if budget is None else where}: "
                                      f"budget.{name} = 0 cannot cover one "
                                      "training step", hint=f"raise budget.{name} or remove it (null: no limit)")


__all__ = [
    "DOMAINS",
    "GRPO_KEYS",
    "STYLES",
    "TRAIN_CONFIG_VERSION",
    "Budget",
    "CurriculumSection",
    "GenerationSection",
    "LoraSection",
    "ModelSection",
    "PromptSection",
    "RewardSection",
    "SaveSection",
    "StepPlan",
    "TrainConfig",
    "TrainingSection",
    "check_budget",
    "grpo_fields",
    "load_train_config",
    "parse_set",
    "plan_step",
    "reward_config",
]


