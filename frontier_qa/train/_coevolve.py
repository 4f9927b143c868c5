"""Agent0's co-evolution loop (Algorithm 1) on models the user owns: ``frontier-qa train coevolve``.

Each of T iterations, top to bottom::

    curriculum  GRPO on the curriculum model against the current executor *with its tools*
                (the curriculum trainer, Agent0 §3.2); iteration t continues from t − 1's model
    pool        the frozen curriculum writes ``pool.size`` tasks; the executor answers each k
                times with tools; p̂ and the majority answer ỹ per task (:mod:`.pool`)
    filter      keep 0.3 ≤ p̂ ≤ 0.8 (Agent0's band), label each kept task with ỹ
    executor    ADPO on multi-turn tool rollouts against the pseudo-labels (§3.3)
    evaluate    held-out accuracy of the new executor; the iteration-1 executor's pass rate
                and tool calls on this iteration's tasks (Table 5)

Everything goes under ``run_dir``: ``iter-N/curriculum``, ``iter-N/pool``, ``iter-N/executor``,
``state.json`` (which phases are done: ``--resume`` continues from the first that is not, and
inside a phase from its last checkpoint or its last written task), ``report.json`` and
``report.md`` (rewritten after every iteration).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from frontier_qa.errors import ConfigError
from frontier_qa.runtime import open_target, run_sync
from frontier_qa.runtime._local_models import resolve_model
from frontier_qa.target import Sampling
from frontier_qa.train import _pool as pools
from frontier_qa.train._coevolve_config import CoevolveConfig, check
from frontier_qa.train._coevolve_report import REPORT_JSON, REPORT_MD, write_report
from frontier_qa.train._coevolve_report import fmt as _fmt
from frontier_qa.train._coevolve_report import pct as _pct
from frontier_qa.train._evaluate import PassRate, Question, pass_rate
from frontier_qa.train._executor_target import (
    CACHE_DIR,
    OWN_MODEL_LIMITS,
    ExecutorTargets,
    close_target,
    executor_target_config,
    free_memory,
    model_options,
)
from frontier_qa.train._heldout import load_heldout

STATE_FILE, CONFIG_FILE = "state.json", "coevolve-config.json"
PHASES = ("curriculum", "pool", "executor", "evaluate")
Say = Callable[[str], None]


class IterationState(BaseModel):
    """What one iteration has done (``state.json``)."""

    done: list[str] = Field(default_factory=list)
    curriculum_model: str | None = None
    executor_model: str | None = None
    record: dict[str, Any] = Field(default_factory=dict)


class RunState(BaseModel):
    """The whole run's progress: the base executor's held-out score and each iteration's state."""

    version: int = 1
    base_executor: str | None = None
    baseline: dict[str, Any] | None = None
    iterations: dict[str, IterationState] = Field(default_factory=dict)

    def iteration(self, t: int) -> IterationState:
        return self.iterations.setdefault(str(t), IterationState())


@dataclass(frozen=True)
class CoevolveResult:
    """What a co-evolution run left behind.

    Attributes:
        run_dir: the run folder.
        iterations: iterations completed (all runs of a resumed run together).
        curriculum_model: the last curriculum model folder.
        executor_model: the last executor model folder.
        report: ``report.md``; ``report.json`` sits next to it.
        records: one dict per completed iteration (what ``report.json`` holds).
    """

    run_dir: Path
    iterations: int
    curriculum_model: Path
    executor_model: Path
    report: Path
    records: list[dict[str, Any]]


# --- state ------------------------------------------------------------------------------------------


def _comparable(config: CoevolveConfig) -> dict[str, Any]:
    data = config.model_dump(mode="json")
    data.pop("iterations", None)  # a finished run may be extended with more iterations
    return data


def _open_state(config: CoevolveConfig, resume: bool) -> RunState:
    run = config.run_path
    state_file = run / STATE_FILE
    if state_file.is_file() and not resume:
        raise ConfigError(f"{run} already holds a co-evolution run ({state_file})",
                          hint="pass --resume to continue it, or set run_dir to a new folder")
    if not state_file.is_file():
        run.mkdir(parents=True, exist_ok=True)
        from frontier_qa.redaction import redact_options

        (run / CONFIG_FILE).write_text(json.dumps(redact_options(_comparable(config)), indent=2), encoding="utf-8")
        return RunState()
    stored_file = run / CONFIG_FILE
    if stored_file.is_file():
        from frontier_qa.redaction import redact_options

        stored = json.loads(stored_file.read_text(encoding="utf-8"))
        now = redact_options(_comparable(config))
        changed = sorted(_diff(stored, now))
        if changed:
            raise ConfigError(f"cannot resume {run}: the configuration changed since it started ({', '.join(changed)})",
                              hint="resume with the same config (only `iterations` may change), or start a new "
                                   "run_dir")
    return RunState.model_validate_json(state_file.read_text(encoding="utf-8"))


def _diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += _diff(a.get(key), b.get(key), f"{prefix}{key}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]


def _save_state(config: CoevolveConfig, state: RunState) -> None:
    path = config.run_path / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(state.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(path)


# --- targets ----------------------------------------------------------------------------------------


def _sampling(s: Sampling, seed: int) -> Sampling:
    return replace(s, seed=seed)


# --- the phases ------------------------------------------------------------------------------------


def curriculum_config(config: CoevolveConfig, t: int, executor: Path, curriculum: str) -> Any:
    """Iteration ``t``'s curriculum training config: the file's, aimed at the current executor."""
    c = config.curriculum
    out = config.run_path / f"iter-{t}" / "curriculum"
    s = config.executor.sampling
    updated = c.model_copy(update={
        "model": c.model.model_copy(update={"path": curriculum}),
        "target": executor_target_config(config, executor, executor_cache(config)),
        "training": c.training.model_copy(update={"output_dir": str(out), "seed": c.training.seed + t - 1}),
        "reward": replace(c.reward, sampling=s),  # frozen: shared as is
        "curriculum": c.curriculum.model_copy(update={"case_system": config.executor.system}),
    })
    updated._sources = c._sources
    return updated


def _phase_curriculum(config: CoevolveConfig, t: int, it: IterationState, executors: ExecutorTargets,
                      executor: Path, curriculum: str, say: Say) -> None:
    from frontier_qa.train._curriculum import train_curriculum
    from frontier_qa.train._tasks import read_tasks, summarize

    cfg = curriculum_config(config, t, executor, curriculum)
    out = Path(cfg.training.output_dir)
    resume = any(out.glob("checkpoint-*"))
    say(f"[iter {t}] curriculum: GRPO on {curriculum} against {cfg.target.spec}" + (" (resuming)" if resume else ""))
    result = train_curriculum(cfg, target=executors.get(executor), resume=resume,
                              progress=lambda line: say(f"[iter {t}] curriculum {line}"))
    model = result.final_model or result.adapter
    if model is None:
        raise ConfigError("the curriculum run saved no model", hint="set curriculum.save.merged: true")
    steps = summarize(read_tasks(result.tasks_file)) if result.tasks_file.is_file() else []
    it.curriculum_model = str(model)
    it.record["curriculum"] = {
        "model": str(model), "steps": result.steps, "stopped": result.stopped,
        "per_step": [{"step": s.step, "reward": s.reward, "uncertainty": s.uncertainty, "tool": s.tool,
                      "repetition": s.repetition, "valid": s.valid, "frontier": s.frontier} for s in steps],
    }
    free_memory()


def _phase_pool(config: CoevolveConfig, t: int, it: IterationState, executors: ExecutorTargets, executor: Path,
                say: Say) -> None:
    from frontier_qa.train._curriculum import build_task_format

    folder = config.run_path / f"iter-{t}" / "pool"
    task_format = build_task_format(curriculum_config(config, t, executor, it.curriculum_model or ""))
    curriculum = open_target(f"hf:{it.curriculum_model}", limits=OWN_MODEL_LIMITS, cache=False,
                             **model_options(config.curriculum.model, {}))
    size = config.pool.size
    try:
        tasks = run_sync(pools.generate_tasks(curriculum, task_format, size, _sampling(config.pool.sampling,
                                                                                         config.seed + t),
                                              folder / pools.TASKS_FILE, offset=(t - 1) * size,
                                              max_concurrent=config.pool.max_concurrent_tasks,
                                              say=lambda line: say(f"[iter {t}] pool: {line}")))
    finally:
        close_target(curriculum)
    scored = run_sync(pools.label_tasks(executors.get(executor), tasks, k=config.pool.k,
                                        sampling=_sampling(config.executor.sampling, config.seed),
                                        out=folder / pools.SCORED_FILE, band=config.pool.band,
                                        max_concurrent=config.pool.max_concurrent_tasks,
                                        say=lambda line: say(f"[iter {t}] pool: {line}")))
    kept = pools.select(scored, config.pool.max_tasks)
    pools.write_jsonl(folder / pools.FILTERED_FILE, kept)
    summary = pools.summary(tasks, scored, kept)
    it.record["pool"] = summary
    say(f"[iter {t}] pool: {summary['valid']}/{summary['written']} valid tasks, {summary['distinct']} distinct, "
        f"{summary['kept']} in band {list(config.pool.band)}; tool calls per sample "
        f"{_fmt(summary['tool_calls_per_sample'])}")


def _phase_executor(config: CoevolveConfig, t: int, it: IterationState, executors: ExecutorTargets, executor: Path,
                    say: Say) -> None:
    folder = config.run_path / f"iter-{t}"
    kept = [s for s in pools.read_jsonl(folder / "pool" / pools.FILTERED_FILE, pools.ScoredTask) if s.majority]
    if not kept:
        say(f"[iter {t}] executor: no task in the band, the executor is not trained this iteration")
        it.executor_model = str(executor)
        it.record["executor"] = {"trained": False, "reason": "no task in the band", "model": str(executor)}
        return
    from frontier_qa.train._executor import ExecutorRow, train_executor
    from frontier_qa.train.tool_rollout import ToolSettings

    executors.release()  # the weights are about to change, and ADPO needs the memory

    e = config.executor
    out = folder / "executor"
    resume = any(out.glob("checkpoint-*"))
    rows = [ExecutorRow(task_id=s.task_id, question=s.question, system=s.system, pseudo_label=s.majority or "",
                        p_hat=s.p_hat) for s in kept]
    say(f"[iter {t}] executor: ADPO on {len(rows)} pseudo-labelled task(s), {e.training.num_generations} rollouts "
        f"each" + (" (resuming)" if resume else ""))
    result = train_executor(
        rows, model=e.model.model_copy(update={"path": str(executor)}),
        training=e.training.model_copy(update={"seed": e.training.seed + t - 1}), generation=e.generation,
        save=e.save, tools=ToolSettings(max_tool_turns=e.tools.max_tool_turns,
                                        output_max_chars=e.tools.output_max_chars, sandbox=e.tools.sandbox()),
        adpo=e.adpo, output_dir=out, resume=resume,
        progress=lambda line: say(f"[iter {t}] executor {line}"))
    model = result.final_model or result.adapter
    if model is None:
        raise ConfigError("the executor run saved no model", hint="set executor.save.merged: true")
    it.executor_model = str(model)
    it.record["executor"] = {"trained": True, "model": str(model), "steps": result.steps, "tasks": len(rows),
                             "reward_mean": result.reward_mean,
                             "tool_calls_per_rollout": result.tool_calls_per_rollout}
    free_memory()


HELDOUT_SEED, TABLE5_SEED = 7919, 104729  # sampling seed offsets: held-out and Table 5 draws differ from the pool's


def _measure(config: CoevolveConfig, executors: ExecutorTargets, model: Path, questions: list[Question], *,
             samples: int, seed: int) -> PassRate:
    """Grade the executor ``model`` (with its tools) on ``questions``."""
    return run_sync(pass_rate(executors.get(model), questions, samples=samples,
                              sampling=_sampling(config.executor.sampling, config.seed + seed),
                              max_concurrent=config.pool.max_concurrent_tasks))


def _heldout(config: CoevolveConfig, executors: ExecutorTargets, model: Path) -> PassRate:
    items = load_heldout(config.evaluation.heldout, limit=config.evaluation.heldout_size)
    questions = [Question(h.id, h.problem, h.answer, config.executor.system) for h in items]
    return _measure(config, executors, model, questions, samples=config.evaluation.samples, seed=HELDOUT_SEED)


def _phase_evaluate(config: CoevolveConfig, t: int, it: IterationState, state: RunState, executors: ExecutorTargets,
                    say: Say) -> None:
    folder = config.run_path / f"iter-{t}"
    n = config.evaluation.table5_tasks
    scored = pools.read_jsonl(folder / "pool" / pools.SCORED_FILE, pools.ScoredTask)
    questions = [Question(s.task_id, s.question, s.majority, s.system) for s in scored if s.majority][:n]
    if n and questions:  # first: the held-out run below leaves the new executor open for the next iteration
        first = _measure(config, executors, Path(state.base_executor or ""), questions,
                         samples=config.evaluation.table5_samples, seed=TABLE5_SEED)
        it.record["table5"] = first.as_dict()
        say(f"[iter {t}] iteration-1 executor on these tasks: pass rate {_pct(first.rate)}, "
            f"{_fmt(first.tool_calls_per_task)} tool calls per task")
    acc = _heldout(config, executors, Path(it.executor_model or ""))
    it.record["heldout"] = acc.as_dict()
    say(f"[iter {t}] held-out accuracy {_pct(acc.rate)} ({acc.correct}/{acc.samples}), "
        f"{_fmt(acc.tool_calls_per_task)} tool calls per answer")


def _baseline(config: CoevolveConfig, state: RunState, executors: ExecutorTargets, say: Say) -> None:
    if state.baseline is not None:
        return
    acc = _heldout(config, executors, Path(state.base_executor or ""))
    state.baseline = acc.as_dict()
    say(f"[base] held-out accuracy of the starting executor {_pct(acc.rate)} ({acc.correct}/{acc.samples})")


def executor_cache(config: CoevolveConfig) -> Path:
    """Where every executor sample of the run is cached (keyed by the executor model's id)."""
    return config.run_path / CACHE_DIR


def check_launcher(environ: Mapping[str, str] | None = None) -> None:
    """Refuse to run under a multi-process launcher (``accelerate launch``, ``torchrun``).

    Every process would write the same pools and state, start its own executor engine and train
    both models on its own: the run is one process, which may still use several GPUs through
    the executor's sampler (``vllm-server`` with ``tensor_parallel_size``) and the trainers'
    own vLLM generation.

    Raises:
        ConfigError: ``WORLD_SIZE`` (set by those launchers) is above 1.
    """
    env = os.environ if environ is None else environ
    try:
        world = int(env.get("WORLD_SIZE", "1") or 1)
    except ValueError:
        world = 1
    if world > 1:
        raise ConfigError(
            f"frontier-qa train coevolve runs as one process, but it was started as process "
            f"{env.get('RANK', '?')} of {world} (WORLD_SIZE={world}, set by accelerate launch / torchrun)",
            hint="run `frontier-qa train coevolve --config ...` without a launcher; for more GPUs give the executor "
                 "its own server (executor.sampler: vllm-server, executor.target_options.extra_args: "
                 "[--tensor-parallel-size, N]); `frontier-qa train curriculum` alone does run under accelerate launch")


# --- the run ---------------------------------------------------------------------------------------


def run_coevolution(config: CoevolveConfig, *, resume: bool = False, progress: Say | None = None) -> CoevolveResult:
    """Run (or, with ``resume``, continue) ``config.iterations`` co-evolution iterations.

    Raises:
        MissingExtraError: the ``train`` extra is missing.
        ConfigError: a model that cannot be loaded offline, a run_dir holding another run,
            a resumed run whose configuration changed.
        TargetError: the executor cannot be sampled (the pool so far stays on disk).
    """
    say = progress or (lambda line: None)
    from frontier_qa._optional import require

    for module in ("torch", "transformers", "trl", "accelerate", "datasets"):
        require(module, extra="train", purpose="Co-evolution training (frontier-qa train coevolve)")
    check(config)
    check_launcher()
    state = _open_state(config, resume)
    if state.base_executor is None:
        try:
            state.base_executor = str(resolve_model(config.executor.model.path)[0])
        except ConfigError as err:
            raise config.error("executor.model.path", err.message, err.hint or "give a local model folder") from None
        _save_state(config, state)
    started = time.monotonic()
    executor, curriculum = Path(state.base_executor), config.curriculum.model.path
    with ExecutorTargets(config, say) as executors:  # closed however the run ends
        _baseline(config, state, executors, say)
        _save_state(config, state)
        for t in range(1, config.iterations + 1):
            it = state.iteration(t)
            # partial, not lambda: each phase is bound to this iteration's models when it is listed
            phases: dict[str, Callable[[], None]] = {
                "curriculum": partial(_phase_curriculum, config, t, it, executors, executor, curriculum, say),
                "pool": partial(_phase_pool, config, t, it, executors, executor, say),
                "executor": partial(_phase_executor, config, t, it, executors, executor, say),
                "evaluate": partial(_phase_evaluate, config, t, it, state, executors, say),
            }
            for name, phase in phases.items():  # in PHASES order; a resumed run skips what is done
                if name not in it.done:
                    phase()
                    it.done.append(name)
                    _save_state(config, state)
                    if name == "evaluate":
                        write_report(config, state)
            executor, curriculum = Path(it.executor_model or executor), it.curriculum_model or curriculum
    report = write_report(config, state)
    say(f"co-evolution: {config.iterations} iteration(s) in {time.monotonic() - started:.0f} s; report: {report}")
    records = [state.iterations[str(t)].record for t in range(1, config.iterations + 1)]
    return CoevolveResult(config.run_path, config.iterations, Path(curriculum), executor, report, records)


__all__ = ["REPORT_JSON", "REPORT_MD", "CoevolveResult", "RunState", "check_launcher", "curriculum_config",
           "executor_target_config", "run_coevolution", "write_report"]
