"""What a trained curriculum was trained to answer, kept beside its weights (the probe's side).

A curriculum checkpoint is only useful asked the way it was trained: the same prompt style and
topics, and sampled the same way. A model trained to write 40-token few-shot problems, asked
with the probe's default 1024-token sampling, writes on for 1024 tokens per proposal. So the
curriculum trainer writes ``frontier-qa-curriculum.json`` (:class:`CurriculumCard`) into every
``checkpoint-N/``, ``final/`` and ``final-adapter/``: domain, style, topics, the prompt options,
the tools and examples shown, and the training's sampling (temperature, top-p,
``max_completion_length`` as ``max_tokens``).

``frontier-qa probe --curriculum trained:DIR`` reads it (:func:`apply_card`): every curriculum
key the probe configuration does not set itself (file, environment or flag) takes the card's
value. A checkpoint trained with the ``plain`` style (your own prompt; the prompted curriculum
has no such style) is asked through :class:`PlainPromptCurriculum`, which sends exactly that
prompt and takes the whole completion as the task, as training did.

Pure Python and pydantic: nothing here imports torch.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, ValidationError, field_serializer

from frontier_qa.curricula._spec import ANSWER_FORMATS, PromptOptions
from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Outcome, Proposal
from frontier_qa.target import Case, Sampling, Target

CARD_FILE = "frontier-qa-curriculum.json"
CARD_VERSION: Final = 1


_CARD_SAMPLING = ("temperature", "top_p", "max_tokens")
"""The keys of the card's ``sampling`` (TRL's generation settings; ``max_tokens`` is
``training.max_completion_length``): a :class:`~frontier_qa.target.Sampling` stored without
``stop`` and ``seed``, which training does not set (the file's keys are those of version 1)."""


class CurriculumCard(PromptOptions):
    """The curriculum settings a checkpoint was trained with (``frontier-qa-curriculum.json``):
    the training config's prompt options (:class:`~frontier_qa.curricula._spec.PromptOptions`,
    key for key), the files it read (tools, examples) and how training sampled.
    """

    version: Literal[1] = CARD_VERSION
    tools: list[dict[str, Any]] = Field(default_factory=list, description="the tool schemas shown (workflow)")
    examples: list[dict[str, Any]] | None = Field(None, description="few_shot: the worked examples (null: built-in)")
    prompt: dict[str, Any] | None = Field(None, description="plain: {system, user, prefill}")
    case_system_set: bool = Field(False, description="case_system was given (null then means: none)")
    seed: int = 0
    sampling: Sampling = Field(description="how training sampled the curriculum (temperature, top_p, max_tokens)")

    @field_serializer("sampling")
    def _training_sampling(self, sampling: Sampling) -> dict[str, Any]:
        return {name: getattr(sampling, name) for name in _CARD_SAMPLING}


def write_card(folder: str | os.PathLike[str], card: CurriculumCard) -> Path:
    """Write ``card`` into ``folder`` (a checkpoint or model folder); returns the file."""
    path = Path(folder) / CARD_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(card.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def read_card(folder: str | os.PathLike[str]) -> CurriculumCard | None:
    """The card in ``folder``, ``None`` when it has none (a model not trained here, an older run).

    Raises:
        ConfigError: the file is there but is not a card (names the file).
    """
    path = Path(folder).expanduser() / CARD_FILE
    if not path.is_file():
        return None
    try:
        return CurriculumCard.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError) as err:
        raise ConfigError(f"{path} is not a curriculum card: {str(err).splitlines()[0]}",
                          hint="delete it to probe without the training's settings, or retrain") from None


# --- the probe side -------------------------------------------------------------------------------

# probe key (under curriculum.) ← card field; the probe's own keys win when set
_PROBE_KEYS = ("domain", "topics", "ask_solution", "ask_difficulty", "agent_description", "answer_format")


def _user_set(config: Any, dotted: str) -> bool:
    """Whether the probe configuration's file, environment or flags set ``dotted`` (or a parent)."""
    sources = getattr(config, "_sources", None)
    if sources is None:
        return False
    path = tuple(dotted.split("."))
    return any(layer.has(path[:n]) for layer in sources.layers for n in range(len(path), 1, -1))


def model_folder(spec: str) -> Path:
    """The local folder of a trained curriculum's model spec (``hf:DIR`` or ``DIR``)."""
    return Path(spec.removeprefix("hf:").split("?", 1)[0]).expanduser()


def apply_card(config: Any, spec: str) -> tuple[Any, CurriculumCard | None, list[str]]:
    """The probe's curriculum section with the checkpoint's card filling every key it does not set.

    Args:
        config: the probe configuration (``ProbeConfig``).
        spec: the trained curriculum's model spec.

    Returns:
        ``(curriculum section, card or None, keys taken from the card)``.
    """
    card = read_card(model_folder(spec))
    c = config.curriculum
    if card is None:
        return c, None, []
    update: dict[str, Any] = {}
    for key in _PROBE_KEYS:
        if not _user_set(config, f"curriculum.{key}"):
            update[key] = getattr(card, key)
    if card.style in ("instruct", "few_shot") and not _user_set(config, "curriculum.style"):
        update["style"] = card.style
    if card.answer_format is not None and card.domain != "workflow":
        update.pop("answer_format", None)  # the probe takes answer_format for workflow only
    sampling = {name: getattr(card.sampling, name) for name in _CARD_SAMPLING
                if not _user_set(config, f"curriculum.sampling.{name}")}
    if sampling:
        update["sampling"] = replace(c.sampling, **sampling)
    taken = sorted([f"curriculum.{k}" for k in update if k != "sampling"]
                   + [f"curriculum.sampling.{k}" for k in sampling])
    return c.model_copy(update=update), card, taken


def asks_training_prompts(config: Any, card: CurriculumCard | None) -> bool:
    """Whether the probe asks the checkpoint through :class:`PlainPromptCurriculum`: it was trained
    with the ``plain`` style, and the probe configuration does not choose a style of its own.
    """
    return card is not None and card.style == "plain" and not _user_set(config, "curriculum.style")


class PlainPromptCurriculum:
    """A curriculum checkpoint trained with a ``plain`` prompt, asked exactly that prompt.

    Proposal ``i`` sends the card's prompt (system, user, an assistant prefill it continues),
    sampled with seed ``derive_seed(seed, 0, i)``; the whole completion, stripped, is the task,
    as training's format gate read it (an empty completion is an invalid proposal).

    Args:
        model: the checkpoint as a target (``hf:DIR``).
        card: its card (style ``plain``).
        sampling: the sampling (the card's, with the probe's overrides).
        close_model: close ``model`` in :meth:`aclose`.
    """

    def __init__(self, model: Target, card: CurriculumCard, *, sampling: Sampling, close_model: bool = True) -> None:
        from frontier_qa.curricula import _templates as tpl

        if card.style != "plain" or not (card.prompt or {}).get("user"):
            raise ConfigError(f"a {card.style!r} card has no plain prompt", hint="ask it with the prompted curriculum")
        self.card, self.model, self.sampling = card, model, sampling
        self.answer_format = card.answer_format or ANSWER_FORMATS[card.domain]
        self.case_system = card.case_system if card.case_system_set else \
            tpl.default_case_system(card.domain, self.answer_format)
        self.name = f"trained:plain@{getattr(model, 'id', type(model).__name__)}"
        self._made = 0
        self._close_model = close_model

    def request(self, index: int) -> Case:
        """The conversation of proposal ``index``: the training prompt."""
        prompt = self.card.prompt or {}
        prefill = ({"role": "assistant", "content": prompt["prefill"]},) if prompt.get("prefill") else ()
        return Case(id=f"train-{index}", prompt=prompt["user"], system=prompt.get("system"), answer_format="text",
                    history=prefill)

    def topic(self, index: int) -> str | None:
        topics = self.card.topics
        return topics[index % len(topics)] if topics else None

    async def propose(self, n: int) -> list[Proposal]:
        """``n`` proposals, in request order; an empty completion is flagged invalid, not dropped."""
        from frontier_qa.curricula._prompted import derive_seed

        first, self._made = self._made, self._made + n
        indices = range(first, first + n)
        results = await asyncio.gather(*(
            self.model.sample(self.request(i), 1, replace(self.sampling, seed=derive_seed(self.card.seed, 0, i)))
            for i in indices))
        return [self._proposal(i, got[0] if got else None) for i, got in zip(indices, results, strict=True)]

    def _proposal(self, index: int, got: Any) -> Proposal:
        text = got.text if got is not None and got.ok else None
        question, topic = (text or "").strip(), self.topic(index) or self.card.domain
        if not question:
            reason = (got.error if got is not None and not got.ok else None) or "the completion is empty"
            case = Case(id=f"{self.card.domain}-invalid-train-{index}", prompt="", topic=topic,
                        answer_format=self.answer_format, metadata={"invalid_reason": reason})
            return Proposal(case=case, source=self.name, raw=text)
        digest = hashlib.sha256(f"plain\0{question}".encode()).hexdigest()[:16]  # the trainer's case id
        case = Case(id=f"{self.card.domain}-{digest}", prompt=question, system=self.case_system, topic=topic,
                    answer_format=self.answer_format, metadata={"curriculum": "train", "template": "plain"})
        return Proposal(case=case, source=self.name, raw=text)

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        """The prompt does not change with outcomes (the model was trained on this one)."""

    async def aclose(self) -> None:
        if self._close_model and hasattr(self.model, "aclose"):
            await self.model.aclose()


def card_summary(card: CurriculumCard, taken: Sequence[str]) -> str:
    """One line saying what a probe took from the checkpoint's card."""
    s = card.sampling
    return (f"the checkpoint's {CARD_FILE}: style {card.style}, domain {card.domain}, max_tokens {s.max_tokens}, "
            f"temperature {s.temperature}, top_p {s.top_p}" + (f" (used for {', '.join(taken)})" if taken else ""))


__all__ = ["CARD_FILE", "CurriculumCard", "PlainPromptCurriculum", "apply_card",
           "asks_training_prompts",
           "card_summary", "model_folder", "read_card", "write_card"]

