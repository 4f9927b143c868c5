"""Multi-turn tool rollouts in training: ToolRollout as TRL's rollout_func.

Everything is real: the tiny tool-using model of ``tests/tiny_models.py`` generates, its code
runs in the real sandbox, and an ``ADPOTrainer`` turns the rollouts into a batch and a loss.
"""

from __future__ import annotations

import math

import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.train.tool_rollout import ToolRollout, ToolSettings

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from tests.tiny_models import (  # noqa: E402 - needs trl
    TOOL_PAIRS,
    answer_text,
    build_tool_user_model,
    output_block,
    repeat_question,
    tool_code_block,
    tool_question,
)


@pytest.fixture(scope="module")
def tool_model(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = build_tool_user_model(tmp_path_factory.mktemp("tool-model"))
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32)
    return folder, tokenizer, model


def _prompt_ids(tokenizer, question: str) -> list[int]:
    text = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                         add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _config(tokenizer, **kwargs):
    from transformers import GenerationConfig

    return GenerationConfig(eos_token_id=[tokenizer.eos_token_id], pad_token_id=tokenizer.pad_token_id, **kwargs)


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


# --- settings ------------------------------------------------------------------------------------


def test_settings_are_validated() -> None:
    assert ToolSettings().max_tool_turns == 4  # Agent0
    with pytest.raises(ConfigError, match="max_tool_turns"):
        ToolSettings(max_tool_turns=-1)
    with pytest.raises(ConfigError, match="output_max_chars"):
        ToolSettings(output_max_chars=0)
    with pytest.raises(ConfigError, match="timeout"):
        ToolSettings(sandbox={"timeout": 3})  # the option is timeout_s
    assert ToolSettings(sandbox={"timeout_s": 3}).sandbox == {"timeout_s": 3}


def test_vllm_setups_the_rollouts_cannot_serve_are_refused() -> None:
    from frontier_qa.train._vllm_rollout import VLLMTurns

    class Engine:  # only these attributes are read before refusing (tests/train/test_vllm_rollout.py runs vLLM)
        mode, tensor_parallel_size, enable_sleep_mode = "colocate", 2, False

    class Trainer:
        use_vllm, vllm_generation = True, Engine()

    with pytest.raises(ConfigError, match="vllm_tensor_parallel_size: 1"):
        VLLMTurns.for_trainer(Trainer())
    Engine.tensor_parallel_size, Engine.enable_sleep_mode = 1, True
    with pytest.raises(ConfigError, match="sleep mode"):
        VLLMTurns.for_trainer(Trainer())


def test_the_installed_trl_reads_env_mask() -> None:
    from frontier_qa.train.tool_rollout import check_trl_rollout

    check_trl_rollout()


# --- rollouts with the real model and sandbox ------------------------------------------------------


def test_greedy_rollout_is_code_then_masked_output_then_answer(tool_model) -> None:
    _, tokenizer, model = tool_model
    rollout = ToolRollout(ToolSettings(max_tool_turns=4))
    prompts = [_prompt_ids(tokenizer, tool_question(a, b)) for a, b in TOOL_PAIRS]
    traces = rollout.generate(model, tokenizer, prompts, generation_config=_config(tokenizer, do_sample=False),
                              max_completion_length=64)
    for (a, b), trace in zip(TOOL_PAIRS, traces, strict=True):
        code, tool = _ids(tokenizer, tool_code_block(a, b)), _ids(tokenizer, output_block(str(a + b)))
        answer = _ids(tokenizer, answer_text(a, b)) + [tokenizer.eos_token_id]
        r = trace.rollout
        # the sandbox's tokens are exactly the output block of the code's real output, and only they are 0
        assert r.completion_ids == tuple(code + tool + answer)
        assert r.tool_mask == tuple([1] * len(code) + [0] * len(tool) + [1] * len(answer))
        assert (trace.tool_calls, trace.tool_failures, trace.observations, trace.stop) == (1, 0, (str(a + b),), "eos")


def test_sampled_rollouts_run_the_models_own_code(tool_model) -> None:
    from frontier_qa.adapters.tool_executor import find_code, format_output
    from frontier_qa.runtime.sandbox import Sandbox

    _, tokenizer, model = tool_model
    torch.manual_seed(0)
    rollout = ToolRollout()
    traces = rollout.generate(model, tokenizer, [_prompt_ids(tokenizer, tool_question(17, 25))] * 16,
                              generation_config=_config(tokenizer, do_sample=True, temperature=1.0, top_p=1.0),
                              max_completion_length=64)
    sandbox = Sandbox()
    for trace in traces:
        ids, mask = trace.rollout.completion_ids, trace.rollout.tool_mask
        assert len(ids) <= 64
        model_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
        tool_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
        shown = "".join(output_block(o) for o in trace.observations)
        # the last output block is cut where the rollout reached max_completion_length
        assert tool_text == shown if trace.stop == "eos" else shown.startswith(tool_text)
        # each observation is what the code the model wrote prints when run again
        first = find_code(model_text)
        if trace.tool_calls:
            assert first is not None
            assert format_output(sandbox.run(first.group(1)), 4000) == trace.observations[0]
    assert sum(t.observations[:1] == ("42",) for t in traces) >= 10  # measured 13 of 16
    assert sum("\\boxed{42}" in tokenizer.decode(t.rollout.completion_ids) for t in traces) >= 8  # measured 12


@pytest.mark.parametrize("limit", [1, 2])
def test_tool_turns_stop_at_the_limit(tool_model, limit: int) -> None:
    _, tokenizer, model = tool_model
    rollout = ToolRollout(ToolSettings(max_tool_turns=limit))
    (trace,) = rollout.generate(model, tokenizer, [_prompt_ids(tokenizer, repeat_question(17, 25))],
                                generation_config=_config(tokenizer, do_sample=False), max_completion_length=96)
    text = tokenizer.decode(trace.rollout.completion_ids, skip_special_tokens=True)
    assert trace.tool_calls == trace.rollout.tool_turns == limit
    assert text.count("```output") == limit
    # the model asked again after the last output: those blocks are written but not run
    after_last_output = text.rsplit("```output", 1)[1]
    assert "```python\nprint(17 + 25)\n```" in after_last_output
    assert trace.observations == ("42",) * limit


def test_completion_is_cut_at_max_completion_length(tool_model) -> None:
    _, tokenizer, model = tool_model
    rollout = ToolRollout()
    code = _ids(tokenizer, tool_code_block(17, 25))
    prompts = [_prompt_ids(tokenizer, tool_question(17, 25))]
    for limit in (len(code) - 3, len(code) + 4, 30):
        (trace,) = rollout.generate(model, tokenizer, prompts, generation_config=_config(tokenizer, do_sample=False),
                                    max_completion_length=limit)
        assert len(trace.rollout.completion_ids) == limit and trace.stop == "length"
        full = code + _ids(tokenizer, output_block("42")) + _ids(tokenizer, answer_text(17, 25))
        assert list(trace.rollout.completion_ids) == full[:limit]
        assert trace.tool_calls == (0 if limit < len(code) + 1 else 1)  # cut before the block closed: not run


def test_a_failing_run_is_counted_and_shown(tool_model) -> None:
    _, tokenizer, model = tool_model
    rollout = ToolRollout(ToolSettings(sandbox={"timeout_s": 0.01}))  # no interpreter starts in 10 ms
    (trace,) = rollout.generate(model, tokenizer, [_prompt_ids(tokenizer, tool_question(3, 4))],
                                generation_config=_config(tokenizer, do_sample=False), max_completion_length=64)
    assert (trace.tool_calls, trace.tool_failures) == (1, 1)
    assert "TimeoutError" in trace.observations[0]
    assert "TimeoutError" in tokenizer.decode(trace.rollout.completion_ids)


# --- inside a real ADPOTrainer -------------------------------------------------------------------


class RecordingRollout(ToolRollout):
    """ToolRollout that keeps the prompts TRL hands it (to check how many and in what order)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[list[str]] = []

    def __call__(self, prompts, trainer):
        self.calls.append(list(prompts))
        return super().__call__(prompts, trainer)


@pytest.fixture(scope="module")
def trainer(tool_model, tmp_path_factory):
    from datasets import Dataset
    from trl import GRPOConfig

    from frontier_qa.target import Case
    from frontier_qa.train._executor import _trl_experimental_silenced
    from frontier_qa.train._prompts import render_text
    from frontier_qa.train.adpo import PseudoLabelReward
    from frontier_qa.train.adpo_trainer import ADPOTrainer

    folder, tokenizer, _ = tool_model
    rows = [{"prompt": render_text(tokenizer, Case(id=f"t{i}", prompt=tool_question(a, b))), "pseudo_label": str(a + b),
             "p_hat": p, "task_id": f"t{i}"} for i, ((a, b), p) in enumerate(zip(TOOL_PAIRS[:2], [0.8, 0.3], strict=True))]
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("out")), per_device_train_batch_size=4, num_generations=2,
        max_completion_length=48, max_steps=1, use_cpu=True, bf16=False, gradient_checkpointing=False,
        report_to="none", save_strategy="no", seed=0, loss_type="dapo", temperature=1.0, top_p=1.0,
    )
    with _trl_experimental_silenced():
        return ADPOTrainer(model=str(folder), reward_funcs=[PseudoLabelReward()], args=args,
                           train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                           rollout_func=RecordingRollout())


def test_rollouts_become_the_batch_with_tool_output_masked(trainer) -> None:
    tokenizer = trainer.processing_class
    trainer.model.train()
    rows = [dict(r) for r in trainer.train_dataset for _ in range(2)]  # as TRL's sampler repeats them
    torch.manual_seed(0)
    out = trainer._generate_and_score_completions(rows)
    rollout = trainer.rollout_func
    # TRL passed every (already repeated) row, in order; one completion came back per row
    assert rollout.calls[-1] == [r["prompt"] for r in rows]
    traces = rollout.last
    assert len(traces) == len(rows) == out["advantages"].shape[0]
    assert sum(t.tool_calls for t in traces) >= 2
    mask, tool_mask = out["completion_mask"], out["tool_mask"]
    for i, trace in enumerate(traces):
        n = len(trace.rollout.completion_ids)
        assert out["completion_ids"][i, :n].tolist() == list(trace.rollout.completion_ids)
        assert mask[i, :n].tolist() == [1] * n and mask[i, n:].sum() == 0  # tool output stays attended to
        assert tool_mask[i, :n].tolist() == list(trace.rollout.tool_mask)
        masked = [t for t, m in zip(trace.rollout.completion_ids, trace.rollout.tool_mask, strict=True) if not m]
        assert tokenizer.decode(masked) == "".join(output_block(o) for o in trace.observations)
    # TRL's loss normaliser counts the model's tokens only
    assert out["num_items_in_batch"].item() == sum(t.rollout.trained_tokens for t in traces)
    metrics = trainer._metrics["train"]
    assert metrics["tools/call_frequency"][-1] == pytest.approx(sum(t.tool_calls for t in traces) / len(traces))
    assert metrics["tools/failure_frequency"][-1] == 0.0
    # rewards saw the rollout's columns and the text with the tool output in it
    assert "rewards/pseudo_label/mean" in metrics


def test_tool_tokens_do_not_move_the_loss(trainer) -> None:
    trainer.model.eval()  # dapo divides by num_items_in_batch alone
    rows = [dict(r) for r in trainer.train_dataset for _ in range(2)]
    torch.manual_seed(1)
    out = trainer._generate_and_score_completions(rows)
    traces = trainer.rollout_func.last
    assert any(t.tool_calls for t in traces)
    B, T = out["completion_ids"].shape
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, torch.cat([out["prompt_ids"], out["completion_ids"]], 1),
            torch.cat([out["prompt_mask"], out["completion_mask"]], 1), T)
    # where the tool's tokens are, from the rollout's own segments (not from the batch under test)
    tool = torch.zeros(B, T, dtype=torch.bool)
    for i, trace in enumerate(traces):
        n = len(trace.rollout.tool_mask)
        tool[i, :n] = torch.tensor(trace.rollout.tool_mask) == 0
    assert tool.sum() > 0
    inputs = dict(out, advantages=torch.ones(B))

    def loss_with(ratio_on_tool: float, ratio_on_model: float) -> float:
        ratio = torch.where(tool, torch.tensor(ratio_on_tool), torch.tensor(ratio_on_model))
        inputs["old_per_token_logps"] = logps - torch.log(ratio)
        return trainer._compute_loss(trainer.model, inputs).item()

    # ratio 1 on every model token, advantage 1: loss −1 exactly, whatever the tool tokens' ratio
    assert loss_with(1.0, 1.0) == pytest.approx(-1.0, abs=1e-5)
    assert loss_with(5.0, 1.0) == pytest.approx(-1.0, abs=1e-5)
    assert loss_with(0.01, 1.0) == pytest.approx(-1.0, abs=1e-5)
    # the model's own tokens do move it: ratio 1.1 (< 1 + ε_high for every p̂) gives −1.1
    assert loss_with(5.0, 1.1) == pytest.approx(-1.1, abs=1e-5)
    assert math.isfinite(loss_with(1.0, 1.0))


def test_temperature_comes_from_the_trainer(trainer) -> None:
    prompt = [trainer.train_dataset[0]["prompt"]] * 8
    trainer.model.train()
    original = trainer.generation_config.temperature
    try:
        trainer.generation_config.temperature = 1e-4  # near greedy: eight identical rollouts
        torch.manual_seed(2)
        cold = trainer.rollout_func(prompt, trainer)["completion_ids"]
        trainer.generation_config.temperature = 3.0
        torch.manual_seed(2)
        hot = trainer.rollout_func(prompt, trainer)["completion_ids"]
    finally:
        trainer.generation_config.temperature = original
    assert len({tuple(c) for c in cold}) == 1
    assert len({tuple(c) for c in hot}) > 1
