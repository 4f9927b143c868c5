"""A sampled case's class and why, in words: the rules of the probe brief, pure.

:func:`classify_case` reads one :class:`CaseEvidence` (where sampling stopped and on what
evidence, the answers and the reference) and returns ``(case_class, reason)``; the prober
(:mod:`frontier_qa.probing._case_prober`), a refresh and an accept all classify through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from frontier_qa.probing._sequential import BandDecision, BandPosterior, SequentialConfig
from frontier_qa.probing._validity import UNCHECKED_REASON
from frontier_qa.scoring.bands import AGENT0_BAND, in_band
from frontier_qa.store._records import POSTERIOR_KEY, CaseClass


@dataclass(frozen=True, kw_only=True)
class CaseEvidence:
    """What a case's class rests on: the band decision, the answers and the reference.

    Attributes:
        verdict: where sampling stopped (``IN_BAND``, ``ABOVE``, ``BELOW``; the leaning when
            ``forced``); ``None`` when sampling ended before a decision.
        majority: the majority answer (pseudo-label ỹ), ``None`` when no sample answered.
        reference: the case's reference answer, if any.
        reference_verified: whether that reference was verified (solution program, trusted
            source or judge); only a verified reference can make a ``failure``.
        majority_correct: whether the majority is equivalent to the reference (``None``: unknown).
        judge_verdict: a judge target's "is the majority correct?" (``None``: not asked / no answer).
        n_answered: samples that gave an answer.
        n_unparseable: samples that ran but gave no answer.
        band: (low, high) of the band, for the reason text.
        p_hat: the final p̂, for the reason text.
        stopped_by: why sampling ended early (``"budget"``...), for unresolved cases.
        forced: the verdict is a leaning at k_max (or the failure budget), below the
            configured confidence: the case is ``unresolved``, never frontier.
        posterior: where p* lies relative to the band; the reason text states it.
        confidence: the confidence the verdict had to reach (for the reason text).
        k: counted samples, for the reason text.
        fixed: the verdict is Agent0's fixed-k rule (p̂ in the band), not a posterior decision.
        answer_format: the format the answers were read in, for the reason text. When most
            samples that ran gave no answer in it, the case is ``unresolved``: "could not judge"
            (:func:`unreadable_reason`), never ``failure``.
        task_checked: whether the task is checked (:func:`frontier_qa.probing._validity.task_checked`):
            in the band on an unchecked task is ``unchecked``, never ``frontier``.
        unchecked_why: why the task is unchecked and how to check it, for the reason text.
    """

    verdict: BandDecision | None
    majority: str | None
    reference: str | None
    reference_verified: bool
    majority_correct: bool | None
    judge_verdict: bool | None = None
    n_answered: int = 1
    n_unparseable: int = 0
    band: tuple[float, float] = AGENT0_BAND.limits
    p_hat: float | None = None
    stopped_by: str | None = None
    forced: bool = False
    posterior: BandPosterior | None = None
    confidence: float | None = None
    k: int | None = None
    fixed: bool = False
    answer_format: str | None = None
    task_checked: bool = True
    unchecked_why: str | None = None


def classify_case(evidence: CaseEvidence) -> tuple[CaseClass, str]:
    """The class of a sampled case and why, in words.

    Returns:
        ``(case_class, reason)``. The reason states the posterior (P(below), P(in band),
        P(above)) and the interval of p*, so it never contradicts the band it prints.
    """
    e = evidence
    stated = _evidence(e.band, e.p_hat, e.k, e.posterior, e.fixed)
    if e.verdict is None:
        stopped = f"sampling stopped ({e.stopped_by or 'no samples'}) before the band was decided"
        if e.posterior is None:
            return CaseClass.UNRESOLVED, stopped
        return CaseClass.UNRESOLVED, f"{stopped}, leaning {e.posterior.leaning}: {stated}"
    if e.n_answered == 0 and e.n_unparseable == 0:
        return CaseClass.UNRESOLVED, "every target call failed; nothing to score"
    if e.n_unparseable > e.n_answered:
        # Most answers could not be read: the format in force is the question, not the agent (no
        # frontier, no failure, whatever the posterior says); the run's health names the fix.
        return CaseClass.UNRESOLVED, unreadable_reason(e.n_unparseable, e.n_answered, e.answer_format)
    if e.forced:
        need = "" if e.confidence is None else f" (needed {e.confidence:.2f})"
        leaning = {BandDecision.IN_BAND: "in band", BandDecision.BELOW: "below the band",
                   BandDecision.ABOVE: "above the band"}[e.verdict]
        return CaseClass.UNRESOLVED, f"undecided at the sample limit{need}, leaning {leaning}: {stated}"
    which = "verified" if e.reference_verified else "unverified"
    if e.verdict is BandDecision.IN_BAND:
        # Agent0 §3.3: the uncertainty signal stands on its own; the reference only annotates it
        extra = ""
        if e.majority_correct is False:
            extra = f"; the majority {e.majority!r} also differs from the {which} reference"
        if not e.task_checked:  # issue 27: an ill-posed task must not pose as the agent's frontier
            why = f" ({e.unchecked_why})" if e.unchecked_why else ""
            return CaseClass.UNCHECKED, f"{UNCHECKED_REASON}: {stated}{extra}{why}"
        return CaseClass.FRONTIER, f"unsure: {stated}{extra}"
    if e.verdict is BandDecision.ABOVE:
        if e.reference_verified and e.majority_correct is not None:
            if e.majority_correct:
                return CaseClass.PASS, f"stable majority matches the verified reference ({stated})"
            return CaseClass.FAILURE, (f"stable majority {e.majority!r} differs from the verified reference "
                                       f"{e.reference!r} ({stated})")
        if e.judge_verdict is not None:
            if e.judge_verdict:
                return CaseClass.PASS, f"stable majority judged correct ({stated})"
            return CaseClass.FAILURE, f"stable majority {e.majority!r} judged wrong ({stated})"
        if e.reference is not None and e.majority_correct is not None:
            if e.majority_correct:
                return CaseClass.PASS, f"stable majority matches the (unverified) reference ({stated})"
            return CaseClass.SUSPECT, (
                f"stable majority {e.majority!r} differs from the unverified reference {e.reference!r} "
                f"(the reference may be wrong; {stated})"
            )
        return CaseClass.PASS, f"stable majority; no reference to check it against ({stated})"
    if e.reference_verified and e.majority_correct is not True:
        missed = "no sample gave an answer" if e.majority is None else f"the majority {e.majority!r} misses it"
        return CaseClass.FAILURE, f"answers scattered ({stated}) and {missed}: verified reference {e.reference!r}"
    return CaseClass.SUSPECT, f"answers scattered: {stated}"


UNREADABLE = "could not judge: the agent's answers are not in format"
"""How the reason of a case whose answers could not be read begins (:func:`unreadable_reason`)."""


def unreadable_reason(n_unparseable: int, n_answered: int, answer_format: str | None) -> str:
    """Why a case whose answers mostly could not be read is not judged, and the setting that fixes it."""
    fmt = repr(answer_format) if answer_format else "(the case's)"
    return (f"{UNREADABLE} {fmt}: {n_unparseable} of {n_unparseable + n_answered} gave none; set the case's "
            "answer_format (a cases file's `answer_format` key): `auto` reads a box, a 'Final answer:' line, "
            "JSON `answer` or a short plain reply; `json:<field>` a field; `text` compares open answers by meaning")


def posterior_note(posterior: BandPosterior, verdict: BandDecision, *, forced: bool,
                   confidence: float | None) -> dict[str, Any]:
    """What a record keeps of its band decision (under :data:`POSTERIOR_KEY`), enough to classify
    it again without its samples' posterior (a reference fixed later: :mod:`frontier_qa.probing._refresh`).

    Args:
        posterior: where p* lies relative to the band.
        verdict: where sampling stopped (the leaning when it was cut short).
        forced: the verdict is a leaning, below the confidence asked (or sampling was cut short).
        confidence: the confidence the verdict had to reach; ``None`` with fixed k.
    """
    post = posterior
    return {
        "below": round(post.below, 4), "inside": round(post.inside, 4), "above": round(post.above, 4),
        "credible": [round(post.credible[0], 4), round(post.credible[1], 4)], "level": post.level,
        "leaning": post.leaning, "verdict": verdict.value, "forced": forced, "confidence": confidence,
    }


def confidence_of(policy: SequentialConfig | None, verdict: BandDecision | None) -> float | None:
    """The confidence a verdict had to reach under ``policy`` (``None`` with fixed k)."""
    if policy is None:
        return None
    return policy.confidence if verdict in (BandDecision.IN_BAND, None) else policy.out_confidence


def _evidence(band: tuple[float, float], p_hat: float | None, k: int | None, posterior: BandPosterior | None,
              fixed: bool) -> str:
    """p̂ with its k, and the posterior of p* (what a verdict rests on)."""
    lo, hi = band
    text = "p̂ = —" if p_hat is None else f"p̂ = {p_hat:.2f}" + ("" if k is None else f" at k = {k}")
    if fixed:  # Agent0's rule: p̂ against the band, whatever the evidence
        where = "inside" if p_hat is not None and in_band(p_hat, lo, hi) else "outside"
        text += f", {where} the band [{lo:.2f}, {hi:.2f}] (fixed k: Agent0's rule, no confidence)"
    return text if posterior is None else f"{text}; {posterior.describe(band)}"


__all__ = ["POSTERIOR_KEY", "UNREADABLE", "CaseEvidence", "classify_case", "confidence_of", "posterior_note",
           "unreadable_reason"]
