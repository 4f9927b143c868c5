"""Replay verdicts: did a case regress, improve, stay the same, or can it not be told yet?

A replay holds each case to its :class:`~frontier_qa.store._records.Baseline` and decides with
a statistical test, never by a change of class (a p̂ that moves from 0.70 to 0.43 at k = 10 is
noise, not a regression). The quantity is the share of samples equivalent to the baseline's
*anchor* (the verified reference, else the baseline's majority answer); failed and
unparseable samples are misses.

**The decision** (:func:`judge`, one *look* at the first ``looks[i]`` new samples):

1. ``regression`` when a one-sided Fisher exact test says the new share is lower, at the
   look's level: ``alpha / n_cases`` (Bonferroni over the suite) split over the looks in
   proportion to their sample counts (:func:`~frontier_qa.scoring._two_sample.spend`). A
   replay of an unchanged agent then calls *any* case a regression with probability at most
   ``alpha``, however many looks each case takes. Exceptions, all judged on a majority
   anchor (no verified reference): a frontier case still in the band is ``same`` (its p̂
   moves inside the noise); a majority that moved *to* an unverified reference, or that now
   consistently gives another of the baseline's frequent answers, is ``improved``.
2. ``improved`` when the same test says the share is higher; ``flaky`` instead when the
   agent (target id and version) is unchanged and the baseline was a failure, suspect or
   frontier case: the same agent cannot have got better, the finding did not reproduce.
3. ``same`` when a drop of ``min_drop`` or more has posterior probability below
   ``futility`` (Jeffreys priors), unless a rise that large is more likely than not (then
   sampling goes on to show it). Stopping early this way never adds false regressions and
   spends no level, so it is checked often: at every ``same_every`` new samples from
   ``same_from`` on (:attr:`RegressionPolicy.checks`), between the looks whose tests spend
   ``alpha``. An unchanged case is thus let go after a few samples, and only a case whose
   evidence is close is sampled on to the next look.
4. otherwise sample more (the next check), and ``inconclusive`` at the cap.

Scattered answers without a verified reference have no anchor: such a case is ``same``
unless its answers became consistent (``improved``). A case without a baseline is ``new``.
``docs/method.md`` (§9) states the test, its assumptions and its measured error rates; the
sampling loop that takes the looks is :mod:`frontier_qa.probing._regression`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated

from pydantic import Field, field_validator

from frontier_qa._frozen import frozen_value
from frontier_qa.scoring._two_sample import drop_probability, fisher_greater, fisher_less, increasing_counts, spend
from frontier_qa.scoring.bands import AGENT0_BAND
from frontier_qa.store._records import Baseline, CaseClass, CaseRecord, Observed, ReplayRecord, SuiteCase, count_each
from frontier_qa.target import Case

DEFAULT_LOOKS = (8, 16, 32, 64, 128)
"""New samples at each look of a replayed case (where the Fisher tests spend ``alpha``); the last
is the cap. Few looks keep each one's level high, and a cap of 128 lets a drop from 0.9 to 0.4 be
shown in 99 % of cases (80: 98 %, ``benchmarks/regression_bench.py`` computes both); an unchanged
case rarely gets near it, since it stops as ``same`` at a check between the looks."""


class RegressionVerdict(str, enum.Enum):
    """How a case's replay compares with its baseline (the replay's regression test).

    Not the band verdict of a sampled case (in band, above, below: the sequential policy's).
    """

    REGRESSION = "regression"  # the anchor's share dropped (significant at the look's level)
    IMPROVED = "improved"  # it rose
    SAME = "same"  # no drop that matters is left plausible
    FLAKY = "flaky"  # a finding that the same agent no longer reproduces
    INCONCLUSIVE = "inconclusive"  # the sample cap was reached (or sampling stopped) undecided
    NEW = "new"  # no baseline to compare with


@frozen_value
class RegressionPolicy:
    """How replays decide (module docstring): the API value and the config section ``regression``.

    Attributes:
        alpha: the most probability that a replay of an unchanged agent calls any case of the
            suite a regression (family-wise, in (0, 1)).
        n_cases: cases in the suite (Bonferroni); each case's own level is ``alpha / n_cases``.
            The replay sets it to the suite's size (:meth:`for_cases`), so it is no config key.
        looks: new samples at each look (a Fisher test spends part of the level), increasing; the
            last is the cap.
        same_from: the fewest new samples at which a case may stop as ``same``.
        same_every: new samples between two checks for ``same`` after ``same_from`` (checks
            spend no level, so they can be frequent).
        min_drop: the drop in the anchor's share that matters, in (0, 1).
        futility: stop as ``same`` once a drop of ``min_drop`` has posterior probability below this.
        baseline_samples: samples an accepted baseline holds (``frontier-qa accept``).
    """

    alpha: Annotated[float, Field(gt=0, lt=1, description="most chance that a replay of an unchanged agent calls "
                                                           "any case of the suite a regression")] = 0.01
    n_cases: Annotated[int, Field(ge=1, exclude=True, description="cases replayed (set by the replay)")] = 1
    looks: Annotated[tuple[int, ...], Field(min_length=1, description="new samples at each look of a replayed "
                                                                      "case; the last is the cap")] = DEFAULT_LOOKS
    same_from: Annotated[int, Field(ge=1, description="the fewest new samples at which a case may stop as "
                                                      "'same'")] = 5
    same_every: Annotated[int, Field(ge=1, description="new samples between two checks for 'same' (they "
                                                       "spend no alpha)")] = 2
    min_drop: Annotated[float, Field(gt=0, lt=1, description="the drop in the share of right (or baseline) "
                                                             "answers that matters")] = 0.3
    futility: Annotated[float, Field(gt=0, lt=1, description="stop as 'same' once that drop is less likely "
                                                             "than this")] = 0.1
    baseline_samples: Annotated[int, Field(ge=1, description="samples an accepted baseline holds (accept "
                                                             "samples more)")] = 40

    @field_validator("looks")
    @classmethod
    def _increasing(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not increasing_counts(value):
            raise ValueError(f"{list(value)} must be increasing sample counts >= 1, e.g. [5, 10, 20, 40, 80]")
        return value

    @property
    def cap(self) -> int:
        """The most new samples a case gets."""
        return self.looks[-1]

    @property
    def checks(self) -> tuple[int, ...]:
        """The sample counts at which a replayed case is judged: every look, and every
        ``same_every`` samples from ``same_from`` on (up to the cap).
        """
        return tuple(sorted({*self.looks, *range(self.same_from, self.cap + 1, self.same_every)}))

    @property
    def levels(self) -> tuple[float, ...]:
        """The test level of each look (they sum to ``alpha / n_cases``)."""
        return spend(self.alpha / self.n_cases, self.looks)

    def for_cases(self, n_cases: int) -> RegressionPolicy:
        """The same policy for a suite of ``n_cases`` cases."""
        return replace(self, n_cases=max(1, n_cases))


@dataclass(frozen=True)
class Evidence:
    """Samples that gave the anchor answer (``successes``) out of ``n``."""

    successes: int
    n: int

    def __str__(self) -> str:
        return f"{self.successes}/{self.n}"


@dataclass(frozen=True)
class Look:
    """What the new samples say at one look.

    Attributes:
        index: which look (0-based) of :attr:`RegressionPolicy.looks`; ``None`` at a check between
            looks, where only ``same`` (or nothing) is decided and no level is spent.
        evidence: anchor answers among the first ``looks[index]`` new samples (fewer at a final look).
        band: the band decision on all new samples so far, when confident: ``"in_band"``,
            ``"above"``, ``"below"``; ``None`` when undecided.
        final: no more samples will come (the cap, a budget or an unavailable target).
        majority: the new samples' majority answer.
        majority_is_reference: whether it equals the case's unverified reference.
        majority_was_frequent: whether it is one of the baseline's answers other than the
            anchor that held at least ``MIN_ANCHOR_SHARE`` of the baseline's samples.
    """

    index: int | None
    evidence: Evidence
    band: str | None = None
    final: bool = False
    majority: str | None = None
    majority_is_reference: bool | None = None
    majority_was_frequent: bool = False


@dataclass(frozen=True)
class Outcome:
    """A decision at a look: the verdict, why, and the test behind it."""

    verdict: RegressionVerdict
    reason: str
    p_value: float | None = None
    level: float | None = None


@dataclass(frozen=True)
class Comparison:
    """The verdict on one case, with the reason in words and the numbers behind it.

    Attributes:
        case_id: the case.
        verdict: the verdict.
        reason: why, in words (counts, the test, its level).
        old_class: the baseline's class (``None`` without a baseline).
        new_class: the replay's class.
        old_p_hat: the baseline's p̂.
        new_p_hat: the replay's p̂.
        baseline: the baseline compared with.
        old: anchor answers in the baseline; ``new``: in the replay (the samples the test used).
        p_value: the one-sided Fisher p-value of the deciding test, when one decided.
        level: the level it was held to.
        samples: new samples drawn for the case.
    """

    case_id: str
    verdict: RegressionVerdict
    reason: str
    old_class: CaseClass | None
    new_class: CaseClass
    old_p_hat: float | None
    new_p_hat: float | None
    baseline: Baseline | None = field(default=None, compare=False)
    old: Evidence | None = None
    new: Evidence | None = None
    p_value: float | None = None
    level: float | None = None
    samples: int = 0

    @property
    def role(self) -> str:
        """``"guard"`` for a case whose baseline was a pass, else ``"finding"``."""
        return "guard" if self.old_class is CaseClass.PASS else "finding"


def _what(base: Baseline) -> str:
    if base.anchor_kind == "reference":
        return f"right answers (verified reference {base.anchor!r})"
    return f"answers {base.anchor!r} (the baseline's majority)"


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 0.001 else f"{value:.1e}"


def judge(
    base: Baseline | None,
    look: Look,
    policy: RegressionPolicy,
    *,
    same_target: bool = False,
) -> Outcome | None:
    """Decide at one look, or ``None`` to sample on (module docstring).

    Args:
        base: the case's baseline (``None``: the case is new).
        look: the new samples at this look.
        policy: alpha, suite size, looks, the drop that matters.
        same_target: the replay ran the target id and version the baseline was observed on.
    """
    if base is None:
        return Outcome(RegressionVerdict.NEW, "no baseline yet: this is the case's first observation")
    if base.anchor is None:  # scattered answers, no verified reference
        if look.band == "above":
            better = RegressionVerdict.FLAKY if same_target else RegressionVerdict.IMPROVED
            return Outcome(better, "the answers became consistent (they were scattered, with no verified reference)")
        if look.band is not None or look.final:
            return Outcome(RegressionVerdict.SAME,
                           "scattered answers and no verified reference: nothing to hold the agent to")
        return None
    # a check between looks spends no level: it can only let an unchanged case go as same
    e, level = look.evidence, None if look.index is None else policy.levels[look.index]
    counts = f"{_what(base)}: {base.successes}/{base.k} in the baseline, {e} now"
    if base.k == 0:
        return Outcome(RegressionVerdict.INCONCLUSIVE,
                       "the baseline holds no samples: accept an observation of the case")
    if e.n == 0:
        return Outcome(RegressionVerdict.INCONCLUSIVE, "no new sample to judge") if look.final else None
    down = fisher_less(base.successes, base.k, e.successes, e.n)
    noise = base.case_class is CaseClass.FRONTIER and base.anchor_kind == "majority" and look.band == "in_band"
    # a finding that the same agent now does better on did not reproduce: flaky, not improved
    flaky = same_target and base.case_class in (CaseClass.FAILURE, CaseClass.SUSPECT, CaseClass.FRONTIER)
    better = RegressionVerdict.FLAKY if flaky else RegressionVerdict.IMPROVED
    why = "; the same agent no longer reproduces the finding" if flaky else ""
    if level is not None and down <= level and not noise:
        test = f"one-sided Fisher p = {_p(down)} ≤ {_p(level)}"
        if base.anchor_kind == "majority" and look.majority_is_reference:
            return Outcome(better, f"{counts}; the majority moved to the unverified reference ({test}){why}",
                           down, level)
        if base.anchor_kind == "majority" and look.majority_was_frequent and look.band == "above":
            return Outcome(better, f"{counts}; it now consistently gives {look.majority!r}, one of its earlier "
                           f"answers (no verified reference says which is right; {test}){why}", down, level)
        return Outcome(RegressionVerdict.REGRESSION, f"{counts} ({test})", down, level)
    up = fisher_greater(base.successes, base.k, e.successes, e.n)
    if level is not None and up <= level:
        return Outcome(better, f"{counts} (one-sided Fisher p = {_p(up)} ≤ {_p(level)}){why}", up, level)
    if noise:
        return Outcome(RegressionVerdict.SAME, f"{counts}; still in the frontier band, p̂ moves within the noise",
                       down, level)
    drop = drop_probability(base.successes, base.k, e.successes, e.n, policy.min_drop)
    # a rise that is more likely than not is sampled on until it is shown (or the cap comes)
    rising = drop_probability(base.k - base.successes, base.k, e.n - e.successes, e.n, policy.min_drop) >= 0.5
    if drop < policy.futility and (not rising or look.final):
        return Outcome(RegressionVerdict.SAME,
                       f"{counts}; a drop of {policy.min_drop:.2f} or more has probability {drop:.3f}", down, level)
    if look.final:
        last = policy.levels[-1] if level is None else level
        return Outcome(RegressionVerdict.INCONCLUSIVE,
                       f"{counts} after {e.n} samples: Fisher p = {_p(down)} is above {_p(last)}, and a drop of "
                       f"{policy.min_drop:.2f} or more still has probability {drop:.2f}", down, last)
    return None


def comparison(
    case_id: str,
    base: Baseline | None,
    new: CaseRecord,
    outcome: Outcome,
    *,
    evidence: Evidence | None = None,
) -> Comparison:
    """A :class:`Comparison` from a decision and the records it was made on."""
    return Comparison(
        case_id=case_id,
        verdict=outcome.verdict,
        reason=outcome.reason,
        old_class=None if base is None else base.case_class,
        new_class=new.case_class,
        old_p_hat=None if base is None else base.p_hat,
        new_p_hat=new.p_hat,
        baseline=base,
        old=None if base is None or base.anchor is None else Evidence(base.successes, base.k),
        new=evidence,
        p_value=outcome.p_value,
        level=outcome.level,
        samples=new.k,
    )


def to_record(c: Comparison) -> ReplayRecord:
    """A comparison as the :class:`~frontier_qa.store._records.ReplayRecord` kept with its observation."""
    b = c.baseline
    return ReplayRecord(
        verdict=c.verdict.value, reason=c.reason, baseline_class=c.old_class, baseline_p_hat=c.old_p_hat,
        baseline_source=None if b is None else b.source, anchor=None if b is None else b.anchor,
        baseline_successes=None if c.old is None else c.old.successes, baseline_k=None if c.old is None else c.old.n,
        successes=None if c.new is None else c.new.successes, n=None if c.new is None else c.new.n,
        p_value=c.p_value, level=c.level,
    )


def from_record(record: CaseRecord, baseline: Baseline | None = None) -> Comparison | None:
    """The comparison a replay recorded with an observation (``None`` when it was no replay)."""
    v = record.verdict
    if v is None:
        return None
    old = None if v.baseline_k is None or v.baseline_successes is None else Evidence(v.baseline_successes, v.baseline_k)
    new = None if v.n is None or v.successes is None else Evidence(v.successes, v.n)
    return Comparison(case_id=record.id, verdict=RegressionVerdict(v.verdict), reason=v.reason,
                      old_class=v.baseline_class, new_class=record.case_class,
                      old_p_hat=v.baseline_p_hat, new_p_hat=record.p_hat,
                      baseline=baseline, old=old, new=new, p_value=v.p_value, level=v.level, samples=record.k)


# --- comparing two records at once (no further sampling) ------------------------------------


def _baseline(old: CaseRecord | SuiteCase | Observed | Baseline, case_id: str) -> Baseline | None:
    from frontier_qa.store import _baselines as baselines

    if isinstance(old, Baseline):
        return old
    if isinstance(old, CaseRecord):
        return baselines.from_record(old)
    if isinstance(old, SuiteCase):
        return baselines.of_entry(old)

    entry = SuiteCase(case=Case(id=case_id or "case", prompt=""), observed=old)
    return baselines.from_observed(entry)


def was_frequent(base: Baseline, is_anchor: Callable[[str], bool], is_answer: Callable[[str], bool]) -> bool:
    """Whether an answer is one of the baseline's answers, other than its anchor, that held at
    least ``MIN_ANCHOR_SHARE`` of its samples (a frontier case's other likely answer).

    Args:
        base: the baseline.
        is_anchor: whether a baseline cluster's answer is the anchor.
        is_answer: whether a baseline cluster's answer is the answer asked about.
    """
    from frontier_qa.store._baselines import MIN_ANCHOR_SHARE

    if not base.k:
        return False
    return any(c.count / base.k >= MIN_ANCHOR_SHARE - 1e-9 and not is_anchor(c.answer) and is_answer(c.answer)
               for c in base.clusters)


def new_evidence(base: Baseline | None, new: CaseRecord) -> Evidence:
    """Anchor answers among a record's samples (cluster representatives matched in its format)."""
    if base is None or base.anchor is None:
        return Evidence(0, new.k)
    from frontier_qa.store._baselines import count_anchor, same_answer

    fmt = new.case.answer_format
    anchor = base.anchor
    return Evidence(min(count_anchor(new.clusters, anchor, lambda a, b: same_answer(a, b, fmt)), new.k), new.k)


def compare(
    old: CaseRecord | SuiteCase | Observed | Baseline,
    new: CaseRecord,
    *,
    policy: RegressionPolicy | None = None,
    case_id: str = "",
) -> Comparison:
    """Compare a new record with a baseline at one final look (no further sampling).

    ``old`` is the baseline, or a record, suite entry or observation that gives one. The
    replay engine samples in looks instead (:mod:`frontier_qa.probing._regression`); this is
    for comparing records already made.
    """
    policy = policy or RegressionPolicy()
    case_id = case_id or new.id
    base = _baseline(old, case_id)
    evidence = new_evidence(base, new)
    band = "in_band" if new.case_class is CaseClass.FRONTIER else None
    if band is None and new.p_hat is not None and new.p_hat > AGENT0_BAND.high:
        band = "above"
    same = base is not None and (base.target_id, base.target_version) == (
        _base_id(new), new.target_version)
    from frontier_qa.store._baselines import same_answer

    fmt = new.case.answer_format
    majority, anchor = new.majority, None if base is None else base.anchor
    frequent = base is not None and majority is not None and was_frequent(
        base, lambda a: anchor is not None and same_answer(a, anchor, fmt), lambda a: same_answer(majority, a, fmt))
    look = Look(index=len(policy.looks) - 1, evidence=evidence, band=band, final=True, majority=new.majority,
                majority_was_frequent=frequent)
    outcome = judge(base, look, policy, same_target=same)
    assert outcome is not None  # a final look always decides
    return comparison(case_id, base, new, outcome, evidence=evidence)


def _base_id(record: CaseRecord) -> str:
    from frontier_qa.store._baselines import base_target_id

    return base_target_id(record.target_id, record.target_version)


def compare_all(
    old: Iterable[CaseRecord | SuiteCase] | Mapping[str, CaseRecord | SuiteCase | Baseline],
    new: Iterable[CaseRecord] | Mapping[str, CaseRecord],
    *,
    policy: RegressionPolicy | None = None,
) -> list[Comparison]:
    """Compare every case present on both sides (matched by case id), sorted by id.

    The suite size for the Bonferroni level is the number of cases compared. Several records
    of one case on one side: the last one given wins.
    """

    def by_id(items: Iterable | Mapping) -> dict:
        pairs = items.items() if isinstance(items, Mapping) else ((i.case.id, i) for i in items)
        # a suite entry exported without results has nothing to compare against
        return {cid: i for cid, i in pairs if not (isinstance(i, SuiteCase) and i.observed is None
                                                   and i.baseline is None)}

    olds, news = by_id(old), by_id(new)
    both = sorted(olds.keys() & news.keys())
    policy = (policy or RegressionPolicy()).for_cases(len(both))
    return [compare(olds[cid], news[cid], policy=policy, case_id=cid) for cid in both]


def count_verdicts(comparisons: Iterable[Comparison]) -> dict[RegressionVerdict, int]:
    """How many comparisons got each verdict (every verdict present, zeros included)."""
    return count_each(RegressionVerdict, (c.verdict for c in comparisons))


__all__ = [
    "DEFAULT_LOOKS",
    "Comparison",
    "Evidence",
    "Look",
    "Outcome",
    "RegressionPolicy",
    "RegressionVerdict",
    "comparison",
    "compare",
    "compare_all",
    "count_verdicts",
    "from_record",
    "to_record",
    "judge",
    "new_evidence",
    "was_frequent",
]
