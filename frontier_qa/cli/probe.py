"""``frontier-qa probe``, ``replay``, ``export``, ``merge`` and ``schema``.

``probe`` finds where a target's ability ends and writes the report folder::

    OUT/cases.jsonl    the latest record of every case of the run (one JSON line each)
    OUT/report.json    machine-readable report (versioned), with the gate's decision
    OUT/junit.xml      one test case per probed case, for CI test views
    OUT/report.md      a summary for a pull request or a job page
    OUT/report.html    a self-contained page with the frontier map and p̂ histogram

Exit codes (:mod:`frontier_qa.exit_codes`): 0 the gate passed, 1 it failed (failures,
frontier share, replay regressions over their limits), 2 a usage or configuration error, 3
the run could not judge the agent (target unavailable, every call failed, no valid case,
too many unresolved, an empty curriculum, nothing to replay: the reason comes first), 130
interrupted (Ctrl-C: every classified case is already in the store; the command says how to
resume).

``replay`` holds stored cases (or a committed suite) to their baselines and reports
regressions; ``export`` writes a committable suite (findings, guards, baselines); ``merge``
joins CI shards' stores (and reports on them); ``schema`` prints the config file's JSON Schema.
``accept`` is in :mod:`frontier_qa.cli.accept`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import typer

from frontier_qa.cli.flags import FlagRule, fixed, print_config, to_key
from frontier_qa.cli.flags import overrides as flag_overrides
from frontier_qa.config import (
    Override,
    ProbeConfig,
    ProbeParts,
    build_probe,
    gate_thresholds,
    json_schema,
    load_config,
)
from frontier_qa.errors import ConfigError
from frontier_qa.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from frontier_qa.probing.sequential import POLICIES
from frontier_qa.store.case_store import CaseStore, encode_line
from frontier_qa.store.records import CLASS_ORDER, CaseClass, CaseRecord, RunRecord
from frontier_qa.store.stop_reason import StopReason

CASES_FILE = "cases.jsonl"
SHOWN_VERDICTS = 5  # regressions explained on the console (the reports list them all)
SHOWN_REMOVED = 5  # cases validation removed, named on the console with the reason

_CONFIG = typer.Option(None, "--config", "-c", help="YAML config (see configs/example.yaml).")
_TARGET = typer.Option(None, "--target", help="Target spec: litellm:…, openai:MODEL@URL, hf:…, python:FILE:ATTR, http://…")
_STORE = typer.Option(None, "--store", help="Case store directory (default .frontier-qa).")
_OUT = typer.Option(None, "--out", help="Report folder (default frontier-qa-report).")
_SET = typer.Option([], "--set", help="Any config key: --set probing.k=6 (repeatable).")
_FORMAT = typer.Option([], "--format", help="Report format: json, junit, md, html (repeatable; default all).")
_PROGRESS = typer.Option("auto", "--progress",
                         help="auto | rich | plain | off (auto: a bar on a terminal, lines in CI).")
_SHOW = typer.Option(False, "--show-config", help="Print the resolved configuration and exit.")
_WAIT = typer.Option(False, "--wait", help="If another process is writing this run, wait for it instead of exit 2.")
_NO_CACHE = typer.Option(False, "--no-cache", help="Sample afresh: neither read nor write the sample cache.")
_POLICY_HELP = "Sampling policy: " + "; ".join(f"{p.name}: {p.summary}" for p in POLICIES.values()) + "."
# options that probe, replay and merge share (one help text each)
_BUDGET_CALLS = typer.Option(None, "--budget-calls", help="Most model calls of the run.")
_MAX_COST = typer.Option(None, "--max-cost-usd", help="Most US dollars of the run.")
_K = typer.Option(None, "--k", help="Samples per case (the most, with sequential sampling).")
_POLICY = typer.Option(None, "--policy", help=_POLICY_HELP)
_SEED = typer.Option(None, "--seed", help="The run's seed.")
_JUDGE = typer.Option(None, "--judge", help="Judge model spec for stable answers.")
_RUN_ID = typer.Option(None, "--run-id", help="Name of the run (shards of one CI job share it).")
_SHARD = typer.Option(None, "--shard", help="Run shard i of n: --shard 2/4.")
_FRONTIER_FAIL = typer.Option(False, "--frontier-as-failure", help="junit.xml: frontier cases fail.")
_MAX_FAILURES = typer.Option(None, "--max-failures", help="Gate: most failures.")
_MAX_FRONTIER = typer.Option(None, "--max-frontier-share", help="Gate: most frontier share.")
_MAX_REGRESSIONS = typer.Option(None, "--max-regressions", help="Gate: most replay regressions.")


# --- flags → config ------------------------------------------------------------------------------


def _curriculum(text: str) -> list[Override]:
    """``--curriculum``: ``FILE``, ``file:PATH``, ``prompted:MODEL_SPEC`` or ``trained:CHECKPOINT``."""
    flag = f"--curriculum {text}"
    kind, sep, rest = text.partition(":")
    if sep and kind in ("prompted", "trained") and rest:
        return [Override("curriculum.type", kind, flag), Override("curriculum.model.spec", rest, flag)]
    if sep and kind == "file" and rest:
        text = rest
    elif Path(text).suffix.lower() not in (".jsonl", ".json", ".ndjson", ".yaml", ".yml"):
        raise ConfigError(f"--curriculum {text!r} is not understood",
                          hint="pass a cases file (*.jsonl, *.yaml), file:PATH, prompted:MODEL_SPEC "
                               "or trained:CHECKPOINT")
    return [Override("curriculum.type", "file", flag), Override("curriculum.path", text, flag)]


def _band(text: str) -> Any:
    if text in ("agent0", "tool-r0"):
        return text
    low, sep, high = text.partition(":")
    try:
        if sep:
            return {"low": float(low), "high": float(high)}
    except ValueError:
        pass
    raise ConfigError(f"--band {text!r} is not understood", hint="use agent0, tool-r0 or LOW:HIGH, e.g. 0.3:0.8")


# Every config flag of the commands below, by parameter name. A command passes the flags it
# has to overrides() by these names; a flag not in the table is a programming error.
FLAGS: dict[str, FlagRule] = {
    "target": to_key("target.spec", "--target"),
    "curriculum": _curriculum,
    "domain": to_key("curriculum.domain", "--domain"),
    "topic": lambda value: [Override("curriculum.topics", list(value), "--topic")],
    "tools": to_key("curriculum.tools", "--tools"),
    "budget_calls": to_key("budget.max_calls", "--budget-calls"),
    "budget_tokens": to_key("budget.max_tokens", "--budget-tokens"),
    "max_cost_usd": to_key("budget.max_cost_usd", "--max-cost-usd"),
    "k": to_key("probing.k", "--k"),
    "policy": to_key("probing.policy", "--policy"),
    "band": lambda value: [Override("probing.band", _band(value), f"--band {value}")],
    "max_candidates": to_key("probing.max_candidates", "--max-candidates"),
    "concurrency": to_key("probing.concurrency", "--concurrency"),
    "seed": to_key("probing.seed", "--seed"),
    "judge": to_key("probing.judge.spec", "--judge"),
    "critic": to_key("validation.critic.spec", "--critic"),
    "scope": to_key("probing.replay_scope", "--scope"),
    "max_replay": to_key("probing.max_replay", "--max-replay"),
    "no_replay": fixed("probing.replay_first", False, "--no-replay"),
    "no_cache": fixed("target.cache", False, "--no-cache"),
    "out": to_key("output.dir", "--out"),
    "store": to_key("store", "--store"),
    "shard": to_key("shard", "--shard"),
    "suite": to_key("replay.suite", "--suite"),
    "formats": lambda value: [Override("output.formats", list(value), "--format")],
    "frontier_as_failure": fixed("output.frontier_as_failure", True, "--frontier-as-failure"),
    "max_failures": to_key("gate.max_failures", "--max-failures"),
    "max_frontier_share": to_key("gate.max_frontier_share", "--max-frontier-share"),
    "max_regressions": to_key("gate.max_regressions", "--max-regressions"),
}
# ``replay`` has a gate of its own (regressions fail it; known failures in a suite do not).
REPLAY_FLAGS: dict[str, FlagRule] = {
    **FLAGS,
    "max_failures": to_key("replay.gate.max_failures", "--max-failures"),
    "max_regressions": to_key("replay.gate.max_regressions", "--max-regressions"),
    "max_flaky": to_key("replay.gate.max_flaky", "--max-flaky"),
    "max_inconclusive": to_key("replay.gate.max_inconclusive", "--max-inconclusive"),
}


def overrides(flags: Mapping[str, Any], sets: Sequence[str], table: Mapping[str, FlagRule] = FLAGS) -> list[Override]:
    """Flag values (``None``: not given) as config overrides by ``table``; ``--set`` ones last (they win)."""
    return flag_overrides(flags, sets, table)


# --- running -------------------------------------------------------------------------------------


def _progress(mode: str, title: str, total: int | None) -> Any:
    from frontier_qa.probing.progress import ProbeProgress

    return ProbeProgress(mode, total=total, title=title)


def _check_progress(mode: str) -> None:
    from frontier_qa.probing.progress import MODES

    if mode not in MODES:  # checked before any model is opened
        raise ConfigError(f"--progress {mode!r} is not understood", hint=f"use one of: {', '.join(MODES)}")


def _resume_id(parts: ProbeParts, wanted: str | None) -> str:
    """The run to resume: the one named, or this shard's latest interrupted run for the target
    that no live process is still writing.
    """
    if wanted:
        return wanted
    shard = parts.settings.shard
    index = shard.index if shard else 1
    open_runs = [r for r in parts.store.interrupted_runs() if r.shard_index == index and r.target_id == parts.target.id]
    idle = [r for r in open_runs if not parts.store.is_live(r.run_id, index)]
    if not idle:
        live = f" ({len(open_runs)} still running: {', '.join(r.run_id for r in open_runs)})" if open_runs else ""
        raise ConfigError(f"no interrupted run of target {parts.target.id!r} (shard {index}) in {parts.store.root}"
                          f"{live}",
                          hint="start a new run without --resume, or name one: --resume RUN_ID (--wait waits "
                          "for a running one)")
    return idle[-1].run_id


def _budget_tracker(target: Any) -> Any:
    """The run's shared budget tracker behind a target (a tools+ executor wraps one)."""
    for part in (target, getattr(target, "inner", None)):
        tracker = getattr(part, "budget", None)
        if tracker is not None and hasattr(tracker, "interrupt"):
            return tracker
    return None


@contextlib.contextmanager
def _interrupts(parts: ProbeParts) -> Iterator[None]:
    """Ctrl-C while a run goes on: the first stops new calls and lets those in flight finish
    (their samples are cached and the classified cases stored); the second quits at once.

    Quitting at once is ``os._exit``: every record and cached sample is already on disk
    (appends and SQLite transactions are atomic), the run's lease and cache claims die with
    the process, and no thread still inside an agent or a model can hold the exit up.
    """
    tracker = _budget_tracker(parts.target)
    loop = asyncio.get_running_loop()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses == 1 and tracker is not None:
            tracker.interrupt()
            typer.echo(f"\ninterrupted: no new calls start; waiting for the {tracker.in_flight} call(s) in flight "
                       "(their samples are kept). Ctrl-C again to quit now.", err=True)
            return
        typer.echo("\ninterrupted again: quitting now; classified cases and finished samples are kept.", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or not POSIX
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def _probe(parts: ProbeParts, run_id: str, resume: bool, progress: Any, wait: bool = False) -> Any:
    from frontier_qa.probing.engine import probe

    try:
        assert parts.curriculum is not None
        with _interrupts(parts):
            return await probe(parts.target, parts.curriculum, parts.settings, store=parts.store, run_id=run_id,
                           resume=resume, validator=parts.validator, judge=parts.judge, progress=progress,
                           wait=wait)
    finally:
        await parts.aclose()


async def _replay(parts: ProbeParts, run_id: str | None, cases: Any, progress: Any, wait: bool = False) -> Any:
    from frontier_qa.probing.engine import replay

    try:
        with _interrupts(parts):
            return await replay(parts.target, parts.store, parts.settings, run_id=run_id, cases=cases,
                                judge=parts.judge, progress=progress, wait=wait)
    finally:
        await parts.aclose()


def _interrupted(store: CaseStore, run_id: str, command: str) -> typer.Exit:
    done = len(store.latest(run_id=run_id)) if store.runs_dir.is_dir() else 0
    typer.echo(f"\ninterrupted: {done} classified case(s) of run {run_id} are safe in {store.root}.", err=True)
    if command == "probe":
        typer.echo(f"to continue, run the same command again with: --resume {run_id}", err=True)
    return typer.Exit(EXIT_INTERRUPTED)


def check_out_dir(config: Any) -> Path:
    """``output.dir``, refused before a run starts when it names an existing file."""
    out = Path(config.output.dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; the reports go into a folder",
                          hint="give --out a folder name (it is created), e.g. --out frontier-qa-report")
    return out


def write_outputs(
    config: ProbeConfig,
    records: Sequence[CaseRecord],
    run: RunRecord | None,
    *,
    comparisons: Sequence[Any] = (),
    gate: Any,
    band: tuple[float, float] | None,
    facts: Any = None,
    store: CaseStore | None = None,
) -> tuple[dict[str, Path], Any]:
    """Write ``cases.jsonl`` and the reports into ``output.dir``; returns paths and the gate.

    ``facts`` (:class:`~frontier_qa.reports.RunFacts`) feed the health checks; ``store`` gives
    each case's earlier observations for the trend lines.
    """
    from frontier_qa.reports import write_reports
    from frontier_qa.store.baselines import history

    out = check_out_dir(config)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"cannot create the report folder {out}: {err.strerror}",
                          hint="give --out a writable folder; the run's cases are kept in the store "
                          "(`frontier-qa export` or a replay writes them out again)") from None
    cases = out / CASES_FILE
    tmp = cases.with_name(f".{CASES_FILE}.{os.getpid()}.tmp")
    tmp.write_bytes(b"".join(encode_line(r) for r in sorted(records, key=lambda r: r.id)))
    os.replace(tmp, cases)
    past = history(store, [r.id for r in records]) if store is not None and store.runs_dir.is_dir() else None
    written, result = write_reports(out, records, run, formats=config.output.formats, thresholds=gate_thresholds(gate),
                                    comparisons=comparisons, frontier_as_failure=config.output.frontier_as_failure,
                                    band=band, facts=facts, history=past)
    return {"cases": cases, **written}, result


def _summary(title: str, records: Sequence[CaseRecord], comparisons: Sequence[Any], written: dict[str, Path],
             gate: Any, budget: str | None, replay: Callable[[str], str] | None = None) -> int:
    from frontier_qa.probing.progress import counts_line
    from frontier_qa.reports import count_verdicts, summarize
    from frontier_qa.reports.explain import explain

    if gate is not None and gate.health:  # first: a run that got nowhere must say so before anything else
        typer.echo("could not judge the agent (exit 3):")
        for problem in gate.health:
            typer.echo(f"  - {problem.message}")
    summary = summarize(records)
    counts = {c.value: summary.by_class[c] for c in CLASS_ORDER}
    typer.echo(title)
    typer.echo(f"  {counts_line(counts)}")
    rows = [t for t in summary.by_topic if t.counts[CaseClass.FRONTIER] or t.counts[CaseClass.FAILURE]]
    for t in sorted(rows, key=lambda t: (-(t.frontier_share or 0.0), t.topic))[:10]:
        typer.echo(f"  frontier map: {t.topic}: {t.counts[CaseClass.FRONTIER]} frontier, "
                   f"{t.counts[CaseClass.FAILURE]} failure of {t.total}")
    _removed(summary.records, written)
    if comparisons:
        verdicts = count_verdicts(comparisons)
        guards = sum(1 for c in comparisons if c.role == "guard")
        typer.echo("  replay: " + (", ".join(f"{v.value} {n}" for v, n in verdicts.items() if n) or "nothing")
                   + (f" ({guards} guard case(s) among them)" if guards else ""))
        by_id = {r.id: r for r in records}
        regressions = [c for c in comparisons if c.verdict.value == "regression" and c.case_id in by_id]
        for c in regressions[:SHOWN_VERDICTS]:
            for line in explain(c, by_id[c.case_id], replay=None if replay is None else replay(c.case_id),
                                prompt_chars=200):
                typer.echo(f"  {line}")
        if len(regressions) > SHOWN_VERDICTS:
            typer.echo(f"  ... {len(regressions) - SHOWN_VERDICTS} more regressions: see report.md")
    if budget:
        typer.echo(f"  spent: {budget}")
    typer.echo("  wrote: " + ", ".join(str(p) for p in written.values()))
    if gate is None:
        return EXIT_OK
    if gate.health:
        typer.echo("gate: COULD NOT JUDGE (exit 3)")
    elif gate.passed:
        typer.echo("gate: passed")
    else:
        typer.echo("gate: FAILED")
    for reason in gate.reasons:
        typer.echo(f"  - {reason}")
    return gate.exit_code


def _removed(records: Sequence[CaseRecord], written: dict[str, Path]) -> None:
    """Name the cases validation removed, with the reason: a person's case never vanishes silently."""
    from frontier_qa.reports.explain import removal
    from frontier_qa.reports.summary import invalid_cases

    removed = invalid_cases(records)
    if not removed:
        return
    typer.echo(f"  removed by validation: {len(removed)}")
    for case_id, prompt, reason in map(removal, removed[:SHOWN_REMOVED]):
        typer.echo(f'    {case_id} "{prompt}": {reason}')
    if len(removed) > SHOWN_REMOVED:
        where = next((written[k].name for k in ("md", "json", "cases") if k in written), "the store")
        typer.echo(f"    … {len(removed) - SHOWN_REMOVED} more in {where}")


def _budget_line(parts: ProbeParts) -> str | None:
    snapshot = getattr(parts.target, "snapshot", None)
    return snapshot().describe() if callable(snapshot) else None


def _resolve(config: Path | None, flags: Mapping[str, Any], sets: Sequence[str], progress: str, show_config: bool,
             table: Mapping[str, FlagRule] = FLAGS) -> ProbeConfig | None:
    """The command's config from file, flags and ``--set``; ``None`` once ``--show-config`` printed it."""
    _check_progress(progress)
    cfg = load_config(config, overrides(flags, sets, table))
    if show_config:
        print_config(cfg)
        return None
    return cfg


@contextlib.contextmanager
def _closed_on_error(parts: ProbeParts) -> Iterator[None]:
    """Close the parts' models if the block raises before the run took them over."""
    try:
        yield
    except BaseException:
        asyncio.run(parts.aclose())
        raise


def _report(cfg: ProbeConfig, parts: ProbeParts, result: Any, facts: Any, gate: Any, title: str,
            replay: Callable[[str], str]) -> int:
    """Write the run's reports, print its summary; the exit code."""
    band = (parts.settings.band.low, parts.settings.band.high)
    written, decision = write_outputs(cfg, result.records, result.run, comparisons=result.comparisons, gate=gate,
                                      band=band, facts=facts, store=parts.store)
    return _summary(title, result.records, result.comparisons, written, decision, _budget_line(parts),
                    replay=replay)


# --- commands --------------------------------------------------------------------------------------


def probe_command(
    resume_run: str | None = typer.Argument(None, help="With --resume: the run to continue."),
    config: Path | None = _CONFIG,
    target: str | None = _TARGET,
    curriculum: str | None = typer.Option(
        None, "--curriculum",
        help="Cases FILE (*.jsonl/*.yaml), file:PATH, prompted:MODEL_SPEC or trained:CHECKPOINT."),
    domain: str | None = typer.Option(None, "--domain", help="Prompted: math, general, tools, open_ended, workflow."),
    topic: list[str] = typer.Option([], "--topic", help="Prompted: a topic to cover (repeatable)."),
    tools: str | None = typer.Option(None, "--tools", help="Prompted: JSON/YAML file of OpenAI tool schemas."),
    budget_calls: int | None = _BUDGET_CALLS,
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", help="Most tokens of the run."),
    max_cost_usd: float | None = _MAX_COST,
    k: int | None = _K,
    policy: str | None = _POLICY,
    band: str | None = typer.Option(None, "--band", help="agent0 | tool-r0 | LOW:HIGH."),
    max_candidates: int | None = typer.Option(None, "--max-candidates", help="Proposals considered in total."),
    concurrency: int | None = typer.Option(None, "--concurrency", help="Cases sampled at once."),
    seed: int | None = _SEED,
    judge: str | None = _JUDGE,
    critic: str | None = typer.Option(None, "--critic", help="SAGE critic model spec for proposals."),
    out: Path | None = _OUT,
    store: Path | None = _STORE,
    run_id: str | None = _RUN_ID,
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run: [RUN_ID] or the latest."),
    wait: bool = _WAIT,
    shard: str | None = _SHARD,
    no_replay: bool = typer.Option(False, "--no-replay", help="Do not replay stored cases first."),
    frontier_as_failure: bool = _FRONTIER_FAIL,
    max_failures: int | None = _MAX_FAILURES,
    max_frontier_share: float | None = _MAX_FRONTIER,
    max_regressions: int | None = _MAX_REGRESSIONS,
    no_cache: bool = _NO_CACHE,
    formats: list[str] = _FORMAT,
    sets: list[str] = _SET,
    progress: str = _PROGRESS,
    show_config: bool = _SHOW,
) -> None:
    """Probe a target: generate cases, sample them, classify, record, report and gate."""
    flags = {"target": target, "curriculum": curriculum, "domain": domain, "topic": topic, "tools": tools,
             "budget_calls": budget_calls, "budget_tokens": budget_tokens, "max_cost_usd": max_cost_usd, "k": k,
             "policy": policy, "band": band, "max_candidates": max_candidates, "concurrency": concurrency, "seed": seed,
             "judge": judge, "critic": critic, "out": out, "store": store, "shard": shard, "no_replay": no_replay,
             "frontier_as_failure": frontier_as_failure, "max_failures": max_failures,
             "max_frontier_share": max_frontier_share, "max_regressions": max_regressions, "formats": formats,
             "no_cache": no_cache}
    if resume_run and not resume:
        raise ConfigError(f"unexpected argument {resume_run!r}",
                          hint=f"to continue that run, write --resume {resume_run}")
    if resume_run and run_id and resume_run != run_id:
        raise ConfigError(f"--resume {resume_run} and --run-id {run_id} name different runs", hint="give one of them")
    cfg = _resolve(config, flags, sets, progress, show_config)
    if cfg is None:
        return
    check_out_dir(cfg)
    parts = build_probe(cfg)
    with _closed_on_error(parts):
        rid = _resume_id(parts, resume_run or run_id) if resume else (run_id or _new_run_id())
    total = cfg.probing.max_candidates
    if hasattr(parts.curriculum, "__len__"):  # a file curriculum knows how many cases it holds
        total = len(parts.curriculum) if total is None else min(total, len(parts.curriculum))  # type: ignore[arg-type]
    result = _run_with_progress(parts, rid, "probe", _progress(progress, "probe", total),
                                lambda bar: _probe(parts, rid, resume, bar, wait))
    from frontier_qa.reports import RunFacts

    facts = RunFacts(mode="probe", stop_reason=result.stop_reason, stop_detail=result.stop_detail,
                     stop_source=result.stop_source, candidates=result.candidates, target=parts.target.id)
    title = f"frontier-qa probe: run {result.run_id}, target {_shown(parts)}, stopped: {result.stop_reason}"
    code = _report(cfg, parts, result, facts, cfg.gate, title, _replay_hint(config, target, None, store))
    if not result.run.finished:
        typer.echo(f"the run stays open ({result.stop_reason}); continue it with: --resume {result.run_id}")
    raise typer.Exit(code)


def replay_command(
    config: Path | None = _CONFIG,
    target: str | None = _TARGET,
    suite: Path | None = typer.Option(None, "--suite", help="Replay this committed suite instead of the store."),
    scope: str | None = typer.Option(None, "--scope", help="Store cases of this target only, or of all targets."),
    max_replay: int | None = typer.Option(None, "--max-replay", help="Replay at most this many cases."),
    budget_calls: int | None = _BUDGET_CALLS,
    max_cost_usd: float | None = _MAX_COST,
    k: int | None = _K,
    policy: str | None = _POLICY,
    seed: int | None = _SEED,
    judge: str | None = _JUDGE,
    out: Path | None = _OUT,
    store: Path | None = _STORE,
    run_id: str | None = _RUN_ID,
    wait: bool = _WAIT,
    shard: str | None = _SHARD,
    frontier_as_failure: bool = _FRONTIER_FAIL,
    max_failures: int | None = typer.Option(None, "--max-failures", help="Gate: most failures (default: off)."),
    max_regressions: int | None = _MAX_REGRESSIONS,
    max_flaky: int | None = typer.Option(None, "--max-flaky", help="Gate: most flaky failures."),
    max_inconclusive: int | None = typer.Option(
        None, "--max-inconclusive", help="Gate: most cases left undecided at the sample cap (default: off)."),
    case: list[str] = typer.Option([], "--case", help="Replay only this case id (repeatable)."),
    no_cache: bool = _NO_CACHE,
    formats: list[str] = _FORMAT,
    sets: list[str] = _SET,
    progress: str = _PROGRESS,
    show_config: bool = _SHOW,
) -> None:
    """Hold stored cases (or a committed suite) to their baselines; report regressions. Never changes a baseline."""
    flags = {"target": target, "suite": suite, "scope": scope, "max_replay": max_replay, "budget_calls": budget_calls,
             "max_cost_usd": max_cost_usd, "k": k, "policy": policy, "seed": seed, "judge": judge, "out": out,
             "store": store,
             "shard": shard, "frontier_as_failure": frontier_as_failure, "max_failures": max_failures,
             "max_regressions": max_regressions, "max_flaky": max_flaky, "max_inconclusive": max_inconclusive,
             "formats": formats, "no_cache": no_cache}
    cfg = _resolve(config, flags, sets, progress, show_config, REPLAY_FLAGS)
    if cfg is None:
        return
    cases = _suite_cases(cfg) if cfg.replay.suite else None
    check_out_dir(cfg)
    parts = build_probe(cfg, curriculum=False)
    if case:
        with _closed_on_error(parts):
            cases = _named_cases(parts, cases, case)
    rid = run_id or _new_run_id()
    result = _run_with_progress(parts, rid, "replay", _progress(progress, "replay", None),
                                lambda bar: _replay(parts, rid, cases, bar, wait))
    from frontier_qa.reports import RunFacts

    facts = RunFacts(mode="replay", stop_reason=None if result.stop_reason == StopReason.DONE else result.stop_reason,
                     stop_detail=result.stop_detail, stop_source="target", planned=result.planned,
                     target=parts.target.id)
    title = f"frontier-qa replay: run {result.run_id}, target {_shown(parts)}, {len(result.records)} case(s)"
    raise typer.Exit(_report(cfg, parts, result, facts, cfg.replay.gate, title,
                             _replay_hint(config, target, suite, store)))


def _run_with_progress(parts: ProbeParts, rid: str, mode: str, bar: Any, run: Callable[[Any], Any]) -> Any:
    """``run(bar)``'s result, run to its end under the progress display; Ctrl-C (the second, or
    the first once the calls in flight finished) becomes the "interrupted" usage error.
    """
    try:
        with bar:
            result = asyncio.run(run(bar))
    except KeyboardInterrupt:
        raise _interrupted(parts.store, rid, mode) from None
    from frontier_qa.store.stop_reason import STOP_INTERRUPTED

    if result.stop_reason == STOP_INTERRUPTED:  # the first Ctrl-C: the calls in flight were let finish
        raise _interrupted(parts.store, rid, mode)
    return result


def _suite_cases(config: ProbeConfig) -> list[Any]:
    from frontier_qa.store.case_store import import_suite

    entries = import_suite(config.replay.suite or "")
    blind = [e.case.id for e in entries if e.observed is None]
    if blind:
        raise config.error("replay.suite", f"{len(blind)} suite case(s) have no observed result ({blind[0]}, ...)",
                           "replay compares with what was observed: write the suite with `frontier-qa export`")
    if not entries:
        raise config.error("replay.suite", f"{config.replay.suite} holds no cases", "export a suite first")
    return entries


def _named_cases(parts: ProbeParts, suite: list[Any] | None, wanted: Sequence[str]) -> list[Any]:
    """The named cases: from the committed suite when there is one, else the store's latest records."""
    from frontier_qa.store.case_store import latest_by

    pool: dict[str, Any] = ({e.case.id: e for e in suite} if suite is not None
                            else latest_by(parts.store.case_records(), lambda r: r.id))
    unknown = [c for c in wanted if c not in pool]
    if unknown:
        where = "the suite" if suite is not None else f"the store {parts.store.root}"
        raise ConfigError(f"no case {unknown[0]!r} in {where}", hint="give a case id as report.md or junit.xml "
                          "name it (the part after 'topic/')")
    return [pool[c] for c in dict.fromkeys(wanted)]


def _shown(parts: ProbeParts) -> str:
    version = getattr(parts.target, "version", None)
    found = version() if callable(version) else None
    return f"{parts.target.id} (version {found})" if found else parts.target.id


def _replay_hint(config: Path | None, target: str | None, suite: Path | None, store: Path | None
                 ) -> Callable[[str], str]:
    """The command that replays just one case, with this command's config, target, suite and store."""
    import shlex

    args = ["frontier-qa", "replay"]
    for flag, value in (("--config", config), ("--target", target), ("--suite", suite), ("--store", store)):
        if value is not None:
            args += [flag, str(value)]
    return lambda case_id: shlex.join([*args, "--case", case_id])


def _new_run_id() -> str:
    from frontier_qa.store.case_store import new_run_id

    return new_run_id()


def export_command(
    suite: Path = typer.Option(
        ..., "--suite", help="Suite file to write (*.yaml or *.jsonl), e.g. tests/frontier_suite.yaml."),
    config: Path | None = _CONFIG,
    store: Path | None = _STORE,
    run: str | None = typer.Option(None, "--run", help="Only this run's cases (default: every run)."),
    target_id: str | None = typer.Option(None, "--target-id", help="Only cases recorded for this target id."),
    classes: list[str] = typer.Option(
        [], "--class", help="Classes to export as findings (repeatable; default frontier, failure, suspect)."),
    guards: int | None = typer.Option(
        None, "--guards", help="Pass cases kept as guards, spread over topics (default replay.guards: 10)."),
    append: bool = typer.Option(False, "--append", help="Keep the suite's other cases; update those exported again."),
    volatile: bool = typer.Option(False, "--volatile", help="Also write run ids, times and costs (noisy diffs)."),
) -> None:
    """Export stored cases with their baselines as a committable suite (replay it with `frontier-qa replay --suite`).

    The suite holds the findings (frontier, failure, suspect cases by default) and a sample of
    pass cases as guards, so that breaking what the agent got right is caught too.
    """
    from frontier_qa.store.baselines import base_target_id, resolve
    from frontier_qa.store.case_store import export_suite, import_suite, suite_entries
    from frontier_qa.store.guards import select_guards

    cfg = load_config(config, overrides({"store": store}, []))
    wanted = classes or ["frontier", "failure", "suspect"]
    known = [c.value for c in CLASS_ORDER]
    bad = [c for c in wanted if c not in known]
    if bad:
        raise ConfigError(f"unknown case class {bad[0]!r}", hint=f"use one of: {', '.join(known)}")
    if guards is not None and guards < 0:
        raise ConfigError(f"--guards {guards} is negative", hint="give a count >= 0 (0: no guard cases)")
    chosen = {CaseClass(c) for c in wanted}
    source = CaseStore(cfg.store)
    if not source.runs_dir.is_dir():
        raise ConfigError(f"no case store at {source.root}", hint="probe first, or pass --store DIR")
    latest = [r for r in source.latest(run_id=run).values()
              if target_id is None or target_id in (r.target_id, base_target_id(r.target_id, r.target_version))]
    findings = [r for r in latest if r.case_class in chosen]
    n_guards = cfg.replay.guards if guards is None else guards
    kept = select_guards([r for r in latest if r.case_class not in chosen], n_guards)
    entries = suite_entries(findings + kept, volatile=volatile, baselines=resolve(source))
    if append and suite.exists():
        fresh = {e.case.id for e in entries}
        entries += [e for e in import_suite(suite) if e.case.id not in fresh]
    count = export_suite(entries, suite)
    typer.echo(f"exported {count} case(s) to {suite}: {len(findings)} finding(s) ({', '.join(wanted)}), "
               f"{len(kept)} guard(s), each with its baseline")


def merge_command(
    stores: list[Path] = typer.Argument(..., help="Stores to merge (e.g. the shards' .frontier-qa folders)."),
    into: Path | None = typer.Option(None, "--into", help="Store to merge into (default: the configured store)."),
    config: Path | None = _CONFIG,
    out: Path | None = typer.Option(None, "--out", help="Also write reports of the merged runs here, and gate them."),
    frontier_as_failure: bool = _FRONTIER_FAIL,
    max_failures: int | None = _MAX_FAILURES,
    max_frontier_share: float | None = _MAX_FRONTIER,
    formats: list[str] = _FORMAT,
    sets: list[str] = _SET,
) -> None:
    """Merge case stores (CI shards) into one, without duplicates; optionally report on the merged runs."""
    flags = {"store": into, "out": out, "frontier_as_failure": frontier_as_failure, "formats": formats,
             "max_failures": max_failures, "max_frontier_share": max_frontier_share}
    cfg = load_config(config, overrides(flags, sets))
    target = CaseStore(cfg.store)
    run_ids = sorted({rid for s in stores for rid in CaseStore(s).run_ids()})
    merged = target.merge([str(s) for s in stores])
    typer.echo(f"merged {len(stores)} store(s) into {target.root}: {merged.runs} run(s), {merged.cases} case(s), "
               f"{merged.duplicates} duplicate record(s) dropped")
    if out is None:
        raise typer.Exit(EXIT_OK)
    records = [r for rid in run_ids for r in target.latest(run_id=rid).values()]
    written, gate = write_outputs(cfg, records, _merged_run(target, run_ids), gate=cfg.gate, band=None)
    raise typer.Exit(_summary(f"frontier-qa merge: {', '.join(run_ids)}", records, (), written, gate, None))


def _merged_run(store: CaseStore, run_ids: Sequence[str]) -> RunRecord | None:
    """The run record to report after a merge: the run's only shard record, else none."""
    runs = [r for r in store.runs() if r.run_id in run_ids]
    return runs[0] if len(runs) == 1 else None


def schema_command(
    out: Path | None = typer.Option(None, "--out", help="Write the schema to this file instead of stdout."),
) -> None:
    """Print the JSON Schema of the probe config file (configs/probe.schema.json)."""
    text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if out is None:
        typer.echo(text, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {out}")


def register(app: typer.Typer) -> None:
    """Add ``probe``, ``replay``, ``export``, ``merge`` and ``schema`` to ``app``."""
    app.command("probe")(probe_command)
    app.command("replay")(replay_command)
    app.command("export")(export_command)
    app.command("merge")(merge_command)
    app.command("schema")(schema_command)


__all__ = ["CASES_FILE", "EXIT_INTERRUPTED", "EXIT_USAGE", "FLAGS", "REPLAY_FLAGS", "overrides", "register",
           "write_outputs"]
