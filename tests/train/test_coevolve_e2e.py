"""A full co-evolution iteration on CPU with tiny models: every phase real, nothing mocked.

The curriculum is a tiny model imprinted to write "What is a + b?" questions; the executor is
the tiny tool user of ``tests/tiny_models.py`` (it answers those questions with a python block,
reads the sandbox output and boxes it). So the loop runs as on real models: GRPO steps of the
curriculum rewarded by the executor's tool-using samples, a pool written by the frozen curriculum,
k sandboxed samples per task, the band filter, pseudo-labels, ADPO steps on multi-turn rollouts
with real sandbox turns, checkpoints, held-out and Table 5 evaluation, the report, and resume.

One departure from Agent0, because of the model size: the band is [0.25, 1.0]. A 100k-parameter
imprinted model is right on most samples of a question it memorised (p̂ 0.75-1.0), so Agent0's
0.3 ≤ p̂ ≤ 0.8 would often keep no task and the executor phase would be skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_qa.config import parse_set
from frontier_qa.train._coevolve import run_coevolution
from frontier_qa.train._coevolve_config import load_coevolve_config
from frontier_qa.train._executor import read_rollouts
from frontier_qa.train._pool import FILTERED_FILE, SCORED_FILE, TASKS_FILE, PoolTask, ScoredTask, read_jsonl
from tests.tiny_models import TOOL_PAIRS, build_question_writer_model, build_tool_user_model, tool_question

pytestmark = [pytest.mark.slow]

WRITE = "Write one math problem."
SYSTEM = "Solve it with python, then box the answer."


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("coevolve-models")
    questions = [tool_question(a, b) for a, b in TOOL_PAIRS]
    curriculum = build_question_writer_model(root / "curriculum", WRITE, questions, seed=1)
    executor = build_tool_user_model(root / "executor", system=SYSTEM)
    return curriculum, executor


def config(models: tuple[Path, Path], run: Path, *sets: str):  # noqa: ANN201
    curriculum, executor = models
    heldout = run.parent / "heldout.jsonl"
    heldout.write_text("".join(json.dumps({"problem": tool_question(a, b), "answer": a + b}) + "\n"
                               for a, b in TOOL_PAIRS[:3]))
    base = [
        f"run_dir={run}", "iterations=1", "seed=0",
        f"curriculum.model.path={curriculum}", "curriculum.curriculum.style=plain",
        f"curriculum.curriculum.prompt.user={WRITE}", "curriculum.reward.k=2",
        "curriculum.training.max_steps=1", "curriculum.training.prompts_per_step=2",
        "curriculum.training.num_generations=2", "curriculum.training.per_device_train_batch_size=4",
        "curriculum.training.learning_rate=1e-3", "curriculum.training.beta=0.0",
        "curriculum.training.max_completion_length=16", "curriculum.generation.backend=transformers",
        f"executor.model.path={executor}", f"executor.system={SYSTEM}", "executor.sampling.max_tokens=40",
        "executor.tools.max_tool_turns=2", "executor.tools.timeout_s=10",
        "executor.training.max_steps=2", "executor.training.prompts_per_step=2",
        "executor.training.num_generations=4", "executor.training.per_device_train_batch_size=8",
        "executor.training.learning_rate=1e-3", "executor.training.beta=0.0",
        "executor.training.max_completion_length=64", "executor.training.save_steps=1",
        "pool.size=6", "pool.k=4", "pool.band=[0.25, 1.0]", "pool.sampling.max_tokens=16",
        f"evaluation.heldout={heldout}", "evaluation.samples=2", "evaluation.table5_tasks=4",
    ]
    return load_coevolve_config(None, [parse_set(s) for s in [*base, *sets]])


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_one_iteration_end_to_end_then_resume_within_and_across_iterations(
    models: tuple[Path, Path], tmp_path: Path, report_measurement  # noqa: ANN001
) -> None:
    import time

    run = tmp_path / "run"
    lines: list[str] = []
    started = time.perf_counter()
    result = run_coevolution(config(models, run), progress=lines.append)
    elapsed = time.perf_counter() - started
    it = run / "iter-1"

    # curriculum: a GRPO step against the tool-using executor, saved as a model folder
    assert (it / "curriculum" / "final" / "config.json").is_file()
    assert result.records[0]["curriculum"]["steps"] == 1

    # pool: the frozen curriculum's tasks, each answered k = 4 times with real sandbox turns
    tasks = read_jsonl(it / "pool" / TASKS_FILE, PoolTask)
    scored = read_jsonl(it / "pool" / SCORED_FILE, ScoredTask)
    kept = read_jsonl(it / "pool" / FILTERED_FILE, ScoredTask)
    assert len(tasks) == 6 and scored and all(s.k == 4 for s in scored)
    assert sum(sum(s.tool_calls) for s in scored) > 0
    assert kept and all(0.25 <= s.p_hat <= 1.0 and s.majority for s in kept)
    pool = result.records[0]["pool"]
    assert pool["kept"] == len(kept) and sum(pool["p_hat_histogram"]) == len(scored)

    # executor: ADPO steps on multi-turn rollouts, pseudo-labels as rewards, real tool output
    rollouts = read_rollouts(it / "executor" / "rollouts.jsonl")
    assert {r.step for r in rollouts} == {1, 2}
    assert {r.label for r in rollouts} <= {s.majority for s in kept}
    with_tools = [r for r in rollouts if r.tool_calls > 0]
    assert with_tools and any("```output\n" in r.completion for r in with_tools)
    labelled = {s.task_id: s for s in kept}
    assert all(r.p_hat == labelled[r.task_id].p_hat for r in rollouts)
    executor = result.executor_model
    assert executor == it / "executor" / "final" and (it / "executor" / "checkpoint-2").is_dir()
    before, after = _weights(models[1]), _weights(executor)
    assert any(not before[k].equal(after[k]) for k in before)

    # evaluation and report
    record = result.records[0]
    assert record["heldout"]["samples"] == 6 and record["table5"]["questions"] == min(4, len(
        [s for s in scored if s.majority]))
    md = (run / "report.md").read_text()
    assert "| after iteration 1 |" in md and "| D_iter1 |" in md and "| 1 | 1 |" in md
    state = json.loads((run / "state.json").read_text())
    assert state["iterations"]["1"]["done"] == ["curriculum", "pool", "executor", "evaluate"]
    report_measurement("coevolve_iteration", f"co-evolution: one iteration with tiny models in {elapsed:.1f} s; "
                       f"pool {pool['valid']}/{pool['written']} valid, {pool['kept']} kept, tool calls per sample "
                       f"{pool['tool_calls_per_sample']:.2f}; {len(rollouts)} ADPO rollouts, "
                       f"{len(with_tools)} with tool calls; held-out {record['heldout']['rate']:.2f}")

    # within an iteration: the executor phase stopped after its last checkpoint was written
    state["iterations"]["1"]["done"] = ["curriculum", "pool"]
    (run / "state.json").write_text(json.dumps(state))
    import shutil

    shutil.rmtree(it / "executor" / "final")
    n_rollouts = len(rollouts)
    lines.clear()
    resumed = run_coevolution(config(models, run), resume=True, progress=lines.append)
    assert any("executor" in line and "resuming" in line for line in lines)
    assert not any("curriculum: GRPO" in line or "curriculum writes" in line for line in lines)
    assert len(read_rollouts(it / "executor" / "rollouts.jsonl")) == n_rollouts  # no step redone
    assert (it / "executor" / "final" / "config.json").is_file() and resumed.iterations == 1

    # across iterations: T grows to 2, iteration 2 starts from iteration 1's two models
    lines.clear()
    two = run_coevolution(config(models, run, "iterations=2"), resume=True, progress=lines.append)
    assert two.iterations == 2 and len(two.records) == 2
    it2 = json.loads((run / "iter-2" / "curriculum" / "train-config.json").read_text())
    assert it2["model"]["path"] == str(it / "curriculum" / "final")
    assert it2["target"]["spec"] == f"tools+hf:{it / 'executor' / 'final'}"
    assert "| after iteration 2 |" in (run / "report.md").read_text()
    assert "| D_iter2 |" in (run / "report.md").read_text()
