"""Where the ability ends: a run's boundaries in report.md, report.json, report.html and the console."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from frontier_qa.reports import ReportInput, build_json_report, html_report, markdown_report, write_json_report
from frontier_qa.reports import _boundaries as bd
from frontier_qa.reports._console import console_lines
from frontier_qa.reports._json_report import BoundaryReport, JsonReport
from frontier_qa.store._records import (
    BoundaryRecord,
    CaseClass,
    CaseRecord,
    CrossingRecord,
    LevelPoint,
    RunRecord,
    ShrunkFailure,
)
from tests.reports.test_reports import rec, run_record


def level(value: int, acc: float | None = None, low: float = 0.0, high: float = 1.0, p_hat: float = 0.9,
          instances: int = 4) -> LevelPoint:
    if acc is None:
        return LevelPoint(value=value, instances=instances)
    return LevelPoint(value=value, instances=instances, samples=instances * 5, correct=round(acc * instances * 5),
                      accuracy=acc, low=low, high=high, p_hat=p_hat)


MUL = BoundaryRecord(
    generator="arithmetic",
    description="multiply or add two integers",
    knob="digits",
    context={"op": "mul"},
    levels=[
        level(1, 1.0, 0.87, 1.0, 1.0),
        level(2),  # skipped by the search: a gap
        level(3, 0.95, 0.80, 0.99, 0.97),
        level(4, 0.62, 0.41, 0.80, 0.71),
        level(5, 0.50, 0.31, 0.69, 0.60),
        level(6, 0.20, 0.08, 0.38, 0.55),
        level(7, 0.05, 0.00, 0.17, 0.40),
        level(8, instances=0),
    ],
    crossings=[
        CrossingRecord(threshold=0.8, status="found", first_below=4, last_above=3, low=3, high=5,
                       text="P(correct) falls below 0.8 at digits=4 (≥ 0.8 up to digits=3); between digits=3 and "
                            "digits=5"),
        CrossingRecord(threshold=0.3, status="found", first_below=6, last_above=5, low=5, high=7,
                       text="P(correct) falls below 0.3 at digits=6 (≥ 0.3 up to digits=5); between digits=5 and "
                            "digits=7"),
    ],
    cases=["mul-d3", "mul-d4", "mul-d7"],
    shrunk=[
        ShrunkFailure(from_case="mul-d7", to_case="mul-d7:digits:5", from_knobs={"digits": 7, "op": "mul"},
                      knobs={"digits": 5, "op": "mul"}, steps=6, accepted=2),
        ShrunkFailure(from_case="mul-d4", to_case="mul-d4", from_knobs={"digits": 4, "op": "mul"},
                      knobs={"digits": 4, "op": "mul"}, steps=3, accepted=0),
    ],
    calls=240,
)

EVIL = "<b>desc</b>"

SORT = BoundaryRecord(
    generator="lists",
    description=f"sort a list {EVIL}",
    knob="length",
    context={"order": EVIL, "dupes": True},
    levels=[level(2, 1.0, 0.9, 1.0), level(4, 0.97, 0.85, 1.0), level(8), level(16, 0.9, 0.81, 0.98)],
    crossings=[
        CrossingRecord(threshold=0.8, status="not reached", last_above=16,
                       text="P(correct) ≥ 0.8 up to length=16, the hardest value searched"),
        CrossingRecord(threshold=0.3, status="not reached", last_above=16,
                       text="P(correct) ≥ 0.3 up to length=16, the hardest value searched"),
    ],
    calls=80,
)


@pytest.fixture
def cases() -> list[CaseRecord]:
    return [rec("mul-d4", CaseClass.FRONTIER, 0.6, answers=(("4", 6), ("5", 4))),
            rec("mul-d7", CaseClass.FAILURE, 1.0, answers=(("5", 10),), at=20)]


def with_boundaries(*boundaries: BoundaryRecord) -> RunRecord:
    return run_record().model_copy(update={"boundaries": list(boundaries)})


def section(text: str, title: str) -> str:
    """The Markdown section under ``## title``, up to the next ``## `` heading."""
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end + 1]


def test_input_gives_the_runs_boundaries(cases: list[CaseRecord]) -> None:
    assert ReportInput.of(cases, with_boundaries(MUL, SORT)).boundaries == (MUL, SORT)
    assert ReportInput.of(cases, run_record()).boundaries == ()
    assert ReportInput.of(cases).boundaries == ()


def test_cells() -> None:
    high, low = bd.high_low(MUL)
    assert (bd.reliable_up_to(high), bd.falls_below(high), bd.falls_below(low)) == ("3", "4 (3–5)", "6 (5–7)")
    tight = CrossingRecord(threshold=0.8, status="found", first_below=4, last_above=3, low=4, high=4)
    assert bd.falls_below(tight) == "4"
    open_ended = CrossingRecord(threshold=0.8, status="undecided", first_below=4, last_above=3, low=3)
    assert bd.falls_below(open_ended) == "4 (3–?), undecided"
    assert bd.falls_below(CrossingRecord(threshold=0.8, status="undecided")) == "undecided"
    easy = CrossingRecord(threshold=0.8, status="at the easy end", first_below=1, low=1, high=1)
    assert (bd.falls_below(easy), bd.reliable_up_to(easy)) == ("at the easy end", "nowhere")
    assert bd.curve_row(MUL.levels[3]) == ["4", "4", "20", "0.62 [0.41–0.80]", "0.71"]
    assert bd.curve_row(MUL.levels[1]) == ["2", "4", "–", "–", "–"]
    assert bd.curve_row(MUL.levels[7]) == ["8", "–", "–", "–", "–"]


def test_markdown_section(cases: list[CaseRecord]) -> None:
    text = markdown_report(cases, with_boundaries(MUL, SORT))
    part = section(text, "Where the ability ends")
    # right after the summary's headline, before the frontier map and the top cases
    assert text.index("- spent: ") < text.index("## Where the ability ends") < text.index("## Frontier map by topic")
    assert text.index("## Where the ability ends") < text.index("## Top frontier cases")
    lines = part.splitlines()
    assert "| axis | reliable (P ≥ 0.8) up to | falls below 0.8 at | falls below 0.3 at | calls |" in lines
    assert "| arithmetic · digits (op=mul) | 3 | 4 (3–5) | 6 (5–7) | 240 |" in lines
    assert ("| lists · length (order=&lt;b&gt;desc&lt;/b&gt;, dupes=True) | 16 (hardest searched) | not reached "
            "| not reached | 80 |") in lines
    assert "### arithmetic · digits (op=mul)" in lines
    assert "| digits | instances | samples | accuracy [90 % interval] | mean p̂ |" in lines
    assert "| 4 | 4 | 20 | 0.62 [0.41–0.80] | 0.71 |" in lines
    assert "| 2 | 4 | – | – | – |" in lines  # unmeasured
    assert "| 8 | 4 | – | – | – |" in section(text, "Where the ability ends")  # SORT's gap
    assert "- P(correct) falls below 0.8 at digits=4 (≥ 0.8 up to digits=3); between digits=3 and digits=5" in lines
    assert ("- failure at digits=7, op=mul (case `mul-d7`) shrunk to digits=5, op=mul (case `mul-d7:digits:5`, "
            "6 candidates probed, 2 still failing)") in lines
    assert "- failure at digits=4, op=mul (case `mul-d4`) already minimal (3 candidates probed)" in lines
    assert "- cases showing it: `mul-d3`, `mul-d4`, `mul-d7`" in lines
    assert "sort a list &lt;b&gt;desc&lt;/b&gt;" in lines and "<b>" not in text


def test_markdown_thresholds_come_from_the_records(cases: list[CaseRecord]) -> None:
    other = MUL.model_copy(update={"crossings": [c.model_copy(update={"threshold": t})
                                                 for c, t in zip(MUL.crossings, (0.9, 0.5), strict=True)]})
    lines = markdown_report(cases, with_boundaries(other)).splitlines()
    assert "| axis | reliable (P ≥ 0.9) up to | falls below 0.9 at | falls below 0.5 at | calls |" in lines
    mixed = markdown_report(cases, with_boundaries(other, SORT)).splitlines()
    assert ("| axis | reliable (P ≥ high threshold) up to | falls below high threshold at | "
            "falls below low threshold at | calls |") in mixed
    assert ("| arithmetic · digits (op=mul) | threshold 0.9: 3 | threshold 0.9: 4 (3–5) | threshold 0.5: 6 (5–7) "
            "| 240 |") in mixed


def test_json_boundaries_round_trip(tmp_path: Path, cases: list[CaseRecord]) -> None:
    path = write_json_report(tmp_path / "report.json", build_json_report(cases, with_boundaries(MUL, SORT)))
    data = json.loads(path.read_text())
    assert [b["axis"] for b in data["boundaries"]] == [MUL.axis, SORT.axis]
    assert data["boundaries"][1]["context"] == {"order": EVIL, "dupes": True}
    assert data["boundaries"][1]["levels"][2] == {"value": 8, "instances": 4, "samples": 0, "correct": 0,
                                                  "accuracy": None, "low": None, "high": None, "p_hat": None,
                                                  "unread": 0, "failed": 0}
    report = JsonReport.model_validate(data)
    assert [b.record() for b in report.boundaries] == [MUL, SORT]
    assert report.boundaries[1].context["dupes"] is True
    assert set(BoundaryReport.model_fields) == set(BoundaryRecord.model_fields) | {"axis"}  # field for field
    empty = json.loads(build_json_report(cases, run_record()).model_dump_json())
    assert empty["boundaries"] == []


def test_html_section(cases: list[CaseRecord]) -> None:
    page = html_report(cases, with_boundaries(MUL, SORT))
    start = page.index("<h2>Where the ability ends</h2>")
    assert page.index('<ul class="headline">') < start < page.index("<h2>Overview</h2>")
    blocks = page[start:page.index("<h2>Overview</h2>")].split('<div class="case boundary">')[1:]
    assert len(blocks) == 2
    for block, b in zip(blocks, (MUL, SORT), strict=True):
        assert block.count("<svg") == 1
        measured = sum(1 for level in b.levels if level.accuracy is not None)
        assert block.count('<circle class="acc"') == measured
        assert block.count('class="whisker"') == measured
        assert block.count('class="threshold"') == len(b.crossings)
        assert block.count('class="crossing"') == sum(1 for c in b.crossings if c.first_below is not None)
        assert block.count("<tr>") == len(b.levels) + 1  # the curve table
        assert 'class="phat"' in block and 'class="legend"' in block
    mul, sort = blocks
    assert "<td>4</td><td class=\"n\">4</td><td class=\"n\">20</td><td class=\"n\">0.62 [0.41–0.80]</td>" in mul
    assert "<li>P(correct) falls below 0.3 at digits=6 (≥ 0.3 up to digits=5); between digits=5 and digits=7</li>" \
        in mul
    assert "(case <code>mul-d7:digits:5</code>, 6 candidates probed" in mul
    assert "<b>desc</b>" not in page and "&lt;b&gt;desc&lt;/b&gt;" in sort
    assert "<h3>lists · length (order=&lt;b&gt;desc&lt;/b&gt;, dupes=True)</h3>" in sort
    assert "<td>16 (hardest searched)</td><td>not reached</td><td>not reached</td>" in page
    # the dots sit at the evenly spaced knob values: SORT's 8 (the third of four) has none
    xs = [float(x) for x in re.findall(r'<circle class="acc" cx="([\d.]+)"', sort)]
    assert len(xs) == 3 and xs[1] - xs[0] == pytest.approx((xs[2] - xs[1]) / 2, abs=0.2)


def test_console_lines(cases: list[CaseRecord]) -> None:
    lines = console_lines(ReportInput.of(cases, with_boundaries(MUL, SORT)), "frontier-qa probe: run run-1")
    found = [line for line in lines if line.startswith(("  boundary: ", "    shrunk: "))]
    assert found == [
        "  boundary: arithmetic · digits (op=mul): ≥0.8 up to 3; <0.8 at 4 (3–5); <0.3 at 6 (5–7)",
        "    shrunk: digits=7, op=mul → digits=5, op=mul (case mul-d7:digits:5, 6 candidates probed)",
        f"  boundary: lists · length (order={EVIL}, dupes=True): ≥0.8 up to 16 (hardest searched)",
    ]
    spent = next(i for i, line in enumerate(lines) if line.startswith("  spent: "))
    assert lines[spent + 1] == "  boundaries: 2 knob(s) searched: 4 crossings found, 0 undecided"  # in the headline
    assert lines[spent + 2] == found[0]  # then one line per knob


def test_console_line_other_states() -> None:
    low_open = MUL.model_copy(update={"crossings": [
        MUL.crossings[0], CrossingRecord(threshold=0.3, status="not reached", last_above=8)]})
    assert bd.console_line(low_open) == "arithmetic · digits (op=mul): ≥0.8 up to 3; <0.8 at 4 (3–5); <0.3 not reached"
    easy = MUL.model_copy(update={"crossings": [
        CrossingRecord(threshold=0.8, status="at the easy end", first_below=1, low=1, high=1),
        CrossingRecord(threshold=0.3, status="undecided")]})
    assert bd.console_line(easy) == "arithmetic · digits (op=mul): <0.8 already at 1 (easiest); <0.3 undecided"


def test_no_boundaries_no_section(cases: list[CaseRecord]) -> None:
    with_them, without = with_boundaries(MUL, SORT), run_record()
    text = markdown_report(cases, without)
    assert "Where the ability ends" not in text
    shown = markdown_report(cases, with_them)
    headline = "- boundaries: 2 knob(s) searched: 4 crossings found, 0 undecided\n"
    assert headline in shown  # the headline says it too, as every output's does
    assert shown.replace(section(shown, "Where the ability ends"), "").replace(headline, "") == text
    page = html_report(cases, without)
    assert "Where the ability ends" not in page and "boundary" not in page
    shown_page = html_report(cases, with_them)
    start, end = shown_page.index("<h2>Where the ability ends</h2>"), shown_page.index("<h2>Overview</h2>")
    shown_page = re.sub(r"<li><b>boundaries</b>[^<]*</li>", "", shown_page)
    start, end = shown_page.index("<h2>Where the ability ends</h2>"), shown_page.index("<h2>Overview</h2>")
    assert shown_page[:start] + shown_page[end:] == page
    lines = console_lines(ReportInput.of(cases, without), "title")
    assert not [line for line in lines if "boundary" in line or "shrunk" in line]
    shown_lines = console_lines(ReportInput.of(cases, with_them), "title")
    assert [line for line in shown_lines if not line.startswith(("  boundary: ", "    shrunk: ", "  boundaries: "))] == lines
