"""Agent0's settings in one table: each value, where it comes from, and the config keys that carry it.

The paper's appendix A.1 gives the optimiser settings of both agents, §4 the co-evolution
constants; what the paper leaves out (completion lengths, updates per batch of rollouts, the
executor's sampling when p̂ is measured) is taken from the reference code (aiming-lab/Agent0),
named file by file. ``configs/train/curriculum-agent0.yaml`` and ``configs/coevolve/agent0.yaml``
hold these values, docs/how-to/coevolution.md prints this table (:func:`markdown`), and
``tests/train/test_paper_settings.py`` checks all three against it, together with every
``# Agent0: value`` comment in ``configs/``.

Keys name where a value lives: ``train:<key>`` in curriculum-agent0.yaml, ``coevolve:<key>`` in
agent0.yaml, ``python:<module>:<name.attr>`` a constant in the code; ``a/b`` divides two keys of
the same file (TRL counts optimizer steps, Agent0 counts rounds of generation).

One mapping needs care. The reference trains the curriculum with EasyR1: each of its 5 steps
generates 512 prompts × 4 rollouts and updates the model 4 times on 128 prompts each; TRL's
``max_steps`` counts those updates, so the configs hold ``max_steps: 20`` with
``updates_per_generation: 4``. Its executor (verl-tool) updates once per batch
(``train_batch_size = ppo_mini_batch_size = 128``): on-policy, where ADPO's ε_high(p̂) cannot bind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# files of the reference repository (aiming-lab/Agent0, under Agent0/)
REF_CURRICULUM = "ref. curriculum_train/examples/config.yaml"
REF_CURRICULUM_SH = "ref. curriculum_train/scripts/curriculum_train.sh"
REF_EXECUTOR_SH = "ref. executor_train/examples/train/math_tir/train_qwen3_4b_adpo.sh"
REF_REWARD_SERVER = "ref. curriculum_train/vllm_service_init/start_vllm_server_tool.py"
REF_ADPO = "ref. executor_train/verl_tool/trainer/ppo/core_algos.py"


@dataclass(frozen=True)
class Setting:
    """One constant of the method.

    Attributes:
        agent: ``curriculum``, ``executor`` or ``co-evolution``.
        what: what it is, in the docs' words.
        value: the value (a number, or a tuple for a range).
        source: the paper section, or the reference file it is read from.
        keys: where frontier-qa holds it (see the module docstring).
    """

    agent: str
    what: str
    value: Any
    source: str
    keys: tuple[str, ...]


def _both(key: str) -> tuple[str, ...]:
    """A curriculum training key in curriculum-agent0.yaml and in agent0.yaml's curriculum section."""
    return (f"train:{key}", f"coevolve:curriculum.{key}")


SETTINGS: tuple[Setting, ...] = (
    Setting("curriculum", "learning rate", 1e-6, "Agent0 A.1", _both("training.learning_rate")),
    Setting("curriculum", "weight decay", 1e-2, "Agent0 A.1", _both("training.weight_decay")),
    Setting("curriculum", "KL coefficient", 1e-2, "Agent0 A.1", _both("training.beta")),
    Setting("curriculum", "global batch (prompts per update)", 128, "Agent0 A.1", _both("training.prompts_per_step")),
    Setting("curriculum", "rollouts per prompt", 4, "Agent0 A.1", _both("training.num_generations")),
    Setting("curriculum", "rollout temperature", 1.0, "Agent0 A.1", _both("training.temperature")),
    Setting("curriculum", "rollout top-p", 0.99, "Agent0 A.1", _both("training.top_p")),
    Setting("curriculum", "steps per iteration (rounds of generation)", 5, "Agent0 A.1",
            _both("training.max_steps/training.updates_per_generation")),
    Setting("curriculum", "optimizer updates per iteration (TRL's max_steps)", 20,
            "Agent0 A.1 × ref. config.yaml: 5 rounds × 4 updates", _both("training.max_steps")),
    Setting("curriculum", "updates per round of generation", 4, f"{REF_CURRICULUM} (rollout_batch_size 512 / "
            "global_batch_size 128)", _both("training.updates_per_generation")),
    Setting("curriculum", "tokens per generated task", 4096, f"{REF_CURRICULUM_SH} (data.max_response_length)",
            (*_both("training.max_completion_length"), "coevolve:pool.sampling.max_tokens")),
    Setting("curriculum", "executor samples per task (k)", 10, "Agent0 §4",
            (*_both("reward.k"), "coevolve:pool.k")),
    Setting("curriculum", "tool reward weight λ_tool", 0.6, "Agent0 §4",
            ("python:frontier_qa.scoring.rewards:PAPER.lambda_tool",)),
    Setting("curriculum", "tool-call cap C", 4, "Agent0 §4", ("python:frontier_qa.scoring.rewards:PAPER.tool_cap",)),
    Setting("executor", "learning rate", 1e-6, "Agent0 A.1", ("coevolve:executor.training.learning_rate",)),
    Setting("executor", "weight decay", 1e-2, "Agent0 A.1", ("coevolve:executor.training.weight_decay",)),
    Setting("executor", "KL coefficient", 1e-2, "Agent0 A.1", ("coevolve:executor.training.beta",)),
    Setting("executor", "global batch (tasks per update)", 128, "Agent0 A.1",
            ("coevolve:executor.training.prompts_per_step",)),
    Setting("executor", "rollouts per task", 16, "Agent0 A.1", ("coevolve:executor.training.num_generations",)),
    Setting("executor", "rollout temperature", 1.0, "Agent0 A.1", ("coevolve:executor.training.temperature",)),
    Setting("executor", "rollout top-p", 0.99, "Agent0 A.1", ("coevolve:executor.training.top_p",)),
    Setting("executor", "steps per iteration", 40, "Agent0 A.1", ("coevolve:executor.training.max_steps",)),
    Setting("executor", "updates per round of generation", 1, f"{REF_EXECUTOR_SH} (train_batch_size = "
            "ppo_mini_batch_size = 128)", ("coevolve:executor.training.updates_per_generation",)),
    Setting("executor", "tokens per rollout, tool output included", 4096, f"{REF_EXECUTOR_SH} (max_response_length)",
            ("coevolve:executor.training.max_completion_length",)),
    Setting("executor", "tokens per model turn", 2048, f"{REF_EXECUTOR_SH} (max_action_length); "
            f"{REF_REWARD_SERVER} (max_tokens)", ("coevolve:executor.sampling.max_tokens",)),
    Setting("executor", "tool calls per answer", 4, f"{REF_EXECUTOR_SH} (max_turns)",
            ("coevolve:executor.tools.max_tool_turns",)),
    Setting("executor", "sampling temperature when p̂ is measured", 0.7, REF_REWARD_SERVER,
            ("coevolve:executor.sampling.temperature",)),
    Setting("executor", "sampling top-p when p̂ is measured", 0.9, REF_REWARD_SERVER,
            ("coevolve:executor.sampling.top_p",)),
    Setting("executor", "ADPO advantage scale at p̂ ≤ 0.3", 0.6, f"{REF_EXECUTOR_SH} (min_advantage_scale)",
            ("coevolve:executor.adpo.scale_base", "python:frontier_qa.train.adpo:REFERENCE.scale_base")),
    Setting("executor", "ADPO: p̂ where the scale starts rising", 0.3, f"{REF_EXECUTOR_SH} (min_score_for_scaling)",
            ("coevolve:executor.adpo.scale_from", "python:frontier_qa.train.adpo:REFERENCE.scale_from")),
    Setting("executor", "ADPO: p̂ where the scale reaches 1 and ε_high its base", 0.8,
            f"{REF_EXECUTOR_SH} (max_score_for_scaling)",
            ("coevolve:executor.adpo.clip_until", "python:frontier_qa.train.adpo:REFERENCE.clip_until")),
    Setting("executor", "ADPO ε_low and base ε_high", 0.2, f"{REF_ADPO} (clip_ratio, verl's default)",
            ("coevolve:executor.adpo.epsilon_low", "coevolve:executor.adpo.epsilon_high_base",
             "python:frontier_qa.train.adpo:REFERENCE.epsilon_low",
             "python:frontier_qa.train.adpo:REFERENCE.epsilon_high_base")),
    Setting("executor", "ADPO ε_high bonus at p̂ ≤ 0.3", 0.1, f"{REF_EXECUTOR_SH} (max_epsilon_bonus)",
            ("coevolve:executor.adpo.epsilon_high_gain", "python:frontier_qa.train.adpo:REFERENCE.epsilon_high_gain")),
    Setting("co-evolution", "iterations T", 3, "Agent0 §4 (Figure 4)", ("coevolve:iterations",)),
    Setting("co-evolution", "frontier band on p̂ (δ = 0.25, both ends kept)", (0.3, 0.8), "Agent0 §4",
            ("coevolve:pool.band",)),
    Setting("co-evolution", "tasks per iteration in Table 5", 200, "Agent0 §4 (Table 5)",
            ("coevolve:evaluation.table5_tasks",)),
)
"""Every constant of the method that frontier-qa's Agent0 configs and docs attribute to Agent0."""


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, float) and 0 < abs(value) < 1e-3:
        return f"{value:.0e}".replace("e-0", "e-")
    return f"{value:g}" if isinstance(value, float) else str(value)


def _keys(setting: Setting) -> str:
    # curriculum keys read the same in both files once agent0.yaml's "curriculum." is dropped
    shown = [k.split(":", 1)[1].removeprefix("curriculum.") if k.startswith(("train:", "coevolve:"))
             else k.removeprefix("python:").replace(":", ".") for k in setting.keys]
    return ", ".join(f"`{k}`" for k in dict.fromkeys(shown))


def markdown() -> str:
    """The table as docs/how-to/coevolution.md prints it (between its ``paper-settings`` markers)."""
    rows = ["| agent | setting | value | source | where frontier-qa holds it |", "|---|---|---|---|---|"]
    rows += [f"| {s.agent} | {s.what} | {_show(s.value)} | {s.source} | {_keys(s)} |" for s in SETTINGS]
    return "\n".join(rows)


def for_key(key: str) -> Setting | None:
    """The setting held at ``key`` (``train:training.top_p``), ``None`` if the table has none."""
    return next((s for s in SETTINGS if key in s.keys), None)


__all__ = ["SETTINGS", "Setting", "for_key", "markdown"]
