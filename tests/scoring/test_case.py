"""score_case: the one scoring of a case's samples, shared by the probe, the reward and the pool."""

from __future__ import annotations

import pytest

from frontier_qa.scoring._case_scoring import TOOL_CALLS_FORMAT, answer_matches, answers_of, score_answers, score_case
from frontier_qa.scoring._tool_calls import canonical_calls
from frontier_qa.target import Case, ToolCall, Trajectory
from tests.factories import run

GOLD = canonical_calls([{"name": "get_weather", "arguments": {"city": "Paris"}}])


def _tool_samples() -> list[Trajectory]:
    right = Trajectory("", tool_calls=(ToolCall("get_weather", '{"city": "Paris"}'),))
    written = Trajectory('<tool_call>{"name": "get_weather", "arguments": {"city": " Paris "}}</tool_call>')
    wrong = Trajectory("", tool_calls=(ToolCall("get_weather", '{"city": "paris"}'),))
    return [right, written, wrong, Trajectory("I don't know."), Trajectory(None, error="timeout")]


def test_tool_call_cases_are_scored_from_the_calls_the_target_made() -> None:
    """A native tool-calling target answers with tool_calls and no text (Tool-R0 cases)."""
    case = Case("weather", "Weather in Paris?", answer_format=TOOL_CALLS_FORMAT, reference=GOLD)
    answers = answers_of(case, _tool_samples())
    assert answers[0] == answers[1] == GOLD and answers[2] != GOLD and answers[3:] == [None, None]
    scored = run(score_case(case, _tool_samples()))
    # exact comparison of canonical calls: "paris" is another call, not a casefolded "Paris"
    assert scored.p_hat == pytest.approx(2 / 5) and scored.majority == GOLD
    assert (scored.k, scored.n_unparseable, scored.n_failed, scored.n_clusters) == (5, 1, 1, 2)
    assert run(answer_matches(answers[2], GOLD, TOOL_CALLS_FORMAT)) is False
    assert run(answer_matches(answers[1], GOLD, TOOL_CALLS_FORMAT)) is True


def test_math_answers_vote_with_equivalent_forms_merged() -> None:
    case = Case("half", "What is 1/2?", answer_format="boxed", reference="0.5")
    samples = [Trajectory(r"\boxed{1/2}"), Trajectory(r"\boxed{0.5}"), Trajectory(r"\boxed{2}"),
               Trajectory("no box"), Trajectory(None, error="rate limited")]
    scored = run(score_case(case, samples))
    assert scored.p_hat == pytest.approx(2 / 5) and scored.majority in ("1/2", "0.5")
    assert (scored.n_answered, scored.n_unparseable, scored.n_failed) == (3, 1, 1)
    again = run(score_answers("boxed", list(scored.answers), [False, False, False, False, True]))
    assert (again.p_hat, again.majority) == (scored.p_hat, scored.majority)
    assert run(answer_matches("1/2", "0.5", "boxed")) is True
    assert run(answer_matches("2", "0.5", "boxed")) is False
