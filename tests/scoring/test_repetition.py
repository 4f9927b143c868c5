"""Repetition penalty (Agent0 Eq. 4): BLEU / cosine distances, clustering, batch shares."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from frontier_qa.errors import ConfigError
from frontier_qa.scoring._repetition import (
    bleu_distance_matrix,
    cluster_labels,
    cluster_shares,
    cosine_distance_matrix,
    repetition_penalty,
)

# Two ten-token tasks that differ in the last token, and an unrelated one.
NEAR_A = "a b c d e f g h i j"
NEAR_B = "a b c d e f g h i k"
OTHER = "v w x y z"


def test_bleu_distance_of_near_identical_tasks_is_hand_computed() -> None:
    # Same length (BP = 1); clipped n-gram precisions 9/10, 8/9, 7/8, 6/7 multiply to 6/10.
    dist = bleu_distance_matrix([NEAR_A, NEAR_B])
    assert dist[0, 1] == pytest.approx(1 - 0.6**0.25, abs=1e-12)
    assert dist[1, 0] == dist[0, 1]
    assert dist[0, 0] == 0.0 and dist[1, 1] == 0.0


def test_bleu_hypothesis_is_the_earlier_task() -> None:
    short, long = "a b c d", "a b c d e f g h"
    # short as hypothesis: every n-gram matches, brevity penalty exp(1 - 8/4) = e^-1.
    assert bleu_distance_matrix([short, long])[0, 1] == pytest.approx(1 - math.exp(-1), abs=1e-12)
    # long as hypothesis: precisions 4/8, 3/7, 2/6, 1/5 (product 1/70), no brevity penalty.
    assert bleu_distance_matrix([long, short])[0, 1] == pytest.approx(1 - (1 / 70) ** 0.25, abs=1e-12)


def test_bleu_distance_without_shared_words_is_one() -> None:
    assert bleu_distance_matrix([NEAR_A, OTHER])[0, 1] == 1.0


def test_short_identical_tasks_keep_the_reference_smoothing_quirk() -> None:
    # NLTK method1 smooths the empty 3- and 4-gram precisions to 0.1, so two identical
    # two-word tasks score BLEU = (1·1·0.1·0.1)^(1/4) and do not cluster at τ = 0.5.
    assert bleu_distance_matrix(["a b", "a b"])[0, 1] == pytest.approx(1 - 0.1**0.5, abs=1e-12)


def test_two_near_identical_tasks_cluster_and_a_third_does_not() -> None:
    assert repetition_penalty([NEAR_A, NEAR_B, OTHER]) == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    halved = repetition_penalty([NEAR_A, OTHER, NEAR_B], weight=0.5)
    assert halved == pytest.approx([1 / 3, 1 / 6, 1 / 3])


def test_threshold_is_strict_at_the_boundary() -> None:
    # scikit-learn stops merging at linkage distance >= τ: d = τ stays apart.
    assert cluster_labels(np.array([[0.0, 0.5], [0.5, 0.0]]), 0.5) == [0, 1]
    just_below = 0.5 - 1e-12
    assert cluster_labels(np.array([[0.0, just_below], [just_below, 0.0]]), 0.5) == [0, 0]


def test_average_linkage_can_join_a_pair_farther_apart_than_tau() -> None:
    # d01 = d12 = 0.4 merge first; {0,1} to 2 averages (0.55 + 0.4) / 2 = 0.475 < 0.5, so the
    # cluster holds 0 and 2 although d02 = 0.55 > τ.
    dist = np.array([[0.0, 0.4, 0.55], [0.4, 0.0, 0.4], [0.55, 0.4, 0.0]])
    assert cluster_labels(dist, 0.5) == [0, 0, 0]
    # With d02 = 0.7 the average is 0.55 >= τ: 2 stays alone.
    dist[0, 2] = dist[2, 0] = 0.7
    assert sorted(Counter(cluster_labels(dist, 0.5)).values()) == [1, 2]


def test_labels_are_numbered_in_order_of_first_appearance() -> None:
    dist = np.array([[0.0, 1.0, 0.1], [1.0, 0.0, 1.0], [0.1, 1.0, 0.0]])
    assert cluster_labels(dist) == [0, 1, 0]
    assert cluster_shares([0, 1, 0]) == pytest.approx([2 / 3, 1 / 3, 2 / 3])


def test_small_batches() -> None:
    assert repetition_penalty([]) == []
    assert repetition_penalty([NEAR_A], weight=0.7) == [0.7]
    assert cluster_labels(np.zeros((1, 1))) == [0]


def test_empty_texts_are_their_own_clusters_but_count_in_the_batch() -> None:
    assert repetition_penalty(["", "   ", NEAR_A, NEAR_A]) == pytest.approx([1 / 4, 1 / 4, 2 / 4, 2 / 4])


def test_cosine_distance_matrix_is_hand_computed() -> None:
    dist = cosine_distance_matrix([[1.0, 0.0], [1.0, 0.1], [0.0, 2.0]])
    assert dist[0, 1] == pytest.approx(1 - 1 / math.sqrt(1.01), abs=1e-12)
    assert dist[0, 2] == pytest.approx(1.0, abs=1e-12)
    assert dist[2, 1] == pytest.approx(1 - 0.1 / math.sqrt(1.01), abs=1e-12)
    assert np.array_equal(dist, dist.T) and np.all(np.diag(dist) == 0)


def test_embedding_distance_replaces_bleu() -> None:
    texts = ["alpha", "beta", "gamma"]  # BLEU would keep all three apart
    vectors = [[1.0, 0.0], [1.0, 0.1], [0.0, 1.0]]
    assert repetition_penalty(texts, embeddings=vectors, threshold=0.2) == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    # A zero vector has no direction: it never joins a cluster.
    assert repetition_penalty(texts, embeddings=[[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]) == pytest.approx(
        [2 / 3, 2 / 3, 1 / 3]
    )


class _TableEncoder:
    """A real (if tiny) encoder: fixed vectors per text, the `.encode(texts)` protocol."""

    table = {"add two numbers": [1.0, 0.0], "sum two numbers": [0.9, 0.1], "draw a triangle": [0.0, 1.0]}

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.array([self.table[text] for text in texts])


def test_embedder_object_is_used_when_no_embeddings_are_given() -> None:
    texts = ["add two numbers", "draw a triangle", "sum two numbers"]
    assert repetition_penalty(texts, embedder=_TableEncoder(), threshold=0.1) == pytest.approx(
        [2 / 3, 1 / 3, 2 / 3]
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weight": -1.0}, "λ_rep"),
        ({"threshold": 0.0}, "threshold"),
        ({"threshold": float("nan")}, "threshold"),
        ({"embeddings": [[1.0, 0.0]]}, "1 embedding rows for 2 texts"),
        ({"embeddings": [1.0, 0.0]}, "2-D"),
        ({"embeddings": [[1.0, float("nan")], [0.0, 1.0]]}, "NaN"),
    ],
)
def test_bad_arguments_raise_config_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        repetition_penalty([NEAR_A, NEAR_B], **kwargs)


def test_non_square_distance_matrix_is_rejected() -> None:
    with pytest.raises(ConfigError, match="square"):
        cluster_labels(np.zeros((2, 3)))


def test_canonical_order_removes_the_reference_order_dependence() -> None:
    short, long = "a b c d e f", "a b x c d e f"
    # short as hypothesis: precisions 1, 4/5, 2/4, 1/3 and BP exp(1 - 7/6).
    forward = 1 - math.exp(-1 / 6) * (2 / 15) ** 0.25  # 0.488: below τ, they cluster
    # long as hypothesis: precisions 6/7, 4/6, 2/5, 1/4 and BP 1.
    backward = 1 - (2 / 35) ** 0.25  # 0.511: above τ, they stay apart
    assert bleu_distance_matrix([short, long])[0, 1] == pytest.approx(forward, abs=1e-12)
    assert bleu_distance_matrix([long, short])[0, 1] == pytest.approx(backward, abs=1e-12)
    # The reference's batch order decides the penalty...
    assert repetition_penalty([short, long], canonical_order=False) == [1.0, 1.0]
    assert repetition_penalty([long, short], canonical_order=False) == [0.5, 0.5]
    # ...the canonical order (sorted by text: short first here) does not.
    assert repetition_penalty([long, short]) == [1.0, 1.0]
    assert repetition_penalty([short, long]) == [1.0, 1.0]


def _reference_cluster_share(problems: list[str], distance_threshold: float = 0.5) -> list[float]:
    """aiming-lab/Agent0 curriculum_reward.py (_bleu_distance_matrix + cluster_share_per_problem)."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from sklearn.cluster import AgglomerativeClustering

    n = len(problems)
    dist = np.zeros((n, n))
    smoother = SmoothingFunction().method1
    for i in range(n):
        for j in range(i, n):
            if i == j:
                score = 1.0
            else:
                score = sentence_bleu([problems[j].split()], problems[i].split(), smoothing_function=smoother)
            dist[i, j] = dist[j, i] = 1 - score
    labels = AgglomerativeClustering(
        n_clusters=None, distance_threshold=distance_threshold, metric="precomputed", linkage="average"
    ).fit_predict(dist)
    size = Counter(labels)
    return [size[label] / n for label in labels]


_WORDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
_TEXT = st.lists(_WORDS, min_size=1, max_size=9).map(" ".join)


@st.composite
def _near_duplicates(draw) -> list[str]:
    """Batches of small edits of one task: where BLEU's asymmetry decides what clusters."""
    base = draw(st.permutations("abcdefghij"))[: draw(st.integers(4, 9))]
    batch = []
    for _ in range(draw(st.integers(2, 5))):
        words = list(base)
        for _ in range(draw(st.integers(0, 1))):
            position = draw(st.integers(0, len(words)))
            words.insert(position, draw(st.sampled_from("xyz")))
        batch.append(" ".join(words))
    return batch


_BATCH = st.lists(_TEXT, min_size=2, max_size=7) | _near_duplicates()


@settings(max_examples=60, deadline=None)
@given(_BATCH)
def test_batch_order_mode_matches_the_reference_implementation(texts: list[str]) -> None:
    ours = repetition_penalty(texts, canonical_order=False)
    assert ours == pytest.approx(_reference_cluster_share(texts), abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.lists(_TEXT | st.just(""), min_size=1, max_size=7), st.floats(0.0, 3.0))
def test_penalty_lies_between_one_over_b_and_lambda(texts: list[str], weight: float) -> None:
    penalties = repetition_penalty(texts, weight=weight)
    b = len(texts)
    assert len(penalties) == b
    for value in penalties:
        assert weight / b - 1e-12 <= value <= weight + 1e-12


@settings(max_examples=120, deadline=None)
@example(["a b x c d e f", "a b c d e f"], random.Random(0))
@given(_BATCH, st.randoms(use_true_random=False))
def test_penalty_does_not_depend_on_batch_order(texts: list[str], rng) -> None:
    shuffled = list(texts)
    rng.shuffle(shuffled)
    before = sorted(zip(texts, repetition_penalty(texts), strict=True))
    after = sorted(zip(shuffled, repetition_penalty(shuffled), strict=True))
    assert before == after


def test_identical_short_tasks_are_repeats_except_in_reference_mode() -> None:
    # Found training a tiny model: two identical two-word tasks score BLEU 0.32 (distance 0.68 > 0.5),
    # so the reference never groups them and a batch could collapse onto one short task unpenalised.
    batch = ["count apples", "count apples", "river stone boat"]
    assert repetition_penalty(batch) == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert repetition_penalty(batch, canonical_order=False) == pytest.approx([1 / 3, 1 / 3, 1 / 3])
