"""R_path (issue 32): the uncertainty reward of the executor's majority path share, off by default."""

from __future__ import annotations

from dataclasses import replace

import pytest

from frontier_qa.scoring.rewards import (
    PAPER,
    composite_reward,
    curriculum_reward_func,
    path_reward,
    score_curriculum_batch,
)

TASK = "<question>What is the weather in Paris?</question>"


@pytest.mark.parametrize(
    ("paths", "want"),
    [
        (["search", "search", "lookup", "lookup"], 1.0),  # an even split: the most uncertain path
        (["search"] * 4, 0.0),  # one path: nothing to learn about tool choice
        (["search", "search", "lookup", None], pytest.approx(2 / 3)),  # p̂ 2/3 of the 3 that ran
        (["a", "b", "c", "a"], 1.0),  # majority 2 of 4
        ([None, None], None),  # no sample ran: no path
        ([], None),
    ],
)
def test_path_reward_is_the_uncertainty_of_the_majority_path(paths: list[str | None], want: object) -> None:
    assert path_reward(paths) == want


def test_compat_halves_it_as_it_halves_r_unc() -> None:
    assert path_reward(["a", "a", "a", "b"], compat=True) == 0.25 and path_reward(["a", "a", "a", "b"]) == 0.5


def test_the_path_term_is_weighted_into_eq_5_and_off_by_default() -> None:
    assert composite_reward(1.0, 0.5, 0.4, 0.1, path=1.0) == composite_reward(1.0, 0.5, 0.4, 0.1)
    assert composite_reward(1.0, 0.5, 0.4, 0.1, path=1.0, lambda_path=0.5) == pytest.approx(0.5 + 0.6 * 0.4 + 0.5 - 0.1)
    assert composite_reward(0.0, 0.5, 0.4, 0.1, path=1.0, lambda_path=0.5) == 0.0  # the format gate


def test_a_batch_reads_paths_only_when_lambda_path_is_set() -> None:
    split = [["search", "lookup"], ["search", "search"]]
    texts = [TASK, TASK.replace("Paris", "Rome")]
    off = score_curriculum_batch(texts, [0.5, 0.5], [[1, 1], [1, 1]], paths=split)
    on = score_curriculum_batch(texts, [0.5, 0.5], [[1, 1], [1, 1]], paths=split,
                                config=replace(PAPER, lambda_path=0.5))
    assert [s.path for s in off] == [None, None] and [s.path for s in on] == [1.0, 0.0]
    assert [b.reward - a.reward for a, b in zip(off, on, strict=True)] == pytest.approx([0.5, 0.0])  # type: ignore[operator]


def test_the_trl_reward_function_reads_a_paths_column() -> None:
    reward = curriculum_reward_func(replace(PAPER, lambda_path=1.0))
    texts = [TASK, "<question>Book a table for four at Luigi's tomorrow evening.</question>"]
    columns = {"completions": texts, "p_hat": [1.0, 1.0], "tool_calls": [[0, 0], [0, 0]]}
    # p̂ = 1 (R_unc 0) and R_rep 1/2 each: only R_path, on the task whose samples split, lifts it above the clip
    assert reward(**columns, paths=[["search", "lookup"], ["book", "book"]]) == pytest.approx([0.5, 0.0])
    assert reward(**columns) == [0.0, 0.0]  # no paths column: no path term
