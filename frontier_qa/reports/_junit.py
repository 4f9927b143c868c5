"""``junit.xml``: one test case per probed case, for CI test-report views.

Layout follows what pytest's ``--junitxml`` writes and Jenkins, GitLab and GitHub
report actions read: ``<testsuites>`` → ``<testsuite>`` → ``<testcase classname=topic
name=case-id>``, with ``<properties>`` on the suite and on each case. Failures and replay
regressions become ``<failure>`` (a regression's text explains it: baseline against now), and so
does a wrong path (type ``wrong-path``: the samples agree on a path that misses the case's
expectations); frontier and suspect cases pass (with their p̂ as properties) unless configured to
fail, and so does path scatter (a ``path_finding`` property and a ``path:`` line in its output);
unresolved and invalid cases are ``<skipped>``. A run that could not judge the agent gets
one errored test case, ``frontier-qa / run health``, first. All text goes through
:func:`~frontier_qa.reports._text.clean` because XML 1.0 cannot hold most control characters.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from frontier_qa.reports._explain import explain
from frontier_qa.reports._gate import GateResult
from frontier_qa.reports._path_findings import case_line, case_misses, finding_word, path_text
from frontier_qa.reports._report_input import ReportInput
from frontier_qa.reports._summary import Summary, answer_distribution, sample_errors
from frontier_qa.reports._text import clean, fmt_p, shorten, write_text
from frontier_qa.store._comparison import Comparison, RegressionVerdict
from frontier_qa.store._records import CaseClass, CaseRecord, PathRecord, RunRecord

MAX_DETAIL_CHARS = 2000  # prompt characters shown in a failure's details


def _props(parent: ET.Element, items: Iterable[tuple[str, object]]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in items:
        if value is not None:
            ET.SubElement(props, "property", name=name, value=clean(value))


def _details(r: CaseRecord) -> str:
    lines = [f"case: {r.id}", f"topic: {r.topic}", f"class: {r.case_class.value}"]
    if r.reason:
        lines.append(f"reason: {r.reason}")
    lines.append(f"p_hat: {fmt_p(r.p_hat)} over k={r.k}")
    if r.interval is not None:
        lines.append(f"interval: [{r.interval.low:.3f}, {r.interval.high:.3f}]")
    if r.case.reference is not None:
        verified = "verified" if r.case.reference_verified else "unverified"
        lines.append(f"reference ({verified}): {r.case.reference}")
    lines.append(f"majority: {r.majority}")
    lines.append("answers:")
    lines += [f"  {count:>3} × {shorten(answer, 200)}" for answer, count in answer_distribution(r)]
    if r.path is not None or r.pass_k is not None:  # scatter is said here, as a frontier case is: the test passes
        lines.append(f"path: {finding_word(r.path)}: {case_line(r)}")
        if r.path is not None and r.path.reason:
            lines.append(f"path reason: {r.path.reason}")
    lines += ["prompt:", shorten(r.case.prompt, MAX_DETAIL_CHARS)]
    return clean("\n".join(lines))


def _message(r: CaseRecord) -> str:
    ref = r.case.reference
    if r.case_class is CaseClass.FAILURE:
        text = f"majority {r.majority!r} is wrong against the verified reference {ref!r} (p̂={fmt_p(r.p_hat)})"
    elif r.case_class is CaseClass.SUSPECT:
        text = f"majority {r.majority!r} disagrees with the unverified reference {ref!r} (p̂={fmt_p(r.p_hat)})"
    elif r.case_class is CaseClass.FRONTIER:
        text = f"frontier case: p̂={fmt_p(r.p_hat)}, the target is unsure"
    elif r.case_class is CaseClass.UNCHECKED:
        text = f"uncertain on an unchecked task: p̂={fmt_p(r.p_hat)}; the task may be ill-posed, not the agent unsure"
    elif r.case_class is CaseClass.UNRESOLVED:
        text = f"unresolved after k={r.k} samples: the sampling budget ran out"
        errors = sample_errors(r)
        if errors:  # often why: failed calls count in k but never vote
            text += f"; {sum(n for _, n in errors)} call(s) failed, most often with {errors[0][0]}"
    else:
        text = f"invalid case: {r.reason or 'failed validation'}"
    return clean(shorten(text, 500))


def _wrong_path(r: CaseRecord, path: PathRecord) -> str:
    """The failure message of a wrong path: the path the samples agree on and what it misses."""
    misses = case_misses(r)
    text = (f"wrong path: the samples agree on {path_text(path.majority)} (p̂={fmt_p(path.p_hat)}), which misses "
            f"the expectations" + (": " + ", ".join(misses) if misses else ""))
    return clean(shorten(text, 500))


def _path_props(r: CaseRecord) -> list[tuple[str, object]]:
    path, pass_k = r.path, r.pass_k
    items: list[tuple[str, object]] = []
    if path is not None:
        items += [("path_finding", path.finding or "stable"), ("path", path_text(path.majority)),
                  ("path_p_hat", f"{path.p_hat:.4f}")]
    if pass_k is not None:
        items += [("pass_k", pass_k.k), ("pass_hat_k", None if pass_k.value is None else f"{pass_k.value:.4f}"),
                  ("pass_k_passed", f"{pass_k.passed}/{pass_k.n}")]
    return items


def _suite_path_props(s: Summary) -> list[tuple[str, object]]:
    """The run's paths and pass^k as numbers (the headline words them): :class:`Summary`'s own."""
    items: list[tuple[str, object]] = []
    if s.paths:
        items += [("paths_analysed", s.paths)] + [(f"path_{f}", n) for f, n in s.path_findings.items()]
    p = s.pass_k
    if p is not None:
        items += [("pass_k", p.k), ("pass_hat_k", None if p.value is None else f"{p.value:.4f}"),
                  ("pass_1", None if p.pass_1 is None else f"{p.pass_1:.4f}"), ("pass_k_cases", p.cases),
                  ("pass_k_short", p.short)]
    return items


def junit_xml(
    records: ReportInput | Iterable[CaseRecord] | Summary,
    run: RunRecord | None = None,
    *,
    frontier_as_failure: bool = False,
    suspect_as_failure: bool = False,
    suite_name: str = "frontier-qa",
    comparisons: Sequence[Comparison] = (),
    gate: GateResult | None = None,
) -> str:
    """The JUnit XML document (a string starting with the XML declaration).

    Args:
        records: case records (latest per case), their summary, or the report input (which also
            gives the run, the headline numbers and the next steps as suite properties).
        run: the run, for suite properties and the timestamp.
        frontier_as_failure: report frontier cases as failing tests (type ``frontier``).
        suspect_as_failure: report suspect cases as failing tests (type ``suspect``).
        suite_name: the ``<testsuite>`` name.
        comparisons: replay verdicts; a regression fails its test case.
        gate: the gate's result; when the run could not judge the agent, an errored test case says why.

    Each knob a generators run searched is one more test case (classname ``boundary``): it fails
    when a crossing moved toward the easy end since the last search, else its claims are its output.
    """
    report = records if isinstance(records, ReportInput) else ReportInput.of(records, run)
    s, run = report.summary, report.run
    verdicts = {c.case_id: c for c in comparisons}
    failing = {CaseClass.FAILURE}
    failing |= {CaseClass.FRONTIER} if frontier_as_failure else set()
    failing |= {CaseClass.SUSPECT} if suspect_as_failure else set()
    skipping = {CaseClass.UNRESOLVED, CaseClass.INVALID}

    def regressed(r: CaseRecord) -> bool:
        return r.id in verdicts and verdicts[r.id].verdict is RegressionVerdict.REGRESSION

    def wrong_path(r: CaseRecord) -> bool:
        return r.path is not None and r.path.finding == "wrong"

    boundaries = list(report.boundaries)
    moved = {b.axis: [m for m in b.moved if m.direction == "easier"] for b in boundaries}
    n_fail = (sum(1 for r in s.records if r.case_class in failing or regressed(r) or wrong_path(r))
              + sum(1 for m in moved.values() if m))
    n_skip = sum(1 for r in s.records if r.case_class in skipping and not regressed(r) and not wrong_path(r))
    health = gate.health if gate is not None else ()
    seconds = [max((r.finished_at - r.started_at).total_seconds(), 0.0) for r in s.records]
    counts = {
        "tests": str(s.total + (1 if health else 0) + len(boundaries)),
        "failures": str(n_fail),
        "errors": str(1 if health else 0),
        "skipped": str(n_skip),
        "time": f"{sum(seconds):.3f}",
    }
    root = ET.Element("testsuites", {"name": clean(suite_name), **counts})
    suite = ET.SubElement(root, "testsuite", {"name": clean(suite_name), **counts})
    items: list[tuple[str, object]] = []
    if run is not None:
        suite.set("timestamp", run.started_at.strftime("%Y-%m-%dT%H:%M:%S"))
        items += [
            ("run_id", run.run_id),
            ("target", run.target_id),
            ("target_version", run.target_version),
            ("seed", run.seed),
            ("shard", f"{run.shard_index}/{run.shard_count}"),
            ("config_hash", run.config_hash or None),
        ]
    items += report.headline()  # the numbers every output shows, worded the same
    items += _suite_path_props(s)
    if s.frontier_precision is not None:  # the headline's "frontier precision" as a number
        items.append(("frontier_precision", f"{s.frontier_precision:.4f}"))
    items += [(f"next_step_{i}", step) for i, step in enumerate(report.next_steps, start=1)]
    _props(suite, items)
    if health:
        errored = ET.SubElement(suite, "testcase", classname="frontier-qa", name="run health", time="0.000")
        error = ET.SubElement(errored, "error", message=clean(shorten(health[0].message, 500)),
                              type="could-not-judge")
        problems = "\n".join(f"- {p.message}" for p in health)
        error.text = clean("the run could not judge the agent (exit 3):\n" + problems)
    for b in boundaries:  # one test per knob searched: it fails when a crossing moved toward the easy end
        case = ET.SubElement(suite, "testcase", classname="boundary", name=clean(b.axis), time="0.000")
        _props(case, [(f"below_{c.threshold:g}", c.first_below) for c in b.crossings] + [("calls", b.calls)])
        claims = "\n".join(c.text for c in b.crossings)
        if moved[b.axis]:
            failure = ET.SubElement(case, "failure", message=clean(shorten(moved[b.axis][0].text, 500)),
                                    type="boundary-regression")
            failure.text = clean("\n".join(m.text for m in moved[b.axis]) + "\n" + claims)
        else:
            ET.SubElement(case, "system-out").text = clean(claims)
    for r, secs in zip(s.records, seconds, strict=True):
        case = ET.SubElement(
            suite, "testcase", classname=clean(r.topic), name=clean(r.id), time=f"{secs:.3f}"
        )
        interval = None if r.interval is None else f"[{r.interval.low:.3f}, {r.interval.high:.3f}]"
        _props(
            case,
            [
                ("class", r.case_class.value),
                ("p_hat", None if r.p_hat is None else f"{r.p_hat:.4f}"),
                ("interval", interval),
                ("k", r.k),
                ("majority", r.majority),
                ("target", r.target_id),
                ("target_version", r.target_version),
                ("verdict", verdicts[r.id].verdict.value if r.id in verdicts else None),
                *_path_props(r),
            ],
        )
        if regressed(r):
            c = verdicts[r.id]
            failure = ET.SubElement(case, "failure", message=clean(shorten(f"regression: {c.reason}", 500)),
                                    type="regression")
            failure.text = clean("\n".join(explain(c, r)))
        elif r.case_class in failing:
            failure = ET.SubElement(case, "failure", message=_message(r), type=r.case_class.value)
            failure.text = _details(r)
        elif r.path is not None and wrong_path(r):  # the answer may be right: the way to it is not
            failure = ET.SubElement(case, "failure", message=_wrong_path(r, r.path), type="wrong-path")
            failure.text = _details(r)
        elif r.case_class in skipping:
            ET.SubElement(case, "skipped", message=_message(r), type=r.case_class.value)
        else:
            ET.SubElement(case, "system-out").text = _details(r)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(
    path: str | os.PathLike[str],
    records: ReportInput | Iterable[CaseRecord] | Summary,
    run: RunRecord | None = None,
    **options: Any,
) -> Path:
    """Write :func:`junit_xml` to ``path`` (UTF-8) and return the path; ``options`` as there."""
    return write_text(path, junit_xml(records, run, **options))
