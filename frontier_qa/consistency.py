"""Self-consistency of k answers: majority vote with equivalent answers merged (Agent0 Eq. 6).

p̂ is the majority cluster's share of *all* k samples. Unparseable answers (no answer
could be extracted) and failed samples (the target errored) are counted and reported,
never a vote — the reference code counted the string "None" as an answer (METHOD.md,
defect 5). The result does not depend on the order the answers arrived in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass


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
    """

    p_hat: float
    majority: str | None
    k: int
    n_unparseable: int
    n_failed: int
    clusters: tuple[Cluster, ...]
    tie: bool
    entropy: float

    @property
    def n_answered(self) -> int:
        return self.k - self.n_unparseable - self.n_failed

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)


def cluster_entropy(sizes: Sequence[int]) -> float:
    """Shannon entropy in nats of a distribution given by cluster sizes (0 for no mass)."""
    total = sum(sizes)
    if total <= 0:
        return 0.0
    return -sum((s / total) * math.log(s / total) for s in sizes if s > 0)


EquivalenceFn = Callable[[str, str], bool]
