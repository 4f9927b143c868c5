"""The curriculum trainer on CPU: prompts, the target reward, real GRPO steps, checkpoints, the CLI.

Real parts throughout: a tiny randomly initialised Qwen2 with a locally built tokenizer
(tests/tiny_models.py), TRL's GRPOTrainer, and scripted targets inside the real runtime
(ManagedTarget: cache, budget, retries). The scripted answers are chosen so every p̂, and so
every reward, is known by hand.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import sys
from pathlib import Path

import pytest

from frontier_qa.config import parse_set
from frontier_qa.curricula import _templates as tpl
from frontier_qa.curricula._prompted import PromptedCurriculum, derive_seed
from frontier_qa.errors import BudgetExceededError, ConfigError, MissingExtraError, TargetError, TargetUnavailableError
from frontier_qa.runtime import Budget, open_target
from frontier_qa.scoring.rewards import PAPER
from frontier_qa.target import Adapter, Case, Sampling, ToolCall, Trajectory
from frontier_qa.testing import ScriptedAdapter, open_scripted, words_embedder
from frontier_qa.train._prompts import TaskFormat, render_text
from frontier_qa.train._reward import TargetReward, curriculum_rewards
from frontier_qa.train._tasks import read_tasks, summarize
from frontier_qa.train.config import load_train_config
from tests.factories import REPO


def split_on(word: str):  # noqa: ANN201 - an answer function for ScriptedAdapter
    """Uncertain on tasks containing ``word`` (answers A, B, A, B: p̂ = 0.5), sure elsewhere (p̂ = 1)."""

    def answer(case: Case, index: int) -> str:
        return ("A" if index % 2 == 0 else "B") if word in case.prompt else "A"

    return answer


# --- the prompts are the probe's prompts --------------------------------------------------------


class Recorder(Adapter):
    """A curriculum model that records what it is asked and answers nothing useful."""

    id = "recorder"
    supports_prefill = True

    def __init__(self) -> None:
        self.requests: dict[int | None, Case] = {}

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        self.requests[sampling.seed] = case
        return [Trajectory(text="nothing", sample_index=start + i) for i in range(n)]


@pytest.mark.parametrize("style", ["instruct", "few_shot"])
def test_training_prompts_are_the_requests_the_probe_curriculum_makes(style: str) -> None:
    recorder = Recorder()
    topics = ["fractions", "weekdays", "geometry"]
    curriculum = PromptedCurriculum(open_target(recorder, cache=False), domain="math", topics=topics, seed=7,
                                    ask_solution=False, ask_difficulty=False, style=style)
    asyncio.run(curriculum.propose(5))
    fmt = TaskFormat("math", style, topics=topics, seed=7)
    for index in range(5):
        asked = recorder.requests[derive_seed(7, 0, index)]
        case, shown = fmt.request(index)
        assert case.messages == asked.messages
        assert fmt.topic(index) is not None and (style == "few_shot") == bool(shown)
    if style == "instruct":  # exactly Agent0 Table 7 with a topic
        system, user = tpl.reasoning_prompt("math", fmt.topic(0), ask_solution=False, ask_difficulty=False)
        assert fmt.request(0)[0].messages == [{"role": "system", "content": system}, {"role": "user", "content": user}]


def test_rendered_prompts_tokenize_to_what_the_hf_adapter_sends(tmp_path: Path) -> None:
    from frontier_qa.adapters._hf_adapter import render_prompt
    from tests.tiny_models import build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    for style in ("instruct", "few_shot"):
        case, _ = TaskFormat("math", style).request(0)
        # TRL tokenises text prompts with special tokens on; the ids must be the probe's ids
        assert tokenizer(render_text(tokenizer, case))["input_ids"] == render_prompt(tokenizer, case)


def test_completions_become_cases_only_when_the_probe_parser_accepts_them() -> None:
    fmt = TaskFormat("math")
    task = fmt.parse("<question>What is 17 * 3?</question>\n\\boxed{51}", topic="arithmetic")
    assert task.valid and task.question == "What is 17 * 3?" and task.reference == "51"
    assert task.case is not None and task.case.answer_format == "boxed" and task.case.system == tpl.MATH_CASE_SYSTEM
    assert task.case.topic == "arithmetic" and task.case.prompt == "What is 17 * 3?"
    assert fmt.parse("What is 17 * 3?").error == "no <question> block in the curriculum output"
    strict = TaskFormat("math", require_reference=True)
    assert not strict.parse("<question>What is 17 * 3?</question>").valid
    few = TaskFormat("math", "few_shot")
    shown = ("Tom has 12 apples and gives away 5. How many apples does he have left?",)
    copied = few.parse(" Tom has 12 apples and gives away 5. How many apples does he have left?\nAnswer: 7",
                       shown=shown)
    assert not copied.valid and copied.error.startswith("copies a shown example")
    fresh = few.parse(" A farmer plants 7 rows of 9 trees. How many trees are there?\nAnswer: 63", shown=shown)
    assert fresh.valid and fresh.reference == "63"
    plain = TaskFormat("open_ended", "plain", prompt={"user": "Ask me something."})
    assert plain.parse("  Why is the sky blue?\n").question == "Why is the sky blue?"
    assert plain.parse("  ").error == "the completion is empty"
    assert plain.parse("Why?").case.answer_format == "text"  # type: ignore[union-attr]


# --- the reward terms ---------------------------------------------------------------------------


def test_curriculum_rewards_by_hand() -> None:
    same = "how many apples are left over"
    scores = curriculum_rewards([same, same, "name a prime above one hundred", None], [0.5, 0.5, 1.0, None],
                         [[2, 2], [2, 2], [0, 0], None], config=PAPER)
    # B = 4: the two copies share a cluster (2/4), the rest are alone (1/4); tool: 0.25 · min(2, 4)
    assert [s.repetition for s in scores] == [0.5, 0.5, 0.25, 0.25]
    assert [s.uncertainty for s in scores[:3]] == [1.0, 1.0, 0.0]
    assert [s.tool for s in scores[:3]] == [0.5, 0.5, 0.0]
    assert [s.reward for s in scores] == pytest.approx([1.0 + 0.6 * 0.5 - 0.5] * 2 + [0.0, 0.0])
    assert scores[3].format == 0.0 and scores[3].reward == 0.0  # Eq. 5's gate


def test_curriculum_rewards_on_one_process_slice_matches_the_whole_batch() -> None:
    batch = ["a b c d e", "a b c d e", "f g h i j", "k l m n o", "a b c d e", None]
    whole = curriculum_rewards(batch, [0.5] * 6, [[0]] * 6)
    part = curriculum_rewards(batch[3:], [0.5] * 3, [[0]] * 3, batch_questions=batch, offset=3)
    assert [s.repetition for s in part] == [s.repetition for s in whole[3:]] == [1 / 6, 0.5, 1 / 6]
    with pytest.raises(ConfigError, match="not the slice"):
        curriculum_rewards(batch[3:], [0.5] * 3, [[0]] * 3, batch_questions=batch, offset=2)


def _plain(domain: str = "math") -> TaskFormat:
    return TaskFormat(domain, "plain", prompt={"user": "Write a task."})


def test_target_reward_samples_each_distinct_task_k_times_and_logs_every_term(tmp_path: Path) -> None:
    from frontier_qa.train._tasks import TaskLog

    adapter = ScriptedAdapter(split_on("alpha"))
    log = TaskLog(tmp_path / "tasks.jsonl")
    reward = TargetReward(open_scripted(adapter), _plain(), k=4, sampling=Sampling(seed=3), log=log)
    metrics: dict[str, float] = {}
    completions = ["alpha beta gamma delta", "alpha beta gamma delta", "zeta eta theta iota", "   "]
    got = asyncio.run(reward(prompts=["p"] * 4, completions=completions, topic=["", "", "", ""],
                             log_metric=metrics.__setitem__))
    # dup: R_unc 1 − R_rep 2/4; distinct: p̂ = 1 → R_unc 0 − 1/4 → 0; empty: the format gate
    assert got == [0.5, 0.5, 0.0, 0.0]
    assert adapter.samples == 8  # two distinct valid tasks × k = 4, the copy sampled once
    assert metrics["curriculum/format"] == 0.75 and metrics["curriculum/uncertainty"] == pytest.approx(2 / 3)
    assert metrics["curriculum/repetition"] == pytest.approx((0.5 + 0.5 + 0.25 + 0.25) / 4)
    assert metrics["curriculum/p_hat"] == pytest.approx(2 / 3) and metrics["curriculum/target_calls"] == 8
    assert metrics["curriculum/distinct_share"] == 0.5
    rows = read_tasks(tmp_path / "tasks.jsonl")
    assert [r.p_hat for r in rows] == [0.5, 0.5, 1.0, None] and [r.k for r in rows] == [4, 4, 4, 0]
    assert rows[3].format_error == "the completion is empty" and rows[0].step == 1 and rows[0].majority == "A"
    assert summarize(rows)[0].distinct == 0.75  # three different texts of four (the empty one counts alone)


def test_gaps_in_the_dataset_columns_read_as_missing_whatever_the_table_stores(tmp_path: Path) -> None:
    """A pandas / Arrow table stores a missing topic or shown-examples list as NaN: it is a gap
    (None), as in the reward functions' columns; read as a value it became topic "nan" or failed.
    """
    from frontier_qa.train._tasks import TaskLog

    adapter = ScriptedAdapter(split_on("alpha"))
    log = TaskLog(tmp_path / "tasks.jsonl")
    reward = TargetReward(open_scripted(adapter), _plain(), k=4, sampling=Sampling(seed=3), log=log)
    nan = float("nan")
    got = asyncio.run(reward(prompts=["p"] * 2, completions=["alpha beta gamma delta", "zeta eta theta iota"],
                             topic=[nan, "algebra"], shown=[nan, []]))
    assert got == [0.5, 0.0]  # R_unc 1 − R_rep 1/2 (its share of a batch of two); p̂ = 1 → 0
    assert [r.topic for r in read_tasks(tmp_path / "tasks.jsonl")] == ["", "algebra"]


def test_tool_use_comes_from_the_targets_trajectories_and_the_task_text() -> None:
    class Computes(Adapter):
        id = "computes"

        async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
            calls = (ToolCall("python", "print(6 * 7)", result="42"),) * (3 if "count" in case.prompt else 0)
            return [Trajectory(text="\\boxed{42}", tool_calls=calls, sample_index=start + i) for i in range(n)]

    from dataclasses import replace

    config = replace(PAPER, tool_text_weight=0.5)
    reward = TargetReward(open_target(Computes(), cache=False), _plain(), k=2, config=config)
    got = asyncio.run(reward(completions=["count the ways to tile a board", "say hello to the reader now"]))
    # p̂ = 1 (R_unc 0); R_tool = 0.25 · (1 · 3 + 0.5 · 4 · demand), demand("count …") = 0.25 (enumeration)
    tool = 0.25 * (3 + 0.5 * 4 * 0.25)
    assert got == pytest.approx([max(0.0, 0.6 * tool - 0.5), 0.0])


def test_target_samples_run_concurrently() -> None:
    class Slow(Adapter):
        id = "slow"

        def __init__(self) -> None:
            self.now = self.peak = 0

        async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
            self.now += 1
            self.peak = max(self.peak, self.now)
            await asyncio.sleep(0.05)
            self.now -= 1
            return [Trajectory(text="\\boxed{1}", sample_index=start + i) for i in range(n)]

    slow = Slow()
    reward = TargetReward(open_target(slow, cache=False), _plain(), k=2, max_concurrent_tasks=4)
    asyncio.run(reward(completions=[f"task number {i} of the batch here" for i in range(8)]))
    assert slow.peak >= 4  # four tasks at once, each with its two samples in parallel too


def test_a_budget_that_runs_out_mid_step_leaves_tasks_unscored() -> None:
    adapter = ScriptedAdapter(split_on("x"))
    reward = TargetReward(open_scripted(adapter, budget=Budget(max_calls=6)), _plain(), k=2, max_concurrent_tasks=1)
    got = asyncio.run(reward(completions=[f"distinct task {w} goes here now" for w in "abcde"]))
    assert got[:3] == [0.0, 0.0, 0.0] and got[3:] == [None, None]  # 3 tasks × 2 calls, then nothing
    assert reward.budget_exhausted is not None and "max_calls = 6" in reward.budget_exhausted


def test_a_fatal_target_error_names_the_training_step() -> None:
    class Refuses(Adapter):
        id = "refuses"

        async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
            raise PermissionError("invalid api key")

    class State:
        global_step = 6

    reward = TargetReward(open_target(Refuses(), cache=False), _plain(), k=2)
    with pytest.raises(TargetError, match="while rewarding the tasks of training step 7: .*invalid api key"):
        asyncio.run(reward(completions=["one task here for the target"], trainer_state=State()))


def test_open_ended_tasks_are_scored_by_meaning() -> None:
    class Paraphrases(Adapter):
        id = "paraphrases"

        async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
            texts = ["the sky looks blue because of scattering", "blue sky comes from scattering of light",
                     "green grass has chlorophyll inside", "grass is green because chlorophyll"]
            return [Trajectory(text=texts[(start + i) % 4], sample_index=start + i) for i in range(n)]

    reward = TargetReward(open_target(Paraphrases(), cache=False), _plain("open_ended"), k=4,
                          embedder=words_embedder())
    rows: list = []
    asyncio.run(reward(completions=["Why is the sky blue today?"], log_extra=lambda name, v: rows.append((name, v))))
    assert dict(rows)["p_hat"] == [0.5]  # two meanings, two answers each


# --- preflight, offline models, the train extra -------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_target_is_reported_before_any_model_is_loaded(tmp_path: Path) -> None:
    from frontier_qa.train._curriculum import train_curriculum

    url = f"http://127.0.0.1:{_free_port()}/agent"
    config = load_train_config(None, [parse_set(s) for s in (
        "model.path=/nowhere/model", f"target.spec={url}", "target.limits.max_retries=0", "target.cache=false",
        f"training.output_dir={tmp_path}", "training.prompts_per_step=2", "training.per_device_train_batch_size=8")])
    with pytest.raises(TargetUnavailableError, match=f"could not be reached: .*{url}|could not be reached"):
        train_curriculum(config)


def test_models_that_cannot_be_loaded_offline_are_config_errors(tmp_path: Path) -> None:
    from frontier_qa.train._curriculum import resolve_model_path

    def config(path: str):  # noqa: ANN202
        return load_train_config(None, [parse_set(f"model.path={path}")])

    with pytest.raises(ConfigError, match="(?s)cannot be loaded offline.*not in the local Hugging Face cache") as info:
        resolve_model_path(config("SomeOrg/not-a-cached-model"))
    assert "huggingface-cli download SomeOrg/not-a-cached-model --local-dir DIR" in str(info.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="has no config.json"):
        resolve_model_path(config(str(tmp_path / "empty")))
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    with pytest.raises(ConfigError, match="(?s)is a LoRA adapter, not a model.*frontier-qa train merge"):
        resolve_model_path(config(str(tmp_path / "adapter")))


def test_a_missing_train_extra_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from frontier_qa.train._curriculum import train_curriculum

    monkeypatch.setitem(sys.modules, "trl", None)  # as if TRL were not installed
    config = load_train_config(None, [parse_set("model.path=smollm2"), parse_set("target.spec=python:x.py:f")])
    with pytest.raises(MissingExtraError) as info:
        train_curriculum(config)
    assert info.value.extra == "train" and "pip install 'frontier-qa[train]'" in str(info.value)


# --- real GRPO steps on a tiny model --------------------------------------------------------------

STEPS = 2


def tiny_config(model: Path, out: Path, *sets: str, steps: int = STEPS):  # noqa: ANN201
    """Plain prompts (a random model writes no tags), 2 prompts × 4 tasks per step, k = 4."""
    base = [f"model.path={model}", "curriculum.style=plain", "curriculum.prompt.user=Write one new task.",
            f"training.output_dir={out}", f"training.max_steps={steps}", "training.prompts_per_step=2",
            "training.num_generations=4", "training.per_device_train_batch_size=8", "training.learning_rate=0.01",
            "training.beta=0.0", "training.max_completion_length=8", "training.save_steps=1", "reward.k=4",
            "target.cache=false"]
    return load_train_config(None, [parse_set(s) for s in [*base, *sets]])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def trained(tiny: Path, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    from frontier_qa.train._curriculum import train_curriculum

    adapter = ScriptedAdapter(split_on("e"))
    out = tmp_path_factory.mktemp("run")
    lines: list[str] = []
    result = train_curriculum(tiny_config(tiny, out), target=open_scripted(adapter), progress=lines.append)
    return result, adapter, lines


def _weights(folder: Path) -> dict:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True)
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.slow
def test_grpo_steps_run_with_rewards_from_the_target(trained) -> None:  # noqa: ANN001
    result, adapter, lines = trained
    assert result.steps == STEPS and result.stopped == "max steps"
    assert (result.plan.tasks_per_generation, result.plan.gradient_accumulation_steps) == (8, 1)
    rows = read_tasks(result.tasks_file)
    assert [r.step for r in rows] == [1] * 8 + [2] * 8
    for row in rows:  # every reward is the scripted target's, through Eq. 2-5
        assert row.question is not None and row.p_hat == (0.5 if "e" in row.question else 1.0)
        assert row.uncertainty == 1.0 - 2 * abs(row.p_hat - 0.5)
        assert row.reward == pytest.approx(max(0.0, row.uncertainty - row.repetition))
    sampled = {cid for cid, _, _ in adapter.calls} - {"frontier-qa-preflight"}
    assert sampled == {r.case_id for r in rows} and adapter.samples == 1 + 4 * len(sampled)
    logged = [json.loads(line) for line in result.metrics_file.read_text().splitlines()]
    per_step = [row for row in logged if "curriculum/uncertainty" in row]
    assert [row["step"] for row in per_step] == [1, 2]
    for row, summary in zip(per_step, summarize(rows), strict=True):
        assert row["curriculum/uncertainty"] == pytest.approx(summary.uncertainty)
        assert row["rewards/curriculum_reward/mean"] == pytest.approx(summary.reward)
        assert {"curriculum/format", "curriculum/tool", "curriculum/repetition", "curriculum/p_hat"} <= set(row)
    assert any(line.startswith("step 1: reward ") for line in lines)


@pytest.mark.slow
def test_weights_change_and_checkpoints_reload(trained, tiny: Path) -> None:  # noqa: ANN001
    import torch

    result = trained[0]
    before, after = _weights(tiny), _weights(result.final_model)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    last = _weights(result.output_dir / f"checkpoint-{STEPS}")
    assert all(torch.equal(last[k], after[k]) for k in after)  # the last checkpoint is the final model
    first = _weights(result.output_dir / "checkpoint-1")
    assert any(not torch.equal(first[k], after[k]) for k in after)
    marker = json.loads((result.final_model / "frontier-qa-model.json").read_text())
    assert marker["source"].endswith(f"@step-{STEPS}")
    # the run's own account of it: every changed tensor found, the size of the change measured
    from safetensors.torch import load_file

    start, end = load_file(str(tiny / "model.safetensors")), load_file(str(result.final_model / "model.safetensors"))
    change = result.weight_change
    changed = sum(not torch.equal(start[k], end[k]) for k in start)
    assert change is not None and change.changed == changed > 0 and change.tensors == len(start)
    delta = sum(float(((end[k].double() - start[k].double()) ** 2).sum()) for k in start) ** 0.5
    norm = sum(float((start[k].double() ** 2).sum()) for k in start) ** 0.5
    assert change.relative_l2 == pytest.approx(delta / norm, rel=1e-6) and "tensors changed" in change.describe()
    from frontier_qa.train._learning import weight_change

    assert weight_change(tiny, tiny).changed == 0  # nothing moved: said so


@pytest.mark.slow
def test_a_trained_checkpoint_is_a_probe_curriculum(trained) -> None:  # noqa: ANN001
    from frontier_qa.config import build_curriculum, load_config
    from frontier_qa.curricula._prompted import from_spec
    from frontier_qa.runtime import BudgetTracker

    final = trained[0].final_model
    curriculum = from_spec(f"hf:{final}", domain="math", target_options={"cache": False})

    async def propose(c):  # noqa: ANN001, ANN202
        try:
            return await c.propose(2)
        finally:
            await c.aclose()

    proposals = asyncio.run(propose(curriculum))
    assert len(proposals) == 2  # noise from a tiny model: flagged invalid, never dropped
    assert all(p.case.prompt or p.case.metadata.get("invalid_reason") for p in proposals)
    config = load_config(None, [parse_set(f"curriculum.model={final}"), parse_set("curriculum.type=trained")], env={})
    built = build_curriculum(config, BudgetTracker(), cache=False)
    # trained with the plain style: asked exactly its training prompt, with the training's sampling
    from frontier_qa.curricula._card import PlainPromptCurriculum

    assert isinstance(built, PlainPromptCurriculum) and built.model.id.startswith(f"hf:{final}")
    assert built.sampling.max_tokens == 8 and built.request(0).prompt == "Write one new task."
    assert len(asyncio.run(propose(built))) == 2


@pytest.mark.slow
def test_training_resumes_from_its_last_checkpoint(trained, tiny: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from frontier_qa.train._curriculum import train_curriculum

    out = tmp_path / "resumed"
    shutil.copytree(trained[0].output_dir, out)
    adapter = ScriptedAdapter(split_on("e"))
    result = train_curriculum(tiny_config(tiny, out, steps=STEPS + 1), target=open_scripted(adapter), resume=True)
    assert result.steps == STEPS + 1
    assert [r.step for r in read_tasks(result.tasks_file)][-8:] == [STEPS + 1] * 8
    assert (out / f"checkpoint-{STEPS + 1}").is_dir()


@pytest.mark.slow
def test_a_step_interrupted_before_its_checkpoint_is_logged_once_after_resume(trained, tiny: Path,  # noqa: ANN001
                                                                              tmp_path: Path) -> None:
    from frontier_qa.train._curriculum import train_curriculum

    out = tmp_path / "killed"
    shutil.copytree(trained[0].output_dir, out)
    # killed during step 2 after its tasks and metrics were written, before checkpoint-2 was saved
    shutil.rmtree(out / f"checkpoint-{STEPS}")
    shutil.rmtree(out / "final")
    lines: list[str] = []
    result = train_curriculum(tiny_config(tiny, out), target=open_scripted(ScriptedAdapter(split_on("e"))),
                              resume=True, progress=lines.append)
    assert result.steps == STEPS
    assert [r.step for r in read_tasks(result.tasks_file)] == [1] * 8 + [2] * 8  # step 2 once, from the resumed run
    def steps(path: Path) -> list[int]:
        return [json.loads(line)["step"] for line in path.read_text().splitlines()]

    assert steps(result.metrics_file) == steps(trained[0].metrics_file)  # as if never interrupted
    assert any("dropped the log lines of steps after the checkpoint" in line for line in lines)


def test_drop_after_keeps_checkpointed_steps_and_drops_a_torn_line(tmp_path: Path) -> None:
    from frontier_qa.train._resume import checkpoint_step, drop_after

    log = tmp_path / "tasks.jsonl"
    log.write_text('{"step": 1}\n{"step": 2}\n{"step": 3}\n{"step": 3, "torn')
    assert drop_after(log, 2) == 2 and log.read_text() == '{"step": 1}\n{"step": 2}\n'
    assert drop_after(log, 2) == 0  # nothing after step 2 any more: untouched
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-10").mkdir()
    assert checkpoint_step(tmp_path, True) == 10 and checkpoint_step(tmp_path, False) is None
    assert checkpoint_step(tmp_path, str(tmp_path / "checkpoint-2")) == 2


@pytest.mark.slow
def test_training_stops_with_a_checkpoint_when_the_budget_runs_out(tiny: Path, tmp_path: Path) -> None:
    from frontier_qa.train._curriculum import train_curriculum

    config = tiny_config(tiny, tmp_path, steps=5)
    with pytest.raises(BudgetExceededError, match="cannot cover one training step"):
        train_curriculum(config, target=open_scripted(ScriptedAdapter(split_on("e")), budget=Budget(max_calls=32)))
    # one step needs up to 8 tasks × 4 + 1 preflight = 33 calls; 45 covers step 1, not step 2
    adapter = ScriptedAdapter(split_on("e"))
    result = train_curriculum(config, target=open_scripted(adapter, budget=Budget(max_calls=45)))
    assert result.stopped == "budget" and result.steps == 2 and adapter.samples == 45
    assert (tmp_path / "checkpoint-2").is_dir() and result.final_model is not None
    last = [r for r in read_tasks(result.tasks_file) if r.step == 2]
    assert any(r.skipped == "budget exhausted" and r.reward is None for r in last)


@pytest.mark.slow
def test_lora_runs_save_a_merged_model_and_the_adapter(tiny: Path, tmp_path: Path) -> None:
    import torch

    from frontier_qa.train._curriculum import merge_adapter, train_curriculum

    config = tiny_config(tiny, tmp_path / "run", "model.lora.r=4", "model.lora.alpha=8", "model.lora.dropout=0.0",
                         "training.learning_rate=0.05")
    result = train_curriculum(config, target=open_scripted(ScriptedAdapter(split_on("e"))))
    assert result.adapter is not None and (result.adapter / "adapter_config.json").is_file()
    assert result.final_model is not None and (result.final_model / "config.json").is_file()
    base, merged = _weights(tiny), _weights(result.final_model)
    assert set(base) == set(merged)  # a plain model: no LoRA layers left
    assert any(not torch.equal(base[k], merged[k]) for k in base)
    again = merge_adapter(result.output_dir / "checkpoint-2", tmp_path / "merged-2")
    assert all(torch.allclose(merged[k], w) for k, w in _weights(again).items())
    # the adapter folder itself is a model spec: loaded onto its base and merged at load time
    from frontier_qa.runtime import open_target
    from frontier_qa.target import Case, Sampling

    assert not (result.adapter / "config.json").is_file()  # only the LoRA weights: the peft path
    greedy = Sampling(temperature=0.0, max_tokens=12, seed=0)
    task = Case(id="t", prompt="Write one task.")
    texts = []
    for folder in (result.adapter, result.final_model):
        model = open_target(f"hf:{folder}", cache=False, dtype="float32")
        try:
            texts.append(model.sample_sync(task, 1, greedy)[0].text)
        finally:
            import asyncio

            asyncio.run(model.aclose())
    assert texts[0] == texts[1] and texts[0]


def test_an_adapter_without_its_base_model_says_how_to_fix_it(tmp_path: Path) -> None:
    from frontier_qa.runtime import open_target

    (tmp_path / "adapter_config.json").write_text('{"base_model_name_or_path": "/nowhere/base"}')
    with pytest.raises(ConfigError, match="needs its base model '/nowhere/base'") as info:
        open_target(f"hf:{tmp_path}", cache=False)
    assert "frontier-qa train merge" in (info.value.hint or "")


# --- the command line ------------------------------------------------------------------------------


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # noqa: ANN201
    """Run ``frontier-qa ARGS`` in this process: (exit code, stdout + stderr)."""
    from frontier_qa.cli import main

    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    return run


def test_cli_shows_the_resolved_config_and_reports_bad_keys(cli) -> None:  # noqa: ANN001
    code, text = cli("train", "curriculum", "--config", str(REPO / "configs/train/curriculum-cpu.yaml"),
                      "--max-steps", "3", "--show-config")
    assert code == 0 and "path: smollm2" in text and "max_steps: 3" in text
    code, text = cli("train", "curriculum", "--config", str(REPO / "configs/train/curriculum-cpu.yaml"),
                     "--set", "training.max_step=3")
    assert code == 2 and "--set training.max_step=3: training.max_step: unknown key" in text
    assert "did you mean 'max_steps'?" in text


def test_cli_refuses_a_budget_that_cannot_cover_a_step(cli, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                       tmp_path: Path) -> None:
    monkeypatch.chdir(REPO)
    code, text = cli("train", "curriculum", "--config", "configs/train/curriculum-cpu.yaml",
                      "--output-dir", str(tmp_path), "--budget-calls", "10")
    assert code == 2 and "--budget-calls 10: budget.max_calls = 10 cannot cover one training step" in text


@pytest.mark.slow
def test_cli_trains_the_cpu_config_against_the_moody_agent(cli, tiny: Path, tmp_path: Path,  # noqa: ANN001
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the config's target is examples/agents/moody_agent.py
    out = tmp_path / "cpu"
    code, text = cli("train", "curriculum", "--config", "configs/train/curriculum-cpu.yaml", "--model", str(tiny),
                      "--max-steps", "1", "--output-dir", str(out), "--set", "training.max_completion_length=8",
                      "--quiet")
    assert code == 0, text
    assert "weights: " in text  # how far the weights moved (or that they did not)
    assert f"model: {out / 'final'}" in text and f"LoRA adapter: {out / 'final-adapter'}" in text
    assert f"frontier-qa probe --curriculum trained:{out / 'final'}" in text
    rows = read_tasks(out / "tasks.jsonl")
    assert len(rows) == 24 and {r.topic for r in rows} <= {"shopping", "travel", "school", "cooking"}
    assert (out / "cache").is_dir() and (out / "train-config.json").is_file()
    code, text = cli("train", "summary", str(out))
    assert code == 0 and text.splitlines()[1].split()[:2] == ["1", "24"]
    code, text = cli("train", "merge", str(out / "checkpoint-1"), "--out", str(tmp_path / "merged"))
    assert code == 0 and (tmp_path / "merged" / "config.json").is_file()


@pytest.mark.model
@pytest.mark.slow
def test_the_shipped_cpu_config_trains_smollm2(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.chdir(REPO)
    out = tmp_path / "smol"
    # One step of the shipped config with a third of its batch (2 prompts × 4 problems): the whole
    # path runs on SmolLM2 while CI pays for 8 generations, not the demo's 24.
    code, text = cli("train", "curriculum", "--config", "configs/train/curriculum-cpu.yaml", "--max-steps", "1",
                     "--set", "training.prompts_per_step=2", "--set", "training.num_generations=4",
                     "--output-dir", str(out))
    assert code == 0, text
    assert "step 1: reward " in text and (out / "final" / "config.json").is_file()
    rows = read_tasks(out / "tasks.jsonl")
    assert len(rows) == 8 and any(r.question for r in rows)  # SmolLM2 writes usable few-shot problems
    assert all(r.p_hat is not None for r in rows if r.question)


def test_cli_coevolve_without_a_config_names_the_shipped_ones(cli) -> None:  # noqa: ANN001
    code, text = cli("train", "coevolve")
    assert code == 2 and "train coevolve needs --config FILE" in text and "Traceback" not in text
    assert "configs/coevolve/cpu.yaml" in text and "configs/coevolve/agent0.yaml" in text
    code, text = cli("train", "coevolve", "--confg", "x.yaml")
    assert code == 2 and "No such option: --confg" in text and "Traceback" not in text
