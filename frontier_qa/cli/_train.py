"""``frontier-qa train``: train a curriculum model against the agent under test.

* ``train curriculum --config configs/train/curriculum-cpu.yaml`` runs GRPO (Agent0 §3.2) and
  writes ``OUT/checkpoint-N/``, ``OUT/final/`` (a model folder for ``frontier-qa probe
  --curriculum trained:OUT/final``), ``OUT/tasks.jsonl`` and ``OUT/metrics.jsonl``;
* ``train coevolve --config configs/coevolve/cpu.yaml`` runs Agent0's co-evolution loop on
  models you own: curriculum GRPO, task pool, band filter, executor ADPO with sandboxed tool
  rollouts, per-iteration report (``--resume`` continues an interrupted run);
* ``train merge CHECKPOINT --out DIR`` merges a LoRA checkpoint into a plain model folder;
* ``train summary OUT`` prints the per-step means of every reward term from ``OUT/tasks.jsonl``.

Past one GPU the same command runs under ``accelerate launch`` (``configs/accelerate/``)::

    accelerate launch --config_file configs/accelerate/deepspeed_zero2.yaml \\
        -m frontier_qa train curriculum --config configs/train/curriculum-agent0.yaml

Exit codes: 0 done (also when the target budget ended training early, with a checkpoint),
2 a usage, configuration, budget or target error, 130 interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from frontier_qa.cli._flags import FlagRule, print_config, to_key
from frontier_qa.cli._flags import overrides as flag_overrides
from frontier_qa.cli.app import command_group
from frontier_qa.config import Override
from frontier_qa.errors import ConfigError

_FLAGS: dict[str, FlagRule] = {
    "model": to_key("model.path", "--model"),
    "target": to_key("target.spec", "--target"),
    "max_steps": to_key("training.max_steps", "--max-steps"),
    "output_dir": to_key("training.output_dir", "--output-dir"),
    "k": to_key("reward.k", "--k"),
    "budget_calls": to_key("budget.max_calls", "--budget-calls"),
    "seed": to_key("training.seed", "--seed"),
}


_COEVOLVE_FLAGS: dict[str, FlagRule] = {
    "iterations": to_key("iterations", "--iterations"),
    "run_dir": to_key("run_dir", "--run-dir"),
}


def overrides(flags: dict[str, Any], sets: list[str]) -> list[Override]:
    """Flag values (``None``: not given) as config overrides; ``--set`` ones last (they win)."""
    return flag_overrides(flags, sets, _FLAGS)


def curriculum(
    config: Path | None = typer.Option(None, "--config", "-c", help="Training config (configs/train/*.yaml)."),
    model: str | None = typer.Option(None, "--model", help="Curriculum model: folder, alias or cached name."),
    target: str | None = typer.Option(None, "--target", help="The agent under test (any target spec)."),
    max_steps: int | None = typer.Option(None, "--max-steps", help="Optimizer steps."),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Run folder (checkpoints, tasks, final)."),
    k: int | None = typer.Option(None, "--k", help="Target samples per generated task."),
    budget_calls: int | None = typer.Option(None, "--budget-calls", help="Most target calls for the run."),
    seed: int | None = typer.Option(None, "--seed", help="Training seed."),
    sets: list[str] = typer.Option([], "--set", help="Any config key: --set training.learning_rate=1e-5."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the latest checkpoint in the run folder."),
    resume_from: Path | None = typer.Option(None, "--resume-from", help="Continue from this checkpoint folder."),
    show_config: bool = typer.Option(False, "--show-config", help="Print the resolved configuration and exit."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No per-step lines."),
) -> None:
    """Train a curriculum model with GRPO so that it proposes the target's frontier tasks."""
    from frontier_qa.train.config import load_train_config

    flags = {"model": model, "target": target, "max_steps": max_steps, "output_dir": output_dir, "k": k,
             "budget_calls": budget_calls, "seed": seed}
    resolved = load_train_config(config, overrides(flags, sets))
    if show_config:
        print_config(resolved)
        raise typer.Exit(0)
    from frontier_qa.train._curriculum import train_curriculum

    try:
        result = train_curriculum(resolved, resume=str(resume_from) if resume_from else resume,
                                  progress=None if quiet else (lambda line: typer.echo(line, err=True)))
    except KeyboardInterrupt:
        typer.echo(f"\ninterrupted: checkpoints and tasks so far are in {resolved.training.output_dir}; "
                   "run again with --resume to continue", err=True)
        raise typer.Exit(130) from None
    if result.stopped == "budget":
        typer.echo(f"stopped after step {result.steps}: the target budget ran out (a checkpoint was saved; raise "
                   "the budget and run again with --resume)", err=True)
    if not quiet and result.tasks_file.is_file():  # did it learn: the reward curve and the weights' change
        from frontier_qa.train._learning import reward_curve
        from frontier_qa.train._tasks import read_tasks, summarize

        typer.echo(reward_curve(summarize(read_tasks(result.tasks_file))), err=True)
    if result.weight_change is not None:
        typer.echo(result.weight_change.describe(), err=True)
    typer.echo(f"trained {result.steps} step(s); tasks: {result.tasks_file}; metrics: {result.metrics_file}")
    if result.final_model is not None:
        typer.echo(f"model: {result.final_model}")
        typer.echo(f"probe with it: frontier-qa probe --curriculum trained:{result.final_model} --target ...")
    if result.adapter is not None:
        typer.echo(f"LoRA adapter: {result.adapter}")


def coevolve(
    config: Path | None = typer.Option(None, "--config", "-c", help="Co-evolution config (configs/coevolve/*.yaml)."),
    iterations: int | None = typer.Option(None, "--iterations", help="T, the number of iterations."),
    run_dir: Path | None = typer.Option(None, "--run-dir", help="Run folder (iterations, state, report)."),
    sets: list[str] = typer.Option([], "--set", help="Any config key: --set pool.k=8."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in run_dir where it stopped."),
    show_config: bool = typer.Option(False, "--show-config", help="Print the resolved configuration and exit."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No per-phase lines."),
) -> None:
    """Co-evolve a curriculum and an executor you own from zero data (Agent0 Algorithm 1)."""
    from frontier_qa.train._coevolve_config import load_coevolve_config

    if config is None:  # no defaults: both models and every phase's settings come from the file
        raise ConfigError("train coevolve needs --config FILE (both models and every phase's settings)",
                          hint="start from configs/coevolve/cpu.yaml (SmolLM2 on CPU) or "
                               "configs/coevolve/agent0.yaml (Agent0's settings, GPU)")

    resolved = load_coevolve_config(config, flag_overrides({"iterations": iterations, "run_dir": run_dir}, sets,
                                                           _COEVOLVE_FLAGS))
    if show_config:
        print_config(resolved)
        raise typer.Exit(0)
    from frontier_qa.train._coevolve import run_coevolution

    try:
        result = run_coevolution(resolved, resume=resume,
                                 progress=None if quiet else (lambda line: typer.echo(line, err=True)))
    except KeyboardInterrupt:
        typer.echo(f"\ninterrupted: everything done so far is in {resolved.run_dir}; run again with --resume to "
                   "continue from there", err=True)
        raise typer.Exit(130) from None
    typer.echo(f"co-evolved {result.iterations} iteration(s); report: {result.report}")
    typer.echo(f"executor: {result.executor_model}")
    typer.echo(f"curriculum: {result.curriculum_model}")


def merge(
    adapter: Path = typer.Argument(..., help="A LoRA checkpoint (checkpoint-N or final-adapter)."),
    out: Path = typer.Option(..., "--out", help="Where the merged model folder goes."),
    base: Path | None = typer.Option(None, "--base", help="Base model folder (default: the adapter's own)."),
    dtype: str = typer.Option("auto", "--dtype", help="auto | float32 | bfloat16 | float16"),
) -> None:
    """Merge a LoRA checkpoint into a plain model folder (usable as hf:DIR and trained:DIR)."""
    from frontier_qa.errors import ConfigError
    from frontier_qa.train._curriculum import merge_adapter

    if dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise ConfigError(f"--dtype {dtype!r} is not understood", hint="use auto, float32, bfloat16 or float16")
    folder = merge_adapter(adapter, out, dtype=dtype, base=base)
    typer.echo(f"merged model: {folder}")


def summary(
    run: Path = typer.Argument(..., help="A run folder (or its tasks.jsonl)."),
) -> None:
    """Per-step means of every reward term, from the run's tasks.jsonl."""
    from frontier_qa.train._learning import reward_curve
    from frontier_qa.train._tasks import TASKS_FILE, read_tasks, summarize

    path = run / TASKS_FILE if run.is_dir() else run
    typer.echo(reward_curve(summarize(read_tasks(path))))


def register(app: typer.Typer) -> None:
    """Add the ``train`` command group (curriculum, coevolve, merge, summary) to ``app``."""
    train_app = command_group(
        "train", "Train a curriculum against your agent (Agent0 §3.2), or co-evolve both agents (Algorithm 1).")
    train_app.command("curriculum")(curriculum)
    train_app.command("coevolve")(coevolve)
    train_app.command("merge")(merge)
    train_app.command("summary")(summary)
    app.add_typer(train_app, name="train")


__all__ = ["overrides", "register"]
