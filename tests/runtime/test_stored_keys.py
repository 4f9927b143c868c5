"""Cache keys and case ids are stored on disk: the values of known inputs are pinned here.

A change to how :class:`~frontier_qa.target.Sampling` or :class:`~frontier_qa.target.Case`
is defined (a field added, renamed, reordered, or serialised differently) must not move
these hashes, or every user's sample cache and case store would silently go cold.
"""

from __future__ import annotations

import json

from frontier_qa.store._case_ids import case_id_for
from frontier_qa.target import Case, Sampling, cache_key

CASE = Case(id="c1", prompt="What is 2 + 2?", system="Be brief.", topic="arith",
            tools=({"type": "function", "function": {"name": "calc", "parameters": {}}},),
            metadata={"a": 1}, history=({"role": "assistant", "content": "Let"},))
SAMPLING = Sampling(temperature=0.7, top_p=0.9, max_tokens=64, stop=("</s>",), seed=3)


def test_cache_keys_of_known_samples_are_the_committed_values() -> None:
    assert cache_key("mock:echo", CASE.messages, SAMPLING, 2, extra={"version": "v1"}) == (
        "182103b6edee969c4c594826d9ddc0e5613622a354ac11e57a352bb8f6a944c8")
    assert cache_key("mock:echo", Case(id="x", prompt="hi").messages, Sampling(), 0) == (
        "5497c0a922e2e09d9ff04ab5b96964765dede9bffe43ce4ccd5a3aa981ab9e03")


def test_sampling_serialises_in_its_stored_shape_and_order() -> None:
    assert json.dumps(SAMPLING.as_dict()) == (
        '{"temperature": 0.7, "top_p": 0.9, "max_tokens": 64, "stop": ["</s>"], "seed": 3}')
    assert case_id_for(CASE) == "what-is-2-2-2d9df4"


def test_a_stored_case_keeps_the_0_1_json_shape_and_order() -> None:
    from dataclasses import replace

    import pytest
    from pydantic import ValidationError

    from frontier_qa.store._records import SuiteCase

    dumped = json.loads(SuiteCase(case=replace(CASE, reference_verified=True)).model_dump_json())["case"]
    assert list(dumped) == ["id", "prompt", "system", "topic", "answer_format", "tools", "reference",
                            "reference_verified", "metadata", "history"]
    assert dumped["tools"] == [{"type": "function", "function": {"name": "calc", "parameters": {}}}]
    assert dumped["history"] == [{"role": "assistant", "content": "Let"}] and dumped["reference_verified"] is True
    assert SuiteCase.model_validate({"case": dumped}).case == replace(CASE, reference_verified=True)
    with pytest.raises(ValidationError, match="non-empty id"):
        SuiteCase.model_validate({"case": {"id": "", "prompt": "p"}})
