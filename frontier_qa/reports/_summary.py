"""Numbers every report shows: counts by class and topic (the frontier map), p̂ histogram, cost.

Pure functions over case records; each writer (JSON, JUnit, Markdown, HTML) renders them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from frontier_qa.redaction import redact
from frontier_qa.reports._text import fmt_usd
from frontier_qa.scoring.answers import answer_form
from frontier_qa.store._lines import latest_by
from frontier_qa.store._records import CLASS_ORDER, PATH_FINDINGS, CaseClass, CaseRecord, Cost, ModelSpend, count_each


@dataclass(frozen=True)
class TopicRow:
    """One row of the frontier map.

    Attributes:
        topic: the topic label.
        counts: cases per class (every class present, zeros included).
        total: cases in the topic.
        frontier_share: frontier cases / valid cases in the topic, in [0, 1]; ``None`` if none valid.
        path_findings: the topic's cases by path finding (``scatter``, ``wrong``, ``undecided``, zeros
            included), as :attr:`Summary.path_findings` counts them over all topics.
    """

    topic: str
    counts: dict[CaseClass, int]
    total: int
    frontier_share: float | None
    path_findings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PATH_FINDINGS, 0))


@dataclass(frozen=True)
class Histogram:
    """p̂ histogram over equal bins of [0, 1].

    Bin ``i`` holds ``edges[i] <= p̂ < edges[i+1]``; the last bin also holds p̂ = 1.
    ``by_class[c][i]`` splits bin ``i`` by class.
    """

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    by_class: dict[CaseClass, tuple[int, ...]]


@dataclass(frozen=True)
class TimePoint:
    """Cumulative cost when a case finished (for the calls-and-cost-over-time plot)."""

    at: datetime
    calls: int
    usd: float


@dataclass(frozen=True)
class PassKSummary:
    """pass^k over the cases that count it (τ-bench): the mean of their per-case pass^k.

    Attributes:
        k: the k (the cases' own; a run asks one).
        cases: cases with a pass^k value (sampled at least k times).
        value: mean pass^k over them; ``None`` when no case has one.
        pass_1: mean share of passing samples over the same cases (pass^1), for scale.
        short: counted cases whose sampling ended below k (no value: budget, stop).
    """

    k: int
    cases: int
    value: float | None
    pass_1: float | None
    short: int = 0


@dataclass(frozen=True)
class Summary:
    """Everything a report summarises about a set of cases (one record per case).

    ``path_findings`` counts the cases by path finding (``scatter``, ``wrong``, ``undecided``,
    zeros included) and ``paths`` the cases whose paths were analysed; ``pass_k`` is ``None``
    when no case counts pass^k. ``frontier_precision`` is the frontier labels' expected precision,
    the mean of their P(p* in band) (``None`` without a frontier case that kept its posterior);
    ``frontier_labels`` how many labels it is the mean of.
    """

    records: tuple[CaseRecord, ...]
    total: int
    by_class: dict[CaseClass, int]
    by_topic: tuple[TopicRow, ...]
    histogram: Histogram
    cost: Cost
    frontier_share: float | None
    targets: tuple[str, ...]
    path_findings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PATH_FINDINGS, 0))
    paths: int = 0
    pass_k: PassKSummary | None = None
    frontier_precision: float | None = None
    frontier_labels: int = 0


def precision_line(summary: Summary) -> str | None:
    """``expected 0.94: the mean P(in band) of the 12 frontier cases (0.7 wrong labels expected among them)``:
    the one wording of the frontier labels' expected precision; ``None`` without one.
    """
    p, n = summary.frontier_precision, summary.frontier_labels
    if p is None:
        return None
    cases = "case" if n == 1 else "cases"
    return (f"expected {p:.2f}: the mean P(in band) of the {n} frontier {cases} "
            f"({n * (1 - p):.1f} wrong labels expected among them)")


def pass_k_summary(records: Iterable[CaseRecord]) -> PassKSummary | None:
    """Mean pass^k (and pass^1) over the records that count it; ``None`` when none does."""
    counted = [r.pass_k for r in records if r.pass_k is not None]
    if not counted:
        return None
    valued = [p for p in counted if p.value is not None]
    value = sum(p.value for p in valued if p.value is not None) / len(valued) if valued else None
    pass_1 = sum(p.passed / p.n for p in valued if p.n) / len(valued) if valued else None
    return PassKSummary(k=max(p.k for p in counted), cases=len(valued), value=value, pass_1=pass_1,
                        short=len(counted) - len(valued))


def class_counts(summary: Summary) -> str:
    """``12 (failure 1, frontier 4, pass 6, invalid 1)``: the cases by class, those with none left out."""
    parts = [f"{c.value} {summary.by_class[c]}" for c in CLASS_ORDER if summary.by_class[c]]
    return f"{summary.total}" + (f" ({', '.join(parts)})" if parts else "")


def answers_line(summary: Summary) -> str | None:
    """How the agent's answers were read: ``20 of 24 read in format auto (plain reply 14, boxed 6);
    4 unreadable``. Over the samples that ran (failed calls left out) of the valid cases; ``None``
    when no sample ran.
    """
    forms: dict[str, int] = {}
    formats: set[str] = set()
    ran = unreadable = 0
    for r in summary.records:
        if r.case_class is CaseClass.INVALID:
            continue
        fmt = r.case.answer_format
        for sample in r.samples:
            if sample.error is not None:
                continue
            ran += 1
            formats.add(fmt)
            if sample.answer is None:
                unreadable += 1
            elif fmt == "auto":  # which of auto's forms it was: what the agent actually writes
                form = answer_form(sample.text, fmt) or "other"  # a stored text cut where the answer was
                forms[form] = forms.get(form, 0) + 1
            else:
                forms[fmt] = forms.get(fmt, 0) + 1
    if not ran:
        return None
    parts = ", ".join(f"{form} {n}" for form, n in sorted(forms.items(), key=lambda item: (-item[1], item[0])))
    name = "format" if len(formats) == 1 else "formats"
    line = f"{ran - unreadable} of {ran} read in {name} {', '.join(sorted(formats))}" + (f" ({parts})" if parts else "")
    return line + (f"; {unreadable} unreadable" if unreadable else "")


def spend_line(spend: Mapping[str, ModelSpend], cases: Cost | None = None) -> str:
    """What each model spent, labelled: ``target 198 calls (12 samples cached), 3,400 tokens, cost
    unknown; curriculum 12 calls, ...``. Without the models' figures (a run written before they
    were recorded), the cases' own samples (``cases``), labelled so.
    """
    if not spend:
        if cases is None:
            return "nothing recorded"
        return (f"target {cases.calls} calls for the recorded cases ({cases.cached} samples cached), "
                f"{cases.tokens:,} tokens, cost {fmt_usd(cases.usd)}")
    parts = []
    for role in sorted(spend, key=lambda r: (r != "target", r)):
        m = spend[role]
        extra = [f"{m.cached} samples cached"] if m.cached else []
        extra += [f"{m.failed} failed"] if m.failed else []
        more = f" ({', '.join(extra)})" if extra else ""
        parts.append(f"{role} {m.calls} calls{more}, {m.tokens:,} tokens, cost {fmt_usd(m.usd)}")
    return "; ".join(parts)


def _share(frontier: int, valid: int) -> float | None:
    return frontier / valid if valid else None


def histogram_bin(p_hat: float, bins: int) -> int:
    """Index of the bin that holds ``p_hat`` among ``bins`` equal bins of [0, 1]."""
    # p̂ = m/k lands exactly on edges (0.3·10 = 3.0000000000000004): nudge before flooring
    return min(int(p_hat * bins + 1e-9), bins - 1)


def summarize(records: Iterable[CaseRecord], *, bins: int = 10) -> Summary:
    """Summarise case records; several records of one case count once (the latest).

    Args:
        records: case records, e.g. from :meth:`~frontier_qa.store.CaseStore.latest`.
        bins: number of equal-width p̂ histogram bins over [0, 1].
    """
    latest = latest_by(records, lambda r: r.id)
    recs = tuple(sorted(latest.values(), key=lambda r: r.id))
    by_class = {c: 0 for c in CLASS_ORDER}
    topics: dict[str, dict[CaseClass, int]] = {}
    findings: dict[str, list[str]] = {}
    hist = {c: [0] * bins for c in CLASS_ORDER}
    cost = Cost()
    for r in recs:
        by_class[r.case_class] += 1
        topics.setdefault(r.topic, {c: 0 for c in CLASS_ORDER})[r.case_class] += 1
        if r.path is not None and r.path.finding is not None:
            findings.setdefault(r.topic, []).append(r.path.finding)
        if r.p_hat is not None:
            hist[r.case_class][histogram_bin(r.p_hat, bins)] += 1
        cost = cost + r.cost
    rows = []
    for topic in sorted(topics):
        counts = topics[topic]
        total = sum(counts.values())
        rows.append(
            TopicRow(
                topic, counts, total, _share(counts[CaseClass.FRONTIER], total - counts[CaseClass.INVALID]),
                count_each(PATH_FINDINGS, findings.get(topic, ())),
            )
        )
    insides = [x for r in recs if r.case_class is CaseClass.FRONTIER and (x := r.band_inside) is not None]
    return Summary(
        records=recs,
        total=len(recs),
        by_class=by_class,
        by_topic=tuple(rows),
        histogram=Histogram(
            edges=tuple(i / bins for i in range(bins + 1)),
            counts=tuple(sum(hist[c][i] for c in CLASS_ORDER) for i in range(bins)),
            by_class={c: tuple(v) for c, v in hist.items()},
        ),
        cost=cost,
        frontier_share=_share(by_class[CaseClass.FRONTIER], len(recs) - by_class[CaseClass.INVALID]),
        targets=tuple(sorted({r.target_id for r in recs})),
        path_findings=count_each(PATH_FINDINGS, (r.path.finding for r in recs if r.path and r.path.finding)),
        paths=sum(1 for r in recs if r.path is not None),
        pass_k=pass_k_summary(recs),
        frontier_precision=sum(insides) / len(insides) if insides else None,
        frontier_labels=len(insides),
    )


def top_cases(records: Sequence[CaseRecord], case_class: CaseClass, n: int = 10) -> list[CaseRecord]:
    """The ``n`` most telling cases of a class.

    Frontier: p̂ closest to 0.5 first (most uncertain). Failure and suspect: highest p̂
    first (most stably wrong). Others: by id. Ties by id.
    """
    chosen = [r for r in records if r.case_class is case_class]
    if case_class is CaseClass.FRONTIER:
        key = lambda r: (abs((r.p_hat if r.p_hat is not None else 0.5) - 0.5), r.id)  # noqa: E731
    elif case_class in (CaseClass.FAILURE, CaseClass.SUSPECT):
        key = lambda r: (-(r.p_hat or 0.0), r.id)  # noqa: E731
    else:
        key = lambda r: (0.0, r.id)  # noqa: E731
    return sorted(chosen, key=key)[:n]


def invalid_cases(records: Iterable[CaseRecord]) -> list[CaseRecord]:
    """The cases validation removed (class ``invalid``, each with its ``reason``), by id."""
    return sorted((r for r in records if r.case_class is CaseClass.INVALID), key=lambda r: r.id)


def timeline(records: Iterable[CaseRecord]) -> list[TimePoint]:
    """Cumulative target calls and US dollars as cases finished, in time order."""
    points: list[TimePoint] = []
    calls, usd = 0, 0.0
    for r in sorted(records, key=lambda r: (r.finished_at, r.id)):
        calls += r.cost.calls
        usd += r.cost.usd or 0.0
        points.append(TimePoint(r.finished_at, calls, usd))
    return points


ERROR_CHARS = 100
"""Characters of one error message shown beside its count (its end, the ``(at agent.py:3 in run)``
location, is kept when the middle is cut)."""

CALL_FAILED = "call failed: "
"""How the answer distribution labels the failed samples of one error: ``call failed: <error>``."""

NO_ERROR = "(no error recorded)"
"""The error of a failed sample that recorded none (a call that returned no text)."""

_WORDING = ("the agent raised ",)  # the Python agent adapter's own words before the exception
_TAIL = re.compile(r"\s(\([^()]{1,60}\))$")  # "(at agent.py:3 in run)", "(gave up after 4 attempts)"


def error_text(error: str, chars: int = ERROR_CHARS) -> str:
    """One error message as reports show it: secrets masked, on one line, without the adapter's
    "the agent raised" wording, at most ``chars`` characters with its trailing location kept.

    >>> error_text("the agent raised RuntimeError: flaky backend (at agent.py:3 in run)")
    'RuntimeError: flaky backend (at agent.py:3 in run)'
    """
    text = " ".join(redact(error).split())
    for wording in _WORDING:
        text = text.removeprefix(wording)
    if len(text) <= chars:
        return text
    tail = _TAIL.search(text)
    if tail is None or len(tail.group(1)) > chars // 2:
        return text[: max(chars - 1, 0)] + "…"
    keep = chars - len(tail.group(1)) - 2
    return text[:keep] + "… " + tail.group(1)


def sample_errors(record: CaseRecord, chars: int = ERROR_CHARS) -> list[tuple[str, int]]:
    """The errors of a record's failed samples: (error, samples) pairs, most frequent first.

    Each distinct message (after :func:`error_text`, so secrets are masked and two messages
    that differ only where they are cut count as one) comes once with the number of samples
    that failed with it; ties in order of the text. Failed samples that recorded no error
    (``n_failed`` counts more than carry one) come last as :data:`NO_ERROR`.

    Args:
        record: a case record.
        chars: characters kept of each message.

    Returns:
        ``[("RuntimeError: flaky backend (at agent.py:3 in run)", 40)]``; empty when no sample failed.
    """
    counts = Counter(error_text(s.error, chars) for s in record.samples if s.error is not None)
    pairs = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    silent = record.n_failed - sum(counts.values())
    if silent > 0:
        pairs.append((NO_ERROR, silent))
    return pairs


def answer_distribution(record: CaseRecord) -> list[tuple[str, int]]:
    """(answer, votes) pairs, largest first, then the unparseable samples (``(no answer)``) and the
    failed ones, one pair per error (``call failed: RuntimeError: flaky backend (at agent.py:3 in
    run)``, :func:`sample_errors`).
    """
    pairs = [(c.answer, c.count) for c in record.clusters]
    if not pairs:  # records built without a Consistency: count exact answers
        counts: dict[str, int] = {}
        for s in record.samples:
            if s.answer is not None:
                counts[s.answer] = counts.get(s.answer, 0) + 1
        pairs = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if record.n_unparseable:
        pairs.append(("(no answer)", record.n_unparseable))
    pairs += [(CALL_FAILED + error, n) for error, n in sample_errors(record)]
    return pairs
