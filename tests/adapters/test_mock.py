"""The test doubles users get: ``mock:`` target specs and :mod:`frontier_qa.testing`.

Everything runs through the real runtime, engine and CLI; only the target is scripted.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from frontier_qa.adapters import schemes
from frontier_qa.adapters._mock_adapter import pick, render
from frontier_qa.cli import main
from frontier_qa.errors import ConfigError
from frontier_qa.probing import ProbeSettings, probe
from frontier_qa.runtime import open_target
from frontier_qa.scoring._tool_calls import canonical_calls, tool_calls_answer
from frontier_qa.scoring.answers import extract_answer
from frontier_qa.store import CaseStore
from frontier_qa.store._records import CaseClass
from frontier_qa.target import Sampling
from frontier_qa.testing import ScriptedAdapter, case, moody, open_scripted, static_curriculum, words_embedder

SCRIPT = {
    "version": "2",
    "default": "$reference",
    "rules": [
        {"topic": "weekdays", "answers": {"$reference": 1, "Friday": 1}},
        {"id": "add-easy", "answer": "41"},
        {"contains": "capital", "answers": {"Canberra": 3, "Sydney": 2}},
        {"topic": "silence", "answer": "$none"},
    ],
}


def _answers(spec: str, c, k: int = 10, **options) -> list[str | None]:  # noqa: ANN001
    async def go() -> list[str | None]:
        target = open_target(spec, cache=False, **options)
        try:
            trajectories = await target.sample(c, k, Sampling(seed=0))
        finally:
            await target.aclose()
        return [extract_answer(t.text, c.answer_format) for t in trajectories]

    return asyncio.run(go())


def test_mock_is_a_registered_scheme_with_four_presets() -> None:
    assert "mock" in schemes()
    c = case("q", "What is 2 + 3?", reference="5")
    assert _answers("mock:right", c) == ["5"] * 10
    assert _answers("mock:wrong", c) == ["mock-wrong"] * 10
    assert _answers("mock:silent", c) == [None] * 10
    unsure = _answers("mock:unsure", c)
    assert sorted(set(unsure)) == ["5", "mock-wrong"] and 4 <= unsure.count("5") <= 6  # p̂ in the band


def test_a_script_answers_by_rule_and_weight(tmp_path: Path) -> None:
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(SCRIPT))
    spec = f"mock:{path}"
    assert _answers(spec, case("add-easy", "2 + 2?", reference="4")) == ["41"] * 10
    week = _answers(spec, case("w", "Monday plus 4 days?", topic="weekdays", truth="Friday"))
    assert week == ["Friday"] * 10  # the reference and the literal answer agree here
    week = _answers(spec, case("w2", "Monday plus 3 days?", topic="weekdays", truth="Thursday"), k=20)
    assert week.count("Thursday") == 10 and week.count("Friday") == 10
    capital = _answers(spec, case("c", "The capital of Australia?", answer_format="text"), k=10)
    assert capital.count("Canberra") == 6 and capital.count("Sydney") == 4
    assert _answers(spec, case("s", "Say nothing.", topic="silence", reference="x")) == [None] * 10
    assert _answers(spec, case("other", "1 + 1?", reference="2"), k=3) == ["2"] * 3


def test_inline_scripts_and_a_changed_script_changes_the_target_id(tmp_path: Path) -> None:
    c = case("add-easy", "2 + 2?", reference="4")
    assert _answers("mock:inline", c, k=2, script=SCRIPT) == ["41", "41"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"default": "7"}))
    first = open_target(f"mock:{path}", cache=False)
    path.write_text(json.dumps({"default": "8"}))
    second = open_target(f"mock:{path}", cache=False)
    assert first.id != second.id and first.id.startswith(f"mock:{path}@")


@pytest.mark.parametrize("answer_format", ["boxed", "auto", "text", "final_answer", "json:result.value"])
def test_each_answer_format_reads_back_as_the_scripted_answer(answer_format: str) -> None:
    for answer in ("42", "1/2", "The capital is Canberra."):
        assert extract_answer(render(answer, answer_format), answer_format) == answer
    if answer_format != "text":  # any open-ended text is an answer; $none says "I am not sure." there
        assert extract_answer(render(None, answer_format), answer_format) is None


def test_tool_call_cases_read_back_as_calls() -> None:
    gold = canonical_calls([{"name": "refund", "arguments": {"order_id": "A-17"}}])
    c = case("t", "Refund order A-17.", answer_format="json:calls", reference=gold)

    async def go():  # noqa: ANN202
        return await open_target("mock:right", cache=False).sample(c, 2, Sampling())

    assert [tool_calls_answer(t) for t in asyncio.run(go())] == [gold, gold]


@pytest.mark.parametrize(("script", "message"), [
    ({"rules": [{"topic": "a"}]}, "needs one of answer / answers"),
    ({"rules": [{"topic": "a", "answer": "1", "answers": {"1": 1}}]}, "needs one of answer / answers"),
    ({"rules": [{"topci": "a", "answer": "1"}]}, "unknown key"),
    ({"defaults": "1"}, "unknown key"),
    ({"default": {"1": -1}}, "weight"),
    ({"default": {"1": 0}}, "every weight is 0"),
    ({"default": ["a"]}, "is not an answer"),
    ({"rules": "topic: a"}, "rules must be a list"),
])
def test_a_bad_script_is_a_config_error(script: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        open_target("mock:inline", cache=False, script=script)
    assert err.value.hint


def test_a_missing_script_or_misused_option_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the script") as err:
        open_target(f"mock:{tmp_path / 'nope.yaml'}", cache=False)
    assert "right" in (err.value.hint or "")
    with pytest.raises(ConfigError, match="needs the target option 'script'"):
        open_target("mock:inline", cache=False)
    with pytest.raises(ConfigError, match="use mock:inline"):
        open_target("mock:right", cache=False, script={"default": "1"})


def test_a_probe_config_runs_offline_against_a_mock_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """What a user does before spending money: the whole CLI probe, report and gate, scripted."""
    monkeypatch.chdir(tmp_path)
    Path("target.yaml").write_text(yaml.safe_dump(SCRIPT))
    rows = [{"id": "w1", "prompt": "Monday plus 3 days?", "topic": "weekdays", "answer": "Thursday"},
            {"id": "add-easy", "prompt": "What is 2 + 2?", "topic": "arithmetic", "answer": "4"},
            {"id": "add-2", "prompt": "What is 3 + 3?", "topic": "arithmetic", "answer": "6"}]
    Path("cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(["probe", "--target", "mock:target.yaml", "--curriculum", "cases.jsonl", "--k", "6",
                 "--progress", "off", "--max-failures", "5"])
    out = capsys.readouterr().out
    assert code == 0, out
    classes = {r["case"]["id"]: r["case_class"] for r in map(json.loads, Path("frontier-qa-report/cases.jsonl").open())}
    # w1: Thursday/Friday in equal shares (p̂ 0.5); add-easy: a stable wrong 41 against an unverified
    # reference; add-2: the reference every time
    assert classes == {"w1": "frontier", "add-easy": "suspect", "add-2": "pass"}
    assert "gate: passed" in out


def test_the_python_double_probes_through_the_real_engine(tmp_path: Path) -> None:
    """The example of frontier_qa.testing's docstring, run."""
    target = open_scripted(ScriptedAdapter(moody("weekdays")))
    cases = static_curriculum([case("w1", "Monday + 3 days?", topic="weekdays", truth="Thursday"),
                               case("a1", "2 + 2?", topic="arithmetic", truth="4")])
    result = asyncio.run(probe(target, cases, ProbeSettings(k=6), store=CaseStore(tmp_path)))
    assert {r.id: r.case_class for r in result.records} == {"w1": CaseClass.FRONTIER, "a1": CaseClass.PASS}
    assert {r.id: r.p_hat for r in result.records}["w1"] == pytest.approx(0.5)


def test_pick_follows_the_weights_over_the_first_k_samples() -> None:
    for weights in ({"a": 1, "b": 1}, {"a": 3, "b": 1}, {"a": 1, "b": 1, "c": 2}):
        total = sum(weights.values())
        for k in (8, 20, 50):
            drawn = [pick(weights, "case-x", i) for i in range(k)]
            for answer, weight in weights.items():
                assert abs(drawn.count(answer) - k * weight / total) <= 1.5, (weights, k, answer)


def test_words_embedder_clusters_by_shared_words() -> None:
    import numpy as np

    vectors = words_embedder().encode(["The capital is Canberra.", "the capital is canberra", "Sydney."])
    assert float(np.dot(vectors[0], vectors[1])) == pytest.approx(1.0)
    assert float(np.dot(vectors[0], vectors[2])) == pytest.approx(0.0)
