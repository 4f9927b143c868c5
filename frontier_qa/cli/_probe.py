"""``frontier-qa probe`` and ``replay``.

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
regressions. Their options and the flag table are in :mod:`frontier_qa.cli._options`, the report
folder and the console summary in :mod:`frontier_qa.cli.outputs`; ``export``, ``merge`` and
``schema`` are in :mod:`frontier_qa.cli._suite`, ``accept`` in :mod:`frontier_qa.cli._accept`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence, Sized
from pathlib import Path
from typing import Any

import typer

from frontier_qa.cli._flags import FlagRule, print_config
from frontier_qa.cli._flags import overrides as flag_overrides
from frontier_qa.cli._options import FLAGS, MAX_FAILURES, MAX_FRONTIER, REPLAY_FLAGS, RunOptions, with_options
from frontier_qa.config import Override, ProbeConfig, load_config
from frontier_qa.errors import ConfigError
from frontier_qa.exit_codes import EXIT_INTERRUPTED, EXIT_USAGE
from frontier_qa.session import CASES_FILE, Invocation, Outcome, Session
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._stop_reason import StopReason


def overrides(flags: Mapping[str, Any], sets: Sequence[str], table: Mapping[str, FlagRule] = FLAGS) -> list[Override]:
    """Flag values (``None``: not given) as config overrides by ``table``; ``--set`` ones last (they win)."""
    return flag_overrides(flags, sets, table)


# --- running -------------------------------------------------------------------------------------


def _progress(mode: str, title: str, total: int | None) -> Any:
    from frontier_qa.probing._progress import ProbeProgress

    return ProbeProgress(mode, total=total, title=title)


def _check_progress(mode: str) -> None:
    from frontier_qa.probing._progress import MODES

    if mode not in MODES:  # checked before any model is opened
        raise ConfigError(f"--progress {mode!r} is not understood", hint=f"use one of: {', '.join(MODES)}")


def _budget_tracker(target: Any) -> Any:
    """The run's shared budget tracker behind a target (a tools+ executor wraps one)."""
    for part in (target, getattr(target, "inner", None)):
        tracker = getattr(part, "budget", None)
        if tracker is not None and hasattr(tracker, "interrupt"):
            return tracker
    return None


@contextlib.contextmanager
def _interrupts(session: Session) -> Iterator[None]:
    """Ctrl-C while a run goes on: the first stops new calls and lets those in flight finish
    (their samples are cached and the classified cases stored); the second quits at once.

    Quitting at once is ``os._exit``: every record and cached sample is already on disk
    (appends and SQLite transactions are atomic), the run's lease and cache claims die with
    the process, and no thread still inside an agent or a model can hold the exit up.
    """
    tracker = _budget_tracker(session.parts.target)
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


def _interrupted(store: CaseStore, run_id: str, command: str) -> typer.Exit:
    done = len(store.latest(run_id=run_id)) if store.runs_dir.is_dir() else 0
    typer.echo(f"\ninterrupted: {done} classified case(s) of run {run_id} are safe in {store.root}.", err=True)
    if command == "probe":
        typer.echo(f"to continue, run the same command again with: --resume {run_id}", err=True)
    return typer.Exit(EXIT_INTERRUPTED)


def _resolve(opts: RunOptions, flags: Mapping[str, Any], table: Mapping[str, FlagRule]) -> ProbeConfig | None:
    """The command's config from file, flags and ``--set``; ``None`` once ``--show-config`` printed it."""
    _check_progress(opts.progress)
    cfg = load_config(opts.config, overrides(flags, opts.sets, table))
    if opts.show_config:
        print_config(cfg)
        return None
    return cfg


def _session(cfg: ProbeConfig, opts: RunOptions, *, curriculum: bool, suite: Path | None = None) -> Session:
    """The command's session; the next steps repeat the flags the user gave."""
    invocation = Invocation(config=None if opts.config is None else str(opts.config), target=opts.target,
                            store=None if opts.store is None else str(opts.store),
                            suite=None if suite is None else str(suite))
    session = Session(cfg, curriculum=curriculum, invocation=invocation)
    session.out_dir()  # refused before any model opens
    return session


def _run(session: Session, rid: str, mode: str, bar: Any,
         run: Callable[[Any], Coroutine[Any, Any, Outcome]]) -> Outcome:
    """``run(bar)``'s outcome, run to its end under the progress display with Ctrl-C handled, the
    models closed after; Ctrl-C (the second, or the first once the calls in flight finished) becomes
    the "interrupted" exit.
    """
    async def go() -> Outcome:
        try:
            with _interrupts(session):
                return await run(bar)
        finally:
            await session.aclose()

    try:
        with bar:
            outcome = asyncio.run(go())
    except KeyboardInterrupt:
        raise _interrupted(session.store, rid, mode) from None
    if outcome.stop_reason == StopReason.INTERRUPTED:  # the first Ctrl-C: the calls in flight were let finish
        raise _interrupted(session.store, rid, mode)
    return outcome


def _finish(session: Session, outcome: Outcome, replay: Callable[[str], str]) -> int:
    """Write the run's reports, print its summary; the exit code (the outcome's)."""
    written = session.write(outcome)
    for line in outcome.lines(written, replay=replay):
        typer.echo(line)
    return outcome.exit_code


# --- commands --------------------------------------------------------------------------------------


@with_options(FLAGS, (
    "resume_run", "config", "target", "curriculum", "domain", "topic", "tools", "budget_calls", "budget_tokens",
    "max_cost_usd", "k", "policy", "band", "max_candidates", "concurrency", "seed", "judge", "critic", "out", "store",
    "run_id", "resume", "wait", "shard", "ray", "no_replay", "frontier_as_failure", "max_failures",
    "max_frontier_share", "max_regressions", "no_cache", "formats", "otel_endpoint", "sets", "progress", "show_config"))
def probe_command(
    opts: RunOptions,
    flags: Mapping[str, Any],
    resume_run: str | None = typer.Argument(None, help="With --resume: the run to continue."),
    curriculum: str | None = typer.Option(
        None, "--curriculum",
        help="Cases FILE (*.jsonl/*.yaml), file:PATH, prompted:MODEL_SPEC or trained:CHECKPOINT."),
    domain: str | None = typer.Option(None, "--domain", help="Prompted: math, general, tools, open_ended, workflow."),
    topic: list[str] = typer.Option([], "--topic", help="Prompted: a topic to cover (repeatable)."),
    tools: str | None = typer.Option(None, "--tools", help="Prompted: JSON/YAML file of OpenAI tool schemas."),
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", help="Most tokens of the run."),
    band: str | None = typer.Option(None, "--band", help="agent0 | tool-r0 | LOW:HIGH."),
    max_candidates: int | None = typer.Option(None, "--max-candidates", help="Proposals considered in total."),
    concurrency: int | None = typer.Option(None, "--concurrency", help="Cases sampled at once."),
    critic: str | None = typer.Option(None, "--critic", help="SAGE critic model spec for proposals."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run: [RUN_ID] or the latest."),
    no_replay: bool = typer.Option(False, "--no-replay", help="Do not replay stored cases first."),
    max_failures: int | None = MAX_FAILURES,
    max_frontier_share: float | None = MAX_FRONTIER,
) -> None:
    """Probe a target: generate cases, sample them, classify, record, report and gate."""
    run_id = opts.run_id
    if resume_run and not resume:
        raise ConfigError(f"unexpected argument {resume_run!r}",
                          hint=f"to continue that run, write --resume {resume_run}")
    if resume_run and run_id and resume_run != run_id:
        raise ConfigError(f"--resume {resume_run} and --run-id {run_id} name different runs", hint="give one of them")
    cfg = _resolve(opts, flags, FLAGS)
    if cfg is None:
        return
    session = _session(cfg, opts, curriculum=True)
    try:
        rid = session.resume_id(resume_run or run_id) if resume else (run_id or _new_run_id())
    except BaseException:
        session.close()
        raise
    total = cfg.probing.max_candidates
    proposing = session.parts.curriculum
    if isinstance(proposing, Sized):  # a file curriculum knows how many cases it holds
        total = len(proposing) if total is None else min(total, len(proposing))
    outcome = _run(session, rid, "probe", _progress(opts.progress, "probe", total),
                   lambda bar: session.probe(run_id=rid, resume=resume, progress=bar, wait=opts.wait))
    code = _finish(session, outcome, _replay_hint(opts, None))
    if outcome.run is not None and not outcome.run.finished:
        typer.echo(f"the run stays open ({outcome.stop_reason}); continue it with: --resume {outcome.run_id}")
    raise typer.Exit(code)


@with_options(REPLAY_FLAGS, (
    "config", "target", "suite", "scope", "max_replay", "budget_calls", "max_cost_usd", "k", "policy", "seed", "judge",
    "out", "store", "run_id", "wait", "shard", "ray", "frontier_as_failure", "max_failures", "max_regressions",
    "max_flaky", "max_inconclusive", "case", "no_cache", "formats", "otel_endpoint", "sets", "progress", "show_config"))
def replay_command(
    opts: RunOptions,
    flags: Mapping[str, Any],
    suite: Path | None = typer.Option(None, "--suite", help="Replay this committed suite instead of the store."),
    scope: str | None = typer.Option(None, "--scope", help="Store cases of this target only, or of all targets."),
    max_replay: int | None = typer.Option(None, "--max-replay", help="Replay at most this many cases."),
    max_failures: int | None = typer.Option(None, "--max-failures", help="Gate: most failures (default: off)."),
    max_flaky: int | None = typer.Option(None, "--max-flaky", help="Gate: most flaky failures."),
    max_inconclusive: int | None = typer.Option(
        None, "--max-inconclusive", help="Gate: most cases left undecided at the sample cap (default: off)."),
    case: list[str] = typer.Option([], "--case", help="Replay only this case id (repeatable)."),
) -> None:
    """Hold stored cases (or a committed suite) to their baselines; report regressions. Never changes a baseline."""
    cfg = _resolve(opts, flags, REPLAY_FLAGS)
    if cfg is None:
        return
    cases = _suite_cases(cfg) if cfg.replay.suite else None
    committed = suite or (Path(cfg.replay.suite) if cfg.replay.suite else None)
    session = _session(cfg, opts, curriculum=False, suite=committed)
    if case:
        try:
            cases = _named_cases(session, cases, case)
        except BaseException:
            session.close()
            raise
    rid = opts.run_id or _new_run_id()
    outcome = _run(session, rid, "replay", _progress(opts.progress, "replay", None),
                   lambda bar: session.replay(cases=cases, run_id=rid, progress=bar, wait=opts.wait))
    raise typer.Exit(_finish(session, outcome, _replay_hint(opts, suite)))


def _suite_cases(config: ProbeConfig) -> list[Any]:
    from frontier_qa.store._suites import import_suite

    entries = import_suite(config.replay.suite or "")
    blind = [e.case.id for e in entries if e.observed is None]
    if blind:
        raise config.error("replay.suite", f"{len(blind)} suite case(s) have no observed result ({blind[0]}, ...)",
                           "replay compares with what was observed: write the suite with `frontier-qa export`")
    if not entries:
        raise config.error("replay.suite", f"{config.replay.suite} holds no cases", "export a suite first")
    return entries


def _named_cases(session: Session, suite: list[Any] | None, wanted: Sequence[str]) -> list[Any]:
    """The named cases: from the committed suite when there is one, else the store's latest records."""
    from frontier_qa.store._lines import latest_by

    pool: dict[str, Any] = ({e.case.id: e for e in suite} if suite is not None
                            else latest_by(session.store.case_records(), lambda r: r.id))
    unknown = [c for c in wanted if c not in pool]
    if unknown:
        where = "the suite" if suite is not None else f"the store {session.store.root}"
        raise ConfigError(f"no case {unknown[0]!r} in {where}", hint="give a case id as report.md or junit.xml "
                          "name it (the part after 'topic/')")
    return [pool[c] for c in dict.fromkeys(wanted)]


def _replay_hint(opts: RunOptions, suite: Path | None) -> Callable[[str], str]:
    """The command that replays just one case, with this command's config, target, suite and store."""
    import shlex

    args = ["frontier-qa", "replay"]
    for flag, value in (("--config", opts.config), ("--target", opts.target), ("--suite", suite),
                        ("--store", opts.store)):
        if value is not None:
            args += [flag, str(value)]
    return lambda case_id: shlex.join([*args, "--case", case_id])


def _new_run_id() -> str:
    from frontier_qa.store._case_store import new_run_id

    return new_run_id()


def register(app: typer.Typer) -> None:
    """Add ``probe`` and ``replay`` to ``app``."""
    app.command("probe")(probe_command)
    app.command("replay")(replay_command)


__all__ = ["CASES_FILE", "EXIT_INTERRUPTED", "EXIT_USAGE", "FLAGS", "REPLAY_FLAGS", "overrides", "register"]
