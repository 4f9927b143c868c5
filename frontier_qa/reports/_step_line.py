"""An agent's steps on one line, per answer cluster: ``model → search(query="paris") → model → answer "Paris"``.

``cases show`` and report.html print it under each answer of a case, from one sample that gave
that answer (the first by index), so a reader sees *how* the agent reached each answer without
opening the cache. Samples without steps (a plain model, an agent that recorded none) give none.

When the case's path was analysed and its samples took more than one path, one sample per answer
would hide the others: 4 samples that called ``capital_of`` and 4 that called ``lookup_city``
(and missed the expectations) all said "Paris". Then :func:`path_lines` gives one line per path
under each answer, with how many of the answer's samples took it and the first of them (its steps,
its misses).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from frontier_qa.reports._summary import CALL_FAILED, answer_distribution, error_text
from frontier_qa.reports._text import shorten
from frontier_qa.scoring._equivalence import normalize
from frontier_qa.store._records import CaseRecord, SampleRecord
from frontier_qa.store._steps import Step

ARROW = " → "
LINE_CHARS = 200
"""Characters of a step line; longer ones keep their first steps and their end (the answer)."""

_VALUE_CHARS = 24
_ARGUMENTS_CHARS = 60
_NAME_CHARS = 32


def _arguments(text: str | None) -> str:
    if not text:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        return shorten(" ".join(text.split()), _ARGUMENTS_CHARS)
    if isinstance(data, dict):
        pairs = [f"{key}={shorten(json.dumps(value, ensure_ascii=False), _VALUE_CHARS)}" for key, value in data.items()]
        return shorten(", ".join(pairs), _ARGUMENTS_CHARS)
    return shorten(json.dumps(data, ensure_ascii=False), _ARGUMENTS_CHARS)


def step_label(step: Step) -> str:
    """One step as the line shows it: ``model``, ``search(query="paris")``, ``handoff(Billing)``,
    ``plan``; ``✗`` marks a step that failed.
    """
    name = shorten(step.name, _NAME_CHARS)
    if step.kind == "model":
        label = "model"
    elif step.kind == "tool":
        label = f"{name}({_arguments(step.arguments)})"
    elif step.kind == "handoff":
        label = f"handoff({name})"
    elif step.kind == "cut":
        label = f"… {step.name} more"
    else:
        label = name
    return label + (" ✗" if step.error else "")


def _collapsed(labels: Sequence[str]) -> list[str]:
    """Runs of one label as one (``model ×3``): an agent that polls reads as one step."""
    out: list[tuple[str, int]] = []
    for label in labels:
        if out and out[-1][0] == label:
            out[-1] = (label, out[-1][1] + 1)
        else:
            out.append((label, 1))
    return [label if n == 1 else f"{label} ×{n}" for label, n in out]


def _fit(labels: Sequence[str], chars: int) -> str:
    """Joined with arrows within ``chars``: the first steps and the last ones, ``… N more`` between."""
    if len(ARROW.join(labels)) <= chars or len(labels) < 3:
        return shorten(ARROW.join(labels), chars)

    def text(head: int, tail: int) -> str:
        return ARROW.join([*labels[:head], f"… {len(labels) - head - tail} more", *labels[len(labels) - tail:]])

    head = tail = 1
    while head + tail < len(labels) - 1:
        grown = (head, tail + 1) if tail < head else (head + 1, tail)
        if len(text(*grown)) > chars:
            break
        head, tail = grown
    return shorten(text(head, tail), chars)


def _ending(sample: SampleRecord) -> str:
    if sample.answer is not None:
        return f'answer "{shorten(" ".join(sample.answer.split()), 40)}"'
    return "failed" if sample.error is not None else "no answer"


def step_line(sample: SampleRecord, chars: int = LINE_CHARS) -> str | None:
    """The sample's steps and its answer on one line, or ``None`` when it recorded no steps (agents
    started do not count).
    """
    # an agent starting is no step of its own: the model calls and handoffs under it say what it did
    shown = [step_label(s) for s in sample.steps if s.kind != "agent"]
    if not shown:
        return None
    return _fit(_collapsed([*shown, _ending(sample)]), chars)


def _answer_of(sample: SampleRecord) -> str:
    """The entry of :func:`~frontier_qa.reports._summary.answer_distribution` the sample counts toward."""
    if sample.answer is not None:
        return sample.answer
    return CALL_FAILED + error_text(sample.error) if sample.error is not None else "(no answer)"


def cluster_samples(record: CaseRecord) -> dict[str, SampleRecord]:
    """For each answer of :func:`~frontier_qa.reports._summary.answer_distribution`, the sample that
    shows it: the first (by index) that recorded steps, else its first sample.
    """
    wanted = {answer for answer, _ in answer_distribution(record)}
    chosen: dict[str, SampleRecord] = {}
    for sample in sorted(record.samples, key=lambda s: s.sample_index):
        answer = _answer_of(sample)
        if answer in wanted and (answer not in chosen or (not _shows_steps(chosen[answer]) and _shows_steps(sample))):
            chosen[answer] = sample
    return chosen


def _shows_steps(sample: SampleRecord) -> bool:
    return any(s.kind != "agent" for s in sample.steps)


def cluster_steps(record: CaseRecord, chars: int = LINE_CHARS) -> dict[str, str]:
    """For each answer of :func:`~frontier_qa.reports._summary.answer_distribution`, the step line
    of the first sample (by index) that gave it; answers whose samples recorded no steps are left out.
    """
    lines = {answer: step_line(sample, chars) for answer, sample in cluster_samples(record).items()}
    return {answer: line for answer, line in lines.items() if line is not None}


@dataclass(frozen=True)
class PathLine:
    """The samples of one answer that took one path: how many, and the first of them by index.

    Attributes:
        path: the path (:attr:`SampleRecord.path`), ``None`` for samples without one.
        count: the answer's samples that took it.
        sample: the first of them (its steps and misses are shown).
        steps: that sample's :func:`step_line`, ``None`` when it recorded no steps.
    """

    path: str | None
    count: int
    sample: SampleRecord
    steps: str | None


def _members(record: CaseRecord) -> dict[str, list[SampleRecord]]:
    """Each answer's samples by index: the exact form first, else the normalized one (as exact
    clusters merge ``Paris`` and ``paris.``). Samples of a semantic cluster whose form matches
    neither are left out: the record does not keep which cluster they joined.
    """
    answers = [answer for answer, _ in answer_distribution(record)]
    forms = {normalize(a): a for a in reversed(answers)}
    members: dict[str, list[SampleRecord]] = {a: [] for a in answers}
    for sample in sorted(record.samples, key=lambda s: s.sample_index):
        answer = _answer_of(sample)
        found = answer if answer in members else forms.get(normalize(answer))
        if found is not None:
            members[found].append(sample)
    return members


def path_lines(record: CaseRecord, chars: int = LINE_CHARS) -> dict[str, tuple[PathLine, ...]]:
    """For each answer, one :class:`PathLine` per path its samples took, most samples first (ties:
    the earliest sample); empty when the case's path was not analysed or all its samples took one
    path (then :func:`cluster_steps` says it all).
    """
    if record.path is None or len(record.path.clusters) < 2:
        return {}
    lines: dict[str, tuple[PathLine, ...]] = {}
    for answer, samples in _members(record).items():
        by_path: dict[str | None, list[SampleRecord]] = {}
        for sample in samples:
            by_path.setdefault(sample.path, []).append(sample)
        ordered = sorted(by_path.items(), key=lambda ps: (-len(ps[1]), ps[1][0].sample_index))
        if ordered:
            lines[answer] = tuple(PathLine(path, len(took), took[0], step_line(took[0], chars))
                                  for path, took in ordered)
    return lines


def path_line_text(line: PathLine) -> str:
    """``4 × steps: capital_of(country="France") → answer "Paris"``; ``4 × path: capital_of`` when
    the sample recorded no steps (secrets masked either way).
    """
    if line.steps is not None:
        return f"{line.count} × steps: {line.steps}"
    path = "(none)" if line.path is None else shorten(" ".join(line.path.split()), _ARGUMENTS_CHARS + 20)
    return f"{line.count} × path: {path}"


__all__ = ["ARROW", "LINE_CHARS", "PathLine", "cluster_samples", "cluster_steps", "path_line_text", "path_lines",
           "step_label", "step_line"]
