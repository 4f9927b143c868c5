"""The curriculum trainer's configs: the shipped files, key-by-key errors, batch planning, budgets,
and the accelerate configs for multi-GPU training (validated with accelerate itself, offline).

DeepSpeed is not installed here, so the DeepSpeed configs are checked as far as accelerate goes:
accelerate's own config loader, every ``deepspeed_config`` / ``fsdp_config`` key known to
``accelerate launch`` (an unknown key would be ignored silently there), and the
``DeepSpeedPlugin`` / ``FullyShardedDataParallelPlugin`` that ``accelerate launch`` builds from them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from frontier_qa.config import parse_set
from frontier_qa.config._diagnostics import _models_in, fields_of
from frontier_qa.errors import BudgetExceededError, ConfigError
from frontier_qa.scoring.rewards import AGENT0_COMPAT, PAPER, RewardConfig
from frontier_qa.train.config import TrainConfig, check_budget, load_train_config, plan_step, reward_config
from tests.factories import REPO

AGENT0 = REPO / "configs" / "train" / "curriculum-agent0.yaml"
CPU = REPO / "configs" / "train" / "curriculum-cpu.yaml"
ACCELERATE = REPO / "configs" / "accelerate"


def _load(*sets: str, path: Path | None = AGENT0) -> TrainConfig:
    return load_train_config(path, [parse_set(s) for s in sets])


# --- the shipped training configs --------------------------------------------------------------


def test_agent0_config_holds_the_papers_curriculum_hyperparameters() -> None:
    config = _load()  # every number: tests/train/test_paper_settings.py against frontier_qa/train/_agent0_settings.py
    assert reward_config(config) == PAPER  # Eq. 2-5 with λ_tool 0.6, C 4
    assert config.curriculum.style == "instruct" and config.curriculum.domain == "math"
    assert not config.curriculum.ask_solution and not config.curriculum.ask_difficulty  # Table 7 exactly
    assert config.model.lora is None


def test_every_config_key_is_documented_in_the_agent0_file() -> None:
    written = yaml.safe_load(AGENT0.read_text())

    def missing(model: type, data: dict, at: str) -> list[str]:
        out = []
        for name, field in fields_of(model).items():  # pydantic models and frozen values alike
            if name not in data:
                out.append(at + name)
                continue
            subs = _models_in(field.annotation)
            if subs and isinstance(data[name], dict):
                out += missing(subs[0], data[name], f"{at}{name}.")
        return out

    assert missing(TrainConfig, written, "") == []


def test_cpu_config_is_small_and_splits_on_one_process() -> None:
    config = _load(path=CPU)
    assert config.model.path == "smollm2" and config.model.lora is not None
    assert config.target.spec == "python:examples/agents/moody_agent.py:MoodyAgent"
    assert config.curriculum.style == "few_shot"
    plan = plan_step(config, world_size=1)
    # 4 prompts × 6 problems per step: a spread of rewards in every group (the demo must learn)
    assert (plan.tasks_per_generation, plan.gradient_accumulation_steps, plan.samples_per_process) == (24, 3, 96)
    check_budget(config, plan, extra_calls=1)  # its own budget covers a step


@pytest.mark.parametrize(("world", "accumulation"), [(1, 64), (2, 32), (4, 16), (8, 8)])
def test_agent0_global_batch_is_the_same_on_any_number_of_gpus(world: int, accumulation: int) -> None:
    plan = plan_step(_load(), world_size=world, target_max_n=4)
    # 128 prompts × 4 rollouts = 512 completions per optimizer step, micro-batches of 8 per GPU;
    # one round of generation serves 4 updates: 2048 tasks (the reference's 512 prompts × 4)
    assert plan.gradient_accumulation_steps == accumulation
    assert plan.per_device_batch * world * plan.gradient_accumulation_steps == 512
    assert plan.steps_per_generation == 4 * accumulation
    assert plan.tasks_per_process == 2048 // world
    assert plan.samples_per_process == 10 * 2048 // world
    assert plan.calls_per_process == 3 * 2048 // world  # ⌈10 / 4⌉ calls per task


def test_updates_per_generation_reuses_one_batch_of_tasks() -> None:
    plan = plan_step(_load("training.updates_per_generation=1"), world_size=2)
    assert plan.steps_per_generation == plan.gradient_accumulation_steps == 32  # on-policy: one update per round
    assert plan.tasks_per_generation == 512


def test_a_batch_that_does_not_split_names_the_key_and_the_flag() -> None:
    config = _load("training.per_device_train_batch_size=7")
    with pytest.raises(ConfigError) as info:
        plan_step(config, world_size=1)
    text = str(info.value)
    assert "--set training.per_device_train_batch_size=7: training.per_device_train_batch_size" in text
    assert "512 completions per step" in text


# --- errors by key ------------------------------------------------------------------------------


def test_a_misspelt_key_is_reported_with_its_line_and_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text("model: {path: smollm2}\ntraining:\n  max_step: 3\n  learning_rate: -1\n")
    with pytest.raises(ConfigError) as info:
        load_train_config(path)
    text = str(info.value)
    assert f"{path}:3: training.max_step: unknown key" in text and "did you mean 'max_steps'?" in text
    assert f"{path}:4: training.learning_rate: Input should be greater than 0 (got -1)" in text


def test_missing_model_and_inconsistent_curriculum_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model: required key is missing"):
        load_train_config(None, [])
    with pytest.raises(ConfigError, match="style 'plain' needs curriculum.prompt"):
        _load("curriculum.style=plain")
    with pytest.raises(ConfigError, match="style 'few_shot' writes math/general problems"):
        _load("curriculum.style=few_shot", "curriculum.domain=open_ended")
    with pytest.raises(ConfigError, match="domain 'workflow' needs curriculum.agent_description"):
        _load("curriculum.domain=workflow")
    with pytest.raises(ConfigError, match="'jax' is not allowed\n.*use one of: auto, transformers, vllm"):
        _load("generation.backend=jax")


def test_reward_overrides_change_only_their_constants() -> None:
    config = _load("reward.preset=agent0-compat", "reward.lambda_rep=0.5", "reward.tool_text_weight=0.25")
    got = reward_config(config)
    assert got.lambda_rep == 0.5 and got.tool_text_weight == 0.25
    assert (got.tool_gamma, got.compat_uncertainty, got.lambda_tool) == (AGENT0_COMPAT.tool_gamma, True, 1.0)
    with pytest.raises(ConfigError, match="reward.tool_cap"):
        _load("reward.tool_cap=-1")


def test_the_reward_section_is_the_reward_config_with_the_preset_filling_nulls() -> None:
    assert isinstance(_load().reward, RewardConfig) and _load().reward.constants == PAPER  # the file's nulls
    compat = _load("reward.preset=agent0-compat", "reward.lambda_tool=null")
    assert reward_config(compat) == AGENT0_COMPAT and compat.reward.k == 10
    with pytest.raises(ConfigError) as info:
        _load("reward.tool_cap=2.5")
    assert info.value.key == ("reward", "tool_cap") and info.value.source == "--set reward.tool_cap=2.5"
    assert "--set reward.tool_cap=2.5: reward.tool_cap: Input should be a valid integer (got 2.5)" in str(info.value)


@pytest.mark.parametrize("off", ["0", "0.0", "null"])
def test_dedupe_threshold_0_and_null_are_off_as_in_the_probe_config(off: str) -> None:
    assert _load(f"curriculum.dedupe_threshold={off}").curriculum.dedupe_threshold is None
    assert _load("curriculum.dedupe_threshold=0.3").curriculum.dedupe_threshold == 0.3
    with pytest.raises(ConfigError, match="dedupe_threshold"):
        _load("curriculum.dedupe_threshold=-0.1")


def test_a_newer_config_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text("version: 2\nmodel: smollm2\n")
    with pytest.raises(ConfigError, match="version 2 is newer"):
        load_train_config(path)


# --- the budget must cover a step ----------------------------------------------------------------


def test_a_budget_that_cannot_cover_one_step_is_refused_with_the_numbers() -> None:
    on_policy = ("training.updates_per_generation=1", "training.max_steps=5")
    config = _load("budget.max_calls=5000", "reward.k=10", *on_policy)
    plan = plan_step(config, world_size=1)  # 512 tasks × 10 samples, one sample per call
    with pytest.raises(BudgetExceededError) as info:
        check_budget(config, plan)
    text = str(info.value)
    assert "budget.max_calls = 5000 cannot cover one training step" in text
    assert "512 tasks × k = 10 samples = 5120 target calls" in text
    assert "at least 5120 per step" in text and "25600 for the whole run" in text
    check_budget(_load("budget.max_calls=5120", *on_policy), plan)  # exactly one step: accepted
    with pytest.raises(BudgetExceededError, match=r"\(\+1 to check the target first\)"):
        check_budget(_load("budget.max_calls=5120", *on_policy), plan, extra_calls=1)
    with pytest.raises(BudgetExceededError, match="budget.max_cost_usd = 0 cannot cover"):
        check_budget(_load("budget.max_cost_usd=0", *on_policy), plan)


def test_a_target_opened_elsewhere_is_checked_against_its_own_budget() -> None:
    from frontier_qa.runtime import Budget

    config = _load("training.prompts_per_step=2", "training.per_device_train_batch_size=8", "reward.k=4",
                   "training.updates_per_generation=1")
    plan = plan_step(config)
    with pytest.raises(BudgetExceededError, match="the target's budget: budget.max_calls = 10"):
        check_budget(config, plan, budget=Budget(max_calls=10))
    check_budget(config, plan, budget=Budget(max_calls=32))


# --- GRPOConfig ---------------------------------------------------------------------------------


def test_cpu_config_builds_a_valid_grpo_config() -> None:
    from trl import GRPOConfig

    from frontier_qa.train._curriculum import grpo_kwargs

    config = _load("training.output_dir=/tmp/never-written", path=CPU)
    args = GRPOConfig(**grpo_kwargs(config, plan_step(config), cuda=False, vllm=False, bf16_ok=False))
    assert args.use_cpu and not args.bf16 and not args.gradient_checkpointing and not args.use_vllm
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.steps_per_generation) == (8, 3, 3)
    assert args.generation_batch_size == 24 and args.num_generations == 6
    assert args.model_init_kwargs == {"dtype": "float32", "local_files_only": True, "trust_remote_code": False}
    assert args.learning_rate == 3e-4 and args.beta == 0.0


def test_gpu_choices_and_vllm_modes_reach_grpo() -> None:
    from frontier_qa.train._curriculum import grpo_kwargs

    config = _load()
    kwargs = grpo_kwargs(config, plan_step(config, 8), cuda=True, vllm=True, bf16_ok=True)
    assert kwargs["bf16"] and kwargs["gradient_checkpointing"] and not kwargs["use_cpu"]
    assert kwargs["use_vllm"] and kwargs["vllm_mode"] == "colocate"
    assert kwargs["model_init_kwargs"]["dtype"] == "bfloat16" and kwargs["gradient_accumulation_steps"] == 8
    server = _load("generation.vllm_mode=server", "generation.vllm_server_base_url=http://10.0.0.2:8000")
    kwargs = grpo_kwargs(server, plan_step(server, 4), cuda=True, vllm=True, bf16_ok=True)
    assert kwargs["vllm_mode"] == "server" and kwargs["vllm_server_base_url"] == "http://10.0.0.2:8000"


def test_training_keys_passed_to_grpo_by_name_are_grpo_config_fields() -> None:
    from frontier_qa.train.config import GRPO_KEYS, TrainingSection, grpo_fields

    assert set(GRPO_KEYS) <= grpo_fields()
    own = {"output_dir", "prompts_per_step", "updates_per_generation", "per_device_train_batch_size", "loss_type",
           "bf16", "use_cpu", "gradient_checkpointing", "extra"}  # the trainer's, resolved, or passed when set
    assert set(TrainingSection.model_fields) == set(GRPO_KEYS) | own


def test_extra_grpo_fields_are_checked_against_grpo_config() -> None:
    from frontier_qa.train._curriculum import grpo_kwargs

    config = _load("training.extra.epsilon=0.3", "training.extra.num_iterations=2")
    kwargs = grpo_kwargs(config, plan_step(config), cuda=False, vllm=False, bf16_ok=False)
    assert kwargs["epsilon"] == 0.3 and kwargs["num_iterations"] == 2
    bad = _load("training.extra.epsilonn=0.3")
    with pytest.raises(ConfigError, match="training.extra.epsilonn: is not a GRPOConfig field") as info:
        grpo_kwargs(bad, plan_step(bad), cuda=False, vllm=False, bf16_ok=False)
    assert "did you mean 'epsilon'?" in (info.value.hint or "")
    clash = _load("training.extra.learning_rate=0.1")
    with pytest.raises(ConfigError, match="set by the trainer from another key"):
        grpo_kwargs(clash, plan_step(clash), cuda=False, vllm=False, bf16_ok=False)


# --- accelerate configs (multi-GPU, multi-node) -----------------------------------------------


def accelerate_check(path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """What ``accelerate launch --config_file path`` would build, or an error for a bad file."""
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import prepare_deepspeed_cmd_env, prepare_multi_gpu_env
    from accelerate.utils.dataclasses import DeepSpeedPlugin, FullyShardedDataParallelPlugin

    cluster = ClusterConfig.from_yaml_file(str(path))  # unknown top-level keys raise here
    parser = launch_command_parser()
    known = {action.dest for action in parser._actions}
    unknown = sorted(k for k in {**cluster.deepspeed_config, **cluster.fsdp_config} if k not in known)
    if unknown:  # accelerate launch would ignore these silently
        raise ValueError(f"keys accelerate launch does not know: {unknown}")
    args, defaults, _ = _validate_launch_command(parser.parse_args(["--config_file", str(path), "train.py"]))
    for name in [n for n in os.environ if n.startswith(("ACCELERATE_", "FSDP_"))]:
        monkeypatch.delenv(name)
    if args.use_deepspeed:
        args.deepspeed_fields_from_accelerate_config = ",".join([*defaults.deepspeed_config, "mixed_precision"])
        _, env = prepare_deepspeed_cmd_env(args)
        for name, value in env.items():
            if name.startswith("ACCELERATE_"):
                monkeypatch.setenv(name, value)
        return DeepSpeedPlugin()
    env = prepare_multi_gpu_env(args)
    for name, value in env.items():
        if name.startswith(("ACCELERATE_", "FSDP_")):
            monkeypatch.setenv(name, value)
    return FullyShardedDataParallelPlugin()


@pytest.mark.parametrize(("name", "stage", "save_16bit"), [("deepspeed_zero2", 2, False), ("deepspeed_zero3", 3, True)])
def test_deepspeed_configs_build_the_plugin_accelerate_launch_would(
    name: str, stage: int, save_16bit: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = accelerate_check(ACCELERATE / f"{name}.yaml", monkeypatch)
    ds = plugin.deepspeed_config  # type: ignore[attr-defined]
    assert plugin.zero_stage == stage  # type: ignore[attr-defined]
    assert ds["zero_optimization"]["stage"] == stage
    assert ds["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is save_16bit
    # batch sizes and accumulation stay "auto": the trainer fills in Agent0's global batch per GPU count
    assert ds["gradient_accumulation_steps"] == ds["train_micro_batch_size_per_gpu"] == "auto"
    assert ds["zero_optimization"]["offload_optimizer"]["device"] == "none"


def test_fsdp_config_builds_a_full_state_dict_fsdp2_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.distributed.fsdp import StateDictType

    plugin = accelerate_check(ACCELERATE / "fsdp.yaml", monkeypatch)
    assert plugin.fsdp_version == 2  # type: ignore[attr-defined]
    assert plugin.state_dict_type == StateDictType.FULL_STATE_DICT  # type: ignore[attr-defined]
    assert plugin.reshard_after_forward is True  # type: ignore[attr-defined]
    assert plugin.cpu_ram_efficient_loading is True  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["deepspeed_zero2", "deepspeed_zero3", "fsdp"])
def test_accelerate_configs_are_multi_process_bf16(name: str) -> None:
    data = yaml.safe_load((ACCELERATE / f"{name}.yaml").read_text())
    assert data["mixed_precision"] == "bf16" and data["num_processes"] == 8 and data["use_cpu"] is False
    assert {"num_machines", "machine_rank", "main_process_ip", "main_process_port"} <= set(data)  # multi-node keys


def test_the_accelerate_check_catches_a_misspelt_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = yaml.safe_load((ACCELERATE / "deepspeed_zero2.yaml").read_text())
    data["deepspeed_config"]["zero_stag"] = data["deepspeed_config"].pop("zero_stage")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="zero_stag"):
        accelerate_check(bad, monkeypatch)
    data = yaml.safe_load((ACCELERATE / "fsdp.yaml").read_text())
    data["fsdp_versoin"] = 2
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="unknown keys"):
        accelerate_check(bad, monkeypatch)


def test_a_bad_value_in_a_training_config_is_an_error_even_where_set_overrides_it(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text(AGENT0.read_text(encoding="utf-8").replace("  dtype: auto ", "  dtype: fp77 "), encoding="utf-8")
    line = next(i for i, text in enumerate(path.read_text().splitlines(), start=1) if "dtype: fp77" in text)
    with pytest.raises(ConfigError) as info:
        _load("model.dtype=float32", path=path)
    assert f"{path}:{line}: model.dtype" in str(info.value) and "--set model.dtype=float32" in str(info.value)
    assert _load("model.dtype=float32").model.dtype == "float32"  # the shipped file: the flag wins



def test_a_rule_across_keys_holds_for_the_merged_config_not_for_each_layer() -> None:
    from frontier_qa.train._coevolve_config import load_coevolve_config

    # the file says style: instruct (and no prompt); the flags switch to plain and give the prompt. Each of the
    # file's values is valid and so is the merged config: the file's style beside the flags' prompt is no error
    config = load_coevolve_config(REPO / "configs" / "coevolve" / "agent0.yaml", [
        parse_set("curriculum.curriculum.style=plain"), parse_set("curriculum.curriculum.prompt.user=Write a task.")])
    assert config.curriculum.curriculum.style == "plain" and config.curriculum.curriculum.prompt is not None
