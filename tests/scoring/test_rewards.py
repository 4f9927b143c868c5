"""Curriculum rewards (Agent0 §3.2, Eq. 2–5) as pure functions and as TRL reward functions."""

from __future__ import annotations

import dataclasses
import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_qa.errors import ConfigError
from frontier_qa.scoring.rewards import (
    AGENT0_COMPAT,
    PAPER,
    RewardConfig,
    completion_text,
    composite_reward,
    curriculum_reward_func,
    format_reward,
    format_reward_func,
    mean_capped_tool_calls,
    parse_curriculum_output,
    repetition_penalty_func,
    score_curriculum_batch,
    tool_demand,
    tool_demand_cues,
    tool_reward,
    tool_reward_func,
    uncertainty_reward,
    uncertainty_reward_func,
)
from frontier_qa.target import ToolCall, Trajectory

# Two ten-word tasks that differ in the last word (BLEU distance 1 − 0.6^¼ ≈ 0.12 < τ) and
# an unrelated one (no shared word: distance 1).
Q_A = "Find the number of primes p below 10000 with p mod 4"
Q_B = "Find the number of primes p below 10000 with p mod 8"
Q_C = "A triangle has sides three four five; give its area."


def completion(question: str, answer: str | None = "7") -> str:
    boxed = f"\n\\boxed{{{answer}}}" if answer is not None else ""
    return f"<question>{question}</question>{boxed}"


# --- uncertainty (Eq. 2) ---------------------------------------------------------------------


def test_uncertainty_reward_hand_values() -> None:
    assert uncertainty_reward(0.7) == pytest.approx(0.6)
    assert uncertainty_reward(0.7, compat=True) == pytest.approx(0.3)
    assert uncertainty_reward(0.5) == 1.0 and uncertainty_reward(0.5, compat=True) == 0.5
    assert uncertainty_reward(0.0) == 0.0 and uncertainty_reward(1.0) == 0.0
    assert uncertainty_reward(3 / 10) == pytest.approx(0.6)


@pytest.mark.parametrize("p_hat", [-0.1, 1.5, float("nan"), None, "0.5", True])
def test_uncertainty_reward_rejects_bad_p_hat(p_hat: object) -> None:
    with pytest.raises(ConfigError, match="p_hat"):
        uncertainty_reward(p_hat)  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # ConfigError is a ValueError too
        uncertainty_reward(p_hat, compat=True)  # type: ignore[arg-type]


P = st.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(P, P)
def test_uncertainty_properties(a: float, b: float) -> None:
    assert 0.0 <= uncertainty_reward(a) <= 1.0
    assert uncertainty_reward(a) == pytest.approx(uncertainty_reward(1.0 - a), abs=1e-12)
    assert uncertainty_reward(a, compat=True) == pytest.approx(uncertainty_reward(a) / 2, abs=1e-12)
    lo, hi = sorted((min(a, 0.5), min(b, 0.5)))
    assert uncertainty_reward(lo) <= uncertainty_reward(hi)  # increasing on [0, 0.5]


# --- tool use (Eq. 3) ------------------------------------------------------------------------


def trajectory(executed: int, unexecuted: int = 0) -> Trajectory:
    calls = tuple(ToolCall("python", "print(1)", result="1") for _ in range(executed))
    calls += tuple(ToolCall("python", "print(1)") for _ in range(unexecuted))  # never ran
    return Trajectory(text="\\boxed{1}", tool_calls=calls)


def test_tool_reward_is_mean_of_capped_counts() -> None:
    # mean(min(0,4), min(2,4), min(5,4), min(7,4)) = 2.5; γ = 0.25.
    assert mean_capped_tool_calls([0, 2, 5, 7], cap=4) == 2.5
    assert tool_reward([0, 2, 5, 7], gamma=0.25, cap=4) == pytest.approx(0.625)
    assert tool_reward(6.0, gamma=0.25, cap=4) == 1.0  # a given mean is capped as a whole
    assert tool_reward([3], gamma=0.25, cap=0) == 0.0


def test_tool_reward_counts_executed_calls_of_trajectories() -> None:
    trajectories = [trajectory(2, unexecuted=3), trajectory(6), trajectory(0)]
    # executed: 2, 6 → capped 4, 0: mean 2; unexecuted calls never count.
    assert tool_reward(trajectories, gamma=0.25, cap=4) == pytest.approx(0.5)


def test_tool_reward_blends_the_task_texts_demand() -> None:
    text = "How many primes are below 10000?"
    assert tool_demand_cues(text) == ("large_numbers", "enumeration", "numeric")
    assert tool_demand(text) == pytest.approx(0.30 + 0.25 + 0.10)
    # γ·(w_exec·2 + w_text·C·0.65) = 0.25·(0.5·2 + 0.5·4·0.65)
    value = tool_reward([2], text, gamma=0.25, cap=4, executor_weight=0.5, text_weight=0.5)
    assert value == pytest.approx(0.25 * (1.0 + 1.3))
    text_only = tool_reward(None, text, gamma=0.25, cap=4, executor_weight=0.0, text_weight=1.0)
    assert text_only == pytest.approx(0.65)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is 2+3?", 0.0),
        ("", 0.0),
        ("count count count COUNT", 0.25),  # a category counts once, whatever the repetition
        ("Compute 2^{100} mod 7.", 0.30 + 0.10),
        ("Let a_{n+1} = 3a_n + 1. Find a_{20}.", 0.20),
        ("Simulate 1,000 random rounds; how many times does the sum exceed 10? "
         "Give the expected value to 3 decimal places.", 1.0),
    ],
)
def test_tool_demand_values(text: str, expected: float) -> None:
    assert tool_demand(text) == pytest.approx(expected)


@pytest.mark.parametrize("calls", [[], [-1], [float("nan")], [True], ["2"], float("inf")])
def test_tool_reward_rejects_bad_counts(calls: object) -> None:
    with pytest.raises(ConfigError):
        tool_reward(calls)  # type: ignore[arg-type]


def test_tool_reward_needs_what_its_weights_use() -> None:
    with pytest.raises(ConfigError, match="executor_weight"):
        tool_reward(None)
    with pytest.raises(ConfigError, match="task text"):
        tool_reward([1], None, text_weight=0.5)


def test_output_markers_in_the_curriculum_text_are_not_tool_calls() -> None:
    # METHOD defect 3: the reference paid for "```output" written by the generator itself.
    text = completion("Compute 6*7. ```output\n42\n``` ```output\n42\n``` ```output\n```")
    [score] = score_curriculum_batch([text], [0.5], [[0, 0]])
    assert score.tool == 0.0
    assert score.reward == pytest.approx(1.0 - 1.0)  # R_unc 1, R_rep 1/1: nothing from markers


# --- format and parsing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<question>What is 2+2?</question>\n\\boxed{4}", ("What is 2+2?", "4")),
        ("<question>Q</question> \\boxed{42}", ("Q", "42")),  # defect 1: whole answer, not "2"
        ("<question>Q</question>", ("Q", None)),  # defect 1: no box is None, not "e"
        ("<question> Half? </question> \\boxed{\\frac{1}{2}}", ("Half?", "\\frac{1}{2}")),
        ("<question>Q</question> \\boxed{1} then \\boxed{2}", ("Q", "2")),
        ("<question>old</question><question>\nnew\n</question>\\boxed{3}", ("new", "3")),
        ("<question>Is \\boxed{5} boxed?</question>", ("Is \\boxed{5} boxed?", None)),
        ("<question>   </question>\\boxed{3}", (None, "3")),
        ("no tags at all \\boxed{9}", (None, "9")),
        ("<question>unclosed \\boxed{9}", (None, "9")),
    ],
)
def test_parse_curriculum_output(text: str, expected: tuple) -> None:
    assert parse_curriculum_output(text) == expected


def test_format_reward() -> None:
    assert format_reward(completion("Q")) == 1.0
    assert format_reward(completion("Q", answer=None)) == 1.0
    assert format_reward(completion("Q", answer=None), require_reference=True) == 0.0
    assert format_reward(completion("Q"), require_reference=True) == 1.0
    assert format_reward("\\boxed{3}") == 0.0
    assert format_reward("<question></question>\\boxed{3}") == 0.0


# --- composite (Eq. 5) -----------------------------------------------------------------------


def test_composite_hand_values() -> None:
    assert composite_reward(1.0, 0.6, 0.5, 1 / 3, lambda_tool=0.6) == pytest.approx(0.6 + 0.3 - 1 / 3)
    assert composite_reward(1.0, 0.2, 0.0, 0.5) == 0.0  # clipped at 0
    assert composite_reward(0.0, 1.0, 1.0, 0.0) == 0.0  # format gate
    assert composite_reward(1.0, 0.5, 1.0, 0.0, lambda_unc=2.0, lambda_tool=0.0) == 1.0
    with pytest.raises(ConfigError):
        composite_reward(2.0, 1.0, 0.0, 0.0)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0.0, 1.0]), P, st.floats(0, 5), st.floats(0, 5), st.floats(0, 3), st.floats(0, 3))
def test_composite_is_never_negative(fmt, unc, tool, rep, l_unc, l_tool) -> None:
    value = composite_reward(fmt, unc, tool, rep, lambda_unc=l_unc, lambda_tool=l_tool)
    assert value >= 0.0
    if fmt == 0.0:
        assert value == 0.0


# --- configuration ---------------------------------------------------------------------------


def test_presets_hold_the_documented_constants() -> None:
    assert (PAPER.lambda_unc, PAPER.lambda_tool, PAPER.tool_cap, PAPER.tool_gamma) == (1.0, 0.6, 4, 0.25)
    assert (PAPER.lambda_rep, PAPER.rep_threshold, PAPER.compat_uncertainty) == (1.0, 0.5, False)
    assert PAPER == RewardConfig()
    assert (AGENT0_COMPAT.tool_gamma, AGENT0_COMPAT.tool_cap, AGENT0_COMPAT.lambda_rep) == (0.05, 4, 1.0)
    assert AGENT0_COMPAT.compat_uncertainty and AGENT0_COMPAT.lambda_tool == 1.0
    assert AGENT0_COMPAT.tool([1, 1]) == pytest.approx(0.05)
    assert AGENT0_COMPAT.tool([9]) == pytest.approx(0.2)
    assert AGENT0_COMPAT.uncertainty(0.7) == pytest.approx(0.3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        PAPER.lambda_tool = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [{"lambda_unc": -1.0}, {"tool_gamma": float("nan")}, {"tool_cap": 2.5}, {"tool_cap": -1},
     {"rep_threshold": 0.0}, {"lambda_rep": float("inf")}],
)
def test_config_validation(kwargs: dict) -> None:
    with pytest.raises(ConfigError, match="RewardConfig"):
        RewardConfig(**kwargs)


# --- a batch ---------------------------------------------------------------------------------

BATCH = [completion(Q_A), completion(Q_B), completion(Q_C)]
P_HATS = [0.5, 0.7, 0.3]
TOOL_CALLS = [[0, 2, 5, 7], [1], [0]]
# R_C = R_unc + 0.6·R_tool − R_rep, with R_tool = 0.25·mean(min(N, 4)) and R_rep = |C|/3.
EXPECTED = [1.0 + 0.6 * 0.625 - 2 / 3, 0.6 + 0.6 * 0.25 - 2 / 3, 0.6 + 0.0 - 1 / 3]


def test_batch_scores_are_hand_computed() -> None:
    scores = score_curriculum_batch(BATCH, P_HATS, TOOL_CALLS)
    assert [s.reward for s in scores] == pytest.approx(EXPECTED)
    assert [s.repetition for s in scores] == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert [s.tool for s in scores] == pytest.approx([0.625, 0.25, 0.0])
    assert scores[0].question == Q_A and scores[0].reference == "7"


def test_agent0_compat_matches_the_reference_arithmetic_when_the_reference_agreed() -> None:
    # Reference: min(p, 1-p) − share + 0.05·min(N, 4) = 0.3 − 1/4 + 0.1 on a batch of four
    # distinct tasks (when its majority matched the reference answer; ours never asks).
    batch = [completion(Q_A), completion(Q_C), completion("one two"), completion("three four five")]
    [first, *_] = score_curriculum_batch(batch, [0.7, 0.5, 0.5, 0.5], [[2]] * 4, config=AGENT0_COMPAT)
    assert first.reward == pytest.approx(0.3 - 0.25 + 0.1)


def test_reference_answer_never_gates_the_uncertainty_reward() -> None:
    # METHOD defect 2: a wrong or missing reference must not erase the signal.
    for answer in ("42", "certainly wrong", None):
        [score] = score_curriculum_batch([completion(Q_A, answer)], [0.5], [[1]])
        assert score.uncertainty == 1.0
        assert score.reward == pytest.approx(1.0 + 0.6 * 0.25 - 1.0)


def test_missing_inputs_give_none_and_bad_format_gives_zero() -> None:
    texts = [completion(Q_A), completion(Q_C), "no question here", completion(Q_B, answer=None)]
    scores = score_curriculum_batch(texts, [None, 0.5, None, 0.5], [[1], None, None, [0]])
    assert scores[0].reward is None  # no p̂
    assert scores[1].reward is None  # no tool calls, and PAPER weighs them
    assert scores[2].reward == 0.0 and scores[2].format == 0.0  # the gate wins
    assert scores[3].reward == pytest.approx(1.0 - 2 / 4)  # Q_B clusters with Q_A: 2 of 4
    strict = dataclasses.replace(PAPER, require_reference=True)
    strict_scores = score_curriculum_batch(texts, [None, 0.5, None, 0.5], [[1], None, None, [0]], config=strict)
    assert strict_scores[3].reward == 0.0


def test_tool_calls_are_optional_when_they_carry_no_weight() -> None:
    no_tool = dataclasses.replace(PAPER, lambda_tool=0.0)
    scores = score_curriculum_batch([completion(Q_A), completion(Q_C)], [0.7, 0.5], None, config=no_tool)
    assert scores[0].tool is None
    assert [s.reward for s in scores] == pytest.approx([0.6 - 0.5, 1.0 - 0.5])
    text_only = dataclasses.replace(PAPER, tool_executor_weight=0.0, tool_text_weight=1.0)
    [score] = score_curriculum_batch([completion(Q_A)], [0.5], None, config=text_only)
    # demand(Q_A) = large numbers + enumeration + numeric = 0.65; R_tool = 0.25·4·0.65.
    assert score.tool == pytest.approx(0.65)
    assert score.reward == pytest.approx(1.0 + 0.6 * 0.65 - 1.0)


def test_batch_length_mismatch_is_reported() -> None:
    with pytest.raises(ConfigError, match="3 completions, 2 p_hat"):
        score_curriculum_batch(BATCH, [0.5, 0.5], TOOL_CALLS)


# --- TRL reward-function shape ---------------------------------------------------------------


def conversational(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def test_completion_text_forms() -> None:
    assert completion_text("plain") == "plain"
    assert completion_text(conversational("chat")) == "chat"
    parts = [{"type": "text", "text": "b"}, {"type": "text", "text": "c"}]
    turns = [
        {"role": "assistant", "content": "a"},
        {"role": "tool", "content": "t"},
        {"role": "assistant", "content": parts},
    ]
    assert completion_text(turns) == "bc"
    assert completion_text([{"role": "user", "content": "x"}]) == ""


def test_trl_curriculum_reward_matches_the_pure_batch() -> None:
    metrics: dict[str, float] = {}
    fn = curriculum_reward_func()
    out = fn(
        prompts=["p"] * 3,
        completions=[conversational(t) for t in BATCH],
        completion_ids=[[1]] * 3,
        p_hat=P_HATS,
        tool_calls=TOOL_CALLS,
        trainer_state=None,
        log_extra=lambda column, values: None,
        log_metric=metrics.__setitem__,
    )
    assert out == pytest.approx(EXPECTED)
    assert fn.__name__ == "curriculum_reward"
    assert metrics["curriculum/format"] == 1.0
    assert metrics["curriculum/uncertainty"] == pytest.approx((1.0 + 0.6 + 0.6) / 3)
    assert metrics["curriculum/repetition"] == pytest.approx((2 / 3 + 2 / 3 + 1 / 3) / 3)


def test_trl_component_functions() -> None:
    completions = BATCH + ["garbage"]
    columns = {"p_hat": P_HATS + [None], "tool_calls": TOOL_CALLS + [float("nan")]}
    assert uncertainty_reward_func()(None, completions, **columns) == pytest.approx([1.0, 0.6, 0.6, None])
    assert tool_reward_func()(None, completions, **columns) == pytest.approx([0.625, 0.25, 0.0, None])
    assert format_reward_func()(None, completions, **columns) == [1.0, 1.0, 1.0, 0.0]
    assert repetition_penalty_func()(None, completions) == pytest.approx([0.5, 0.5, 0.25, 0.25])
    assert curriculum_reward_func()(None, completions, **columns)[3] == 0.0
    factories = (uncertainty_reward_func, tool_reward_func, format_reward_func, repetition_penalty_func,
                 curriculum_reward_func)
    assert [f().__name__ for f in factories] == [
        "uncertainty_reward", "tool_reward", "format_reward", "repetition_penalty", "curriculum_reward"
    ]


def test_trl_missing_columns_read_as_not_applicable() -> None:
    assert curriculum_reward_func()(None, BATCH) == [None, None, None]
    assert uncertainty_reward_func()(None, BATCH, tool_calls=TOOL_CALLS) == [None, None, None]
    # an empty trajectory list: the executor did not run
    assert tool_reward_func()(None, BATCH[:1], tool_calls=[[]]) == [None]


def test_trl_column_length_must_match() -> None:
    with pytest.raises(ConfigError, match="column 'p_hat' has 2 values for 3 completions"):
        curriculum_reward_func()(None, BATCH, p_hat=[0.5, 0.5], tool_calls=TOOL_CALLS)


def test_trl_reward_functions_pickle_with_their_config() -> None:
    fn = pickle.loads(pickle.dumps(curriculum_reward_func(AGENT0_COMPAT)))
    assert fn.__name__ == "curriculum_reward" and fn.config == AGENT0_COMPAT
    assert fn(None, [completion(Q_A)], p_hat=[0.7], tool_calls=[[9]]) == [0.0]  # 0.3 + 0.2 − 1 → 0


def test_embedder_replaces_bleu_in_the_composite() -> None:
    class Encoder:
        def encode(self, texts: list[str]) -> list[list[float]]:
            # Q_A and Q_C point the same way, Q_B elsewhere: the opposite of what BLEU finds.
            return [[1.0, 0.0] if t in (Q_A, Q_C) else [0.0, 1.0] for t in texts]

    fn = repetition_penalty_func(RewardConfig(rep_threshold=0.1), embedder=Encoder())
    assert fn(None, BATCH) == pytest.approx([2 / 3, 1 / 3, 2 / 3])


def test_unknown_component_is_rejected() -> None:
    from frontier_qa.scoring.rewards import CurriculumRewardFunction

    with pytest.raises(ConfigError, match="unknown reward component"):
        CurriculumRewardFunction("novelty")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([Q_A, Q_B, Q_C, "", "x y z w"]),
            P,
            st.lists(st.integers(0, 9), min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([PAPER, AGENT0_COMPAT]),
)
def test_batch_rewards_are_never_negative(rows, config) -> None:
    texts = [completion(q) if q else "bad" for q, _, _ in rows]
    scores = score_curriculum_batch(texts, [p for _, p, _ in rows], [c for _, _, c in rows], config=config)
    for score in scores:
        assert score.reward is not None and score.reward >= 0.0
        assert not math.isnan(score.reward)
