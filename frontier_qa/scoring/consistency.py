"""Self-consistency of k answers: majority vote with equivalent answers merged (Agent0 Eq. 6).

p̂ is the majority cluster's share of *all* k samples. Unparseable answers (no answer
could be extracted) and failed samples (the target errored) are counted and reported,
never a vote — the reference code counted the string "None" as an answer (docs/method.md,
defect 5). The result does not depend on the order the answers arrived in.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from frontier_qa.errors import AnswerError
from frontier_qa.scoring._equivalence import comparator, normalize
from frontier_qa.scoring.answers import sample_answers

if TYPE_CHECKING:
    from frontier_qa.target import Trajectory


@dataclass(frozen=True)
class Cluster:
    """A group of answers judged equivalent.

    Attributes:
        representative: the answer that stands for the cluster (its most frequent
            exact form, ties to the smallest string; for semantic clusters, the medoid).
        members: indices into the original answer list, ascending.
    """

    representative: str
    members: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class Consistency:
    """Self-consistency of one case's k samples.

    Attributes:
        p_hat: majority cluster size / k, in [0, 1]; 0 when no sample gave an answer.
        majority: the majority cluster's representative (the pseudo-label ỹ), or ``None``.
        k: total samples, including unparseable and failed ones.
        n_unparseable: samples that ran but yielded no extractable answer.
        n_failed: samples whose target call failed.
        clusters: every cluster, largest first (ties in the deterministic order used to pick the majority).
        tie: whether another cluster had the majority's size.
        entropy: Shannon entropy (nats) of the cluster distribution over answered samples
            (semantic entropy when the clusters come from embeddings); 0 when none answered.
        answers: the answer each sample voted with (stripped), ``None`` for unparseable and
            failed samples; empty when the producer did not record them.
    """

    p_hat: float
    majority: str | None
    k: int
    n_unparseable: int
    n_failed: int
    clusters: tuple[Cluster, ...]
    tie: bool
    entropy: float
    answers: tuple[str | None, ...] = ()

    @property
    def n_answered(self) -> int:
        return self.k - self.n_unparseable - self.n_failed

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    @property
    def majority_mask(self) -> tuple[bool, ...]:
        """For each of the k samples, whether it voted with the majority (Agent0's pseudo-label
        reward R_i = 1 if o_i ≡ ỹ); all ``False`` when no sample answered.
        """
        members = set(self.clusters[0].members) if self.clusters else set()
        return tuple(i in members for i in range(self.k))


def cluster_entropy(sizes: Sequence[int]) -> float:
    """Shannon entropy in nats of a distribution given by cluster sizes (0 for no mass)."""
    total = sum(sizes)
    if total <= 0:
        return 0.0
    return -sum((s / total) * math.log(s / total) for s in sizes if s > 0)


EquivalenceFn = Callable[[str, str], bool]


def self_consistency(
    answers: Sequence[str | None],
    *,
    failed: Sequence[bool] | None = None,
    equivalent: EquivalenceFn | None = None,
    key: Callable[[str], str] | None = None,
) -> Consistency:
    """Majority vote over k answers with equivalent answers merged (Agent0 Eq. 6).

    Answers are grouped first by ``key`` (equal keys are equivalent without asking), then
    groups are merged by union-find over pairwise ``equivalent`` calls, so the clusters are
    the transitive closure of the relation and do not depend on the answers' order. Ties
    between equally large clusters go to the smallest canonical form (``key`` of the
    representative), never to whichever came first; ``tie`` says that it happened.

    Args:
        answers: the k extracted answers; ``None`` (or blank) = unparseable, never a vote.
        failed: per sample, whether the target call failed (counted in ``n_failed``,
            never a vote, whatever its answer says). Same length as ``answers``.
        equivalent: symmetric relation on answers; default: the shared math
            :func:`frontier_qa.scoring._equivalence.comparator` (string, numeric, symbolic stages).
        key: canonical form used to pre-group and to break ties; default
            :func:`frontier_qa.scoring._equivalence.normalize`. A custom ``equivalent`` must treat
            answers with equal keys as equivalent.

    Returns:
        p̂ = majority cluster size / k (k counts every sample, failed and unparseable
        included), the majority's representative, every cluster, and the entropy (nats)
        of the cluster sizes over answered samples.

    Raises:
        AnswerError: ``failed`` has the wrong length, or an answer is not a string.
    """
    k = len(answers)
    votes, n_failed = votes_of(answers, failed, "self_consistency")
    n_unparseable = k - n_failed - sum(vote is not None for vote in votes)
    if equivalent is None:
        equivalent = comparator("math")
    if key is None:
        key = normalize

    by_key: dict[str, list[int]] = {}
    for i, vote in enumerate(votes):
        if vote is not None:
            by_key.setdefault(key(vote), []).append(i)
    keys = sorted(by_key)
    forms = [_representative(votes[i] for i in by_key[g]) for g in keys]

    # Union-find over the distinct keys: the partition is the connected components of the
    # "equivalent" graph, which is the same whatever order the pairs are visited in.
    parent = list(range(len(keys)))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            ri, rj = root(i), root(j)
            if ri != rj and equivalent(forms[i], forms[j]):
                parent[max(ri, rj)] = min(ri, rj)

    merged: dict[int, list[int]] = {}
    for g, group_key in enumerate(keys):
        merged.setdefault(root(g), []).extend(by_key[group_key])
    clusters = []
    for members in merged.values():
        representative = _representative(votes[i] for i in members)
        clusters.append(Cluster(representative=representative, members=tuple(sorted(members))))
    clusters.sort(key=lambda c: (-c.size, key(c.representative), c.representative))

    top = clusters[0] if clusters else None
    return Consistency(
        p_hat=top.size / k if top else 0.0,  # Agent0 Eq. 6: share of *all* k samples
        majority=top.representative if top else None,
        k=k,
        n_unparseable=n_unparseable,
        n_failed=n_failed,
        clusters=tuple(clusters),
        tie=len(clusters) > 1 and clusters[1].size == clusters[0].size,
        entropy=cluster_entropy([c.size for c in clusters]),
        answers=tuple(votes),
    )


def _representative(forms: Iterable[str | None]) -> str:
    """The most frequent form, ties to the smallest string (independent of order)."""
    counts = Counter(f for f in forms if f is not None)
    return min(counts, key=lambda form: (-counts[form], form))


def votes_of(answers: Sequence[str | None], failed: Sequence[bool] | None,
             caller: str) -> tuple[list[str | None], int]:
    """Each sample's vote (its stripped answer; ``None`` when it failed or gave none) and the
    number of failed samples: the common first step of every self-consistency.

    Raises:
        AnswerError: ``failed`` has the wrong length, or an answer is not a string.
    """
    k = len(answers)
    if failed is None:
        failed = [False] * k
    elif len(failed) != k:
        raise AnswerError(
            f"{caller} got {k} answers but {len(failed)} failed flags",
            hint="pass one failed flag per answer (True where the target call failed)",
        )
    votes: list[str | None] = []
    for i, (answer, fail) in enumerate(zip(answers, failed, strict=True)):
        if answer is not None and not isinstance(answer, str):
            raise AnswerError(
                f"answer {i} is a {type(answer).__name__}, not a string",
                hint="extract answers with frontier_qa.scoring.answers.extract_answer (None = no answer)",
            )
        votes.append(None if fail or answer is None else (answer.strip() or None))
    return votes, sum(bool(fail) for fail in failed)


def consistency_of(
    trajectories: Sequence[Trajectory],
    answer_format: str = "boxed",
    *,
    equivalent: EquivalenceFn | None = None,
    key: Callable[[str], str] | None = None,
) -> Consistency:
    """Self-consistency of a case's trajectories: extract each answer, then vote.

    A trajectory with ``ok == False`` counts as failed; one whose text has no answer in
    ``answer_format`` counts as unparseable.

    Args:
        trajectories: the k samples of one case.
        answer_format: one of :data:`frontier_qa.scoring.answers.ANSWER_FORMATS`.
        equivalent: see :func:`self_consistency`.
        key: see :func:`self_consistency`.

    Raises:
        AnswerError: unknown ``answer_format``.
    """
    answers = sample_answers(trajectories, answer_format)
    return self_consistency(answers, failed=[not t.ok for t in trajectories], equivalent=equivalent, key=key)
