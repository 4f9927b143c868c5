"""Co-evolution: config, pool, band filter, pseudo-labels, evaluation, state and report.

These tests drive the loop's parts with scripted targets inside the real runtime (cache,
retries): no model is loaded. The whole loop with real models runs in
``tests/train/test_coevolve_e2e.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from frontier_qa.config import parse_set
from frontier_qa.errors import ConfigError
from frontier_qa.runtime import run_sync
from frontier_qa.target import Case, Sampling
from frontier_qa.testing import ScriptedAdapter, open_scripted
from frontier_qa.train import _pool as pools
from frontier_qa.train._coevolve import RunState, _open_state, curriculum_config, write_report
from frontier_qa.train._coevolve_config import load_coevolve_config
from frontier_qa.train._evaluate import Question, pass_rate
from frontier_qa.train._heldout import BUILTIN, load_heldout
from frontier_qa.train._prompts import TaskFormat

AGENT0 = "configs/coevolve/agent0.yaml"


def load(*sets: str, path: str | None = AGENT0):  # noqa: ANN201
    return load_coevolve_config(path, [parse_set(s) for s in sets])


# --- configuration ----------------------------------------------------------------------------------


def test_the_agent0_config_uses_the_reference_adpo_schedule() -> None:
    # every other number of agent0.yaml: tests/train/test_paper_settings.py against frontier_qa/train/_agent0_settings.py
    from frontier_qa.train.adpo import REFERENCE

    assert load().executor.adpo == REFERENCE


def test_every_shipped_coevolve_config_loads() -> None:
    files = sorted(Path("configs/coevolve").glob("*.yaml"))
    assert len(files) >= 2
    for f in files:
        load(path=str(f))


@pytest.mark.parametrize(("setting", "key", "fix"), [
    ("curriculum.target=hf:/m", "curriculum.target", "executor.model"),
    ("curriculum.training.output_dir=x", "curriculum.training.output_dir", "run_dir"),
    ("executor.training.output_dir=x", "executor.training.output_dir", "run_dir"),
    ("curriculum.reward.sampling.max_tokens=7", "curriculum.reward.sampling", "executor.sampling"),
    ("curriculum.curriculum.domain=open_ended", "curriculum.curriculum.domain", "math or general"),
    ("pool.band=[0.9, 0.2]", "pool.band", "documents every key"),
    ("executor.adpo.epsilon_low=1.5", "executor.adpo", "documents every key"),
    ("executor.trainig.max_steps=2", "did you mean 'training'", "documents every key"),
])
def test_bad_settings_name_the_key_and_the_fix(setting: str, key: str, fix: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(setting)
    assert key in err.value.message
    assert "--set" in err.value.message  # where the bad value came from
    assert fix in (err.value.hint or "") + err.value.message


def test_lora_runs_must_merge_for_the_next_iteration() -> None:
    with pytest.raises(ConfigError, match="executor.save.merged"):
        load("executor.model.lora.r=8", "executor.save.merged=false")


def test_each_iteration_trains_the_curriculum_against_the_current_executor_with_tools(tmp_path: Path) -> None:
    c = load(f"run_dir={tmp_path}")
    it2 = curriculum_config(c, 2, Path("/models/exec-1"), "/models/cur-1")
    assert it2.target.spec == "tools+vllm:/models/exec-1"
    assert it2.target.tool_options["max_tool_turns"] == 4 and it2.target.tool_options["sandbox"]["timeout_s"] == 10
    assert it2.model.path == "/models/cur-1" and it2.training.output_dir == str(tmp_path / "iter-2" / "curriculum")
    assert it2.training.seed == c.curriculum.training.seed + 1
    assert it2.reward.sampling.max_tokens == c.executor.sampling.max_tokens == 2048
    assert it2.target.options == {"dtype": "bfloat16", "gpu_memory_utilization": 0.4}  # agent0.yaml: sampler vllm


# --- held-out set -----------------------------------------------------------------------------------


def test_the_builtin_heldout_answers_are_right() -> None:
    items = load_heldout(BUILTIN)
    assert len(items) == 40 and len({i.problem for i in items}) == 40
    for item in items:
        m = re.fullmatch(r"What is (\d+) × (\d+) − (\d+)\?", item.problem)
        if m:
            a, b, c = map(int, m.groups())
            assert item.answer == str(a * b - c)
        m = re.search(r"sum of all integers from (\d+) to (\d+)", item.problem)
        if m:
            lo, hi = map(int, m.groups())
            assert item.answer == str(sum(range(lo, hi + 1)))
        m = re.search(r"at (\d+) cents each\. Mia buys (\d+) pencils and pays with (\d+) dollars", item.problem)
        if m:
            price, count, dollars = map(int, m.groups())
            assert item.answer == str(100 * dollars - price * count) and int(item.answer) > 0
    assert load_heldout(BUILTIN, limit=5) == items[:5]


def test_a_heldout_file_is_read_and_a_bad_row_is_named(tmp_path: Path) -> None:
    good = tmp_path / "h.jsonl"
    good.write_text('{"problem": "1+1?", "answer": 2}\n{"question": "2+2?", "answer": "4", "id": "q2"}\n')
    items = load_heldout(str(good))
    assert [(i.id, i.problem, i.answer) for i in items] == [("heldout-000", "1+1?", "2"), ("q2", "2+2?", "4")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"problem": "1+1?", "answer": 2}\n{"problem": "no answer"}\n')
    with pytest.raises(ConfigError, match="row 2 needs a problem and an answer"):
        load_heldout(str(bad))
    with pytest.raises(ConfigError, match="is not a file"):
        load_heldout(str(tmp_path / "missing.jsonl"))


# --- the pool ---------------------------------------------------------------------------------------

PLAIN = TaskFormat("math", "plain", prompt={"user": "Write one math problem."})


def writes_problems(case: Case, index: int) -> str:
    """A scripted curriculum: sample i writes problem i (index 3 writes nothing usable)."""
    return "" if index == 3 else f"What is {index} + {index}?"


def test_the_frozen_curriculum_writes_the_pool_and_resumes_where_it_stopped(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(writes_problems, id="scripted:curriculum")
    out = tmp_path / "tasks.jsonl"
    tasks = run_sync(pools.generate_tasks(open_scripted(adapter), PLAIN, 6, Sampling(), out, offset=0))
    assert [t.index for t in tasks] == list(range(6))
    assert [t.question for t in tasks] == [f"What is {i} + {i}?" if i != 3 else None for i in range(6)]
    assert tasks[3].error and tasks[3].task_id is None
    assert sorted(adapter.samples_for(c) for c in {c for c, _, _ in adapter.calls}) == [[i] for i in range(6)]
    # a run stopped after 4 tasks, the last line torn mid-write: only the rest is asked for
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:4]) + "\n" + lines[4][:10])
    again = ScriptedAdapter(writes_problems, id="scripted:curriculum")
    resumed = run_sync(pools.generate_tasks(open_scripted(again), PLAIN, 6, Sampling(), out, offset=0))
    assert [t.question for t in resumed] == [t.question for t in tasks]
    assert again.samples == 2


def unsure_on_odd(case: Case, index: int) -> str | None:
    """A scripted executor: sure on even n, split 6:4 on odd n, no answer on n = 4."""
    n = int(re.search(r"What is (\d+)", case.prompt).group(1))
    if n == 4:
        return None
    if n % 2 == 0:
        return str(2 * n)
    return str(2 * n) if index % 10 < 6 else str(2 * n + 1)


def _pool(n: int) -> list[pools.PoolTask]:
    return [pools.PoolTask(index=i, task_id=f"t{i}", question=f"What is {i} + {i}?", system="Box it.")
            for i in range(n)] + [pools.PoolTask(index=n, error="no question")]


def test_tasks_in_the_band_are_kept_and_labelled_with_the_executors_majority(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(unsure_on_odd, id="scripted:executor")
    scored = run_sync(pools.label_tasks(open_scripted(adapter), _pool(6), k=10, sampling=Sampling(),
                                        out=tmp_path / "scored.jsonl", band=(0.3, 0.8)))
    by = {s.task_id: s for s in scored}
    assert set(by) == {f"t{i}" for i in range(6)}  # the invalid task is not sampled
    assert by["t2"].p_hat == 1.0 and not by["t2"].kept and "sure" in by["t2"].reason
    assert by["t4"].majority is None and not by["t4"].kept and "no parsed answer" in by["t4"].reason
    for odd in ("t1", "t3", "t5"):
        n = int(odd[1:])
        assert by[odd].p_hat == pytest.approx(0.6) and by[odd].majority == str(2 * n) and by[odd].kept
        assert by[odd].answers.count(str(2 * n)) == 6
    assert adapter.samples == 60
    kept = pools.select(scored, None)
    assert [s.task_id for s in kept] == [s.task_id for s in scored if s.task_id in ("t1", "t3", "t5")]
    summary = pools.summary(_pool(6), scored, kept)
    assert (summary["written"], summary["valid"], summary["distinct"], summary["kept"]) == (7, 6, 6, 3)
    assert summary["p_hat_histogram"][6] == 3 and summary["p_hat_histogram"][9] == 2
    # resume: every task already scored, nothing is sampled again
    again = ScriptedAdapter(unsure_on_odd, id="scripted:executor")
    rescored = run_sync(pools.label_tasks(open_scripted(again), _pool(6), k=10, sampling=Sampling(),
                                          out=tmp_path / "scored.jsonl", band=(0.3, 0.8)))
    assert again.samples == 0 and [s.task_id for s in rescored] == [s.task_id for s in scored]


def test_band_edges_are_inclusive_and_a_cap_keeps_the_most_uncertain() -> None:
    assert pools.keep_task(0.3, "1", (0.3, 0.8))[0] and pools.keep_task(0.8, "1", (0.3, 0.8))[0]
    assert not pools.keep_task(0.29, "1", (0.3, 0.8))[0] and not pools.keep_task(0.81, "1", (0.3, 0.8))[0]
    # the probe's band test, slack included: a p̂ a float rounding below 0.3 is the probe's frontier and kept
    from frontier_qa.scoring.bands import AGENT0_BAND

    edge = 0.3 - 1e-12
    assert AGENT0_BAND.contains(edge) and pools.keep_task(edge, "1", (0.3, 0.8)) == (True, "in band")
    assert pools.keep_task(0.5, None, (0.3, 0.8)) == (False, "no parsed answer (no pseudo-label)")
    assert pools.keep_task(0.9, "1", (0.3, 0.8)) == (False, "p̂ 0.90 > 0.8: the executor is sure")
    scored = [pools.ScoredTask(task_id=f"t{i}", question="q", k=10, p_hat=p, majority="1", kept=True)
              for i, p in enumerate([0.8, 0.5, 0.3, 0.6, 0.4])]
    assert [s.task_id for s in pools.select(scored, 3)] == ["t1", "t3", "t4"]  # |p̂ − 0.5| ≤ 0.1, pool order
    assert pools.p_hat_histogram(scored) == [0, 0, 0, 1, 1, 1, 1, 0, 1, 0]


def test_pass_rate_grades_boxed_answers_by_equivalence_and_counts_samples() -> None:
    def answers(case: Case, index: int) -> str | None:
        return {"a": "4", "b": "0.5" if index == 0 else None, "c": "7"}[case.id]

    questions = [Question("a", "2+2?", "4"), Question("b", "1/2?", "1/2"), Question("c", "3+3?", "6")]
    r = run_sync(pass_rate(open_scripted(ScriptedAdapter(answers)), questions, samples=2, sampling=Sampling()))
    assert (r.questions, r.samples, r.correct, r.answered, r.failed) == (3, 6, 3, 5, 0)
    assert r.rate == pytest.approx(0.5) and r.tool_calls_per_task == 0.0


# --- state and report -------------------------------------------------------------------------------


def test_a_run_folder_is_never_overwritten_and_resumes_only_with_the_same_config(tmp_path: Path) -> None:
    c = load(f"run_dir={tmp_path}")
    state = _open_state(c, resume=False)
    (tmp_path / "state.json").write_text(state.model_dump_json())
    with pytest.raises(ConfigError, match="already holds a co-evolution run") as err:
        _open_state(c, resume=False)
    assert "--resume" in (err.value.hint or "")
    assert _open_state(load(f"run_dir={tmp_path}", "iterations=5"), resume=True) == state  # T may grow
    with pytest.raises(ConfigError, match=r"configuration changed since it started \(pool.k\)"):
        _open_state(load(f"run_dir={tmp_path}", "pool.k=4"), resume=True)


def test_the_report_has_heldout_pool_table5_and_training_rows(tmp_path: Path) -> None:
    c = load(f"run_dir={tmp_path}", "iterations=2")
    state = RunState(base_executor="/m/base", baseline={"rate": 0.25, "tool_calls_per_task": 0.5})
    it = state.iteration(1)
    it.done = ["curriculum", "pool", "executor", "evaluate"]
    it.curriculum_model, it.executor_model = "/r/iter-1/curriculum/final", "/r/iter-1/executor/final"
    it.record = {"heldout": {"rate": 0.375, "tool_calls_per_task": 1.25},
                 "pool": {"written": 8, "valid": 7, "distinct": 6, "kept": 3, "mean_p_hat": 0.65,
                          "tool_calls_per_sample": 1.5, "p_hat_histogram": [0, 0, 0, 1, 0, 1, 1, 0, 0, 3]},
                 "table5": {"rate": 0.64, "tool_calls_per_task": 1.65},
                 "curriculum": {"steps": 5, "per_step": [{"reward": 0.1}, {"reward": 0.42}]},
                 "executor": {"trained": True, "steps": 5, "reward_mean": 0.7, "tool_calls_per_rollout": 1.1}}
    state.iteration(2).done = ["curriculum"]  # unfinished: not reported
    md = write_report(c, state).read_text()
    assert "1 of 2 iteration(s) done" in md
    assert "| starting model | 25.0% | 0.50 |" in md and "| after iteration 1 | 37.5% | 1.25 |" in md
    assert "| 1 | 8 | 7 | 6 | 3 | 0.65 | 1.50 | 0 0 0 1 0 1 1 0 0 3 |" in md
    assert "| D_iter1 | 64.0% | 1.65 |" in md
    assert "| 1 | 5 | 0.42 | trained | 5 | 0.70 | 1.10 |" in md
    data = json.loads((tmp_path / "report.json").read_text())
    assert [r["iteration"] for r in data["iterations"]] == [1] and data["baseline"]["rate"] == 0.25
