"""Path findings and pass^k as every output words them (issue 32).

The console, report.md/.html/.json, junit.xml, ``cases show`` and the pytest summary show the
same words: ``paths: 12 cases analysed — 2 scatter, 1 wrong path, 0 undecided``, ``pass^8 = 0.62
over 9 cases (pass^1 0.88)``, ``capital_of 5/8 · lookup_city 3/8``. The numbers come from
:class:`~frontier_qa.reports._summary.Summary` (run-wide) and the records' ``path`` and
``pass_k`` (per case); nothing here counts them again. Paths can hold tool arguments, so every
path and miss passes through :func:`~frontier_qa.reports._text.shorten` (secrets masked).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from frontier_qa.reports._summary import Summary
from frontier_qa.reports._text import fmt_p, shorten
from frontier_qa.scoring._paths import top_misses
from frontier_qa.store._records import (
    FINDING_WORDS,
    PATH_FINDINGS,
    CaseRecord,
    PassK,
    PathRecord,
    SampleRecord,
    finding_word,
)

FINDING_ORDER = ("wrong", "scatter", "undecided")
"""The order cases with a path finding are listed in: a wrong path first (the gate fails on it)."""

PATH_CHARS = 80
"""Characters of one path shown (a path at ``arguments`` granularity can be long)."""

SHOWN_CLUSTERS = 4
"""Paths listed per case; the rest are counted (``· 3 more paths``)."""

MISS_CHARS = 160

PATHS_NOTE = ("The paths the samples took (tools, their order, key arguments: as probing.path.granularity says). "
              "scatter: the samples take different paths; wrong path: they agree on a path that misses the "
              "case's expectations; undecided: not decided at the sample limit.")
"""What the reports' path findings section says first."""


def _cases(n: int) -> str:
    return f"{n} case" + ("" if n == 1 else "s")


def paths_line(summary: Summary) -> str | None:
    """``12 cases analysed — 2 scatter, 1 wrong path, 0 undecided``; ``None`` when no case's path was."""
    if not summary.paths:
        return None
    counts = ", ".join(f"{summary.path_findings.get(f, 0)} {FINDING_WORDS[f]}" for f in PATH_FINDINGS)
    return f"{_cases(summary.paths)} analysed — {counts}"


def pass_k_line(summary: Summary) -> str | None:
    """``pass^8 = 0.62 over 9 cases (pass^1 0.88)``, with the cases sampled below k (no value) after
    it; ``None`` when no case counts pass^k.
    """
    p = summary.pass_k
    if p is None:
        return None
    if p.value is None:
        line = f"pass^{p.k}: no case sampled {p.k} times"
    else:
        line = f"pass^{p.k} = {p.value:.2f} over {_cases(p.cases)} (pass^1 {fmt_p(p.pass_1)})"
    if p.short:
        line += f"; {_cases(p.short)} stopped below {p.k} samples (no value)"
    return line


def headline_lines(summary: Summary) -> list[tuple[str, str]]:
    """The ``paths`` and ``pass^k`` headline lines (:meth:`ReportInput.headline`), those with something to say."""
    found = (("paths", paths_line(summary)), ("pass^k", pass_k_line(summary)))
    return [(label, text) for label, text in found if text is not None]


def findings_cell(counts: Mapping[str, int]) -> str:
    """A topic's path findings in a table cell: ``1 wrong path, 2 scatter``; ``—`` when none."""
    parts = [f"{counts[f]} {FINDING_WORDS[f]}" for f in FINDING_ORDER if counts.get(f)]
    return ", ".join(parts) or "—"


def path_cases(records: Iterable[CaseRecord]) -> list[CaseRecord]:
    """The cases with a path finding: wrong paths first, then scatter, then undecided; by id within."""
    found = [(r.path.finding, r) for r in records if r.path is not None and r.path.finding is not None]
    return [r for _, r in sorted(found, key=lambda fr: (FINDING_ORDER.index(fr[0]), fr[1].id))]


def path_text(path: str, chars: int = PATH_CHARS) -> str:
    """One path on one line, secrets masked, at most ``chars`` characters."""
    return shorten(" ".join(path.split()), chars)


def clusters_text(path: PathRecord, most: int = SHOWN_CLUSTERS) -> str:
    """``capital_of 5/8 · lookup_city 3/8``: each path with its samples of those that ran, largest first."""
    clusters = [(c.path, c.count) for c in path.clusters]
    if not clusters:  # a record written without its clusters: the majority is all there is
        return f"{path_text(path.majority)} (p̂ {fmt_p(path.p_hat)})"
    ran = sum(n for _, n in clusters)
    shown = [f"{path_text(p)} {n}/{ran}" for p, n in clusters[:most]]
    more = len(clusters) - most
    return " · ".join(shown + ([f"{more} more path" + ("" if more == 1 else "s")] if more > 0 else []))


def pass_k_text(pass_k: PassK) -> str:
    """``pass^8 = 0.00 (5 of 8 samples passed)``; below k samples: ``pass^8 — (5 of 6 samples passed,
    fewer than 8)``.
    """
    passed = f"{pass_k.passed} of {pass_k.n} samples passed"
    if pass_k.value is None:
        return f"pass^{pass_k.k} — ({passed}, fewer than {pass_k.k})"
    return f"pass^{pass_k.k} = {pass_k.value:.2f} ({passed})"


def case_misses(record: CaseRecord, most: int = 3) -> list[str]:
    """The case's most common misses with their samples (``never called convert (3 of 8)``): the
    pass^k's own, else counted over the samples that were checked; secrets masked.
    """
    if record.pass_k is not None:
        found = record.pass_k.misses[:most]
    else:
        found = top_misses((s.misses for s in record.samples if s.misses is not None), most)
    return [shorten(" ".join(m.split()), MISS_CHARS) for m in found]


def sample_misses(sample: SampleRecord) -> str | None:
    """What one sample missed, on one line: ``never called convert; 9 steps, more than the 6 allowed``,
    ``met the expectations``; ``None`` when nothing was checked.
    """
    if sample.misses is None:
        return None
    if not sample.misses:
        return "met the expectations"
    return shorten("; ".join(" ".join(m.split()) for m in sample.misses), 2 * MISS_CHARS)


FINDINGS_HEADER = ("case", "finding", "paths (samples)", "why", "pass^k", "top misses")
"""The columns of the reports' path findings table (:func:`finding_row`)."""


def finding_row(record: CaseRecord) -> tuple[str, ...]:
    """One row of the path findings table, as plain text (each format escapes it): the case id,
    the finding, the paths with their samples, why, pass^k, the most common misses.
    """
    path = record.path
    return (record.id, finding_word(path), "—" if path is None else clusters_text(path),
            "" if path is None else shorten(path.reason, 300),
            "—" if record.pass_k is None else pass_k_text(record.pass_k), "; ".join(case_misses(record)) or "—")


def case_line(record: CaseRecord) -> str:
    """One case's paths on one line (console, junit): ``capital_of 7/8 · lookup_city 1/8; misses:
    never called convert (8 of 8); pass^8 = 0.00 (0 of 8 samples passed)``, the parts it has.
    """
    parts = [] if record.path is None else [clusters_text(record.path)]
    misses = case_misses(record)
    if misses:
        parts.append("misses: " + ", ".join(misses))
    if record.pass_k is not None:
        parts.append(pass_k_text(record.pass_k))
    return "; ".join(parts)


__all__ = [
    "FINDING_ORDER",
    "FINDINGS_HEADER",
    "FINDING_WORDS",
    "PATHS_NOTE",
    "case_line",
    "case_misses",
    "clusters_text",
    "finding_word",
    "finding_row",
    "findings_cell",
    "headline_lines",
    "pass_k_line",
    "pass_k_text",
    "path_cases",
    "path_text",
    "paths_line",
    "sample_misses",
]
