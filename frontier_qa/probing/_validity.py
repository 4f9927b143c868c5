"""Is the task well-posed? A verdict on each proposed task before the target is called.

A frontier label says "the agent's ability ends here"; on a task with no determinate answer it
says something false about the agent (issue 27: "A shoe costs $1.50 … how many feet does it
have?" came out frontier). So each generated proposal gets a verdict, through the validator's
critic seam (:class:`~frontier_qa.probing._validation.Critic`), before any target call:

* ``well-posed``: one determinate answer from the task's own information;
* ``ill-posed``: missing or contradictory information, a question the givens do not decide,
  several readings, a false premise, or no task at all. The proposal is ``invalid`` with the
  reason and costs no target call;
* ``unverifiable``: a real question with no answer a reader can check (opinions, predictions,
  the present moment). It is sampled, but never called frontier or failure;
* no verdict: the judges found nothing wrong but none vouches for the task (rules never do).

The judges, weakest first: :class:`RuleJudge` (patterns of the ill-posed tasks small curriculum
models write; free), :class:`ModelJudge` (any target answering a fixed prompt: the curriculum
model, or a stronger judge model). :class:`ValidityJudge` chains them: rules, then the model
on what the rules let through, then an optional further critic (SAGE).

What the probe does with the verdict (:func:`task_checked`): a case is ``frontier`` or
``failure`` only when its task is *checked*: its reference verified (a program run in the
sandbox computed it, or its source vouches for it), judged ``well-posed``, or written by a person
(a cases file, a committed suite: its author vouches for it). A scattered case on an unchecked
task is ``unchecked`` ("uncertain on an unchecked task"), counted apart. The benchmark
``benchmarks/validity_bench.py`` measures each judge on held-out labelled tasks.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._task_rules import ILL_POSED, RULES, UNVERIFIABLE, WELL_POSED, Finding, rule_findings
from frontier_qa.probing._validation import Critic, TaskCritique, ask_once
from frontier_qa.target import Case, Sampling, Target

log = logging.getLogger(__name__)

VERDICTS = (WELL_POSED, ILL_POSED, UNVERIFIABLE)

VALIDITY_KEY = "validity"
"""Case metadata key: ``{"verdict": WELL_POSED | ILL_POSED | UNVERIFIABLE | None, "judge": ..., "reason": ...}``."""

AUTHOR = "author"
"""The judge named on a case a person wrote (a cases file, a suite): its author vouches for it."""

UNCHECKED_REASON = "uncertain on an unchecked task"
"""How the reason of an ``unchecked`` case begins."""


def validity_of(case: Case) -> Mapping[str, Any]:
    """The validity note a case carries (empty when it was never judged)."""
    note = case.metadata.get(VALIDITY_KEY) if isinstance(case.metadata, Mapping) else None
    return note if isinstance(note, Mapping) else {}


def task_checked(case: Case, verified: bool) -> bool:
    """Whether a case's task may carry a ``frontier`` or ``failure`` label.

    Args:
        case: the case, with its validity note (:data:`VALIDITY_KEY`) when it was judged.
        verified: whether its reference is verified (a sandboxed program, a generator, its source).
    """
    if verified:
        return True
    note = validity_of(case)
    return note.get("verdict") == WELL_POSED or note.get("judge") == AUTHOR


def unchecked_why(case: Case) -> str:
    """Why a case's task counts as unchecked, and how to check it (for the case's reason)."""
    note = validity_of(case)
    verdict, judge = note.get("verdict"), note.get("judge")
    if verdict == UNVERIFIABLE:
        said = f"judged unverifiable by {judge}: {note.get('reason')}"
    elif judge in (None, "off"):
        said = "no validity judge ran"
    else:
        said = f"{judge} found nothing wrong but cannot vouch for it"
    return (f"{said}; no verified reference. Give the case a solution program or a trusted reference, "
            "or set validation.validity to a judge model (docs/explanation/well-posed.md)")


# --- rules --------------------------------------------------------------------------------


class RuleJudge:
    """Patterns of ill-posed and unverifiable tasks; free, and never vouches for a task."""

    name = "rules"

    async def judge(self, proposal: Proposal) -> TaskCritique:
        return self.verdict(proposal.case.prompt)

    def verdict(self, text: str) -> TaskCritique:
        """The rules' verdict on one task text (no model call)."""
        found = rule_findings(text)
        ill = [f for f in found if f.verdict == ILL_POSED]
        if ill:
            return TaskCritique(0.0, False, f"ill-posed ({ill[0].kind}): {ill[0].reason}", ILL_POSED, self.name)
        if found:
            return TaskCritique(0.5, True, f"unverifiable: {found[0].reason}", UNVERIFIABLE, self.name)
        return TaskCritique(0.5, True, "the rules found nothing wrong", None, self.name)


# --- a model as judge ---------------------------------------------------------------------

VALIDITY_PROMPT = """You check math word problems before they are used as test questions. Read the problem and decide:

- well-posed: a careful reader can compute exactly one answer from the problem's own numbers and everyday facts (a week has 7 days, an hour 60 minutes), and every reasonable reading gives the same answer. Extra unused facts are fine.
- ill-posed: a number the answer needs is missing; two facts contradict each other; the question asks about something the problem does not describe; reasonable readings give different answers; the question assumes something false; or there is no question at all.
- unverifiable: an opinion, a prediction or a fact about the present moment, with no answer a reader can check.

Examples:
Problem: A box holds 6 rows of 8 eggs. How many eggs are in the box?
Verdict: well-posed
Problem: A shop sells apples. How much do 5 apples cost?
Verdict: ill-posed (the price of an apple is not given)
Problem: A pen costs $2. How many legs does it have?
Verdict: ill-posed (the question is not about what is given)
Problem: What will the price of gold be next year?
Verdict: unverifiable

Problem: {problem}
Verdict:"""
"""The judge model's prompt: the labelling rule in short (benchmarks/data/validity/RULE.md), four
examples written for the prompt (none from the labelled set), and a ``Verdict:`` prefix to continue."""

VALIDITY_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=48)

_VERDICT_WORD = re.compile(r"\b(well[- ]?posed|ill[- ]?posed|unverifiable|not well[- ]?posed)\b", re.I)


def parse_validity(text: str | None) -> tuple[str | None, str]:
    """The verdict a judge model wrote (its first verdict word) and the rest of its line as the reason."""
    if not text:
        return None, ""
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    for candidate in (line, text):
        m = _VERDICT_WORD.search(candidate)
        if m:
            word = m.group(1).lower().replace(" ", "-")
            verdict = ILL_POSED if word.startswith(("ill", "not")) else UNVERIFIABLE if word == UNVERIFIABLE else WELL_POSED
            rest = candidate[m.end():].strip(" .:-()\t")
            return verdict, rest[:200]
    return None, " ".join(text.split())[:200]


class ModelJudge:
    """Any target as the validity judge: :data:`VALIDITY_PROMPT`, one sample, its verdict word.

    Args:
        model: the judge (the curriculum model, or a stronger model from config).
        name: how reports name it (default ``"model <id>"``).
        sampling: its sampling (default greedy, 48 tokens); the seed comes from the task text.
        on_error: the verdict when the model gives none: ``None`` (no verdict: the task stays
            unchecked, the default) or :data:`ILL_POSED`.
    """

    def __init__(self, model: Target, *, name: str | None = None, sampling: Sampling = VALIDITY_SAMPLING,
                 on_error: str | None = None) -> None:
        self.model = model
        self.name = name or f"model {model.id}"
        self.sampling = sampling
        self.on_error = on_error

    def request(self, text: str) -> Case:
        prompt = VALIDITY_PROMPT.format(problem=" ".join(text.split()))
        digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]
        return Case(id=f"validity-{digest}", prompt=prompt, topic="validity", answer_format="text")

    async def judge(self, proposal: Proposal) -> TaskCritique:
        return await self.verdict(proposal.case.prompt)

    async def verdict(self, text: str) -> TaskCritique:
        reply, why = await ask_once(self.model, self.request(text), self.sampling)
        if reply is None:
            return self._none(f"the judge model gave no reply ({why})")
        verdict, reason = parse_validity(reply)
        if verdict is None:
            return self._none(f"the judge model gave no verdict: {reason!r}")
        said = f"{verdict}" + (f": {reason}" if reason else "")
        return TaskCritique(1.0 if verdict == WELL_POSED else 0.0, verdict != ILL_POSED, said, verdict, self.name)

    async def readings(self, text: str, first: str, second: str) -> tuple[bool | None, str]:
        """Whether the answers ``first`` and ``second`` split along readings of an unclear task:
        ``(True, why)`` unclear, ``(False, why)`` one is a mistake, ``(None, why)`` no verdict.
        """
        prompt = READINGS_PROMPT.format(problem=" ".join(text.split()), first=" ".join(first.split())[:300],
                                        second=" ".join(second.split())[:300])
        digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]
        case = Case(id=f"readings-{digest}", prompt=prompt, topic="validity", answer_format="text")
        reply, why = await ask_once(self.model, case, self.sampling)
        if reply is None:
            return None, f"the judge model gave no reply ({why})"
        return parse_readings(reply)

    def _none(self, reason: str) -> TaskCritique:
        log.warning("the validity judge %s could not judge a task: %s", self.name, reason)
        if self.on_error == ILL_POSED:
            return TaskCritique(0.0, False, f"{reason}; rejected", ILL_POSED, self.name)
        return TaskCritique(0.5, True, reason, None, self.name)


READINGS_PROMPT = """A test question got two different answers from the same solver.

Question: {problem}
Answer A: {first}
Answer B: {second}

Is the question unclear, so that each answer is right under a different reasonable reading of it? Or is the question clear and one answer simply a mistake? Reply with one word, unclear or mistake, then a short reason.
Verdict:"""
"""Asked of a judge model about a case whose answers split (:meth:`ModelJudge.readings`)."""

_READINGS_WORD = re.compile(r"\b(unclear|ambiguous|mistake|clear)\b", re.I)


def parse_readings(text: str | None) -> tuple[bool | None, str]:
    """Whether a judge said the split comes from readings of an unclear task (``None``: no verdict)."""
    if not text:
        return None, ""
    m = _READINGS_WORD.search(text)
    if m is None:
        return None, " ".join(text.split())[:200]
    return m.group(1).lower() in ("unclear", "ambiguous"), text[m.end():].strip(" .:-()\t\n")[:200]


# --- the chain ----------------------------------------------------------------------------


class ValidityJudge:
    """Rules, then a model judge, then a further critic: the validator's critic (its ``judge``).

    A task the rules call ill-posed is rejected without a model call; the model judge is asked
    about the rest; a task a person wrote is not judged (its author vouches for it). The verdict
    carries the first definite validity found (ill-posed wins, then unverifiable, then well-posed).

    Args:
        rules: run :class:`RuleJudge` first.
        model: an optional :class:`ModelJudge`.
        then: an optional further critic (SAGE), asked only about tasks that passed.
        own_model: the judge model this judge was given to close (the config opened it for it).
    """

    def __init__(self, *, rules: bool = True, model: ModelJudge | None = None, then: Critic | None = None,
                 own_model: Target | None = None) -> None:
        self.rules = RuleJudge() if rules else None
        self.model_judge = model
        self.then = then
        # the further critic's model, where the session looks for the critic's (spend, closing)
        self.model: Target | None = getattr(then, "model", None)
        self.own_model = own_model

    @property
    def name(self) -> str:
        parts = [j.name for j in (self.rules, self.model_judge) if j is not None]
        return " + ".join(parts) or "off"

    async def judge(self, proposal: Proposal) -> TaskCritique:
        if proposal.written or validity_of(proposal.case).get("judge") == AUTHOR:
            return TaskCritique(1.0, True, "written by a person: its author vouches for it", None, AUTHOR)
        verdicts: list[TaskCritique] = []
        for judge in (self.rules, self.model_judge):
            if judge is None:
                continue
            verdict = await judge.judge(proposal)
            verdicts.append(verdict)
            if not verdict.passed:
                return verdict
        merged = _merge(verdicts, self.name)
        if self.then is not None:
            further = await self.then.judge(proposal)
            if not further.passed:
                return further
            if merged.validity is None and further.validity is not None:
                return replace(further, reason=f"{merged.reason}; {further.reason}")
            return replace(merged, score=further.score, reason=f"{merged.reason}; {further.reason}")
        return merged


def _merge(verdicts: Sequence[TaskCritique], name: str) -> TaskCritique:
    for wanted in (UNVERIFIABLE, WELL_POSED):
        for v in verdicts:
            if v.validity == wanted:
                return v
    reasons = "; ".join(v.reason for v in verdicts) or "no validity judge ran"
    return TaskCritique(0.5, True, reasons, None, name)


def validity_note(verdict: TaskCritique | None) -> dict[str, Any] | None:
    """What a case's metadata keeps of a validity verdict (:data:`VALIDITY_KEY`)."""
    if verdict is None or verdict.judge is None:
        return None
    return {"verdict": verdict.validity, "judge": verdict.judge, "reason": verdict.reason}


__all__ = [
    "AUTHOR",
    "ILL_POSED",
    "RULES",
    "UNCHECKED_REASON",
    "UNVERIFIABLE",
    "VALIDITY_KEY",
    "READINGS_PROMPT",
    "VALIDITY_PROMPT",
    "VERDICTS",
    "WELL_POSED",
    "Finding",
    "ModelJudge",
    "RuleJudge",
    "ValidityJudge",
    "parse_readings",
    "parse_validity",
    "rule_findings",
    "task_checked",
    "unchecked_why",
    "validity_note",
    "validity_of",
]
