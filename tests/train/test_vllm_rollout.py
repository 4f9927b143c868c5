"""Executor tool rollouts through TRL's colocated vLLM engine (``generation.backend: vllm``).

A real ``ADPOTrainer`` with ``use_vllm=True, vllm_mode="colocate"`` on CPU (``vllm-cpu``): TRL
starts its vLLM engine in this process and :class:`~frontier_qa.train.tool_rollout.ToolRollout`
generates the tiny tool user's turns there, stopping at every code fence and resuming until a
python block closes, with the real sandbox between turns.

One part of TRL cannot run on vLLM-CPU: its in-place weight sync (``load_weights`` on the
engine's layers), because the CPU backend repacks linear weights for oneDNN and drops the
loaders TRL calls. The test replaces that sync with a no-op, so the engine keeps the starting
weights: what is tested is the rollout mechanics through TRL's engine (turn boundaries, tool
turns, masks, sampling log-probs reaching TRL's importance-sampling correction), not the sync,
which is TRL's own and runs on GPUs.

TRL's colocated engine initialises ``torch.distributed`` in its process and is never shut down,
so the rollout runs in a child process (this file run as a script) and the test checks its exit.
"""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.skipif(find_spec("vllm") is None, reason="vllm is not installed (CPU: bash .ci/install_vllm_cpu.sh)"),
    pytest.mark.vllm, pytest.mark.slow,
]


def test_tool_rollouts_run_on_trls_colocated_vllm(tmp_path: Path) -> None:
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, __file__, str(tmp_path)], capture_output=True, text=True, timeout=1200,
                         cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)})
    assert out.returncode == 0, out.stderr[-5000:]
    assert "tool rollouts on colocated vLLM: ok" in out.stdout


def rollouts_on_colocated_vllm(tmp_path: Path) -> None:
    """The check itself (in the child process)."""
    import math

    from datasets import Dataset
    from trl import GRPOConfig

    from frontier_qa.train._vllm_rollout import VLLMTurns
    from frontier_qa.train.adpo import PseudoLabelReward
    from frontier_qa.train.adpo_trainer import ADPOTrainer
    from frontier_qa.train.tool_rollout import ToolRollout, ToolSettings
    from tests.tiny_models import TOOL_PAIRS, build_tool_user_model, tool_question

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    model = build_tool_user_model(tmp_path / "model", num_heads=2)
    rows = [{"prompt": [{"role": "user", "content": tool_question(a, b)}], "pseudo_label": str(a + b), "p_hat": 0.5}
            for a, b in TOOL_PAIRS[:4]]
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_generations=4,
                      max_completion_length=48, max_steps=1, learning_rate=1e-3, beta=0.0, use_cpu=True, bf16=False,
                      report_to="none", save_strategy="no", seed=0, logging_steps=1, use_vllm=True, vllm_mode="colocate",
                      vllm_gpu_memory_utilization=0.3, vllm_max_model_length=512)
    rollout = ToolRollout(ToolSettings(max_tool_turns=2, sandbox={"timeout_s": 10}))
    turns: list[VLLMTurns] = []
    original = VLLMTurns.for_trainer

    def recorded(trainer):  # noqa: ANN001, ANN202
        made = original(trainer)
        turns.append(made)
        return made

    VLLMTurns.for_trainer = staticmethod(recorded)  # type: ignore[method-assign]
    try:
        trainer = ADPOTrainer(model=str(model), reward_funcs=[PseudoLabelReward()], args=args,
                              train_dataset=Dataset.from_list(rows), rollout_func=rollout)
        trainer.vllm_generation.sync_weights = lambda: None  # vLLM-CPU cannot take TRL's in-place sync
        trainer.train()
    finally:
        VLLMTurns.for_trainer = original  # type: ignore[method-assign]

    traces = rollout.last
    assert len(traces) == 8 and turns and turns[0].requests >= 2  # generation was resumed after fences
    tokenizer = trainer.processing_class
    with_tools = [t for t in traces if t.tool_calls]
    assert with_tools, [tokenizer.decode(t.rollout.completion_ids) for t in traces]
    for trace in traces:
        ids, mask, lps = trace.rollout.completion_ids, trace.rollout.tool_mask, trace.logprobs
        assert lps is not None and len(lps) == len(ids) == len(mask)
        # sampled tokens carry their vLLM log-prob; the sandbox's tokens carry none
        assert all((lp is None) == (m == 0) for lp, m in zip(lps, mask, strict=True))
        assert all(lp <= 0 and math.isfinite(lp) for lp in lps if lp is not None)
    for trace in with_tools:
        text = tokenizer.decode(trace.rollout.completion_ids)
        first_model_turn = tokenizer.decode(trace.rollout.completion_ids[:trace.rollout.tool_mask.index(0)])
        assert first_model_turn.rstrip().endswith("```") and "```python" in first_model_turn  # ended at the block
        assert "```output\n" in text and trace.observations[0]
    logged = [row for row in trainer.state.log_history if "loss" in row]
    assert logged and math.isfinite(logged[0]["loss"])
    assert "tools/call_frequency" in logged[0] and logged[0]["tools/call_frequency"] > 0
    # the log-probs line up with their tokens: the trainer's own, recomputed on the same weights,
    # give importance ratios of 1 up to kernel noise (a shift of one token would not)
    ratio = logged[0]["sampling/importance_sampling_ratio/mean"]
    assert 0.95 < ratio < 1.05 and logged[0]["sampling/importance_sampling_ratio/max"] < 1.5
    print("tool rollouts on colocated vLLM: ok")


if __name__ == "__main__":
    import sys

    rollouts_on_colocated_vllm(Path(sys.argv[1]))
