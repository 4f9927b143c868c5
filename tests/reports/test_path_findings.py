"""Path findings and pass^k in every sink (issue 32): console, report.json/.md/.html, junit.xml and the
pytest summary show the numbers :class:`~frontier_qa.reports._summary.Summary` counted, worded once.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from frontier_qa.reports import GateThresholds, build_json_report, html_report, junit_xml, markdown_report, summarize
from frontier_qa.reports._console import console_lines
from frontier_qa.reports._json_report import JsonReport, write_json_report
from frontier_qa.reports._path_findings import clusters_text, pass_k_line, paths_line
from frontier_qa.reports._report_input import ReportInput
from frontier_qa.reports._summary import Summary
from frontier_qa.session._outcome import judge
from frontier_qa.store._records import CaseRecord, PassK, PathCluster, PathRecord
from tests.factories import probed_record
from tests.reports.path_records import FORBID, SECRET, path_records


@pytest.fixture
def records() -> list[CaseRecord]:
    return path_records()


@pytest.fixture
def summary(records: list[CaseRecord]) -> Summary:
    return summarize(records)


def test_the_summary_counts_what_the_sinks_show(summary: Summary) -> None:
    # the fixture's own numbers, by hand: 3 analysed, one scatter, one wrong; pass^8 (0 + 0 + 1) / 3
    assert (summary.paths, summary.path_findings) == (3, {"scatter": 1, "wrong": 1, "undecided": 0})
    assert summary.pass_k is not None and summary.pass_k.value == pytest.approx(1 / 3)
    assert summary.pass_k.pass_1 == pytest.approx((5 / 8 + 0 + 1) / 3)
    assert {t.topic: t.path_findings["wrong"] + t.path_findings["scatter"] for t in summary.by_topic} == \
        {"geo": 2, "units": 0}


def test_the_lines_word_the_summary_s_numbers(summary: Summary) -> None:
    p = summary.pass_k
    assert p is not None and p.value is not None and p.pass_1 is not None
    assert paths_line(summary) == "3 cases analysed — 1 scatter, 1 wrong path, 0 undecided"
    assert pass_k_line(summary) == f"pass^8 = {p.value:.2f} over 3 cases (pass^1 {p.pass_1:.2f})" \
        == "pass^8 = 0.33 over 3 cases (pass^1 0.54)"


def test_nothing_is_said_when_no_path_was_analysed() -> None:
    plain = summarize([probed_record("a"), probed_record("b")])
    assert paths_line(plain) is None and pass_k_line(plain) is None
    lines = console_lines(ReportInput.of(plain), "title")
    assert not any("paths:" in line or "pass^" in line for line in lines)
    assert "path findings" not in markdown_report(plain) and "Path findings" not in html_report(plain)
    assert "path_finding" not in junit_xml(plain)


def test_a_case_sampled_below_k_has_no_value_and_is_said_apart() -> None:
    short = probed_record("s").model_copy(update={"pass_k": PassK(k=8, n=4, passed=4, value=None)})
    s = summarize([short])
    assert pass_k_line(s) == "pass^8: no case sampled 8 times; 1 case stopped below 8 samples (no value)"


def test_console_names_the_cases_wrong_paths_first(records: list[CaseRecord], summary: Summary) -> None:
    lines = console_lines(ReportInput.of(summary), "title")
    assert f"  paths: {paths_line(summary)}" in lines and f"  pass^k: {pass_k_line(summary)}" in lines
    named = [line for line in lines if line.startswith(("  wrong path:", "  scatter:"))]
    assert named[0].startswith("  wrong path: geo-wrong: ") and named[1].startswith(
        "  scatter: geo-scatter: capital_of 5/8 · lookup_city 3/8; ")
    assert f"{FORBID} (8 of 8)" in named[0] and "pass^8 = 0.00 (0 of 8 samples passed)" in named[0]
    assert not any(SECRET in line for line in lines)


def test_the_pytest_summary_and_the_cli_print_the_same_lines(records: list[CaseRecord], summary: Summary) -> None:
    # the plugin's terminal summary and `frontier-qa probe` both print Outcome.lines()
    outcome = judge("probe", records, GateThresholds())
    lines = outcome.lines()
    assert f"  paths: {paths_line(summary)}" in lines and f"  pass^k: {pass_k_line(summary)}" in lines


def test_report_json_carries_the_summary_and_each_case(records: list[CaseRecord], summary: Summary,
                                                       tmp_path: Path) -> None:
    path = write_json_report(tmp_path / "report.json", build_json_report(summary))
    data = json.loads(path.read_text(encoding="utf-8"))
    assert SECRET not in path.read_text(encoding="utf-8")
    assert data["paths"] == summary.paths and data["path_findings"] == summary.path_findings
    assert summary.pass_k is not None
    assert data["pass_k"] == {"k": 8, "cases": 3, "value": summary.pass_k.value, "pass_1": summary.pass_k.pass_1,
                              "short": 0}
    assert {t["topic"]: t["path_findings"] for t in data["by_topic"]} == \
        {t.topic: t.path_findings for t in summary.by_topic}
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["geo-scatter"]["path"]["finding"] == "scatter"
    assert cases["geo-scatter"]["path"]["clusters"] == [{"path": "capital_of", "count": 5},
                                                         {"path": "lookup_city", "count": 3}]
    assert cases["geo-scatter"]["pass_k"] == {"k": 8, "n": 8, "passed": 5, "value": 0.0,
                                              "misses": [f"{FORBID} (3 of 8)"]}
    assert cases["plain"]["path"] is None and cases["plain"]["pass_k"] is None
    assert f"pass^k: {pass_k_line(summary)}" in data["headline"]
    assert JsonReport.model_validate(data).paths == 3  # the schema reads its own file back


def test_report_md_lists_the_findings_and_a_column_by_topic(summary: Summary) -> None:
    text = markdown_report(summary)
    assert "| topic | failure |" in text and "| frontier share | path findings |" in text
    assert "| geo | 0 | 0 | 0 | 0 | 0 | 2 | 0 | 2 | 0% | 1 wrong path, 1 scatter |" in text
    section = text[text.index("## Path findings (2)"):]
    assert section.index("`geo-wrong`") < section.index("`geo-scatter`")
    assert "| `geo-scatter` | **scatter** | capital\\_of 5/8 · lookup\\_city 3/8 |" in section
    assert "pass^8 = 0.00 (5 of 8 samples passed)" in section
    assert f"- paths: {paths_line(summary)}" in text
    assert SECRET not in text


def test_report_html_escapes_and_masks_paths(records: list[CaseRecord]) -> None:
    evil = records[0].model_copy(update={"path": PathRecord(
        granularity="tools", p_hat=0.5, majority="<script>x</script>", finding="scatter", reason="<b>why</b>",
        clusters=[PathCluster(path="<script>x</script>", count=4), PathCluster(path=f"k={SECRET}", count=4)])})
    page = html_report([evil, *records[1:]])
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt; 4/8" in page and SECRET not in page
    assert "<h2>Path findings (2)</h2>" in page and "<th>path findings</th>" in page
    assert "<td>1 wrong path, 1 scatter</td>" in page
    assert "<th>path · misses</th>" in page and f"lookup_city(key=&quot;***&quot;) — {FORBID}" in page


def test_junit_fails_a_wrong_path_and_says_scatter(records: list[CaseRecord], summary: Summary) -> None:
    root = ET.fromstring(junit_xml(summary))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    props = {p.get("name"): p.get("value") for p in suite.iter("property") if p in list(suite.find("properties"))}
    assert summary.pass_k is not None and summary.pass_k.value is not None
    assert props["pass_hat_k"] == f"{summary.pass_k.value:.4f}" and props["pass_k"] == "8"
    assert props["path_wrong"] == str(summary.path_findings["wrong"]) and props["paths_analysed"] == "3"
    assert props["pass^k"] == pass_k_line(summary)
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    failure = cases["geo-wrong"].find("failure")
    assert failure is not None and failure.get("type") == "wrong-path"
    assert 'lookup_city(key="***")' in (failure.get("message") or "") and FORBID in (failure.get("message") or "")
    scatter = cases["geo-scatter"]
    assert scatter.find("failure") is None
    assert {p.get("name"): p.get("value") for p in scatter.iter("property")}["path_finding"] == "scatter"
    out = scatter.find("system-out")
    assert out is not None and f"path: scatter: {clusters_text(records[0].path)}" in (out.text or "")  # type: ignore[arg-type]
    assert SECRET not in junit_xml(summary)
