"""What ``probe``, ``replay`` and ``merge`` leave behind: the report folder and the console summary.

:func:`write_outputs` writes ``OUT/cases.jsonl`` and the reports (:func:`frontier_qa.reports.write_reports`)
and evaluates the gate; :func:`print_summary` prints the counts, the frontier map, the removed
cases, the replay verdicts (the first regressions explained), the spend and the gate, and
returns the exit code.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

from frontier_qa.config import ProbeConfig, gate_thresholds
from frontier_qa.errors import ConfigError
from frontier_qa.exit_codes import EXIT_OK
from frontier_qa.store.case_store import CaseStore, encode_line
from frontier_qa.store.records import CLASS_ORDER, CaseClass, CaseRecord, RunRecord

CASES_FILE = "cases.jsonl"
SHOWN_VERDICTS = 5  # regressions explained on the console (the reports list them all)
SHOWN_REMOVED = 5  # cases validation removed, named on the console with the reason


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


def print_summary(title: str, records: Sequence[CaseRecord], comparisons: Sequence[Any], written: dict[str, Path],
             gate: Any, budget: str | None, replay: Callable[[str], str] | None = None) -> int:
    """Print the run's summary (counts, frontier map, removed cases, replay verdicts, spend, gate); the exit code."""
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


__all__ = ["CASES_FILE", "check_out_dir", "print_summary", "write_outputs"]
