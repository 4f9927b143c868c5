"""Difficulty bands: Agent0's hard band and Tool-R0's soft band-pass (Eq. 4)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_qa.errors import ConfigError
from frontier_qa.scoring.bands import AGENT0_BAND, TOOL_R0_BAND, Band, band_distance, in_band, soft_band

# Tool-R0 at one shoulder width of 0.15 from the band: exp(-0.15² / (2·0.12²)) = exp(-0.78125).
SHOULDER_015 = math.exp(-0.78125)


@pytest.mark.parametrize("p_hat", [3 / 10, 8 / 10, 1 - 0.7, 0.1 * 3, 0.7 + 0.1, 0.5, Fraction(3, 10)])
def test_agent0_band_keeps_both_edges_however_p_hat_was_computed(p_hat: float) -> None:
    assert in_band(p_hat)
    assert AGENT0_BAND.contains(p_hat)


def test_float_noise_is_really_present_in_the_edge_cases() -> None:
    # The cases above matter only because these are not exactly the decimal edges.
    assert 1 - 0.7 > 0.3 and 0.7 + 0.1 < 0.8


@pytest.mark.parametrize("p_hat", [0.0, 2 / 10, 0.29, 0.81, 9 / 10, 1.0])
def test_agent0_band_rejects_outside(p_hat: float) -> None:
    assert not in_band(p_hat)
    assert AGENT0_BAND.score(p_hat) == 0.0


def test_agent0_band_matches_exact_integer_arithmetic_for_every_count_over_k() -> None:
    for k in range(1, 101):
        for count in range(k + 1):
            assert in_band(count / k) == (3 * k <= 10 * count <= 8 * k), (count, k)


def test_soft_band_hand_computed_values() -> None:
    assert soft_band(0.1, 10) == pytest.approx(SHOULDER_015, rel=1e-12)  # 0.1 = 1/k is solvable
    assert soft_band(0.9, 10) == pytest.approx(SHOULDER_015, rel=1e-12)
    assert soft_band(0.0, None) == pytest.approx(math.exp(-(0.25**2) / (2 * 0.12**2)), rel=1e-12)
    assert soft_band(0.5, 8) == 1.0


def test_soft_band_zero_below_one_over_k() -> None:
    assert soft_band(0.0, 10) == 0.0
    assert soft_band(0.05, 10) == 0.0
    assert soft_band(1 / 8, 8) == pytest.approx(math.exp(-(0.125**2) / (2 * 0.12**2)))


@pytest.mark.parametrize("p_hat", [0.25, 0.75, 2 / 8, 6 / 8, 1 - 0.75, 0.5 + 0.25])
def test_soft_band_is_one_on_its_edges(p_hat: float) -> None:
    assert soft_band(p_hat, 8) == 1.0
    assert TOOL_R0_BAND.score(p_hat, k=8) == 1.0


def test_band_distance() -> None:
    assert band_distance(0.1, 0.25, 0.75) == pytest.approx(0.15)
    assert band_distance(0.9, 0.25, 0.75) == pytest.approx(0.15)
    assert band_distance(0.4, 0.25, 0.75) == 0.0


def test_presets() -> None:
    assert (AGENT0_BAND.low, AGENT0_BAND.high, AGENT0_BAND.sigma) == (0.3, 0.8, None)
    assert (TOOL_R0_BAND.low, TOOL_R0_BAND.high, TOOL_R0_BAND.sigma) == (0.25, 0.75, 0.12)
    assert TOOL_R0_BAND.score(0.1, k=10) == pytest.approx(SHOULDER_015, rel=1e-12)
    assert TOOL_R0_BAND.score(0.0, k=8) == 0.0
    assert TOOL_R0_BAND.score(0.0) == pytest.approx(soft_band(0.0, None))  # no k: no floor
    assert TOOL_R0_BAND.contains(0.25) and not TOOL_R0_BAND.contains(0.8)
    assert AGENT0_BAND.score(0.5) == 1.0


def test_hard_band_with_floor() -> None:
    band = Band(0.0, 0.5, floor_unsolved=True)
    assert band.score(0.0) == 1.0
    assert band.score(0.0, k=4) == 0.0
    assert band.score(0.25, k=4) == 1.0


def test_from_delta_is_the_symmetric_band() -> None:
    band = Band.from_delta(0.25)
    assert (band.low, band.high) == (0.25, 0.75)
    assert band.contains(0.25) and not band.contains(0.8)
    with pytest.raises(ConfigError):
        Band.from_delta(0.6)


def test_bands_are_frozen_and_validated() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        AGENT0_BAND.low = 0.1  # type: ignore[misc]
    for kwargs in ({"low": 0.8, "high": 0.3}, {"low": -0.1, "high": 0.5}, {"low": 0.2, "high": 1.2}):
        with pytest.raises(ConfigError, match="low <= high"):
            Band(**kwargs)
    with pytest.raises(ConfigError, match="sigma"):
        Band(0.2, 0.8, sigma=0.0)


@pytest.mark.parametrize("p_hat", [-0.01, 1.01, float("nan"), "0.5", True, None])
def test_bad_p_hat_raises(p_hat: object) -> None:
    with pytest.raises(ConfigError, match="p_hat"):
        in_band(p_hat)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="p_hat"):
        soft_band(p_hat, 10)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, -3, 2.0, True])
def test_bad_k_raises(k: object) -> None:
    with pytest.raises(ConfigError, match="k"):
        soft_band(0.5, k)  # type: ignore[arg-type]


def test_numpy_scalars_are_accepted() -> None:
    assert in_band(np.float32(0.3))
    assert soft_band(np.float64(0.1), np.int64(10)) == pytest.approx(SHOULDER_015, rel=1e-6)


P = st.floats(0.0, 1.0, allow_nan=False)
K = st.integers(1, 64) | st.none()


@settings(max_examples=200, deadline=None)
@given(P, K)
def test_soft_band_lies_in_unit_interval_and_is_one_on_the_band(p_hat: float, k: int | None) -> None:
    value = soft_band(p_hat, k)
    assert 0.0 <= value <= 1.0
    if 0.25 <= p_hat <= 0.75 and (k is None or p_hat >= 1 / k):
        assert value == 1.0


@settings(max_examples=200, deadline=None)
@given(P, P, K)
def test_soft_band_rises_toward_the_band(a: float, b: float, k: int | None) -> None:
    lo, hi = min(a, b), max(a, b)
    if hi <= 0.25:  # below the band: further right is closer
        assert soft_band(lo, k) <= soft_band(hi, k)
    if lo >= 0.75:  # above the band: further left is closer
        assert soft_band(lo, k) >= soft_band(hi, k)
