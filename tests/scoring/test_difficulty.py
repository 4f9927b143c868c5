"""Difficulty prediction: parsing, the skip policy, calibration metrics, and a real fit."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.scoring._difficulty import (
    DifficultyPredictor,
    brier_score,
    calibration_bins,
    calibration_report,
    curriculum_estimate,
    difficulty_reward,
    expected_calibration_error,
    parse_difficulty_prediction,
    should_skip,
    text_features,
)


def test_parse_and_convert_the_curriculum_estimate():
    text = "<review>nested loops</review> <difficulty_prediction> 6 </difficulty_prediction>"
    assert parse_difficulty_prediction(text) == 6.0
    assert parse_difficulty_prediction("no tag here") is None
    two = "<difficulty_prediction>1</difficulty_prediction> <difficulty_prediction>2.5</difficulty_prediction>"
    assert parse_difficulty_prediction(two) == 2.5  # the last one counts
    assert curriculum_estimate(6) == pytest.approx(0.25)  # 0 easiest .. 8 hardest
    assert curriculum_estimate(5, higher_is_harder=False) == pytest.approx(5 / 8)  # "5 of N = 8 succeed"
    assert curriculum_estimate(12) == 0.0
    assert difficulty_reward(5 / 8, 0.5) == pytest.approx(0.875)  # self-aware RL Eq. 3
    with pytest.raises(ConfigError):
        curriculum_estimate(3, scale=0)


def test_should_skip_only_extremes_and_explores_the_given_share():
    rng = random.Random(0)
    assert not should_skip(None, 0.0, rng)
    assert not should_skip(0.5, 0.0, rng)
    assert not should_skip(0.94, 0.0, rng) and not should_skip(0.06, 0.0, rng)
    assert should_skip(0.95, 0.0, rng) and should_skip(0.05, 0.0, rng) and should_skip(1.0, 0.0, rng)
    assert not should_skip(0.99, 1.0, rng)
    gen = np.random.default_rng(1)
    probed = sum(not should_skip(0.99, 0.1, gen) for _ in range(10_000))
    assert 880 <= probed <= 1120  # Binomial(10_000, 0.1): ± 4 sd
    with pytest.raises(ConfigError):
        should_skip(0.99, 1.5, rng)


def test_brier_and_ece_by_hand():
    pred, obs = [0.9, 0.8, 0.2, 0.1], [1.0, 0.6, 0.0, 0.4]
    assert brier_score(pred, obs) == pytest.approx((0.01 + 0.04 + 0.04 + 0.09) / 4)
    # two bins: [0, 0.5) holds 0.2, 0.1 (mean 0.15 vs 0.2); [0.5, 1] holds 0.9, 0.8 (0.85 vs 0.8)
    assert expected_calibration_error(pred, obs, bins=2) == pytest.approx(0.5 * 0.05 + 0.5 * 0.05)
    bins = calibration_bins(pred, obs, bins=2)
    assert [(b.low, b.high, b.count) for b in bins] == [(0.0, 0.5, 2), (0.5, 1.0, 2)]
    report = calibration_report(pred, obs, bins=2)
    assert report.brier_constant == pytest.approx(np.var(obs))
    assert report.skill == pytest.approx(1 - report.brier / report.brier_constant)
    assert calibration_bins([1.0], [1.0], bins=10)[0].low == 0.9
    with pytest.raises(ConfigError):
        brier_score([0.5], [0.5, 0.5])
    with pytest.raises(ConfigError):
        brier_score([1.5], [0.5])


def test_text_features_see_numbers_words_and_topic():
    f = text_features("What is the sum of 12 and 3456?", topic="arithmetic", curriculum=0.7)
    assert f["n_numbers"] == 2.0 and f["log_digits"] == pytest.approx(math.log1p(6))
    assert f["log_max_number"] == pytest.approx(math.log10(3457))
    assert f["op=sum"] == 1.0 and f["topic=arithmetic"] == 1.0 and f["estimate"] == 0.7


def _synthetic(n: int, rng: np.random.Generator):
    """Cases whose text truly sets p: more and longer numbers and harder topics mean lower p."""
    topics = {"arithmetic": 1.0, "algebra": 0.0, "combinatorics": -1.5}
    out = []
    for _ in range(n):
        terms = int(rng.integers(2, 9))
        digits = int(rng.integers(1, 5))
        topic = str(rng.choice(list(topics)))
        nums = [str(int(rng.integers(10 ** (digits - 1), 10**digits))) for _ in range(terms)]
        prompt = f"Compute the sum of {', '.join(nums)}."
        p = 1 / (1 + math.exp(-(4.0 - 0.5 * terms - 0.6 * digits + topics[topic])))
        votes = int(rng.binomial(10, p))
        out.append((prompt, topic, p, votes))
    return out


def test_predictor_beats_a_constant_on_synthetic_cases():
    rng = np.random.default_rng(0)
    train, test = _synthetic(300, rng), _synthetic(200, rng)
    predictor = DifficultyPredictor(min_observations=20, refit_every=25)
    assert predictor.predict("Compute the sum of 1, 2.") is None
    for prompt, topic, _, votes in train:
        predictor.observe(prompt, votes, 10, topic=topic)
    assert predictor.n_observations == 300
    pred = [predictor.predict(prompt, topic=topic) for prompt, topic, _, _ in test]
    observed = [votes / 10 for _, _, _, votes in test]
    constant = [sum(v for *_, v in train) / (10 * len(train))] * len(test)  # out-of-sample baseline
    assert brier_score(pred, observed) < 0.6 * brier_score(constant, observed)
    report = calibration_report(pred, observed)
    assert report.skill > 0.4 and report.ece < 0.08
    # close to the true p, not only to the noisy p̂
    assert np.mean([abs(a - p) for a, (_, _, p, _) in zip(pred, test, strict=True)]) < 0.08


def test_predictor_is_deterministic_and_handles_one_class():
    rows = _synthetic(40, np.random.default_rng(3))
    a, b = DifficultyPredictor(), DifficultyPredictor()
    for prompt, topic, _, votes in rows:
        a.observe(prompt, votes, 10, topic=topic)
        b.observe(prompt, votes, 10, topic=topic)
    assert a.predict(rows[0][0], topic=rows[0][1]) == b.predict(rows[0][0], topic=rows[0][1])
    easy = DifficultyPredictor(min_observations=5)
    for i in range(5):
        easy.observe(f"What is {i} + 1?", 10, 10)
    assert easy.predict("What is 7 + 1?") == pytest.approx(50.5 / 51)  # smoothed pooled rate
    with pytest.raises(ConfigError):
        easy.observe("x", 11, 10)
