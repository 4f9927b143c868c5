"""Test doubles for frontier-qa users: scripted targets and curricula that run offline, for free.

Test your probe configs, your pytest suites and your CI wiring without calling a model:

* a ``mock:`` target spec (``mock:right``, ``mock:unsure``, ``mock:PATH`` to a script; see
  :mod:`frontier_qa.adapters._mock_adapter`) works everywhere a target spec does: the CLI, YAML
  configs, the pytest plugin's ``target=``;
* from Python, a :class:`ScriptedAdapter` answers sample ``i`` of a case with
  ``answer(case, i)``, a pure function; :func:`open_scripted` wraps it in the real runtime (cache,
  budget, retries), so the engine treats it exactly like a model or an agent::

      import asyncio
      from frontier_qa.probing import ProbeSettings, probe
      from frontier_qa.store import CaseStore
      from frontier_qa.testing import ScriptedAdapter, case, moody, open_scripted, static_curriculum

      target = open_scripted(ScriptedAdapter(moody("weekdays")))          # unsure on one topic
      cases = static_curriculum([case("w1", "Monday + 3 days?", topic="weekdays", truth="Thursday"),
                                 case("a1", "2 + 2?", topic="arithmetic", truth="4")])
      result = asyncio.run(probe(target, cases, ProbeSettings(k=6), store=CaseStore(".frontier-qa-test")))
      # w1 is a frontier case (p̂ 0.5), a1 a pass

Answer functions: :func:`always_right` (the case's ``metadata["truth"]``, else its reference),
:func:`always` (one fixed answer), :func:`from_distribution` (weights per case id),
:func:`moody` (right except on one topic), and :func:`script_answers` (a ``mock:`` script as
a mapping). ``None`` as an answer is an unparseable sample. :func:`words_embedder` stands in
for the sentence-transformers model when open-ended answers are clustered.

Nothing here imports torch, a provider SDK or anything beyond frontier-qa's core install.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from frontier_qa.adapters._mock_adapter import (
    AnswerFn,
    ScriptedAdapter,
    always,
    always_right,
    from_distribution,
    moody,
    pick,
    render,
    script_answers,
    truth_of,
)
from frontier_qa.curricula._file import StaticCurriculum
from frontier_qa.probing._curriculum_seam import Outcome, Proposal
from frontier_qa.runtime._budget import BudgetTracker
from frontier_qa.runtime._cache import SampleCache
from frontier_qa.runtime._limits import Backoff, Budget, Limits
from frontier_qa.runtime._managed import ManagedTarget
from frontier_qa.target import Adapter, Case

FAST = Backoff(initial_s=0.001, max_s=0.005, jitter_s=0.0)
"""Retry waits of milliseconds, so a test that exercises retries takes no time."""


def open_scripted(adapter: Adapter, cache_dir: Path | None = None, *, budget: Budget | BudgetTracker | None = None,
                  max_concurrency: int = 16) -> ManagedTarget:
    """The adapter inside the real runtime: cache (when a folder is given), budget, retries (:data:`FAST`)."""
    cache = SampleCache(cache_dir) if cache_dir is not None else None
    return ManagedTarget(adapter, Limits(backoff=FAST, max_concurrency=max_concurrency), budget, cache)


def case(id: str, prompt: str, *, topic: str = "general", reference: str | None = None,
         truth: str | None = None, answer_format: str = "boxed", **metadata: Any) -> Case:
    """A case for a scripted target; ``truth`` (kept in ``metadata``) is what :func:`always_right` answers.

    You wrote it, so it counts as a checked task, as a cases file's rows do (its author vouches for
    it: :data:`frontier_qa.probing._validity.AUTHOR`); pass ``validity=None`` for a case that should
    count as generated and unchecked.
    """
    meta = dict(metadata)
    meta.setdefault("validity", {"verdict": None, "judge": "author", "reason": "written with frontier_qa.testing.case"})
    if meta["validity"] is None:
        del meta["validity"]
    if truth is not None:
        meta["truth"] = truth
    return Case(id=id, prompt=prompt, topic=topic, reference=reference, answer_format=answer_format, metadata=meta)


def static_curriculum(proposals: Sequence[Proposal | Case], name: str = "scripted") -> StaticCurriculum:
    """A curriculum that proposes these cases (or proposals) once, in order."""
    return StaticCurriculum([p if isinstance(p, Proposal) else Proposal(p, source=name) for p in proposals],
                            name=name)


class EndlessCurriculum:
    """Proposes ``make(i)`` for i = 0, 1, 2, ... forever; remembers every outcome it is told.

    For runs that must stop on something other than an exhausted curriculum (budget,
    saturation, ``max_candidates``).
    """

    def __init__(self, make: Callable[[int], Proposal], name: str = "endless") -> None:
        self.make = make
        self.name = name
        self.proposed = 0
        self.outcomes: list[Outcome] = []

    async def propose(self, n: int) -> Sequence[Proposal]:
        batch = [self.make(self.proposed + j) for j in range(n)]
        self.proposed += n
        return batch

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        self.outcomes.extend(outcomes)


def words_embedder() -> Any:
    """A tiny deterministic embedder for open-ended answers: bag of lower-cased words, hashed.

    Has the ``encode(texts) -> array`` method the semantic scorer calls, so
    ``ProbeSettings(embedder=words_embedder())`` clusters answers by shared words, with no
    model. Answers that share no word are far apart; equal answers coincide.
    """
    import numpy as np

    class Words:
        def encode(self, texts: list[str]) -> np.ndarray:
            rows = np.zeros((len(texts), 1024))
            for r, text in enumerate(texts):
                for word in _words(text):
                    rows[r, int(hashlib.md5(word.encode()).hexdigest(), 16) % 1024] += 1.0
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)

    return Words()


def _words(text: str) -> Iterator[str]:
    yield from text.lower().replace(".", " ").replace(",", " ").split()


__all__ = [
    "FAST",
    "AnswerFn",
    "EndlessCurriculum",
    "ScriptedAdapter",
    "always",
    "always_right",
    "case",
    "from_distribution",
    "moody",
    "open_scripted",
    "pick",
    "render",
    "script_answers",
    "static_curriculum",
    "truth_of",
    "words_embedder",
]
