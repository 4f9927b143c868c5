"""``report.md``: a summary a person reads in a pull request or a CI job page.

Sections: header (target, run, gate), counts by class, cost, the frontier map by topic,
the top frontier and failure cases with their answer distributions, and replay changes.
All user and model text is escaped (:func:`~frontier_qa.reports._text.md`), so an
answer cannot break a table or inject HTML.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from frontier_qa.reports._text import fmt_p, fmt_usd, md, write_text
from frontier_qa.reports.gate import GateResult
from frontier_qa.reports.summary import Summary, answer_distribution, summarize, top_cases
from frontier_qa.store.comparison import Comparison, Verdict, count_verdicts
from frontier_qa.store.records import CLASS_ORDER, CaseClass, CaseRecord, RunRecord


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


def markdown_report(
    records: Iterable[CaseRecord] | Summary,
    run: RunRecord | None = None,
    *,
    gate: GateResult | None = None,
    comparisons: Sequence[Comparison] = (),
    top: int = 5,
    prompt_chars: int = 300,
) -> str:
    """The Markdown report.

    Args:
        records: case records (latest per case) or their summary.
        run: the run, for the header.
        gate: the gate result to show, if evaluated.
        comparisons: replay verdicts to list, if any.
        top: how many frontier and failure cases to show in detail.
        prompt_chars: prompt characters shown per case.
    """
    s = records if isinstance(records, Summary) else summarize(records)
    out = ["# frontier-qa report", ""]
    targets = ", ".join(md(t) for t in s.targets) or "none"
    head = [f"Target: {targets}"]
    if run is not None:
        if run.target_version:
            head.append(f"version {md(run.target_version)}")
        head.append(f"run {md(run.run_id)}")
        if run.shard_count > 1:
            head.append(f"shard {run.shard_index}/{run.shard_count}")
        head.append(f"started {run.started_at:%Y-%m-%d %H:%M} UTC")
    out += [" · ".join(head), ""]
    if gate is not None:
        out.append(f"**Gate: {'PASSED' if gate.passed else 'FAILED'}**")
        out += [f"- {md(c.message)}{'' if c.passed else ' ❌'}" for c in gate.checks]
        out.append("")
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
    c = s.cost
    out += [
        "",
        f"Cost: {c.calls} target calls ({c.cached} cached), {c.tokens:,} tokens "
        f"({c.prompt_tokens:,} prompt + {c.completion_tokens:,} completion), {fmt_usd(c.usd)}",
        "",
    ]
    out += ["## Frontier map by topic", ""]
    rows = [
        [md(t.topic, 60)] + [t.counts[c] for c in CLASS_ORDER] + [t.total, _share(t.frontier_share)]
        for t in s.by_topic
    ]
    out += _table(["topic", *(c.value for c in CLASS_ORDER), "total", "frontier share"], rows) + [""]
    for cls, title in (
        (CaseClass.FRONTIER, "Top frontier cases"),
        (CaseClass.FAILURE, "Top failures"),
        (CaseClass.SUSPECT, "Top suspect cases"),
    ):
        chosen = top_cases(s.records, cls, top)
        if chosen:
            out += [f"## {title}", ""]
            for r in chosen:
                out += _case_block(r, prompt_chars)
    if comparisons:
        counts = count_verdicts(comparisons)
        out += ["## Replay", ""]
        out += _table(["verdict", "cases"], [(v.value, counts[v]) for v in Verdict]) + [""]
        changed = [x for x in comparisons if x.verdict not in (Verdict.SAME, Verdict.INCONCLUSIVE)]
        out += [f"- {md(x.case_id)}: **{x.verdict.value}** — {md(x.reason)}" for x in changed]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def write_markdown(
    path: str | os.PathLike[str],
    records: Iterable[CaseRecord] | Summary,
    run: RunRecord | None = None,
    **options: object,
) -> Path:
    """Write :func:`markdown_report` to ``path`` (UTF-8) and return the path; ``options`` as there."""
    text = markdown_report(records, run, **options)  # type: ignore[arg-type]
    return write_text(path, text, errors="backslashreplace")
