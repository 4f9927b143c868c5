"""The population prior a run decides its cases with: learnt from its target's cases, per topic too.

Empirical Bayes (:func:`~frontier_qa.probing._posterior.fit_prior`) on the cases seen so far:
the store's earlier cases of the target (``probing.prior_from_store``) and the run's own. Two
refinements (issue 33 item 2):

* **version guard**: earlier cases of *another* version of the target describe another agent.
  ``probing.prior_versions`` says what they are worth: ``same`` (the default) leaves them out,
  ``any`` counts them like this version's, ``discount`` makes their fitted prior the *start* the
  refits shrink towards, worth ``prior_smoothing`` cases: it decides the run's first cases, and
  ten of the run's own weigh as much as all of them. ``benchmarks/prior_carry_bench.py``
  measures the three after a changed mix: ``any`` and ``discount`` took the realistic mix's
  precision from 0.92 to 0.80 and 0.83 (tuning seeds), so neither is the default.
* **per topic**: a topic with at least ``prior_topic_min`` cases that lie elsewhere than the
  target's (a G-test on where their dominant share falls, below / in / above the band, at
  :data:`TOPIC_LEVEL` over the topics) gets a prior of its own, fitted on its cases and shrunk
  towards the target-wide prior (``prior_smoothing`` pseudo-cases of it); other topics use the
  target-wide one. Without the test, topics that say nothing of difficulty (the fair mixes) cost
  3.5 points of recall on the realistic mix: a topic's 30-odd cases fit a noisier prior than the
  target's 200.

:class:`PriorBook` keeps the observations and the fitted priors; :func:`carried` sorts the
store's records into what the book starts from and says so in a
:class:`~frontier_qa.store._records.PriorSource`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from frontier_qa.probing._posterior import AGENT0_LIMITS, MajorityPrior, fit_prior, share_regions
from frontier_qa.store._records import CaseClass, CaseRecord, PriorSource, PriorVersions

Observation = tuple[tuple[int, ...], int, str]
"""One scored case as the prior sees it: (cluster sizes, unparseable samples, topic)."""

TOPIC_LEVEL = 0.01
"""Chance that some topic of a target whose topics say nothing of difficulty gets a prior of its own."""


def observation(record: CaseRecord) -> Observation | None:
    """What a record adds to the prior (``None``: nothing ran, or the case was invalid)."""
    if record.case_class is CaseClass.INVALID or record.k - record.n_failed <= 0:
        return None
    return tuple(c.count for c in record.clusters), record.n_unparseable, record.case.topic


class PriorBook:
    """Observed cases (latest per id) and the priors fitted on them: the target's and its topics'.

    Args:
        start: the prior the target-wide fit shrinks towards.
        smoothing: pseudo-cases of the start in each fit (and of the target's prior in a topic's).
        topic_min: cases a topic needs for a prior of its own (``None``: never per topic).
        band: the band the test of a topic's cases looks at.
    """

    def __init__(self, start: MajorityPrior, *, smoothing: float = 10.0, topic_min: int | None = None,
                 band: tuple[float, float] = AGENT0_LIMITS) -> None:
        self.start = start
        self.band = band
        self.smoothing = smoothing
        self.topic_min = topic_min
        self.observations: dict[str, Observation] = {}
        self.prior: MajorityPrior = start
        self.topics: dict[str, MajorityPrior] = {}

    def observe(self, case_id: str, seen: Observation | None) -> None:
        """Remember a case for the next refit (a later observation of the same case replaces it)."""
        if seen is not None:
            self.observations[case_id] = seen

    def refit(self) -> None:
        """Fit the target's prior, then each topic's that has enough cases (shrunk towards it)."""
        if not self.observations:
            return
        seen = list(self.observations.values())
        self.prior = fit_prior(_votes(seen), start=self.start, smoothing=self.smoothing)
        candidates = _topics_over(seen, self.topic_min)
        everyone = share_regions(_votes(seen), self.prior, self.band) / len(seen) if candidates else None
        self.topics = {}
        for topic in candidates:
            own = _votes(o for o in seen if o[2] == topic)
            if everyone is not None and _elsewhere(share_regions(own, self.prior, self.band), everyone * len(own),
                                                   TOPIC_LEVEL / len(candidates)):
                self.topics[topic] = fit_prior(own, start=self.prior, smoothing=self.smoothing)

    def prior_for(self, topic: str) -> MajorityPrior:
        """The prior a case of ``topic`` starts from: its topic's when it has one, else the target's."""
        return self.topics.get(topic, self.prior)


@dataclass(frozen=True)
class Carried:
    """What a run's prior starts from: the book's start and observations, and how it says so (its
    ``topics`` are the book's once it is fitted).
    """

    start: MajorityPrior
    observations: dict[str, Observation]
    source: PriorSource


def carried(earlier: Iterable[tuple[str, str | None, Observation | None]], *, target_id: str, version: str | None,
            start: MajorityPrior, versions: PriorVersions, smoothing: float, topic_min: int | None) -> Carried:
    """Sort a target's earlier cases, ``(case id, target version, observation)`` of their latest
    records, by the version guard.

    This version's cases are observations; other versions' are observations too (``any``), the
    start the fits shrink towards (``discount``: their own fit, from ``start``), or nothing (``same``).
    """
    own: dict[str, Observation] = {}
    other: dict[str, Observation] = {}
    other_versions: set[str | None] = set()
    for case_id, of_version, seen in earlier:
        if seen is None:
            continue
        if of_version == version:
            own[case_id] = seen
        else:
            other[case_id] = seen
            other_versions.add(of_version)
    if versions == "any":
        observations = {**other, **own}
    else:
        observations = own
    if versions == "discount" and other:
        start = fit_prior(_votes(other.values()), start=start, smoothing=smoothing)
    source = PriorSource(target_id=target_id, version=version, versions=versions, same=len(own), other=len(other),
                         other_versions=sorted(other_versions, key=lambda v: (v is not None, v or "")),
                         smoothing=smoothing, topic_min=topic_min or 1)
    return Carried(start, observations, source)


def _votes(observations: Iterable[Observation]) -> list[tuple[tuple[int, ...], int]]:
    return [(counts, unparseable) for counts, unparseable, _ in observations]


def _elsewhere(observed: Iterable[float], expected: Iterable[float], level: float) -> bool:
    """G-test: do a topic's cases fall below / in / above the band unlike the target's, at ``level``?"""
    g = 2 * sum(o * math.log(o / e) for o, e in zip(observed, expected, strict=True) if o > 0 and e > 0)
    return math.exp(-g / 2) < level  # chi-square with 2 degrees of freedom: P(X > g) = exp(-g/2)


def _topics_over(observations: Iterable[Observation], minimum: int | None) -> list[str]:
    """Topics with at least ``minimum`` cases (none when there is one topic only: its prior is the target's)."""
    count: dict[str, int] = {}
    for _, _, topic in observations:
        count[topic] = count.get(topic, 0) + 1
    if minimum is None or len(count) < 2:
        return []
    return sorted(t for t, n in count.items() if n >= minimum)


__all__ = ["Carried", "Observation", "PriorBook", "carried", "observation"]
