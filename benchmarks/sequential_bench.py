"""Benchmark: sequential sampling vs Agent0's fixed k = 10, on simulated targets.

Each simulated case has a known answer distribution: a correct answer with probability
p_correct, the wrong mass split over several wrong answers (Dirichlet), and sometimes an
unparseable share u. Its true majority probability is p* = (1 − u) · max(answer
probabilities), and the truth is "p* in the band" (frontier_qa.probing.sequential defines it). Both
policies read the same pre-drawn sample stream per case (common random numbers): fixed-k
uses the first 10 samples, the sequential policy a prefix. Printed: target calls, band
accuracy against the truth, 3-class accuracy (below / in / above) and the calls ratio, for
several case mixes and policies: the uninformed default prior, and the empirical-Bayes
prior that :func:`fit_prior` refits from the sequential policy's own earlier cases (no
extra calls), with the default and the economy policy. Also printed: in-band recall and
precision, and true frontier cases found per 1,000 calls. The issue's goal: ≤ 40 % of
fixed-k's calls at equal or better band accuracy.

Run: ``python benchmarks/sequential_bench.py [--cases N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace

import numpy as np

from frontier_qa.probing.sequential import SequentialConfig, Verdict, fit_prior, run_sequential, tally

FIXED_K = 10


@dataclass(frozen=True)
class Mix:
    """Shares of case kinds (easy + frontier + hard = 1) and of cases with unparseable output."""

    name: str
    easy: float
    frontier: float
    hard: float
    unparseable: float = 0.1


MIXES = (
    Mix("mostly-easy (80/10/10)", 0.80, 0.10, 0.10),
    Mix("realistic (70/15/15)", 0.70, 0.15, 0.15),

    Mix("balanced (50/25/25)", 0.50, 0.25, 0.25),
    Mix("frontier-heavy (30/50/20)", 0.30, 0.50, 0.20),
)


@dataclass(frozen=True)
class SimCase:
    probs: tuple[float, ...]  # per-sample probability of answer 0 (correct), 1, 2, ...
    u: float  # probability a sample is unparseable
    kind: str

    @property
    def p_star(self) -> float:
        return (1.0 - self.u) * max(self.probs)


def _spread(p_star: float, rng: np.random.Generator, n_min: int, concentration: float) -> list[float]:
    """Split the mass 1 − p* over wrong answers, none above p* (p* stays the majority)."""
    n_wrong = max(n_min, int(np.ceil((1.0 - p_star) / p_star - 1e-9)) + int(rng.integers(0, 3)))
    shares = list((1.0 - p_star) * rng.dirichlet(np.full(n_wrong, concentration)))
    out: list[float] = []
    while shares:  # cap each share at p*, passing the excess on as a further wrong answer
        s = shares.pop()
        out.append(min(s, p_star))
        if s > p_star + 1e-12:
            shares.append(s - p_star)
    return out


def make_cases(mix: Mix, n: int, rng: np.random.Generator) -> list[SimCase]:
    """Draw n cases by their true majority probability (before the unparseable share):
    easy p ∈ [0.95, 1] (1–3 rare wrong answers), frontier p ∈ [0.3, 0.8] (2+ wrong answers),
    hard p ∈ [0.05, 0.2] (answers spread over many wrong options, none more likely than p).
    """
    kinds = rng.choice(["easy", "frontier", "hard"], size=n, p=[mix.easy, mix.frontier, mix.hard])
    cases = []
    for kind in kinds:
        if kind == "easy":
            p, n_min, conc = rng.uniform(0.95, 1.0), int(rng.integers(1, 4)), 1.0
        elif kind == "frontier":
            p, n_min, conc = rng.uniform(0.3, 0.8), int(rng.integers(2, 5)), 1.0
        else:
            p, n_min, conc = rng.uniform(0.05, 0.2), 5, 3.0
        u = float(rng.uniform(0.05, 0.25)) if rng.random() < mix.unparseable else 0.0
        cases.append(SimCase(tuple([float(p), *map(float, _spread(float(p), rng, n_min, conc))]), u, str(kind)))
    return cases


def draw_stream(case: SimCase, n: int, rng: np.random.Generator) -> list[int | None]:
    """N sample labels: an answer index, or None for an unparseable sample."""
    answers = rng.choice(len(case.probs), size=n, p=np.asarray(case.probs) / sum(case.probs))
    return [None if rng.random() < case.u else int(a) for a in answers]


def truth(case: SimCase, band: tuple[float, float]) -> Verdict:
    lo, hi = band
    return Verdict.BELOW if case.p_star < lo else Verdict.ABOVE if case.p_star > hi else Verdict.IN_BAND


def fixed_k_verdict(labels: list[int | None], band: tuple[float, float]) -> Verdict:
    counts, unparseable, _ = tally(labels)
    p_hat = (counts[0] if counts else 0) / (sum(counts) + unparseable)  # Agent0 Eq. 6
    lo, hi = band
    return Verdict.BELOW if p_hat < lo else Verdict.ABOVE if p_hat > hi else Verdict.IN_BAND


@dataclass(frozen=True)
class Result:
    calls: int  # target calls over all cases
    band_accuracy: float  # in band vs out of band, against p*
    class_accuracy: float  # below / in / above, against p*
    recall: float  # of the truly in-band cases, the share classified in band
    precision: float  # of the cases classified in band, the share truly in band
    found_per_1k: float  # truly in-band cases classified in band, per 1,000 target calls


def _score(verdicts: list[Verdict], truths: list[Verdict], calls: int) -> Result:
    said = np.array([v is Verdict.IN_BAND for v in verdicts])
    true = np.array([t is Verdict.IN_BAND for t in truths])
    exact = np.mean([v is t for v, t in zip(verdicts, truths, strict=True)])
    return Result(
        calls,
        float(np.mean(said == true)),
        float(exact),
        float((said & true).sum() / max(true.sum(), 1)),
        float((said & true).sum() / max(said.sum(), 1)),
        float(1000 * (said & true).sum() / max(calls, 1)),
    )


def simulate(
    mix: Mix, n_cases: int, seed: int, config: SequentialConfig, *, empirical_bayes: bool
) -> tuple[Result, Result]:
    """Run fixed-k and the sequential policy on the same cases and sample streams.

    With ``empirical_bayes`` the prior is refit from the sequential policy's own earlier
    cases after 25, 50, 100, 200, ... cases (what a probe run would do; no extra calls).

    Returns:
        (fixed-k result, sequential result).
    """
    rng = np.random.default_rng(seed)
    cases = make_cases(mix, n_cases, rng)
    streams = [draw_stream(c, FIXED_K, rng) for c in cases]
    truths = [truth(c, config.band) for c in cases]
    fixed = _score([fixed_k_verdict(s, config.band) for s in streams], truths, FIXED_K * n_cases)

    seen: list[tuple[tuple[int, ...], int]] = []
    verdicts, calls, refit_at = [], 0, 25
    for i, stream in enumerate(streams):
        if empirical_bayes and i == refit_at:
            config = replace(config, prior=fit_prior(seen))
            refit_at *= 2
        taken = 0

        def sample(n: int, stream: list[int | None] = stream) -> list[int | None]:
            nonlocal taken
            taken += n
            return stream[taken - n : taken]

        decision, labels = run_sequential(sample, config)
        calls += len(labels)
        verdicts.append(decision.verdict)
        counts, unparseable, _ = tally(labels)
        seen.append((counts, unparseable))
    return fixed, _score(verdicts, truths, calls)


POLICIES = (
    ("default prior, default policy", SequentialConfig(), False),
    ("EB prior, default policy", SequentialConfig(), True),
    ("EB prior, economy policy", SequentialConfig.economy(), True),
)


def _row(mix: str, policy: str, result: Result, ratio: float, goal: str = "") -> str:
    r = result
    return (
        f"{mix:26} {policy:30} {r.calls:6d} {ratio:6.3f} {r.band_accuracy:6.3f} {r.class_accuracy:7.3f} "
        f"{r.recall:6.3f} {r.precision:6.3f} {r.found_per_1k:8.1f}  {goal}"
    ).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20250101)
    args = parser.parse_args()
    print(f"{args.cases} cases per mix, seed {args.seed}, fixed k = {FIXED_K}; all scores against p* in the band")
    for name, c, _ in POLICIES:
        print(f"  {name}: band {c.band}, confidence {c.confidence}, k {c.k_min}..{c.k_max}, rounds {c.rounds}")
    header = ("calls", "ratio", "acc", "3-class", "recall", "prec", "found/1k")
    widths = (6, 6, 6, 7, 6, 6, 8)
    print(f"{'mix':26} {'policy':30} " + " ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)), end="")
    print("  goal (ratio ≤ 0.4, acc ≥ fixed)")
    for mix in MIXES:
        for i, (name, config, eb) in enumerate(POLICIES):
            start = time.perf_counter()
            fixed, seq = simulate(mix, args.cases, args.seed, config, empirical_bayes=eb)
            if i == 0:  # same cases and streams for every policy: one fixed-k row per mix
                print(_row(mix.name, "fixed k = 10", fixed, 1.0))
            ratio = seq.calls / fixed.calls
            met = ratio <= 0.4 and seq.band_accuracy >= fixed.band_accuracy
            goal = f"{'met' if met else 'NOT met'} ({time.perf_counter() - start:.1f} s)"
            print(_row("", name, seq, ratio, goal))


if __name__ == "__main__":
    main()
