"""Training on models you own: the curriculum trainer, ADPO for the executor, and co-evolution.

Agent0 §3.2 trains its curriculum agent with GRPO on a composite reward (Eq. 5): a format
gate, the executor's uncertainty on each generated task (Eq. 2), its tool use (Eq. 3) and a
repetition penalty over the batch (Eq. 4). Here the executor is *the agent under test*, any
target frontier-qa can open (API models, local models, multi-step agents), sampled through
its adapter with rate limits, cache and budget.

    from frontier_qa.train import load_train_config, train_curriculum

    result = train_curriculum(load_train_config("configs/train/curriculum-cpu.yaml"))
    # result.final_model is a model folder: `frontier-qa probe --curriculum trained:<it>`

    from frontier_qa.train import load_coevolve_config, run_coevolution

    run_coevolution(load_coevolve_config("configs/coevolve/cpu.yaml"))   # Agent0 Algorithm 1

Importing this package loads no torch or TRL (names load on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontier_qa import _lazy_exports

_BY_MODULE: dict[str, tuple[str, ...]] = {
    "frontier_qa.train.config": (
        "TrainConfig", "load_train_config", "plan_step", "check_budget", "reward_config", "StepPlan",
    ),
    "frontier_qa.train._prompts": ("TaskFormat", "Task", "render_text"),
    "frontier_qa.train._reward": ("TargetReward", "curriculum_rewards"),
    "frontier_qa.train._tasks": ("TaskRecord", "TaskLog", "read_tasks", "summarize", "StepSummary"),
    "frontier_qa.train._curriculum": ("TrainResult", "train_curriculum", "merge_adapter", "preflight"),
    "frontier_qa.train.adpo": ("ADPOSchedule", "advantage_scale", "clip_high", "PseudoLabelReward"),
    "frontier_qa.train.adpo_trainer": ("ADPOTrainer",),
    "frontier_qa.train._rollout": ("mask_observations", "pad_rollouts"),
    "frontier_qa.train.tool_rollout": ("ToolRollout", "ToolSettings", "ToolTrace"),
    "frontier_qa.train._executor": ("ExecutorRow", "ExecutorResult", "RolloutRecord", "read_rollouts",
                                    "train_executor"),
    "frontier_qa.train._coevolve_config": ("CoevolveConfig", "load_coevolve_config"),
    "frontier_qa.train._coevolve": ("CoevolveResult", "run_coevolution"),
}


if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use
    from frontier_qa.train._coevolve import CoevolveResult as CoevolveResult
    from frontier_qa.train._coevolve import run_coevolution as run_coevolution
    from frontier_qa.train._coevolve_config import CoevolveConfig as CoevolveConfig
    from frontier_qa.train._coevolve_config import load_coevolve_config as load_coevolve_config
    from frontier_qa.train._curriculum import TrainResult as TrainResult
    from frontier_qa.train._curriculum import merge_adapter as merge_adapter
    from frontier_qa.train._curriculum import preflight as preflight
    from frontier_qa.train._curriculum import train_curriculum as train_curriculum
    from frontier_qa.train._executor import ExecutorResult as ExecutorResult
    from frontier_qa.train._executor import ExecutorRow as ExecutorRow
    from frontier_qa.train._executor import RolloutRecord as RolloutRecord
    from frontier_qa.train._executor import read_rollouts as read_rollouts
    from frontier_qa.train._executor import train_executor as train_executor
    from frontier_qa.train._prompts import Task as Task
    from frontier_qa.train._prompts import TaskFormat as TaskFormat
    from frontier_qa.train._prompts import render_text as render_text
    from frontier_qa.train._reward import TargetReward as TargetReward
    from frontier_qa.train._reward import curriculum_rewards as curriculum_rewards
    from frontier_qa.train._rollout import mask_observations as mask_observations
    from frontier_qa.train._rollout import pad_rollouts as pad_rollouts
    from frontier_qa.train._tasks import StepSummary as StepSummary
    from frontier_qa.train._tasks import TaskLog as TaskLog
    from frontier_qa.train._tasks import TaskRecord as TaskRecord
    from frontier_qa.train._tasks import read_tasks as read_tasks
    from frontier_qa.train._tasks import summarize as summarize
    from frontier_qa.train.adpo import ADPOSchedule as ADPOSchedule
    from frontier_qa.train.adpo import PseudoLabelReward as PseudoLabelReward
    from frontier_qa.train.adpo import advantage_scale as advantage_scale
    from frontier_qa.train.adpo import clip_high as clip_high
    from frontier_qa.train.adpo_trainer import ADPOTrainer as ADPOTrainer
    from frontier_qa.train.config import StepPlan as StepPlan
    from frontier_qa.train.config import TrainConfig as TrainConfig
    from frontier_qa.train.config import check_budget as check_budget
    from frontier_qa.train.config import load_train_config as load_train_config
    from frontier_qa.train.config import plan_step as plan_step
    from frontier_qa.train.config import reward_config as reward_config
    from frontier_qa.train.tool_rollout import ToolRollout as ToolRollout
    from frontier_qa.train.tool_rollout import ToolSettings as ToolSettings
    from frontier_qa.train.tool_rollout import ToolTrace as ToolTrace
else:
    __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals())
