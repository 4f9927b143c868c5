"""Tool calls as answers: relaxed reading, call normalisation, the canonical form, answers from trajectories."""

from __future__ import annotations

import pytest

from frontier_qa.scoring._tool_calls import canonical_calls, load_relaxed, normalize_calls, tool_calls_answer
from frontier_qa.target import ToolCall, Trajectory


def test_relaxed_loader_and_call_normalisation() -> None:
    assert load_relaxed("[{'name': 'f', 'arguments': {'x': True}}]") == [{"name": "f", "arguments": {"x": True}}]
    assert load_relaxed("```json\n{\"a\": 1}\n```") == {"a": 1}
    assert load_relaxed("[{'name': 'f', 'arguments': {'x': true, 'y': null}}]")[0]["arguments"] == {
        "x": True, "y": None}
    with pytest.raises(ValueError, match="placeholder"):
        load_relaxed('[{"name": "f", "arguments": {"x": "…"}}]')
    with pytest.raises(ValueError, match="unreadable"):
        load_relaxed("name=f, x=1")
    openai_style = {"type": "function", "function": {"name": "refund", "arguments": "{\"order_id\": \"A1\"}"}}
    assert normalize_calls(openai_style) == [{"name": "refund", "arguments": {"order_id": "A1"}}]
    assert normalize_calls({"name": "get_weather", "city": "Paris"}) == [
        {"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert normalize_calls([{"tool": "f", "parameters": {"a": 1}}]) == [{"name": "f", "arguments": {"a": 1}}]
    with pytest.raises(ValueError, match="not an object"):
        normalize_calls({"name": "f", "arguments": [1, 2]})
    with pytest.raises(ValueError, match="must be an object"):
        normalize_calls(["f"])


def test_canonical_calls() -> None:
    gold = [{"name": "refund", "arguments": {"order_id": "A-17", "amount": 25}},
            {"name": "search_orders", "arguments": {"customer_email": "ana@example.com"}}]
    other = [{"name": "search_orders", "arguments": {"customer_email": " ana@example.com "}},
             {"name": "refund", "arguments": {"amount": "25.0", "order_id": "A-17"}}]
    assert canonical_calls(gold) == canonical_calls(other)  # order, "25.0" ≡ 25, spaces
    assert canonical_calls([{"name": "f", "arguments": {"zip": "02139"}}]) != canonical_calls(
        [{"name": "f", "arguments": {"zip": 2139}}])  # leading zeros: an identifier, not a number
    assert canonical_calls([{"name": "f", "arguments": {"id": "12345678901234567"}}]) == (
        '[{"arguments":{"id":"12345678901234567"},"name":"f"}]')


def test_tool_calls_answer_compares_with_the_reference() -> None:
    gold = [{"name": "refund", "arguments": {"order_id": "A-17", "amount": 25}}]
    native = Trajectory(text="", tool_calls=(ToolCall("refund", '{"amount": "25", "order_id": "A-17"}'),))
    assert tool_calls_answer(native) == canonical_calls(gold)
    hermes = Trajectory(text='Sure.\n<tool_call>\n{"name": "refund", "arguments": {"order_id": "A-17", '
                             '"amount": 25}}\n</tool_call>')
    assert tool_calls_answer(hermes) == canonical_calls(gold)
    solver = Trajectory(text="<think>x</think><tool_call_answer>[{'name': 'refund', 'arguments': "
                             "{'order_id': 'A-17', 'amount': 25}}]</tool_call_answer>")
    assert tool_calls_answer(solver) == canonical_calls(gold)
    fenced = Trajectory(text='I will call:\n```json\n[{"name": "refund", "arguments": {"order_id": "A-17", '
                             '"amount": 26}}]\n```')
    assert tool_calls_answer(fenced) != canonical_calls(gold)
    assert tool_calls_answer(Trajectory(text="The refund is done.")) is None
    assert tool_calls_answer(Trajectory(text=None, error="boom")) is None
