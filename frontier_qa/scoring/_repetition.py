"""Repetition penalty for a batch of generated tasks (Agent0 Eq. 4, after R-Zero).

Tasks are compared pairwise, grouped by agglomerative clustering, and each task is
penalised by its cluster's share of the batch: R_rep(x_i) = λ_rep·|C_k|/B.

Distances, exactly as the reference (aiming-lab/Agent0 ``curriculum_reward.py``):

* BLEU: d_ij = 1 − BLEU(x_i, x_j) with NLTK ``sentence_bleu``, ``SmoothingFunction().method1``,
  uniform 4-gram weights and whitespace tokens; hypothesis x_i, reference [x_j] for i < j,
  mirrored (d_ji = d_ij) and d_ii = 0. BLEU is asymmetric, so the matrix depends on batch
  order; :func:`repetition_penalty` therefore sorts the batch into a canonical order first
  (by text) so the penalty of a task does not depend on where GRPO happened to put it.
* Embeddings (QA notes, open problem 2): d_ij = 1 − cos(e_i, e_j), from precomputed vectors
  or any object with ``.encode(texts) -> (n, d) array``; nothing here loads a model.

Clustering is ``AgglomerativeClustering(metric="precomputed", linkage="average",
distance_threshold=τ, n_clusters=None)``. scikit-learn merges two clusters only while their
*average* pairwise distance is strictly below τ (it counts merge heights ``>= τ`` as cuts),
so "d_ij < τ" in the paper means: a pair at exactly d = τ stays apart, and a cluster may hold
pairs farther apart than τ as long as the cluster-to-cluster average is below it.

Empty texts (no tokens) and zero embedding vectors are never merged with anything: they carry
no n-grams / no direction. Each is its own cluster and still counts in the batch size B, as in
the reference, where a failed parse contributes an empty question to the batch.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from frontier_qa.errors import ConfigError

DEFAULT_THRESHOLD = 0.5
"""τ_BLEU: the reference code's ``distance_threshold`` (Agent0 §3.2 names it, R-Zero sets it)."""

_BLEU_WEIGHTS = (0.25, 0.25, 0.25, 0.25)


@runtime_checkable
class TextEncoder(Protocol):
    """Anything with ``encode(texts) -> array of shape (len(texts), dim)``.

    :class:`frontier_qa.scoring._embedders.Embedder` and a sentence-transformers model both fit.
    """

    def encode(self, texts: list[str]) -> Any: ...


def bleu_distance_matrix(texts: Sequence[str]) -> np.ndarray:
    """Pairwise BLEU distances in batch order, exactly as the Agent0 reference computes them.

    Args:
        texts: the tasks, in batch order.

    Returns:
        A symmetric ``(B, B)`` float array with d_ii = 0 and, for i < j,
        d_ij = d_ji = 1 − sentence_bleu([x_j.split()], x_i.split()) in [0, 1].
    """
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    smoother = SmoothingFunction().method1
    tokens = [text.split() for text in texts]
    n = len(tokens)
    dist = np.zeros((n, n), dtype=np.float64)
    for i in range(n):
        for j in range(i + 1, n):
            score = sentence_bleu([tokens[j]], tokens[i], weights=_BLEU_WEIGHTS, smoothing_function=smoother)
            dist[i, j] = dist[j, i] = 1.0 - float(score)
    return dist


def cosine_distance_matrix(embeddings: Any) -> np.ndarray:
    """Pairwise cosine distances 1 − cos(e_i, e_j), clipped to [0, 2].

    Args:
        embeddings: a ``(B, dim)`` array-like of finite numbers; rows need not be normalised.
            A zero row has no direction: its distance to every other row is reported as 2
            (and :func:`repetition_penalty` keeps it in a cluster of its own).

    Raises:
        ConfigError: the input is not 2-D or holds NaN / infinite values.
    """
    array = finite_matrix(embeddings)
    norms = np.linalg.norm(array, axis=1)
    unit = np.divide(array, norms[:, None], out=np.zeros_like(array), where=norms[:, None] > 0)
    dist: np.ndarray = np.clip(1.0 - unit @ unit.T, 0.0, 2.0)
    zero = norms == 0
    dist[zero, :] = 2.0
    dist[:, zero] = 2.0
    dist = (dist + dist.T) / 2.0  # exact symmetry despite rounding in the matrix product
    np.fill_diagonal(dist, 0.0)
    return dist


def cluster_labels(distances: Any, threshold: float = DEFAULT_THRESHOLD) -> list[int]:
    """Average-linkage clusters of a precomputed distance matrix.

    Args:
        distances: a symmetric ``(B, B)`` matrix of non-negative distances.
        threshold: τ; clusters merge while their average linkage distance is < τ (strict).

    Returns:
        One label per row, numbered 0, 1, ... in order of first appearance.

    Raises:
        ConfigError: the matrix is not square, or τ is not a positive finite number.
    """
    _check_threshold(threshold)
    matrix = finite_matrix(distances)
    n = matrix.shape[0]
    if matrix.shape != (n, n):
        raise ConfigError(
            f"a distance matrix must be square; got shape {matrix.shape}",
            hint="pass the (B, B) matrix from bleu_distance_matrix or cosine_distance_matrix",
        )
    if n < 2:  # scikit-learn needs two samples; one task is its own cluster
        return [0] * n
    from sklearn.cluster import AgglomerativeClustering

    raw = AgglomerativeClustering(
        n_clusters=None, metric="precomputed", linkage="average", distance_threshold=threshold
    ).fit_predict(matrix)
    renumber: dict[int, int] = {}
    return [renumber.setdefault(int(label), len(renumber)) for label in raw]


def cluster_shares(labels: Sequence[int]) -> list[float]:
    """|C_k|/B for each item: the share of the batch in the item's cluster."""
    sizes = Counter(labels)
    total = len(labels)
    return [sizes[label] / total for label in labels]


def repetition_penalty(
    texts: Sequence[str],
    *,
    weight: float = 1.0,
    threshold: float = DEFAULT_THRESHOLD,
    embeddings: Any | None = None,
    embedder: TextEncoder | None = None,
    canonical_order: bool = True,
) -> list[float]:
    """R_rep(x_i) = λ_rep·|C_k|/B for every task of a batch (Agent0 Eq. 4).

    Args:
        texts: the B tasks of one batch (questions, not whole completions). Empty or
            whitespace-only texts form clusters of their own.
        weight: λ_rep (the reference uses 1).
        threshold: τ in distance units (0.5 for BLEU in the reference; choose your own for
            cosine distances, which lie in [0, 2]).
        embeddings: precomputed ``(B, dim)`` vectors; when given, cosine distance replaces BLEU.
        embedder: an object with ``.encode(texts)``; used (instead of BLEU) when no
            ``embeddings`` are given.
        canonical_order: sort the batch by text (then by embedding) before computing the
            asymmetric BLEU matrix and clustering, so a task's penalty does not depend on its
            position in the batch, and give identical tasks distance 0 (short ones escape BLEU).
            ``False`` reproduces the reference in batch order.

    Returns:
        B penalties, each in [λ_rep/B, λ_rep]; ``[]`` for an empty batch.

    Raises:
        ConfigError: negative weight, bad threshold, or embeddings that do not match the texts.
    """
    if not (math.isfinite(weight) and weight >= 0):
        raise ConfigError(f"repetition weight λ_rep must be a finite number >= 0; got {weight!r}")
    _check_threshold(threshold)
    texts = [str(text) for text in texts]
    n = len(texts)
    if n == 0:
        return []
    vectors = None
    if embeddings is None and embedder is not None:
        embeddings = embedder.encode(list(texts))
    if embeddings is not None:
        vectors = finite_matrix(embeddings)
        if vectors.shape[0] != n:
            raise ConfigError(
                f"got {vectors.shape[0]} embedding rows for {n} texts",
                hint="pass exactly one embedding vector per text, in the same order",
            )

    # Items that can merge: non-empty text, and a non-zero vector when embeddings are used.
    mergeable = [i for i in range(n) if texts[i].split()]
    if vectors is not None:
        mergeable = [i for i in mergeable if np.any(vectors[i] != 0)]
    if canonical_order:
        mergeable.sort(key=lambda i: (texts[i], () if vectors is None else tuple(vectors[i])))

    labels = list(range(n))  # every item alone until clustering says otherwise
    if len(mergeable) >= 2:
        if vectors is None:
            dist = bleu_distance_matrix([texts[i] for i in mergeable])
            if canonical_order:
                # Identical tasks are repeats however short: 4-gram BLEU gives two equal two-word
                # tasks 0.32 (distance 0.68 > τ), so the reference never groups them.
                words = [texts[i].split() for i in mergeable]
                for a in range(len(words)):
                    for b in range(a + 1, len(words)):
                        if words[a] == words[b]:
                            dist[a, b] = dist[b, a] = 0.0
        else:
            dist = cosine_distance_matrix(vectors[mergeable])
        for index, label in zip(mergeable, cluster_labels(dist, threshold), strict=True):
            labels[index] = n + label  # offset: never collides with a singleton's own index
    return [weight * share for share in cluster_shares(labels)]


def finite_matrix(values: Any, *, what: str = "the array",
                  shape_hint: str = "pass one row per text (embeddings) or a (B, B) distance matrix",
                  finite_hint: str = "check the embeddings or distances") -> np.ndarray:
    """``values`` as a float64 2-D array of finite numbers.

    Raises:
        ConfigError: another shape, or a NaN or infinite entry (``what`` names the array).
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2:
        raise ConfigError(f"{what} has shape {array.shape}; expected a 2-D array", hint=shape_hint)
    if not np.all(np.isfinite(array)):
        raise ConfigError(f"{what} holds NaN or infinite values", hint=finite_hint)
    return array


def _check_threshold(threshold: float) -> None:
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold) and threshold > 0):
        raise ConfigError(
            f"clustering threshold τ must be a positive finite number; got {threshold!r}",
            hint="Agent0 uses τ = 0.5 on BLEU distances",
        )
