"""Benchmark: how far can a calibrated policy trade calls for in-band recall? An in-process sweep.

``benchmarks/sequential_bench.py`` measures the named policies end to end through the CLI
(minutes per row). This sweep runs the same decision rule (:func:`frontier_qa.probing._sequential.decide`
with the population prior refitted every 10 cases, as the probe does) on the same scripted
mixes of :mod:`benchmarks.mixes`, in-process, so that many settings can be compared in a minute:
k_max, round sizes and the out-of-band confidence. Fixed k = 10 (p̂ in the band) runs on the same
sample streams.

Scored against the exact truth (p* in the band), as in ``sequential_bench.py``:

* calls: samples drawn, as a ratio to fixed k = 10 on the same cases;
* recall: share of the truly in-band cases labelled *frontier* (P(in band) ≥ the confidence,
  never a forced stop: ``unresolved`` is not a frontier label);
* precision: share of frontier labels truly in band; unresolved: share of cases forced at k_max.

It answers one question the goals of ``sequential_bench.py`` raise: is there a setting that
labels frontier only at 90 % posterior confidence and reaches fixed k's recall with fewer calls?
(Today's answer, in docs/results.md: no; recall grows with k_max, but stays 0.1–0.3 under fixed
k's while the calls pass it.)

Run (about 2 minutes on 2 cores)::

    python benchmarks/policy_sweep.py [--cases 100] [--seeds 1 2 3]
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from collections.abc import Hashable
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from mixes import BAND, MIXES, SimCase, draw, make_cases, mix_arguments  # noqa: E402

from frontier_qa.probing._sequential import (  # noqa: E402
    POLICIES,
    Decision,
    SequentialConfig,
    fit_prior,
    run_sequential,
    tally,
)

REFIT_EVERY = 10  # ProbeSettings.prior_refit_every
SETTINGS: dict[str, dict[str, object]] = {
    "k_max 10, rounds 3+2": {"k_max": 10, "rounds": (3, 2)},
    "k_max 20, rounds 3+2": {"k_max": 20, "rounds": (3, 2)},
    "k_max 20, rounds 3+3": {"k_max": 20, "rounds": (3, 3)},
    "k_max 30, rounds 3+3": {"k_max": 30, "rounds": (3, 3)},
    "k_max 40, rounds 3+3+4": {"k_max": 40, "rounds": (3, 3, 4)},
    "k_max 30, out 0.7": {"k_max": 30, "rounds": (3, 3), "confidence_out": 0.7},
    "k_max 30, out 0.9": {"k_max": 30, "rounds": (3, 3), "confidence_out": 0.9},
}


@dataclass(frozen=True)
class Result:
    ratio: float
    recall: float
    fixed_recall: float
    precision: float
    unresolved: float


def sequential(case: SimCase, config: SequentialConfig, stream: int) -> tuple[Decision, list[Hashable | None]]:
    """One case sampled in rounds until the policy stops; the decision and the labels drawn."""
    drawn = (draw(case.answers, stream, case.id, i) for i in itertools.count())
    return run_sequential(lambda n: list(itertools.islice(drawn, n)), config)


def fixed_in_band(case: SimCase, stream: int, k: int = 10) -> bool:
    """Agent0's rule: p̂ of k samples in the band."""
    counts, _, _ = tally(draw(case.answers, stream, case.id, i) for i in range(k))
    return BAND[0] <= (counts[0] if counts else 0) / k <= BAND[1]


def run(mix: str, n: int, seed: int, config: SequentialConfig) -> Result:
    """Every case of one mix and seed, the prior refitted every :data:`REFIT_EVERY` cases."""
    start, prior = config.prior, config.prior
    observed: list[tuple[tuple[int, ...], int]] = []
    calls = hits = labelled = unresolved = fixed_hits = truly = 0
    for case in make_cases(mix, n, seed):
        decision, labels = sequential(case, replace(config, prior=prior), seed)
        calls += len(labels)
        counts, unparseable, _ = tally(labels)
        observed.append((counts, unparseable))
        if len(observed) % REFIT_EVERY == 0:
            prior = fit_prior(observed, start=start)
        inside = case.truth == "in"
        frontier = decision.in_band and not decision.forced
        truly += inside
        hits += frontier and inside
        labelled += frontier
        unresolved += decision.forced
        fixed_hits += fixed_in_band(case, seed) and inside
    return Result(calls / (10 * n), hits / max(truly, 1), fixed_hits / max(truly, 1), hits / max(labelled, 1),
                  unresolved / n)


def main() -> None:
    args = mix_arguments(__doc__).parse_args()
    began = time.perf_counter()
    base = POLICIES["calibrated"].sequential
    assert base is not None
    print(f"{args.cases} cases per mix x seeds {args.seeds}; frontier at P(in band) >= {base.confidence}; "
          "calls as a ratio to fixed k = 10; recall: sequential / fixed k = 10")
    print("| setting | " + " | ".join(f"{m}: calls, recall, precision, unresolved" for m in MIXES) + " |")
    print("|---|" + "---|" * len(MIXES))
    for label, overrides in SETTINGS.items():
        config = replace(base, **overrides)  # type: ignore[arg-type]
        cells = []
        for mix in MIXES:
            runs = [run(mix, args.cases, seed, config) for seed in args.seeds]
            mean = {f: statistics.fmean(getattr(r, f) for r in runs) for f in Result.__dataclass_fields__}
            cells.append(f"{mean['ratio']:.2f}, {mean['recall']:.2f} / {mean['fixed_recall']:.2f}, "
                         f"{mean['precision']:.2f}, {mean['unresolved']:.0%}")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    print(f"({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
