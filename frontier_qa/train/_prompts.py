"""What the curriculum model is trained on, and how its completions become cases for the target.

The trainer must ask the model exactly what ``frontier-qa probe`` will later ask it, or the
trained checkpoint learns a prompt it never sees again. :class:`TaskFormat` therefore builds its
prompts with the same templates and per-request seeds as
:class:`~frontier_qa.curricula._prompted.PromptedCurriculum`'s first round, and reads completions
with the same parsers:

* ``instruct`` — Agent0 Table 7 (``math``; adapted for ``general``), the open-ended and the
  workflow templates of :mod:`frontier_qa.curricula._templates`;
* ``few_shot`` — worked ``Problem/Answer/Program`` examples drawn per prompt by its seed, and an
  assistant turn prefilled with ``Problem:`` (:mod:`frontier_qa.curricula._few_shot`); a problem
  that copies a shown example fails the format check, so copying earns nothing;
* ``plain`` — your own system / user prompt and optional prefill; the whole completion is the
  task. For custom set-ups and small models; ``frontier-qa probe`` has no plain curriculum.

A completion passes Agent0's format gate R_format exactly when the probe's parser accepts it
(plus a ``\\boxed{}`` reference when ``require_reference`` is set): training pays for the tasks
the probe can use. Pure text: nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from frontier_qa.curricula import _few_shot as few_shot
from frontier_qa.curricula import _templates as tpl
from frontier_qa.curricula._prompted import FEW_SHOT_SHOWN, derive_seed
from frontier_qa.curricula._spec import ANSWER_FORMATS, TRAINED_DOMAINS
from frontier_qa.errors import ConfigError
from frontier_qa.target import Case

_DEFAULT = object()  # "the domain's default system prompt for the tasks"


@dataclass(frozen=True)
class PromptRow:
    """One prompt of the training set.

    Attributes:
        prompt: the chat rendered to text by the model's own template, ready for generation.
        topic: the topic the prompt asks for, ``None`` when the model picks.
        seed: the request seed (``PromptedCurriculum``'s proposal seed for the same index).
        shown: few-shot only: the problems shown as examples (a copy of one fails the format).
    """

    prompt: str
    topic: str | None
    seed: int
    shown: tuple[str, ...] = ()

    def as_row(self) -> dict[str, Any]:
        """A dataset row; TRL hands every column except ``prompt`` to the reward function."""
        return {"prompt": self.prompt, "topic": self.topic or "", "seed": self.seed, "shown": list(self.shown)}


@dataclass(frozen=True)
class Task:
    """A completion read as a task.

    Attributes:
        question: the task text; ``None`` when the completion fails the format gate.
        reference: the curriculum's own (unverified) answer, if it wrote one.
        case: the case put to the target (``None`` with ``question``).
        error: why the format gate failed, ``None`` when it passed.
    """

    question: str | None
    reference: str | None = None
    case: Case | None = None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.question is not None


class TaskFormat:
    """Prompts for training and the parser for completions, one domain and style.

    Args:
        domain: ``math``, ``general``, ``open_ended`` or ``workflow``.
        style: ``instruct``, ``few_shot`` or ``plain``.
        topics: topics rotated through the prompts (shuffled by ``seed``); empty: the model picks.
        ask_solution: instruct reasoning prompts also ask for a program (off: Table 7 exactly).
        ask_difficulty: instruct prompts also ask for a difficulty prediction.
        agent_description: workflow: what the agent under test does.
        tools: workflow: the agent's OpenAI tool schemas (shown to the model, offered to the target).
        answer_format: workflow: ``text``/``final_answer``; plain: any answer format.
        examples: few_shot: worked examples (default: the built-in math ones).
        prompt: plain: ``{"system", "user", "prefill"}``.
        case_system: the system prompt of the tasks; default per domain as in ``PromptedCurriculum``.
        dedupe_threshold: few_shot: a problem closer than this BLEU distance to a shown example fails.
        require_reference: the format gate also needs a reference answer (``\\boxed{}`` / ``<answer>``).
        seed: base seed of the prompts (topic order, few-shot draws).
    """

    def __init__(
        self,
        domain: str = "math",
        style: str = "instruct",
        *,
        topics: Sequence[str] = (),
        ask_solution: bool = False,
        ask_difficulty: bool = False,
        agent_description: str | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        answer_format: str | None = None,
        examples: Sequence[Mapping[str, Any]] | None = None,
        prompt: Mapping[str, Any] | None = None,
        case_system: Any = _DEFAULT,
        dedupe_threshold: float | None = 0.5,
        require_reference: bool = False,
        seed: int = 0,
    ) -> None:
        if domain not in TRAINED_DOMAINS:
            raise ConfigError(f"the curriculum trainer has no domain {domain!r}",
                              hint=f"use one of {sorted(TRAINED_DOMAINS)}")
        if style not in ("instruct", "few_shot", "plain"):
            raise ConfigError(f"unknown curriculum style {style!r}", hint="use instruct, few_shot or plain")
        if style == "plain" and not (prompt and prompt.get("user")):
            raise ConfigError("style 'plain' needs a prompt with a user message", hint="pass prompt={'user': ...}")
        self.domain, self.style, self.seed = domain, style, seed
        self.topics = list(topics)
        random.Random(seed).shuffle(self.topics)  # the order PromptedCurriculum uses for this seed
        self.ask_solution, self.ask_difficulty = ask_solution, ask_difficulty
        self.agent_description = agent_description
        self.tools = tuple(dict(t) for t in tools)
        self.answer_format = answer_format or ANSWER_FORMATS[domain]
        self.examples = few_shot.load_examples(examples) if examples is not None else few_shot.MATH_EXAMPLES
        self.prompt = dict(prompt or {})
        self.dedupe_threshold = dedupe_threshold or None  # 0: off, as validation.dedupe_threshold reads it
        self.require_reference = require_reference
        self.case_system = self._default_case_system() if case_system is _DEFAULT else (case_system or None)
        self.template = {"instruct": {"math": "agent0-table7", "general": "agent0-table7-general",
                                      "open_ended": "open-ended", "workflow": "workflow"}[domain],
                         "few_shot": f"few-shot-{domain}", "plain": "plain"}[style]

    def _default_case_system(self) -> str | None:
        return tpl.default_case_system(self.domain, self.answer_format)

    # ----------------------------------------------------------------------------- prompts

    def topic(self, index: int) -> str | None:
        """The topic of prompt ``index`` (rotating, as the probe's curriculum does)."""
        return self.topics[index % len(self.topics)] if self.topics else None

    def request(self, index: int) -> tuple[Case, tuple[str, ...]]:
        """The conversation of prompt ``index`` and, few-shot, the problems it shows.

        For ``instruct`` and ``few_shot`` this is the request ``PromptedCurriculum`` makes for
        proposal ``index`` of its first round (no history yet) with the same seed.
        """
        seed = derive_seed(self.seed, 0, index)
        topic = self.topic(index)
        if self.style == "plain":
            history = ({"role": "assistant", "content": self.prompt["prefill"]},) if self.prompt.get("prefill") else ()
            return Case(id=f"train-{index}", prompt=self.prompt["user"], system=self.prompt.get("system"),
                        answer_format="text", history=history), ()
        if self.style == "few_shot":
            shown = few_shot.choose(self.examples, [], FEW_SHOT_SHOWN, random.Random(seed))
            user = few_shot.prompt(shown, topic, self.domain)
            return (Case(id=f"train-{index}", prompt=user, answer_format="text",
                         history=({"role": "assistant", "content": few_shot.PREFILL},)),
                    tuple(e.problem for e in shown))
        system, user = tpl.text_prompt(self.domain, topic, ask_solution=self.ask_solution,
                                       ask_difficulty=self.ask_difficulty, agent_description=self.agent_description,
                                       tools=self.tools)
        return Case(id=f"train-{index}", prompt=user, system=system, answer_format="text"), ()

    def rows(self, tokenizer: Any, n: int) -> list[PromptRow]:
        """``n`` training prompts rendered with ``tokenizer``'s chat template."""
        out = []
        for index in range(n):
            case, shown = self.request(index)
            out.append(PromptRow(render_text(tokenizer, case), self.topic(index), derive_seed(self.seed, 0, index),
                                 shown))
        return out

    # ----------------------------------------------------------------------------- parsing

    def parse(self, completion: str, *, topic: str | None = None, shown: Sequence[str] = ()) -> Task:
        """Read one completion as a task (the format gate) and build its case.

        Args:
            completion: the generated text (after any prefill).
            topic: the prompt's topic (the case's topic for reports).
            shown: few-shot: the problems the prompt showed.
        """
        if self.style == "plain":
            question = completion.strip()
            if not question:
                return Task(None, error="the completion is empty")
            return self._task(question, None, topic)
        if self.style == "few_shot":
            parsed = few_shot.parse(completion, prefilled=True)
            copied = few_shot.copied(parsed.question, shown, self.dedupe_threshold)
            if copied is not None:
                return Task(None, error=copied)
        else:
            parsed = tpl.PARSERS[self.domain](completion)
        if parsed.error is not None or parsed.question is None:
            return Task(None, error=parsed.error or "no question")
        if self.require_reference and not parsed.reference:
            return Task(None, error="no reference answer after the question (reward.require_reference is set)")
        return self._task(parsed.question, parsed.reference, topic)

    def _task(self, question: str, reference: str | None, topic: str | None) -> Task:
        tools = self.tools if self.domain == "workflow" else ()
        key = "\0".join([self.template, question, *(tpl.tool_name(t) for t in tools)])
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        metadata: dict[str, Any] = {"curriculum": "train", "template": self.template}
        if self.domain == "workflow" and self.agent_description:
            metadata["agent_description"] = self.agent_description
        case = Case(id=f"{self.domain}-{digest}", prompt=question, system=self.case_system,
                    topic=topic or self.domain, answer_format=self.answer_format, tools=tools,
                    reference=reference, metadata=metadata)
        return Task(question, reference, case)


def render_text(tokenizer: Any, case: Case) -> str:
    """``case``'s conversation as the text the model continues, exactly as the ``hf:`` adapter
    renders it (chat template; a final assistant message is continued, not closed).

    TRL tokenises text prompts with the tokenizer's special tokens on; when that adds a BOS
    that the template already wrote, the template's copy is dropped so the model sees one.
    """
    prefill = case.continues_assistant
    text = tokenizer.apply_chat_template(case.messages, tools=list(case.tools) or None, tokenize=False,
                                         add_generation_prompt=not prefill, continue_final_message=prefill)
    bos = getattr(tokenizer, "bos_token", None)
    if bos and text.startswith(bos):
        plain = tokenizer("x", add_special_tokens=False)["input_ids"]
        special = tokenizer("x")["input_ids"]
        if len(special) > len(plain) and special[0] == tokenizer.bos_token_id:
            text = text[len(bos):]
    return text


__all__ = ["PromptRow", "Task", "TaskFormat", "render_text"]
