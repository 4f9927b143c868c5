"""The population prior a run decides its cases with: learnt from its target's cases, per topic too.

Empirical Bayes (:func:`~frontier_qa.probing._posterior.fit_prior`) on the cases seen so far:
the store's earlier cases of the target (``probing.prior_from_store``) and the run's own. Two
refinements (issue 33 item 2):

* **version guard**: earlier cases of *another* version of the target describe another agent.
  ``probing.prior_versions`` says what they are worth: ``same`` leaves them out, ``any`` counts
  them like this version's, ``discount`` (the default) makes their fitted prior the *start* the
  refits shrink towards, worth ``prior_smoothing`` cases: it decides the run's first cases, and
  ten of the run's own weigh as much as all of them. ``benchmarks/prior_carry_bench.py``
  measures the three after a changed mix.
* **per topic**: a topic with at least ``prior_topic_min`` cases gets a prior of its own, fitted
  on its cases and shrunk towards the target-wide prior (``prior_smoothing`` pseudo-cases of it);
  other topics use the target-wide one. When topics say nothing of difficulty the topic priors
  stay near the target's; when they do, a topic's first cases stop sooner.

:class:`PriorBook` keeps the observations and the fitted priors; :func:`carried` sorts the
store's records into what the book starts from and says so in a
:class:`~frontier_qa.store._records.PriorSource`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from frontier_qa.probing._posterior import MajorityPrior, fit_prior
from frontier_qa.store._records import CaseClass, CaseRecord, PriorSource, PriorVersions

Observation = tuple[tuple[int, ...], int, str]
"""One scored case as the prior sees it: (cluster sizes, unparseable samples, topic)."""


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
    """

    def __init__(self, start: MajorityPrior, *, smoothing: float = 10.0, topic_min: int | None = None) -> None:
        self.start = start
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
        self.topics = {topic: fit_prior(_votes(o for o in seen if o[2] == topic), start=self.prior,
                                        smoothing=self.smoothing)
                       for topic in _topics_over(seen, self.topic_min)}

    def prior_for(self, topic: str) -> MajorityPrior:
        """The prior a case of ``topic`` starts from: its topic's when it has one, else the target's."""
        return self.topics.get(topic, self.prior)


@dataclass(frozen=True)
class Carried:
    """What a run's prior starts from: the book's start and observations, and how it says so."""

    start: MajorityPrior
    observations: dict[str, Observation]
    source: PriorSource


def carried(records: Iterable[CaseRecord], *, target_id: str, version: str | None, start: MajorityPrior,
            versions: PriorVersions, smoothing: float, topic_min: int | None) -> Carried:
    """Sort a target's earlier records (their latest per case) by the version guard.

    This version's cases are observations; other versions' are observations too (``any``), the
    start the fits shrink towards (``discount``: their own fit, from ``start``), or nothing (``same``).
    """
    own: dict[str, Observation] = {}
    other: dict[str, Observation] = {}
    other_versions: set[str | None] = set()
    for record in records:
        seen = observation(record)
        if seen is None:
            continue
        if record.target_version == version:
            own[record.id] = seen
        else:
            other[record.id] = seen
            other_versions.add(record.target_version)
    if versions == "any":
        observations = {**other, **own}
    else:
        observations = own
    if versions == "discount" and other:
        start = fit_prior(_votes(other.values()), start=start, smoothing=smoothing)
    topics = _topics_over(observations.values(), topic_min)
    source = PriorSource(target_id=target_id, version=version, versions=versions, same=len(own), other=len(other),
                         other_versions=sorted(other_versions, key=lambda v: (v is not None, v or "")),
                         smoothing=smoothing, topics=topics, topic_min=topic_min or 1)
    return Carried(start, observations, source)


def _votes(observations: Iterable[Observation]) -> list[tuple[tuple[int, ...], int]]:
    return [(counts, unparseable) for counts, unparseable, _ in observations]


def _topics_over(observations: Iterable[Observation], minimum: int | None) -> list[str]:
    """Topics with at least ``minimum`` cases (none when there is one topic only: its prior is the target's)."""
    count: dict[str, int] = {}
    for _, _, topic in observations:
        count[topic] = count.get(topic, 0) + 1
    if minimum is None or len(count) < 2:
        return []
    return sorted(t for t, n in count.items() if n >= minimum)


__all__ = ["Carried", "Observation", "PriorBook", "carried", "observation"]
