"""What a curriculum prompt is, defined once: its domains, styles, answer formats, sampling and options.

The probe config's ``curriculum`` section (:class:`~frontier_qa.config._schema.CurriculumConfig`),
the trainer's (:class:`~frontier_qa.train.config.CurriculumSection`), the card a trained
checkpoint carries (:class:`~frontier_qa.curricula._card.CurriculumCard`) and the two prompt
builders (:class:`~frontier_qa.curricula._prompted.PromptedCurriculum`,
:class:`~frontier_qa.train._prompts.TaskFormat`) all take these from here:

* :data:`Domain` / :data:`DOMAINS`: what a curriculum writes tasks about; the trainer writes
  every domain but ``tools`` (:data:`TRAINED_DOMAINS`);
* :data:`Style`: how it is asked (``plain``, your own prompt, is the trainer's and the card's);
* :data:`ANSWER_FORMATS`: the answer format of each domain's tasks;
* :data:`CURRICULUM_SAMPLING`: how a curriculum model is sampled (Agent0 A.1);
* :class:`PromptOptions`: the prompt options the training config and the card share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from frontier_qa.target import Sampling

Domain = Literal["math", "general", "tools", "open_ended", "workflow"]
"""A curriculum's domain: reasoning (math, general), tool calls (Tool-R0), open-ended answers, an agent's workflow."""

DOMAINS: Final[tuple[str, ...]] = get_args(Domain)
"""Every domain, in the order messages and the schema list them."""

TRAINED_DOMAINS: Final[tuple[str, ...]] = tuple(d for d in DOMAINS if d != "tools")
"""The domains the curriculum trainer writes (a trained model writes no tool-call tasks)."""

if TYPE_CHECKING:
    TrainedDomain = Domain
else:
    TrainedDomain = Literal[TRAINED_DOMAINS]  # a Literal of a tuple is one of its items
"""A domain of :data:`TRAINED_DOMAINS` (the training config's ``curriculum.domain``)."""

Style = Literal["instruct", "few_shot", "plain"]
"""instruct: tagged templates; few_shot: worked examples (small models); plain: your own prompt (training)."""

STYLES: Final[tuple[str, ...]] = get_args(Style)
"""Every style; the prompted curriculum asks with the first two (a ``plain`` checkpoint is asked by its card)."""

ANSWER_FORMATS: Final[dict[str, str]] = {"math": "boxed", "general": "boxed", "tools": "json:calls",
                                         "open_ended": "text", "workflow": "text"}
"""Each domain's answer format (``workflow``: the default; a workflow curriculum may ask for ``final_answer``)."""

CURRICULUM_SAMPLING: Final = Sampling(temperature=1.0, top_p=0.99, max_tokens=1024)
"""Agent0 A.1: the curriculum samples at temperature 1.0, top-p 0.99 (1024 tokens per task)."""


class PromptOptions(BaseModel):
    """The curriculum prompt options the training config and the card share (key for key).

    Attributes:
        domain: what the tasks are about (:data:`DOMAINS`).
        style: how the model is asked (:data:`STYLES`).
        topics: topics rotated through the prompts; empty: the model picks.
        ask_solution: instruct: also ask for a program (off: Agent0 Table 7 exactly).
        ask_difficulty: instruct: also ask for a difficulty prediction.
        agent_description: workflow: what the agent under test does.
        answer_format: workflow: text | final_answer; plain: any format.
        case_system: the tasks' system prompt (``None``: the domain's default).
        dedupe_threshold: few_shot: a problem this close (BLEU distance) to a shown example
            fails; ``None`` or 0: off.
    """

    model_config = ConfigDict(extra="forbid", validate_default=True)

    domain: Domain = "math"
    style: Style = "instruct"
    topics: list[str] = Field(default_factory=list, description="rotated through the prompts; [] = any")
    ask_solution: bool = Field(False, description="instruct: ask for a program (off: Agent0 Table 7 exactly)")
    ask_difficulty: bool = Field(False, description="instruct: ask for a difficulty prediction")
    agent_description: str | None = Field(None, description="workflow: what the agent under test does")
    answer_format: str | None = Field(None, description="workflow: text | final_answer; plain: any format")
    case_system: str | None = Field(None, description="system prompt of the tasks; null: per domain, '': none")
    dedupe_threshold: float | None = Field(0.5, ge=0, le=1,
                                           description="few_shot: copies of examples fail; null or 0: off")

    @field_validator("dedupe_threshold")
    @classmethod
    def _zero_is_off(cls, value: float | None) -> float | None:
        return None if value == 0 else value  # as the probe config reads it: no distance is below 0

    def options(self) -> dict[str, Any]:
        """These options as keyword arguments (of :class:`~frontier_qa.train._prompts.TaskFormat`)."""
        return {name: getattr(self, name) for name in PromptOptions.model_fields}


__all__ = ["ANSWER_FORMATS", "CURRICULUM_SAMPLING", "DOMAINS", "STYLES", "TRAINED_DOMAINS", "Domain",
           "PromptOptions", "Style", "TrainedDomain"]
