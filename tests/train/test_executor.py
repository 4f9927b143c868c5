"""Executor training: ADPO with sandboxed tool rollouts, from rows to ``final/``.

Real ADPO steps on CPU with the tiny tool-using model of ``tests/tiny_models.py``; the code it
writes runs in the real sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.train._executor import ExecutorRow, read_rollouts, step_plan, train_executor
from frontier_qa.train.config import GenerationSection, LoraSection, ModelSection, SaveSection, TrainingSection
from frontier_qa.train.tool_rollout import ToolSettings

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from tests.tiny_models import TOOL_PAIRS, build_tool_user_model, tool_question  # noqa: E402 - needs trl


def _rows(p_hats=(0.5, 0.7)) -> list[ExecutorRow]:
    return [ExecutorRow(task_id=f"add-{a}-{b}", question=tool_question(a, b), system=None, pseudo_label=str(a + b),
                        p_hat=p) for (a, b), p in zip(TOOL_PAIRS, p_hats, strict=False)]  # the first len(p_hats) pairs


def _training(**kwargs) -> TrainingSection:
    # 2 tasks × 4 rollouts per step at temperature 1 (Agent0's): the model boxes the label in
    # ≈ 70-85 % of rollouts (tests/tiny_models.py), so rewards differ and gradients are not
    # zero; no weight decay, so only gradients move the weights
    base = {"max_steps": 2, "prompts_per_step": 2, "num_generations": 4, "per_device_train_batch_size": 8,
            "max_completion_length": 48, "learning_rate": 1e-3, "weight_decay": 0.0, "temperature": 1.0,
            "top_p": 1.0, "save_steps": 1, "seed": 0, "use_cpu": True}
    return TrainingSection(**{**base, **kwargs})


def _train(folder: Path, out: Path, **kwargs):
    lines: list[str] = []
    options = {"model": ModelSection(path=str(folder)), "training": _training(), "generation": GenerationSection(),
               "save": SaveSection(), "tools": ToolSettings(), "output_dir": out, "progress": lines.append}
    options.update(kwargs)
    return train_executor(_rows(), **options), lines


@pytest.fixture(scope="module")
def tool_model(tmp_path_factory) -> Path:
    return build_tool_user_model(tmp_path_factory.mktemp("tool-model"))


# --- rows and settings ---------------------------------------------------------------------------


def test_rows_are_validated() -> None:
    with pytest.raises(ConfigError, match="p_hat"):
        ExecutorRow(task_id="a", question="q", system=None, pseudo_label="1", p_hat=1.5)
    with pytest.raises(ConfigError, match="no pseudo-label"):
        ExecutorRow(task_id="a", question="q", system=None, pseudo_label=" ", p_hat=0.5)
    with pytest.raises(ConfigError, match="no question"):
        ExecutorRow(task_id="a", question="", system=None, pseudo_label="1", p_hat=0.5)
    assert ExecutorRow(task_id="a", question="q", system="s", pseudo_label="1", p_hat=1).p_hat == 1.0


def test_step_plan_splits_rollouts() -> None:
    plan = step_plan(_training(prompts_per_step=4, num_generations=4, per_device_train_batch_size=4), world_size=2)
    # 16 rollouts per step on 2 devices × 4 per micro-batch: 2 micro-batches each
    assert (plan.gradient_accumulation_steps, plan.steps_per_generation, plan.tasks_per_generation) == (2, 2, 16)
    with pytest.raises(ConfigError, match="per_device_train_batch_size"):
        step_plan(_training(prompts_per_step=3, num_generations=2, per_device_train_batch_size=4))


def test_an_empty_band_is_refused(tmp_path: Path) -> None:
    options = {"model": ModelSection(path=str(tmp_path)), "training": _training(), "generation": GenerationSection(),
               "save": SaveSection(), "tools": ToolSettings(), "output_dir": tmp_path / "out"}
    with pytest.raises(ConfigError, match="band filter kept no task"):
        train_executor([], **options)


def test_vllm_turns_resume_after_a_fence_that_closes_no_python_block() -> None:
    """The turn loop of vLLM rollouts on a scripted engine: each call returns the next piece."""
    from frontier_qa.train._vllm_rollout import VLLMTurns
    from tests.tiny_models import build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()

    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    pieces = {0: [("Let me see.\n```", "fence"), ("python\nprint(1)\n```", "fence")],  # opening, then closing
              1: [("Just \\boxed{2}", "eos")], 2: [("```", "fence"), ("text on and on", "length")]}
    calls: list[list[int]] = []

    def generate(contexts, rooms, fences):  # noqa: ANN001, ANN202
        calls.append([len(c) for c in contexts])
        out = []
        for context, _room in zip(contexts, rooms, strict=True):
            row = int(context[0])
            text, why = pieces[row].pop(0)
            new = ids(text)
            out.append((new, [-0.5] * len(new), why))
        return out

    turns = VLLMTurns(generate, tokenizer, [tokenizer.eos_token_id])([[0], [1], [2]], [64, 64, 64], [True] * 3)
    assert [t.reason for t in turns] == ["code", "eos", "length"]
    assert tokenizer.decode(list(turns[0].token_ids)) == "Let me see.\n```python\nprint(1)\n```"
    assert turns[0].logprobs == (-0.5,) * len(turns[0].token_ids)
    assert len(calls) == 2 and calls[1] == [1 + len(ids("Let me see.\n```")), 1 + len(ids("```"))]  # rows 0, 2 resumed


def test_resume_without_a_checkpoint_says_so(tool_model: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot resume"):
        _train(tool_model, tmp_path / "out", resume=True)


# --- real training -------------------------------------------------------------------------------


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.slow
def test_two_adpo_steps_with_tools_then_resume(tool_model: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "executor"
    first, lines = _train(tool_model, out, training=_training(max_steps=1))
    assert first.steps == 1 and (out / "checkpoint-1").is_dir()
    assert any(line.startswith("step 1:") for line in lines)

    second, _ = _train(tool_model, out, resume=True)  # max_steps 2: one more step from checkpoint-1
    assert second.steps == 2 and (out / "checkpoint-2").is_dir()
    records = read_rollouts(second.rollouts_file)
    # step 1 once (the first run), step 2 once (the resumed run): 2 tasks × 4 rollouts each
    assert [r.step for r in records] == [1] * 8 + [2] * 8
    assert first.rollouts == second.rollouts == 8
    assert {r.task_id for r in records} == {"add-17-25", "add-3-4"}
    assert {r.p_hat for r in records if r.task_id == "add-3-4"} == {0.7}
    with_tools = [r for r in records if r.tool_calls > 0]
    assert with_tools and all("```output\n" in r.completion for r in with_tools)
    assert any("```output\n42\n```" in r.completion for r in records if r.task_id == "add-17-25")
    # rewards differ inside a step, so the advantages (and the gradient) are not zero
    assert {r.reward for r in records} == {0.0, 1.0}
    assert second.reward_mean == pytest.approx(sum(r.reward for r in records[8:]) / 8)
    assert second.tool_calls_per_rollout == pytest.approx(sum(r.tool_calls for r in records[8:]) / 8)

    metrics = [json.loads(line) for line in second.metrics_file.read_text().splitlines()]
    steps = [m for m in metrics if "loss" in m]
    assert [m["step"] for m in steps] == [1, 2]
    assert all(0.0 <= m["tools/call_frequency"] <= 4.0 for m in steps)

    # the weights moved, and final/ is a plain transformers folder
    assert second.final_model == out / "final" and second.adapter is None
    before, after = _weights(tool_model), _weights(second.final_model)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    tokenizer = AutoTokenizer.from_pretrained(str(second.final_model), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(second.final_model), local_files_only=True)
    ids = tokenizer("What is 3 + 4?", return_tensors="pt")
    assert model.generate(**ids, max_new_tokens=3, do_sample=False).shape[1] == ids["input_ids"].shape[1] + 3
    marker = json.loads((second.final_model / "frontier-qa-model.json").read_text())
    assert marker["name"].startswith("frontier-qa executor")

    # killed during step 2 after its rollouts were logged, before checkpoint-2: step 2 is logged once
    import shutil

    shutil.rmtree(out / "checkpoint-2")
    third, _ = _train(tool_model, out, resume=True)
    assert third.steps == 2 and [r.step for r in read_rollouts(third.rollouts_file)] == [1] * 8 + [2] * 8


@pytest.mark.slow
def test_lora_executor_is_merged(tool_model: Path, tmp_path: Path) -> None:
    pytest.importorskip("peft")
    model = ModelSection(path=str(tool_model), lora=LoraSection(r=4, alpha=8, dropout=0.0))
    result, _ = _train(tool_model, tmp_path / "lora", model=model, training=_training(max_steps=1),
                       save=SaveSection(merged=True, adapter=True))
    assert result.final_model is not None and (result.final_model / "config.json").is_file()
    assert result.adapter is not None and (result.adapter / "adapter_config.json").is_file()
    merged = _weights(result.final_model)
    assert set(merged) == set(_weights(tool_model))  # a plain model, no LoRA keys left


def test_importing_the_executor_modules_loads_no_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, frontier_qa.train._executor, frontier_qa.train.tool_rollout; "
            "print(sorted(m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_model_sections_resolve_offline(tool_model: Path, tmp_path: Path) -> None:
    from frontier_qa.train._curriculum import load_tokenizer, resolve_model_path

    assert resolve_model_path(ModelSection(path=str(tool_model))) == tool_model
    assert load_tokenizer(ModelSection(path=str(tool_model)), tool_model).padding_side == "left"
    with pytest.raises(ConfigError, match=r"^model\.path: model 'SomeOrg/not-cached' cannot be loaded offline"):
        resolve_model_path(ModelSection(path="SomeOrg/not-cached"))
