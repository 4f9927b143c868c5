"""Validation before sampling: format, Tool-R0 tool-call statics, near-duplicates, the critic seam."""

from __future__ import annotations

import asyncio

import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._validation import (
    TaskCritique,
    ValidationResult,
    Validator,
    bleu_distance,
    check_format,
    check_tool_calls,
    grounded,
    normalize_call,
    tool_menu,
)
from frontier_qa.target import Case

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "alerts": {"type": "boolean"},
            },
            "required": ["city", "days"],
        },
    },
}
ASK = "What will the weather be in Porto over the next 3 days, in celsius?"


def tool_task(*calls: object, prompt: str = ASK, tools: tuple = (WEATHER,)) -> Proposal:
    return Proposal(Case(id="t", prompt=prompt, tools=tools), gold_calls=tuple(calls))  # type: ignore[arg-type]


def call(**args: object) -> dict:
    return {"name": "get_weather", "arguments": args}


def test_format_check_names_what_is_wrong() -> None:
    ok = Proposal(Case(id="a", prompt="What is 2 + 2?", reference="4"))
    assert check_format(ok) is None
    assert check_format(Proposal(Case(id="", prompt="x"))) == "the case has no id"
    assert check_format(Proposal(Case(id="a", prompt=" \n"))) == "the prompt is empty"
    xml = check_format(Proposal(Case(id="a", prompt="x", answer_format="xml")))
    assert "unknown answer format 'xml'" in (xml or "")
    assert "empty JSON field path" in (check_format(Proposal(Case(id="a", prompt="x", answer_format="json:"))) or "")
    assert "blank" in (check_format(Proposal(Case(id="a", prompt="x", reference="  "))) or "")
    assert check_format(Proposal(Case(id="a", prompt="x", answer_format="json:result.value"))) is None


def test_tool_menu_and_call_normalisation() -> None:
    flat = {"name": "add", "parameters": {"properties": {"a": {"type": "number"}}}}
    assert set(tool_menu([WEATHER, flat])) == {"get_weather", "add"}
    with pytest.raises(ConfigError, match="tool 0 has no name"):
        tool_menu([{"parameters": {}}])
    assert normalize_call({"name": "add", "arguments": '{"a": 1}'}) == ("add", {"a": 1})
    assert normalize_call({"function": {"name": "add", "arguments": {"a": 2}}}) == ("add", {"a": 2})
    assert normalize_call({"name": "add", "a": 3}) == ("add", {"a": 3})  # Tool-R0's flat fallback
    assert normalize_call('{"name": "add", "arguments": {}}') == ("add", {})
    assert normalize_call({"name": "add", "arguments": "not json"}) == ("add", None)
    assert normalize_call("nope") == (None, None)


def test_tool_r0_static_checks() -> None:
    assert check_tool_calls(tool_task(call(city="Porto", days=3, unit="celsius"))) is None
    assert check_tool_calls(Proposal(Case(id="plain", prompt="2 + 2?"))) is None  # not a tool task
    reasons = {
        "menu": check_tool_calls(tool_task({"name": "get_news", "arguments": {}})),
        "required": check_tool_calls(tool_task(call(city="Porto"))),
        "type": check_tool_calls(tool_task(call(city="Porto", days="3"))),
        "enum": check_tool_calls(tool_task(call(city="Porto", days=3, unit="kelvin"), prompt=ASK + " kelvin")),
        "grounded": check_tool_calls(tool_task(call(city="Lisbon", days=3))),
        "number": check_tool_calls(tool_task(call(city="Porto", days=30))),
        "undeclared": check_tool_calls(tool_task(call(city="Porto", days=3, hourly=True))),
        "no tools": check_tool_calls(tool_task(call(city="Porto", days=3), tools=())),
        "no name": check_tool_calls(tool_task({"arguments": {"city": "Porto"}})),
    }
    assert "not on the menu (get_weather)" in reasons["menu"]
    assert "misses required argument(s) days" in reasons["required"]
    assert "does not match the declared type 'integer'" in reasons["type"]
    assert "unit='kelvin'" in reasons["enum"]
    assert "'Lisbon' of 'city' does not appear in the question" in reasons["grounded"]
    assert "30" in reasons["number"]  # 30 is not "3"
    assert "'hourly', which the tool does not declare" in reasons["undeclared"]
    assert reasons["no tools"] == "the task has gold calls but offers no tools"
    assert reasons["no name"] == "gold call 1 has no tool name"
    # booleans are trivial and need no grounding
    assert check_tool_calls(tool_task(call(city="Porto", days=3, alerts=False))) is None


def test_grounding_is_whole_word_and_case_insensitive() -> None:
    text = "Send 3.5 kg to São Paulo on 2024-05-01 for ACME Corp."
    assert grounded("são paulo", text) and grounded("ACME", text) and grounded(3.5, text)
    assert grounded("2024-05-01", text) and grounded(["ACME", 3.5], text) and grounded({"x": None}, text)
    assert not grounded("Paul", text)  # part of a word
    assert not grounded(3, text) and not grounded(5, text)  # digits inside 3.5
    assert grounded(3.0, "wait 3 days") and grounded(True, "") and not grounded("Rio", text)


def test_bleu_distance_matches_the_reference_settings() -> None:
    assert bleu_distance("a b c d e", "a b c d e") == 0.0
    assert bleu_distance("", "a b") == 1.0
    # hand check: 5 tokens vs 5, one substitution at the end: p1 = 4/5, p2 = 3/4, p3 = 2/3, p4 = 1/2
    expected = 1 - (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25
    assert bleu_distance("the cat sat on mats", "the cat sat on rugs") == pytest.approx(expected)


def test_near_duplicates_against_the_batch_and_recent_cases() -> None:
    base = "Ana has 17 apples and buys 25 more at the market today. How many apples now?"
    proposals = [
        Proposal(Case(id="p1", prompt=base)),
        Proposal(Case(id="p2", prompt=base.replace("today", "tonight"))),  # near-duplicate of p1
        Proposal(Case(id="p3", prompt="Which weekday follows a Friday in the Gregorian calendar?")),
        Proposal(Case(id="p4", prompt="Which weekday follows a Friday in the Gregorian calendar today?")),
    ]
    seen = ["Which weekday follows a Friday in the Gregorian calendar?"]
    results = Validator().check(proposals, seen)
    assert [(r.proposal.case.id, r.ok) for r in results] == [("p1", True), ("p2", False), ("p3", False), ("p4", False)]
    assert "near-duplicate of this batch" in (results[1].reason or "")
    assert "near-duplicate of a recent case" in (results[2].reason or "")
    # switched off, or a stricter threshold, lets them through
    assert all(r.ok for r in Validator(dedupe_threshold=None).check(proposals, seen))
    assert sum(r.ok for r in Validator(dedupe_threshold=0.05).check(proposals, seen)) == 3
    with pytest.raises(ConfigError, match="dedupe_threshold"):
        Validator(dedupe_threshold=1.5)


MOON = "What day of the week was 20 July 1969?"
PI_DAY = "What day of the week was 14 March 1879?"


def test_a_case_a_person_wrote_is_removed_only_when_identical(tmp_path) -> None:
    from frontier_qa.config import load_config
    from frontier_qa.config._schema import ProbeConfig
    from frontier_qa.curricula import FileCurriculum

    assert bleu_distance(MOON, PI_DAY) < 0.5  # different questions, yet near-duplicates by BLEU
    cases = tmp_path / "cases.jsonl"
    rows = [{"id": "moon", "prompt": MOON, "reference": "Sunday"}, {"id": "pi", "prompt": PI_DAY, "reference": "Friday"},
            {"id": "moon-again", "prompt": "What day of the week  was 20 July 1969?", "reference": "Sunday"}]
    cases.write_text("\n".join(__import__("json").dumps(r) for r in rows))
    written = asyncio.run(FileCurriculum(str(cases)).propose(3))
    assert all(p.written for p in written)
    results = Validator().check(written)
    assert [(r.proposal.case.id, r.ok) for r in results] == [("moon", True), ("pi", True), ("moon-again", False)]
    assert results[2].reason == f"identical to a prompt of this batch: {MOON}"
    # the same prompts generated by a curriculum are near-duplicates, and the reason says so
    generated = Validator().check([Proposal(Case(id="g1", prompt=MOON)), Proposal(Case(id="g2", prompt=PI_DAY))])
    assert [r.ok for r in generated] == [True, False]
    assert (generated[1].reason or "").startswith("near-duplicate of this batch (BLEU distance 0.")
    # 0 and null both turn near-duplicate removal off (configs/example.yaml: null is off)
    assert all(r.ok for r in Validator(dedupe_threshold=0).check([g.proposal for g in generated]))
    assert load_config(None, []).validation.dedupe_threshold == 0.5
    for off in (0, None):
        from frontier_qa.config import Override

        config = load_config(None, [Override("validation.dedupe_threshold", off, "--set")])
        assert isinstance(config, ProbeConfig) and config.validation.dedupe_threshold is None


class ScriptedCritic:
    """Passes proposals whose prompt ends with '?' (a real object with the Critic method)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def judge(self, proposal: Proposal) -> TaskCritique:
        self.asked.append(proposal.case.id)
        await asyncio.sleep(0)
        ok = proposal.case.prompt.endswith("?")
        return TaskCritique(0.9 if ok else 0.2, ok, "a question" if ok else "not a question")


def test_critic_is_asked_only_about_proposals_that_passed_the_rest() -> None:
    critic = ScriptedCritic()
    proposals = [
        Proposal(Case(id="q", prompt="What is the capital of Portugal?")),
        Proposal(Case(id="s", prompt="Describe the tides of the North Sea in two lines.")),
        Proposal(Case(id="bad", prompt="", reference="x")),
    ]
    results = asyncio.run(Validator(critic=critic).validate(proposals))
    assert critic.asked == ["q", "s"]
    assert [r.ok for r in results] == [True, False, False]
    assert results[0].critic == TaskCritique(0.9, True, "a question")
    assert results[1].reason == "critic rejected it (score 0.20): not a question"
    proposal, ok, reason = results[2]  # unpacks as (proposal, ok, reason)
    assert proposal.case.id == "bad" and not ok and reason == "the prompt is empty"
    assert isinstance(results[0], ValidationResult)


def test_custom_checks_run_in_order_and_the_first_failure_wins() -> None:
    def no_sevens(p: Proposal) -> str | None:
        return "contains a 7" if "7" in p.case.prompt else None

    validator = Validator(checks=[no_sevens, check_format], dedupe_threshold=None)
    results = validator.check([Proposal(Case(id="", prompt="7 + 1?")), Proposal(Case(id="", prompt="1 + 1?"))])
    assert [r.reason for r in results] == ["contains a 7", "the case has no id"]
