"""``report.html``: one self-contained file with plots, readable offline.

No JavaScript, no CDN, no fonts or images fetched: CSS and inline SVG
(:mod:`frontier_qa.reports._svg`) only, so the file can be attached to a CI job and
opened anywhere. Every piece of user or model text is escaped with
:func:`~frontier_qa.reports._text.esc` — a model answer holding ``<script>`` stays text.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from frontier_qa.reports import _boundaries as bd
from frontier_qa.reports._explain import baseline_votes, removal, votes
from frontier_qa.reports._path_findings import (
    FINDINGS_HEADER,
    PATHS_NOTE,
    case_misses,
    clusters_text,
    finding_row,
    finding_word,
    findings_cell,
    pass_k_text,
    path_cases,
    path_text,
    sample_misses,
)
from frontier_qa.reports._report_input import ReportInput, ReportParts
from frontier_qa.reports._step_line import cluster_steps, path_line_text, path_lines
from frontier_qa.reports._summary import Summary, answer_distribution, invalid_cases, timeline
from frontier_qa.reports._svg import COLORS, boundary_svg, frontier_map_svg, histogram_svg, line_svg
from frontier_qa.reports._text import esc, fmt_p, fmt_usd, shorten, write_text
from frontier_qa.store._comparison import Comparison, RegressionVerdict
from frontier_qa.store._records import CLASS_ORDER, BoundaryRecord, CaseClass, CaseRecord, RunRecord, SampleRecord

if TYPE_CHECKING:  # typing.Unpack is 3.11+; the package supports 3.10
    from typing_extensions import Unpack

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f7f9;
color:#1d2330}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #dde1e6;padding-bottom:4px}
.meta{color:#5a6270}.meta code{background:#eceff3;padding:1px 4px;border-radius:3px}
.gate{padding:10px 14px;border-radius:6px;margin:16px 0;font-weight:600}
.gate.pass{background:#e3f4e6;border:1px solid #2e933c}.gate.fail{background:#fbe4e7;border:1px solid #d1495b}
.gate.nojudge{background:#fff4d6;border:1px solid #e59f00}
.gate ul{margin:6px 0 0;font-weight:400}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:10px 14px;min-width:120px}
.card b{display:block;font-size:20px}.card span{color:#5a6270;font-size:12px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:14px}
.chart{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:8px}
.legend{display:flex;gap:14px;flex-wrap:wrap;margin:8px 0;color:#3a4250;font-size:12px}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;vertical-align:-1px}
table{border-collapse:collapse;background:#fff;width:100%;font-size:13px}
th,td{border:1px solid #dde1e6;padding:4px 8px;text-align:left;vertical-align:top}th{background:#eef1f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 6px;border-radius:9px;color:#fff;font-size:12px}
.case{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:10px 14px;margin:10px 0}
.case h3{font-size:15px;margin:0 0 6px}
pre{white-space:pre-wrap;word-break:break-word;background:#f3f4f6;padding:8px;border-radius:4px;margin:6px 0;
max-height:320px;overflow:auto}
.dist{display:grid;grid-template-columns:minmax(120px,38%) 1fr 60px;gap:3px 8px;align-items:center;
font-size:13px}
.bar{height:12px;background:#1f6fb2;border-radius:2px}.bar.maj{background:#e59f00}
.ans{overflow-wrap:anywhere}details{margin:4px 0}summary{cursor:pointer}
.steps{grid-column:1/-1;margin:-2px 0 4px 12px;color:#5a6270;font:12px ui-monospace,monospace;overflow-wrap:anywhere}
table.samples td:nth-child(2){width:22%}table.samples td:nth-child(6){width:55%}
"""


def _pct(share: float | None) -> str:
    return "—" if share is None else f"{share:.0%}"


def _badge(cls: CaseClass) -> str:
    return f'<span class="badge" style="background:{COLORS[cls]}">{cls.value}</span>'


def _interval(r: CaseRecord) -> str:
    return "—" if r.interval is None else f"[{r.interval.low:.2f}, {r.interval.high:.2f}]"


def _distribution(r: CaseRecord) -> str:
    k = max(r.k, 1)
    rows = []
    steps, split = cluster_steps(r), path_lines(r)
    for answer, n in answer_distribution(r):
        cls = "bar maj" if answer == r.majority else "bar"
        rows.append(
            f'<div class="ans">{esc(shorten(answer, 160))}</div>'
            f'<div><div class="{cls}" style="width:{100 * n / k:.1f}%"></div></div>'
            f'<div class="n">{n}/{r.k}</div>'
        )
        if answer in split:  # the samples took several paths: one line (and its misses) per path
            rows += [f'<div class="steps">{esc(_said(path_line_text(line), line.sample))}</div>'
                     for line in split[answer]]
        elif answer in steps:
            rows.append(f'<div class="steps">{esc(steps[answer])}</div>')
    return f'<div class="dist">{"".join(rows)}</div>' if rows else "<p>No answers.</p>"


def _said(line: str, sample: SampleRecord) -> str:
    """A path's step line with what its sample missed: ``4 × steps: … · misses: never called convert``."""
    misses = sample_misses(sample)
    return line if misses is None else f"{line} · misses: {misses}"


def _case_card(r: CaseRecord, prompt_chars: int) -> str:
    ref = ""
    if r.case.reference is not None:
        verified = "verified" if r.case.reference_verified else "unverified"
        ref = f"<p>Reference ({verified}): <code>{esc(shorten(r.case.reference, 300))}</code></p>"
    why = f"<p>Why: {esc(shorten(r.reason, 400))}</p>" if r.reason else ""
    return (
        f'<div class="case"><h3>{_badge(r.case_class)} {esc(r.id)} '
        f'<span class="meta">· {esc(r.topic)} · p̂ {fmt_p(r.p_hat)} {_interval(r)} · k={r.k}</span></h3>'
        f"<pre>{esc(shorten(r.case.prompt, prompt_chars))}</pre>{ref}{why}{_path(r)}{_distribution(r)}</div>"
    )


def _path(r: CaseRecord) -> str:
    """The case's paths and pass^k under its prompt, when analysed."""
    items = []
    if r.path is not None:
        items.append(f"Path ({esc(finding_word(r.path))}): {esc(clusters_text(r.path))}")
    if r.pass_k is not None:
        items.append(esc(pass_k_text(r.pass_k)))
    misses = case_misses(r)
    if misses:
        items.append("misses: " + esc("; ".join(misses)))
    return f'<p class="meta">{" · ".join(items)}</p>' if items else ""


def _paths_section(records: Sequence[CaseRecord], top: int) -> str:
    """The cases with a path finding, wrong paths first (as report.md lists them)."""
    found = path_cases(records)
    if not found:
        return ""
    head = "".join(f"<th>{esc(h)}</th>" for h in FINDINGS_HEADER)
    rows = "".join(f"<tr><td><code>{esc(case_id)}</code></td><td><b>{esc(finding)}</b></td>"
                   + "".join(f"<td>{esc(cell)}</td>" for cell in rest) + "</tr>"
                   for case_id, finding, *rest in map(finding_row, found[:top]))
    more = f"<p>{len(found) - top} more in report.json.</p>" if len(found) > top else ""
    return f"<h2>Path findings ({len(found)})</h2><p>{esc(PATHS_NOTE)}</p><table><tr>{head}</tr>{rows}</table>{more}"


def _verdict_card(x: Comparison, r: CaseRecord | None, history: Sequence[CaseRecord], prompt_chars: int) -> str:
    rows = []
    b = x.baseline
    if b is not None:
        interval = "" if b.interval is None else f" [{b.interval.low:.2f}, {b.interval.high:.2f}]"
        rows.append(f"<tr><td>baseline</td><td>{b.case_class.value}</td><td>{fmt_p(b.p_hat)}{interval}</td>"
                    f"<td>{b.k}</td><td>{esc(b.target_version or '—')}</td><td>{b.accepted_at:%Y-%m-%d}</td>"
                    f"<td>{esc(baseline_votes(b))}</td></tr>")
    if r is not None:
        rows.append(f"<tr><td>now</td><td>{r.case_class.value}</td><td>{fmt_p(r.p_hat)} {_interval(r)}</td>"
                    f"<td>{r.k}</td><td>{esc(r.target_version or '—')}</td><td>{r.finished_at:%Y-%m-%d}</td>"
                    f"<td>{esc(votes(answer_distribution(r)))}</td></tr>")
    head = "<tr><th></th><th>class</th><th>p̂</th><th>k</th><th>agent</th><th>date</th><th>answers</th></tr>"
    prompt = "" if r is None else f"<pre>{esc(shorten(r.case.prompt, prompt_chars))}</pre>"
    trend = ""
    points = [(h.finished_at, h.p_hat) for h in history if h.p_hat is not None]
    if len(points) > 1:
        trend = line_svg(points, title="p̂ by observation", y_label="p̂", width=420, height=160)
    topic = "?" if r is None else r.topic
    return (f'<div class="case"><h3>{_badge_text("regression")} {esc(topic)}/{esc(x.case_id)}</h3>{prompt}'
            f"<table>{head}{''.join(rows)}</table><p>Why: {esc(x.reason)}</p>{trend}</div>")


def _removed_section(records: Sequence[CaseRecord], top: int) -> str:
    """The cases validation removed, each with its reason (as report.md and the console name them)."""
    removed = invalid_cases(records)
    if not removed:
        return ""
    rows = "".join(f"<tr><td>{esc(case_id)}</td><td>{esc(prompt)}</td><td>{esc(reason)}</td></tr>"
                   for case_id, prompt, reason in (removal(r, prompt_chars=200, reason_chars=400)
                                                   for r in removed[:top]))
    more = f"<p>{len(removed) - top} more in report.json.</p>" if len(removed) > top else ""
    return (f"<h2>Removed / invalid cases ({len(removed)})</h2><p>Validation removed these before any target "
            "call; none counts toward the frontier share.</p><table><tr><th>case</th><th>prompt</th>"
            f"<th>reason</th></tr>{rows}</table>{more}")


def _code(text: str) -> str:
    return f"<code>{esc(text)}</code>"


def _boundaries_section(boundaries: Sequence[BoundaryRecord]) -> str:
    """Where the ability ends: a row per boundary, then each one's chart, curve, claims and shrunk failures."""
    if not boundaries:
        return ""
    head = "".join(f"<th>{esc(h)}</th>" for h in bd.summary_header(boundaries))
    rows = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in cells[:-1])
                   + f'<td class="n">{esc(cells[-1])}</td></tr>'
                   for cells in (bd.summary_row(b, boundaries) for b in boundaries))
    out = ["<h2>Where the ability ends</h2><p>P(correct) along each difficulty knob of the task generators (mean "
           "accuracy over task instances, 90 % credible interval), the other knobs held fixed; the crossings are "
           f"where it falls below each threshold. {esc(bd.P_HAT_NOTE)}</p><table><tr>{head}</tr>{rows}</table>"]
    for b in boundaries:
        curve_head = "".join(f"<th>{esc(h)}</th>" for h in (b.knob, *bd.CURVE_HEADER))
        curve = "".join(f"<tr><td>{esc(value)}</td>" + "".join(f'<td class="n">{esc(n)}</td>' for n in numbers)
                        + "</tr>" for value, *numbers in map(bd.curve_row, b.levels))
        items = ([esc(c.text) for c in b.crossings] + [bd.shrunk_text(s, esc, _code) for s in b.shrunk]
                 + [f"<strong>moved</strong>: {esc(mv.text)}" for mv in b.moved]
                 + ([f"<strong>could not judge</strong>: {esc(b.problem)}"] if b.problem else [])
                 + ([f"note: {esc(b.note)}"] if b.note and b.note != b.problem else []))
        if b.cases:
            items.append("cases showing it: " + ", ".join(_code(case_id) for case_id in b.cases))
        listed = "<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>" if items else ""
        description = f'<p class="meta">{esc(b.description)}</p>' if b.description else ""
        out.append(f'<div class="case boundary"><h3>{esc(b.axis)}</h3>{description}'
                   f'<div class="chart" style="display:inline-block;margin:6px 0">{boundary_svg(b)}</div>'
                   f'<table style="width:auto;min-width:50%"><tr>{curve_head}</tr>{curve}</table>{listed}</div>')
    return "".join(out)


def _badge_text(text: str) -> str:
    return f'<span class="badge" style="background:#d1495b">{esc(text)}</span>'


def _samples(r: CaseRecord, sample_chars: int) -> str:
    checked = any(s.path is not None or s.misses is not None for s in r.samples)  # paths analysed: say each one

    def path(s: SampleRecord) -> str:
        if not checked:
            return ""
        said = [path_text(s.path)] if s.path is not None else []
        said += [m] if (m := sample_misses(s)) is not None else []
        return f"<td>{esc(' — '.join(said))}</td>"

    rows = [
        f'<tr><td class="n">{s.sample_index}</td><td class="ans">{esc(shorten(s.answer or "—", 200))}</td>'
        f'<td class="n">{s.n_tool_calls}</td><td>{esc(shorten(s.error or "", 200))}</td>'
        f"<td>{'yes' if s.cached else ''}</td>"
        f"<td><details><summary>{s.text_chars} chars</summary><pre>{esc(shorten(s.text or '', sample_chars))}"
        f"</pre></details></td>{path(s)}</tr>"
        for s in r.samples
    ]
    head = ("<tr><th>#</th><th>answer</th><th>tools</th><th>error</th><th>cached</th><th>text</th>"
            + ("<th>path · misses</th>" if checked else "") + "</tr>")
    return f'<table class="samples">{head}{"".join(rows)}</table>'


def html_report(
    records: ReportInput | Summary | Iterable[CaseRecord],
    run: RunRecord | None = None,
    *,
    band: tuple[float, float] | None = None,
    top: int = 8,
    max_cases: int = 500,
    prompt_chars: int = 1200,
    sample_chars: int = 1500,
    title: str = "frontier-qa report",
    **given: Unpack[ReportParts],
) -> str:
    """The HTML report as one string.

    Args:
        records: what to show, and with it ``run`` and the ``gate``, ``comparisons`` and ``history``
            keywords, as :meth:`ReportInput.of <frontier_qa.reports._report_input.ReportInput.of>` takes them.
        run: the run, for the header.
        band: the frontier band (low, high) in p̂ units to shade on the histogram.
        top: frontier and failure cases shown in detail.
        max_cases: cases listed with their samples (the rest are counted, not listed).
        prompt_chars: prompt characters shown per case.
        sample_chars: raw sample text characters shown per sample.
        title: page title.
    """
    report = ReportInput.of(records, run, **given)
    s, run, gate, comparisons, history = report.summary, report.run, report.gate, report.comparisons, report.history
    parts = [f"<h1>{esc(title)}</h1>"]
    meta = [f"target <code>{esc(t)}</code>" for t in s.targets]
    meta += report.run_header(lambda text: f"<code>{esc(text)}</code>")
    parts.append(f'<div class="meta">{" · ".join(meta)}</div>')
    if gate is not None and gate.health:
        items = "".join(f"<li>{esc(p.message)}</li>" for p in gate.health)
        parts.append(f'<div class="gate nojudge">Could not judge the agent (exit 3)<ul>{items}</ul></div>')
    if gate is not None:
        items = "".join(f"<li>{'✔' if c.passed else '✘'} {esc(c.message)}</li>" for c in gate.checks)
        state = "pass" if gate.passed else "fail"
        parts.append(
            f'<div class="gate {state}">Gate {"passed" if gate.passed else "failed"}<ul>{items}</ul></div>'
        )
    by_id = {r.id: r for r in s.records}
    regressions = [x for x in comparisons if x.verdict is RegressionVerdict.REGRESSION]
    if regressions:
        shown = "".join(_verdict_card(x, by_id.get(x.case_id), history.get(x.case_id, ()), prompt_chars)
                        for x in regressions[:top])
        more = f"<p>{len(regressions) - top} more regressions: see report.json.</p>" if len(regressions) > top else ""
        parts.append(f"<h2>Regressions ({len(regressions)})</h2>{shown}{more}")
    c = s.cost
    target = report.spend.get("target")
    cards = [
        ("cases", str(s.total)),
        ("frontier share", _pct(s.frontier_share)),
        ("failures", str(s.by_class[CaseClass.FAILURE])),
        ("suspect", str(s.by_class[CaseClass.SUSPECT])),
        ("unchecked", str(s.by_class[CaseClass.UNCHECKED])),
        ("target calls", f"{(target.calls if target else c.calls):,}"),
        ("tokens", f"{(target.tokens if target else c.tokens):,}"),
        ("cost", fmt_usd(target.usd if target else c.usd)),
    ]
    parts.append(
        '<div class="cards">'
        + "".join(f"<div class=card><b>{esc(v)}</b><span>{esc(k)}</span></div>" for k, v in cards)
        + "</div>"
    )
    parts.append('<ul class="headline">' + "".join(f"<li><b>{esc(label)}</b>: {esc(text)}</li>"
                                                    for label, text in report.headline()) + "</ul>")
    if report.warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{esc(w)}</li>" for w in report.warnings) + "</ul>")
    if report.changes:
        parts.append("<h2>Changed since stored</h2><ul>" + "".join(f"<li>{esc(c)}</li>" for c in report.changes)
                     + "</ul>")
    if report.boundaries:
        parts.append(_boundaries_section(report.boundaries))
    legend = (
        '<div class="legend">'
        + "".join(
            f'<span><i style="background:{COLORS[cls]}"></i>{cls.value} ({s.by_class[cls]})</span>'
            for cls in CLASS_ORDER
        )
        + "</div>"
    )
    points = timeline(s.records)
    rows = sorted(
        ((t.topic, t.counts) for t in s.by_topic), key=lambda tc: (-tc[1][CaseClass.FRONTIER], tc[0])
    )
    charts = [
        histogram_svg(s.histogram.edges, {k: list(v) for k, v in s.histogram.by_class.items()}, band=band),
        frontier_map_svg(rows),
        line_svg([(p.at, float(p.calls)) for p in points], title="Target calls over time", y_label="calls"),
    ]
    if c.usd is not None:
        charts.append(
            line_svg(
                [(p.at, p.usd) for p in points],
                title="Cost over time",
                y_label="US dollars",
                y_fmt=lambda v: f"${v:.3g}",
                color="#d1495b",
            )
        )
    parts.append("<h2>Overview</h2>" + legend)
    parts.append(
        '<div class="charts">' + "".join(f'<div class="chart">{svg}</div>' for svg in charts) + "</div>"
    )
    head = "".join(f"<th>{cls.value}</th>" for cls in CLASS_ORDER)
    body = "".join(
        f"<tr><td>{esc(t.topic)}</td>"
        + "".join(f'<td class="n">{t.counts[cls]}</td>' for cls in CLASS_ORDER)
        + f'<td class="n">{t.total}</td><td class="n">{_pct(t.frontier_share)}</td>'
        + (f"<td>{esc(findings_cell(t.path_findings))}</td>" if s.paths else "")
        + "</tr>"
        for t in s.by_topic
    )
    paths_head = "<th>path findings</th>" if s.paths else ""  # only when some case's paths were analysed
    parts.append(
        f"<h2>Frontier map by topic</h2><table><tr><th>topic</th>{head}<th>total</th>"
        f"<th>frontier share</th>{paths_head}</tr>{body}</table>"
    )
    parts.append(_paths_section(s.records, max_cases))
    for _, name, chosen in report.top_sections(top):
        parts.append(f"<h2>{name}</h2>" + "".join(_case_card(r, prompt_chars) for r in chosen))
    parts.append(_removed_section(s.records, max_cases))
    if comparisons:
        findings, guards = report.verdicts("finding"), report.verdicts("guard")
        table = "".join(f'<tr><td>{v.value}</td><td class="n">{findings[v]}</td><td class="n">{guards[v]}</td></tr>'
                        for v in RegressionVerdict)
        changed = [x for x in comparisons if x.verdict is not RegressionVerdict.SAME]
        changed_rows = "".join(
            f"<tr><td>{esc(x.case_id)}</td><td>{x.role}</td><td>{x.verdict.value}</td>"
            f"<td>{'—' if x.old_class is None else x.old_class.value} {fmt_p(x.old_p_hat)} → "
            f"{x.new_class.value} {fmt_p(x.new_p_hat)}</td><td>{esc(x.reason)}</td></tr>"
            for x in changed[:max_cases]
        )
        parts.append(
            "<h2>Replay</h2><p>Each case held to its baseline; guards are stable, correct cases kept to catch "
            f"breakage.</p><table><tr><th>verdict</th><th>findings</th><th>guards</th></tr>{table}</table>"
            + (f"<h3>Changed</h3><table><tr><th>case</th><th>role</th><th>verdict</th><th>baseline → now</th>"
               f"<th>why</th></tr>{changed_rows}</table>" if changed_rows else "")
        )
    rank = {cls: i for i, cls in enumerate(CLASS_ORDER)}
    listed = sorted(s.records, key=lambda r: (rank[r.case_class], r.id))[:max_cases]
    items = "".join(
        f"<details><summary>{_badge(r.case_class)} {esc(r.id)} <span class=meta>· {esc(r.topic)} · "
        f"p̂ {fmt_p(r.p_hat)} {_interval(r)} · k={r.k} · majority {esc(shorten(r.majority or '—', 80))}"
        f"</span></summary>{_case_card(r, prompt_chars)}{_samples(r, sample_chars)}</details>"
        for r in listed
    )
    more = f"<p>{s.total - len(listed)} more cases not listed.</p>" if s.total > len(listed) else ""
    parts.append(f"<h2>All cases</h2>{items}{more}")
    if report.next_steps:
        steps = "".join(f"<li>{esc(what)}{': ' if sep else ''}<code>{esc(command)}</code></li>" if sep
                        else f"<li>{esc(what)}</li>"
                        for what, sep, command in (step.partition(": ") for step in report.next_steps))
        parts.append(f"<h2>Next steps</h2><ul>{steps}</ul>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body><main>"
        + "\n".join(parts)
        + "</main></body></html>\n"
    )


def write_html(
    path: str | os.PathLike[str],
    records: ReportInput | Summary | Iterable[CaseRecord],
    run: RunRecord | None = None,
    **options: object,
) -> Path:
    """Write :func:`html_report` to ``path`` (UTF-8) and return the path; ``options`` as there."""
    return write_text(path, html_report(records, run, **options))  # type: ignore[arg-type]
