"""Open-ended self-consistency: cluster k answers by sentence embeddings (QA notes, problem 2).

Agent0's uncertainty signal (Eq. 6) needs "how many of the k answers agree". For a number
or a \\boxed{} expression, equivalence is exact; for free text ("Why did the build fail?")
it is not. Here the k answers are embedded, clustered by agglomerative clustering with
average linkage on cosine distance, and each cluster stands for one meaning. Then, as in
:mod:`frontier_qa.scoring.consistency`:

* p̂ = largest cluster / k, over *all* k samples: failed and empty answers count in k but
  are never clustered (docs/method.md, defect 5);
* the pseudo-label ỹ is the majority cluster's medoid (the member with the smallest sum of
  cosine distances to the others), a real answer rather than an average;
* the entropy over clusters is semantic entropy (Kuhn et al., 2023, who cluster by NLI
  entailment; here the clusters come from embeddings), in nats.

The result depends only on the multiset of answers, not their order: answers are clustered
in a canonical (sorted) order, identical texts are embedded once, and every tie is broken
by text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from frontier_qa.errors import AnswerError, ConfigError
from frontier_qa.scoring._contradiction import check_rules, contradiction_matrix, contradicts
from frontier_qa.scoring._embedders import Embedder, get_embedder, normalize_rows
from frontier_qa.scoring.answers import sample_answers
from frontier_qa.scoring.consistency import Cluster, Consistency, cluster_entropy, votes_of

if TYPE_CHECKING:
    from frontier_qa.target import Trajectory

# Cosine-distance cut for average linkage, chosen by `benchmarks/semantic_threshold.py` with
# all-MiniLM-L6-v2 and the full contradiction guard (frontier_qa.scoring._contradiction) on the
# hand-labeled groups in tests/data/open_ended_groups.jsonl (48 groups, 264 answers): highest
# mean adjusted Rand index on the 32 dev groups over a 0.05..1.0 sweep (step 0.025).
# Scores at 0.775:
#   dev (in-sample)        ARI 0.530, pairwise F1 0.709, mean |p̂ error| 0.117
#   test (16 held out)     ARI 0.643, pairwise F1 0.759, mean |p̂ error| 0.100
#   6-fold CV (held out)   ARI 0.502, pairwise F1 0.688, mean |p̂ error| 0.121
#   exact-match baseline   ARI 0.034 / 0.006, |p̂ error| 0.395 / 0.411 (dev / test)
# The guard's rules were written knowing those groups; tests/data/open_ended_groups_holdout2
# .jsonl (21 groups, written before the rules were scored) measures the rules themselves:
#   holdout2 at 0.775      ARI 0.578, pairwise F1 0.731, mean |p̂ error| 0.115
#   (guard before the entity rule, t=0.65: ARI 0.117, F1 0.509, |p̂ error| 0.257)
# Polarity + numbers guard only: best dev threshold 0.65, held-out test ARI 0.477 (CV 0.394);
# no guard: 0.5, held-out test ARI 0.045 (CV 0.078).
DEFAULT_THRESHOLD = 0.775

# The contradiction guard (opposite yes/no, disjoint numbers, disjoint named entities) lives
# in frontier_qa.scoring._contradiction; `contradicts` is re-exported here for backward compatibility.
__all__ = [
    "DEFAULT_THRESHOLD",
    "asemantic_consistency",
    "cluster_labels",
    "contradicts",
    "semantic_consistency",
    "semantic_consistency_of",
]


@dataclass(frozen=True)
class _Plan:
    """Which samples are clustered, in canonical order, and what to embed."""

    votes: tuple[str | None, ...]  # per sample: stripped answer, None if failed or unparseable
    n_failed: int
    n_unparseable: int
    order: tuple[int, ...]  # indices of answered samples, sorted by their vote
    texts: tuple[str, ...]  # the vote of each answered sample, in `order`
    unique: tuple[str, ...]  # distinct votes, sorted: what the embedder sees

    @property
    def k(self) -> int:
        return len(self.votes)


def _plan(answers: Sequence[str | None], failed: Sequence[bool] | None, threshold: float) -> _Plan:
    if isinstance(answers, str):
        raise AnswerError(
            "semantic_consistency takes a list of answers, got one string", hint="wrap it: [answer]"
        )
    if not 0.0 < threshold <= 2.0:
        raise ConfigError(
            f"threshold={threshold!r} is not a cosine distance in (0, 2]",
            hint=f"the default is {DEFAULT_THRESHOLD}; larger merges more answers",
        )
    k = len(answers)
    votes, n_failed = votes_of(answers, failed, "semantic_consistency")
    # Canonical order: by vote text. Samples with equal votes are interchangeable (same
    # vector, same distances), so the clustering input is the same for every permutation.
    order = tuple(
        sorted((i for i, vote in enumerate(votes) if vote is not None), key=lambda i: (votes[i], i))
    )
    texts = tuple(vote for i in order if (vote := votes[i]) is not None)  # all of them: `order` holds answered ones
    return _Plan(
        votes=tuple(votes),
        n_failed=n_failed,
        n_unparseable=k - n_failed - len(order),
        order=order,
        texts=texts,
        unique=tuple(sorted(set(texts))),
    )


def _cosine_distances(
    unique_vectors: Any, plan: _Plan, guard: frozenset[str]
) -> np.ndarray:
    """(n, n) cosine distances in [0, 2] between the answered samples, in canonical order.

    Pairs that the ``guard`` rules of :func:`~frontier_qa.scoring._contradiction.contradiction_matrix`
    flag get the maximum distance, 2.0.
    """
    vectors = normalize_rows(unique_vectors)
    if vectors.shape[0] != len(plan.unique):
        raise ConfigError(
            f"the embedder returned {vectors.shape[0]} vectors for {len(plan.unique)} texts",
            hint="an Embedder's encode(texts) must return one row per text",
        )
    unique_distances = 1.0 - vectors @ vectors.T
    if guard:
        # Group-aware: entity background is computed over all distinct answers of the group.
        conflict = contradiction_matrix(plan.unique, guard)
        # the largest cosine distance: averages with such a pair pull clusters apart
        unique_distances[conflict] = 2.0
    row_of = {text: row for row, text in enumerate(plan.unique)}
    rows = [row_of[text] for text in plan.texts]
    distances: np.ndarray = unique_distances[np.ix_(rows, rows)]
    distances = np.clip(
        (distances + distances.T) / 2.0, 0.0, 2.0
    )  # float noise: exact symmetry, no negatives
    np.fill_diagonal(distances, 0.0)
    return distances


def cluster_labels(distances: np.ndarray, threshold: float) -> np.ndarray:
    """Average-linkage agglomerative clusters of a precomputed cosine-distance matrix.

    Same partition as scikit-learn's ``AgglomerativeClustering(metric="cosine",
    linkage="average", distance_threshold=threshold)`` on the vectors; the matrix is passed
    precomputed so it is computed once and reused for the medoids.

    Args:
        distances: symmetric (n, n) matrix of cosine distances in [0, 2].
        threshold: clusters whose average distance is ``>= threshold`` are not merged.

    Returns:
        (n,) integer labels; ``[0]`` for one sample, ``[]`` for none.
    """
    n = distances.shape[0]
    if n <= 1:  # scikit-learn needs at least two samples
        return np.zeros(n, dtype=int)
    from sklearn.cluster import AgglomerativeClustering  # ~1 s import: only when clustering

    model = AgglomerativeClustering(
        n_clusters=None, metric="precomputed", linkage="average", distance_threshold=threshold
    )
    labels: np.ndarray = model.fit(distances).labels_
    return labels


def _assemble(plan: _Plan, distances: np.ndarray, threshold: float) -> Consistency:
    labels = cluster_labels(distances, threshold)
    clusters = []
    for label in np.unique(labels):
        positions = np.flatnonzero(labels == label)  # canonical positions, ascending = by text
        within = distances[np.ix_(positions, positions)].sum(axis=1)
        # Medoid; argmin takes the first minimum, i.e. the smallest text among equals.
        medoid = positions[int(np.argmin(within))]
        clusters.append(
            Cluster(
                representative=plan.texts[medoid],
                members=tuple(sorted(plan.order[p] for p in positions)),
            )
        )
    # Largest first; equal sizes ordered by text so the majority never depends on arrival order.
    clusters.sort(
        key=lambda c: (-c.size, c.representative,
                       sorted(vote for i in c.members if (vote := plan.votes[i]) is not None))
    )
    sizes = [c.size for c in clusters]
    return Consistency(
        p_hat=sizes[0] / plan.k,  # Agent0 Eq. 6 share over all k samples
        majority=clusters[0].representative,
        k=plan.k,
        n_unparseable=plan.n_unparseable,
        n_failed=plan.n_failed,
        clusters=tuple(clusters),
        tie=len(sizes) > 1 and sizes[1] == sizes[0],
        entropy=cluster_entropy(sizes) + 0.0,  # semantic entropy, nats (+0.0: no "-0.0")
        answers=plan.votes,
    )


def _empty(plan: _Plan) -> Consistency:
    return Consistency(
        p_hat=0.0,
        majority=None,
        k=plan.k,
        n_unparseable=plan.n_unparseable,
        n_failed=plan.n_failed,
        clusters=(),
        tie=False,
        entropy=0.0,
        answers=plan.votes,
    )


def semantic_consistency(
    answers: Sequence[str | None],
    *,
    failed: Sequence[bool] | None = None,
    embedder: str | Embedder | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    contradiction_guard: bool | Collection[str] = True,
) -> Consistency:
    """Self-consistency of k open-ended answers, clustering them by meaning.

    Args:
        answers: one entry per sample; ``None`` or blank means the sample ran but gave no
            answer (unparseable: counted in k, never clustered).
        failed: per sample, whether the target call failed (counted in ``n_failed`` and in
            k, never clustered, whatever its answer says). Same length as ``answers``.
        embedder: an :class:`~frontier_qa.scoring._embedders.Embedder`, or a spec for
            :func:`~frontier_qa.scoring._embedders.get_embedder`; default all-MiniLM-L6-v2 (offline).
        threshold: cosine distance (0, 2] at or above which clusters are not merged.
        contradiction_guard: keep apart answers that
            :func:`~frontier_qa.scoring._contradiction.contradiction_matrix` flags however close
            their embeddings are: True (all rules: opposite leading yes/no, disjoint numbers
            in digits or words, disjoint named entities), False (none), or a subset of
            ``{"polarity", "numbers", "entities"}``.

    Returns:
        A :class:`Consistency`: ``p_hat`` = largest cluster / k, ``majority`` = its medoid,
        clusters largest first (member indices into ``answers``), ``entropy`` = semantic
        entropy in nats over the answered samples.

    Raises:
        AnswerError: ``failed`` has the wrong length, or an answer is not a string.
        ConfigError: bad ``threshold``, guard rule name, embedder spec or embedder output.
        MissingExtraError: the default embedder needs ``pip install 'frontier-qa[embed]'``.
    """
    plan = _plan(answers, failed, threshold)
    guard = check_rules(contradiction_guard)  # ConfigError before any embedding work
    if not plan.order:
        return _empty(plan)
    vectors = get_embedder(embedder).encode(list(plan.unique))
    return _assemble(plan, _cosine_distances(vectors, plan, guard), threshold)


async def asemantic_consistency(
    answers: Sequence[str | None],
    *,
    failed: Sequence[bool] | None = None,
    embedder: str | Embedder | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    contradiction_guard: bool | Collection[str] = True,
) -> Consistency:
    """Async :func:`semantic_consistency`: awaits ``embedder.aencode`` when it has one
    (litellm embedders), else runs ``encode`` in a worker thread so the event loop keeps going.
    """
    plan = _plan(answers, failed, threshold)
    guard = check_rules(contradiction_guard)  # ConfigError before any embedding work
    if not plan.order:
        return _empty(plan)
    resolved = get_embedder(embedder)
    aencode = getattr(resolved, "aencode", None)
    if aencode is not None:
        vectors = await aencode(list(plan.unique))
    else:
        vectors = await asyncio.to_thread(resolved.encode, list(plan.unique))
    return _assemble(plan, _cosine_distances(vectors, plan, guard), threshold)


def semantic_consistency_of(
    trajectories: Sequence[Trajectory],
    answer_format: str = "text",
    *,
    embedder: str | Embedder | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    contradiction_guard: bool | Collection[str] = True,
) -> Consistency:
    """Open-ended self-consistency of a case's trajectories: extract each answer, then cluster.

    Like :func:`frontier_qa.scoring.consistency.consistency_of`: a trajectory with ``ok == False``
    counts as failed, one with no answer in ``answer_format`` as unparseable.

    Args:
        trajectories: the k samples of one case.
        answer_format: one of :data:`frontier_qa.scoring.answers.ANSWER_FORMATS`; default ``"text"``
            (the whole final text).
        embedder: see :func:`semantic_consistency`.
        threshold: see :func:`semantic_consistency`.
        contradiction_guard: see :func:`semantic_consistency`.

    Raises:
        AnswerError: unknown ``answer_format``.
    """
    return semantic_consistency(
        sample_answers(trajectories, answer_format),
        failed=[not t.ok for t in trajectories],
        embedder=embedder,
        threshold=threshold,
        contradiction_guard=contradiction_guard,
    )
