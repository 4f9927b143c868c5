"""Sequential sampling policy: hand-checked decisions, invariants, and a small benchmark run."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_qa.errors import ConfigError
from frontier_qa.probing._sequential import (
    DEFAULT_PRIOR,
    FAILED,
    BandDecision,
    MajorityPrior,
    SequentialConfig,
    band_posterior,
    decide,
    decide_consistency,
    fit_prior,
    run_sequential,
    tally,
    wilson_interval,
)
from frontier_qa.scoring.consistency import Cluster, Consistency
from tests.factories import load_benchmark

CONFIG = SequentialConfig(k_max=10, rounds=(3, 2))  # band (0.3, 0.8), confidence 0.9, k_min 3, k_max 10, rounds 3, 2, 2, ...


def _sampler(labels):
    it = iter(labels)
    return lambda n: [next(it) for _ in range(n)]


# --- hand-checked decisions -------------------------------------------------------------


def test_agreeing_answers_stop_above_after_two_rounds():
    decision, labels = run_sequential(_sampler(["42"] * 10), CONFIG)
    # Default (uninformed) prior: P(above) = 0.70 after 3 agreeing, 0.84 after 5 (≥ 0.8 for out of band).
    assert decision.verdict is BandDecision.ABOVE
    assert len(labels) == 5 and decision.k == 5 and not decision.forced
    assert decision.p_hat == 1.0
    assert decide([3], config=CONFIG).verdict is BandDecision.CONTINUE
    assert decide([3], config=CONFIG).next_n == 2


def test_five_five_split_is_in_band():
    d = decide([5, 5], config=CONFIG)
    assert d.verdict is BandDecision.IN_BAND and d.p_hat == 0.5 and not d.forced
    assert d.posterior.inside > 0.95


def test_scattered_answers_stop_below():
    decision, labels = run_sequential(_sampler([f"a{i}" for i in range(10)]), CONFIG)
    assert decision.verdict is BandDecision.BELOW and len(labels) == 7


def test_first_decision_asks_for_first_round():
    d = decide([], config=CONFIG)
    assert d.verdict is BandDecision.CONTINUE and d.next_n == 3 and d.k == 0 and d.p_hat == 0.0


def test_round_schedule_is_3_then_2_capped_at_k_max():
    cfg = replace(CONFIG, confidence=0.999)  # never confident: walk the whole schedule
    asked, labels = [], []
    decision = decide([], config=cfg)
    while not decision.stopped:
        asked.append(decision.next_n)
        labels += ["a", "b"][len(labels) % 2 :][:1] * decision.next_n
        decision = decide(*tally(labels), config=cfg)
    assert asked == [3, 2, 2, 2, 1]
    assert decision.forced and decision.k == 10 and "k_max" in decision.reason


def test_posterior_matches_hand_computation_when_every_share_is_a_majority():
    # V ∈ {0.6, 0.9} (both ≥ 0.5, so p* = (1 − u)·V, no Monte-Carlo), θ = 1, u ~ Beta(1, 50).
    # Counts (3,): weight ∝ V³/Γ(3) (the cluster is dominant) + (1 − V)³/((θ+1)(θ+2)) (not).
    prior = MajorityPrior(shares=(0.6, 0.9), thetas=(1.0,), weights=(0.5, 0.5), unparseable=(1.0, 50.0))
    w6 = 0.6**3 / 2 + 0.4**3 / 6
    w9 = 0.9**3 / 2 + 0.1**3 / 6
    p9 = w9 / (w6 + w9)
    # u | data ~ Beta(1, 53): P(u ≤ x) = 1 − (1 − x)^53; above needs u ≤ 1 − 0.8/0.9.
    above = p9 * (1 - (0.8 / 0.9) ** 53)
    below = (1 - p9) * 0.5**53 + p9 * (0.3 / 0.9) ** 53
    post = band_posterior([3], prior=prior)
    assert post.above == pytest.approx(above, abs=1e-9)
    assert post.below == pytest.approx(below, abs=1e-9)
    assert post.inside == pytest.approx(1 - above - below, abs=1e-9)
    assert post.mean == pytest.approx((0.6 * (1 - p9) + 0.9 * p9) * 53 / 54, abs=1e-9)


def test_posterior_matches_brute_force_simulation_of_the_model():
    """Rejection sampling from the generative model: cases whose four samples form (2, 1, 1)."""
    prior = MajorityPrior(shares=(0.2, 0.45), thetas=(1.0, 5.0), weights=(0.25,) * 4, unparseable=(0.5, 20.0))
    rng = np.random.default_rng(7)
    n = 150_000
    v = rng.choice([0.2, 0.45], n)
    theta = rng.choice([1.0, 5.0], n)
    u = rng.beta(0.5, 20.0, n)
    sticks = rng.beta(1.0, theta[:, None], (n, 40))
    pieces = sticks * np.concatenate([np.ones((n, 1)), np.cumprod(1 - sticks, axis=1)[:, :-1]], axis=1)
    probs = np.concatenate([v[:, None], (1 - v)[:, None] * pieces], axis=1)
    p_star = (1 - u) * probs.max(axis=1)
    cum = np.cumsum(probs, axis=1)
    draws = [(rng.random(n)[:, None] < cum).argmax(axis=1) for _ in range(4)]
    parse = [rng.random(n) >= u for _ in range(4)]
    labels = np.stack(draws, axis=1)
    ok = np.all(np.stack(parse, axis=1), axis=1)
    sorted_labels = np.sort(labels, axis=1)
    distinct = 1 + (np.diff(sorted_labels, axis=1) != 0).sum(axis=1)
    # four labels in three clusters is always a (2, 1, 1) partition
    accept = ok & (distinct == 3)
    assert accept.sum() > 40_000
    post = band_posterior([2, 1, 1], band=(0.3, 0.6), prior=prior, draws=8192)
    assert post.below == pytest.approx(np.mean(p_star[accept] < 0.3), abs=0.015)
    assert post.above == pytest.approx(np.mean(p_star[accept] > 0.6), abs=0.015)
    assert 0.01 < post.above < post.below  # both tails exercised
    assert post.mean == pytest.approx(np.mean(p_star[accept]), abs=0.01)


def test_wilson_interval_values():
    lo, hi = wilson_interval(5, 10, level=0.95)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = wilson_interval(10, 10, level=0.9)
    assert hi == 1.0 and lo == pytest.approx(1 / (1 + 1.6448536**2 / 10), abs=1e-6)


def test_unparseable_counts_in_k_and_failed_does_not():
    d = decide([2], n_unparseable=1, n_failed=2, config=CONFIG)
    assert d.k == 3 and d.n_failed == 2 and d.p_hat == pytest.approx(2 / 3)
    # an unparseable sample lowers p*, so P(above) drops against three agreeing answers
    assert d.posterior.above < decide([3], config=CONFIG).posterior.above


def test_failure_budget_forces_a_stop():
    cfg = SequentialConfig(max_failed=2, rounds=(3, 3))  # the counts below are rounds of 3
    d = decide([1], 0, 2, cfg)
    assert d.stopped and d.forced and "failure budget" in d.reason
    decision, labels = run_sequential(_sampler([FAILED] * 5), cfg)
    assert len(labels) == 3 and decision.forced and decision.k == 0


def test_decide_consistency_drops_failed_from_k():
    c = Consistency(
        p_hat=0.4, majority="4", k=5, n_unparseable=0, n_failed=1,
        clusters=(Cluster("4", (0, 1)), Cluster("5", (2,)), Cluster("6", (3,))), tie=False, entropy=1.04,
    )  # fmt: skip
    d = decide_consistency(c, CONFIG)
    assert d.k == 4 and d.p_hat == 0.5 and d == decide([2, 1, 1], 0, 1, CONFIG)


def test_bad_config_and_counts_raise_config_error():
    with pytest.raises(ConfigError):
        SequentialConfig(band=(0.8, 0.3))
    with pytest.raises(ConfigError):
        SequentialConfig(k_min=31)
    with pytest.raises(ConfigError):
        SequentialConfig(confidence=0.4)
    with pytest.raises(ConfigError):
        decide([-1, 2])
    with pytest.raises(ConfigError):
        run_sequential(lambda n: ["a"], CONFIG)  # asked for 3, got 1


def test_fit_prior_learns_that_a_target_is_mostly_easy():
    history = [((10,), 0)] * 40 + [((9, 1), 0)] * 10 + [((5, 3, 2), 0)] * 5
    prior = fit_prior(history)
    assert band_posterior([3], prior=prior).above > 0.95 > band_posterior([3]).above
    assert prior.unparseable[0] / sum(prior.unparseable) < 0.01  # never saw an unparseable answer
    assert fit_prior([]) == DEFAULT_PRIOR


# --- properties -------------------------------------------------------------------------

partitions = st.lists(st.integers(1, 6), min_size=0, max_size=6).map(lambda c: tuple(sorted(c, reverse=True)))


@settings(max_examples=60, deadline=None)
@given(counts=partitions, unparseable=st.integers(0, 2), failed=st.integers(0, 3), k_min=st.integers(1, 6))
def test_never_stops_before_k_min_nor_runs_past_k_max(counts, unparseable, failed, k_min):
    cfg = SequentialConfig(k_min=k_min, max_failed=4, k_max=10, rounds=(3, 2))
    d = decide(counts, unparseable, failed, cfg)
    k = sum(counts) + unparseable
    if k < k_min and failed < 4:
        assert d.verdict is BandDecision.CONTINUE
    if d.stopped:
        assert d.next_n == 0
    else:
        assert 1 <= d.next_n and k + d.next_n <= cfg.k_max
    assert k < cfg.k_max or d.stopped


@settings(max_examples=60, deadline=None)
@given(counts=partitions, unparseable=st.integers(0, 2))
def test_wilson_interval_contains_p_hat(counts, unparseable):
    d = decide(counts, unparseable, 0, CONFIG)
    lo, hi = d.interval
    assert 0.0 <= lo <= d.p_hat <= hi <= 1.0
    c_lo, c_hi = d.posterior.credible
    assert 0.0 <= c_lo <= d.posterior.mean <= c_hi <= 1.0
    assert math.isclose(d.posterior.below + d.posterior.inside + d.posterior.above, 1.0, abs_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(counts=partitions.filter(bool), unparseable=st.integers(0, 2))
def test_another_vote_for_the_majority_moves_the_posterior_up(counts, unparseable):
    before = band_posterior(counts, unparseable)
    after = band_posterior((counts[0] + 1, *counts[1:]), unparseable)
    assert after.above >= before.above - 1e-4
    assert after.below <= before.below + 1e-4
    if counts[0] / (sum(counts) + unparseable) > CONFIG.band[1]:  # p̂ above the band already
        assert after.inside <= before.inside + 1e-4
    # and a new singleton answer never makes "above" more likely
    assert band_posterior((*counts, 1), unparseable).above <= before.above + 1e-4


@settings(max_examples=40, deadline=None)
@given(labels=st.lists(st.sampled_from(["a", "b", "c", None, FAILED]), max_size=10), seed=st.integers(0, 99))
def test_decision_ignores_the_order_of_answers(labels, seed):
    shuffled = list(labels)
    random.Random(seed).shuffle(shuffled)
    relabelled = [{"a": "c", "b": "a", "c": "b"}.get(x, x) if isinstance(x, str) else x for x in shuffled]
    assert decide(*tally(labels), config=CONFIG) == decide(*tally(relabelled), config=CONFIG)


@settings(max_examples=30, deadline=None)
@given(labels=st.lists(st.sampled_from(["a", "a", "a", "b", "c", None, FAILED]), min_size=25, max_size=25))
def test_run_sequential_respects_budgets(labels):
    cfg = replace(CONFIG, max_failed=3)
    decision, drawn = run_sequential(_sampler(labels), cfg)
    counts, unparseable, failed = tally(drawn)
    assert decision.stopped
    assert sum(counts) + unparseable <= cfg.k_max and failed <= 3 + max(cfg.rounds)
    assert decision.forced or sum(counts) + unparseable >= cfg.k_min


# --- the benchmarks' scripted mixes, small -----------------------------------------------


def test_frontier_labels_are_mostly_right_on_a_scattered_mix_and_cost_less_than_fixed_k(tmp_path):
    """120 frontier-heavy cases (scatter, ties, unparseable answers) through the real engine.

    benchmarks/calibration_bench.py measures this at scale (≥ 90 % of frontier labels truly
    in band); here, at 120 cases, a precision of 0.8 and fewer calls than fixed k = 10 are
    far enough from chance (fixed k's precision on this mix is about 0.8) to fail on a
    regression of the posterior.
    """
    import asyncio

    from frontier_qa.probing import ProbeSettings, probe
    from frontier_qa.probing._set_labels import Labelling
    from frontier_qa.probing._validation import Validator
    from frontier_qa.store._case_store import CaseStore
    from frontier_qa.testing import ScriptedAdapter, case, open_scripted, static_curriculum

    mixes = load_benchmark("mixes")
    sims = {c.id: c for c in mixes.make_cases("frontier-heavy", 120, 5)}
    adapter = ScriptedAdapter(lambda c, i: mixes.draw(sims[c.id].answers, 5, c.id, i))
    cases = static_curriculum([case(s.id, f"Scripted task {s.id}?", reference=mixes.RIGHT) for s in sims.values()])
    # at most 10 samples (the calibrated policy's 30 pay more than fixed k on this mix, for recall)
    at_most_10 = ProbeSettings(replay_first=False, max_candidates=None, k=10, sequential=SequentialConfig(rounds=(3, 2)),
                               labels=Labelling(mode="set"))
    result = asyncio.run(probe(open_scripted(adapter), cases, at_most_10,
                               store=CaseStore(tmp_path), validator=Validator(dedupe_threshold=None)))
    frontier = [r for r in result.records if r.case_class.value == "frontier"]
    right = sum(sims[r.id].truth == "in" for r in frontier)
    assert len(frontier) >= 20 and right / len(frontier) >= 0.8
    assert adapter.samples < 10 * len(sims)
    for record in result.records:  # a label's side is its posterior's leaning, confidently unless unresolved
        post = record.case.metadata["band_posterior"]
        unreadable = (record.reason or "").startswith("could not judge")  # most answers unparseable: not judged
        assert unreadable or post["forced"] == (record.case_class.value == "unresolved")
        if record.case_class.value == "frontier":  # set-level labels: each at least the floor ...
            assert post["inside"] >= at_most_10.labels.floor and post["verdict"] == "in_band"
    # ... and the set's expected share of wrong labels at most alpha (the ledger's promise)
    insides = [r.band_inside for r in frontier]
    assert sum(1 - x for x in insides if x is not None) <= at_most_10.labels.alpha * len(frontier) + 1e-3


def test_all_unparseable_samples_are_not_called_in_band() -> None:
    # The unparseable prior must not outweigh the data: six samples with no answer say the
    # top answer's share is low (Beta(0.1, 10) said P(in band) = 0.67 here, which made a "frontier").
    post = band_posterior((), 6)
    assert post.below > post.inside
    decision = decide((), 6, 0, SequentialConfig(k_max=6))
    assert decision.verdict is BandDecision.BELOW
    # and one answer among five unparseable is still below, not in band
    assert decide((1,), 5, 0, SequentialConfig(k_max=6)).verdict is BandDecision.BELOW


# --- the scatter rest model, forced stops, named policies --------------------------------


def test_scatter_posterior_matches_brute_force_simulation_of_the_model():
    """Rejection sampling when the other answers are Dirichlet(α = 2) over m = 5: cases showing (2, 1, 1)."""
    prior = MajorityPrior(shares=(0.2, 0.45), thetas=(), weights=(0.5, 0.5), unparseable=(0.5, 20.0),
                          scatter=((2.0, 5),))
    rng = np.random.default_rng(11)
    n = 150_000
    v = rng.choice([0.2, 0.45], n)
    u = rng.beta(0.5, 20.0, n)
    probs = np.concatenate([v[:, None], (1 - v)[:, None] * rng.dirichlet(np.full(5, 2.0), n)], axis=1)
    p_star = (1 - u) * probs.max(axis=1)
    cum = np.cumsum(probs, axis=1)
    labels = np.stack([(rng.random(n)[:, None] < cum).argmax(axis=1) for _ in range(4)], axis=1)
    ok = np.all(np.stack([rng.random(n) >= u for _ in range(4)], axis=1), axis=1)
    distinct = 1 + (np.diff(np.sort(labels, axis=1), axis=1) != 0).sum(axis=1)
    accept = ok & (distinct == 3)
    assert accept.sum() > 40_000
    post = band_posterior([2, 1, 1], band=(0.3, 0.4), prior=prior, draws=8192)
    assert post.below == pytest.approx(np.mean(p_star[accept] < 0.3), abs=0.015)
    assert post.above == pytest.approx(np.mean(p_star[accept] > 0.4), abs=0.015)
    assert 0.05 < post.above and 0.05 < post.below
    assert post.mean == pytest.approx(np.mean(p_star[accept]), abs=0.01)


def test_even_scatter_is_not_read_as_a_leader():
    # Ten answers near 0.1 each can show (4, 3, 2, 2, 1) in 12: the scatter model shrinks the 4
    # towards the others, a DP-only prior takes it at face value.
    dp_only = MajorityPrior.jeffreys(scatter=())
    scattered = fit_prior([((2, 2, 1, 1, 1, 1, 1, 1, 1, 1), 0)] * 30)
    assert band_posterior((4, 3, 2, 2, 1), prior=scattered).inside < band_posterior((4, 3, 2, 2, 1), prior=dp_only).inside


def test_forced_stop_keeps_the_leaning_but_is_never_in_band():
    cfg = SequentialConfig(k_max=4, confidence=0.99)
    d = decide([2, 2], config=cfg)
    assert d.stopped and d.forced and d.verdict is BandDecision.IN_BAND and not d.in_band
    assert "undecided, leaning in band" in d.reason
    assert decide([5, 5], config=CONFIG).in_band  # a confident stop is


def test_out_of_band_confidence_is_asymmetric():
    strict = SequentialConfig(confidence_out=0.95)
    assert decide([5], config=CONFIG).verdict is BandDecision.ABOVE  # 0.84 ≥ 0.8
    assert decide([5], config=strict).verdict is BandDecision.CONTINUE
    assert SequentialConfig(confidence_out=None).out_confidence == 0.9
    with pytest.raises(ConfigError, match="confidence_out"):
        SequentialConfig(confidence_out=1.0)


def test_named_policies():
    from frontier_qa.probing._sequential import DEFAULT_POLICY, POLICIES, policy

    assert DEFAULT_POLICY in POLICIES and policy("fixed").sequential is None and policy("fixed").k == 10
    assert policy("calibrated").sequential == SequentialConfig()  # the class defaults are the default policy
    from frontier_qa.probing import ProbeSettings

    assert ProbeSettings().k == policy("calibrated").k == 30
    for p in POLICIES.values():
        assert p.sequential is None or p.sequential.confidence >= 0.9  # a frontier always needs 90 %
    with pytest.raises(ConfigError, match="calibrated, economy, thorough, fixed"):
        policy("cheap")


def test_prior_round_trips_through_json():
    prior = fit_prior([((3,), 0), ((2, 1), 1)])
    assert MajorityPrior.from_json(prior.to_json()) == prior
    with pytest.raises(ConfigError, match="not a MajorityPrior"):
        MajorityPrior.from_json({"shares": [0.5]})


def test_the_bound_benchmark_labels_the_largest_set_with_the_target_precision() -> None:
    """benchmarks/policy_bound.py's set rule: the longest prefix by P(in band) whose mean is ≥ 0.9."""
    module = load_benchmark("policy_bound")
    # prefixes' mean errors: 0.01, 0.03, 0.087, 0.165 -> the first three; order does not matter
    assert module.labelled_as_set([0.6, 0.99, 0.8, 0.95, 0.4]) == {1, 2, 3}
    assert module.labelled_as_set([0.85, 0.85]) == set()  # each alone misses 0.9
    assert module.labelled_as_set([1.0, 0.45, 1.0, 1.0, 1.0, 1.0]) == {0, 2, 3, 4, 5}  # never below 0.5
