"""Curricula: where the cases a probe run tries come from.

Every curriculum implements :class:`frontier_qa.probing._curriculum_seam.Curriculum` (``name``,
``async propose(n)``, ``observe(outcomes)``); that protocol is the seam the probe engine sees
(proposals in, outcomes back) and is the engine's own input contract, while the curricula
themselves sit above the engine and may use its validation and verification. Built in:

* :class:`~frontier_qa.curricula._file.FileCurriculum`: cases from a JSONL/YAML file, hand
  written or exported from the case store (:func:`frontier_qa.store.export_suite`);
* :class:`~frontier_qa.curricula._file.StaticCurriculum`: a fixed list of proposals in memory;
* :class:`~frontier_qa.curricula._prompted.PromptedCurriculum`: a model writes tasks (math, general,
  tool calls from your schemas, open-ended, agent workflows) and adapts to recent outcomes; a
  trained curriculum checkpoint is used the same way (``from_spec("hf:/path")``);
* :class:`~frontier_qa.curricula._critic.SageCritic`: SAGE's question rubric as a validity critic.

Names are imported on first use (PEP 562), so ``import frontier_qa.curricula`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontier_qa import _lazy_exports

_BY_MODULE: dict[str, tuple[str, ...]] = {
    "frontier_qa.probing._curriculum_seam": ("Curriculum", "Proposal", "Outcome", "History"),
    "frontier_qa.curricula._file": ("FileCurriculum", "StaticCurriculum", "proposal_from_row", "read_proposals"),
    "frontier_qa.curricula._prompted": ("PromptedCurriculum", "from_spec"),
    "frontier_qa.curricula._critic": ("SageCritic",),
    "frontier_qa.probing._validation": ("TaskCritique",),
}


if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use
    from frontier_qa.curricula._critic import SageCritic as SageCritic
    from frontier_qa.curricula._file import FileCurriculum as FileCurriculum
    from frontier_qa.curricula._file import StaticCurriculum as StaticCurriculum
    from frontier_qa.curricula._file import proposal_from_row as proposal_from_row
    from frontier_qa.curricula._file import read_proposals as read_proposals
    from frontier_qa.curricula._prompted import PromptedCurriculum as PromptedCurriculum
    from frontier_qa.curricula._prompted import from_spec as from_spec
    from frontier_qa.probing._curriculum_seam import Curriculum as Curriculum
    from frontier_qa.probing._curriculum_seam import History as History
    from frontier_qa.probing._curriculum_seam import Outcome as Outcome
    from frontier_qa.probing._curriculum_seam import Proposal as Proposal
    from frontier_qa.probing._validation import TaskCritique as TaskCritique
else:
    __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals())
