"""The boundary search as pure logic: where it samples, when it stops, what it claims."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_qa.generators._search import (
    AxisSearch,
    GridSearch,
    InstanceResult,
    LevelEvidence,
    SearchSettings,
    grid_crossing,
    within_one,
)


def _exact(curve: list[float], samples: int = 20):
    """Noise-free measurements: every instance is right on round(p · samples) of its samples."""

    def measure(level: int, n: int) -> list[InstanceResult]:
        c = round(curve[level] * samples)
        return [InstanceResult(f"{level}-{j}", c, samples, max(c, samples - c) / samples) for j in range(n)]

    return measure


def _noisy(curve: list[float], rng: random.Random, samples: int = 2, spread: float = 0.0):
    def measure(level: int, n: int) -> list[InstanceResult]:
        out = []
        for j in range(n):
            p = min(1.0, max(0.0, curve[level] + spread * (2 * rng.random() - 1)))
            c = sum(rng.random() < p for _ in range(samples))
            out.append(InstanceResult(f"{level}-{j}", c, samples, max(c, samples - c) / samples))
        return out

    return measure


def _run(search: AxisSearch | GridSearch, measure, limit: int = 200) -> AxisSearch | GridSearch:
    for _ in range(limit):
        batch = search.next_batch()
        if not batch:
            return search
        for level, n in batch:
            assert n > 0
            search.add(level, measure(level, n))
    raise AssertionError("the search did not stop")


def _planted(curve: list[float], t: float) -> int | None:
    return next((i for i, p in enumerate(curve) if p < t), None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.99, 0.95, 0.9, 0.7, 0.55, 0.45, 0.2, 0.1, 0.02]), min_size=3, max_size=10))
def test_on_noise_free_monotone_curves_the_crossings_are_exact(values: list[float]) -> None:
    curve = sorted(values, reverse=True)
    search = _run(AxisSearch(list(range(len(curve))), SearchSettings(max_instances=6)), _exact(curve))
    for t in (0.8, 0.3):
        got = search.crossing(t)
        assert got.index == _planted(curve, t)
        assert got.status in ("found", "not reached", "at the easy end")
    assert all(len(ev.instances) <= 6 for ev in search.evidence)


def test_the_first_crossing_of_a_dip_is_found_even_when_the_coarse_pass_skips_it() -> None:
    curve = [0.97, 0.95, 0.93, 0.2, 0.95, 0.95, 0.95, 0.1]  # a dip at level 3, between two coarse levels
    search = _run(AxisSearch(list(range(8)), SearchSettings()), _exact(curve))
    assert search.coarse == [0, 2, 4, 6, 7]
    assert search.crossing(0.8).index == 3 and search.crossing(0.3).index == 3
    # without the first-crossing sweep, bisection between two levels that are above never looks there
    blind = _run(AxisSearch(list(range(8)), SearchSettings(first_crossing=False)), _exact(curve))
    assert blind.crossing(0.3).index == 7


def test_a_curve_above_everywhere_is_not_reached_and_one_below_everywhere_is_at_the_easy_end() -> None:
    high = _run(AxisSearch(list(range(5))), _exact([0.99] * 5))
    assert high.crossing(0.8).status == "not reached" and high.crossing(0.8).index is None
    low = _run(AxisSearch(list(range(5))), _exact([0.05] * 5))
    assert low.crossing(0.3).status == "at the easy end" and low.crossing(0.3).index == 0


def test_no_level_is_decided_from_fewer_instances_than_the_minimum() -> None:
    search = AxisSearch(list(range(4)), SearchSettings(instances=1, min_instances=3))
    search.add(0, _exact([1.0])(0, 1))
    assert search.status(0, 0.8) == "open"  # one perfect instance decides nothing
    search.add(0, _exact([1.0])(0, 2))
    assert search.status(0, 0.8) == "above"


def test_samples_go_where_the_crossing_is_undecided_not_to_the_level_just_before_it() -> None:
    curve = [0.99, 0.99, 0.99, 0.99, 0.78, 0.1, 0.05, 0.02]  # level 4 sits on the 0.8 threshold
    search = _run(AxisSearch(list(range(8)), SearchSettings()), _noisy(curve, random.Random(3)))
    counts = [len(ev.instances) for ev in search.evidence]
    # level 4 is within a step of either answer: it is not sampled to the limit; level 5 decides
    assert counts[4] < SearchSettings().max_instances
    assert search.status(5, 0.8) == "below"
    assert within_one(search.crossing(0.8).index, 4, 8)


def test_instances_that_differ_widen_the_levels_interval() -> None:
    same = LevelEvidence(0, 1, [InstanceResult(str(j), 5, 10) for j in range(6)])
    apart = LevelEvidence(0, 1, [InstanceResult(str(j), 10 if j % 2 else 0, 10) for j in range(6)])
    assert same.accuracy == apart.accuracy == 0.5
    assert same.design_effect() == 1.0 and apart.design_effect() > 5
    lo_s, hi_s = same.interval()
    lo_a, hi_a = apart.interval()
    assert hi_a - lo_a > 2 * (hi_s - lo_s)


def test_the_adaptive_search_finds_planted_crossings_in_most_noisy_runs_for_fewer_calls_than_a_grid() -> None:
    curve = [0.98, 0.95, 0.9, 0.7, 0.5, 0.25, 0.1, 0.03]
    hits, calls = 0, 0
    for seed in range(40):
        search = _run(AxisSearch(list(range(8))), _noisy(curve, random.Random(seed)))
        hits += all(within_one(search.crossing(t).index, _planted(curve, t), 8) for t in (0.8, 0.3))
        calls += search.calls
    grid = _run(GridSearch(list(range(8)), per_level=15), _noisy(curve, random.Random(99)))
    assert hits >= 36  # 90 %
    assert calls / 40 < 0.6 * grid.calls


def test_grid_crossing_is_the_first_level_measured_below() -> None:
    ev = [LevelEvidence(i, i, [InstanceResult("x", c, 10)]) for i, c in enumerate([10, 9, 5, 9, 1])]
    assert grid_crossing(ev, 0.8) == 2 and grid_crossing(ev, 0.3) == 4 and grid_crossing(ev, 0.05) is None


@pytest.mark.parametrize("bad", [dict(thresholds=(1.2,)), dict(confidence=0.4), dict(instances=0),
                                 dict(max_instances=2), dict(stride=0)])
def test_bad_settings_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        SearchSettings(**bad)
