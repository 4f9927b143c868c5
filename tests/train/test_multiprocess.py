"""The curriculum trainer under ``accelerate launch --num_processes 2`` on CPU (gloo), for real.

Two processes train a tiny curriculum against a Python agent. What multi-GPU training must keep:

* the global batch: one step generates the same number of tasks on 2 processes as on 1
  (each rank its half), so a run means the same thing on any number of GPUs;
* the repetition penalty (Agent0 Eq. 4) is computed over the whole batch on every rank: each
  rank's logged penalties are its slice of the penalty over both ranks' tasks.

The curriculum is the tiny question writer of ``tests/tiny_models.py``: it writes a few
memorised questions, so the two ranks write the same question and a cluster spans both ranks,
which a per-rank penalty would get wrong. ``--multi_gpu`` is what makes ``accelerate launch``
start torchrun; on a machine without a GPU the processes join over gloo.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from frontier_qa.scoring._repetition import repetition_penalty
from frontier_qa.scoring.rewards import PAPER
from frontier_qa.train._tasks import read_tasks

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
WRITE = "Write one math problem."
AGENT = '''
async def arun(task, case, seed, ctx):
    # unsure (A/B by sample) on sums with a 7 in them, sure elsewhere
    return "\\\\boxed{B}" if "7" in task and (seed or 0) % 2 else "\\\\boxed{A}"
'''


def _config(tmp: Path, model: Path, out: Path) -> Path:
    agent = tmp / "agent.py"
    agent.write_text(AGENT)
    path = tmp / f"{out.name}.yaml"
    path.write_text(json.dumps({
        "version": 1, "model": {"path": str(model)},
        "target": {"spec": f"python:{agent}:arun", "cache": False},
        "curriculum": {"style": "plain", "prompt": {"user": WRITE}},
        "reward": {"k": 4, "preflight": False},
        "training": {"output_dir": str(out), "max_steps": 2, "prompts_per_step": 2, "num_generations": 4,
                     "per_device_train_batch_size": 2, "learning_rate": 0.01, "beta": 0.0,
                     "max_completion_length": 16, "save_steps": 10, "seed": 3},
        "generation": {"backend": "transformers"},
    }))  # JSON is YAML
    return path


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=900, cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    return out


def test_two_processes_keep_the_global_batch_and_share_one_repetition_penalty(tmp_path: Path) -> None:
    from frontier_qa.adapters._vllm_server import free_port
    from tests.tiny_models import TOOL_PAIRS, build_question_writer_model, tool_question

    model = build_question_writer_model(tmp_path / "writer", WRITE, [tool_question(a, b) for a, b in TOOL_PAIRS[:4]])
    one, two = tmp_path / "one", tmp_path / "two"
    _run(["-m", "frontier_qa", "train", "curriculum", "--config", str(_config(tmp_path, model, one)), "-q"], tmp_path)
    launched = _run(["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                     "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port()),
                     "-m", "frontier_qa", "train", "curriculum", "--config", str(_config(tmp_path, model, two))],
                    tmp_path)
    assert launched.stderr.count("on 2 process(es): 8 tasks per round") == 2  # each rank planned the global batch

    single = read_tasks(one / "tasks.jsonl")
    ranks = [read_tasks(two / "tasks.jsonl"), read_tasks(two / "tasks-rank1.jsonl")]
    assert Counter(r.step for r in single) == {1: 8, 2: 8}
    assert [Counter(r.step for r in rows) for rows in ranks] == [{1: 4, 2: 4}, {1: 4, 2: 4}]  # 8 per step in all

    spanning = 0
    for step in (1, 2):
        parts = [sorted((r for r in rows if r.step == step), key=lambda r: r.index) for rows in ranks]
        batch = [r.question or "" for part in parts for r in part]  # gathered in process order
        expected = repetition_penalty(batch, weight=PAPER.lambda_rep, threshold=PAPER.rep_threshold,
                                      canonical_order=PAPER.canonical_order)
        logged = [r.repetition for part in parts for r in part]
        assert logged == pytest.approx(expected), (step, batch)
        spanning += bool({r.question for r in parts[0]} & {r.question for r in parts[1]})
    assert spanning  # a question on both ranks: a penalty over one rank's tasks would have differed
