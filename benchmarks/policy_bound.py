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

Run (about a minute on 2 cores)::

    python benchmarks/policy_bound.py [--cases 100] [--seeds 1 2 3]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from mixes import MIXES, draw, make_cases, mix_arguments  # noqa: E402
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


def labelled_as_set(inside: list[float]) -> set[int]:
    """Indices of the largest prefix (by P(in band)) whose mean P(in band) is ≥ the target precision."""
    chosen: set[int] = set()
    error = 0.0
    for rank, i in enumerate(sorted(range(len(inside)), key=lambda j: -inside[j])):
        if inside[i] < 0.5 or (error + 1 - inside[i]) / (rank + 1) > 1 - TARGET_PRECISION:
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
    print(f"\n({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
