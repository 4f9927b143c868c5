"""What a case's inputs are, and a content hash of them: has the case changed since it was recorded?

A stored case can fall behind its source: a person fixes a wrong reference in ``cases.jsonl``,
rewrites a prompt under a hand-written id, or moves a case to another topic. Ids do not show
it (:mod:`~frontier_qa.store._case_ids`: a derived id follows the prompt, but a changed
reference keeps it, and a hand-written id never changes), so every record carries a content
hash of the inputs it was made from, in three parts that call for different work:

=========  ==============================================================  ==========================
part       fields                                                          when it changed
=========  ==============================================================  ==========================
``asked``  system, prompt, tools, history: what the target sees             probe again (a new case)
``judged`` answer_format, reference, whether the source vouches for the    judge the stored samples
           reference (``reference_verified``), the solution program that   again: no target call
           verifies it, the trajectory expectations (``expect``)
``labels`` topic, the source's own metadata, its ``predicted_pass_rate``   record it: nothing to judge
=========  ==============================================================  ==========================

"What the target sees" is what the case ids and the runtime cache key on (the conversation and
the tools). ``expect`` enters the hash only when a case has one, so the hashes recorded before
expectations existed still hold. ``gold_calls`` are left out: they are checked once, statically, when a case is
validated, and no record keeps them.

The engine writes the hash into the recorded case's metadata (:data:`INPUT_HASH_KEY`) as it
prepares a proposal; a replay carries it on with the case. A record written before that has
none, and :func:`recorded_hash` computes it from the recorded case, with what the engine added
to it taken away (:data:`ENGINE_KEYS`). Hashes are taken over the inputs as the store keeps
them (a secret as ``${secret:NAME}``), so no hash is ever made of a secret.

Pure values and functions: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from pydantic import TypeAdapter

from frontier_qa._expectations import EXPECT_BASE_KEY
from frontier_qa.redaction import protect, redact
from frontier_qa.target import Case, Expectations

INPUT_HASH_KEY: Final = "input_hash"
"""Case metadata key of the recorded input hash: ``{"asked": hex, "judged": hex, "labels": hex}``."""

REFRESHED_KEY: Final = "refreshed"
"""Case metadata key of a refreshed record: what changed and which record it was judged from."""

TRUSTED_KEY: Final = "reference_verified"
"""Metadata key by which a source vouches for its reference (:data:`frontier_qa.probing._verify.TRUSTED_KEY`)."""

SOLUTION_KEY: Final = "solution"
"""Metadata key of the solution program (:data:`frontier_qa.probing._verify.SOLUTION_KEY`)."""

PASS_RATE_KEY: Final = "predicted_pass_rate"
"""Metadata key of the source's guess of p̂ (set by the engine from the proposal)."""

ENGINE_KEYS: Final = frozenset({
    "source", SOLUTION_KEY, "solution_output", "verification", PASS_RATE_KEY, "critic", "validity",  # run._prepared
    "judge", "stated_reference", "band_posterior", "answer_format_from",  # probing.case.CaseProber.probe
    INPUT_HASH_KEY, REFRESHED_KEY, TRUSTED_KEY,
    EXPECT_BASE_KEY,  # where the cases file lies (its argument checks' files): not the author's, moves with a checkout
})  # fmt: skip
"""Metadata keys the engine writes (or that carry a field of the inputs): not the source's metadata."""

TAKEN_FROM_SOLUTION: Final = "reference taken from the solution's output"
"""How the engine's ``verification`` note starts when a case had no reference of its own."""

HASH_DIGITS: Final = 16
"""Hex digits kept of each part's SHA-256 (64 bits)."""

PARTS: Final = ("asked", "judged", "labels")
"""The parts of a case's inputs, in the order changes are described."""


@dataclass(frozen=True)
class CaseInputs:
    """A case's inputs as its source wrote them (module docstring: which part is which).

    Attributes:
        prompt: the task text.
        system: the system prompt.
        tools: tool schemas offered to the target.
        history: messages after the task.
        answer_format: how the answer is read from a sample.
        reference: the reference answer, ``None`` when the source gave none.
        trusted: whether the source vouches for the reference.
        solution: the program that verifies the reference, if any.
        topic: the topic label.
        metadata: the source's own metadata (without :data:`ENGINE_KEYS`).
        predicted_pass_rate: the source's guess of p̂ in [0, 1], if any.
        expect: the case's trajectory expectations as JSON data; ``None`` when it has none.
    """

    prompt: str
    system: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    history: tuple[Mapping[str, Any], ...] = ()
    answer_format: str = "boxed"
    reference: str | None = None
    trusted: bool = False
    solution: str | None = None
    topic: str = "general"
    metadata: Mapping[str, Any] | None = None
    predicted_pass_rate: float | None = None
    expect: Mapping[str, Any] | None = None

    def part(self, name: str) -> dict[str, Any]:
        """The fields of one part (``"asked"``, ``"judged"`` or ``"labels"``) by name."""
        return {f: getattr(self, f) for f in _PART_FIELDS[name]}

    def input_hash(self) -> InputHash:
        """The content hash of these inputs."""
        return InputHash(*(_digest(_hashed(self.part(name))) for name in PARTS))


_PART_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "asked": ("system", "prompt", "tools", "history"),
    "judged": ("answer_format", "reference", "trusted", "solution", "expect"),
    "labels": ("topic", "metadata", "predicted_pass_rate"),
}


def _hashed(fields: dict[str, Any]) -> dict[str, Any]:
    # a case without expectations hashes as before they existed: no stored hash moves
    return {k: v for k, v in fields.items() if not (k == "expect" and v is None)}


def expect_data(expect: Expectations | None) -> dict[str, Any] | None:
    """A case's expectations as JSON data for its inputs (``None`` when it has none, or only an empty one)."""
    if expect is None or expect.empty:
        return None
    data: dict[str, Any] = TypeAdapter(Expectations).dump_python(expect, mode="json")
    return data


def _digest(payload: Mapping[str, Any]) -> str:
    data = protect(json.loads(json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)))
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_DIGITS]


@dataclass(frozen=True)
class InputHash:
    """The content hash of a case's inputs, one per part (:data:`HASH_DIGITS` hex digits each)."""

    asked: str
    judged: str
    labels: str

    @property
    def observed(self) -> tuple[str, str]:
        """The parts that decide an observation (``asked``, ``judged``): a baseline holds while they do."""
        return self.asked, self.judged

    def changed(self, other: InputHash) -> tuple[str, ...]:
        """The parts that differ from ``other``, in :data:`PARTS` order."""
        return tuple(name for name in PARTS if getattr(self, name) != getattr(other, name))

    def as_metadata(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in PARTS}

    @classmethod
    def from_metadata(cls, value: Any) -> InputHash | None:
        """The hash kept under :data:`INPUT_HASH_KEY`; ``None`` when absent or not well formed."""
        if not isinstance(value, Mapping) or not all(isinstance(value.get(name), str) for name in PARTS):
            return None
        return cls(*(str(value[name]) for name in PARTS))


def source_inputs(case: Case, *, solution: str | None = None, predicted_pass_rate: float | None = None) -> CaseInputs:
    """The inputs of a case as a source gives it (a :class:`~frontier_qa.probing._curriculum_seam.Proposal`'s
    case, with the proposal's ``solution`` and ``predicted_pass_rate``).

    A suite row keeps the solution and the engine's notes in the case's metadata; they are read
    from there (or left out) the same way as from a recorded case, so both sides compare equal.
    """
    meta = dict(case.metadata)
    program = solution if solution is not None else meta.get(SOLUTION_KEY)
    rate = predicted_pass_rate if predicted_pass_rate is not None else meta.get(PASS_RATE_KEY)
    return CaseInputs(
        prompt=case.prompt,
        system=case.system,
        tools=tuple(case.tools),
        history=tuple(case.history),
        answer_format=case.answer_format,
        reference=case.reference,
        trusted=case.reference is not None and meta.get(TRUSTED_KEY) is True,
        solution=program if isinstance(program, str) and program.strip() else None,
        topic=case.topic,
        metadata={k: v for k, v in sorted(meta.items()) if k not in ENGINE_KEYS},
        predicted_pass_rate=float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None,
        expect=expect_data(case.expect),
    )


def recorded_inputs(case: Case) -> CaseInputs:
    """The inputs a recorded case was made from, as near as the record tells.

    The engine may have replaced the reference: with the solution's output when the source gave
    none, with the judge's majority when a judge vouched for it (keeping the source's one as
    ``stated_reference`` when they differed). Both are undone here; a reference that a judge
    replaced by an equivalent majority cannot be told from the source's and reads as the majority.
    """
    meta = case.metadata
    reference = case.reference
    judge = meta.get("judge")
    if isinstance(judge, Mapping) and judge.get("verdict") is True and isinstance(meta.get("stated_reference"), str):
        reference = meta["stated_reference"]
    note = meta.get("verification")
    if isinstance(note, str) and note.startswith(TAKEN_FROM_SOLUTION):
        reference = None
    return source_inputs(replace(case, reference=reference))


def recorded_hash(case: Case) -> InputHash:
    """The input hash a recorded case was made from: the one kept with it, else computed."""
    kept = InputHash.from_metadata(case.metadata.get(INPUT_HASH_KEY))
    return kept if kept is not None else recorded_inputs(case).input_hash()


def stamped(case: Case, inputs: CaseInputs) -> Case:
    """``case`` with the hash of ``inputs`` kept in its metadata (what the engine records)."""
    return replace(case, metadata={**case.metadata, INPUT_HASH_KEY: inputs.input_hash().as_metadata()})


def _shown(value: Any, limit: int = 40) -> str:
    if value is None:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    text = " ".join(redact(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_SHORT = frozenset({"answer_format", "reference", "trusted", "topic", "predicted_pass_rate"})
_NAMES = {"trusted": "reference_verified", "predicted_pass_rate": "predicted_pass_rate"}


def describe_change(old: CaseInputs, new: CaseInputs, parts: tuple[str, ...] | None = None) -> str:
    """What changed between two versions of a case's inputs, in words.

    Short fields show both values (``reference changed 43 → 42``, secrets masked); long ones
    only their name (``prompt changed``).

    Args:
        old: the inputs as recorded.
        new: the inputs as the source has them now.
        parts: the parts whose hashes differ (default: every part); a part whose fields read the
            same on both sides (a recorded value the record cannot tell apart) is named as a whole.
    """
    said: list[str] = []
    for name in PARTS if parts is None else parts:
        before = len(said)
        for field in _PART_FIELDS[name]:
            a, b = getattr(old, field), getattr(new, field)
            if _digest({"v": a}) == _digest({"v": b}):
                continue
            label = _NAMES.get(field, field)
            if field in _SHORT:
                said.append(f"{label} changed {_shown(a)} → {_shown(b)}")
            else:
                said.append(f"{label} changed")
        if len(said) == before and parts is not None:
            said.append({"asked": "what the target sees changed", "judged": "how answers are judged changed",
                         "labels": "topic or metadata changed"}[name])
    return "; ".join(said) if said else "nothing changed"


__all__ = [
    "ENGINE_KEYS",
    "HASH_DIGITS",
    "INPUT_HASH_KEY",
    "PARTS",
    "REFRESHED_KEY",
    "CaseInputs",
    "InputHash",
    "describe_change",
    "recorded_hash",
    "recorded_inputs",
    "source_inputs",
    "stamped",
]
