"""The probe engine end to end: scripted targets through the real runtime, a real store and sandbox.

Targets are :class:`frontier_qa.testing.ScriptedAdapter` backends wrapped in the real
:class:`~frontier_qa.runtime.ManagedTarget` (cache, budget, retries); the store is a real
:class:`~frontier_qa.store.CaseStore` in ``tmp_path``; solution programs run in the real sandbox.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.probing._classify import CaseEvidence, classify_case
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._engine import ProbeSettings, ProgressEvent, case_id_for, config_hash, probe, replay
from frontier_qa.probing._judge_verdict import parse_judge_verdict
from frontier_qa.probing._sequential import DEFAULT_PRIOR, BandDecision, SequentialConfig
from frontier_qa.probing._set_labels import Labelling
from frontier_qa.reports import RegressionVerdict as ReplayRecord
from frontier_qa.reports import summarize
from frontier_qa.runtime import Budget
from frontier_qa.scoring.bands import Band
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CaseClass, CaseRecord
from frontier_qa.store._shards import Shard, shard_of
from frontier_qa.store._store_error import StoreError
from frontier_qa.store._suites import export_suite, import_suite
from frontier_qa.target import Case, Sampling, Trajectory
from frontier_qa.testing import (
    EndlessCurriculum,
    ScriptedAdapter,
    always,
    always_right,
    case,
    from_distribution,
    moody,
    open_scripted,
    static_curriculum,
    words_embedder,
)
from tests.factories import REPO, arithmetic_cases, run, weekday_cases

# these tests count rounds and calls as they were written: at most 10 samples, rounds of 3 then 2
# (the calibrated policy goes on to 30 in rounds of 3), each frontier label at the policy's 90 %
# (the default set-level labels: tests/probing/test_set_labels.py)
K10: dict[str, Any] = {"k": 10, "sequential": SequentialConfig(k_max=10, rounds=(3, 2)),
                       "labels": Labelling(mode="case")}
QUIET = ProbeSettings(replay_first=False, **K10)


def by_id(records: tuple[CaseRecord, ...] | list[CaseRecord]) -> dict[str, CaseRecord]:
    return {r.id: r for r in records}


def store_ids(store: CaseStore, run_id: str) -> list[str]:
    return [r.id for r in store.case_records(run_id=run_id)]


# --- classification rules (pure) --------------------------------------------------------


def test_classification_rules_follow_the_brief() -> None:
    def cls(verdict: BandDecision | None, **kw: object) -> CaseClass:
        base = {"majority": "41", "reference": "42", "reference_verified": False, "majority_correct": False}
        return classify_case(CaseEvidence(verdict=verdict, **{**base, **kw}))[0]  # type: ignore[arg-type]

    # in band: frontier whatever the reference says, verified or not
    assert cls(BandDecision.IN_BAND) is CaseClass.FRONTIER
    assert cls(BandDecision.IN_BAND, reference_verified=True) is CaseClass.FRONTIER
    # above band: verified → failure/pass, unverified → suspect/pass, none → pass, judge decides
    assert cls(BandDecision.ABOVE, reference_verified=True) is CaseClass.FAILURE
    assert cls(BandDecision.ABOVE, reference_verified=True, majority_correct=True) is CaseClass.PASS
    assert cls(BandDecision.ABOVE) is CaseClass.SUSPECT
    assert cls(BandDecision.ABOVE, majority_correct=True) is CaseClass.PASS
    assert cls(BandDecision.ABOVE, reference=None, majority_correct=None) is CaseClass.PASS
    assert cls(BandDecision.ABOVE, reference=None, majority_correct=None, judge_verdict=False) is CaseClass.FAILURE
    assert cls(BandDecision.ABOVE, judge_verdict=True, majority_correct=True) is CaseClass.PASS
    # below band: a verified reference missed → failure, else suspect
    assert cls(BandDecision.BELOW, reference_verified=True) is CaseClass.FAILURE
    assert cls(BandDecision.BELOW, reference_verified=True, majority=None, majority_correct=None) is CaseClass.FAILURE
    assert cls(BandDecision.BELOW) is CaseClass.SUSPECT
    assert cls(BandDecision.BELOW, reference_verified=True, majority_correct=True) is CaseClass.SUSPECT
    reason = classify_case(CaseEvidence(verdict=BandDecision.BELOW, majority=None, reference=None,
                                        reference_verified=False, majority_correct=None, n_answered=0,
                                        n_unparseable=3, answer_format="boxed"))[1]
    assert reason.startswith("could not judge: the agent's answers are not in format 'boxed': 3 of 3 gave none")
    assert "answer_format" in reason  # the setting that fixes it
    # most samples unreadable in the format: never frontier (even when a forced posterior decision says
    # "in band": six unparseable replies once came out "p̂ = 0.00 inside the band"), never failure (a
    # plain-text agent under `boxed` was scored 100 % failure): could not judge
    unanswered = {"majority": None, "majority_correct": None, "n_answered": 0, "n_unparseable": 6, "p_hat": 0.0}
    assert cls(BandDecision.IN_BAND, **unanswered) is CaseClass.UNRESOLVED
    assert cls(BandDecision.IN_BAND, reference_verified=True, **unanswered) is CaseClass.UNRESOLVED
    assert cls(BandDecision.BELOW, reference_verified=True, majority="7", majority_correct=False, n_answered=2,
               n_unparseable=3) is CaseClass.UNRESOLVED  # most unreadable
    assert cls(BandDecision.BELOW, reference_verified=True, majority="7", majority_correct=False, n_answered=3,
               n_unparseable=3) is CaseClass.FAILURE  # half read: the read half misses the verified reference
    # no decision, or nothing but failed calls → unresolved
    assert cls(None, stopped_by="budget") is CaseClass.UNRESOLVED
    assert cls(BandDecision.BELOW, n_answered=0, n_unparseable=0) is CaseClass.UNRESOLVED
    # a forced stop (the sample limit reached below the confidence) is unresolved, whatever it leans to
    for verdict in (BandDecision.IN_BAND, BandDecision.BELOW, BandDecision.ABOVE):
        assert cls(verdict, forced=True) is CaseClass.UNRESOLVED
    # the evidence is one frozen value: the prober, a refresh and an accept build it the same way
    evidence = CaseEvidence(verdict=BandDecision.ABOVE, majority="41", reference="42", reference_verified=True,
                            majority_correct=False)
    with pytest.raises(FrozenInstanceError):
        evidence.verdict = BandDecision.IN_BAND  # type: ignore[misc]
    assert classify_case(evidence) == classify_case(replace(evidence))


def test_reasons_state_the_posterior_and_never_contradict_the_band() -> None:
    from frontier_qa.probing._sequential import band_posterior

    # a scattered case: p̂ = 0.33 is inside [0.30, 0.80], yet four answers in six say "below"
    post = band_posterior((2, 2, 1, 1))
    base = {"majority": "4", "reference": None, "reference_verified": False, "majority_correct": None,
            "p_hat": 2 / 6, "k": 6, "posterior": post, "confidence": 0.9}
    cls, reason = classify_case(CaseEvidence(verdict=BandDecision.BELOW, **base))
    assert cls is CaseClass.SUSPECT
    assert reason == ("answers scattered: p̂ = 0.33 at k = 6; P(below, in, above the band [0.30, 0.80]) = "
                      f"{post.below:.2f}, {post.inside:.2f}, {post.above:.2f}; p* 90% interval "
                      f"[{post.credible[0]:.2f}, {post.credible[1]:.2f}]")
    assert "below band" not in reason
    cls, reason = classify_case(CaseEvidence(verdict=BandDecision.IN_BAND, forced=True, **base))
    assert cls is CaseClass.UNRESOLVED
    assert reason.startswith("undecided at the sample limit (needed 0.90), leaning in band: p̂ = 0.33 at k = 6; P(")
    # fixed k (Agent0's rule) says so, and still shows the posterior
    cls, reason = classify_case(CaseEvidence(verdict=BandDecision.IN_BAND, fixed=True,
                                             **{**base, "confidence": None}))
    assert cls is CaseClass.FRONTIER and "inside the band [0.30, 0.80] (fixed k: Agent0's rule, no confidence)" in reason


def test_judge_verdicts_are_parsed_from_the_last_verdict_line() -> None:
    assert parse_judge_verdict("The sum is 42.\nVerdict: yes") is True
    assert parse_judge_verdict("Verdict: yes... wait, no.\n**Verdict:** no") is False
    assert parse_judge_verdict("No, 41 is wrong.") is False
    assert parse_judge_verdict("Verdict: incorrect") is False
    assert parse_judge_verdict("It depends.") is None
    assert parse_judge_verdict(None) is None


def test_case_ids_are_stable_hashes_of_what_the_target_sees() -> None:
    a = Case(id="", prompt="What is 2 + 2?")
    assert case_id_for(a) == case_id_for(replace(a, topic="other", reference="4"))
    assert case_id_for(a) != case_id_for(replace(a, system="Be brief."))
    assert case_id_for(a) == "what-is-2-2-" + hashlib.sha256(
        json.dumps({"history": [], "prompt": "What is 2 + 2?", "system": None, "tools": []}).encode()).hexdigest()[:6]


def test_settings_reject_bad_values_and_fold_band_and_k_into_the_policy() -> None:
    with pytest.raises(ConfigError, match=r"ProbeSettings\.k"):
        ProbeSettings(k=0)
    with pytest.raises(ConfigError, match="replay_scope"):
        ProbeSettings(replay_scope="everything")
    policy = ProbeSettings(band=Band(0.25, 0.75), k=2).policy()
    assert policy is not None and policy.band == (0.25, 0.75) and policy.k_max == 2 and policy.k_min == 2
    assert ProbeSettings(sequential=None).policy() is None
    assert ProbeSettings(seed=7).run_sampling().seed == 7
    base = config_hash(ProbeSettings(), "t")
    assert base == config_hash(ProbeSettings(max_candidates=5, shard=Shard(1, 1)), "t")
    assert base != config_hash(ProbeSettings(k=8), "t") and base != config_hash(ProbeSettings(), "u")


# --- the frontier map and the classes ---------------------------------------------------


def test_inconsistent_topic_is_the_frontier(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(moody("weekdays"))
    events: list[ProgressEvent] = []
    cur = static_curriculum(arithmetic_cases(4) + weekday_cases(4))
    result = run(probe(open_scripted(adapter), cur, QUIET, store=CaseStore(tmp_path), progress=events.append))
    classes = {r.id: r.case_class for r in result.records}
    assert classes == {**{f"arithmetic-{i}": CaseClass.PASS for i in range(4)},
                       **{f"weekdays-{i}": CaseClass.FRONTIER for i in range(4)}}
    rows = {row.topic: row for row in summarize(result.records).by_topic}
    assert rows["weekdays"].frontier_share == 1.0 and rows["arithmetic"].frontier_share == 0.0
    # sequential rounds of 3, 2, 2: a 50/50 coin is in band at (4, 3) (P = 0.91 ≥ 0.9); a sure
    # answer above it at (5,) (P = 0.84 ≥ 0.8, the policy's confidence for out-of-band stops)
    weekday = by_id(result.records)["weekdays-0"]
    assert [r.k for r in weekday.rounds] == [3, 5, 7] and weekday.p_hat == pytest.approx(4 / 7)
    assert weekday.interval is not None and weekday.interval.contains(4 / 7)
    assert weekday.reason.startswith("unsure: p̂ = 0.57 at k = 7; P(below, in, above the band [0.30, 0.80]) = ")
    assert weekday.case.metadata["band_posterior"]["inside"] >= 0.9
    assert [r.k for r in by_id(result.records)["arithmetic-0"].rounds] == [3, 5]
    assert result.stop_reason == "curriculum exhausted" and result.run.finished
    assert result.counts[CaseClass.FRONTIER] == 4 and result.candidates == 8
    kinds = {e.kind for e in events}
    assert {"proposed", "validated", "sampled", "classified", "stopped"} <= kinds
    assert events[-1].kind == "stopped" and events[-1].counts["frontier"] == 4
    assert events[-1].budget is not None and events[-1].budget.startswith("calls 48")
    # the curriculum heard every outcome, in proposal order
    assert [(o.proposal.case.id, o.case_class) for o in cur.outcomes] == [
        (p.case.id, classes[p.case.id].value) for p in cur.proposals]


def test_always_right_target_with_verified_references_has_no_failures(tmp_path: Path) -> None:
    proposals = arithmetic_cases(3, solution=True)
    # one case with no reference: the solution's printed answer becomes the verified reference
    proposals.append(replace(proposals[0], case=replace(proposals[0].case, id="no-ref", reference=None,
                                                         prompt="Case 99: What is 40 + 2?", metadata={"truth": "42"}),
                             solution="print(40 + 2)"))
    result = run(probe(open_scripted(ScriptedAdapter(always_right)), static_curriculum(proposals), QUIET,
                       store=CaseStore(tmp_path)))
    assert [r.case_class for r in result.records] == [CaseClass.PASS] * 4
    assert all(r.case.reference_verified and r.majority_correct for r in result.records)
    assert by_id(result.records)["no-ref"].case.reference == "42"
    assert by_id(result.records)["arithmetic-1"].case.metadata["solution"] == "print(30 + 12)"


def test_wrong_unverified_reference_with_stable_majority_is_suspect(tmp_path: Path) -> None:
    c = case("ref-wrong", "What is 6 times 7?", reference="41", truth="42")
    result = run(probe(open_scripted(ScriptedAdapter(always_right)), static_curriculum([Proposal(c)]), QUIET,
                       store=CaseStore(tmp_path)))
    (record,) = result.records
    assert record.case_class is CaseClass.SUSPECT and record.majority == "42" and record.majority_correct is False
    assert "unverified reference" in (record.reason or "")


def test_verified_reference_missed_stably_is_a_failure(tmp_path: Path) -> None:
    c = case("missed", "What is 6 times 7?", reference="42")
    result = run(probe(open_scripted(ScriptedAdapter(always("41"))),
                       static_curriculum([Proposal(c, solution="print(6 * 7)")]), QUIET, store=CaseStore(tmp_path)))
    (record,) = result.records
    assert record.case_class is CaseClass.FAILURE and record.case.reference_verified
    assert record.case.metadata["verification"] == "solution output agrees with the reference"


def test_solution_that_disagrees_leaves_the_reference_unverified(tmp_path: Path) -> None:
    c = case("disagree", "What is 6 times 7?", reference="41")
    result = run(probe(open_scripted(ScriptedAdapter(always("42"))),
                       static_curriculum([Proposal(c, solution="print(6 * 7)")]), QUIET, store=CaseStore(tmp_path)))
    (record,) = result.records
    assert record.case_class is CaseClass.SUSPECT and not record.case.reference_verified
    assert record.case.metadata["solution_output"] == "42"


def test_a_wrong_reference_never_erases_the_in_band_signal(tmp_path: Path) -> None:
    coin = from_distribution({"w-unverified": {"Friday": 1, "Monday": 1}, "w-verified": {"Friday": 1, "Monday": 1}})
    proposals = [
        Proposal(case("w-unverified", "Which day comes after Thursday?", topic="days", reference="Sunday")),
        Proposal(case("w-verified", "Which day comes after Thursday, said twice?", topic="days", reference="Sunday"),
                 solution="days = ['Friday', 'Saturday', 'Sunday']\nprint(days[-1])"),
    ]
    result = run(probe(open_scripted(ScriptedAdapter(coin)), static_curriculum(proposals), QUIET, store=CaseStore(tmp_path)))
    records = by_id(result.records)
    assert {r.case_class for r in records.values()} == {CaseClass.FRONTIER}
    assert records["w-verified"].case.reference_verified and records["w-verified"].majority_correct is False
    assert "differs from the verified reference" in (records["w-verified"].reason or "")


def test_judge_decides_stable_answers_without_a_verified_reference(tmp_path: Path) -> None:
    cases = [Proposal(case("j-no", "What is 6 times 7?", truth="41")),
             Proposal(case("j-yes", "What is 5 times 7?", truth="35"))]
    judge_adapter = ScriptedAdapter(lambda c, i: "x", id="scripted:judge")

    async def verdict_text(c: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        assert "Proposed answer:" in c.prompt and c.id.startswith("judge-")
        return [Trajectory(text="Verdict: no" if "6 times 7" in c.prompt else "Looks right.\nVerdict: yes")]

    judge_adapter.generate = verdict_text  # type: ignore[method-assign]
    result = run(probe(open_scripted(ScriptedAdapter(always_right)), static_curriculum(cases), QUIET,
                       store=CaseStore(tmp_path), judge=open_scripted(judge_adapter)))
    records = by_id(result.records)
    assert records["j-no"].case_class is CaseClass.FAILURE and records["j-no"].majority_correct is False
    assert records["j-yes"].case_class is CaseClass.PASS
    assert records["j-yes"].case.reference == "35" and records["j-yes"].case.reference_verified
    assert records["j-no"].case.metadata["judge"]["verdict"] is False


def test_invalid_proposals_are_recorded_and_never_sampled(tmp_path: Path) -> None:
    good = arithmetic_cases(1)[0]
    proposals = [
        good,
        Proposal(case("empty", "   ")),
        Proposal(case("fmt", "What is 1 + 1?", answer_format="xml")),
        replace(good, case=replace(good.case, id="dup")),  # same prompt as `good`
    ]
    adapter = ScriptedAdapter(always_right)
    result = run(probe(open_scripted(adapter), static_curriculum(proposals), QUIET, store=CaseStore(tmp_path)))
    records = by_id(result.records)
    assert records["arithmetic-0"].case_class is CaseClass.PASS
    assert {i: records[i].case_class for i in ("empty", "fmt", "dup")} == dict.fromkeys(
        ("empty", "fmt", "dup"), CaseClass.INVALID)
    assert "near-duplicate" in (records["dup"].reason or "") and records["fmt"].k == 0
    assert {cid for cid, _, _ in adapter.calls} == {"arithmetic-0"}


def test_open_ended_answers_are_clustered_by_meaning(tmp_path: Path) -> None:
    settings = replace(QUIET, embedder=words_embedder())
    answers = from_distribution({"why": {"The disk was full.": 1, "The disk was full": 1,  # one meaning
                                         "Tests timed out on a slow runner.": 2}})
    c = case("why", "Why did the nightly build fail?", answer_format="text")
    result = run(probe(open_scripted(ScriptedAdapter(answers)), static_curriculum([Proposal(c)]), settings,
                       store=CaseStore(tmp_path)))
    (record,) = result.records
    assert record.case_class is CaseClass.FRONTIER and len(record.clusters) == 2
    assert sorted(c.count for c in record.clusters) == [record.k // 2, record.k - record.k // 2]


# --- budget, cancellation, resume -------------------------------------------------------


def test_budget_exhaustion_stops_gracefully_and_resume_pays_nothing_twice(tmp_path: Path) -> None:
    store, cache = CaseStore(tmp_path / "store"), tmp_path / "cache"
    adapter = ScriptedAdapter(always_right)
    settings = replace(QUIET, max_concurrent_cases=1)
    proposals = arithmetic_cases(4)
    # an always-right case needs 3 + 2 = 5 calls; 8 calls: one pass, then 3 samples of the next
    first = run(probe(open_scripted(adapter, cache, budget=Budget(max_calls=8)), static_curriculum(proposals),
                      settings, store=store, run_id="budget-run"))
    assert first.stop_reason == "budget" and not first.run.finished
    assert [(r.id, r.case_class, r.k) for r in first.records] == [
        ("arithmetic-0", CaseClass.PASS, 5), ("arithmetic-1", CaseClass.UNRESOLVED, 3)]
    assert store_ids(store, "budget-run") == ["arithmetic-0", "arithmetic-1"]  # nothing lost
    assert "budget" in (first.records[1].reason or "") and first.run.totals.cases == 2
    # cut short by the budget, the case still shows where its 3 samples lean, with the posterior
    cut = first.records[1]
    assert "leaning above: p̂ = 1.00 at k = 3; P(below, in, above the band [0.30, 0.80])" in (cut.reason or "")
    post = cut.case.metadata["band_posterior"]
    assert post["forced"] is True and post["verdict"] == "above" and post["above"] > post["inside"] > post["below"]
    with pytest.raises(ConfigError, match="already in the store"):
        run(probe(open_scripted(adapter, cache), static_curriculum(proposals), settings, store=store, run_id="budget-run"))
    second = run(probe(open_scripted(adapter, cache), static_curriculum(proposals), settings, store=store,
                       run_id="budget-run", resume=True))
    assert second.stop_reason == "curriculum exhausted" and second.run.finished
    assert [r.case_class for r in second.records] == [CaseClass.PASS] * 4
    # every sample paid for once: 4 cases x 5 samples, the unresolved case's 3 came from the cache
    assert adapter.samples == 20 and adapter.samples_for("arithmetic-1") == list(range(5))
    latest = store.latest(run_id="budget-run")
    assert latest["arithmetic-1"].case_class is CaseClass.PASS and len(latest) == 4
    with pytest.raises(StoreError, match="nothing to resume"):
        run(probe(open_scripted(adapter, cache), static_curriculum(proposals), settings, store=store,
                  run_id="budget-run", resume=True))


def test_cancelled_run_resumes_without_duplicates(tmp_path: Path) -> None:
    store, cache = CaseStore(tmp_path / "store"), tmp_path / "cache"
    proposals = arithmetic_cases(6)
    settings = replace(QUIET, max_concurrent_cases=2, batch_size=2)

    async def interrupted() -> None:
        gate = asyncio.Event()  # never set: calls after the 17th hang until cancelled
        adapter = ScriptedAdapter(always_right, gate=gate, gate_after=17)
        task = asyncio.ensure_future(probe(open_scripted(adapter, cache), static_curriculum(proposals), settings,
                                           store=store, run_id="cancel-run"))
        while len(adapter.calls) < 17:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(interrupted())
    before = store_ids(store, "cancel-run")
    assert before == ["arithmetic-0", "arithmetic-1"]  # 14 calls finished two cases; the rest hung
    assert store.interrupted_runs()[0].run_id == "cancel-run"
    again = static_curriculum(proposals)
    adapter = ScriptedAdapter(always_right)
    result = run(probe(open_scripted(adapter, cache), again, settings, store=store, run_id="cancel-run", resume=True))
    ids = store_ids(store, "cancel-run")
    assert sorted(ids) == sorted(p.case.id for p in proposals) and len(ids) == len(set(ids))
    assert {r.id for r in result.records} == set(ids)
    assert {cid for cid, _, _ in adapter.calls}.isdisjoint(before)  # finished cases are not re-sampled
    # the curriculum heard every case again, the resumed ones from their stored records
    assert [o.proposal.case.id for o in again.outcomes] == [p.case.id for p in proposals]


# --- replay-first -----------------------------------------------------------------------


def test_replay_first_reports_regression_and_flaky(tmp_path: Path) -> None:
    store, cache = CaseStore(tmp_path / "store"), tmp_path / "cache"
    stable = Proposal(case("stable", "What is 6 times 7?", reference="42", reference_verified=True))
    shaky = Proposal(case("shaky", "What is 5 times 9?", reference="45", reference_verified=True))
    answers = {"stable": "42", "shaky": "44"}
    adapter = ScriptedAdapter(lambda c, i: answers[c.id])
    target = open_scripted(adapter, cache)
    first = run(probe(target, static_curriculum([stable, shaky]), QUIET, store=store, run_id="r1"))
    assert {r.id: r.case_class for r in first.records} == {"stable": CaseClass.PASS, "shaky": CaseClass.FAILURE}
    answers.update(stable="41", shaky="45")  # the same target now misses one and gets the other
    second = run(probe(target, static_curriculum([]), ProbeSettings(**K10), store=store, run_id="r2"))
    verdicts = {c.case_id: c.verdict for c in second.comparisons}
    assert verdicts == {"stable": ReplayRecord.REGRESSION, "shaky": ReplayRecord.FLAKY}
    assert second.verdicts[ReplayRecord.REGRESSION] == 1
    # fresh samples: the replay drew indices 5.. (the cache could not hand back the old answers)
    assert adapter.samples_for("stable")[:6] == [0, 1, 2, 3, 4, 5]
    assert by_id(second.records)["stable"].samples[0].sample_index == 5


def test_replay_alone_can_replay_a_committed_suite(tmp_path: Path) -> None:
    store = CaseStore(tmp_path / "store")
    target = open_scripted(ScriptedAdapter(moody("weekdays")))
    first = run(probe(target, static_curriculum(weekday_cases(2) + arithmetic_cases(2)), QUIET, store=store))
    suite = tmp_path / "suite.yaml"
    assert export_suite(first.records, suite) == 4
    entries = import_suite(suite)
    fixed = ScriptedAdapter(always_right, version="2")  # a new version of the agent
    result = run(replay(open_scripted(fixed), CaseStore(tmp_path / "ci"), ProbeSettings(), cases=entries,
                        run_id="ci-replay"))
    verdicts = {c.case_id: c.verdict for c in result.comparisons}
    assert verdicts == {"weekdays-0": ReplayRecord.IMPROVED, "weekdays-1": ReplayRecord.IMPROVED,
                        "arithmetic-0": ReplayRecord.SAME, "arithmetic-1": ReplayRecord.SAME}
    assert result.stop_reason == "done" and result.run.finished and len(result.records) == 4


# --- shards, saturation, sequential savings, difficulty ---------------------------------


def test_shards_partition_the_cases(tmp_path: Path) -> None:
    proposals = arithmetic_cases(6) + weekday_cases(6)
    store = CaseStore(tmp_path)
    seen: dict[int, set[str]] = {}
    for index in (1, 2, 3):
        settings = replace(QUIET, shard=Shard(index, 3))
        result = run(probe(open_scripted(ScriptedAdapter(moody("weekdays"))), static_curriculum(proposals), settings,
                           store=store, run_id="sharded"))
        seen[index] = {r.id for r in result.records}
        assert all(shard_of(cid, 3) == index for cid in seen[index])
        assert result.candidates == 12  # every shard walks the whole curriculum
    assert set().union(*seen.values()) == {p.case.id for p in proposals}
    assert sum(len(s) for s in seen.values()) == 12
    assert {r.shard_index for r in store.runs()} == {1, 2, 3}


def test_saturation_stops_a_curriculum_of_easy_cases(tmp_path: Path) -> None:
    endless = EndlessCurriculum(lambda i: arithmetic_cases(1, start=i)[0])
    settings = replace(QUIET, batch_size=3, saturation_window=6, saturation_min_new=1, max_candidates=60)
    result = run(probe(open_scripted(ScriptedAdapter(always_right)), endless, settings, store=CaseStore(tmp_path)))
    assert result.stop_reason == "saturated" and result.candidates == 6 and endless.proposed == 6
    # a curriculum that keeps finding frontier cases runs on to its candidate cap
    moody_endless = EndlessCurriculum(lambda i: weekday_cases(1, start=i)[0])
    more = run(probe(open_scripted(ScriptedAdapter(moody("weekdays"))), moody_endless,
                     replace(settings, max_candidates=9), store=CaseStore(tmp_path / "b")))
    assert more.stop_reason == "max candidates" and more.candidates == 9


def test_sequential_sampling_uses_fewer_calls_than_fixed_k(tmp_path: Path) -> None:
    proposals = arithmetic_cases(10) + weekday_cases(2)
    fixed_adapter, seq_adapter = ScriptedAdapter(moody("weekdays")), ScriptedAdapter(moody("weekdays"))
    fixed = run(probe(open_scripted(fixed_adapter), static_curriculum(proposals), replace(QUIET, sequential=None),
                      store=CaseStore(tmp_path / "fixed")))
    seq = run(probe(open_scripted(seq_adapter), static_curriculum(proposals),
                    replace(QUIET, prior_refit_every=4, batch_size=4), store=CaseStore(tmp_path / "seq")))
    assert fixed_adapter.samples == 12 * 10
    # batch 1: four easy cases at the uninformed prior, 5 calls each; refit on (5,) x 4, then
    # an easy case stops after one round of 3; the weekday coins still need 7
    assert [seq.records[i].k for i in range(4)] == [5, 5, 5, 5]
    assert seq_adapter.samples == 4 * 5 + 6 * 3 + 2 * 7 == 52
    assert {r.id: r.case_class for r in seq.records} == {r.id: r.case_class for r in fixed.records}
    assert None not in (seq.prior, fixed.prior)
    assert seq.prior != DEFAULT_PRIOR and fixed.prior != DEFAULT_PRIOR  # both learn the population


def test_difficulty_prediction_skips_predicted_trivial_cases(tmp_path: Path) -> None:
    easy = [replace(p, predicted_pass_rate=1.0) for p in arithmetic_cases(3)]
    unsure = [replace(p, predicted_pass_rate=0.5) for p in weekday_cases(2)]
    settings = replace(QUIET, predict_difficulty=True, explore_rate=0.0)
    adapter = ScriptedAdapter(moody("weekdays"))
    result = run(probe(open_scripted(adapter), static_curriculum(easy + unsure), settings, store=CaseStore(tmp_path)))
    assert result.skipped == 3 and {r.id for r in result.records} == {"weekdays-0", "weekdays-1"}
    assert result.calibration is not None and result.calibration.n == 2
    assert result.calibration.brier == pytest.approx((0.5 - 4 / 7) ** 2)


def test_resume_refuses_another_configuration(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    target = open_scripted(ScriptedAdapter(always_right), budget=Budget(max_calls=3))
    first = run(probe(target, static_curriculum(arithmetic_cases(2)), QUIET, store=store, run_id="cfg"))
    assert first.stop_reason == "budget"
    with pytest.raises(StoreError, match="ran with config"):
        run(probe(open_scripted(ScriptedAdapter(always_right)), static_curriculum(arithmetic_cases(2)),
                  replace(QUIET, k=6), store=store, run_id="cfg", resume=True))


def test_a_fatal_target_error_propagates_and_keeps_what_was_recorded(tmp_path: Path) -> None:
    from frontier_qa.errors import TargetError

    def answer(c: Case, i: int) -> str:
        if c.id == "arithmetic-1":
            raise PermissionError("401: bad API key")  # classified FATAL by the Adapter default
        return always_right(c, i) or ""

    store = CaseStore(tmp_path)
    settings = replace(QUIET, max_concurrent_cases=1)
    with pytest.raises(TargetError, match="bad API key"):
        run(probe(open_scripted(ScriptedAdapter(answer)), static_curriculum(arithmetic_cases(3)), settings,
                  store=store, run_id="fatal"))
    assert store_ids(store, "fatal") == ["arithmetic-0"]
    assert [r.run_id for r in store.interrupted_runs()] == ["fatal"]


def test_replay_scope_all_compares_a_new_target_version_with_the_old(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    proposals = [Proposal(case(f"g{i}", f"Gold question number {i}: what is {i} squared?", reference=str(i * i),
                               reference_verified=True)) for i in range(3)]
    old = ScriptedAdapter(always_right, id="agent@1", version="1")
    run(probe(open_scripted(old), static_curriculum(proposals), QUIET, store=store, run_id="v1"))
    new = ScriptedAdapter(lambda c, i: "0" if c.id == "g2" else always_right(c, i), id="agent@2", version="2")
    own_only = run(replay(open_scripted(new), store, ProbeSettings(), run_id="v2-own"))
    assert own_only.comparisons == ()  # nothing recorded for agent@2 yet
    result = run(replay(open_scripted(new), store, ProbeSettings(replay_scope="all"), run_id="v2-all"))
    verdicts = {c.case_id: c.verdict for c in result.comparisons}
    assert verdicts == {"g0": ReplayRecord.SAME, "g1": ReplayRecord.SAME, "g2": ReplayRecord.REGRESSION}
    assert new.samples_for("g0")[0] == 0  # another target's indices do not push this one's forward


def test_a_python_agent_spec_probes_like_an_adapter(tmp_path: Path) -> None:
    from frontier_qa.runtime import open_target

    target = open_target(f"python:{REPO / 'tests' / 'factories.py'}:scripted_agent", cache=False)
    result = run(probe(target, static_curriculum(arithmetic_cases(2) + weekday_cases(2)), QUIET, store=CaseStore(tmp_path)))
    assert {r.id: r.case_class for r in result.records} == {
        "arithmetic-0": CaseClass.PASS, "arithmetic-1": CaseClass.PASS,
        "weekdays-0": CaseClass.FRONTIER, "weekdays-1": CaseClass.FRONTIER}
    assert result.records[0].target_id.startswith("python:") and result.records[0].target_id.endswith("scripted_agent")


def test_the_probe_scores_exactly_as_score_case() -> None:
    """CaseProber.score is score_case (the train modules call score_case directly)."""
    from frontier_qa.probing._case_prober import CaseProber
    from frontier_qa.probing._settings import ProbeSettings
    from frontier_qa.scoring._case_scoring import TOOL_CALLS_FORMAT, score_case
    from frontier_qa.target import Case as _Case
    from tests.scoring.test_case import GOLD as gold
    from tests.scoring.test_case import _tool_samples

    prober = CaseProber(ProbeSettings(k=5), target_id="scripted")
    samples = _tool_samples()
    case = _Case("weather", "Weather in Paris?", answer_format=TOOL_CALLS_FORMAT, reference=gold)
    assert run(prober.score(case, samples)) == run(score_case(case, samples))
