"""``report.md``: a summary a person reads in a pull request or a CI job page.

Sections: header (target, run), why the run could not judge the agent (when it could not),
the gate, the regressions (first, when there are any: baseline against now, the answers, the
test, the trend), counts by class, cost, where the ability ends along each difficulty knob (when
task generators were searched), the frontier map by topic (with the path findings when paths were
analysed), the cases with a path finding (scatter, wrong path, undecided), the top frontier and
failure cases with their answer distributions, the cases validation removed with the reason,
and the other replay verdicts, findings and guards apart. Long lists end with "N more". All user
and model text is escaped (:func:`~frontier_qa.reports._text.md`), so an answer cannot break a table or inject HTML.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from frontier_qa.reports import _boundaries as bd
from frontier_qa.reports._explain import baseline_votes, removal, votes
from frontier_qa.reports._path_findings import FINDINGS_HEADER, PATHS_NOTE, finding_row, findings_cell, path_cases
from frontier_qa.reports._report_input import ReportInput, ReportParts
from frontier_qa.reports._summary import Summary, answer_distribution, invalid_cases
from frontier_qa.reports._text import clean, fmt_p, md, write_text
from frontier_qa.store._comparison import Comparison, RegressionVerdict
from frontier_qa.store._records import CLASS_ORDER, BoundaryRecord, CaseClass, CaseRecord, RunRecord

if TYPE_CHECKING:  # typing.Unpack is 3.11+; the package supports 3.10
    from typing_extensions import Unpack


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _case_block(r: CaseRecord, prompt_chars: int) -> list[str]:
    interval = "" if r.interval is None else f" [{r.interval.low:.2f}, {r.interval.high:.2f}]"
    out = [f"#### {md(r.id)} · {md(r.topic)} · p̂ {fmt_p(r.p_hat)}{interval} · k={r.k}", ""]
    out.append("> " + md(r.case.prompt, prompt_chars))
    if r.case.reference is not None:
        verified = "verified" if r.case.reference_verified else "unverified"
        out += ["", f"Reference ({verified}): {md(r.case.reference, 200)}"]
    if r.reason:
        out += ["", f"Why: {md(r.reason, 300)}"]
    out.append("")
    k = max(r.k, 1)
    rows = [
        (md(a, 120) + (" **(majority)**" if a == r.majority else ""), n, f"{n / k:.0%}")
        for a, n in answer_distribution(r)
    ]
    out += _table(["answer", "votes", "share"], rows)
    return out + [""]


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.2f}, {high:.2f}]"


def _trend(records: Sequence[CaseRecord], last: int = 6) -> str:
    shown = records[-last:]
    steps = [f"{r.finished_at:%Y-%m-%d} {r.case_class.value} {fmt_p(r.p_hat)}"
             + (f" ({md(r.target_version, 24)})" if r.target_version else "") for r in shown]
    more = f"{len(records) - len(shown)} earlier, " if len(records) > len(shown) else ""
    return more + " → ".join(steps)


def _verdict_block(c: Comparison, r: CaseRecord | None, history: Sequence[CaseRecord], prompt_chars: int) -> list[str]:
    topic = r.topic if r is not None else "?"
    out = [f"#### {md(c.verdict.value)} · {md(topic)}/{md(c.case_id)}", ""]
    if r is not None:
        out.append("> " + md(r.case.prompt, prompt_chars))
        if r.case.reference is not None:
            which = "verified" if r.case.reference_verified else "unverified"
            out += ["", f"Reference ({which}): {md(r.case.reference, 200)}"]
        out.append("")
    rows = []
    b = c.baseline
    if b is not None:
        low, high = (b.interval.low, b.interval.high) if b.interval else (None, None)
        rows.append(("baseline", b.case_class.value, fmt_p(b.p_hat) + _interval(low, high), b.k,
                     md(b.target_version or "—", 40), f"{b.accepted_at:%Y-%m-%d}", md(baseline_votes(b), 200)))
    if r is not None:
        low, high = (r.interval.low, r.interval.high) if r.interval else (None, None)
        rows.append(("now", r.case_class.value, fmt_p(r.p_hat) + _interval(low, high), r.k,
                     md(r.target_version or "—", 40), f"{r.finished_at:%Y-%m-%d}",
                     md(votes(answer_distribution(r)), 200)))
    out += _table(["", "class", "p̂", "k", "agent", "date", "answers"], rows)
    out += ["", f"Why: {md(c.reason, 400)}"]
    if len(history) > 1:
        out += ["", f"History: {_trend(history)}"]
    return out + [""]


def _more(n: int, what: str) -> list[str]:
    return [f"*{n} more {what}: see report.json*", ""] if n > 0 else []


def markdown_report(
    records: ReportInput | Summary | Iterable[CaseRecord],
    run: RunRecord | None = None,
    *,
    top: int = 5,
    top_verdicts: int = 10,
    top_removed: int = 10,
    prompt_chars: int = 300,
    **given: Unpack[ReportParts],
) -> str:
    """The Markdown report.

    Args:
        records: what to show, and with it ``run`` and the ``gate``, ``comparisons`` and ``history``
            keywords, as :meth:`ReportInput.of <frontier_qa.reports._report_input.ReportInput.of>` takes them.
        run: the run, for the header.
        top: how many frontier and failure cases to show in detail.
        top_verdicts: how many regressions (and other changed verdicts) to list.
        top_removed: how many of the cases validation removed to list (with the reason).
        prompt_chars: prompt characters shown per case.
    """
    report = ReportInput.of(records, run, **given)
    s, run, gate, comparisons, history = report.summary, report.run, report.gate, report.comparisons, report.history
    by_id = {r.id: r for r in s.records}
    out = ["# frontier-qa report", ""]
    targets = ", ".join(md(t) for t in s.targets) or "none"
    head = [f"Target: {targets}", *report.run_header(md, seed=False)]
    out += [" · ".join(head), ""]
    if gate is not None and gate.health:
        out.append("**Could not judge the agent (exit 3).**")
        out += [f"- {md(p.message)}" for p in gate.health]
        out.append("")
    if gate is not None:
        out.append(f"**Gate: {'PASSED' if gate.passed else 'FAILED'}**")
        out += [f"- {md(c.message)}{'' if c.passed else ' ❌'}" for c in gate.checks]
        out.append("")
    if report.warnings:
        out += ["## Warnings", ""] + [f"- {md(warning)}" for warning in report.warnings] + [""]
    if report.changes:
        out += ["## Changed since stored", ""] + [f"- {md(change)}" for change in report.changes] + [""]
    regressions = [c for c in comparisons if c.verdict is RegressionVerdict.REGRESSION]
    if regressions:
        out += [f"## Regressions ({len(regressions)})", ""]
        for c in regressions[:top_verdicts]:
            out += _verdict_block(c, by_id.get(c.case_id), history.get(c.case_id, ()), prompt_chars)
        out += _more(len(regressions) - top_verdicts, "regressions")
    out += ["## Summary", ""]
    valid = s.total - s.by_class[CaseClass.INVALID]
    rows = [
        (c.value, s.by_class[c], _share(s.by_class[c] / s.total if s.total else None)) for c in CLASS_ORDER
    ]
    out += _table(["class", "cases", "share"], rows + [("**total**", s.total, "")])
    out += [
        "",
        f"Frontier share of valid cases: {_share(s.frontier_share)} "
        f"({s.by_class[CaseClass.FRONTIER]}/{valid})",
    ]
    out += [""] + [f"- {label}: {md(text)}" for label, text in report.headline()] + [""]
    out += _boundaries_section(report.boundaries)
    out += ["## Frontier map by topic", ""]
    paths = ["path findings"] if s.paths else []  # a column only when some case's paths were analysed
    topic_rows = [
        [md(t.topic, 60)] + [t.counts[c] for c in CLASS_ORDER] + [t.total, _share(t.frontier_share)]
        + ([findings_cell(t.path_findings)] if paths else [])
        for t in s.by_topic
    ]
    out += _table(["topic", *(c.value for c in CLASS_ORDER), "total", "frontier share", *paths], topic_rows) + [""]
    out += _paths_section(s.records, top_verdicts)
    for cls, title, chosen in report.top_sections(top):
        out += [f"## {title}", ""]
        for r in chosen:
            out += _case_block(r, prompt_chars)
        out += _more(s.by_class[cls] - len(chosen), f"{cls.value} cases")
    out += _removed_section(s.records, top_removed)
    if comparisons:
        out += _replay_section(report, by_id, top_verdicts)
    if report.next_steps:
        out += ["## Next steps", ""] + [f"- {line}" for line in _steps(report.next_steps)] + [""]
    return "\n".join(out).rstrip() + "\n"


def _steps(steps: Sequence[str]) -> list[str]:
    """``what: command`` lines as Markdown: the words, then the command as code."""
    out = []
    for step in steps:
        what, sep, command = step.partition(": ")
        out.append(f"{md(what)}: `{command}`" if sep else md(step))
    return out


def _code(text: object) -> str:
    """Inline code (a case id): one line, a pipe escaped for the table it may sit in; backticks
    inside get a longer fence. HTML in a code span stays text.
    """
    value = " ".join(clean(text).split()).replace("|", "\\|")
    fence = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _boundaries_section(boundaries: Sequence[BoundaryRecord]) -> list[str]:
    """Where the ability ends: a row per boundary, then each one's curve, claims and shrunk failures."""
    if not boundaries:
        return []
    out = ["## Where the ability ends", "",
           "P(correct) along each difficulty knob of the task generators (mean accuracy over task instances, "
           "90 % credible interval), the other knobs held fixed; the crossings are where it falls below each "
           f"threshold. {bd.P_HAT_NOTE}", ""]
    out += _table([md(h) for h in bd.summary_header(boundaries)],
                  ([md(cell) for cell in bd.summary_row(b, boundaries)] for b in boundaries)) + [""]
    for b in boundaries:
        out += [f"### {md(b.axis)}", ""]
        if b.description:
            out += [md(b.description), ""]
        rows = ([md(value), *numbers] for value, *numbers in map(bd.curve_row, b.levels))  # numbers: no markup
        out += _table([md(b.knob), *bd.CURVE_HEADER], rows) + [""]
        out += [f"- {md(c.text)}" for c in b.crossings]
        out += [f"- {bd.shrunk_text(s, md, _code)}" for s in b.shrunk]
        out += [f"- **moved**: {md(mv.text)}" for mv in b.moved]
        out += [f"- **could not judge**: {md(b.problem)}"] if b.problem else []
        out += [f"- note: {md(b.note)}"] if b.note and b.note != b.problem else []
        if b.cases:
            out.append("- cases showing it: " + ", ".join(_code(case_id) for case_id in b.cases))
        if b.crossings or b.shrunk or b.cases:
            out.append("")
    return out


def _paths_section(records: Sequence[CaseRecord], top: int) -> list[str]:
    """The cases with a path finding, wrong paths first: the finding, the paths with their samples,
    why, pass^k and the most common misses.
    """
    found = path_cases(records)
    if not found:
        return []
    out = [f"## Path findings ({len(found)})", "", md(PATHS_NOTE), ""]
    rows = ([_code(case_id), f"**{md(finding)}**", *map(md, rest)]
            for case_id, finding, *rest in map(finding_row, found[:top]))
    out += _table(list(FINDINGS_HEADER), rows) + [""]
    return out + _more(len(found) - top, "path findings")


def _removed_section(records: Sequence[CaseRecord], top: int) -> list[str]:
    removed = invalid_cases(records)
    if not removed:
        return []
    out = [f"## Removed / invalid cases ({len(removed)})", "",
           "Validation removed these before any target call; none counts toward the frontier share.", ""]
    rows = [(md(case_id, 80), md(prompt), md(reason)) for case_id, prompt, reason in map(removal, removed[:top])]
    return out + _table(["case", "prompt", "reason"], rows) + [""] + _more(len(removed) - top, "invalid cases")


def _replay_section(report: ReportInput, by_id: Mapping[str, CaseRecord], top: int) -> list[str]:
    findings, guards = report.verdicts("finding"), report.verdicts("guard")
    out = ["## Replay", "",
           "Held to each case's baseline; guards are stable, correct cases kept to catch breakage.", ""]
    rows = [(v.value, findings[v], guards[v]) for v in RegressionVerdict]
    out += _table(["verdict", "findings", "guards"], rows) + [""]
    changed = [x for x in report.comparisons
               if x.verdict not in (RegressionVerdict.SAME, RegressionVerdict.REGRESSION)]
    for x in changed[:top]:
        topic = by_id[x.case_id].topic if x.case_id in by_id else "?"
        out.append(f"- {md(topic)}/{md(x.case_id)} ({x.role}): **{x.verdict.value}** — {md(x.reason, 400)}")
    if changed:
        out.append("")
    return out + _more(len(changed) - top, "verdicts")


def write_markdown(
    path: str | os.PathLike[str],
    records: ReportInput | Summary | Iterable[CaseRecord],
    run: RunRecord | None = None,
    **options: object,
) -> Path:
    """Write :func:`markdown_report` to ``path`` (UTF-8) and return the path; ``options`` as there."""
    text = markdown_report(records, run, **options)  # type: ignore[arg-type]
    return write_text(path, text, errors="backslashreplace")
