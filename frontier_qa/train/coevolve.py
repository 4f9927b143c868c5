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

import gc
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field

from frontier_qa.config import TargetConfig
from frontier_qa.errors import ConfigError
from frontier_qa.runtime import Limits, open_target, run_sync
from frontier_qa.runtime.local_models import resolve_model
from frontier_qa.target import Sampling, Target
from frontier_qa.train import pool as pools
from frontier_qa.train.coevolve_config import CoevolveConfig, check
from frontier_qa.train.evaluate import PassRate, Question, pass_rate
from frontier_qa.train.heldout import load_heldout

STATE_FILE, REPORT_JSON, REPORT_MD, CONFIG_FILE = "state.json", "report.json", "report.md", "coevolve-config.json"
PHASES = ("curriculum", "pool", "executor", "evaluate")
Say = Callable[[str], None]


class IterationState(BaseModel):
    """What one iteration has done (``state.json``)."""

    done: list[str] = Field(default_factory=list)
    curriculum_model: Optional[str] = None
    executor_model: Optional[str] = None
    record: dict[str, Any] = Field(default_factory=dict)


class RunState(BaseModel):
    """The whole run's progress: the base executor's held-out score and each iteration's state."""

    version: int = 1
    base_executor: Optional[str] = None
    baseline: Optional[dict[str, Any]] = None
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
        from frontier_qa.runtime.redact import redact_options

        (run / CONFIG_FILE).write_text(json.dumps(redact_options(_comparable(config)), indent=2), encoding="utf-8")
        return RunState()
    stored_file = run / CONFIG_FILE
    if stored_file.is_file():
        from frontier_qa.runtime.redact import redact_options

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


def _model_options(model: Any, extra: dict[str, Any]) -> dict[str, Any]:
    options = dict(extra)
    if model.dtype != "auto":
        options.setdefault("dtype", model.dtype)
    if model.chat_template is not None:
        options.setdefault("chat_template", model.chat_template)
    if model.trust_remote_code:
        options.setdefault("trust_remote_code", True)
    return options


def executor_target_config(config: CoevolveConfig, model: Path, cache: Path | bool) -> TargetConfig:
    """The executor as a target: ``tools+hf:<model>`` with the run's sandbox and hf options."""
    return TargetConfig(spec=f"tools+hf:{model}", options=_model_options(config.executor.model,
                                                                          config.executor.target_options),
                        tool_options=config.executor.tools.executor_options(),
                        cache=str(cache) if isinstance(cache, Path) else cache)


def open_executor(config: CoevolveConfig, model: Path, cache: Path | bool) -> Target:
    t = executor_target_config(config, model, cache)
    return open_target(t.spec or "", limits=Limits(), cache=t.cache if t.cache is not False else False,
                       tool_options=t.tool_options, **t.options)


def _close(target: Target) -> None:
    close = getattr(target, "aclose", None)
    if close is not None:
        run_sync(close())
    del target
    _free_memory()


def _free_memory() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover - the train extra brings torch
        pass


def _sampling(s: Any, seed: int) -> Sampling:
    return Sampling(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, stop=tuple(s.stop), seed=seed)


# --- the phases ------------------------------------------------------------------------------------


def curriculum_config(config: CoevolveConfig, t: int, executor: Path, curriculum: str) -> Any:
    """Iteration ``t``'s curriculum training config: the file's, aimed at the current executor."""
    c = config.curriculum
    out = config.run_path / f"iter-{t}" / "curriculum"
    s = config.executor.sampling
    updated = c.model_copy(update={
        "model": c.model.model_copy(update={"path": curriculum}),
        "target": executor_target_config(config, executor, out / "cache"),
        "training": c.training.model_copy(update={"output_dir": str(out), "seed": c.training.seed + t - 1}),
        "reward": c.reward.model_copy(update={"sampling": s.model_copy()}),
        "curriculum": c.curriculum.model_copy(update={"case_system": config.executor.system}),
    })
    updated._sources = c._sources
    return updated


def _phase_curriculum(config: CoevolveConfig, t: int, it: IterationState, executor: Path, curriculum: str,
                      say: Say) -> None:
    from frontier_qa.train.curriculum import train_curriculum
    from frontier_qa.train.tasks import read_tasks, summarize

    cfg = curriculum_config(config, t, executor, curriculum)
    out = Path(cfg.training.output_dir)
    resume = any(out.glob("checkpoint-*"))
    say(f"[iter {t}] curriculum: GRPO on {curriculum} against tools+hf:{executor}"
        + (" (resuming)" if resume else ""))
    result = train_curriculum(cfg, resume=resume, progress=lambda line: say(f"[iter {t}] curriculum {line}"))
    model = result.final_model or result.adapter
    if model is None:
        raise ConfigError("the curriculum run saved no model", hint="set curriculum.save.merged: true")
    steps = summarize(read_tasks(result.tasks_file)) if result.tasks_file.is_file() else []
    it.curriculum_model = str(model)
    it.record["curriculum"] = {
        "model": str(model), "steps": result.steps, "stopped": result.stopped,
        "per_step": [{"step": s.step, "reward": s.reward, "uncertainty": s.uncertainty, "tool": s.tool,
                      "repetition": s.repetition, "valid": s.valid} for s in steps],
    }
    _free_memory()


def _phase_pool(config: CoevolveConfig, t: int, it: IterationState, executor: Path, say: Say) -> None:
    from frontier_qa.train.curriculum import build_task_format

    folder = config.run_path / f"iter-{t}" / "pool"
    task_format = build_task_format(curriculum_config(config, t, executor, it.curriculum_model or ""))
    curriculum = open_target(f"hf:{it.curriculum_model}", limits=Limits(), cache=False,
                             **_model_options(config.curriculum.model, {}))
    size = config.pool.size
    try:
        tasks = run_sync(pools.generate_tasks(curriculum, task_format, size, _sampling(config.pool.sampling,
                                                                                         config.seed + t),
                                              folder / pools.TASKS_FILE, offset=(t - 1) * size,
                                              max_concurrent=config.pool.max_concurrent_tasks,
                                              say=lambda line: say(f"[iter {t}] pool: {line}")))
    finally:
        _close(curriculum)
    target = open_executor(config, executor, folder / "cache")
    try:
        scored = run_sync(pools.score_tasks(target, tasks, k=config.pool.k,
                                            sampling=_sampling(config.executor.sampling, config.seed),
                                            out=folder / pools.SCORED_FILE, band=config.pool.band,
                                            max_concurrent=config.pool.max_concurrent_tasks,
                                            say=lambda line: say(f"[iter {t}] pool: {line}")))
    finally:
        _close(target)
    kept = pools.select(scored, config.pool.max_tasks)
    pools.write_jsonl(folder / pools.FILTERED_FILE, kept)
    summary = pools.summary(tasks, scored, kept)
    it.record["pool"] = summary
    say(f"[iter {t}] pool: {summary['valid']}/{summary['written']} valid tasks, {summary['distinct']} distinct, "
        f"{summary['kept']} in band {list(config.pool.band)}; tool calls per sample "
        f"{_fmt(summary['tool_calls_per_sample'])}")


def _phase_executor(config: CoevolveConfig, t: int, it: IterationState, executor: Path, say: Say) -> None:
    folder = config.run_path / f"iter-{t}"
    kept = [s for s in pools.read_jsonl(folder / "pool" / pools.FILTERED_FILE, pools.ScoredTask) if s.majority]
    if not kept:
        say(f"[iter {t}] executor: no task in the band, the executor is not trained this iteration")
        it.executor_model = str(executor)
        it.record["executor"] = {"trained": False, "reason": "no task in the band", "model": str(executor)}
        return
    from frontier_qa.train.executor import ExecutorRow, train_executor
    from frontier_qa.train.tool_rollout import ToolSettings

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
        adpo=e.adpo.schedule(), output_dir=out, resume=resume,
        progress=lambda line: say(f"[iter {t}] executor {line}"))
    model = result.final_model or result.adapter
    if model is None:
        raise ConfigError("the executor run saved no model", hint="set executor.save.merged: true")
    it.executor_model = str(model)
    it.record["executor"] = {"trained": True, "model": str(model), "steps": result.steps, "tasks": len(rows),
                             "reward_mean": result.reward_mean,
                             "tool_calls_per_rollout": result.tool_calls_per_rollout}
    _free_memory()


HELDOUT_SEED, TABLE5_SEED = 7919, 104729  # sampling seed offsets: held-out and Table 5 draws differ from the pool's


def _measure(config: CoevolveConfig, model: Path, cache: Path, questions: list[Question], *, samples: int,
             seed: int) -> PassRate:
    """Open the executor ``model`` with its tools, grade it on ``questions``, close it."""
    target = open_executor(config, model, cache)
    try:
        return run_sync(pass_rate(target, questions, samples=samples,
                                  sampling=_sampling(config.executor.sampling, config.seed + seed),
                                  max_concurrent=config.pool.max_concurrent_tasks))
    finally:
        _close(target)


def _heldout(config: CoevolveConfig, model: Path, cache: Path) -> PassRate:
    items = load_heldout(config.evaluation.heldout, limit=config.evaluation.heldout_size)
    questions = [Question(h.id, h.problem, h.answer, config.executor.system) for h in items]
    return _measure(config, model, cache, questions, samples=config.evaluation.samples, seed=HELDOUT_SEED)


def _phase_evaluate(config: CoevolveConfig, t: int, it: IterationState, state: RunState, say: Say) -> None:
    folder = config.run_path / f"iter-{t}"
    acc = _heldout(config, Path(it.executor_model or ""), folder / "eval-cache")
    it.record["heldout"] = acc.as_dict()
    say(f"[iter {t}] held-out accuracy {_pct(acc.rate)} ({acc.correct}/{acc.samples}), "
        f"{_fmt(acc.tool_calls_per_task)} tool calls per answer")
    n = config.evaluation.table5_tasks
    scored = pools.read_jsonl(folder / "pool" / pools.SCORED_FILE, pools.ScoredTask)
    questions = [Question(s.task_id, s.question, s.majority, s.system) for s in scored if s.majority][:n]
    if n and questions:
        first = _measure(config, Path(state.base_executor or ""), config.run_path / "cache-executor-1", questions,
                         samples=config.evaluation.table5_samples, seed=TABLE5_SEED)
        it.record["table5"] = first.as_dict()
        say(f"[iter {t}] iteration-1 executor on these tasks: pass rate {_pct(first.rate)}, "
            f"{_fmt(first.tool_calls_per_task)} tool calls per task")


def _baseline(config: CoevolveConfig, state: RunState, say: Say) -> None:
    if state.baseline is not None:
        return
    acc = _heldout(config, Path(state.base_executor or ""), config.run_path / "cache-executor-1")
    state.baseline = acc.as_dict()
    say(f"[base] held-out accuracy of the starting executor {_pct(acc.rate)} ({acc.correct}/{acc.samples})")


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
    state = _open_state(config, resume)
    if state.base_executor is None:
        try:
            state.base_executor = str(resolve_model(config.executor.model.path)[0])
        except ConfigError as err:
            raise config.error("executor.model.path", err.message, err.hint or "give a local model folder") from None
        _save_state(config, state)
    started = time.monotonic()
    _baseline(config, state, say)
    _save_state(config, state)
    executor, curriculum = Path(state.base_executor), config.curriculum.model.path
    for t in range(1, config.iterations + 1):
        it = state.iteration(t)
        if "curriculum" not in it.done:
            _phase_curriculum(config, t, it, executor, curriculum, say)
            it.done.append("curriculum")
            _save_state(config, state)
        if "pool" not in it.done:
            _phase_pool(config, t, it, executor, say)
            it.done.append("pool")
            _save_state(config, state)
        if "executor" not in it.done:
            _phase_executor(config, t, it, executor, say)
            it.done.append("executor")
            _save_state(config, state)
        if "evaluate" not in it.done:
            _phase_evaluate(config, t, it, state, say)
            it.done.append("evaluate")
            _save_state(config, state)
            write_report(config, state)
        executor, curriculum = Path(it.executor_model or executor), it.curriculum_model or curriculum
    report = write_report(config, state)
    say(f"co-evolution: {config.iterations} iteration(s) in {time.monotonic() - started:.0f} s; report: {report}")
    records = [state.iterations[str(t)].record for t in range(1, config.iterations + 1)]
    return CoevolveResult(config.run_path, config.iterations, Path(curriculum), executor, report, records)


# --- the report ------------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def write_report(config: CoevolveConfig, state: RunState) -> Path:
    """``report.json`` (every number) and ``report.md`` (the tables) for the iterations done so far."""
    run = config.run_path
    done = [(int(t), s) for t, s in sorted(state.iterations.items(), key=lambda kv: int(kv[0]))
            if "evaluate" in s.done]
    data = {"baseline": state.baseline, "base_executor": state.base_executor,
            "iterations": [{"iteration": t, **s.record} for t, s in done]}
    (run / REPORT_JSON).write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    lines = [f"# Co-evolution report: {run}", "",
             f"{len(done)} of {config.iterations} iteration(s) done. Band {list(config.pool.band)}, "
             f"k = {config.pool.k}, pool {config.pool.size} tasks per iteration.", "",
             "## Held-out accuracy", "", "| executor | accuracy | tool calls per answer |", "|---|---|---|"]
    base = state.baseline or {}
    lines.append(f"| starting model | {_pct(base.get('rate'))} | {_fmt(base.get('tool_calls_per_task'))} |")
    for t, s in done:
        h = s.record.get("heldout", {})
        lines.append(f"| after iteration {t} | {_pct(h.get('rate'))} | {_fmt(h.get('tool_calls_per_task'))} |")
    lines += ["", "## Pools", "",
              "| iteration | written | valid | distinct | in band | mean p̂ | tool calls / sample "
              "| p̂ histogram (0-1, 10 bins) |",
              "|---|---|---|---|---|---|---|---|"]
    for t, s in done:
        p = s.record.get("pool", {})
        lines.append(f"| {t} | {p.get('written')} | {p.get('valid')} | {p.get('distinct')} | {p.get('kept')} | "
                     f"{_fmt(p.get('mean_p_hat'))} | {_fmt(p.get('tool_calls_per_sample'))} | "
                     f"{' '.join(map(str, p.get('p_hat_histogram', [])))} |")
    lines += ["", "## Task difficulty and tool use (Agent0 Table 5)", "",
              "Pass rate of the iteration-1 executor on each iteration's tasks (graded against that iteration's "
              "pseudo-labels), and its tool calls per task.", "",
              "| tasks | pass rate | tool calls per task |", "|---|---|---|"]
    for t, s in done:
        r = s.record.get("table5")
        if r:
            lines.append(f"| D_iter{t} | {_pct(r.get('rate'))} | {_fmt(r.get('tool_calls_per_task'))} |")
    lines += ["", "## Training", "", "| iteration | curriculum steps | curriculum reward (last step) | "
              "executor | ADPO steps | executor reward | tool calls / rollout |", "|---|---|---|---|---|---|---|"]
    for t, s in done:
        c, e = s.record.get("curriculum", {}), s.record.get("executor", {})
        last = (c.get("per_step") or [{}])[-1]
        lines.append(f"| {t} | {c.get('steps')} | {_fmt(last.get('reward'))} | "
                     f"{'trained' if e.get('trained') else e.get('reason', '-')} | {e.get('steps', '-')} | "
                     f"{_fmt(e.get('reward_mean'))} | {_fmt(e.get('tool_calls_per_rollout'))} |")
    lines += ["", "Models: " + ", ".join(f"iteration {t}: curriculum `{s.curriculum_model}`, executor "
                                           f"`{s.executor_model}`" for t, s in done), ""]
    (run / REPORT_MD).write_text("\n".join(lines), encoding="utf-8")
    return run / REPORT_MD


__all__ = ["CoevolveResult", "RunState", "curriculum_config", "executor_target_config", "run_coevolution",
           "write_report"]
