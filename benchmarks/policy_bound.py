"""Benchmark: what the best-informed calibrated labeller could reach on the benchmark mixes — a bound, not a policy.

The project's goals ask for two things at once on the mixes of :mod:`benchmarks.mixes`: frontier labels that
hold up (≥ 90 % confirmed, i.e. calibrated at the default confidence 0.9) and, against Agent0's
fixed k = 10, at most 0.5× its calls on the realistic mix (0.7× on the others) with in-band recall
no worse than fixed k's − 3 points. ``sequential_bench.py`` and ``policy_sweep.py`` show that no
named policy does both. This script asks whether *any* labeller of the same kind could, by giving
it what no real probe has: the **exact population prior** of the mix (the grid prior of
``frontier_qa.probing._posterior`` fitted to 600 other cases of the mix, 40 samples each), so the
posterior P(p* in band) it labels with is as good as the evidence allows.

* **A. Every case sampled K times, labelled as a set**: sort the cases by P(in band) and label
  frontier the largest prefix whose mean P(in band) is ≥ 0.9 (expected share of wrong frontier
  labels ≤ 10 %, the most permissive calibrated rule; each label needs P(in band) ≥ 0.5). Recall,
  precision against the exact p*, calls = K / 10.
* **B. Only the truly in-band cases, sampled sequentially** (rounds of 2, stopped at
  P(in band) ≥ c or P(below / above) ≥ 0.95 or k_max) with the exact prior: the calls these cases
  alone take, as a share of fixed k's calls on *all* cases, and the share found. Every other case
  is free here, and the labeller is told which cases to sample: a lower bound on any policy's
  calls for that recall.
* **C. The oracle-prior labeller** (issue 33): the best labeller of a small family given the exact
  prior, chosen on the tuning seeds and scored on the held-out ones (:data:`mixes.TUNING_SEEDS`,
  :data:`mixes.HELD_OUT_SEEDS`). The family: rounds of 1 or 2 samples, the in-band confidence,
  the out-of-band confidence and k_max on a grid (:data:`ORACLE_FAMILY`), each with per-case labels
  (stopped in band at the confidence) or set labels (after the run, the largest set by P(in band)
  whose mean posterior error is ≤ alpha, :data:`ALPHAS`). Every labeller with precision ≥ 0.9 on
  the tuning seeds is a candidate; the recall-vs-calls frontier of the candidates (tuning seeds)
  picks one labeller per call budget, scored on the held-out seeds. ``sequential_bench.py`` reads
  the oracle's held-out recall at each policy's own calls off this frontier.

Run (about a minute for A and B on 2 cores, about three more of CPU for C)::

    python benchmarks/policy_bound.py [--cases 100] [--seeds 1 2 3]
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from mixes import HELD_OUT_SEEDS, MIXES, TUNING_SEEDS, draw, make_cases, mix_arguments  # noqa: E402
from policy_sweep import fixed_in_band, sequential  # noqa: E402

from frontier_qa.probing._posterior import MajorityPrior, band_posterior, fit_prior  # noqa: E402
from frontier_qa.probing._sequential import SequentialConfig, tally  # noqa: E402

ORACLE_STREAM, ORACLE_CASES, ORACLE_K = 999, 600, 40
TARGET_PRECISION = 0.9


def oracle_prior(mix: str) -> MajorityPrior:
    """The mix's population prior, fitted to cases and samples no measurement below uses."""
    cases = make_cases(mix, ORACLE_CASES, ORACLE_STREAM)
    observed = [tally(draw(c.answers, ORACLE_STREAM, c.id, i) for i in range(ORACLE_K))[:2] for c in cases]
    return fit_prior(observed, smoothing=1.0)


def labelled_as_set(inside: list[float], alpha: float = 1 - TARGET_PRECISION) -> set[int]:
    """Indices of the largest prefix (by P(in band)) whose mean posterior error 1 − P(in band) is ≤ ``alpha``."""
    chosen: set[int] = set()
    error = 0.0
    for rank, i in enumerate(sorted(range(len(inside)), key=lambda j: -inside[j])):
        if inside[i] < 0.5 or (error + 1 - inside[i]) / (rank + 1) > alpha + 1e-12:
            break
        error += 1 - inside[i]
        chosen.add(i)
    return chosen


def recall_precision(said: list[bool], truth: list[bool]) -> tuple[float, float]:
    """Share of the truly in-band cases labelled in band, and share of the labels truly in band."""
    hits = sum(s and t for s, t in zip(said, truth, strict=True))
    return hits / max(sum(truth), 1), hits / max(sum(said), 1)


def part_a(mix: str, prior: MajorityPrior, seeds: list[int], n: int, ks: list[int]) -> None:
    fixed: list[tuple[float, float]] = []
    rows: dict[int, list[tuple[float, float]]] = {k: [] for k in ks}
    for seed in seeds:
        cases = make_cases(mix, n, seed)
        truth = [c.truth == "in" for c in cases]
        fixed.append(recall_precision([fixed_in_band(c, seed) for c in cases], truth))
        drawn = [[draw(c.answers, seed, c.id, i) for i in range(max(ks))] for c in cases]  # K = 10 is 20's prefix
        for k in ks:
            inside = [band_posterior(*tally(labels[:k])[:2], prior=prior).inside for labels in drawn]
            chosen = labelled_as_set(inside)
            rows[k].append(recall_precision([i in chosen for i in range(len(cases))], truth))
    f_rec = statistics.fmean(r for r, _ in fixed)
    print(f"| {mix} | fixed k = 10, p̂ in band | 1.00 | {f_rec:.3f} | {statistics.fmean(p for _, p in fixed):.3f} | |")
    for k in ks:
        rec = statistics.fmean(r for r, _ in rows[k])
        precision = statistics.fmean(p for _, p in rows[k])
        meets = "yes" if rec >= f_rec - 0.03 else "no"
        print(f"| {mix} | exact prior, K = {k}, set labels | {k / 10:.2f} | {rec:.3f} | {precision:.3f} | {meets} |")


def part_b(mix: str, prior: MajorityPrior, seeds: list[int], n: int) -> None:
    for confidence, k_max in ((0.8, 30), (0.9, 30), (0.9, 60), (0.9, 100)):
        config = SequentialConfig(confidence=confidence, confidence_out=0.95, k_min=2, k_max=k_max, rounds=(2, 2),
                                  prior=prior)
        calls = total = inside = found = 0
        for seed in seeds:
            for case in make_cases(mix, n, seed):
                total += 1
                if case.truth != "in":
                    continue
                inside += 1
                decision, drawn = sequential(case, config, seed)
                calls += len(drawn)
                found += decision.in_band
        print(f"| {mix} | P(in band) ≥ {confidence}, k_max {k_max} | {calls / (10 * total):.2f} | "
              f"{found / max(inside, 1):.3f} |")


# --- C. the oracle-prior labeller (issue 33) ---------------------------------------------------

ALPHAS = (0.03, 0.05, 0.075, 0.1)
ORACLE_FAMILY = tuple(
    SequentialConfig(confidence=inside, confidence_out=out, k_min=size, k_max=k_max, rounds=(size,))
    for size, inside, out, k_max in itertools.product(
        (1, 2), (0.7, 0.8, 0.85, 0.9, 0.95, 0.975), (0.8, 0.9, 0.95), (10, 20, 30, 40))
)


@dataclass(frozen=True)
class Stop:
    """One case under one configuration: its calls, whether it stopped in band, its last P(in band), its truth."""

    calls: int
    in_band: bool
    inside: float
    truth: bool


@dataclass(frozen=True)
class Point:
    """A labeller on some seeds, pooled: calls as a share of fixed k = 10's, recall and precision against p*."""

    calls: float
    recall: float
    precision: float


@dataclass(frozen=True)
class Labeller:
    """A configuration of :data:`ORACLE_FAMILY` and its labels: per case (``alpha=None``) or as a set."""

    config: SequentialConfig
    alpha: float | None

    @property
    def name(self) -> str:
        c = self.config
        labels = "per-case labels" if self.alpha is None else f"set labels, alpha {self.alpha}"
        return f"rounds of {c.rounds[0]}, in {c.confidence}, out {c.confidence_out}, k_max {c.k_max}, {labels}"


def stops(mix: str, prior: MajorityPrior, seed: int, n: int) -> list[list[Stop]]:
    """Every configuration of :data:`ORACLE_FAMILY` on one seed's cases.

    The cases are the outer loop so that a case's posteriors stay in the posterior cache across configurations.
    """
    runs: list[list[Stop]] = [[] for _ in ORACLE_FAMILY]
    for case in make_cases(mix, n, seed):
        for run, config in zip(runs, ORACLE_FAMILY, strict=True):
            decision, drawn = sequential(case, replace(config, prior=prior), seed)
            run.append(Stop(len(drawn), decision.in_band, decision.posterior.inside, case.truth == "in"))
    return runs


def labelled(run: Sequence[Stop], alpha: float | None) -> list[bool]:
    """Per-case labels (stopped in band at the confidence), or the run's set at mean posterior error ≤ alpha."""
    if alpha is None:
        return [s.in_band for s in run]
    chosen = labelled_as_set([s.inside for s in run], alpha)
    return [i in chosen for i in range(len(run))]


def pooled(runs: Sequence[Sequence[Stop]], alpha: float | None) -> Point:
    """One labeller's runs (one per seed) pooled: each run is labelled on its own, then the counts are added."""
    said = [label for run in runs for label in labelled(run, alpha)]
    truth = [s.truth for run in runs for s in run]
    recall, precision = recall_precision(said, truth)
    return Point(sum(s.calls for run in runs for s in run) / (10 * len(truth)), recall, precision)


@dataclass(frozen=True)
class Frontier:
    """The tuning seeds' recall-vs-calls frontier of the calibrated labellers, each with its held-out score."""

    chosen: tuple[tuple[str, Point, Point], ...]  # (labeller, tuning, held-out), cheapest first

    def recall_at(self, calls: float) -> float:
        """Held-out recall of the labeller the tuning seeds pick for ``calls`` (a share of fixed k's), interpolated.

        Linear between the frontier's labellers by their tuning calls, from (0, 0) below the cheapest
        and flat above the dearest.
        """
        xs = [0.0, *(t.calls for _, t, _ in self.chosen)]
        ys = [0.0, *(h.recall for _, _, h in self.chosen)]
        return float(np.interp(calls, xs, ys))


def frontier(candidates: Sequence[tuple[str, Point, Point]], precision: float = TARGET_PRECISION) -> Frontier:
    """The candidates with tuning precision ≥ ``precision`` that no cheaper one beats on tuning recall."""
    chosen: list[tuple[str, Point, Point]] = []
    for name, tuning, held_out in sorted(candidates, key=lambda c: (c[1].calls, -c[1].recall)):
        if tuning.precision >= precision and (not chosen or tuning.recall > chosen[-1][1].recall):
            chosen.append((name, tuning, held_out))
    return Frontier(tuple(chosen))


def oracle_frontier(mix: str, n: int, tuning: Sequence[int] = TUNING_SEEDS,
                    held_out: Sequence[int] = HELD_OUT_SEEDS) -> Frontier:
    """Part C for one mix: every labeller of the family scored on both seed sets, the tuning frontier kept."""
    prior = oracle_prior(mix)
    by_seed = {seed: stops(mix, prior, seed, n) for seed in (*tuning, *held_out)}
    candidates = []
    for j, config in enumerate(ORACLE_FAMILY):
        for alpha in (None, *ALPHAS):
            label = Labeller(config, alpha).name
            candidates.append((label, pooled([by_seed[s][j] for s in tuning], alpha),
                               pooled([by_seed[s][j] for s in held_out], alpha)))
    return frontier(candidates)


def part_c(mix: str, n: int) -> None:
    for name, tuning, held in oracle_frontier(mix, n).chosen:
        print(f"| {mix} | {name} | {tuning.calls:.2f} / {held.calls:.2f} | {tuning.recall:.3f} / {held.recall:.3f} "
              f"| {tuning.precision:.3f} / {held.precision:.3f} |", flush=True)


def main() -> None:
    args = mix_arguments(__doc__).parse_args()
    began = time.perf_counter()
    priors = {mix: oracle_prior(mix) for mix in MIXES}
    print(f"A. every case K times, exact prior, labelled as a set at ≥ {TARGET_PRECISION:.0%} expected precision "
          f"({args.cases} cases x seeds {args.seeds})\n")
    print("| mix | labeller | calls vs fixed k = 10 | in-band recall | precision (exact p*) "
          "| recall ≥ fixed − 3 points |\n"
          "|---|---|---|---|---|---|")
    for mix in MIXES:
        part_a(mix, priors[mix], args.seeds, args.cases, [10, 20, 30])
    print("\nB. only the truly in-band cases, sampled sequentially with the exact prior (all other cases free)\n")
    print("| mix | stop rule | calls on in-band cases / fixed k's calls on all | share found |\n|---|---|---|---|")
    for mix in MIXES:
        part_b(mix, priors[mix], args.seeds, args.cases)
    print(f"\nC. the oracle-prior labeller: the tuning seeds' frontier of labellers with precision ≥ "
          f"{TARGET_PRECISION:.0%} (tuning seeds {list(TUNING_SEEDS)} / held-out {list(HELD_OUT_SEEDS)})\n")
    print("| mix | labeller | calls vs fixed k = 10 | recall | precision |\n|---|---|---|---|---|")
    for mix in MIXES:
        part_c(mix, args.cases)
    print(f"\n({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
