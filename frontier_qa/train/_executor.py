"""Train the executor on its own frontier (Agent0 §3.3): ADPO on multi-turn tool rollouts.

:func:`train_executor` does it top to bottom, nanoGPT style::

    rows      the tasks the band filter kept, each with its pseudo-label ỹ (the executor's
              majority answer) and self-consistency p̂
    model     resolve it offline (folder, alias, or a name already in the HF cache)
    prompts   each task rendered by the model's chat template, as the probe asks it
    train     ADPOTrainer (GRPO + s(p̂), ε_high(p̂)) with the pseudo-label reward; each rollout
              runs the python tool in a sandbox (ToolRollout), tool output out of the loss;
              checkpoints every ``save_steps``; ``resume`` continues from the latest
    log       <output_dir>/rollouts.jsonl (every rollout: step, task, p̂, label, text with
              tool outputs, tool calls, reward) and metrics.jsonl (every logged row)
    save      <output_dir>/final: a plain transformers folder (LoRA merged)

Tool rollouts generate with transformers or, with ``generation.backend: vllm``, on TRL's own vLLM
engine (colocate or server mode, :mod:`frontier_qa.train._vllm_rollout`). TRL warns that
``rollout_func`` is experimental; that warning is silenced while the trainer is built
(``TRL_EXPERIMENTAL_SILENCE=1``) because the TRL internals used are pinned and checked
(:func:`~frontier_qa.train.tool_rollout.check_trl_rollout`, ``tests/train/test_tool_rollout.py``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from frontier_qa._optional import require
from frontier_qa.errors import ConfigError
from frontier_qa.store._lines import encode_line
from frontier_qa.target import Case
from frontier_qa.train.adpo import REFERENCE, ADPOSchedule, PseudoLabelReward, check_p_hat
from frontier_qa.train.config import GenerationSection, ModelSection, SaveSection, StepPlan, TrainingSection
from frontier_qa.train.tool_rollout import ToolRollout, ToolSettings

PURPOSE = "Training the executor (ADPO with tool rollouts)"
ROLLOUTS_FILE, METRICS_FILE = "rollouts.jsonl", "metrics.jsonl"
ROLLOUTS_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ExecutorRow:
    """One task of the executor's training set (a task the band filter kept).

    Attributes:
        task_id: the task's id (kept in ``rollouts.jsonl``).
        question: the task text, the user message.
        system: the system prompt the executor is asked with (``None``: none).
        pseudo_label: ỹ, the executor's majority answer: the reward's reference.
        p_hat: the executor's self-consistency on the task, in [0, 1] (ADPO's s(p̂), ε_high(p̂)).
    """

    task_id: str
    question: str
    system: str | None
    pseudo_label: str
    p_hat: float

    def __post_init__(self) -> None:
        where = f"executor task {self.task_id!r}"
        if not isinstance(self.question, str) or not self.question.strip():
            raise ConfigError(f"{where} has no question", hint="every task needs its text")
        if not isinstance(self.pseudo_label, str) or not self.pseudo_label.strip():
            raise ConfigError(f"{where} has no pseudo-label", hint="the pseudo-label is the executor's majority "
                              "answer; leave out tasks without one (no parseable answer)")
        object.__setattr__(self, "p_hat", check_p_hat(self.p_hat, where=f"{where}: p_hat"))


class RolloutRecord(BaseModel):
    """One training rollout as written to ``rollouts.jsonl``.

    Attributes:
        step: the optimizer step the rollout was generated for (1-based).
        task_id: the task.
        p_hat: the task's self-consistency.
        label: the pseudo-label ỹ.
        completion: what the model wrote, tool output blocks included.
        tool_calls: code blocks executed.
        tool_failures: executed blocks that failed.
        reward: 1 when the final ``\\boxed{}`` answer ≡ ỹ, else 0.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = ROLLOUTS_SCHEMA_VERSION
    step: int
    task_id: str
    p_hat: float
    label: str
    completion: str
    tool_calls: int
    tool_failures: int
    reward: float


def read_rollouts(path: str | os.PathLike[str]) -> list[RolloutRecord]:
    """Every record of a ``rollouts.jsonl``, in file order."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [RolloutRecord.model_validate_json(line) for line in lines if line.strip()]


@dataclass(frozen=True)
class ExecutorResult:
    """What an executor training run left behind.

    Attributes:
        output_dir: the run folder (``checkpoint-N/``, the logs, ``final/``).
        final_model: a transformers folder (``hf:<path>``); ``None`` when a LoRA run was told
            not to merge.
        adapter: the LoRA adapter folder (LoRA runs with ``save.adapter: true``).
        steps: optimizer steps done (all runs of a resumed training together).
        metrics_file: every logged row as JSON lines.
        rollouts_file: every rollout of this process as :class:`RolloutRecord` lines.
        rollouts: rollouts generated by this call (this process).
        tool_calls_per_rollout: their mean executed tool calls (``None`` without rollouts).
        reward_mean: their mean pseudo-label reward, a pass rate (``None`` without rollouts).
    """

    output_dir: Path
    final_model: Path | None
    adapter: Path | None
    steps: int
    metrics_file: Path
    rollouts_file: Path
    rollouts: int
    tool_calls_per_rollout: float | None
    reward_mean: float | None


class RecordedReward:
    """:class:`PseudoLabelReward` that also appends every scored rollout to ``rollouts.jsonl``.

    A TRL reward function; it reads the columns ``task_id``, ``p_hat``, ``pseudo_label`` (the
    dataset's) and ``tool_calls``, ``tool_failures`` (:class:`ToolRollout`'s).
    """

    def __init__(self, path: Path, reward: PseudoLabelReward | None = None) -> None:
        self.path = path
        self.reward = reward or PseudoLabelReward()
        self.__name__ = self.reward.__name__  # TRL names the reward's metrics after it
        self.scores: list[float] = []
        self.calls: list[int] = []

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        from frontier_qa.scoring.rewards import completion_text

        rewards = self.reward(prompts, completions, **columns)
        state = columns.get("trainer_state")
        step = int(getattr(state, "global_step", 0)) + 1
        n = len(completions)
        calls = list(columns.get("tool_calls") or [0] * n)
        failures = list(columns.get("tool_failures") or [0] * n)
        records = [RolloutRecord(step=step, task_id=str(task), p_hat=float(p), label=str(label),
                                 completion=completion_text(c), tool_calls=int(k), tool_failures=int(f), reward=r)
                   for task, p, label, c, k, f, r in zip(columns["task_id"], columns["p_hat"], columns["pseudo_label"],
                                                         completions, calls, failures, rewards, strict=True)]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as handle:  # one write per batch: a crash loses at most the batch in flight
            handle.write(b"".join(encode_line(r) for r in records))
        self.scores.extend(rewards)
        self.calls.extend(int(k) for k in calls)
        return rewards


def rollouts_path(output_dir: str | os.PathLike[str], rank: int = 0) -> Path:
    """Where process ``rank`` writes its rollouts under ``output_dir``."""
    return Path(output_dir) / (ROLLOUTS_FILE if rank == 0 else f"rollouts-rank{rank}.jsonl")


def step_plan(training: TrainingSection, world_size: int = 1) -> StepPlan:
    """Split ``prompts_per_step × num_generations`` rollouts per step over devices × micro-batches.

    Raises:
        ConfigError: the rollouts of one step do not split evenly.
    """
    t = training
    per_step = t.prompts_per_step * t.num_generations
    micro = t.per_device_train_batch_size * world_size
    if per_step % micro:
        raise ConfigError(
            f"training.per_device_train_batch_size: {t.prompts_per_step} tasks × {t.num_generations} rollouts = "
            f"{per_step} per step do not split into micro-batches of {t.per_device_train_batch_size} on "
            f"{world_size} device(s)", hint=f"choose per_device_train_batch_size so that {per_step} is a multiple of "
            f"it × {world_size}")
    accumulation = per_step // micro
    rollouts = per_step * t.updates_per_generation
    # no target is sampled while the executor trains: the sampling fields are 0
    return StepPlan(world_size, t.per_device_train_batch_size, accumulation, accumulation * t.updates_per_generation,
                    rollouts, rollouts // world_size, 0, 0)


@contextmanager
def _trl_experimental_silenced() -> Iterator[None]:
    before = os.environ.get("TRL_EXPERIMENTAL_SILENCE")
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TRL_EXPERIMENTAL_SILENCE", None)
        else:
            os.environ["TRL_EXPERIMENTAL_SILENCE"] = before


def _metrics_callback(path: Path, say: Callable[[str], None]) -> Any:
    from transformers import TrainerCallback

    class MetricsFile(TrainerCallback):
        """Appends every logged row to ``metrics.jsonl`` (main process) and reports it."""

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            if not state.is_world_process_zero or not logs:
                return
            row = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in logs.items()}
            row["step"] = state.global_step
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row, sort_keys=True) + "\n")
            say(_describe(row))

    return MetricsFile()


def _describe(row: dict[str, Any]) -> str:
    keys = ("reward", "tools/call_frequency", "tools/failure_frequency", "loss", "kl")
    shown = ", ".join(f"{k.split('/')[-1]} {row[k]:.3f}" for k in keys if isinstance(row.get(k), (int, float)))
    return f"step {row.get('step')}: {shown}" if shown else f"step {row.get('step')}: {row}"


def _prompt_rows(rows: Sequence[ExecutorRow], tokenizer: Any, need: int) -> list[dict[str, Any]]:
    """Dataset rows; cycled when fewer tasks than one generation round takes (TRL drops a partial one)."""
    from frontier_qa.train._prompts import render_text

    base = [{"prompt": render_text(tokenizer, Case(id=r.task_id, prompt=r.question, system=r.system)),
             "pseudo_label": r.pseudo_label, "p_hat": r.p_hat, "task_id": r.task_id} for r in rows]
    return base * max(1, math.ceil(need / len(base)))


def train_executor(rows: Sequence[ExecutorRow], *, model: ModelSection, training: TrainingSection,
                   generation: GenerationSection, save: SaveSection, tools: ToolSettings,
                   adpo: ADPOSchedule = REFERENCE, output_dir: str | os.PathLike[str], resume: bool = False,
                   progress: Callable[[str], None] | None = None,
                   instrument: Callable[[Any], None] | None = None) -> ExecutorResult:
    """Train the executor ``model`` with ADPO on ``rows``, with sandboxed tool rollouts.

    Args:
        rows: the frontier tasks with pseudo-labels and p̂ (Agent0 §3.3's filtered pool).
        model: the executor model (``path``, dtype, LoRA).
        training: GRPO settings (``prompts_per_step`` tasks × ``num_generations`` rollouts per
            step, lr, KL, temperature, top_p, ``max_completion_length`` in tokens incl. tool
            output, ``save_steps``); ``training.output_dir`` is ignored.
        generation: ``transformers``, ``vllm`` (TRL's colocate or server mode) or ``auto`` (vLLM when
            it is installed and a GPU is present).
        save: what is written at the end (merged model, LoRA adapter).
        tools: the tool loop (calls per rollout, output cap, sandbox limits).
        adpo: the s(p̂) / ε_high(p̂) schedule; the reference constants by default.
        output_dir: the run folder.
        resume: continue from the latest ``checkpoint-N`` in ``output_dir``.
        progress: called with one line per phase and per logged step.
        instrument: called with the trainer just before training (extra callbacks, profilers).

    Returns:
        An :class:`ExecutorResult`.

    Raises:
        MissingExtraError: torch / transformers / trl / peft are missing (``pip install 'frontier-qa[train]'``).
        ConfigError: no rows (the band filter kept no task), a model that cannot be loaded
            offline, a batch that does not split, nothing to resume from.
    """
    say = progress or (lambda line: None)
    if not rows:
        raise ConfigError("the band filter kept no task: there is nothing to train the executor on",
                          hint="widen the band, generate a larger pool, or skip executor training this iteration")
    for module in ("torch", "transformers", "trl", "accelerate", "datasets"):
        require(module, extra="train", purpose=PURPOSE)
    if model.lora is not None:
        require("peft", extra="train", purpose="LoRA training (model.lora)")
    import torch
    from accelerate import PartialState
    from datasets import Dataset
    from trl import GRPOConfig

    from frontier_qa.train._curriculum import (
        grpo_section_kwargs,
        load_tokenizer,
        lora_config,
        resolve_model_path,
        save_final_model,
        use_generation_vllm,
    )
    from frontier_qa.train.adpo_trainer import ADPOTrainer

    cuda = torch.cuda.is_available() and training.use_cpu is not True
    # cpu=True on a machine without a GPU: under `accelerate launch` a bare PartialState() there
    # sees one process, so the global batch would be planned for one and multiplied by every rank
    state = PartialState(cpu=not cuda)
    bf16_ok = cuda and torch.cuda.is_bf16_supported()
    output = Path(output_dir)
    plan = step_plan(training, state.num_processes)
    folder = resolve_model_path(model)
    tokenizer = load_tokenizer(model, folder)
    need = training.prompts_per_step * training.updates_per_generation
    dataset = Dataset.from_list(_prompt_rows(rows, tokenizer, need))
    if len(rows) < need:
        say(f"{len(rows)} task(s) for {need} per generation round: each is used up to "
            f"{math.ceil(need / len(rows))} times per round")
    args = GRPOConfig(**grpo_section_kwargs(model, training, generation, plan, output_dir=output, cuda=cuda,
                                            vllm=use_generation_vllm(generation, cuda), bf16_ok=bf16_ok))
    if state.is_main_process:
        from frontier_qa.redaction import redact_options  # a key in the sandbox env stays out

        output.mkdir(parents=True, exist_ok=True)
        record = {"model": model.model_dump(mode="json"),
                  "training": {**training.model_dump(mode="json"), "output_dir": str(output)},
                  "generation": generation.model_dump(mode="json"), "save": save.model_dump(mode="json"),
                  "tools": asdict(tools), "adpo": asdict(adpo), "tasks": len(rows)}
        (output / "executor-config.json").write_text(json.dumps(redact_options(record), indent=2), encoding="utf-8")
    reward = RecordedReward(rollouts_path(output, state.process_index))
    say(f"training {folder}: {len(rows)} task(s), {training.num_generations} rollouts each, "
        f"{training.max_steps} step(s), up to {tools.max_tool_turns} tool call(s) per rollout")
    with _trl_experimental_silenced():
        trainer = ADPOTrainer(model=str(folder), reward_funcs=[reward], args=args, train_dataset=dataset,
                              processing_class=tokenizer, peft_config=lora_config(model),
                              rollout_func=ToolRollout(tools), adpo=adpo)
    trainer.add_callback(_metrics_callback(output / METRICS_FILE, say))
    if progress is not None:  # one line per step instead of a bar and a printed dict
        from transformers import PrinterCallback, ProgressCallback

        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
    from frontier_qa.train._resume import train_resuming

    logs = [reward.path] + ([output / METRICS_FILE] if state.is_main_process else [])
    train_resuming(trainer, output, resume, logs, instrument=instrument, say=say)  # an interrupted step runs again
    final, adapter = save_final_model(trainer, model, save, output, folder, role="executor")
    n = len(reward.scores)
    return ExecutorResult(output, final, adapter, trainer.state.global_step, output / METRICS_FILE, reward.path, n,
                          sum(reward.calls) / n if n else None, sum(reward.scores) / n if n else None)


__all__ = ["ExecutorResult", "ExecutorRow", "RecordedReward", "RolloutRecord", "read_rollouts", "rollouts_path",
           "step_plan", "train_executor"]
