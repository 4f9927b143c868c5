"""``frontier-qa accept``: make what the agent does now the baseline of some cases.

Replays never change a baseline; this command does, when a person decides that the agent's
current behaviour on these cases is right (a fix landed, a reference was wrong, a new model is
the new normal). Each accepted baseline takes the samples of the case's latest observation and
samples the same agent for more until it holds ``regression.baseline_samples`` (40): a strong
baseline is what lets a replay catch a 0.9 → 0.4 drop at a strict false-alarm rate. Every earlier baseline stays
in the store as history; ``--suite`` also writes the new baselines into a committed suite.

Accepting is also the one moment a suite's guard cases may change (:mod:`frontier_qa.store._guards`):
each guard set stored in the store whose suite has one of the accepted cases is picked again the next
time it is read (the next ``export``, the next pytest session), from the cases stored then, and keeps
the accept as the reason. The set is not picked here: which cases are a suite's, and which are its
findings, is known only where the suite is read.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from frontier_qa.cli._options import CONFIG, NO_CACHE, SET, STORE, TARGET
from frontier_qa.cli._probe import overrides
from frontier_qa.errors import ConfigError
from frontier_qa.exit_codes import EXIT_OK
from frontier_qa.session import Session
from frontier_qa.store._case_store import CaseStore


def accept_command(
    cases: list[str] = typer.Argument(None, help="Case ids to accept (as report.md and junit.xml name them)."),
    all_cases: bool = typer.Option(False, "--all", help="Accept every case of the target (every case without one)."),
    config: Path | None = CONFIG,
    target: str | None = TARGET,
    store: Path | None = STORE,
    suite: Path | None = typer.Option(None, "--suite", help="Also write the new baselines into this committed suite."),
    samples: int | None = typer.Option(
        None, "--samples", help="Samples a baseline holds (default regression.baseline_samples: 40)."),
    no_sample: bool = typer.Option(False, "--no-sample", help="Only pool what was observed; draw no new samples."),
    no_cache: bool = NO_CACHE,
    sets: list[str] = SET,
) -> None:
    """Accept the agent's current behaviour on cases as their new baseline (replays never change one).

    The guard sets of the suites these cases belong to are picked again at their next read (the
    next `frontier-qa export`, the next pytest session): accepting is the one moment they change.
    """
    from frontier_qa.store._case_store import new_run_id

    if bool(cases) == all_cases:
        raise ConfigError("name the cases to accept, or pass --all (not both)",
                          hint="frontier-qa accept weekdays-3 weekdays-7, or frontier-qa accept --all")
    more = [] if samples is None else [f"regression.baseline_samples={samples}"]
    session = Session.load(config, overrides({"target": target, "store": store, "no_cache": no_cache}, [*sets, *more]),
                           curriculum=False)
    cfg = session.config

    async def run() -> list[Any]:
        async with session:
            return await session.accept(None if all_cases else list(cases), sample=not no_sample,
                                        run_id=f"accept-{new_run_id()}")

    done = asyncio.run(run())
    for a in done:
        b = a.baseline
        drawn = f", {a.sampled} drawn now" if a.sampled else ""
        anchor = "" if b.anchor is None else f"; {b.successes}/{b.k} give {b.anchor!r}"
        p_hat = "—" if b.p_hat is None else f"{b.p_hat:.2f}"
        typer.echo(f"accepted {b.case_id}: {b.case_class.value}, p̂ {p_hat} over {b.k} samples "
                   f"({a.pooled} observed{drawn}), agent {b.target_version or b.target_id}{anchor}")
        if a.note:
            typer.echo(f"  note: {a.note}")
    if suite is not None:
        from frontier_qa.store._suites import export_suite, import_suite

        new = {a.baseline.case_id: a.baseline for a in done}
        entries = [e.model_copy(update={"baseline": new[e.case.id]}) if e.case.id in new else e
                   for e in import_suite(suite)]
        export_suite(entries, suite)
        typer.echo(f"wrote {sum(e.case.id in new for e in entries)} baseline(s) into {suite}")
    typer.echo(f"{len(done)} baseline(s) accepted into {cfg.store}; earlier ones stay as history")
    _say_guards(session.store)
    raise typer.Exit(EXIT_OK)


def _say_guards(store: CaseStore) -> None:
    """Name the stored guard sets that an accept makes pick again (module docstring)."""
    from frontier_qa.store._guards import stored_keys
    from frontier_qa.store._store_error import StoreError

    try:
        keys = stored_keys(store)
    except StoreError as err:  # the baselines are written: say it, do not fail the accept for it
        typer.echo(f"guards: {err}", err=True)
        return
    if keys:
        typer.echo(f"guards: the stored sets of the suites with these cases ({', '.join(keys)}) are picked "
                   "again at their next export or pytest session")


def register(app: typer.Typer) -> None:
    """Add ``accept`` to ``app``."""
    app.command("accept")(accept_command)


__all__ = ["accept_command", "register"]
