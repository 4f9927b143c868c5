"""An agent's steps on one line, per answer cluster: ``model → search(query="paris") → model → answer "Paris"``.

``cases show`` and report.html print it under each answer of a case, from one sample that gave
that answer (the first by index), so a reader sees *how* the agent reached each answer without
opening the cache. Samples without steps (a plain model, an agent that recorded none) give none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from frontier_qa.reports._summary import CALL_FAILED, answer_distribution, error_text
from frontier_qa.reports._text import shorten
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


__all__ = ["ARROW", "LINE_CHARS", "cluster_samples", "cluster_steps", "step_label", "step_line"]
