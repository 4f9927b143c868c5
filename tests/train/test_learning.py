"""The curriculum learns: GRPO on Agent0's reward moves a tiny model toward the target's frontier.

The scripted target is unsure (answers A, B, A, B: p̂ = 0.5, R_unc = 1) exactly on tasks that
contain the word ``zebra``, and sure (p̂ = 1, R_unc = 0) on everything else. A tiny random model
writes ``zebra`` in about one task in seven at the start; a curriculum that learns writes it in
most tasks, so the mean uncertainty reward must rise from ≈ 0.1 to well above 0.5 within a few
steps, while the repetition penalty (Agent0 Eq. 4) keeps the batch from collapsing onto one task.

The model has a word-level vocabulary so that every task is a sentence of words: the BLEU
distance of the repetition penalty reads whitespace-separated words, and byte-level noise with
no spaces would make every task look unique to it. (A Granite config is used only because
transformers loads a generic tokenizer for that model type; a Qwen2 config forces Qwen's BPE.)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from frontier_qa.config import parse_set
from frontier_qa.target import Case
from frontier_qa.testing import ScriptedAdapter, open_scripted
from frontier_qa.train._tasks import read_tasks, summarize
from frontier_qa.train.config import load_train_config
from tests.tiny_models import build_word_model

FEATURE = "zebra"


def unsure_on_feature(case: Case, index: int) -> str:
    if FEATURE in case.prompt.split():
        return "A" if index % 2 == 0 else "B"  # p̂ = 0.5 for any even k
    return "A"


@pytest.mark.slow
def test_uncertainty_reward_rises_while_the_batch_stays_diverse(
    tmp_path: Path, report_measurement  # noqa: ANN001
) -> None:
    from frontier_qa.train._curriculum import train_curriculum

    model = build_word_model(tmp_path / "model")
    steps = 30
    sets = [f"model.path={model}", "curriculum.style=plain", "curriculum.prompt.user=Write one new task.",
            f"training.output_dir={tmp_path / 'run'}", f"training.max_steps={steps}",
            "training.prompts_per_step=4", "training.num_generations=8", "training.per_device_train_batch_size=32",
            "training.learning_rate=0.02", "training.beta=0.0", "training.max_completion_length=8",
            "training.save_steps=1000", "reward.k=4", "target.cache=false", "training.seed=0"]
    config = load_train_config(None, [parse_set(s) for s in sets])
    adapter = ScriptedAdapter(unsure_on_feature)
    started = time.perf_counter()
    result = train_curriculum(config, target=open_scripted(adapter))
    elapsed = time.perf_counter() - started

    per_step = summarize(read_tasks(result.tasks_file))
    assert [s.step for s in per_step] == list(range(1, steps + 1)) and all(s.tasks == 32 for s in per_step)
    unc = [s.uncertainty or 0.0 for s in per_step]
    start, end = sum(unc[:2]) / 2, sum(unc[-10:]) / 10
    first_good = next((i + 1 for i in range(steps - 2) if sum(unc[i:i + 3]) / 3 >= 0.6), None)
    report_measurement("curriculum_learning", f"curriculum learning: mean R_unc {start:.2f} (steps 1-2) -> "
                       f"{end:.2f} (last 10 steps); 3-step mean >= 0.6 from step {first_good}; "
                       f"{steps} GRPO steps of 32 tasks in {elapsed:.1f} s ({elapsed / steps:.2f} s/step)")
    assert start <= 0.35  # "zebra" is rare in random text
    assert first_good is not None and first_good <= 15  # within a bounded number of steps
    assert end >= 0.6 and end >= start + 0.35

    # Diversity: with the repetition penalty in the reward the batch does not collapse onto one task.
    last = per_step[-10:]
    assert sum(s.distinct for s in last) / 10 >= 0.85 and min(s.distinct for s in last) >= 0.6
    assert all(s.repetition <= 0.4 for s in last)
    assert adapter.samples > 0
