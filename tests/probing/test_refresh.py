"""Stored cases against an edited cases file: refreshed without calls, probed again, or named.

Records are made by the real engine (a scripted target in the real runtime, a real store in
``tmp_path``, the real sandbox for solution programs); the cases file is rewritten between runs
as a person would edit it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.curricula._file import FileCurriculum
from frontier_qa.probing._engine import ProbeResult, ProbeSettings, probe, replay
from frontier_qa.probing._reconcile import Reconciliation, reconcile, refresh_store, write_refreshed
from frontier_qa.probing._refresh import Action
from frontier_qa.probing._sequential import SequentialConfig
from frontier_qa.runtime import Budget
from frontier_qa.runtime.sandbox import SandboxResult
from frontier_qa.store._baselines import from_record, resolve
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import RegressionVerdict
from frontier_qa.store._inputs import INPUT_HASH_KEY, source_inputs
from frontier_qa.store._records import CaseClass, CaseRecord
from frontier_qa.store._views import case_view
from frontier_qa.testing import ScriptedAdapter, always, open_scripted, static_curriculum
from tests.factories import probed_record, run

FIXED = ProbeSettings(replay_first=False, k=6, sequential=None)  # six samples a case, no sequential policy
SEQUENTIAL = ProbeSettings(replay_first=False, k=10, sequential=SequentialConfig(k_max=10, rounds=(3, 2)))
MUL = {"id": "mul-1", "prompt": "What is 6 * 7?", "reference": "43", "reference_verified": True,
       "topic": "arithmetic"}
ADD = {"id": "add-1", "prompt": "What is 40 + 2?", "reference": "42", "reference_verified": True,
       "topic": "arithmetic"}


def write_cases(path: Path, *rows: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def probe_file(path: Path, store: CaseStore, adapter: ScriptedAdapter, settings: ProbeSettings = FIXED
               ) -> ProbeResult:
    return run(probe(open_scripted(adapter), FileCurriculum(path), settings, store=store))


def refresh(path: Path, store: CaseStore, settings: ProbeSettings = FIXED, **kw: Any) -> Reconciliation:
    return run(refresh_store(store, FileCurriculum(path).proposals, settings, target_id="scripted:test", **kw))


def records_of(store: CaseStore, case_id: str) -> list[CaseRecord]:
    return sorted((r for r in store.case_records() if r.id == case_id), key=lambda r: r.finished_at)


@pytest.fixture
def fixed_reference(tmp_path: Path) -> tuple[Path, CaseStore, ScriptedAdapter, ProbeResult]:
    """An agent that answers 42, probed on a case whose verified reference says 43: a failure."""
    cases = write_cases(tmp_path / "cases.jsonl", MUL)
    store = CaseStore(tmp_path / ".frontier-qa")
    agent = ScriptedAdapter(always("42"))
    first = probe_file(cases, store, agent)
    assert first.records[0].case_class is CaseClass.FAILURE
    return cases, store, agent, first


# --- a fixed reference: judged again, no call --------------------------------------------


def test_fixed_reference_turns_a_failure_into_a_pass_without_calling_the_agent(fixed_reference: Any) -> None:
    cases, store, agent, first = fixed_reference
    calls = len(agent.calls)
    write_cases(cases, {**MUL, "reference": "42"})

    found = refresh(cases, store)

    assert len(agent.calls) == calls == 6  # the six samples of the first probe, not one more
    assert [r.case_id for r in found.refreshed] == ["mul-1"] and not found.reprobe and not found.removed
    new = found.refreshed[0].record
    assert new is not None and new.case_class is CaseClass.PASS
    assert new.reason is not None and new.reason.startswith(
        "reference changed 43 → 42: re-judged from the 6 stored samples without a call; stable majority matches")
    assert found.messages() == ["mul-1: reference changed 43 → 42: re-judged from the 6 stored samples "
                                "without a call (failure → pass)"]
    old = first.records[0]
    assert new.samples == old.samples and new.p_hat == old.p_hat and new.majority == "42"
    assert new.case.reference == "42" and new.case.reference_verified and new.majority_correct is True
    assert new.cost.calls == 0 and new.cost.usd is None
    # the old record stays as history; the refreshed one is the latest
    assert [r.case_class for r in records_of(store, "mul-1")] == [CaseClass.FAILURE, CaseClass.PASS]
    assert store.latest()["mul-1"].run_id == found.run_id
    written = store.run(found.run_id)
    assert written.finished and written.target_id == "scripted:test" and written.totals.cost.calls == 0
    assert written.totals.by_class == {CaseClass.PASS: 1}


def test_the_band_decision_the_record_kept_stands(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", MUL)
    store = CaseStore(tmp_path / "s")
    old = probe_file(cases, store, ScriptedAdapter(always("42")), SEQUENTIAL).records[0]
    write_cases(cases, {**MUL, "reference": "42"})

    # judged again under fixed-k settings: the sequential decision the record kept is not made again
    new = refresh(cases, store, FIXED).refreshed[0].record

    assert new is not None and new.case_class is CaseClass.PASS and new.k == old.k
    evidence = (old.reason or "")[(old.reason or "").index("p̂ = "):].rstrip(")")
    assert evidence in (new.reason or "") and "fixed k" not in (new.reason or "")
    assert new.case.metadata["band_posterior"] == old.case.metadata["band_posterior"]


def test_the_refreshed_observation_is_the_baseline(fixed_reference: Any) -> None:
    cases, store, agent, first = fixed_reference
    write_cases(cases, {**MUL, "reference": "42"})
    found = refresh(cases, store)

    baseline = resolve(store)["mul-1"]
    assert baseline.run_ids == [found.run_id] and baseline.case_class is CaseClass.PASS
    assert (baseline.anchor, baseline.anchor_kind, baseline.successes, baseline.k) == ("42", "reference", 6, 6)
    # the stale one was the first observation, held to 43 with no success
    assert from_record(first.records[0]).successes == 0

    replayed = run(replay(open_scripted(agent), store, FIXED))
    (comparison,) = replayed.comparisons
    assert comparison.verdict is RegressionVerdict.SAME and comparison.baseline is not None
    assert comparison.baseline.run_ids == [found.run_id]
    assert replayed.records[0].case.reference == "42" and replayed.records[0].case_class is CaseClass.PASS


def test_a_baseline_accepted_before_the_change_no_longer_holds(fixed_reference: Any) -> None:
    cases, store, _, first = fixed_reference
    stale = from_record(first.records[0], source="accept")
    store.append_baselines([stale])
    assert resolve(store)["mul-1"] == stale
    write_cases(cases, {**MUL, "reference": "42"})
    found = refresh(cases, store)

    assert resolve(store)["mul-1"].run_ids == [found.run_id]
    view = case_view(store, "mul-1")
    assert view.baseline is not None and view.baseline.run_ids == [found.run_id]
    assert view.accepted == (stale,)  # kept as history


def test_reconciling_twice_reports_the_change_once(fixed_reference: Any) -> None:
    cases, store, _, _ = fixed_reference
    write_cases(cases, {**MUL, "reference": "42"})
    assert len(refresh(cases, store).messages()) == 1
    lines = len(store.case_records())

    again = refresh(cases, store)

    assert again.unchanged == ("mul-1",) and not again.changed and again.messages() == []
    assert len(store.case_records()) == lines


# --- what the agent sees changed ---------------------------------------------------------


def test_a_changed_prompt_under_the_same_id_is_probed_again_as_a_new_case(fixed_reference: Any) -> None:
    cases, store, agent, first = fixed_reference
    write_cases(cases, {**MUL, "prompt": "What is 6 * 8?", "reference": "48"})

    found = refresh(cases, store)

    assert not found.refreshed and [r.case_id for r in found.reprobe] == ["mul-1"]
    (again,) = found.reprobe
    assert again.action is Action.REPROBE and again.record is None
    assert again.message.startswith("prompt changed; reference changed 43 → 48: the stored samples answer another "
                                    "question; to be probed again as a new case")
    assert store.latest()["mul-1"].run_id == first.run_id  # nothing written for it
    calls = len(agent.calls)
    probed = run(probe(open_scripted(agent), static_curriculum([again.proposal]), FIXED, store=store))
    assert len(agent.calls) > calls
    assert resolve(store)["mul-1"].run_ids == [probed.run_id]  # the old observation is no baseline for it
    assert refresh(cases, store).unchanged == ("mul-1",)


def test_a_derived_id_follows_the_prompt_the_old_case_is_named_removed(tmp_path: Path) -> None:
    row = {k: v for k, v in MUL.items() if k != "id"}
    cases = write_cases(tmp_path / "cases.jsonl", row)
    store = CaseStore(tmp_path / "s")
    old_id = probe_file(cases, store, ScriptedAdapter(always("42"))).records[0].id
    write_cases(cases, {**row, "prompt": "What is 6 * 8?"})

    found = refresh(cases, store)

    assert [r.id for r in found.removed] == [old_id] and len(found.new) == 1 and found.new[0].case.id != old_id


def test_a_changed_answer_format_reads_the_stored_texts_again(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", {**MUL, "reference": "42", "answer_format": "json:answer"})
    store = CaseStore(tmp_path / "s")
    agent = ScriptedAdapter(always("42"))
    probe_file(cases, store, agent)
    write_cases(cases, {**MUL, "reference": "42", "answer_format": "auto"})  # JSON answers still read

    (same,) = refresh(cases, store).refreshed
    kept = same.record
    assert same.message.endswith("re-judged from the 6 stored samples without a call (still pass)")
    assert kept is not None and kept.case_class is CaseClass.PASS and [s.answer for s in kept.samples] == ["42"] * 6
    assert kept.reason is not None and kept.reason.startswith("answer_format changed json:answer → auto: re-judged")

    write_cases(cases, {**MUL, "reference": "42", "answer_format": "boxed"})  # no box in '{"answer": "42"}'
    lost = refresh(cases, store).refreshed[0].record
    assert lost is not None and lost.case_class is CaseClass.UNRESOLVED and lost.n_unparseable == 6
    assert "could not judge: the agent's answers are not in format 'boxed': 6 of 6 gave none" in (lost.reason or "")
    assert len(agent.calls) == 6


def test_a_changed_answer_format_with_cut_texts_is_probed_again(tmp_path: Path) -> None:
    short = ProbeSettings(replay_first=False, k=6, sequential=None, max_text_chars=8)
    cases = write_cases(tmp_path / "cases.jsonl", {**MUL, "reference": "42"})
    store = CaseStore(tmp_path / "s")
    probe_file(cases, store, ScriptedAdapter(always("42")), short)
    write_cases(cases, {**MUL, "reference": "42", "answer_format": "final_answer"})

    (again,) = refresh(cases, store, short).reprobe
    assert "6 of the 6 stored texts are cut" in again.message


# --- nothing, or only labels, changed ----------------------------------------------------


def test_an_unchanged_file_reports_nothing_and_writes_nothing(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", MUL, ADD)
    store = CaseStore(tmp_path / "s")
    probe_file(cases, store, ScriptedAdapter(always("42")))
    lines = len(store.case_records())

    found = refresh(cases, store)

    assert sorted(found.unchanged) == ["add-1", "mul-1"] and not found.changed and not found.new
    assert found.messages() == [] and write_refreshed(store, found) is None
    assert len(store.case_records()) == lines


def test_a_case_removed_from_the_file_is_named_and_others_are_not(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", MUL, ADD)
    store = CaseStore(tmp_path / "s")
    agent = ScriptedAdapter(always("42"))
    probe_file(cases, store, agent)
    other = write_cases(tmp_path / "other.jsonl", {**ADD, "id": "elsewhere"})
    probe_file(other, store, agent)  # another file's case in the same store: not this file's to remove
    write_cases(cases, ADD)

    found = refresh(cases, store)

    assert [r.id for r in found.removed] == ["mul-1"] and found.unchanged == ("add-1",)
    assert found.messages() == ["1 stored case(s) removed from cases.jsonl: not replayed (mul-1)"]


def test_a_new_topic_is_recorded_and_keeps_class_and_baseline(fixed_reference: Any) -> None:
    cases, store, agent, first = fixed_reference
    write_cases(cases, {**MUL, "topic": "multiplication", "metadata": {"level": 2}})

    (changed,) = refresh(cases, store).refreshed

    new = changed.record
    assert new is not None and new.case_class is CaseClass.FAILURE and new.topic == "multiplication"
    assert new.case.metadata["level"] == 2 and new.case.reference == "43"
    assert changed.message == ("topic changed arithmetic → multiplication; metadata changed: "
                               "nothing to judge again, class kept")
    assert new.reason is not None and new.reason.endswith(first.records[0].reason or "-")
    assert resolve(store)["mul-1"].run_ids == [first.run_id]  # labels do not move the baseline
    assert len(agent.calls) == 6


def test_a_case_cut_short_by_the_budget_stays_unresolved_under_a_fixed_reference(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", MUL)
    store = CaseStore(tmp_path / "s")
    agent = ScriptedAdapter(lambda case, i: "42" if i % 3 else "41")  # 41, 42, 42: undecided after 3
    cut = run(probe(open_scripted(agent, budget=Budget(max_calls=3)), FileCurriculum(cases), SEQUENTIAL,
                    store=store)).records[0]
    assert cut.case_class is CaseClass.UNRESOLVED and cut.majority_correct is False and cut.k == 3
    write_cases(cases, {**MUL, "reference": "42"})

    (changed,) = refresh(cases, store, SEQUENTIAL).refreshed

    new = changed.record
    assert new is not None and new.case_class is CaseClass.UNRESOLVED and new.majority_correct is True
    assert new.reason == f"reference changed 43 → 42: re-judged from the 3 stored samples without a call; {cut.reason}"
    assert changed.message.endswith("(still unresolved)") and len(agent.calls) == 3


def test_a_judges_word_on_the_majority_stands_without_asking_it_again(tmp_path: Path) -> None:
    row = {"id": "mul-1", "prompt": "What is 6 * 7?", "reference": "43"}  # unverified: the judge is asked
    cases = write_cases(tmp_path / "cases.jsonl", row)
    store = CaseStore(tmp_path / "s")
    judge = ScriptedAdapter(always("Verdict: yes"), id="scripted:judge")
    first = run(probe(open_scripted(ScriptedAdapter(always("42"))), FileCurriculum(cases), FIXED, store=store,
                      judge=open_scripted(judge))).records[0]
    assert first.case_class is CaseClass.PASS and first.case.metadata["stated_reference"] == "43"
    asked = len(judge.calls)
    write_cases(cases, {**row, "reference": "42"})

    (changed,) = refresh(cases, store).refreshed

    assert changed.change == "reference changed 43 → 42" and len(judge.calls) == asked == 1
    new = changed.record
    assert new is not None and new.case_class is CaseClass.PASS and new.case.reference_verified
    assert new.case.metadata["judge"]["verdict"] is True and "stated_reference" not in new.case.metadata
    assert refresh(cases, store).unchanged == ("mul-1",)


# --- references checked by a solution program --------------------------------------------


class Refusing:
    """A sandbox that must not be used (the solution's output is in the record)."""

    async def arun(self, code: str, *, timeout_s: float | None = None) -> SandboxResult:
        raise AssertionError("the unchanged solution was run again")


def test_a_solution_checked_reference_is_checked_again_from_what_the_solution_printed(tmp_path: Path) -> None:
    row = {"id": "mul-1", "prompt": "What is 6 * 7?", "reference": "43", "solution": "print(6 * 7)"}
    cases = write_cases(tmp_path / "cases.jsonl", row)
    store = CaseStore(tmp_path / "s")
    first = probe_file(cases, store, ScriptedAdapter(always("42"))).records[0]
    assert first.case_class is CaseClass.SUSPECT and not first.case.reference_verified  # the program printed 42
    write_cases(cases, {**row, "reference": "42"})

    new = refresh(cases, store, sandbox=Refusing()).refreshed[0].record

    assert new is not None and new.case_class is CaseClass.PASS and new.case.reference_verified
    assert new.case.metadata["verification"] == "solution output agrees with the reference"


def test_a_changed_solution_runs_in_the_sandbox(tmp_path: Path) -> None:
    row = {"id": "mul-1", "prompt": "What is 6 * 7?", "reference": "42", "solution": "print(6 * 7)"}
    cases = write_cases(tmp_path / "cases.jsonl", row)
    store = CaseStore(tmp_path / "s")
    assert probe_file(cases, store, ScriptedAdapter(always("42"))).records[0].case_class is CaseClass.PASS
    write_cases(cases, {**row, "solution": "print(6 * 7 + 1)"})  # now the program disagrees with 42

    new = refresh(cases, store).refreshed[0].record

    assert new is not None and not new.case.reference_verified and new.case_class is CaseClass.PASS
    assert new.case.metadata["solution_output"] == "43"
    assert "solution changed" in (new.reason or "")


# --- records: the hash the engine keeps, and stores written before it ----------------------


def test_the_engine_records_the_hash_of_the_inputs_and_a_replay_keeps_it(fixed_reference: Any) -> None:
    cases, store, agent, first = fixed_reference
    (proposal,) = FileCurriculum(cases).proposals
    want = source_inputs(proposal.case, solution=proposal.solution).input_hash().as_metadata()
    assert first.records[0].case.metadata[INPUT_HASH_KEY] == want
    replayed = run(replay(open_scripted(agent), store, FIXED))
    assert replayed.records[0].case.metadata[INPUT_HASH_KEY] == want


def test_a_record_written_without_a_hash_compares_by_its_case(tmp_path: Path) -> None:
    legacy = probed_record("add-1", answers=("42",) * 4, prompt=ADD["prompt"], topic="arithmetic", reference="42")
    assert INPUT_HASH_KEY not in legacy.case.metadata
    cases = write_cases(tmp_path / "cases.jsonl", {k: v for k, v in ADD.items() if k != "reference_verified"})

    same = run(reconcile([legacy], FileCurriculum(cases).proposals, FIXED))
    assert same.unchanged == ("add-1",)

    write_cases(cases, {**ADD, "reference": "41", "reference_verified": False})
    (changed,) = run(reconcile([legacy], FileCurriculum(cases).proposals, FIXED)).refreshed
    assert changed.change == "reference changed 42 → 41"
    assert changed.record is not None and changed.record.case_class is CaseClass.SUSPECT
