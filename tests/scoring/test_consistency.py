"""Self-consistency: hand-computed votes, and the invariants that make p̂ trustworthy."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_qa.errors import AnswerError
from frontier_qa.scoring._equivalence import comparator
from frontier_qa.scoring.consistency import Cluster, cluster_entropy, consistency_of, self_consistency
from frontier_qa.target import Trajectory

NUMERIC = comparator("numeric")  # no symbolic stage: fast enough for property tests
STRING = comparator("string")


def test_plain_majority() -> None:
    result = self_consistency(["42", "42", "41"], equivalent=STRING)
    assert result.p_hat == pytest.approx(2 / 3)
    assert result.majority == "42"
    assert result.k == 3 and result.n_answered == 3
    assert result.n_unparseable == 0 and result.n_failed == 0
    assert result.clusters == (Cluster("42", (0, 1)), Cluster("41", (2,)))
    assert not result.tie
    assert result.entropy == pytest.approx(-(2 / 3) * math.log(2 / 3) - (1 / 3) * math.log(1 / 3))
    assert result.entropy == pytest.approx(0.6365141682948128)
    assert result.answers == ("42", "42", "41")
    assert result.majority_mask == (True, True, False)


def test_equivalent_answers_are_merged() -> None:
    result = self_consistency(["0.5", "\\frac{1}{2}", "1/2", "0.25"], equivalent=NUMERIC)
    assert result.p_hat == 0.75
    # each form occurs once: the smallest string represents the cluster
    assert result.majority == "0.5"
    assert result.clusters[0].members == (0, 1, 2)
    assert result.n_clusters == 2


def test_default_equivalence_is_symbolic_math() -> None:
    result = self_consistency(["x+1", "1+x", "2x", " x+1 "])
    assert result.p_hat == 0.75
    assert result.majority == "x+1"  # most frequent exact (stripped) form
    assert result.clusters[0].members == (0, 1, 3)


def test_unparseable_and_failed_are_counted_never_voted() -> None:
    answers = ["7", None, "7", "8", "   ", "9", "None"]
    failed = [False, False, False, False, False, True, False]
    result = self_consistency(answers, failed=failed, equivalent=STRING)
    assert result.k == 7
    assert result.n_unparseable == 2  # None and blank
    assert result.n_failed == 1  # sample 5 failed, whatever its text said
    assert result.n_answered == 4
    assert result.p_hat == pytest.approx(2 / 7)  # share of ALL k samples (Agent0 Eq. 6)
    assert result.majority == "7"
    assert result.answers == ("7", None, "7", "8", None, None, "None")
    # a literal answer "None" is an answer like any other, but extraction never makes one
    assert Counter(c.representative for c in result.clusters) == Counter(["7", "8", "None"])


def test_more_unparseable_than_any_answer_still_elects_an_answer() -> None:
    result = self_consistency([None, None, None, "3"], equivalent=STRING)
    assert result.majority == "3" and result.p_hat == 0.25 and result.n_unparseable == 3


def test_tie_is_broken_by_canonical_form_not_arrival() -> None:
    first = self_consistency(["b", "a", "B"], equivalent=STRING)  # b, B share a key
    assert first.majority == "B" and first.p_hat == pytest.approx(2 / 3) and not first.tie
    for order in (["b", "a"], ["a", "b"]):
        result = self_consistency(order, equivalent=STRING)
        assert result.majority == "a" and result.tie and result.p_hat == 0.5
        assert result.entropy == pytest.approx(math.log(2))
    # canonical form decides, not the raw spelling: key("\\text{B}") == "b" > "a"
    assert self_consistency(["\\text{B}", "A"], equivalent=STRING).majority == "A"


def test_tie_goes_to_the_smallest_representative_not_the_smallest_member() -> None:
    def same_length(a: str, b: str) -> bool:
        return len(a) == len(b)

    # {"a", "z", "z"} is represented by "z"; {"bb", "bb", "cc"} by "bb". The first cluster
    # holds the smallest string overall ("a"), but the representatives decide: "bb" < "z".
    for answers in (["a", "z", "z", "bb", "bb", "cc"], ["cc", "bb", "z", "bb", "a", "z"]):
        result = self_consistency(answers, equivalent=same_length, key=str.strip)
        assert result.tie and result.p_hat == 0.5
        assert [c.representative for c in result.clusters] == ["bb", "z"]


def test_representative_is_most_frequent_then_smallest() -> None:
    result = self_consistency(["1/2", "0.5", "1/2", "\\frac12", "0.5"], equivalent=NUMERIC)
    assert result.majority == "0.5"  # "0.5" and "1/2" twice each: "0.5" < "1/2"
    result = self_consistency(["1/2", "0.5", "1/2"], equivalent=NUMERIC)
    assert result.majority == "1/2"


def test_nothing_answered() -> None:
    for answers, failed in (([], None), ([None, None], [False, True])):
        result = self_consistency(answers, failed=failed, equivalent=STRING)
        assert result.p_hat == 0.0 and result.majority is None
        assert result.clusters == () and result.entropy == 0.0 and not result.tie
        assert result.majority_mask == tuple(False for _ in answers)


def test_transitive_closure_of_a_non_transitive_relation() -> None:
    def within_one(a: str, b: str) -> bool:
        return abs(int(a) - int(b)) <= 1

    for answers in (["1", "2", "3", "5"], ["3", "5", "1", "2"], ["5", "1", "3", "2"]):
        result = self_consistency(answers, equivalent=within_one, key=str.strip)
        assert sorted(sorted(answers[i] for i in c.members) for c in result.clusters) == [
            ["1", "2", "3"],
            ["5"],
        ]
        assert result.p_hat == 0.75 and result.majority == "1"


def test_equivalence_is_asked_once_per_pair_of_distinct_forms() -> None:
    calls: list[tuple[str, str]] = []

    def spy(a: str, b: str) -> bool:
        calls.append((a, b))
        return False

    self_consistency(["a", "A", "a ", "b", "b", "c"], equivalent=spy)
    assert sorted(calls) == [("a", "b"), ("a", "c"), ("b", "c")]


def test_bad_input() -> None:
    with pytest.raises(AnswerError, match="2 answers but 3 failed"):
        self_consistency(["1", "2"], failed=[False] * 3)
    with pytest.raises(AnswerError, match="answer 1 is a int"):
        self_consistency(["1", 2])  # type: ignore[list-item]


def test_cluster_entropy() -> None:
    assert cluster_entropy([]) == 0.0
    assert cluster_entropy([5]) == 0.0
    assert cluster_entropy([1, 1, 1, 1]) == pytest.approx(math.log(4))
    assert cluster_entropy([3, 0, 1]) == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))


# ------------------------------------------------------------------------ trajectories


def test_consistency_of_trajectories() -> None:
    trajectories = [
        Trajectory(text="so \\boxed{7}", sample_index=0),
        Trajectory(text="I think it is 7 but forgot the box", sample_index=1),
        Trajectory(text="\\boxed{7.0}", sample_index=2),
        Trajectory(text=None, error="TimeoutError: 60 s", sample_index=3),
        Trajectory(text="\\boxed{8}", sample_index=4),
    ]
    result = consistency_of(trajectories, "boxed", equivalent=NUMERIC)
    assert (result.k, result.n_failed, result.n_unparseable) == (5, 1, 1)
    assert result.majority == "7" and result.p_hat == 0.4
    assert result.answers == ("7", None, "7.0", None, "8")
    # the reference code would have voted "None" twice here (docs/method.md, defect 5)
    assert "None" not in [c.representative for c in result.clusters]


def test_consistency_of_other_formats() -> None:
    texts = ['{"answer": "Paris"}', '```json\n{"answer": "paris"}\n```', '{"answer": "Lyon"}']
    result = consistency_of([Trajectory(text=t) for t in texts], "json:answer", equivalent=STRING)
    assert result.majority == "Paris" and result.p_hat == pytest.approx(2 / 3)
    failed_with_text = Trajectory(text="Final answer: 3", error="cut off")
    result = consistency_of([Trajectory(text="Final answer: 3"), failed_with_text], "final_answer")
    assert (result.n_failed, result.p_hat) == (1, 0.5)
    with pytest.raises(AnswerError, match="unknown answer format"):
        consistency_of([], "latex")


# ------------------------------------------------------------------------- properties

_ANSWER = st.one_of(
    st.none(),
    st.sampled_from(["1/2", "0.5", "\\frac{1}{2}", "50%", "1,000", "1000", "1000.0000001", "(1,2)", "(2,1)"]),
    st.sampled_from(["yes", "Yes.", "\\text{yes}", "no", "  ", "7", "-7", "x", "X"]),
    st.integers(-3, 3).map(str),
)
_CASE = st.lists(st.tuples(_ANSWER, st.booleans()), max_size=12)


def _run(case: list[tuple[str | None, bool]]):
    return self_consistency([a for a, _ in case], failed=[f for _, f in case], equivalent=NUMERIC)


def _cluster_contents(result, answers) -> Counter:
    return Counter(tuple(sorted(answers[i].strip() for i in c.members)) for c in result.clusters)


@settings(max_examples=100, deadline=None)
@given(_CASE, st.randoms(use_true_random=False))
def test_order_independence(case: list[tuple[str | None, bool]], rnd: random.Random) -> None:
    shuffled = list(case)
    rnd.shuffle(shuffled)
    a, b = _run(case), _run(shuffled)
    assert (a.p_hat, a.majority, a.tie, a.n_unparseable, a.n_failed) == (
        b.p_hat,
        b.majority,
        b.tie,
        b.n_unparseable,
        b.n_failed,
    )
    assert a.entropy == pytest.approx(b.entropy)
    assert _cluster_contents(a, [x for x, _ in case]) == _cluster_contents(b, [x for x, _ in shuffled])
    assert [c.representative for c in a.clusters] == [c.representative for c in b.clusters]


@settings(max_examples=100, deadline=None)
@given(_CASE)
def test_bounds_and_bookkeeping(case: list[tuple[str | None, bool]]) -> None:
    result = _run(case)
    k = len(case)
    assert 0.0 <= result.p_hat <= 1.0
    assert result.n_answered == sum(c.size for c in result.clusters)
    assert sorted(i for c in result.clusters for i in c.members) == [
        i for i, a in enumerate(result.answers) if a is not None
    ]
    if result.n_answered:
        assert result.p_hat >= 1 / k
        assert result.p_hat * k == pytest.approx(max(c.size for c in result.clusters))
        # an unparseable or failed sample is never the majority
        assert result.majority is not None
        assert all(result.answers[i] is not None for i in result.clusters[0].members)
        assert 0.0 <= result.entropy <= math.log(result.n_clusters) + 1e-12
    else:
        assert result.p_hat == 0.0 and result.majority is None


@settings(max_examples=100, deadline=None)
@given(_CASE, st.integers(0, 11))
def test_an_agreeing_answer_never_lowers_the_majority_count(case, pick: int) -> None:
    before = _run(case)
    answered = [a for a, f in case if not f and a is not None and a.strip()]
    if not answered:
        return
    after = _run([*case, (answered[pick % len(answered)], False)])
    assert after.p_hat * after.k >= before.p_hat * before.k - 1e-9
    assert after.clusters[0].size >= before.clusters[0].size


@settings(max_examples=100, deadline=None)
@given(_CASE)
def test_unparseable_samples_never_vote(case) -> None:
    result = _run(case)
    padded = _run([*case, (None, False), ("   ", False), ("7", True)])
    assert padded.k == result.k + 3
    assert padded.n_unparseable == result.n_unparseable + 2
    assert padded.n_failed == result.n_failed + 1
    assert [c.size for c in padded.clusters] == [c.size for c in result.clusters]
    assert padded.majority == result.majority


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(["x+1", "1+x", "2x", "x\\cdot 2", "0.5", "\\frac{1}{2}", None]), max_size=6))
def test_order_independence_with_symbolic_math(answers: list[str | None]) -> None:
    forward, backward = self_consistency(answers), self_consistency(answers[::-1])
    assert (forward.p_hat, forward.majority, forward.tie) == (backward.p_hat, backward.majority, backward.tie)
