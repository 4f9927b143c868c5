"""Reports from case records: ``report.json``, ``junit.xml``, ``report.md`` and ``report.html``.

Plus the gate (:mod:`~frontier_qa.reports._gate`) that turns a run into pass or fail, and
replay verdicts (:mod:`~frontier_qa.store._comparison`). :func:`write_reports` writes every
format at once from one :class:`~frontier_qa.reports._report_input.ReportInput`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from frontier_qa.reports._gate import GateCheck, GateResult, GateThresholds, evaluate_gate
from frontier_qa.reports._health import HealthProblem, RunFacts
from frontier_qa.reports._html import html_report, write_html
from frontier_qa.reports._json_report import JsonReport, build_json_report, write_json_report
from frontier_qa.reports._junit import junit_xml, write_junit
from frontier_qa.reports._markdown import markdown_report, write_markdown
from frontier_qa.reports._otel_export import OtelVerdicts
from frontier_qa.reports._report_input import ReportInput, ReportParts
from frontier_qa.reports._summary import Summary, summarize
from frontier_qa.store._comparison import Comparison, RegressionVerdict, compare, compare_all, count_verdicts
from frontier_qa.store._records import Candidates, CaseRecord, ModelSpend, RunRecord

FORMATS = ("json", "junit", "md", "html")
FILE_NAMES = {"json": "report.json", "junit": "junit.xml", "md": "report.md", "html": "report.html"}


def write_reports(
    out_dir: str | os.PathLike[str],
    records: Iterable[CaseRecord],
    run: RunRecord | None = None,
    *,
    formats: Sequence[str] = FORMATS,
    thresholds: GateThresholds | None = None,
    comparisons: Sequence[Comparison] = (),
    frontier_as_failure: bool = False,
    band: tuple[float, float] | None = None,
    facts: RunFacts | None = None,
    history: Mapping[str, Sequence[CaseRecord]] | None = None,
    gate: GateResult | None = None,
    spend: Mapping[str, ModelSpend] | None = None,
    candidates: Candidates | None = None,
    next_steps: Sequence[str] = (),
    changes: Sequence[str] = (),
) -> tuple[dict[str, Path], GateResult | None]:
    """Write the chosen report formats into ``out_dir``.

    Args:
        out_dir: directory for ``report.json``, ``junit.xml``, ``report.md``, ``report.html``.
        records: case records; the latest per case id is reported.
        run: the run being reported.
        formats: any of ``json``, ``junit``, ``md``, ``html``.
        thresholds: gate limits; the gate is evaluated (and shown) only when given.
        comparisons: replay verdicts, counted by the gate and listed in the reports.
        frontier_as_failure: JUnit reports frontier cases as failing tests.
        band: frontier band (low, high) in p̂ units, shaded on the HTML histogram.
        facts: what the run knows beyond its records, for the health checks (:mod:`.health`).
        history: every observation of each case, oldest first (trend lines).
        gate: the gate's decision when the caller made it (a :class:`~frontier_qa.session.Session`
            judges a run once); else it is evaluated here from ``thresholds``.
        spend: what each model spent, by role (default: the run record's).
        candidates: what became of the proposals (default: the run record's).
        next_steps: the commands that keep, replay, accept and inspect the findings.
        changes: what changed in the cases' source since they were stored, and what was done.

    Returns:
        The written paths by format, and the gate result (``None`` without thresholds).
    """
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        from frontier_qa.errors import ConfigError

        raise ConfigError(
            f"unknown report format(s): {', '.join(unknown)}", hint=f"choose from {', '.join(FORMATS)}"
        )
    summary = summarize(records)
    if gate is None and thresholds is not None:
        gate = evaluate_gate(summary, thresholds, comparisons, facts)
    report = ReportInput.of(summary, run, gate=gate, comparisons=comparisons, history=history, spend=spend,
                            candidates=candidates, next_steps=next_steps, changes=changes)
    out = Path(out_dir)
    written: dict[str, Path] = {}
    if "json" in formats:
        written["json"] = write_json_report(out / FILE_NAMES["json"], build_json_report(report))
    if "junit" in formats:
        written["junit"] = write_junit(out / FILE_NAMES["junit"], report, frontier_as_failure=frontier_as_failure,
                                       comparisons=comparisons, gate=gate)
    if "md" in formats:
        written["md"] = write_markdown(out / FILE_NAMES["md"], report)
    if "html" in formats:
        written["html"] = write_html(out / FILE_NAMES["html"], report, band=band)
    return written, gate


__all__ = [
    "FILE_NAMES",
    "FORMATS",
    "Comparison",
    "GateCheck",
    "GateResult",
    "GateThresholds",
    "HealthProblem",
    "RunFacts",
    "JsonReport",
    "OtelVerdicts",
    "ReportInput",
    "ReportParts",
    "Summary",
    "RegressionVerdict",
    "build_json_report",
    "compare",
    "compare_all",
    "count_verdicts",
    "evaluate_gate",
    "html_report",
    "junit_xml",
    "markdown_report",
    "summarize",
    "write_html",
    "write_json_report",
    "write_junit",
    "write_markdown",
    "write_reports",
]
