"""ReportInput: one run's material built once and handed to every report builder."""

from __future__ import annotations

import pytest

from frontier_qa.reports import (
    GateThresholds,
    RegressionVerdict,
    ReportInput,
    build_json_report,
    compare_all,
    evaluate_gate,
    html_report,
    markdown_report,
    summarize,
)
from frontier_qa.store._records import CaseClass, CaseRecord
from tests.reports.test_reports import rec, run_record


@pytest.fixture
def cases() -> list[CaseRecord]:
    return [
        rec("f1", CaseClass.FRONTIER, 0.5, answers=(("4", 5), ("5", 5))),
        rec("x1", CaseClass.FAILURE, 1.0, answers=(("5", 10),), at=20),
        rec("p1", CaseClass.PASS, 1.0, answers=(("4", 10),), at=40),
    ]


def test_one_input_gives_each_builder_what_the_keywords_give(cases: list[CaseRecord]) -> None:
    old = [rec("p1", CaseClass.PASS, 1.0, answers=(("4", 10),)), rec("x1", CaseClass.PASS, 1.0, answers=(("4", 10),))]
    comparisons = compare_all(old, cases)
    history = {r.id: [o for o in old if o.id == r.id] + [r] for r in cases}
    gate = evaluate_gate(summarize(cases), GateThresholds(max_failures=0), comparisons)
    keywords = {"gate": gate, "comparisons": comparisons, "history": history}
    given = ReportInput.of(cases, run_record(), **keywords)
    assert markdown_report(given, top=1) == markdown_report(cases, run_record(), top=1, **keywords)
    assert html_report(given, band=(0.2, 0.8)) == html_report(cases, run_record(), band=(0.2, 0.8), **keywords)
    at = run_record().started_at
    assert build_json_report(given, generated_at=at) == build_json_report(cases, run_record(), generated_at=at,
                                                                         **keywords)
    assert "Regressions (1)" in markdown_report(given)  # x1 went from pass to failure: the parts arrived


def test_an_input_is_taken_as_it_is_and_nothing_is_silently_dropped(cases: list[CaseRecord]) -> None:
    given = ReportInput.of(cases)
    assert ReportInput.of(given) is given
    assert ReportInput.of(summarize(cases)).summary.total == 3 and given.history == {} and given.gate is None
    with pytest.raises(TypeError, match="not beside it"):
        markdown_report(given, run_record())
    with pytest.raises(TypeError, match="not beside it"):
        build_json_report(given, comparisons=())
    with pytest.raises(TypeError, match="unexpected keyword argument 'histroy'"):
        html_report(cases, histroy={})  # type: ignore[call-arg]


def test_verdict_counts_sections_and_header(cases: list[CaseRecord]) -> None:
    old = [rec("p1", CaseClass.PASS, 1.0, answers=(("4", 10),)), rec("x1", CaseClass.PASS, 1.0, answers=(("4", 10),))]
    given = ReportInput.of(cases, run_record(), comparisons=compare_all(old, cases))
    assert given.verdicts()[RegressionVerdict.REGRESSION] == 1 and sum(given.verdicts().values()) == 2
    assert sum(given.verdicts("guard").values()) + sum(given.verdicts("finding").values()) == 2
    assert [(c, [r.id for r in chosen]) for c, _, chosen in given.top_sections(5)] == [
        (CaseClass.FRONTIER, ["f1"]), (CaseClass.FAILURE, ["x1"])]  # no suspect case: no section
    started = f"started {run_record().started_at:%Y-%m-%d %H:%M} UTC"
    assert given.run_header(str) == ["version v1", "run run-1", started, "seed 3"]
    assert given.run_header(lambda t: f"`{t}`", seed=False)[:2] == ["version `v1`", "run `run-1`"]
    assert ReportInput.of(cases).run_header(str) == []
