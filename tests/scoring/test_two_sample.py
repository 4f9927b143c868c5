"""The two-sample statistics under the replay verdicts: exact tests, the drop posterior, alpha spending,
and the error rate of the whole sequential decision on simulated unchanged and changed agents.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontier_qa.scoring._two_sample import drop_probability, fisher_greater, fisher_less, spend
from frontier_qa.store._comparison import Evidence, Look, RegressionPolicy, RegressionVerdict, judge
from frontier_qa.store._records import Baseline, CaseClass


def brute_force_less(s1: int, n1: int, s2: int, n2: int) -> float:
    """P(first sample's count >= s1) over every way of splitting the s1 + s2 successes (hypergeometric)."""
    total = s1 + s2
    ways = {x: math.comb(n1, x) * math.comb(n2, total - x) for x in range(max(0, total - n2), min(n1, total) + 1)}
    return sum(w for x, w in ways.items() if x >= s1) / sum(ways.values())


@given(st.integers(1, 25), st.integers(1, 25), st.data())
def test_fisher_matches_the_hypergeometric_enumeration(n1: int, n2: int, data: st.DataObject) -> None:
    s1, s2 = data.draw(st.integers(0, n1)), data.draw(st.integers(0, n2))
    assert fisher_less(s1, n1, s2, n2) == pytest.approx(brute_force_less(s1, n1, s2, n2), rel=1e-9, abs=1e-15)
    assert fisher_greater(s1, n1, s2, n2) == pytest.approx(brute_force_less(n1 - s1, n1, n2 - s2, n2), rel=1e-9,
                                                            abs=1e-15)


def test_fisher_edges_and_known_values() -> None:
    assert fisher_less(6, 6, 0, 10) == pytest.approx(1 / math.comb(16, 6))  # all successes on the baseline side
    assert fisher_less(0, 10, 5, 5) == 1.0 and fisher_less(3, 3, 0, 0) == 1.0
    with pytest.raises(ValueError, match="successes <= n"):
        fisher_less(4, 3, 0, 1)


def test_the_fisher_test_holds_its_level_under_the_null() -> None:
    """Exact and conservative: P(p <= a) <= a for every a, here by full enumeration at p = 0.7."""
    for n1, n2, rate in ((10, 10, 0.7), (40, 20, 0.9), (20, 40, 0.5)):
        for level in (0.01, 0.05, 0.2):
            reject = sum(math.comb(n1, a) * rate**a * (1 - rate) ** (n1 - a) * math.comb(n2, b) * rate**b
                         * (1 - rate) ** (n2 - b)
                         for a, b in itertools.product(range(n1 + 1), range(n2 + 1))
                         if fisher_less(a, n1, b, n2) <= level)
            assert reject <= level + 1e-12


def test_drop_probability_against_monte_carlo() -> None:
    rng = random.Random(1)
    for s1, n1, s2, n2, delta in ((36, 40, 4, 10, 0.3), (20, 40, 10, 20, 0.3), (5, 6, 6, 40, 0.1)):
        draws = 20000
        hits = sum(rng.betavariate(s1 + 0.5, n1 - s1 + 0.5) - rng.betavariate(s2 + 0.5, n2 - s2 + 0.5) >= delta
                   for _ in range(draws))
        assert drop_probability(s1, n1, s2, n2, delta) == pytest.approx(hits / draws, abs=0.01)


def test_spend_splits_the_level_by_look_size() -> None:
    assert spend(0.01, (5, 10, 20, 40, 80)) == pytest.approx(tuple(0.01 * n / 155 for n in (5, 10, 20, 40, 80)))
    assert sum(RegressionPolicy(alpha=0.02, n_cases=30).levels) == pytest.approx(0.02 / 30)
    for bad in ((), (5, 5), (10, 5), (0, 5)):
        with pytest.raises(ValueError, match="increasing"):
            spend(0.01, bad)


# --- the sequential decision, simulated ---------------------------------------------------------------------


def decide(base: Baseline, rate: float, policy: RegressionPolicy, rng: random.Random) -> RegressionVerdict:
    draws = [rng.random() < rate for _ in range(policy.cap)]
    for n in policy.checks:  # as the replay takes them: the looks, and the checks for "same" between
        index = policy.looks.index(n) if n in policy.looks else None
        outcome = judge(base, Look(index, Evidence(sum(draws[:n]), n), final=n == policy.cap), policy)
        if outcome is not None:
            return outcome.verdict
    raise AssertionError("the last look always decides")


def baseline(successes: int, k: int) -> Baseline:
    return Baseline(case_id="c", case_class=CaseClass.PASS, k=k, successes=successes, anchor="7", anchor_kind="reference")


def test_an_unchanged_case_is_called_a_regression_at_most_at_its_level() -> None:
    """A deliberately loose per-case level (0.05) so that false alarms are frequent enough to count."""
    rng = random.Random(7)
    policy = RegressionPolicy(alpha=0.05, n_cases=1)
    alarms = trials = 0
    for rate in (0.9, 0.6, 1 / 3):
        for _ in range(400):
            k = 40
            base = baseline(sum(rng.random() < rate for _ in range(k)), k)
            alarms += decide(base, rate, policy, rng) is RegressionVerdict.REGRESSION
            trials += 1
    assert alarms / trials <= 0.05  # Bonferroni over the looks holds the level (here: well below it)


def test_planted_drops_are_found_at_the_default_level() -> None:
    rng = random.Random(3)
    policy = RegressionPolicy(n_cases=30)
    found = {name: sum(decide(baseline(b, 40), after, policy, rng) is RegressionVerdict.REGRESSION for _ in range(60))
             for name, b, after in (("right to wrong", 36, 0.0), ("0.9 to 0.4", 36, 0.4), ("frontier to wrong", 20, 0.0))}
    assert found == {"right to wrong": 60, "0.9 to 0.4": found["0.9 to 0.4"], "frontier to wrong": 60}
    assert found["0.9 to 0.4"] >= 55  # about 96 % (benchmarks/regression_bench.py measures it end to end)
