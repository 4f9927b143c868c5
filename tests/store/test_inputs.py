"""The content hash of a case's inputs: which field is in which part, what the engine adds, secrets.

The hash is stored with every record: a change to how it is computed would make every stored
case look edited, so the values of a known case are pinned here.
"""

from __future__ import annotations

import asyncio
from dataclasses import fields, replace
from typing import Any

import pytest

from frontier_qa.probing._verify import AGREES, SOLUTION_KEY, TRUSTED_KEY, check_printed
from frontier_qa.store import _inputs as inputs
from frontier_qa.store._inputs import (
    INPUT_HASH_KEY,
    PARTS,
    CaseInputs,
    InputHash,
    describe_change,
    recorded_hash,
    recorded_inputs,
    source_inputs,
    stamped,
)
from frontier_qa.target import Case

KNOWN = CaseInputs(
    prompt="What is 6 * 7?", system="Be brief.",
    tools=({"type": "function", "function": {"name": "calc", "parameters": {}}},),
    history=({"role": "assistant", "content": "Let"},), answer_format="boxed", reference="42", trusted=True,
    solution="print(6 * 7)", topic="arithmetic", metadata={"level": 2}, predicted_pass_rate=0.5,
)

OTHER: dict[str, Any] = {
    "prompt": "What is 6 * 8?", "system": None, "tools": (), "history": ({"role": "user", "content": "go"},),
    "answer_format": "final_answer", "reference": "43", "trusted": False, "solution": None, "topic": "general",
    "metadata": {"level": 3}, "predicted_pass_rate": 0.9, "expect": {"tools_used": ["calc"]},
}


def test_the_hash_of_a_known_case_is_the_committed_value() -> None:
    assert KNOWN.input_hash() == InputHash(asked="1105ab4dcf829a1e", judged="74d311d40355ce05",
                                           labels="c8e2c85067a67a60")


@pytest.mark.parametrize("name", [f.name for f in fields(CaseInputs)])
def test_each_field_moves_exactly_one_part(name: str) -> None:
    changed = KNOWN.input_hash().changed(replace(KNOWN, **{name: OTHER[name]}).input_hash())
    assert len(changed) == 1 and changed[0] in PARTS
    assert name in KNOWN.part(changed[0])
    want = {"prompt": "asked", "system": "asked", "tools": "asked", "history": "asked", "topic": "labels",
            "metadata": "labels", "predicted_pass_rate": "labels"}.get(name, "judged")
    assert changed == (want,)


def test_expectations_are_judged_inputs_that_leave_every_earlier_hash_as_it_was() -> None:
    from frontier_qa.target import Expectations

    source = Case(id="c", prompt="What is 6 * 7?", reference="42")
    plain = source_inputs(source)
    # no expect (or an empty one): the hash is the one recorded before expectations existed
    assert source_inputs(replace(source, expect=Expectations())).input_hash() == plain.input_hash()
    assert plain.input_hash() == replace(plain, expect=None).input_hash()
    expected = source_inputs(replace(source, expect=Expectations(tools_used=("calc",))))
    assert plain.input_hash().changed(expected.input_hash()) == ("judged",)
    assert describe_change(plain, expected) == "expect changed"
    assert expected.expect == {"tools_used": ["calc"], "tools_not_used": [], "tool_sequence": [], "order": "in_order",
                               "arguments": [], "max_steps": None}
    # where the cases file lies is not an input: a checkout that moves changes no hash
    moved = source_inputs(replace(source, metadata={"expect_base": "/elsewhere"}))
    assert moved.input_hash() == plain.input_hash()


def test_what_the_engine_adds_to_a_recorded_case_is_not_an_input() -> None:
    source = Case(id="c", prompt="What is 6 * 7?", reference="42", metadata={"level": 2, TRUSTED_KEY: True})
    recorded = replace(source, reference_verified=True, metadata={
        **source.metadata, "source": "file:cases.jsonl", SOLUTION_KEY: "print(6 * 7)",
        "verification": AGREES, "predicted_pass_rate": 0.5,
        "critic": {"score": 0.9, "reason": "ok"}, "band_posterior": {"inside": 0.1},
        "refreshed": {"change": "reference changed 43 → 42"},
    })
    want = source_inputs(source, solution="print(6 * 7)", predicted_pass_rate=0.5)
    assert recorded_inputs(recorded) == want and want.metadata == {"level": 2} and want.trusted
    assert recorded_hash(recorded) == want.input_hash()


def test_a_kept_hash_wins_over_the_recorded_case() -> None:
    case = Case(id="c", prompt="p", reference="43")
    kept = stamped(case, source_inputs(replace(case, reference="42")))
    assert kept.metadata[INPUT_HASH_KEY] == source_inputs(replace(case, reference="42")).input_hash().as_metadata()
    assert recorded_hash(kept) == source_inputs(replace(case, reference="42")).input_hash()
    broken = replace(case, metadata={INPUT_HASH_KEY: {"asked": 1}})
    assert recorded_hash(broken) == source_inputs(case).input_hash()  # not well formed: computed


def test_references_the_engine_replaced_are_read_as_the_source_wrote_them() -> None:
    judged = Case(id="c", prompt="p", reference="42", metadata={
        "judge": {"target": "j", "verdict": True, "text": "yes"}, "stated_reference": "43"})
    assert recorded_inputs(judged).reference == "43"
    filled = Case(id="c", prompt="p", reference="42",
                  metadata={"verification": "reference taken from the solution's output '42'"})
    assert recorded_inputs(filled).reference is None


def test_changes_are_described_with_short_values_and_long_names() -> None:
    new = replace(KNOWN, reference="43", prompt="What is 6 * 8?", topic="multiplication")
    assert describe_change(KNOWN, new) == (
        "prompt changed; reference changed 42 → 43; topic changed arithmetic → multiplication")
    assert describe_change(KNOWN, KNOWN) == "nothing changed"
    assert describe_change(KNOWN, KNOWN, ("judged",)) == "how answers are judged changed"


def test_a_secret_in_the_inputs_is_hashed_as_the_store_keeps_it_and_never_shown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-Zq8v1Lm4Rt7Yp2Wx9Nc3Hb6"
    monkeypatch.setenv("FQA_INPUTS_API_KEY", secret)
    plain = CaseInputs(prompt=f"Use key {secret}", reference=secret)
    kept = CaseInputs(prompt="Use key ${secret:FQA_INPUTS_API_KEY}", reference="${secret:FQA_INPUTS_API_KEY}")
    assert plain.input_hash() == kept.input_hash()
    said = describe_change(CaseInputs(prompt="p", reference="42"), plain)
    assert secret not in said and said.startswith("prompt changed; reference changed 42 → ")


def test_engine_keys_and_notes_are_the_engines_own() -> None:
    assert inputs.TRUSTED_KEY == TRUSTED_KEY and inputs.SOLUTION_KEY == SOLUTION_KEY
    filled = asyncio.run(check_printed(Case(id="c", prompt="p"), "42"))
    assert filled.reference == "42" and filled.reason.startswith(inputs.TAKEN_FROM_SOLUTION)
