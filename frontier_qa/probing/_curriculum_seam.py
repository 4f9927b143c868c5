"""The curriculum seam: what proposes cases to probe and hears how they went.

One protocol (inspect_ai's ``SampleSource``: initial / next / on-result): the probe
engine asks a curriculum for a batch of :class:`Proposal` s, validates them, samples the
target, classifies each case and hands the result back through :meth:`Curriculum.observe`,
so a curriculum can adapt (in context for a prompted one, not at all for a file).

The seam is the engine's input contract, so it lives in the engine's package; the curricula
(:mod:`frontier_qa.curricula`, which re-exports these names) implement it from above.

Values only: nothing here imports an I/O or ML library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from frontier_qa.target import Case


@dataclass(frozen=True)
class Proposal:
    """A candidate case, before validation.

    Attributes:
        case: the case itself (its ``reference`` is the curriculum's unverified answer, if any).
        solution: a Python program whose printed output is the reference answer; the engine
            runs it in the sandbox to *verify* ``case.reference`` (docs/method.md, QA note 1).
        gold_calls: for tool-calling tasks (Tool-R0): the expected calls
            ``[{"name": ..., "arguments": {...}}]``, checked statically against ``case.tools``.
        predicted_pass_rate: the curriculum's own estimate of p̂ in [0, 1], if it gave one
            (self-aware RL difficulty prediction).
        source: which curriculum / template produced it (for reports).
        raw: the curriculum's raw output, kept for debugging invalid proposals.
        aliases: other ids the same case had before (frontier-qa 0.1's hash ids); when the
            store knows the case under one of them, the engine keeps that id.
        written: a person wrote the case (a cases file, a committed suite): validation removes
            it only as an identical repeat, never as a near-duplicate.
    """

    case: Case
    solution: str | None = None
    gold_calls: tuple[Mapping[str, Any], ...] = ()
    predicted_pass_rate: float | None = None
    source: str = "unknown"
    raw: str | None = None
    aliases: tuple[str, ...] = ()
    written: bool = False


@dataclass(frozen=True)
class Outcome:
    """What the engine concluded about one proposal; fed back to the curriculum.

    Attributes:
        proposal: the proposal as it was made.
        case_class: ``frontier`` / ``failure`` / ``suspect`` / ``pass`` / ``unresolved`` /
            ``invalid`` (see :class:`frontier_qa.store._records.CaseClass`).
        p_hat: the final p̂ (``None`` for invalid cases).
        majority: the target's majority answer, if any.
        reason: why it was invalid / suspect / a failure, in words.
    """

    proposal: Proposal
    case_class: str
    p_hat: float | None = None
    majority: str | None = None
    reason: str | None = None


@runtime_checkable
class Curriculum(Protocol):
    """Proposes cases and hears results.

    ``propose`` may return fewer than ``n`` proposals (a file runs out: return ``[]`` when
    exhausted, and the engine stops asking). It is async because prompted curricula call
    a model through the runtime.
    """

    name: str

    async def propose(self, n: int) -> Sequence[Proposal]: ...

    def observe(self, outcomes: Sequence[Outcome]) -> None: ...


@runtime_checkable
class DrivesRun(Protocol):
    """A curriculum that runs the generation phase itself (task generators' boundary search).

    The probe run hands it the run (``frontier_qa.probing._run.ProbeRun``: its target's draws,
    its prober, ``probe_one`` and ``keep``) instead of asking for proposals; what it returns is
    kept in the run record (its boundaries).
    """

    name: str

    async def drive(self, run: Any) -> Sequence[Any]: ...


@dataclass
class History:
    """A bounded memory of recent outcomes, by class, for in-context adaptation.

    Attributes:
        limit: how many outcomes of each class to keep (most recent last).
    """

    limit: int = 8
    by_class: dict[str, list[Outcome]] = field(default_factory=dict)

    def add(self, outcomes: Sequence[Outcome]) -> None:
        for outcome in outcomes:
            kept = self.by_class.setdefault(outcome.case_class, [])
            kept.append(outcome)
            del kept[: max(0, len(kept) - self.limit)]

    def recent(self, case_class: str) -> list[Outcome]:
        return list(self.by_class.get(case_class, ()))
