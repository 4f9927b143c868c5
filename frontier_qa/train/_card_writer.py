"""The curriculum card a training run writes beside its weights (:mod:`frontier_qa.curricula._card`).

The probe reads it back to ask a checkpoint the way it was trained; this module builds it from
the training configuration. Nothing here imports torch.
"""

from __future__ import annotations

from typing import Any

from frontier_qa.curricula._card import CurriculumCard, write_card
from frontier_qa.target import Sampling


def card_from_config(config: Any, task_format: Any) -> CurriculumCard:
    """The card of a curriculum training run (``config``: a ``TrainConfig``; ``task_format``: its
    :class:`~frontier_qa.train._prompts.TaskFormat`, which holds the tools and examples it read).
    """
    c, t = config.curriculum, config.training
    return CurriculumCard(
        **c.options(),  # the prompt options, key for key (curricula.spec.PromptOptions)
        tools=[dict(x) for x in task_format.tools],
        examples=[{"problem": e.problem, "answer": e.answer, "program": e.program} for e in task_format.examples]
        if c.examples else None,
        prompt=c.prompt.model_dump() if c.prompt is not None else None,
        case_system_set=c.case_system is not None, seed=t.seed,
        sampling=Sampling(temperature=t.temperature, top_p=t.top_p, max_tokens=t.max_completion_length),
    )


__all__ = ["card_from_config", "write_card"]
