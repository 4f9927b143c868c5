"""Trained curricula carry their curriculum settings, and ``trained:CHECKPOINT`` uses them.

A tiny curriculum is trained for one real GRPO step with the few-shot style, topics and a
16-token completion length; every folder it leaves gets ``frontier-qa-curriculum.json``, and
the probe's ``trained:`` curriculum asks it with those settings unless the probe config says
otherwise. A ``plain``-style checkpoint (no such style in the probe) is asked its exact
training prompts.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from frontier_qa.config import build_curriculum, load_config, parse_set
from frontier_qa.curricula._card import (
    CARD_FILE,
    CurriculumCard,
    PlainPromptCurriculum,
    apply_card,
    read_card,
    write_card,
)
from frontier_qa.curricula._prompted import PromptedCurriculum
from frontier_qa.errors import ConfigError
from frontier_qa.runtime import BudgetTracker
from frontier_qa.target import Sampling
from frontier_qa.testing import ScriptedAdapter, open_scripted
from frontier_qa.train.config import load_train_config

TOPICS = ["weekdays", "shopping"]


def _probe(folder: Path, *sets: str, path: Path | None = None):  # noqa: ANN202
    return load_config(path, [parse_set(f"curriculum.model={folder}"), parse_set("curriculum.type=trained"),
                              *(parse_set(s) for s in sets)], env={})


def _card(**changes) -> CurriculumCard:  # noqa: ANN003
    base = {"domain": "math", "style": "few_shot", "topics": TOPICS,
            "sampling": Sampling(temperature=0.8, top_p=0.95, max_tokens=48)}
    return CurriculumCard(**{**base, **changes})


# --- the probe side, on a card written by hand -------------------------------------------------


def test_the_card_fills_only_what_the_probe_config_does_not_set(tmp_path: Path) -> None:
    write_card(tmp_path, _card())
    section, card, taken = apply_card(_probe(tmp_path), f"hf:{tmp_path}")
    assert card is not None and section.style == "few_shot" and section.topics == TOPICS
    assert (section.sampling.max_tokens, section.sampling.temperature, section.sampling.top_p) == (48, 0.8, 0.95)
    assert "curriculum.sampling.max_tokens" in taken and "curriculum.style" in taken
    # a flag and a config file line win over the card
    probe_file = tmp_path / "probe.yaml"
    probe_file.write_text("version: 1\ncurriculum:\n  topics: [calendar]\n")
    section, _, taken = apply_card(_probe(tmp_path, "curriculum.sampling.max_tokens=300", path=probe_file),
                                   f"hf:{tmp_path}")
    assert section.sampling.max_tokens == 300 and section.topics == ["calendar"] and section.style == "few_shot"
    assert "curriculum.sampling.max_tokens" not in taken and "curriculum.topics" not in taken
    # no card: the probe's own settings, unchanged
    (tmp_path / CARD_FILE).unlink()
    section, card, taken = apply_card(_probe(tmp_path), f"hf:{tmp_path}")
    assert card is None and taken == [] and section.sampling.max_tokens == 1024


def test_a_card_reads_dedupe_threshold_0_as_off_like_the_probe_config(tmp_path: Path) -> None:
    assert _card(dedupe_threshold=0).dedupe_threshold is None and _card(dedupe_threshold=None).dedupe_threshold is None
    write_card(tmp_path, _card(dedupe_threshold=0.0))
    card = read_card(tmp_path)
    assert card is not None and card.dedupe_threshold is None
    with pytest.raises(ValueError, match="dedupe_threshold"):
        _card(dedupe_threshold=1.5)


def test_the_card_sampling_is_the_sampling_value_stored_under_its_version_1_keys(tmp_path: Path) -> None:
    write_card(tmp_path, _card())
    stored = json.loads((tmp_path / CARD_FILE).read_text())["sampling"]
    assert stored == {"temperature": 0.8, "top_p": 0.95, "max_tokens": 48}  # no stop/seed: the file is unchanged
    card = read_card(tmp_path)
    assert card is not None and card.sampling == Sampling(temperature=0.8, top_p=0.95, max_tokens=48)
    with pytest.raises(ValueError, match="sampling.top_p"):  # the bounds are Sampling's
        _card(sampling={"temperature": 1.0, "top_p": 1.5, "max_tokens": 8})


def test_a_damaged_card_is_named() -> None:
    import tempfile

    folder = Path(tempfile.mkdtemp())
    (folder / CARD_FILE).write_text('{"version": 1, "domain": "math"}')
    with pytest.raises(ConfigError, match=f"{CARD_FILE} is not a curriculum card"):
        read_card(folder)


# --- a real training run writes it, and the probe uses it ------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from frontier_qa.train._curriculum import train_curriculum
    from tests.tiny_models import build_tiny_model

    model = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    out = tmp_path_factory.mktemp("run")
    sets = [f"model.path={model}", "curriculum.style=few_shot", f"curriculum.topics={json.dumps(TOPICS)}",
            f"training.output_dir={out}", "training.max_steps=1", "training.prompts_per_step=2",
            "training.num_generations=2", "training.per_device_train_batch_size=4", "training.temperature=0.9",
            "training.top_p=0.95", "training.max_completion_length=16", "training.beta=0.0", "reward.k=2",
            "target.cache=false"]
    config = load_train_config(None, [parse_set(s) for s in sets])
    train_curriculum(config, target=open_scripted(ScriptedAdapter(lambda case, i: "A")))
    return out


@pytest.mark.slow
def test_every_saved_folder_carries_the_training_settings(trained: Path) -> None:
    for folder in (trained / "checkpoint-1", trained / "final"):
        card = read_card(folder)
        assert card is not None, folder
        assert (card.style, card.domain, card.topics) == ("few_shot", "math", TOPICS)
        assert card.sampling == Sampling(temperature=0.9, top_p=0.95, max_tokens=16)


@pytest.mark.slow
def test_trained_checkpoint_is_asked_with_its_settings(trained: Path) -> None:
    curriculum = build_curriculum(_probe(trained / "final"), BudgetTracker(), cache=False)
    try:
        assert isinstance(curriculum, PromptedCurriculum)
        assert (curriculum.style, curriculum.sampling.max_tokens, curriculum.sampling.temperature) == ("few_shot", 16,
                                                                                                       0.9)
        assert curriculum._topics and set(curriculum._topics) == set(TOPICS)
        proposals = asyncio.run(curriculum.propose(2))
        assert len(proposals) == 2
    finally:
        asyncio.run(curriculum.aclose())
    # the probe's own setting wins
    other = build_curriculum(_probe(trained / "final", "curriculum.sampling.max_tokens=64"), BudgetTracker(),
                             cache=False)
    try:
        assert other.sampling.max_tokens == 64 and other.style == "few_shot"
    finally:
        asyncio.run(other.aclose())


@pytest.mark.slow
def test_a_plain_checkpoint_is_asked_its_training_prompts(trained: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "plain"
    shutil.copytree(trained / "final", folder)
    prompt = {"system": None, "user": "Write one new task.", "prefill": ""}
    write_card(folder, _card(style="plain", topics=[], prompt=prompt,
                             sampling=Sampling(temperature=1.0, top_p=1.0, max_tokens=8)))
    curriculum = build_curriculum(_probe(folder), BudgetTracker(), cache=False)
    try:
        assert isinstance(curriculum, PlainPromptCurriculum) and curriculum.sampling.max_tokens == 8
        assert curriculum.request(0).prompt == "Write one new task."
        proposals = asyncio.run(curriculum.propose(3))
    finally:
        asyncio.run(curriculum.aclose())
    assert len(proposals) == 3
    for p in proposals:  # a plain task is the whole completion: valid unless empty
        assert (p.case.prompt == (p.raw or "").strip()) or p.case.metadata.get("invalid_reason")
    # a probe that names its own style gets the probe's prompted curriculum
    prompted = build_curriculum(_probe(folder, "curriculum.style=instruct"), BudgetTracker(), cache=False)
    try:
        assert isinstance(prompted, PromptedCurriculum) and prompted.sampling.max_tokens == 8
    finally:
        asyncio.run(prompted.aclose())
