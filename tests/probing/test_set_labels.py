"""Set-level labels: the ledger's exact thresholds and charges, and the run that labels by it."""

from __future__ import annotations

import asyncio
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from frontier_qa.config import Override, build_settings, load_config, parse_set
from frontier_qa.errors import ConfigError
from frontier_qa.probing import ProbeResult, ProbeSettings, probe
from frontier_qa.probing._sequential import SequentialConfig, decide
from frontier_qa.probing._set_labels import Labelling, Ledger
from frontier_qa.reports import build_json_report, junit_xml, markdown_report
from frontier_qa.reports._report_input import ReportInput
from frontier_qa.reports._summary import precision_line, summarize
from frontier_qa.runtime._limits import Budget
from frontier_qa.store import CaseStore
from frontier_qa.store._records import CaseClass
from frontier_qa.target import Case
from frontier_qa.testing import ScriptedAdapter, case, open_scripted, static_curriculum


def test_case_mode_asks_the_policys_confidence() -> None:
    ledger = Ledger(Labelling(mode="case"))
    assert ledger.threshold(0.9) == 0.9
    assert not ledger.admit(0.89, 0.9)
    assert ledger.admit(0.9, 0.9)


def test_set_mode_lets_sure_labels_pay_for_a_less_sure_one() -> None:
    ledger = Ledger(Labelling(mode="set", alpha=0.1, floor=0.6))
    assert ledger.threshold(0.9) == pytest.approx(0.9)  # the first label: 1 - alpha
    assert ledger.admit(0.99, 0.9) and ledger.admit(0.99, 0.9)
    # room = 0.1 * 3 - 0.02 = 0.28: a label at 0.72 keeps the set's expected error at 0.1
    assert ledger.threshold(0.9) == pytest.approx(0.72)
    assert not ledger.admit(0.71, 0.9)
    assert ledger.admit(0.72, 0.9)
    assert ledger.expected_precision == pytest.approx(0.9)
    assert ledger.threshold(0.9) == pytest.approx(0.9)  # the budget is spent: back to 1 - alpha


def test_the_floor_holds_however_much_room_is_left() -> None:
    ledger = Ledger(Labelling(mode="set", alpha=0.3, floor=0.8))
    ledger.restore([1.0] * 10)
    assert ledger.threshold(0.9) == 0.8


@pytest.mark.parametrize("kwargs", [{"mode": "all"}, {"alpha": 0.0}, {"floor": 0.4}])
def test_bad_settings_name_the_problem(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Labelling(**kwargs)  # type: ignore[arg-type]


# --- through the real engine ---------------------------------------------------------------------

COINS = 6  # 50/50 cases: sure frontier labels (P(in band) 0.98 at k = 10) that leave room in the set


def _agent(case: Case, i: int) -> str:
    """A coin answers A A A A B, then B B B B A: P(in band) 0.61 at k = 5 (below any threshold) and 0.98
    at k = 10. The near-edge case answers A but at samples 1, 5 and 8: 0.61 at k = 5 and 0.83 at k = 10
    (k_max), short of the per-case rule's 0.9.
    """
    wrong = (1, 5, 8) if case.id == "edge" else (4, 5, 6, 7, 8)
    return "\\boxed{B}" if i in wrong else "\\boxed{A}"


def _cases() -> list[Case]:
    return [case(f"coin-{i}", f"Flip coin {i}?", topic="coins") for i in range(COINS)] + [
        case("edge", "The near-edge task?", topic="edge")]


def _settings(mode: str) -> ProbeSettings:
    # one case at a time, in order (the coins' labels come before the edge case's), the prior held;
    # rounds of 5: a coin stops at k = 10 well above any threshold, so its label leaves room
    return ProbeSettings(replay_first=False, k=10, sequential=SequentialConfig(k_max=10, rounds=(5,)),
                         labels=Labelling(mode=mode), max_concurrent_cases=1, prior_refit_every=0,  # type: ignore[arg-type]
                         prior_from_store=False)


def _probe(tmp_path: Path, mode: str, **kwargs: object) -> ProbeResult:
    adapter = ScriptedAdapter(_agent)
    return asyncio.run(probe(open_scripted(adapter), static_curriculum(_cases()), _settings(mode),
                             store=CaseStore(tmp_path / mode), **kwargs))  # type: ignore[arg-type]


def test_set_labels_label_a_near_edge_case_the_per_case_rule_leaves_unresolved(tmp_path: Path) -> None:
    by_case = {r.id: r for r in _probe(tmp_path, "case").records}
    by_set = {r.id: r for r in _probe(tmp_path, "set").records}
    # the per-case rule: every coin frontier, the edge case forced at k_max, leaning in band
    assert by_case["edge"].case_class is CaseClass.UNRESOLVED and by_case["edge"].k == 10
    assert all(by_case[f"coin-{i}"].case_class is CaseClass.FRONTIER for i in range(COINS))
    # set-level: the coins' sure labels leave room for the edge case at the same samples
    assert all(by_set[f"coin-{i}"].case_class is CaseClass.FRONTIER for i in range(COINS))
    edge = by_set["edge"]
    assert edge.case_class is CaseClass.FRONTIER and edge.k == 10 and edge.band_inside == pytest.approx(0.831, abs=0.01)
    assert "(set-level labels: the run's frontier set holds ≤ 7% expected wrong labels)" in (edge.reason or "")
    assert re.search(r"P\(in band\) = 0\.\d\d ≥ 0\.\d\d \(set-level", edge.reason or "")
    insides = [r.band_inside for r in by_set.values() if r.case_class is CaseClass.FRONTIER]
    assert sum(1 - x for x in insides if x is not None) <= 0.07 * len(insides)  # the set's promise
    assert edge.case.metadata["band_posterior"]["confidence"] < 0.9  # the threshold it met, kept
    assert sum(r.case_class is CaseClass.FRONTIER for r in by_set.values()) == COINS + 1
    assert sum(r.case_class is CaseClass.FRONTIER for r in by_case.values()) == COINS


def test_case_mode_labels_as_the_per_case_rule_did(tmp_path: Path) -> None:
    # the old rule, case by case: frontier exactly when the policy's decision stops in band at 0.9
    result = _probe(tmp_path, "case")
    policy = _settings("case").policy()
    assert policy is not None
    for record in result.records:
        decision = decide([c.count for c in record.clusters], record.n_unparseable, record.n_failed, policy)
        assert (record.case_class is CaseClass.FRONTIER) == decision.in_band
        assert "set-level" not in (record.reason or "")


def test_the_summary_reports_the_frontier_sets_expected_precision_everywhere(tmp_path: Path) -> None:
    result = _probe(tmp_path, "set")
    frontier = [r for r in result.records if r.case_class is CaseClass.FRONTIER]
    expected = sum(r.band_inside or 0.0 for r in frontier) / len(frontier)
    summary = summarize(result.records)
    assert summary.frontier_precision == pytest.approx(expected) and summary.frontier_labels == COINS + 1
    assert summary.frontier_precision >= 0.93
    line = precision_line(summary)
    assert line == f"expected {expected:.2f}: the mean P(in band) of the {COINS + 1} frontier cases " \
                   f"({(COINS + 1) * (1 - expected):.1f} wrong labels expected among them)"
    report = ReportInput.of(result.records, result.run)
    assert ("frontier precision", line) in report.headline()
    data = json.loads(build_json_report(result.records, result.run).model_dump_json())
    assert data["frontier_precision"] == pytest.approx(expected) and f"frontier precision: {line}" in data["headline"]
    props = {p.get("name"): p.get("value") for p in ET.fromstring(junit_xml(result.records, result.run)).iter("property")}
    assert props["frontier_precision"] == f"{expected:.4f}" and props["frontier precision"] == line
    assert f"- frontier precision: {line}" in markdown_report(result.records, result.run)
    assert precision_line(summarize([r for r in result.records if r.case_class is not CaseClass.FRONTIER])) is None


def test_a_resumed_run_restores_its_ledger_from_its_frontier_records(tmp_path: Path) -> None:
    uninterrupted = {r.id: r.case_class for r in _probe(tmp_path, "set").records}
    store, cache = CaseStore(tmp_path / "resumed"), tmp_path / "cache"
    # a budget ends the run after the coins (6 x 10 samples): the edge case is left to the resumed run
    cut = open_scripted(ScriptedAdapter(_agent), cache, budget=Budget(max_calls=COINS * 10))
    first = asyncio.run(probe(cut, static_curriculum(_cases()), _settings("set"), store=store, run_id="r"))
    assert first.stop_reason == "budget" and sum(r.case_class is CaseClass.FRONTIER for r in first.records) == COINS
    again = asyncio.run(probe(open_scripted(ScriptedAdapter(_agent), cache), static_curriculum(_cases()),
                              _settings("set"), store=store, run_id="r", resume=True))
    # without the coins' charges the edge case would be the run's first label, at 1 - alpha, and unresolved
    assert {r.id: r.case_class for r in again.records} == uninterrupted
    assert uninterrupted["edge"] is CaseClass.FRONTIER


def test_a_bad_labels_setting_names_the_key_and_the_fix() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, [Override("probing.labels.mode", "cases", "--set probing.labels.mode=cases")], env={})
    assert "--set probing.labels.mode=cases: probing.labels.mode" in str(info.value)
    assert "did you mean 'case'?" in str(info.value)
    with pytest.raises(ConfigError, match=r"probing\.labels\.alpha: Input should be less than 0\.5"):
        load_config(None, [Override("probing.labels.alpha", 0.6, "--set probing.labels.alpha=0.6")], env={})
    case_mode = build_settings(load_config(None, [parse_set("probing.labels.mode=case")], env={}))  # the CLI's --set
    assert case_mode.labels == Labelling(mode="case") and build_settings(load_config(None, env={})).labels == Labelling()
