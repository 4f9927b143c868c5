"""The probe engine: propose, validate, verify, sample, score, classify, record, replay.

====================  ===================================================================================
``_engine``           the public entry points :func:`probe` and :func:`replay` and their results
``_settings``         :class:`ProbeSettings`: band, k, sequential policy, sampling, stop rules
``_run``              one run step by step (start / resume, replay, generate, record, finish)
``_case_prober``      one case: sample in rounds, score, ask the judge, classify, build the record
``_classify``         a sampled case's class and why (:func:`classify_case` of a :class:`CaseEvidence`)
``_curriculum_seam``  the engine's input contract: :class:`Curriculum` proposes, hears :class:`Outcome` s
``_validation``       checks on proposals before any target call (format, tool calls, duplicates)
``_verify``           a proposal's reference checked by running its solution in the sandbox
``_refresh``          a stored case against its edited source: judged again without calls, or re-probed
``_reconcile``        a suite's stored cases against its cases file: refreshed, re-probed, removed, new
``_sequential``       when to stop sampling a case (Beta-binomial band decision)
``_set_labels``       which stopped cases are frontier: the run's frontier set keeps its expected error ≤ α
``_progress``         the progress callback of ``frontier-qa probe`` (a bar, or lines in CI)
====================  ===================================================================================

The engine imports the scoring core, the runtime's sandbox and the store; the curriculum seam
(:mod:`frontier_qa.probing._curriculum_seam`) is its own; the curricula, the config, the CLI, the
plugin and the trainers sit above it. The modules are private (``_name``): import from the
package. The package is named ``probing`` because ``frontier_qa.probe`` is the :func:`probe`
function. Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontier_qa import _lazy_exports

_BY_MODULE: dict[str, tuple[str, ...]] = {
    "frontier_qa.probing._engine": ("probe", "replay", "ProbeResult", "ReplayResult"),
    "frontier_qa.probing._settings": ("ProbeSettings",),
    "frontier_qa.probing._run": ("ProgressEvent", "case_id_for"),
    "frontier_qa.probing._classify": ("CaseEvidence", "classify_case"),
    "frontier_qa.probing._validation": ("Validator", "ValidationResult"),
    "frontier_qa.probing._sequential": ("SequentialConfig",),
    "frontier_qa.probing._set_labels": ("Labelling",),
    "frontier_qa.probing._progress": ("ProbeProgress",),
}


if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use
    from frontier_qa.probing._classify import CaseEvidence as CaseEvidence
    from frontier_qa.probing._classify import classify_case as classify_case
    from frontier_qa.probing._engine import ProbeResult as ProbeResult
    from frontier_qa.probing._engine import ReplayResult as ReplayResult
    from frontier_qa.probing._engine import probe as probe
    from frontier_qa.probing._engine import replay as replay
    from frontier_qa.probing._progress import ProbeProgress as ProbeProgress
    from frontier_qa.probing._run import ProgressEvent as ProgressEvent
    from frontier_qa.probing._run import case_id_for as case_id_for
    from frontier_qa.probing._sequential import SequentialConfig as SequentialConfig
    from frontier_qa.probing._set_labels import Labelling as Labelling
    from frontier_qa.probing._settings import ProbeSettings as ProbeSettings
    from frontier_qa.probing._validation import ValidationResult as ValidationResult
    from frontier_qa.probing._validation import Validator as Validator
else:
    __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals())
