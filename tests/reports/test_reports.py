"""Reports (JSON, JUnit XML, Markdown, HTML), the gate, and replay verdicts."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.reports import (
    GateThresholds,
    JsonReport,
    RegressionVerdict,
    RunFacts,
    compare,
    compare_all,
    count_verdicts,
    evaluate_gate,
    html_report,
    junit_xml,
    markdown_report,
    summarize,
    write_reports,
)
from frontier_qa.reports._summary import histogram_bin, timeline, top_cases
from frontier_qa.reports._svg import nice_ticks
from frontier_qa.reports._text import clean
from frontier_qa.store._comparison import Evidence
from frontier_qa.store._records import (
    Case,
    CaseClass,
    CaseRecord,
    RunRecord,
    SampleRecord,
    SuiteCase,
)
from tests.factories import T0, probed_record

EVIL = "<script>alert('x')</script> ]]> \x1b[31m\x00 a|b"


def rec(case_id: str, case_class: CaseClass, p_hat: float | None, *,
        answers: tuple[tuple[str, int], ...] = (("4", 6), ("5", 4)), usd: float | None = 0.01,
        **fields: Any) -> CaseRecord:
    """A probed record of target ``tgt`` with ``answers`` as (answer, samples) pairs, ``usd`` over
    the case, and p̂ as given (a report shows the p̂ it is handed); ``fields`` as
    :func:`tests.factories.probed_record` takes them.
    """
    votes = [a for a, n in answers for _ in range(n)]
    made = probed_record(case_id, case_class, votes, prompt=f"Question {case_id}?", target_id="tgt",
                         cost_usd=None if usd is None else usd / max(len(votes), 1), **fields)
    return made.model_copy(update={"p_hat": p_hat})


@pytest.fixture
def records() -> list[CaseRecord]:
    return [
        rec("f1", CaseClass.FRONTIER, 0.5, answers=(("4", 5), ("5", 5)), at=0),
        rec("f2", CaseClass.FRONTIER, 0.7, topic="geometry", answers=(("4", 7), ("6", 3)), at=10),
        rec("x1", CaseClass.FAILURE, 1.0, answers=(("5", 10),), at=20, usd=None),
        rec("x2", CaseClass.FAILURE, 0.9, topic="geometry", answers=((EVIL, 9), ("4", 1)), at=30),
        rec("p1", CaseClass.PASS, 1.0, answers=(("4", 10),), at=40),
        rec("s1", CaseClass.SUSPECT, 0.8, answers=(("7", 8), ("4", 2)), at=50),
        rec("u1", CaseClass.UNRESOLVED, 0.3, topic="geometry", at=60),
        rec("i1", CaseClass.INVALID, None, answers=(), at=70, usd=None),
    ]


def run_record() -> RunRecord:
    return RunRecord(
        run_id="run-1", seed=3, target_id="tgt", target_version="v1", started_at=T0, written_at=T0
    )


# --- summary ------------------------------------------------------------------------------


def test_summary_counts_histogram_and_cost(records: list[CaseRecord]) -> None:
    s = summarize(records + [rec("f1", CaseClass.PASS, 1.0, at=-100)])  # an older f1 record is ignored
    assert s.total == 8
    assert s.by_class == {
        CaseClass.FAILURE: 2,
        CaseClass.SUSPECT: 1,
        CaseClass.FRONTIER: 2,
        CaseClass.UNCHECKED: 0,
        CaseClass.UNRESOLVED: 1,
        CaseClass.PASS: 1,
        CaseClass.INVALID: 1,
    }
    assert s.frontier_share == pytest.approx(2 / 7)  # invalid cases do not count
    rows = {t.topic: t for t in s.by_topic}
    assert [t.topic for t in s.by_topic] == ["algebra", "geometry"]
    assert rows["algebra"].total == 5 and rows["algebra"].frontier_share == pytest.approx(1 / 4)
    assert rows["geometry"].counts[CaseClass.FAILURE] == 1 and rows[
        "geometry"
    ].frontier_share == pytest.approx(1 / 3)
    # p̂ 0.5→bin 5, 0.7→7, 1.0→9, 0.9→9, 1.0→9, 0.8→8, 0.3→3; invalid has none
    assert s.histogram.counts == (0, 0, 0, 1, 0, 1, 0, 1, 1, 3)
    assert s.histogram.by_class[CaseClass.FAILURE] == (0,) * 9 + (2,)
    assert s.cost.calls == 70 and s.cost.tokens == 70 * 30  # 30 tokens a sample; the invalid case drew none
    assert s.cost.usd == pytest.approx(0.06)


def test_histogram_bin_edges() -> None:
    assert [histogram_bin(m / 10, 10) for m in range(11)] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    assert histogram_bin(0.3, 10) == 3 and histogram_bin(0.7, 10) == 7 and histogram_bin(0.299, 10) == 2


def test_top_cases_and_timeline(records: list[CaseRecord]) -> None:
    assert [r.id for r in top_cases(records, CaseClass.FRONTIER)] == ["f1", "f2"]  # closest to 0.5 first
    assert [r.id for r in top_cases(records, CaseClass.FAILURE, 1)] == ["x1"]  # most stably wrong
    points = timeline(records)
    assert [p.calls for p in points] == [10, 20, 30, 40, 50, 60, 70, 70]
    assert points[-1].usd == pytest.approx(0.06)


# --- JSON -------------------------------------------------------------------------------------


def test_json_report(tmp_path: Path, records: list[CaseRecord]) -> None:
    paths, gate = write_reports(
        tmp_path, records, run_record(), formats=["json"], thresholds=GateThresholds()
    )
    data = json.loads(paths["json"].read_text())
    report = JsonReport.model_validate(data)
    assert data["schema_version"] == 2 and data["kind"] == "report"
    assert data["by_class"]["failure"] == 2 and data["total"] == 8
    assert data["p_hat_histogram"]["counts"] == [0, 0, 0, 1, 0, 1, 0, 1, 1, 3]
    assert {t["topic"]: t["total"] for t in data["by_topic"]} == {"algebra": 5, "geometry": 3}
    assert data["cost"]["calls"] == 70
    assert data["gate"]["passed"] is False and data["gate"]["reasons"] == [
        "2 failures (above the limit of 0)"
    ]
    assert gate is not None and not gate.passed
    x2 = next(c for c in report.cases if c.id == "x2")
    assert x2.answers[0].answer == EVIL and x2.answers[0].count == 9  # JSON keeps text exactly


# --- JUnit --------------------------------------------------------------------------------------


def _parse(xml: str) -> ET.Element:
    return ET.fromstring(xml.encode("utf-8"))


def test_junit_counts_and_properties(records: list[CaseRecord]) -> None:
    root = _parse(junit_xml(records, run_record()))
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == 8
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "8",
        "failures": "2",
        "errors": "0",
        "skipped": "2",
    }
    assert root.get("tests") == "8"
    assert sum(c.find("failure") is not None for c in cases) == 2
    assert sum(c.find("skipped") is not None for c in cases) == 2
    by_name = {c.get("name"): c for c in cases}
    f1 = by_name["f1"]
    assert f1.get("classname") == "algebra" and f1.find("failure") is None
    props = {p.get("name"): p.get("value") for p in f1.iter("property")}
    assert props["p_hat"] == "0.5000" and props["class"] == "frontier" and props["target"] == "tgt"
    assert by_name["x1"].find("failure").get("type") == "failure"
    assert "reference '4'" in by_name["x1"].find("failure").get("message")
    assert by_name["i1"].find("skipped").get("type") == "invalid"
    run_props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert run_props["run_id"] == "run-1" and run_props["shard"] == "1/1"
    assert suite.get("timestamp") == "2025-03-01T12:00:00"


def test_junit_frontier_as_failure(records: list[CaseRecord]) -> None:
    suite = _parse(junit_xml(records, frontier_as_failure=True, suspect_as_failure=True)).find("testsuite")
    assert suite.get("failures") == "5"
    types = sorted(f.get("type") for f in suite.iter("failure"))
    assert types == ["failure", "failure", "frontier", "frontier", "suspect"]


def test_junit_escapes_markup_and_control_characters(records: list[CaseRecord]) -> None:
    evil_topic = rec("evil\x01id<&>", CaseClass.FAILURE, 1.0, topic='t"\x1f<', answers=((EVIL, 10),))
    xml = junit_xml(records + [evil_topic])
    root = _parse(xml)  # a control character or a stray ]]> would make this raise
    assert "<script>" not in xml and "\x1b" not in xml and "\x00" not in xml
    names = [c.get("name") for c in root.iter("testcase")]
    assert "evil\\x01id<&>" in names
    x2 = next(c for c in root.iter("testcase") if c.get("name") == "x2")
    details = x2.find("failure").text
    assert "<script>alert('x')</script> ]]> \\x1b[31m\\x00 a|b" in details  # visible, not executable


def test_clean_keeps_allowed_characters() -> None:
    assert clean("tab\tnl\ncr\r é 数 😀") == "tab\tnl\ncr\r é 数 😀"
    assert clean("\x00\x08\x0b\x7f\ud800\ufffe") == "\\x00\\x08\\x0b\x7f\\ud800\\ufffe"


# --- Markdown ------------------------------------------------------------------------------------


def test_markdown_report(records: list[CaseRecord]) -> None:
    gate = evaluate_gate(records, GateThresholds(max_failures=5))
    text = markdown_report(records, run_record(), gate=gate)
    assert "**Gate: PASSED**" in text
    assert "| failure | 2 | 25% |" in text and "| **total** | 8 |  |" in text
    assert "| algebra | 1 | 1 | 1 | 0 | 0 | 1 | 1 | 5 | 25% |" in text
    assert "| geometry | 1 | 0 | 1 | 0 | 1 | 0 | 0 | 3 | 33% |" in text
    assert "Frontier share of valid cases: 29% (2/7)" in text
    assert text.index("## Top frontier cases") < text.index("#### f1") < text.index("#### f2")
    assert "| 4 **(majority)** | 5 | 50% |" in text
    assert "<script>" not in text and "\x1b" not in text
    assert "&lt;script&gt;" in text
    # the evil answer's pipe is escaped: its table row still has exactly 4 cell borders
    row = next(line for line in text.splitlines() if "&lt;script&gt;" in line and line.startswith("|"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 4


def test_removed_cases_are_named_with_the_reason_in_markdown_json_and_html(tmp_path: Path,
                                                                      records: list[CaseRecord]) -> None:
    from frontier_qa.probing._curriculum_seam import Proposal
    from frontier_qa.probing._validation import Validator
    from frontier_qa.target import Case

    moon, pi_day = "What day of the week was 20 July 1969?", "What day of the week was 14 March 1879?"
    generated = [Proposal(Case(id="g-moon", prompt=moon)), Proposal(Case(id="g-pi", prompt=pi_day))]
    written = [Proposal(Case(id=i, prompt=p), written=True) for i, p in (("moon", moon), ("pi", pi_day), ("moon-2", moon))]
    reasons = {r.proposal.case.id: r.reason for r in Validator().check(generated)}
    reasons |= {r.proposal.case.id: r.reason for r in Validator().check(written)}
    assert reasons["g-moon"] is None and reasons["moon"] is None and reasons["pi"] is None  # the person's cases stay
    def invalid(case_id: str, prompt: str) -> CaseRecord:
        r = rec(case_id, CaseClass.INVALID, None, answers=())
        return r.model_copy(update={"reason": reasons[case_id], "case": replace(r.case, prompt=prompt)})

    removed = [invalid("g-pi", pi_day), invalid("moon-2", moon)]
    text = markdown_report([*records, *removed], run_record(), top_removed=2)
    section = text[text.index("## Removed / invalid cases (3)"):]
    assert section.splitlines()[4:8] == [
        "| case | prompt | reason |", "|---|---|---|",
        f"| g-pi | {pi_day} | near-duplicate of this batch (BLEU distance 0.41 &lt; 0.5): {moon} |",
        "| i1 | Question i1? | failed validation |"]
    assert "*1 more invalid cases: see report.json*" in section  # moon-2, cut at top_removed
    assert "## Removed" not in markdown_report(records[:-1])  # nothing removed, no section
    data = json.loads(write_reports(tmp_path, [*records, *removed], formats=["json"])[0]["json"].read_text())
    assert {c["id"]: c["reason"] for c in data["cases"] if c["case_class"] == "invalid"} == {
        "g-pi": f"near-duplicate of this batch (BLEU distance 0.41 < 0.5): {moon}",
        "moon-2": f"identical to a prompt of this batch: {moon}", "i1": None}
    JsonReport.model_validate(data)
    page = html_report([*records, *removed], run_record(), max_cases=2)
    section = page[page.index("<h2>Removed / invalid cases (3)</h2>"):page.index("<h2>All cases</h2>")]
    assert re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", section) == [
        ("g-pi", pi_day, f"near-duplicate of this batch (BLEU distance 0.41 &lt; 0.5): {moon}"),
        ("i1", "Question i1?", "failed validation")]
    assert "<p>1 more in report.json.</p>" in section
    assert "Removed / invalid" not in html_report(records[:-1])


# --- HTML --------------------------------------------------------------------------------------------


def test_html_report_is_self_contained_and_escaped(records: list[CaseRecord]) -> None:
    gate = evaluate_gate(records, GateThresholds())
    page = html_report(
        records,
        run_record(),
        gate=gate,
        band=(0.3, 0.8),
        comparisons=compare_all([rec("p1", CaseClass.FAILURE, 1.0)], records),
    )
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page.lower()  # neither ours nor the model's
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; ]]&gt; \\x1b[31m\\x00 a|b" in page
    assert not re.search(r"""(src|href)\s*=|<link|@import|url\(""", page)  # nothing fetched
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert len(svgs) == 4  # histogram, frontier map, calls over time, cost over time
    for svg in svgs:
        ET.fromstring(svg)  # each chart is well-formed XML
    hist = ET.fromstring(svgs[0])
    ns = "{http://www.w3.org/2000/svg}"
    bars = [r for r in hist.iter(f"{ns}rect") if "p̂" in (r.findtext(f"{ns}title") or "")]
    assert len(bars) == 6  # one rect per non-empty (bin, class): 3,5,7,8 and 9 split pass/failure
    assert "frontier band" in svgs[0]
    assert "Gate failed" in page and "flaky" in page
    assert page.count("<details>") >= 8


def test_html_without_cost_has_no_cost_chart() -> None:
    page = html_report([rec("a", CaseClass.PASS, 1.0, usd=None)])
    assert len(re.findall(r"<svg", page)) == 3 and "Cost over time" not in page


def test_nice_ticks() -> None:
    assert nice_ticks(10) == [0, 2, 4, 6, 8, 10]
    assert nice_ticks(7) == [0, 2, 4, 6, 8]
    assert nice_ticks(0.06) == pytest.approx([0, 0.02, 0.04, 0.06])
    assert nice_ticks(0) == [0.0, 1.0]


def test_write_reports_writes_every_format(tmp_path: Path, records: list[CaseRecord]) -> None:
    paths, gate = write_reports(tmp_path / "out", records, run_record())
    assert gate is None
    assert sorted(p.name for p in paths.values()) == ["junit.xml", "report.html", "report.json", "report.md"]
    assert all(p.stat().st_size > 500 for p in paths.values())
    with pytest.raises(ConfigError, match="pdf"):
        write_reports(tmp_path, records, formats=["pdf"])


# --- gate ------------------------------------------------------------------------------------------------


def test_gate_pass_and_fail_with_reasons(records: list[CaseRecord]) -> None:
    ok = evaluate_gate(records, GateThresholds(max_failures=2, max_frontier_share=0.3, max_regressions=None))
    assert ok.passed and ok.reasons == () and ok.exit_code == 0
    assert [c.name for c in ok.checks] == ["failures", "frontier_share"]
    bad = evaluate_gate(
        records,
        GateThresholds(max_failures=1, max_suspects=0, max_frontier_share=0.25, max_unresolved_share=0.5),
        comparisons=[compare(by_answers((("4", 20),)), by_answers((("5", 10),), cls="failure"))],
    )
    assert not bad.passed and bad.exit_code == 1
    assert bad.reasons == (
        "2 failures (above the limit of 1)",
        "1 suspect case (above the limit of 0)",
        "frontier share 28.6% (2/7) is above the limit of 25.0%",
        "1 replay regression (above the limit of 0)",
    )


def test_a_run_that_could_not_judge_exits_3_whatever_the_checks(records: list[CaseRecord]) -> None:
    unresolved = [rec(f"u{i}", CaseClass.UNRESOLVED, 0.3) for i in range(3)] + records[:4]
    gate = evaluate_gate(unresolved, GateThresholds(max_failures=None))
    assert gate.exit_code == 3 and not gate.passed and not gate.judged
    assert [p.code for p in gate.health] == ["unresolved-share"]
    assert gate.reasons[0] == ("3 of 7 cases (43%) stayed unresolved, above the limit of 20%: raise the budget or "
                               "k, or resume the run (gate.max_unresolved_share sets the limit)")
    assert evaluate_gate(unresolved, GateThresholds(max_failures=None, max_unresolved_share=0.5)).exit_code == 0
    # with the limit off a partly decided run passes, but one that decided no case judged nothing
    assert evaluate_gate(unresolved, GateThresholds(max_failures=None, max_unresolved_share=None)).exit_code == 0
    undecided = evaluate_gate(unresolved[:3], GateThresholds(max_unresolved_share=None))
    assert undecided.exit_code == 3 and [p.code for p in undecided.health] == ["nothing-judged"]
    assert undecided.reasons[0].startswith("all 3 cases stayed unresolved: no case was decided")
    facts = RunFacts(mode="probe", stop_reason="target unavailable", target="hf:smollm2", stop_source="curriculum",
                     stop_detail="target 'hf:smollm2' failed 25 calls in a row; last error: transient: no answer "
                                 "within Limits.timeout_s = 120.0 s", candidates=0)
    down = evaluate_gate([], GateThresholds(), facts=facts)
    assert [p.code for p in down.health] == ["target-unavailable", "curriculum-empty"] and down.exit_code == 3
    assert down.health[0].message.endswith(
        "The calls timed out; a local model on a CPU can need minutes per call: raise "
        "curriculum.model.limits.timeout_s (now 120 s), e.g. --set curriculum.model.limits.timeout_s=240.")
    failed = [rec("e", CaseClass.UNRESOLVED, None, answers=())]
    failed[0] = failed[0].model_copy(update={"samples": [SampleRecord(sample_index=0, error="fatal: refused")]})
    assert [p.code for p in evaluate_gate(failed, GateThresholds()).health] == ["every-call-failed", "unresolved-share"]
    slow = rec("i", CaseClass.INVALID, None, answers=()).model_copy(update={"reason": (
        "the curriculum model returned no text: transient: no answer within Limits.timeout_s = 120.0 s")})
    [invalid] = evaluate_gate([slow], GateThresholds(), facts=RunFacts(mode="probe", target="python:agent.py")).health
    assert invalid.code == "no-valid-case" and invalid.message.endswith(
        "the first: the curriculum model returned no text: transient: no answer within Limits.timeout_s = 120.0 s. "
        "The calls timed out; a local model on a CPU can need minutes per call: raise "
        "curriculum.model.limits.timeout_s (now 120 s), e.g. --set curriculum.model.limits.timeout_s=240.")
    nothing = evaluate_gate([], GateThresholds(), facts=RunFacts(mode="replay", planned=0))
    assert [p.code for p in nothing.health] == ["nothing-to-replay"]


def test_gate_thresholds_are_validated() -> None:
    with pytest.raises(ConfigError, match="max_failures"):
        GateThresholds(max_failures=-1)
    with pytest.raises(ConfigError, match="max_frontier_share"):
        GateThresholds(max_frontier_share=1.5)


# --- replay verdicts ----------------------------------------------------------------------------------------


def by_answers(answers: tuple[tuple[str, int], ...], *, cls: str = "pass", reference: str | None = "4",
               version: str = "v1") -> CaseRecord:
    k = sum(n for _, n in answers)
    return rec("c", CaseClass(cls), answers[0][1] / k if k else None, answers=answers, reference=reference,
               version=version)


SCATTERED = tuple((a, 2) for a in "ABCDEFGH")


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        # a verified reference "4": the share of right answers is compared
        (by_answers((("4", 20),)), by_answers((("5", 10),), cls="failure"), RegressionVerdict.REGRESSION),
        (by_answers((("4", 20),)), by_answers((("4", 10),)), RegressionVerdict.SAME),
        # p̂ falling from 0.70 to 0.43 at k = 10 and 7 is noise, not a regression
        (by_answers((("4", 7), ("5", 3)), cls="frontier"), by_answers((("5", 4), ("4", 3)), cls="frontier"),
         RegressionVerdict.INCONCLUSIVE),
        # a failure the same agent no longer makes did not reproduce; a new version improved
        (by_answers((("5", 10),), cls="failure"), by_answers((("4", 10),)), RegressionVerdict.FLAKY),
        (by_answers((("5", 10),), cls="failure"), by_answers((("4", 10),), version="v2"), RegressionVerdict.IMPROVED),
        # no reference: held to the baseline's majority
        (by_answers((("A", 20),), reference=None), by_answers((("B", 20),), reference=None), RegressionVerdict.REGRESSION),
        (by_answers((("A", 6), ("B", 4)), cls="frontier", reference=None),
         by_answers((("B", 6), ("A", 4)), cls="frontier", reference=None), RegressionVerdict.SAME),  # still in the band
        (by_answers((("A", 12), ("B", 8)), cls="frontier", reference=None),
         by_answers((("C", 20),), reference=None), RegressionVerdict.REGRESSION),  # stably an answer it never gave
        (by_answers((("A", 12), ("B", 8)), cls="frontier", reference=None, version="v2"),
         by_answers((("B", 20),), reference=None), RegressionVerdict.IMPROVED),  # settled on one of its answers
        # scattered answers without a reference hold the agent to nothing
        (by_answers(SCATTERED, cls="suspect", reference=None),
         by_answers((("Z", 1), ("Y", 1)), cls="suspect", reference=None), RegressionVerdict.SAME),
        (by_answers((("4", 10),)), rec("c", CaseClass.UNRESOLVED, None, answers=()), RegressionVerdict.INCONCLUSIVE),
        (rec("c", CaseClass.INVALID, None, answers=()), by_answers((("4", 10),)), RegressionVerdict.INCONCLUSIVE),
    ],
)
def test_compare_verdicts(old: CaseRecord, new: CaseRecord, verdict: RegressionVerdict) -> None:
    result = compare(old, new)
    assert result.verdict is verdict, result.reason
    assert result.case_id == "c" and result.old_class is old.case_class


def test_compare_reasons_and_suites() -> None:
    old = by_answers((("4", 19), ("5", 1)))
    new = by_answers((("5", 8), ("4", 2)), cls="failure")
    result = compare(old, new)
    assert result.reason.startswith("right answers (verified reference '4'): 19/20 in the baseline, 2/10 now "
                                    "(one-sided Fisher p = ")
    assert (result.old, result.new) == (Evidence(19, 20), Evidence(2, 10))
    assert result.p_value is not None and result.level is not None and result.p_value <= result.level
    # a version-1 suite entry has only 'observed': its majority count stands in for the answers
    entry = SuiteCase(case=old.case, observed=old.observed())
    assert compare(entry, new).verdict is RegressionVerdict.REGRESSION
    bare = SuiteCase(case=Case(id="d", prompt="p"))  # exported without results: skipped
    comparisons = compare_all(
        [entry, bare, rec("gone", CaseClass.PASS, 1.0)],
        [new, rec("d", CaseClass.PASS, 1.0), rec("fresh", CaseClass.FAILURE, 1.0)],
    )
    assert [(c.case_id, c.verdict) for c in comparisons] == [("c", RegressionVerdict.REGRESSION)]
    assert count_verdicts(comparisons)[RegressionVerdict.REGRESSION] == 1 and count_verdicts([])[RegressionVerdict.SAME] == 0
