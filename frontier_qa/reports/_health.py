"""Run health: did the run judge the agent at all? Part of the gate, with its own exit code.

A run that got nowhere must not pass. Each problem below ends the run with exit code 3
(:data:`~frontier_qa.exit_codes.EXIT_NO_JUDGEMENT`), apart from findings (1) and usage errors
(2), and its message comes first on the console and in every report:

=========================  ==========================================================
``target-unavailable``     the target (or the curriculum's model) stopped answering
``every-call-failed``      samples were drawn and every one of them failed
``no-valid-case``          cases came in, but none could be classified (all invalid)
``unresolved-share``       more cases stayed unresolved than the limit (default 20%)
``curriculum-empty``       the curriculum proposed nothing (an empty cases file?)
``nothing-to-replay``      a replay found no stored case to judge
``answers-unreadable``     most valid cases' answers were not in the format in force
                           (a plain-text agent under ``boxed``): the message shows one
                           answer and names ``answer_format``
``boundary-not-judged``    a task generator's knob could not be searched: the generator
                           raised, or most of its answers could not be read (the fix named)
=========================  ==========================================================

When calls timed out the message says so, and which setting to raise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from frontier_qa.reports._summary import Summary
from frontier_qa.store._records import BoundaryRecord, CaseClass, CaseRecord, RunWarning
from frontier_qa.store._stop_reason import StopReason

_TIMEOUT = re.compile(r"(local_)?timeout_s = ([0-9.]+) s|timed? ?out", re.IGNORECASE)


@dataclass(frozen=True)
class RunFacts:
    """What the run knows beyond its records.

    Attributes:
        mode: ``"probe"``, ``"replay"`` or ``"merge"``.
        stop_reason: why it stopped (``"target unavailable"``, ``"budget"`` ...), if known.
        stop_detail: the error behind that stop.
        stop_source: which model it came from: ``"target"`` or ``"curriculum"``.
        candidates: proposals the curriculum made (probe), if known.
        planned: cases a replay set out to judge (replay), if known.
        target: the target's id, for messages.
        undecided: cases set out to judge that the run stopped before deciding and never recorded
            (a pytest item whose replay the budget cut off): counted as unresolved.
        warnings: what the runs warned of as they started (a ``k`` that caps the policy too low:
            when that leaves too many cases unresolved, the problem names it as the cause).
    """

    mode: str = "probe"
    stop_reason: str | None = None
    stop_detail: str | None = None
    stop_source: str | None = None
    candidates: int | None = None
    planned: int | None = None
    target: str = ""
    undecided: int = 0
    warnings: tuple[RunWarning, ...] = ()


@dataclass(frozen=True)
class HealthProblem:
    """Why the run could not judge the agent: a short ``code`` and a message with the fix."""

    code: str
    message: str


def _timeout_hint(text: str, source: str | None, target: str) -> str:
    found = _TIMEOUT.search(text or "")
    if found is None:
        return ""
    name = "local_timeout_s" if found.group(1) else "timeout_s"  # in-process models: local_timeout_s
    key = f"curriculum.model.limits.{name}" if source == "curriculum" else f"target.limits.{name}"
    seconds = found.group(2)
    now = f" (now {float(seconds):g} s)" if seconds else ""
    local = any(s in target for s in ("hf:", "vllm", "python:")) or source == "curriculum"
    why = "; a local model on a CPU can need minutes per call" if local else ""
    suggest = f"{2 * float(seconds):g}" if seconds else "600"
    return f" The calls timed out{why}: raise {key}{now}, e.g. --set {key}={suggest}."


def assess(summary: Summary, facts: RunFacts = RunFacts(), *, max_unresolved_share: float | None = 0.2,
           boundaries: Sequence[BoundaryRecord] = ()) -> tuple[HealthProblem, ...]:
    """Every reason the run could not judge the agent (empty when it could).

    Args:
        summary: the run's cases.
        facts: what the run knows beyond its records.
        max_unresolved_share: the most unresolved cases, as a share of valid ones (``None``: off).
        boundaries: the task generators' boundaries the run searched: a knob measured is a judgement
            even with no case recorded (an agent reliable across the range); a knob that could not be
            judged (its generator raised, its answers could not be read) is a problem, with its fix.
    """
    problems: list[HealthProblem] = [HealthProblem("boundary-not-judged", f"{b.axis}: {b.problem}")
                                     for b in boundaries if b.problem]
    if any(level.samples for b in boundaries for level in b.levels) and not summary.total:
        return tuple(problems)  # the boundaries are what the run judged
    problems += [HealthProblem("expectations-not-judged", f"case {r.id}: {r.path.unjudged}")
                 for r in summary.records if r.path is not None and r.path.unjudged]
    counts = summary.by_class
    valid = summary.total - counts[CaseClass.INVALID] + facts.undecided
    samples = [s for r in summary.records for s in r.samples]
    errors = [s.error for s in samples if s.error]
    who = "the curriculum's model" if facts.stop_source == "curriculum" else f"the target {facts.target}".rstrip()
    if facts.stop_reason == StopReason.UNAVAILABLE:
        detail = facts.stop_detail or "too many calls in a row failed"
        problems.append(HealthProblem("target-unavailable", f"{who} stopped answering: {detail}."
                                      + _timeout_hint(detail, facts.stop_source, facts.target)))
    elif samples and len(errors) == len(samples):
        problems.append(HealthProblem(
            "every-call-failed", f"every one of the {len(samples)} target calls failed; the first error: {errors[0]}."
            + _timeout_hint(errors[0], "target", facts.target)))
    if facts.mode == "replay" and facts.planned == 0 and summary.total == 0:
        problems.append(HealthProblem("nothing-to-replay", "there was no stored case to replay; probe first, pass "
                                      "--suite FILE, or --scope all to replay other targets' cases"))
    elif facts.mode == "probe" and facts.candidates == 0 and summary.total == 0:
        problems.append(HealthProblem("curriculum-empty", "the curriculum proposed no case (is the cases file "
                                      "empty?); nothing was judged"))
    elif summary.total and valid == 0:
        reasons = [r.reason or "" for r in summary.records]
        timed_out = next((r for r in reasons if _TIMEOUT.search(r)), "")
        source = "curriculum" if "curriculum model" in timed_out else "target"
        problems.append(HealthProblem("no-valid-case", f"none of the {summary.total} cases could be classified: "
                                      "every one failed validation (see their reasons in report.md)"
                                      + (f"; the first: {timed_out}." if timed_out else "")
                                      + _timeout_hint(timed_out, source, facts.target)))
    elif not summary.total and not problems and facts.mode != "merge":
        problems.append(HealthProblem("no-valid-case", "no case was classified"))
    unreadable = [r for r in summary.records if r.case_class is CaseClass.UNRESOLVED
                  and r.n_unparseable > r.k - r.n_unparseable - r.n_failed]
    mostly_unreadable = bool(unreadable) and 2 * len(unreadable) > valid
    if mostly_unreadable:
        formats = sorted({r.case.answer_format for r in unreadable})
        shown = next((s.text for r in unreadable for s in r.samples if s.text and s.error is None), None)
        example = f"; one of them: {_clip(shown)!r}" if shown else ""
        problems.append(HealthProblem(
            "answers-unreadable", f"the agent's answers could not be read in {len(unreadable)} of {valid} cases "
            f"(answer_format {', '.join(formats)}){example}. Set `answer_format` on the cases (a cases file's "
            "`answer_format` key; the default `auto` reads a box, a 'Final answer:' line, JSON `answer` or a short "
            "plain reply; `json:<field>` reads a field; `text` compares open-ended answers by meaning)"))
    unresolved = counts[CaseClass.UNRESOLVED] + facts.undecided
    if mostly_unreadable:
        pass  # the unreadable answers are the run's problem, not its budget
    elif max_unresolved_share is not None and valid and unresolved / valid > max_unresolved_share + 1e-12:
        # a run cut short says why (budget, interrupted); a run that ended as runs end adds nothing
        normal = (StopReason.EXHAUSTED, StopReason.SATURATED, StopReason.MAX_CANDIDATES, StopReason.DONE)
        why = f" ({facts.stop_reason})" if facts.stop_reason and facts.stop_reason not in normal else ""
        among = (f" ({len(unreadable)} of them with answers not in their answer_format: see their reasons)"
                 if unreadable else "")
        capped = _cap_cause(summary.records, facts.warnings)
        fix = capped or "raise the budget or k, or resume the run"
        fix += " (gate.max_unresolved_share sets the limit)"
        problems.append(HealthProblem(
            "unresolved-share", f"{unresolved} of {valid} cases ({unresolved / valid:.0%}) stayed unresolved{why}"
            f"{among}, above the limit of {max_unresolved_share:.0%}: {fix}"))
    elif valid and unresolved == valid:  # the limit is off (or 100 %), but a run that decided nothing judged nothing
        capped = _cap_cause(summary.records, facts.warnings)
        problems.append(HealthProblem(
            "nothing-judged", f"all {valid} cases stayed unresolved: no case was decided, so the agent was not "
            "judged; " + (capped or "raise the budget or k, or resume the run")))
    return tuple(problems)


def _cap_cause(records: Sequence[CaseRecord], warnings: Sequence[RunWarning]) -> str | None:
    """The cause and fix, when the runs warned of a ``k-cap`` and most unresolved cases stopped at that
    cap (not a budget stop): the cap is then why the run could not judge the agent.
    """
    cap = next((w for w in warnings if w.code == "k-cap" and w.cap is not None), None)
    if cap is None or cap.cap is None:
        return None
    stuck = [r for r in records if r.case_class is CaseClass.UNRESOLVED]
    at_cap = sum(1 for r in stuck if r.k - r.n_failed >= cap.cap)
    if not stuck or 2 * at_cap <= len(stuck):
        return None
    return f"k = {cap.cap} capped the sampling at {cap.cap} samples per case (the run warned as it started); {cap.fix}"


def _clip(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


__all__ = ["HealthProblem", "RunFacts", "assess"]
