"""The fair sampling benchmark's scoring (issue 33): recall at matched precision and the oracle's gap.

Pure functions of ``benchmarks/sequential_bench.py`` and ``benchmarks/policy_bound.py``; the
benchmarks themselves print the figures.
"""

from __future__ import annotations

import pytest

from tests.factories import load_benchmark


def cases(*groups: tuple[float, bool, int]) -> list:
    bench = load_benchmark("sequential_bench")
    return [bench.CaseResult(truth, False, False, False, p_hat) for p_hat, truth, n in groups for _ in range(n)]


def test_the_matched_precision_window_has_the_most_recall_at_the_precision_and_is_the_narrowest_of_ties() -> None:
    bench = load_benchmark("sequential_bench")
    mixed = cases((0.5, True, 4), (0.3, True, 2), (0.3, False, 2), (0.9, False, 3), (0.8, True, 1), (0.8, False, 1))
    # [0.3, 0.8] (fixed k's band) has precision 0.7; [0.4, 0.7] and [0.5, 0.5] both get 4 of 7 at 1.0
    assert bench.best_window(mixed, 0.9) == (0.5, 0.5)
    assert bench.window_score(mixed, (0.5, 0.5)) == (pytest.approx(4 / 7), 1.0)
    # at 0.8, [0.5, 0.8] (5 of 6 right) qualifies and finds one more
    assert bench.best_window(mixed, 0.8) == (0.5, 0.8)
    assert bench.best_window(cases((0.5, False, 3), (0.5, True, 1)), 0.9) is None
    assert bench.window_score(mixed, None) == (0.0, 0.0)


def test_the_gap_closed_is_measured_from_today_and_undefined_without_a_gap() -> None:
    bench = load_benchmark("sequential_bench")
    assert bench.gap_closed(0.7, 0.6, 0.8) == pytest.approx(0.5)
    assert bench.gap_closed(0.5, 0.6, 0.8) == pytest.approx(-0.5)  # worse than today
    assert bench.gap_closed(0.7, 0.6, 0.6) is None


def test_the_oracle_frontier_keeps_calibrated_labellers_that_buy_recall_and_reads_held_out_recall() -> None:
    bound = load_benchmark("policy_bound")
    point = bound.Point
    front = bound.frontier([
        ("a", point(0.5, 0.3, 0.95), point(0.5, 0.25, 0.9)),
        ("dominated", point(0.6, 0.2, 0.99), point(0.6, 0.9, 0.99)),
        ("imprecise", point(0.8, 0.6, 0.85), point(0.8, 0.9, 0.95)),
        ("d", point(1.0, 0.5, 0.92), point(1.1, 0.55, 0.9)),
    ])
    assert [name for name, _, _ in front.chosen] == ["a", "d"]
    # by tuning calls, held-out recall: from (0, 0) to a, a to d, flat beyond
    assert front.recall_at(0.25) == pytest.approx(0.125)
    assert front.recall_at(0.75) == pytest.approx(0.4)
    assert front.recall_at(2.0) == pytest.approx(0.55)


def test_set_labels_hold_the_mean_posterior_error_to_alpha() -> None:
    bound = load_benchmark("policy_bound")
    inside = [0.99, 0.95, 0.8, 0.6]  # mean errors of the prefixes: 0.01, 0.03, 0.087, 0.165
    assert bound.labelled_as_set(inside, 0.05) == {0, 1}
    assert bound.labelled_as_set(inside, 0.1) == {0, 1, 2}
    assert bound.labelled_as_set(inside, 0.2) == {0, 1, 2, 3}
