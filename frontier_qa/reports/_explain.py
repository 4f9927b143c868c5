"""A replay verdict explained in plain text: what a person needs to act on it.

One block per case, shared by the pytest failure message, ``junit.xml``, ``report.md`` and
the console, so they all say the same thing (and :func:`removal`, the same for a case the
validator removed)::

    regression: dates/what-day-of-the-week-was-14-march-1879-3f2a9c
      prompt:     What day of the week was 14 March 1879?
      reference:  Friday (verified)
      baseline:   pass, p̂ 0.95 [0.86, 0.98], k=40, agent 1+src.3f2a9c1b, 2025-01-03
      now:        failure, p̂ 1.00 [0.74, 1.00], k=10, agent 1+src.77aa0b12
      why:        right answers (verified reference 'Friday'): 38/40 in the baseline, 0/10 now (...)
      answers now:       10 × Thursday
      answers baseline:  38 × Friday, 2 × Saturday
      replay it:  pytest 'tests/test_agent.py::test_agent[dates/what-…-3f2a9c]' --frontier-mode=replay

A failed sample is shown with its error, one entry per distinct error with its count
(``3 × call failed: RuntimeError: flaky backend (at agent.py:3 in run)``), secrets masked.
"""

from __future__ import annotations

from collections.abc import Sequence

from frontier_qa.reports._summary import CALL_FAILED, ERROR_CHARS, answer_distribution
from frontier_qa.reports._text import fmt_p, shorten
from frontier_qa.store._comparison import Comparison
from frontier_qa.store._records import Baseline, CaseRecord, Interval

TOP_ANSWERS = 4
"""Answers listed per side (the rest are counted as "… N more")."""


def _interval(interval: Interval | None) -> str:
    return "" if interval is None else f" [{interval.low:.2f}, {interval.high:.2f}]"


def answer_label(answer: str, chars: int) -> str:
    """An answer of :func:`~frontier_qa.reports._summary.answer_distribution` on one line, at most
    ``chars`` characters; a failed call's error keeps the length :func:`error_text
    <frontier_qa.reports._summary.error_text>` gave it (so its location, at the end, stays).
    """
    one = " ".join(answer.split())
    return shorten(one, max(chars, len(CALL_FAILED) + ERROR_CHARS) if one.startswith(CALL_FAILED) else chars)


def votes(pairs: Sequence[tuple[str, int]], top: int = TOP_ANSWERS, chars: int = 80) -> str:
    """``"10 × Thursday, 2 × Friday, … 3 more"`` from (answer, votes) pairs, largest first."""
    shown = [f"{n} × {answer_label(a, chars)}" for a, n in pairs[:top]]
    rest = sum(n for _, n in pairs[top:])
    if rest:
        shown.append(f"… {rest} more")
    return ", ".join(shown) or "none"


def baseline_votes(base: Baseline) -> str:
    """The baseline's answers with their votes."""
    pairs = [(c.answer, c.count) for c in base.clusters]
    if base.n_unparseable:
        pairs.append(("(no answer)", base.n_unparseable))
    if base.n_failed:
        pairs.append(("(call failed)", base.n_failed))
    return votes(pairs)


def side(case_class: str, p_hat: float | None, interval: Interval | None, k: int, version: str | None,
         when: str | None = None) -> str:
    """One side of a comparison: class, p̂ with its interval, k, agent version, date."""
    parts = [case_class, f"p̂ {fmt_p(p_hat)}{_interval(interval)}", f"k={k}"]
    if version:
        parts.append(f"agent {version}")
    if when:
        parts.append(when)
    return ", ".join(parts)


def explain(
    comparison: Comparison,
    new: CaseRecord,
    *,
    label: str | None = None,
    replay: str | None = None,
    prompt_chars: int = 600,
) -> list[str]:
    """The lines that explain one verdict (module docstring).

    Args:
        comparison: the verdict.
        new: the replay's record.
        label: how to name the case (default ``topic/id``).
        replay: the command that replays just this case, if there is one.
        prompt_chars: prompt characters shown.
    """
    name = label or f"{new.topic}/{new.id}"
    lines = [f"{comparison.verdict.value}: {name}",
             f"  prompt:     {shorten(' '.join(new.case.prompt.split()), prompt_chars)}"]
    if new.case.reference is not None:
        which = "verified" if new.case.reference_verified else "unverified"
        lines.append(f"  reference:  {shorten(new.case.reference, 200)} ({which})")
    base = comparison.baseline
    if base is not None:
        when = f"{base.accepted_at:%Y-%m-%d}" + (" (first observation)" if base.source == "first" else "")
        lines.append("  baseline:   " + side(base.case_class.value, base.p_hat, base.interval, base.k,
                                              base.target_version, when))
    lines.append("  now:        " + side(new.case_class.value, new.p_hat, new.interval, new.k, new.target_version))
    lines.append(f"  why:        {comparison.reason}")
    lines.append(f"  answers now:       {votes(answer_distribution(new))}")
    if base is not None:
        lines.append(f"  answers baseline:  {baseline_votes(base)}")
    if replay:
        lines.append(f"  replay it:  {replay}")
    return lines


def removal(record: CaseRecord, prompt_chars: int = 60, reason_chars: int = 200) -> tuple[str, str, str]:
    """A case the validator removed as ``(id, prompt excerpt, reason)``, each on one line.

    The console summary and ``report.md`` list these, so a person sees which of their cases
    went and why (a near-duplicate of a generated proposal, an identical copy, a bad format...).
    """
    prompt = shorten(" ".join(record.case.prompt.split()), prompt_chars)
    reason = shorten(" ".join((record.reason or "failed validation").split()), reason_chars)
    return record.id or "(no id)", prompt, reason


__all__ = ["TOP_ANSWERS", "answer_label", "baseline_votes", "explain", "removal", "side", "votes"]
