"""Baselines, guard cases, readable case ids, and stores written by frontier-qa 0.1 (tests/data/v1)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from frontier_qa.curricula._file import FileCurriculum
from frontier_qa.probing._engine import ProbeSettings, probe, replay
from frontier_qa.runtime import open_target
from frontier_qa.store import _baselines as baselines
from frontier_qa.store._case_ids import case_id_for, legacy_case_id, readable_id, slug
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import RegressionVerdict
from frontier_qa.store._guards import select_guards
from frontier_qa.store._records import Baseline, CaseClass, CaseRecord, ClusterCount, SampleRecord
from frontier_qa.store._store_error import StoreError
from frontier_qa.store._suites import import_suite
from frontier_qa.target import Case
from tests.factories import REPO, run

V1 = REPO / "tests" / "data" / "v1"
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def record(case_id: str, case_class: CaseClass, answers: list[str], *, topic: str = "t", at: int = 0,
           reference: str | None = None, verified: bool = False, run_id: str = "r1") -> CaseRecord:
    counts: dict[str, int] = {}
    for a in answers:
        counts[a] = counts.get(a, 0) + 1
    clusters = [ClusterCount(answer=a, count=n) for a, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return CaseRecord(
        case=Case(id=case_id, prompt=f"Prompt {case_id}", topic=topic, reference=reference,
                      reference_verified=verified),
        run_id=run_id, target_id="python:a.py:f", target_version="1+src.00000000",
        samples=[SampleRecord(sample_index=i, answer=a) for i, a in enumerate(answers)],
        p_hat=clusters[0].count / len(answers) if answers else None, majority=clusters[0].answer if clusters else None,
        clusters=clusters, case_class=case_class, started_at=T0 + timedelta(seconds=at),
        finished_at=T0 + timedelta(seconds=at + 1))


# --- readable ids ----------------------------------------------------------------------------------


def test_case_ids_are_a_slug_of_the_prompt_and_a_short_hash() -> None:
    assert slug("What day of the week was 14 March 1879?") == "what-day-of-the-week-was-14-march-1879"
    assert slug("Ça coûte 3 € — combien?") == "ca-coute-3-combien"
    assert slug("数学の問題") == "case" and slug("") == "case"
    long = slug("word " * 30)
    assert len(long) <= 48 and long.endswith("word") and not long.endswith("-")
    case = Case(id="", prompt="What day of the week was 14 March 1879?", topic="dates")
    cid = case_id_for(case)
    assert cid.startswith("what-day-of-the-week-was-14-march-1879-") and len(cid.rsplit("-", 1)[1]) == 6
    assert case_id_for(Case(id="", prompt=case.prompt, system="Be brief.")) != cid  # the hash covers what it sees
    assert legacy_case_id(case).startswith("case-") and len(legacy_case_id(case)) == 21
    assert readable_id("Same first words, then a", "1") != readable_id("Same first words, then a", "2")


# --- guards -------------------------------------------------------------------------------------------


def test_guards_are_spread_over_topics_and_stable() -> None:
    passes = [record(f"{topic}-{i}", CaseClass.PASS, ["4"], topic=topic) for topic in ("a", "b", "c") for i in range(4)]
    others = [record("f", CaseClass.FRONTIER, ["4", "5"], topic="a")]
    picked = select_guards(passes + others, 5)
    assert [r.topic for r in picked] == ["a", "b", "c", "a", "b"]  # one per topic in turn
    assert select_guards(list(reversed(passes)), 5) == picked  # independent of order
    assert len(select_guards(passes, 100)) == 12 and select_guards(passes, 0) == []
    grown = select_guards(passes + [record("c-new", CaseClass.PASS, ["4"], topic="c")], 5)
    assert len({r.id for r in grown} & {r.id for r in picked}) >= 4  # a new pass case barely moves the pick


# --- baselines -----------------------------------------------------------------------------------------


def test_a_baseline_holds_the_anchor_count_of_its_observation() -> None:
    verified = baselines.from_record(record("v", CaseClass.PASS, ["4"] * 9 + ["5"], reference="4.0", verified=True))
    assert (verified.anchor, verified.anchor_kind, verified.successes, verified.k) == ("4.0", "reference", 9, 10)
    majority = baselines.from_record(record("m", CaseClass.FRONTIER, ["A"] * 6 + ["B"] * 4, reference="B"))
    assert (majority.anchor, majority.anchor_kind, majority.successes) == ("A", "majority", 6)
    scattered = baselines.from_record(record("s", CaseClass.SUSPECT, list("ABCDEFGHIJ")))
    assert scattered.anchor is None and scattered.rate is None
    with pytest.raises(ValueError, match="above k"):
        Baseline(case_id="x", case_class=CaseClass.PASS, k=2, successes=3, anchor="a", anchor_kind="majority")


def test_accepted_baselines_win_over_first_observations_and_stay_as_history(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    store.append(record("c", CaseClass.PASS, ["4"] * 5, at=0))
    store.append(record("c", CaseClass.FAILURE, ["5"] * 5, at=10, run_id="r2"))  # a later replay: never the baseline
    first = baselines.resolve(store)["c"]
    assert (first.source, first.case_class, first.run_ids) == ("first", CaseClass.PASS, ["r1"])
    accepted = [baselines.from_record(record("c", CaseClass.FAILURE, ["5"] * 5, at=10, run_id="r2"), source="accept",
                                      accepted_at=T0 + timedelta(seconds=20 + i)) for i in range(2)]
    store.append_baselines(accepted)
    assert baselines.resolve(store)["c"] == accepted[1] and len(store.baseline_lines()) == 2
    merged = CaseStore(tmp_path / "merged")
    merged.merge([store, store])
    assert len(merged.baseline_lines()) == 2 and merged.accepted()["c"] == accepted[1]  # no duplicates
    newer = json.loads(store.baselines_path.read_text().splitlines()[0]) | {"schema_version": 9}
    store.baselines_path.write_text(json.dumps(newer) + "\n")
    with pytest.raises(StoreError, match="newer than this frontier-qa reads"):
        store.accepted()


def test_a_baseline_holds_only_while_the_inputs_it_observed_do(tmp_path: Path) -> None:
    def edited(r: CaseRecord, **change: object) -> CaseRecord:
        return r.model_copy(update={"case": dataclasses.replace(r.case, **change)})

    store = CaseStore(tmp_path)
    first = record("c", CaseClass.SUSPECT, ["4"] * 5, reference="5", at=0)
    store.append(first)
    stale = baselines.from_record(first, source="accept", accepted_at=T0 + timedelta(seconds=5))
    store.append_baselines([stale])
    store.append(edited(record("c", CaseClass.SUSPECT, ["4"] * 5, reference="5", at=10, run_id="r2"), topic="u"))
    assert baselines.resolve(store)["c"] == stale  # a new topic is no new question: the baseline holds
    fixed = record("c", CaseClass.PASS, ["4"] * 5, reference="4", at=20, run_id="r3")  # the reference fixed
    store.append(fixed)
    store.append(record("c", CaseClass.PASS, ["4"] * 4 + ["3"], reference="4", at=30, run_id="r4"))

    records, changed_at = baselines.current_inputs(store.case_records())["c"]
    assert [r.run_id for r in records] == ["r3", "r4"] and changed_at == fixed.finished_at
    now = baselines.resolve(store)["c"]
    assert (now.source, now.run_ids, now.anchor) == ("first", ["r3"], "4")  # the stale accepted one is history
    assert not baselines.still_holds(stale, changed_at)
    again = baselines.from_record(fixed, source="accept", accepted_at=T0 + timedelta(seconds=40))
    store.append_baselines([again])
    assert baselines.resolve(store)["c"] == again and store.baseline_lines() == [stale, again]


# --- stores and suites written by frontier-qa 0.1 ------------------------------------------------------------


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    shutil.copytree(V1, tmp_path / "v1")
    return tmp_path / "v1"


def test_a_v1_store_loads_and_its_cases_keep_their_ids_and_history(v1: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = CaseStore(v1 / "store")
    records = store.case_records()
    assert len(records) == 8 and {r.schema_version for r in records} == {1}
    assert {r.target_id for r in records} == {"python:agent.py:run@1"}
    assert baselines.base_target_id("python:agent.py:run@1", "1") == "python:agent.py:run"
    legacy = sorted(store.latest())
    assert legacy == ["case-3648cbfb38e277a3", "case-722beb3e69af44bb", "case-cc0fc8d44638b45a", "wd-named"]
    monkeypatch.chdir(v1)  # the spec is relative, as the v1 run wrote it
    target = open_target("python:agent.py:run", cache=False)
    assert target.id == "python:agent.py:run" and target.version().startswith("1+src.")
    # the same case file again (no ids in it): the cases are found under their 0.1 ids, nothing is new
    result = run(probe(target, FileCurriculum("cases.jsonl"), ProbeSettings(k=6), store=store, run_id="v2-probe"))
    assert sorted(r.id for r in result.records) == legacy and len(result.comparisons) == 4
    assert {c.verdict for c in result.comparisons} == {RegressionVerdict.SAME}
    assert sorted(store.latest()) == legacy
    first = baselines.resolve(store)["case-722beb3e69af44bb"]
    assert (first.source, first.run_ids, first.anchor, first.successes) == ("first", ["v1-probe"], "42", 6)


def test_a_v1_suite_replays_against_its_observed_results(v1: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entries = import_suite(v1 / "suite-v1.yaml")
    assert [e.schema_version for e in entries] == [1] * 4 and all(e.baseline is None for e in entries)
    held = {e.case.id: baselines.of_entry(e) for e in entries}
    assert all(b is not None and b.source == "suite" for b in held.values())
    assert held["case-722beb3e69af44bb"].successes == 6  # p̂ 1.0 × k 6, the majority matches the reference
    monkeypatch.chdir(v1)
    target = open_target("python:agent.py:run", cache=False)
    result = run(replay(target, CaseStore(v1 / "fresh"), ProbeSettings(k=6), cases=entries, run_id="ci"))
    assert {c.verdict for c in result.comparisons} == {RegressionVerdict.SAME}
