"""SAGE's question critic: score parsing, threshold, prompt, failure handling.

The critic model is a scripted adapter (a real :class:`~frontier_qa.target.Adapter`) opened
through the real runtime, so the test sees exactly the request a critic model would get.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import pytest

from frontier_qa.curricula._critic import (
    SAGE_QUESTION_PROMPT,
    SAGE_THRESHOLD,
    SageCritic,
    TaskCritique,
    parse_score,
)
from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.runtime import open_target
from frontier_qa.target import Adapter, Case, Sampling, Trajectory


class ScriptedCritic(Adapter):
    """Answers every request with ``reply(case)`` and records the requests."""

    def __init__(self, reply: Callable[[Case], str | None]) -> None:
        self.id = "scripted-critic"
        self.reply = reply
        self.requests: list[tuple[Case, Sampling]] = []

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        self.requests.append((case, sampling))
        text = self.reply(case)
        return [Trajectory(text=text, error=None if text is not None else "critic down", sample_index=start)]


def critic(reply: str | None | Callable[[Case], str | None], **kwargs: object) -> tuple[ScriptedCritic, SageCritic]:
    adapter = ScriptedCritic(reply if callable(reply) else (lambda case: reply))
    return adapter, SageCritic(open_target(adapter, cache=False), **kwargs)  # type: ignore[arg-type]


def judge(sage: SageCritic, proposal: Proposal) -> TaskCritique:
    return asyncio.run(sage.judge(proposal))


QUESTION = Proposal(Case(id="q1", prompt="A box holds 3 red and 5 blue balls. How many balls are in it?"))


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("<think>clear and solvable</think>\n<score>7</score>", 7.0),
        ("<score> 9 </score>", 9.0),
        ("first guess <score>4</score>, on reflection <score>8</score>", 8.0),
        ("<score>7.5</score>", 7.5),
        ("<score>6/10</score>", 6.0),
        ("**Final score:** 5", 5.0),
        ("I would give it 3/10.", 3.0),
        ("Score = 10", 10.0),
        ("<score>11</score>", None),
        ("<score>seven</score>", None),
        ("The question is fine.", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_score(text: str | None, score: float | None) -> None:
    assert parse_score(text) == score


def test_threshold_is_sage_alpha_on_score_over_ten() -> None:
    assert SAGE_THRESHOLD == 0.7
    adapter, sage = critic("<score>7</score>")
    verdict = judge(sage, QUESTION)
    assert verdict == TaskCritique(0.7, True, "SAGE critic score 7/10 ≥ threshold 7/10", "well-posed",
                                    "SAGE critic scripted-critic")
    _, sage = critic("<score>6</score>")
    assert judge(sage, QUESTION) == TaskCritique(0.6, False, "SAGE critic score 6/10 < threshold 7/10", "ill-posed",
                                    "SAGE critic scripted-critic")
    _, lenient = critic("<score>6</score>", threshold=0.5)
    assert judge(lenient, QUESTION).passed
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.passed = False  # type: ignore[misc]


def test_request_is_the_sage_rubric_at_low_temperature() -> None:
    adapter, sage = critic("<score>8</score>")
    judge(sage, QUESTION)
    judge(sage, QUESTION)
    (case, sampling), (again, sampling_again) = adapter.requests
    assert case.prompt == SAGE_QUESTION_PROMPT.format(question=QUESTION.case.prompt)
    assert "If any unsolvability or commonsense violation exists, score must be [1-3]." in case.prompt
    assert sampling.temperature == 0.1 and sampling.seed is not None
    assert (again, sampling_again) == (case, sampling)  # same question, same request: cacheable


def test_tools_and_agent_are_shown_to_the_critic() -> None:
    tools = ({"type": "function", "function": {"name": "refund", "description": "Refund an order"}},
             {"name": "ping"})
    proposal = Proposal(Case(id="t", prompt="Refund order A-17.", tools=tools,
                             metadata={"agent_description": "a support agent"}))
    adapter, sage = critic("<score>9</score>")
    judge(sage, proposal)
    prompt = adapter.requests[0][0].prompt
    assert "- refund: Refund an order\n  - ping)" in prompt
    assert "(The question is a request to this agent: a support agent)" in prompt


def test_failures_are_rejected_with_a_reason_or_accepted_on_request() -> None:
    _, sage = critic("Looks good to me!")
    verdict = judge(sage, QUESTION)
    assert (verdict.score, verdict.passed) == (0.0, False)
    assert verdict.reason.startswith("the critic gave no score 1-10") and "Looks good to me!" in verdict.reason
    _, down = critic(None)
    verdict = judge(down, QUESTION)
    assert not verdict.passed and verdict.reason.startswith("the critic returned no text (critic down)")
    _, accepting = critic(None, on_error="accept")
    verdict = judge(accepting, QUESTION)
    assert verdict.passed and "accepted (on_error='accept')" in verdict.reason
    adapter, sage = critic("<score>9</score>")
    empty = judge(sage, Proposal(Case(id="e", prompt="  ")))
    assert not empty.passed and adapter.requests == []  # nothing to judge: the model is not asked


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"threshold": 1.5}, "must be in"), ({"on_error": "skip"}, "not understood")]
)
def test_configuration_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        critic("<score>7</score>", **kwargs)
