"""The co-evolution run's configuration (Agent0 Algorithm 1): one YAML file plus flags.

``frontier-qa train coevolve --config configs/coevolve/agent0.yaml`` reads these sections
(every key is documented in ``configs/coevolve/agent0.yaml``)::

    run_dir      where every iteration's models, pools and the report go
    iterations   T (Agent0: 3)
    curriculum   a curriculum training config (model, curriculum, reward, training, generation,
                 save), exactly as ``frontier-qa train curriculum`` reads it, minus ``target``:
                 each iteration trains against the current executor with its tools
    executor     the executor model, its sandboxed tools, its sampling, and its ADPO training
    pool         tasks drawn from the frozen curriculum, k samples each, the p̂ band
    evaluation   the held-out set and the Table 5 measurement

A bad key is a :class:`~frontier_qa.errors.ConfigError` naming the key, the file line or flag
that set it and the fix. Nothing here imports torch or TRL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, PrivateAttr, field_validator

from frontier_qa.config import Override, Sampling, Sources
from frontier_qa.config._schema import located_error
from frontier_qa.curricula._spec import CURRICULUM_SAMPLING
from frontier_qa.errors import ConfigError
from frontier_qa.scoring.bands import AGENT0_BAND
from frontier_qa.train.adpo import ADPOSchedule
from frontier_qa.train.config import (
    GenerationSection,
    ModelSection,
    SaveSection,
    TrainConfig,
    TrainingSection,
    _Section,
    read_config,
)

COEVOLVE_CONFIG_VERSION: Final = 1
DEFAULT_OUTPUT_DIR = TrainingSection.model_fields["output_dir"].default
RUN_DIR_HINT = "remove it: every iteration writes under run_dir (iter-N/curriculum, iter-N/executor)"


AGENT0_EXECUTOR_SYSTEM = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The "
    "assistant first thinks about the reasoning process in the mind and then provides the user with the answer. "
    "Please integrate natural language reasoning with programs to solve the problem. If you want to run any python "
    "code, write code in the python markdown code block and the execution will be appended in an output code block "
    "like ```python\nyour code here\n```\n```output\nresult here\n```. Please put your final answer within "
    "\\boxed{}."
)
"""Agent0's executor prompt (paper Table 6), the system prompt of every task the executor sees."""


class ToolsSection(_Section):
    """The executor's Python tool (Agent0 §3.3 multi-turn rollout), in pool sampling and training."""

    max_tool_turns: int = Field(4, ge=0, description="code blocks run per answer (Agent0: 4)")
    output_max_chars: int = Field(2000, ge=1, description="characters of tool output shown to the model")
    timeout_s: float = Field(10.0, gt=0, description="wall-clock limit of one code block, seconds")
    memory_mb: int = Field(2048, ge=64, description="address-space limit of one code block, MiB")

    def sandbox(self) -> dict[str, Any]:
        """Keyword arguments of :class:`~frontier_qa.runtime.sandbox.Sandbox`."""
        return {"timeout_s": self.timeout_s, "memory_mb": self.memory_mb}

    def executor_options(self) -> dict[str, Any]:
        """``tool_options`` of a ``tools+`` target (:class:`~frontier_qa.adapters.tool_executor.ToolExecutor`)."""
        return {"max_tool_turns": self.max_tool_turns, "output_max_chars": self.output_max_chars,
                "sandbox": self.sandbox()}


class ExecutorTrainingSection(TrainingSection):
    """The executor's ADPO training per iteration (Agent0 A.1: 40 steps of 128 tasks × 16 rollouts)."""

    num_generations: int = Field(16, ge=2, description="rollouts per task (Agent0: 16)")
    max_steps: int = Field(40, ge=1, description="optimizer steps per iteration (Agent0: 40)")
    updates_per_generation: int = Field(1, ge=1, description="optimizer steps per batch of rollouts (Agent0: 1, "
                                        "on-policy: ε_high(p̂) cannot bind; 2 makes the clip act)")
    max_completion_length: int = Field(4096, ge=1, description="tokens per rollout, tool output included")


class ExecutorSection(_Section):
    """The executor: the model being taught, its tools, how it is sampled and trained."""

    model: ModelSection
    system: str = Field(AGENT0_EXECUTOR_SYSTEM, min_length=1,
                        description="system prompt of every task (pool, training, evaluation); Agent0's by default")
    sampler: Literal["transformers", "vllm", "vllm-server"] = Field(
        "transformers", description="what samples it in the curriculum reward, the pool and evaluation: "
        "transformers (tools+hf:), vllm (tools+vllm:, in process) or vllm-server (tools+vllm-server:)")
    target_options: dict[str, Any] = Field(default_factory=dict,
                                           description="options of the sampler's adapter (hf: device, max_batch_rows; "
                                                       "vllm: gpu_memory_utilization, max_model_len...)")
    sampling: Sampling = Field(default_factory=lambda: Sampling(temperature=0.7, top_p=0.9,
                                                                            max_tokens=2048),
                                     description="pool, reward and evaluation sampling, per model turn (the "
                                                 "reference's reward server: 0.7, 0.9, 2048)")
    tools: ToolsSection = Field(default_factory=ToolsSection)
    training: ExecutorTrainingSection = Field(default_factory=ExecutorTrainingSection)
    generation: GenerationSection = Field(default_factory=GenerationSection)
    save: SaveSection = Field(default_factory=SaveSection)
    adpo: ADPOSchedule = Field(default_factory=ADPOSchedule, description="ADPO's s(p̂) and ε_high(p̂)")


class PoolSection(_Section):
    """Each iteration's task pool (Agent0 §3.3): frozen curriculum → k executor samples → band."""

    size: int = Field(64, ge=1, description="tasks asked of the frozen curriculum per iteration")
    k: int = Field(10, ge=1, description="executor samples per task (Agent0: 10)")
    band: tuple[float, float] = Field(AGENT0_BAND.limits, description="keep tasks with low <= p̂ <= high (Agent0)")
    max_tasks: int | None = Field(None, ge=1, description="cap on the filtered set (null: all)")
    sampling: Sampling = Field(default_factory=lambda: replace(CURRICULUM_SAMPLING, max_tokens=256),
                                     description="the curriculum's sampling when writing tasks")
    max_concurrent_tasks: int = Field(8, ge=1, description="tasks sampled at once")

    @field_validator("band")
    @classmethod
    def _band(cls, band: tuple[float, float]) -> tuple[float, float]:
        low, high = band
        if not 0 <= low <= high <= 1:
            raise ValueError(f"band must be [low, high] with 0 <= low <= high <= 1 (got {list(band)})")
        return band


class EvaluationSection(_Section):
    """What each iteration is measured on."""

    heldout: str = Field("builtin:arithmetic", description="JSONL/YAML of {problem, answer}, or builtin:arithmetic")
    heldout_size: int | None = Field(None, ge=1, description="first N held-out problems (null: all)")
    samples: int = Field(1, ge=1, description="executor samples per held-out problem (accuracy = mean)")
    table5_tasks: int = Field(50, ge=0, description="tasks of each pool the iteration-1 executor answers (0: off)")
    table5_samples: int = Field(1, ge=1, description="its samples per task")


class CoevolveConfig(_Section):
    """The co-evolution run (Agent0 Algorithm 1)."""

    version: Literal[1] = COEVOLVE_CONFIG_VERSION
    run_dir: str = "runs/coevolve"
    iterations: int = Field(3, ge=1, description="T (Agent0: 3)")
    seed: int = 0
    curriculum: TrainConfig
    executor: ExecutorSection
    pool: PoolSection = Field(default_factory=PoolSection)
    evaluation: EvaluationSection = Field(default_factory=EvaluationSection)

    _sources: Any = PrivateAttr(default=None)

    def where(self, key: str) -> str:
        """The file line or flag that set ``key`` (dotted), ``"defaults"`` when none did."""
        return "defaults" if self._sources is None else self._sources.where(tuple(key.split(".")))

    def error(self, key: str, message: str, hint: str) -> ConfigError:
        return located_error(self.where(key), key, message, hint)

    @property
    def run_path(self) -> Path:
        return Path(self.run_dir)


def check(config: CoevolveConfig) -> None:
    """What the sections cannot check alone: keys the run sets itself, and settings that break the loop.

    Raises:
        ConfigError: naming the key, the file line or flag that set it, and the fix.
    """
    c, e = config.curriculum, config.executor
    if c.target.spec is not None:
        raise config.error("curriculum.target", "is set by the run (the current executor with its tools)",
                           "remove it; the executor is executor.model")
    for key, section in (("curriculum.training.output_dir", c.training), ("executor.training.output_dir", e.training)):
        if section.output_dir != DEFAULT_OUTPUT_DIR:
            raise config.error(key, "is set by the run", RUN_DIR_HINT)
    if c.curriculum.case_system is not None:
        raise config.error("curriculum.curriculum.case_system", "is set by the run: tasks carry the executor's "
                           "system prompt", "set executor.system instead")
    if c.reward.sampling != Sampling():
        raise config.error("curriculum.reward.sampling", "is set by the run: the curriculum's reward samples the "
                           "executor exactly as the pool does", "set executor.sampling instead")
    if e.sampler == "vllm" and c.generation.backend == "vllm" and c.generation.vllm_mode == "colocate":
        from frontier_qa.train._executor_target import VLLM_GPU_SHARE

        share = float(e.target_options.get("gpu_memory_utilization", VLLM_GPU_SHARE))
        if share + c.generation.vllm_gpu_memory_utilization > 0.9:
            raise config.error("executor.target_options.gpu_memory_utilization",
                               f"the executor's vLLM ({share}) and the curriculum's colocated vLLM "
                               f"({c.generation.vllm_gpu_memory_utilization}) would share one GPU beyond 90 %, "
                               "with the curriculum's training on it too",
                               "lower one of them (they sum to at most 0.9), or use executor.sampler: vllm-server "
                               "on its own GPU")
    for name, trained in (("curriculum", c), ("executor", e)):
        if trained.model.lora is not None and not trained.save.merged:
            raise config.error(f"{name}.save.merged", "must be true with LoRA: the next iteration starts from the "
                               "merged model", f"set {name}.save.merged: true")
    if c.curriculum.domain not in ("math", "general"):
        raise config.error("curriculum.curriculum.domain", f"{c.curriculum.domain!r} has no \\boxed{{}} answers to "
                           "take a majority of (the executor's pseudo-labels)", "use math or general")


class _Prefixed:
    """``Sources`` seen from inside one section (the nested curriculum config's own errors)."""

    def __init__(self, sources: Sources, prefix: tuple[str, ...]) -> None:
        self.sources, self.prefix = sources, prefix

    def where(self, path: tuple[str | int, ...]) -> str:
        return self.sources.where(self.prefix + tuple(path))


def load_coevolve_config(path: str | Path | None = None, overrides: Iterable[Override] = ()) -> CoevolveConfig:
    """Resolve the co-evolution configuration: flags > the file at ``path`` > defaults.

    Raises:
        ConfigError: every bad key, with the file line or flag that set it and the fix.
    """
    config = read_config(CoevolveConfig, path, overrides, version=COEVOLVE_CONFIG_VERSION,
                         doc="configs/coevolve/agent0.yaml")
    check(config)
    config.curriculum._sources = _Prefixed(config._sources, ("curriculum",))
    return config


__all__ = ["COEVOLVE_CONFIG_VERSION", "CoevolveConfig", "EvaluationSection", "ExecutorSection",
           "ExecutorTrainingSection", "PoolSection", "ToolsSection", "check", "load_coevolve_config"]


