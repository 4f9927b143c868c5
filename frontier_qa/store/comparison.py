"""Replay verdicts: did a case regress, improve, stay the same, or was its failure flaky?

Hypothesis replays saved failures before generating new examples and calls a failure
that does not reproduce *flaky*. frontier-qa does the same with probed cases: the old
record comes from the store or a committed suite, the new one from replaying the case.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from frontier_qa.store.records import CaseClass, CaseRecord, Observed, SuiteCase

# Worse is higher. Unresolved and invalid say nothing about the target's ability.
_SEVERITY: dict[CaseClass, int] = {
    CaseClass.PASS: 0,
    CaseClass.FRONTIER: 1,
    CaseClass.SUSPECT: 2,
    CaseClass.FAILURE: 3,
}


class Verdict(str, enum.Enum):
    """How a case's new record compares with its old one."""

    REGRESSION = "regression"  # class got worse, or p̂ left the old interval in the bad direction
    IMPROVED = "improved"  # class got better, or p̂ left the old interval in the good direction
    SAME = "same"
    FLAKY = "flaky"  # a failure that did not reproduce on replay of the same target and version
    INCONCLUSIVE = "inconclusive"  # one side is unresolved or invalid: nothing to compare


@dataclass(frozen=True)
class Comparison:
    """The verdict on one case, with the reason in words."""

    case_id: str
    verdict: Verdict
    reason: str
    old_class: CaseClass
    new_class: CaseClass
    old_p_hat: float | None
    new_p_hat: float | None


def _observed(value: CaseRecord | SuiteCase | Observed) -> Observed:
    if isinstance(value, CaseRecord):
        return value.observed()
    if isinstance(value, SuiteCase):
        if value.observed is None:
            raise ValueError(f"suite case {value.case.id!r} has no observed result to compare with")
        return value.observed
    return value


def _fmt(p: float | None) -> str:
    return "—" if p is None else f"{p:.2f}"


def compare(
    old: CaseRecord | SuiteCase | Observed, new: CaseRecord | SuiteCase | Observed, *, case_id: str = ""
) -> Comparison:
    """Compare a case's old and new records.

    Rules, in order:
      1. Either side unresolved or invalid → ``inconclusive``.
      2. Class got worse (pass < frontier < suspect < failure) → ``regression``.
      3. Class got better: ``flaky`` when the old class was ``failure`` and the target id
         and version are unchanged (the failure did not reproduce), else ``improved``.
      4. Same class, new p̂ outside the old interval: the direction decides. When the
         majority answer is known to be wrong (``majority_correct is False``, or class
         failure/suspect), a *higher* p̂ means more stably wrong → ``regression``;
         otherwise a *lower* p̂ means less reliable → ``regression``. The other direction
         is ``improved``.
      5. Otherwise ``same``.
    """
    if not case_id:
        case_id = old.case.id if isinstance(old, (CaseRecord, SuiteCase)) else ""
    o, n = _observed(old), _observed(new)

    def verdict(v: Verdict, reason: str) -> Comparison:
        return Comparison(case_id, v, reason, o.case_class, n.case_class, o.p_hat, n.p_hat)

    change = f"{o.case_class.value} → {n.case_class.value}"
    if o.case_class not in _SEVERITY or n.case_class not in _SEVERITY:
        return verdict(Verdict.INCONCLUSIVE, f"{change}: nothing to compare")
    before, after = _SEVERITY[o.case_class], _SEVERITY[n.case_class]
    if after > before:
        return verdict(Verdict.REGRESSION, f"class got worse: {change}")
    if after < before:
        same_target = (o.target_id, o.target_version) == (n.target_id, n.target_version)
        if o.case_class is CaseClass.FAILURE and same_target:
            return verdict(Verdict.FLAKY, f"failure did not reproduce on the same target: {change}")
        return verdict(Verdict.IMPROVED, f"class got better: {change}")
    if o.interval is not None and n.p_hat is not None and not o.interval.contains(n.p_hat):
        wrong = n.majority_correct is False or (
            n.majority_correct is None and n.case_class in (CaseClass.FAILURE, CaseClass.SUSPECT)
        )
        rose = n.p_hat > o.interval.high
        moved = (
            f"p̂ {_fmt(o.p_hat)} → {_fmt(n.p_hat)}, outside the old interval "
            f"[{o.interval.low:.2f}, {o.interval.high:.2f}]"
        )
        if rose == wrong:
            return verdict(
                Verdict.REGRESSION, moved + (" (more stably wrong)" if wrong else " (less reliable)")
            )
        return verdict(Verdict.IMPROVED, moved)
    return verdict(Verdict.SAME, f"{o.case_class.value}, p̂ {_fmt(o.p_hat)} → {_fmt(n.p_hat)}")


def compare_all(
    old: Iterable[CaseRecord | SuiteCase] | Mapping[str, CaseRecord | SuiteCase],
    new: Iterable[CaseRecord] | Mapping[str, CaseRecord],
) -> list[Comparison]:
    """Compare every case present on both sides (matched by case id), sorted by id.

    Several records of one case on one side: the last one given wins (pass the store's
    :meth:`~frontier_qa.store.CaseStore.latest` index to be explicit).
    """

    def by_id(items: Iterable | Mapping) -> dict:
        pairs = items.items() if isinstance(items, Mapping) else ((i.case.id, i) for i in items)
        # a suite entry exported without results has nothing to compare against
        return {cid: i for cid, i in pairs if not (isinstance(i, SuiteCase) and i.observed is None)}

    olds, news = by_id(old), by_id(new)
    return [compare(olds[cid], news[cid], case_id=cid) for cid in sorted(olds.keys() & news.keys())]


def count_verdicts(comparisons: Iterable[Comparison]) -> dict[Verdict, int]:
    """How many comparisons got each verdict (every verdict present, zeros included)."""
    counts = {v: 0 for v in Verdict}
    for c in comparisons:
        counts[c.verdict] += 1
    return counts
