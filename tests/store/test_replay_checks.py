"""The replay's stopping rule: looks that spend alpha, checks between them that can only let an
unchanged case go as ``same``, and a replayed case that stops once the test says ``same`` (its
class carried from the baseline, marked), with exact numbers and one replay through the engine.
"""

from __future__ import annotations

import random
from math import comb
from pathlib import Path

import pytest

from frontier_qa.probing._baseline_accept import accept
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._engine import ProbeSettings, probe, replay
from frontier_qa.probing._regression import CARRIED, carried_class
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import Evidence, Look, RegressionPolicy, RegressionVerdict, judge
from frontier_qa.store._records import Baseline, CaseClass
from frontier_qa.target import Case
from frontier_qa.testing import ScriptedAdapter, case, open_scripted, static_curriculum
from tests.factories import run

SUITE = RegressionPolicy().for_cases(30)
BASE = Baseline(case_id="c", case_class=CaseClass.PASS, k=40, successes=36, anchor="7", anchor_kind="reference")


def test_checks_are_the_looks_and_every_second_sample_from_five() -> None:
    assert SUITE.looks == (8, 16, 32, 64, 128)
    assert SUITE.checks[:10] == (5, 7, 8, 9, 11, 13, 15, 16, 17, 19)
    assert SUITE.checks[-1] == SUITE.cap == 128 and set(SUITE.looks) <= set(SUITE.checks)
    assert RegressionPolicy(looks=(4, 8), same_from=3, same_every=4).checks == (3, 4, 7, 8)


def test_a_check_between_looks_spends_no_level_and_can_only_say_same() -> None:
    # 0/7 has a Fisher p of 5.2e-6, below the first look's level: still no verdict between looks
    assert judge(BASE, Look(None, Evidence(0, 7)), SUITE) is None
    found = judge(BASE, Look(0, Evidence(0, 8)), SUITE)
    assert found is not None and found.verdict is RegressionVerdict.REGRESSION
    assert found.p_value == pytest.approx(1.3118e-06, rel=1e-4) and found.level == pytest.approx(0.01 / 30 * 8 / 248)
    same = judge(BASE, Look(None, Evidence(5, 5)), SUITE)
    assert same is not None and same.verdict is RegressionVerdict.SAME and same.level is None
    assert "has probability 0.020" in same.reason  # P(drop >= 0.3 | 36/40, 5/5) = 0.0203 < 0.1
    assert judge(BASE, Look(None, Evidence(4, 5)), SUITE) is None  # 0.179: sample on


def operating(base: Baseline, policy: RegressionPolicy, rate: float) -> tuple[dict[str, float], float]:
    """The chance of each verdict and the expected new samples, summed over every path of the checks."""
    paths, taken, verdicts, samples = {0: 1.0}, 0, dict[str, float](), 0.0
    for n in policy.checks:
        step, grown = n - taken, dict[int, float]()
        for s, w in paths.items():
            for x in range(step + 1):
                grown[s + x] = grown.get(s + x, 0.0) + w * comb(step, x) * rate**x * (1 - rate) ** (step - x)
        taken, paths = n, {}
        index = policy.looks.index(n) if n in policy.looks else None
        for s, w in grown.items():
            if w < 1e-15:  # paths this unlikely change no figure below
                continue
            outcome = judge(base, Look(index, Evidence(s, n), final=n == policy.cap), policy)
            if outcome is None:
                paths[s] = w
            else:
                verdicts[outcome.verdict.value] = verdicts.get(outcome.verdict.value, 0.0) + w
                samples += w * n
    return verdicts, samples


def test_the_whole_rule_exactly_on_a_stable_right_case() -> None:
    unchanged, cost = operating(BASE, SUITE, 0.9)
    assert unchanged["regression"] < 2e-8 and cost == pytest.approx(6.82, abs=0.01)  # 5,10,20,40,80 looks: 8.7
    dropped, _ = operating(BASE, SUITE, 0.4)
    assert dropped["regression"] == pytest.approx(0.9740, abs=1e-4)  # 5,10,20,40,80 looks: 0.963
    assert dropped["same"] == pytest.approx(0.0260, abs=1e-4)  # mostly 5/5 at the first check: 0.4^5 = 0.0102 ...
    broken, cost = operating(BASE, SUITE, 0.0)
    assert broken == {"regression": 1.0} and cost == 8  # the first look


def test_a_carried_class_says_where_it_came_from() -> None:
    kept, why = carried_class(BASE.model_copy(update={"case_class": CaseClass.FRONTIER}), 7, 0.571)
    assert kept is CaseClass.FRONTIER
    assert why == (f"{CARRIED} (accept, 40 samples): the regression test called the case the same after 7 new "
                   "samples (p̂ = 0.57), so its band was not decided again")


def test_a_replay_stops_each_unchanged_case_at_same_and_samples_a_changed_one_until_its_class(
        tmp_path: Path) -> None:
    right = {"7": 0.9, "11": 0.1}
    table = {f"c{i}": dict(right) for i in range(4)}

    def agent(c: Case, index: int) -> str:
        u = random.Random(f"{c.id}:{index}").random()
        return "7" if u < table[c.id]["7"] else "11"

    proposals = [Proposal(case(cid, f"Task {cid}: what is {i} plus 7 minus {i}?", reference="7",
                               reference_verified=True)) for i, cid in enumerate(table)]
    store = CaseStore(tmp_path / "store")
    target = open_scripted(ScriptedAdapter(agent, id="agent", version="1"))
    run(probe(target, static_curriculum(proposals), ProbeSettings(replay_first=False), store=store, run_id="r1"))
    run(accept(store, None, ProbeSettings(), target=target, run_id="accept"))
    table["c3"] = {"7": 0.0}  # c3 now always says 11
    result = run(replay(target, store, ProbeSettings(), run_id="r2"))
    verdicts = {c.case_id: c for c in result.comparisons}
    assert {cid: c.verdict for cid, c in verdicts.items()} == {
        "c0": RegressionVerdict.SAME, "c1": RegressionVerdict.SAME, "c2": RegressionVerdict.SAME,
        "c3": RegressionVerdict.REGRESSION}
    records = {r.id: r for r in result.records}
    for cid in ("c0", "c1", "c2"):  # a few samples each, well under fixed k = 10, and the class kept
        assert records[cid].k < 10 and records[cid].case_class is CaseClass.PASS
        assert verdicts[cid].new is not None and verdicts[cid].new.n == records[cid].k
    carried = [r for r in records.values() if r.reason.startswith(CARRIED)]
    assert all(r.case_class is CaseClass.PASS for r in carried)
    # the changed case is found at a look (a test spends level only there), its new class decided
    assert verdicts["c3"].new is not None and verdicts["c3"].new.n in SUITE.looks
    assert records["c3"].case_class is CaseClass.FAILURE and not records["c3"].reason.startswith(CARRIED)
