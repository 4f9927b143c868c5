"""The run's summary as console lines: what ``frontier-qa probe``/``replay``/``merge`` print and what
the pytest plugin's terminal summary shows, from the same :class:`~frontier_qa.reports._report_input.ReportInput`
the files are written from (so every number agrees with them).

Order: why the run could not judge the agent (first, when it could not), the title, the headline
numbers (:meth:`ReportInput.headline`: paths and pass^k among them), where the ability ends along each knob
the run searched (its boundaries, and the failures shrunk to smaller knob values), the frontier map, the
cases with a path finding (wrong paths first), the cases validation removed (each
named, with the reason), the first regressions explained, the files written, the gate and its
reasons, and the next steps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from frontier_qa.reports import _boundaries as bd
from frontier_qa.reports._explain import explain, removal
from frontier_qa.reports._path_findings import case_line, finding_word, path_cases
from frontier_qa.reports._report_input import ReportInput
from frontier_qa.reports._summary import invalid_cases
from frontier_qa.store._records import CaseClass

SHOWN_VERDICTS = 5  # regressions explained on the console (the reports list them all)
SHOWN_REMOVED = 5  # cases validation removed, named on the console with the reason
SHOWN_TOPICS = 10  # rows of the frontier map on the console
SHOWN_BOUNDARIES = 10  # boundaries on the console (with their shrunk failures; the reports list them all)
SHOWN_PATHS = 5  # cases with a path finding named on the console (wrong paths first)


def console_lines(report: ReportInput, title: str, *, written: Mapping[str, Path] | None = None,
                  replay: Callable[[str], str] | None = None, removed: str | None = None,
                  budget: str | None = None) -> list[str]:
    """The summary of one run (or of the runs a merge or a pytest session made), as lines.

    Args:
        report: the run's report input (summary, gate, verdicts, spend, candidates, next steps).
        title: the first line after any health problem (``frontier-qa probe: run R, target T, ...``).
        written: the files written, by format, for the ``wrote:`` line (none: no such line).
        replay: the command that replays one case, by case id (shown under each regression).
        removed: the command that lists every case validation removed (when more than the console names).
        budget: the run's budget line (every model's spending against the limits), if known.
    """
    gate, s = report.gate, report.summary
    out: list[str] = []
    if gate is not None and gate.health:  # first: a run that got nowhere must say so before anything else
        out.append("could not judge the agent (exit 3):")
        out += [f"  - {problem.message}" for problem in gate.health]
    out.append(title)
    out += [f"  warning: {warning}" for warning in report.warnings]
    out += [f"  changed: {change}" for change in report.changes]
    out += [f"  {label}: {text}" for label, text in report.headline()]
    if budget:
        out.append(f"  budget: {budget}")
    for b in report.boundaries[:SHOWN_BOUNDARIES]:
        out.append(f"  boundary: {bd.console_line(b)}")
        out += [f"    shrunk: {bd.shrunk_short(s)}" for s in b.shrunk if bd.shrunk(s)]
        out += [f"    MOVED: {m.text}" for m in b.moved]
        out += [f"    could not judge: {b.problem}"] if b.problem else []
        out += [f"    note: {b.note}"] if b.note and b.note != b.problem else []
    if len(report.boundaries) > SHOWN_BOUNDARIES:
        out.append(f"  … {len(report.boundaries) - SHOWN_BOUNDARIES} more boundaries: see report.md")
    rows = [t for t in s.by_topic
            if t.counts[CaseClass.FRONTIER] or t.counts[CaseClass.FAILURE] or t.counts[CaseClass.UNCHECKED]]
    for t in sorted(rows, key=lambda t: (-(t.frontier_share or 0.0), t.topic))[:SHOWN_TOPICS]:
        unchecked = t.counts[CaseClass.UNCHECKED]
        apart = f" (+{unchecked} uncertain on unchecked tasks)" if unchecked else ""
        out.append(f"  frontier map: {t.topic}: {t.counts[CaseClass.FRONTIER]} frontier, "
                   f"{t.counts[CaseClass.FAILURE]} failure of {t.total}{apart}")
    pathed = path_cases(s.records)
    out += [f"  {finding_word(r.path)}: {r.id}: {case_line(r)}" for r in pathed[:SHOWN_PATHS]]
    if len(pathed) > SHOWN_PATHS:
        out.append(f"  … {len(pathed) - SHOWN_PATHS} more path findings: see report.md")
    invalid = invalid_cases(s.records)
    if invalid:
        out.append(f"  removed by validation: {len(invalid)}")
        out += [f'    {case_id} "{prompt}": {reason}'
                for case_id, prompt, reason in map(removal, invalid[:SHOWN_REMOVED])]
        if len(invalid) > SHOWN_REMOVED:
            listed = (f" in {written[k].name}" for k in ("md", "json", "cases") if written and k in written)
            where = next(listed, f": {removed}" if removed else " in the store")
            out.append(f"    … {len(invalid) - SHOWN_REMOVED} more{where}")
    by_id = {r.id: r for r in s.records}
    regressions = [c for c in report.comparisons if c.verdict.value == "regression" and c.case_id in by_id]
    for c in regressions[:SHOWN_VERDICTS]:
        command = None if replay is None else replay(c.case_id)
        out += [f"  {line}" for line in explain(c, by_id[c.case_id], replay=command, prompt_chars=200)]
    if len(regressions) > SHOWN_VERDICTS:
        out.append(f"  ... {len(regressions) - SHOWN_VERDICTS} more regressions: see report.md")
    if written:
        out.append("  wrote: " + ", ".join(str(p) for p in written.values()))
    if gate is not None:
        out.append("gate: COULD NOT JUDGE (exit 3)" if gate.health else "gate: passed" if gate.passed
                   else "gate: FAILED")
        out += [f"  - {reason}" for reason in gate.reasons]
    if report.next_steps:
        out.append("next steps:")
        out += [f"  {step}" for step in report.next_steps]
    return out


__all__ = ["SHOWN_BOUNDARIES", "SHOWN_PATHS", "SHOWN_REMOVED", "SHOWN_VERDICTS", "console_lines"]
