"""``frontier-qa export``, ``merge`` and ``schema``: the case store and the config file, outside a run.

``export`` writes a committable suite (findings, guards, baselines) that ``replay --suite``
holds the agent to, its guards the set stored in the store (:mod:`frontier_qa.store._guards`);
``merge`` joins CI shards' stores (and reports on them); ``schema`` prints the config file's
JSON Schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from frontier_qa.cli._options import CONFIG, FORMAT, FRONTIER_FAIL, MAX_FAILURES, MAX_FRONTIER, SET, STORE
from frontier_qa.cli._probe import overrides
from frontier_qa.config import json_schema, load_config
from frontier_qa.errors import ConfigError
from frontier_qa.exit_codes import EXIT_OK
from frontier_qa.session import Invocation, Session
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CLASS_ORDER, CaseClass

if TYPE_CHECKING:
    from frontier_qa.store._guards import GuardSet


def export_command(
    suite: Path = typer.Option(
        ..., "--suite", help="Suite file to write (*.yaml or *.jsonl), e.g. tests/frontier_suite.yaml."),
    config: Path | None = CONFIG,
    store: Path | None = STORE,
    run: str | None = typer.Option(None, "--run", help="Only this run's cases (default: every run)."),
    target_id: str | None = typer.Option(None, "--target-id", help="Only cases recorded for this target id."),
    classes: list[str] = typer.Option(
        [], "--class", help="Classes to export as findings (repeatable; default frontier, failure, suspect)."),
    guards: int | None = typer.Option(
        None, "--guards", help="Pass cases kept as guards, spread over topics (default replay.guards: 10)."),
    repick_guards: bool = typer.Option(
        False, "--repick-guards", help="Pick the guards again from the cases now stored (default: the stored set)."),
    append: bool = typer.Option(False, "--append", help="Keep the suite's other cases; update those exported again."),
    volatile: bool = typer.Option(False, "--volatile", help="Also write run ids, times and costs (noisy diffs)."),
) -> None:
    """Export stored cases with their baselines as a committable suite (replay it with `frontier-qa replay --suite`).

    The suite holds the findings (frontier, failure, suspect cases by default) and a sample of
    pass cases as guards, so that breaking what the agent got right is caught too. The guards
    are picked once and kept in the store (guards.json, one set per --target-id): every export
    writes the same ones, also a guard that no longer passes, until `frontier-qa accept` accepts
    one of the cases (the next export picks again) or --repick-guards asks for a new pick.
    """
    from frontier_qa.store._baselines import base_target_id, resolve
    from frontier_qa.store._guards import export_key, guards_for
    from frontier_qa.store._suites import export_suite, import_suite, suite_entries

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
    n_guards = cfg.replay.guards if guards is None else guards
    kept = guards_for(source, export_key(target_id), latest, n_guards,
                      exclude={r.id for r in latest if r.case_class in chosen}, repick=repick_guards,
                      detail="frontier-qa export --repick-guards")
    findings = [r for r in latest if r.case_class in chosen and r.id not in kept.ids]  # a broken guard stays one
    entries = suite_entries([*findings, *kept.guards], volatile=volatile, baselines=resolve(source), guards=kept.ids)
    if append and suite.exists():
        fresh = {e.case.id for e in entries}
        entries += [e for e in import_suite(suite) if e.case.id not in fresh]
    count = export_suite(entries, suite)
    typer.echo(f"exported {count} case(s) to {suite}: {len(findings)} finding(s) ({', '.join(wanted)}), "
               f"{len(kept.guards)} guard(s), each with its baseline")
    _say_guards(kept, source)


def _say_guards(kept: GuardSet, store: CaseStore) -> None:
    """What the export did with the stored guard set, when it is more than reading it back."""
    where = store.root / "guards.json"
    if kept.picked:
        typer.echo(f"guards {kept.describe()}; kept in {where}")
    if kept.broken:
        typer.echo(f"guards that no longer pass, still exported as guards: {', '.join(kept.broken)}")
    for d in kept.dropped:
        typer.echo(f"stored guard {d.case_id} not exported: {d.reason}")
    if kept.note:
        typer.echo(f"guards: {kept.note} (--repick-guards)")


def merge_command(
    stores: list[Path] = typer.Argument(..., help="Stores to merge (e.g. the shards' .frontier-qa folders)."),
    into: Path | None = typer.Option(None, "--into", help="Store to merge into (default: the configured store)."),
    config: Path | None = CONFIG,
    out: Path | None = typer.Option(None, "--out", help="Also write reports of the merged runs here, and gate them."),
    frontier_as_failure: bool = FRONTIER_FAIL,
    max_failures: int | None = MAX_FAILURES,
    max_frontier_share: float | None = MAX_FRONTIER,
    formats: list[str] = FORMAT,
    sets: list[str] = SET,
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
    session = Session(cfg, curriculum=False, invocation=Invocation(config=None if config is None else str(config),
                                                                     store=None if into is None else str(into)))
    runs = [r for r in target.runs() if r.run_id in run_ids]  # every shard's: their spend is summed
    outcome = session.judge("merge", records, (), runs=runs, title=f"frontier-qa merge: {', '.join(run_ids)}")
    written = session.write(outcome)
    for line in outcome.lines(written):
        typer.echo(line)
    raise typer.Exit(outcome.exit_code)


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
    """Add ``export``, ``merge`` and ``schema`` to ``app``."""
    app.command("export")(export_command)
    app.command("merge")(merge_command)
    app.command("schema")(schema_command)


__all__ = ["register"]
