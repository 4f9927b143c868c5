"""R_path in the curriculum trainer's reward: the target's own trajectories give each task's paths, and
``reward.lambda_path`` (0 by default) weights them into R_C.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from frontier_qa.config import parse_set
from frontier_qa.runtime import open_target
from frontier_qa.scoring.rewards import PAPER
from frontier_qa.target import Adapter, Case, Sampling, ToolCall, Trajectory
from frontier_qa.train._prompts import TaskFormat
from frontier_qa.train._reward import TargetReward, curriculum_rewards
from frontier_qa.train.config import load_train_config, reward_config
from tests.factories import REPO

SPLIT = "How warm is it in Paris this afternoon?"  # the agent picks a tool at random: paths split 2-2
SURE = "Book a table for four at Luigi's at seven."  # always the same tool


class ToolAgent(Adapter):
    """Always answers the same (p̂ = 1: R_unc 0); on one task, alternates between two tools by sample."""

    id = "tool-agent"

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        def tool(i: int) -> str:
            return ("weather_api" if i % 2 == 0 else "web_search") if "warm" in case.prompt else "book_table"

        return [Trajectory(text="\\boxed{done}", tool_calls=(ToolCall(tool(start + i), "{}", result="ok"),),
                           sample_index=start + i) for i in range(n)]


def reward_of(config: object, metrics: dict[str, float]) -> list[float | None]:
    task_format = TaskFormat("math", "plain", prompt={"user": "Write a task."})
    reward = TargetReward(open_target(ToolAgent(), cache=False), task_format, k=4, config=config)  # type: ignore[arg-type]
    return asyncio.run(reward(completions=[SPLIT, SURE], log_metric=metrics.__setitem__))


def test_the_path_term_rewards_the_task_whose_samples_split_between_tools() -> None:
    metrics: dict[str, float] = {}
    # R_unc 0 (p̂ 1), R_tool 0.25 · 1 call, R_rep 1/2 each: 0.6 · 0.25 − 0.5 < 0 → clipped to 0 by default
    assert reward_of(PAPER, metrics) == [0.0, 0.0] and "curriculum/path" not in metrics
    on = reward_of(replace(PAPER, lambda_path=0.5), metrics)
    # the split task: R_path = 1 − 2|0.5 − 0.5| = 1, weighted 0.5; the sure one: R_path 0
    assert on == pytest.approx([0.6 * 0.25 + 0.5 - 0.5, 0.0])
    assert metrics["curriculum/path"] == pytest.approx(0.5)


def test_curriculum_rewards_take_paths_per_task() -> None:
    scores = curriculum_rewards(["alpha beta gamma", "delta epsilon zeta"], [1.0, 1.0], [[0], [0]],
                                config=replace(PAPER, lambda_path=1.0), paths=[["a", "b"], None])
    assert [s.path for s in scores] == [1.0, None] and [s.reward for s in scores] == pytest.approx([0.5, 0.0])


def test_reward_lambda_path_is_a_training_config_key_off_by_default() -> None:
    path = REPO / "configs" / "train" / "curriculum-agent0.yaml"
    assert reward_config(load_train_config(path)).lambda_path == 0.0
    assert reward_config(load_train_config(path, [parse_set("reward.lambda_path=0.3")])).lambda_path == 0.3
