"""One run that says whether co-evolution works, and how fast, on the device at hand.

``python benchmarks/gpu_validation.py --config configs/coevolve/agent0.yaml`` (on a GPU) or
``--tiny`` (on CPU, tiny models built on the fly; what CI runs) measures, in one process:

1. **curriculum steps** (the co-evolution's first phase, against the executor through
   ``executor.sampler``): per optimizer step the wall time split into generation (TRL's
   generate, timed around ``_generate_single_turn``), executor reward sampling (the reward
   function's own clock) and the rest (log-probs, backward, optimizer); generated tokens per
   second; peak memory (this process's, and the GPU's in use by every process at each step's end,
   which counts a vLLM engine in its own process); the PPO clip fractions; mean R_unc and the
   share of tasks in the band;
2. **the same steps with plain TRL** ``GRPOTrainer`` on the same model, prompts and settings with
   a reward that costs nothing: the ratio says what the executor's sampling adds to a step;
3. **executor ADPO steps** on the tasks of step 1..n that landed in the band (labelled with the
   executor's majority, as the pool does): the pseudo-label reward per step, its time split
   (tool rollouts / the rest), tool calls and clip fractions.

The first step of each phase includes warm-up (kernels, caches); means are over the later
steps when there are any. Nothing here is mocked: the numbers are the trainers' own.
"""

from __future__ import annotations

import json
import math
import platform
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frontier_qa.train._coevolve_config import CoevolveConfig

Say = Callable[[str], None]


class Clock:
    """Times a trainer's optimizer steps and the generation inside them.

    ``attach`` wraps the trainer's generation (``_generate_single_turn`` for the curriculum,
    its ``rollout_func`` for the executor's tool rollouts) and adds a step callback.
    """

    def __init__(self) -> None:
        self.steps: list[tuple[int, float, float]] = []  # (step, begin, end)
        self.generations: list[tuple[float, float, int]] = []  # (begin, end, tokens generated)
        self.gpu_in_use: list[float] = []  # GiB in use on the GPU at each step's end, every process counted

    def gpu_peak(self) -> float | None:
        """The most GPU memory in use at a step's end (a vLLM engine in its own process included)."""
        return max(self.gpu_in_use) if self.gpu_in_use else None

    def attach(self, trainer: Any) -> None:
        from transformers import TrainerCallback

        clock = self
        begin: dict[str, float] = {}

        class Steps(TrainerCallback):
            def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                begin["t"] = time.perf_counter()

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                clock.steps.append((state.global_step, begin.pop("t", time.perf_counter()), time.perf_counter()))
                import torch

                if torch.cuda.is_available():
                    free, total = torch.cuda.mem_get_info()
                    clock.gpu_in_use.append((total - free) / 2**30)

        trainer.add_callback(Steps())
        if getattr(trainer, "rollout_func", None) is not None:
            rollout = trainer.rollout_func

            def timed_rollout(prompts: Any, owner: Any) -> Any:
                started = time.perf_counter()
                out = rollout(prompts, owner)
                model_tokens = sum(sum(mask) for mask in out.get("env_mask") or [])
                self.generations.append((started, time.perf_counter(), int(model_tokens)))
                return out

            trainer.rollout_func = timed_rollout
        elif hasattr(trainer, "_generate_single_turn"):
            generate = trainer._generate_single_turn

            def timed_generate(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                completion_ids, logprobs = generate(*args, **kwargs)
                self.generations.append((started, time.perf_counter(), sum(len(ids) for ids in completion_ids)))
                return completion_ids, logprobs

            trainer._generate_single_turn = timed_generate

    def split(self, sampling: Sequence[tuple[int, float, float]] = ()) -> list[dict[str, Any]]:
        """Per optimizer step: wall, generation, sampling (reward or tools) and the rest, in seconds."""
        out = []
        for step, begin, end in self.steps:
            inside = [(b, e, n) for b, e, n in self.generations if begin <= b <= end]
            generation = sum(e - b for b, e, _ in inside)
            tokens = sum(n for _, _, n in inside)
            reward = sum(e - b for _, b, e in sampling if begin <= b <= end)
            wall = end - begin
            out.append({"step": step, "wall_s": wall, "generation_s": generation, "sampling_s": reward,
                        "optimizer_s": max(0.0, wall - generation - reward), "generated_tokens": tokens,
                        "tokens_per_s": tokens / generation if generation > 0 else None})
        return out


def _rows(path: Path) -> dict[int, dict[str, Any]]:
    """metrics.jsonl rows by step (TRL's per-step rows; the final summary row is left out)."""
    rows: dict[int, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if "train_runtime" not in row and "step" in row:
                rows.setdefault(int(row["step"]), {}).update(row)
    return rows


def _mean(values: list[Any]) -> float | None:
    known = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(known) / len(known) if known else None


def _summary(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over the steps after the first (warm-up) when there are any."""
    later = steps[1:] or steps
    keys = [k for k in (steps[0] if steps else {}) if k != "step"]
    return {k: _mean([s.get(k) for s in later]) for k in keys}


def _memory(torch: Any, cuda: bool) -> float:
    """Peak memory in GiB: this process's on the GPU (torch's allocator) since the last reset, else its peak RSS."""
    if cuda:
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def _reset_memory(torch: Any, cuda: bool) -> None:
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _length_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """Plain GRPO's reward here: free to compute, and it varies, so the update is real."""
    from frontier_qa.scoring.rewards import completion_text

    return [float(len(completion_text(c))) for c in completions]


def _plain_grpo(cfg: Any, steps: int, out: Path) -> list[dict[str, Any]]:
    """The curriculum's steps with TRL's own ``GRPOTrainer`` and a free reward, timed the same way."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from frontier_qa.train._curriculum import (
        build_task_format,
        grpo_kwargs,
        load_tokenizer,
        lora_config,
        resolve_model_path,
        use_vllm,
    )
    from frontier_qa.train.config import plan_step

    cuda = torch.cuda.is_available() and cfg.training.use_cpu is not True
    folder = resolve_model_path(cfg)
    tokenizer = load_tokenizer(cfg, folder)
    plan = plan_step(cfg, 1)
    rows = build_task_format(cfg).rows(tokenizer, cfg.training.prompts_per_step * cfg.training.updates_per_generation
                                       * steps)
    kwargs = grpo_kwargs(cfg, plan, cuda=cuda, vllm=use_vllm(cfg, cuda),
                         bf16_ok=cuda and torch.cuda.is_bf16_supported())
    kwargs.update(output_dir=str(out), max_steps=steps, save_strategy="no", disable_tqdm=True)
    trainer = GRPOTrainer(model=str(folder), reward_funcs=[_length_reward], args=GRPOConfig(**kwargs),
                          train_dataset=Dataset.from_list([r.as_row() for r in rows]), processing_class=tokenizer,
                          peft_config=lora_config(cfg.model))
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # its per-step dicts: the report has the numbers
    clock = Clock()
    clock.attach(trainer)
    trainer.train()
    del trainer
    return clock.split()


def validate(config: CoevolveConfig, *, steps: int = 3, executor_steps: int = 3, out: str | Path,
             say: Say = lambda line: None, weights: str = "trained", executor_fallback: bool = False,
             model: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the three measurements on ``config`` (a co-evolution config; its first iteration's
    settings) and write ``<out>/validation.json``, after each phase too (a run cut off by a
    timeout keeps the phases it finished).

    Args:
        config: what to validate (models, sampler, batch sizes); ``run_dir`` is replaced by ``out``.
        steps: curriculum optimizer steps (and plain GRPO steps).
        executor_steps: ADPO steps.
        out: the folder for the runs and the report.
        say: progress lines.
        weights: ``"trained"``, or ``"random"`` for randomly initialised models: the report then
            says that its figures are speed and memory, not learning.
        executor_fallback: when no task of the curriculum's steps lands in the band, still time
            ADPO on those tasks (their measured p̂, their majority answer or the placeholder label
            ``"0"``; the report names this source). Random weights leave the band empty, and
            without this the ADPO step would go unmeasured.
        model: what the models are (name, parameters, dtype...), written into the report as is.

    Returns:
        The report (what ``validation.json`` holds).
    """
    import torch

    from frontier_qa.runtime._local_models import resolve_model
    from frontier_qa.train._coevolve import curriculum_config
    from frontier_qa.train._curriculum import train_curriculum
    from frontier_qa.train._executor import ExecutorRow, train_executor
    from frontier_qa.train._executor_target import ExecutorTargets
    from frontier_qa.train._pool import keep_task
    from frontier_qa.train._tasks import read_tasks
    from frontier_qa.train.tool_rollout import ToolSettings

    root = Path(out)
    config = config.model_copy(update={"run_dir": str(root)})
    cuda = torch.cuda.is_available() and config.curriculum.training.use_cpu is not True
    device = torch.cuda.get_device_name(0) if cuda else f"CPU ({platform.processor() or platform.machine()}, " \
                                                         f"{torch.get_num_threads()} threads)"
    executor = resolve_model(config.executor.model.path)[0]
    report: dict[str, Any] = {"device": device, "versions": _versions(), "sampler": config.executor.sampler,
                              "weights": weights}
    if weights == "random":
        report["note"] = RANDOM_NOTE
    if model is not None:
        report["model"] = model

    cfg = curriculum_config(config, 1, executor, config.curriculum.model.path)
    cfg = cfg.model_copy(update={"training": cfg.training.model_copy(update={"max_steps": steps, "save_steps": 10**6})})
    cfg._sources = config.curriculum._sources
    report["settings"] = {"prompts_per_step": cfg.training.prompts_per_step, "num_generations":
                          cfg.training.num_generations, "updates_per_generation": cfg.training.updates_per_generation,
                          "max_completion_length": cfg.training.max_completion_length, "k": cfg.reward.k,
                          "executor_rollouts": config.executor.training.num_generations}
    with ExecutorTargets(config, say) as executors:
        say(f"[1/3] curriculum: {steps} step(s) against {cfg.target.spec}")
        _reset_memory(torch, cuda)
        clock = Clock()
        rewards: list[Any] = []

        def instrument(trainer: Any) -> None:
            clock.attach(trainer)
            rewards.append(trainer.reward_funcs[0])

        result = train_curriculum(cfg, target=executors.get(executor), instrument=instrument,
                                  progress=lambda line: say(f"      {line}"))
        split = clock.split(rewards[0].calls if rewards else [])
        logged = _rows(result.metrics_file)
        for s in split:
            row = logged.get(s["step"], {})
            s.update(uncertainty=row.get("curriculum/uncertainty"), in_band=row.get("curriculum/frontier_share"),
                     reward=row.get("reward"), clip_region=row.get("clip_ratio/region_mean"),
                     clip_high=row.get("clip_ratio/high_mean"))
        report["curriculum"] = {"steps": split, "mean": _summary(split), "peak_memory_gib": _memory(torch, cuda),
                                "gpu_in_use_gib": clock.gpu_peak()}
        tasks = read_tasks(result.tasks_file)
        _write(root, report)
    say(f"[2/3] plain TRL GRPOTrainer: the same {steps} step(s), a free reward")
    _reset_memory(torch, cuda)
    plain = _plain_grpo(cfg, steps, root / "plain-grpo")
    report["plain_grpo"] = {"steps": plain, "mean": _summary(plain), "peak_memory_gib": _memory(torch, cuda)}
    ours, theirs = report["curriculum"]["mean"], report["plain_grpo"]["mean"]
    report["ratio_to_plain_grpo"] = {k: (ours[k] / theirs[k] if ours.get(k) and theirs.get(k) else None)
                                     for k in ("wall_s", "generation_s", "optimizer_s")}
    report["speed_vs_plain_grpo"] = _speed(split, plain)
    _write(root, report)

    band = config.pool.band
    seen: dict[str, ExecutorRow] = {}
    for t in tasks:
        if t.question and t.p_hat is not None and keep_task(t.p_hat, t.majority, band)[0] and t.case_id:
            seen.setdefault(t.case_id, ExecutorRow(task_id=t.case_id, question=t.question,
                                                   system=config.executor.system,
                                                   pseudo_label=t.majority or "", p_hat=t.p_hat))
    e = config.executor
    report["executor"] = {"tasks_in_band": len(seen), "band": list(band), "tasks_source": "in band"}
    if not seen and executor_fallback:
        for t in tasks:
            if t.question and t.case_id:
                seen.setdefault(t.case_id, ExecutorRow(task_id=t.case_id, question=t.question,
                                                       system=config.executor.system,
                                                       pseudo_label=t.majority or "0", p_hat=t.p_hat or 0.0))
        report["executor"]["tasks_source"] = ("the curriculum's tasks outside the band (none was in it), with "
                                              "their p̂ and majority answer or the placeholder label '0': "
                                              "times ADPO, its rewards mean nothing")
    if not seen:
        say(f"[3/3] executor: no task of the curriculum's steps is in the band {list(band)}; ADPO not measured")
    else:
        say(f"[3/3] executor: {executor_steps} ADPO step(s) on {len(seen)} task(s) in the band")
        _reset_memory(torch, cuda)
        clock = Clock()
        done = train_executor(
            list(seen.values()), model=e.model.model_copy(update={"path": str(executor)}),
            training=e.training.model_copy(update={"max_steps": executor_steps, "save_steps": 10**6}),
            generation=e.generation, save=e.save.model_copy(update={"merged": False, "adapter": False})
            if e.model.lora else e.save,
            tools=ToolSettings(max_tool_turns=e.tools.max_tool_turns, output_max_chars=e.tools.output_max_chars,
                               sandbox=e.tools.sandbox()),
            adpo=e.adpo, output_dir=root / "executor", instrument=clock.attach,
            progress=lambda line: say(f"      {line}"))
        split = clock.split()
        logged = _rows(done.metrics_file)
        for s in split:
            row = logged.get(s["step"], {})
            s["tool_rollout_s"] = s.pop("generation_s")
            s.update(pseudo_label_reward=row.get("rewards/pseudo_label/mean"),
                     tool_calls=row.get("tools/call_frequency"), clip_region=row.get("clip_ratio/region_mean"),
                     clip_high=row.get("clip_ratio/high_mean"))
        report["executor"].update(steps=split, mean=_summary(split), peak_memory_gib=_memory(torch, cuda),
                                  gpu_in_use_gib=clock.gpu_peak())
    _write(root, report)
    return report


def _write(root: Path, report: dict[str, Any]) -> None:
    """``<root>/validation.json``, replaced whole (a reader never sees half a file)."""
    root.mkdir(parents=True, exist_ok=True)
    partial = root / "validation.json.partial"
    partial.write_text(json.dumps(report, indent=2), encoding="utf-8")
    partial.replace(root / "validation.json")


RANDOM_NOTE = ("Randomly initialised weights: these figures are speed and memory only. The models write noise up to "
               "the token limit; R_unc, the band, rewards and clip fractions say nothing about learning.")


def _speed(curriculum: list[dict[str, Any]], plain: list[dict[str, Any]]) -> dict[str, Any]:
    """Plain TRL's time over ours for the parts both do (generation and the rest), summed over the
    steps after the first (warm-up) when there are any.

    The curriculum's whole step also samples the executor, which plain GRPO (a free reward) does
    not, so the whole-step ratio measures that sampling, not the trainer's overhead; this one
    does. The goal is ≥ 0.95: the curriculum trainer at most ≈ 5 % slower than TRL's own.
    """
    def parts(steps: list[dict[str, Any]]) -> float:
        later = steps[1:] or steps
        return sum(s["generation_s"] + s["optimizer_s"] for s in later)

    ours, theirs = parts(curriculum), parts(plain)
    return {"generation_and_rest_s": ours, "plain_generation_and_rest_s": theirs,
            "speed": theirs / ours if ours > 0 and theirs > 0 else None, "goal": 0.95}


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("torch", "transformers", "trl", "vllm"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _cell(value: Any, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def markdown(report: dict[str, Any]) -> str:
    """The report as tables (what the benchmark prints)."""
    c, p, e = report["curriculum"], report["plain_grpo"], report["executor"]
    model = report.get("model")
    lines = [f"device: {report['device']}; executor sampler: {report['sampler']}; "
             + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v)]
    if model:
        lines.append(f"model: {model['name']}, {model['parameters']:,} parameters, "
                     f"vocabulary {model['size']['vocab']}, {model['dtype']}, {model['weights']} weights")
    lines += ["settings: " + ", ".join(f"{k} {v}" for k, v in report.get("settings", {}).items()), "",
             "| phase | step | wall s | generation s | executor sampling s | rest s | tokens/s | R_unc | in band "
             "| clip | pseudo-label reward |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, phase in (("curriculum", c), ("plain GRPO", p)):
        for s in phase["steps"]:
            lines.append(f"| {name} | {s['step']} | {_cell(s['wall_s'])} | {_cell(s['generation_s'])} | "
                         f"{_cell(s['sampling_s'] if name == 'curriculum' else None)} | {_cell(s['optimizer_s'])} | "
                         f"{_cell(s['tokens_per_s'], '{:.0f}')} | {_cell(s.get('uncertainty'))} | "
                         f"{_cell(s.get('in_band'))} | {_cell(s.get('clip_region'), '{:.3f}')} | - |")
    for s in e.get("steps", []):
        lines.append(f"| executor | {s['step']} | {_cell(s['wall_s'])} | {_cell(s['tool_rollout_s'])} | - | "
                     f"{_cell(s['optimizer_s'])} | {_cell(s['tokens_per_s'], '{:.0f}')} | - | - | "
                     f"{_cell(s.get('clip_region'), '{:.3f}')} | {_cell(s.get('pseudo_label_reward'))} |")
    r, speed = report["ratio_to_plain_grpo"], report.get("speed_vs_plain_grpo") or {}
    lines += ["", f"speed vs plain TRL GRPOTrainer on generation + rest: {_cell(speed.get('speed'))}× "
              f"(goal ≥ {speed.get('goal', 0.95)}×; plain {_cell(speed.get('plain_generation_and_rest_s'))} s, "
              f"curriculum {_cell(speed.get('generation_and_rest_s'))} s over the steps after the first)",
              f"curriculum step / plain GRPO step: {_cell(r['wall_s'])}× (generation {_cell(r['generation_s'])}×, "
              f"rest {_cell(r['optimizer_s'])}×); peak memory: curriculum {c['peak_memory_gib']:.1f} GiB, plain "
              f"{p['peak_memory_gib']:.1f} GiB" + (f", executor {e['peak_memory_gib']:.1f} GiB" if "steps" in e else "")
              + (f"; GPU in use at a step's end (every process): curriculum {c['gpu_in_use_gib']:.1f} GiB"
                 if c.get("gpu_in_use_gib") is not None else "")
              + f"; executor tasks in the band {e['tasks_in_band']}"]
    if e.get("tasks_source", "in band") != "in band" and "steps" in e:
        lines.append(f"ADPO tasks: {e['tasks_source']}")
    if report.get("note"):
        lines += ["", f"**{report['note']}**"]
    return "\n".join(lines)


__all__ = ["Clock", "markdown", "validate"]
