"""Benchmark: finding path scatter — what sampling the path to a decision costs and buys.

An agent can agree on its answer while it takes different paths to it (a tool picked at random
between two). frontier-qa decides a case's *path* with the same sequential band rule as its
answers (``probing.path``, issue 32): the majority path's share p*_path against the band. This
benchmark simulates agents whose answer and path distributions are known, so every label is
checked against the truth (scatter: p*_path at or below the band's top, 0.8).

Kinds of case (each sample draws its answer and its path independently, common random numbers
for every policy):

* ``stable``: one path with probability U(0.9, 1), the rest on 1–2 others;
* ``two-way``: the top path U(0.45, 0.75), the second takes the rest (a tool chosen at random);
* ``multi``: the top path U(0.25, 0.6), the rest on 2–4 others;
* answers: 80 % of cases stable (right with U(0.9, 1)), 20 % in the band (U(0.3, 0.8)).

Mix: 55 % stable, 30 % two-way, 15 % multi. Three ways to judge the path, compared in one run:

* **A. on the answers' samples** (``probing.path.sample: false``): sampling stops when the
  answers are decided; the path is decided on those samples, or left undecided;
* **B. sampled to a decision** (the default): rounds go on until the path is decided too (k_max 30);
* **C. fixed k = 8** (pass^k's default k): every case 8 times, scatter when the path's p̂ < 0.8.

Printed per policy: scatter recall and precision against the truth, the share left undecided, and
calls per case as a ratio to C's. Run (seconds)::

    python benchmarks/path_bench.py [--cases 400] [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from mixes import draw  # noqa: E402

from frontier_qa.probing._posterior import DEFAULT_PRIOR  # noqa: E402
from frontier_qa.probing._sequential import POLICIES, BandDecision, Decision, SequentialConfig, decide, tally  # noqa: E402

HIGH = 0.8
KINDS = {"stable": 0.55, "two-way": 0.30, "multi": 0.15}
FIXED_K = 8


@dataclass(frozen=True)
class PathCase:
    """A simulated case: its answer and path distributions."""

    id: str
    kind: str
    answers: tuple[tuple[str, float], ...]
    paths: tuple[tuple[str, float], ...]

    @property
    def scatter(self) -> bool:
        """The truth: the majority path's probability is at or below the band's top."""
        return max(p for _, p in self.paths) <= HIGH


def _split(rng: np.random.Generator, top: float, others: int, prefix: str) -> tuple[tuple[str, float], ...]:
    rest = rng.dirichlet([2.0] * others) * (1.0 - top)
    return ((f"{prefix}0", top), *((f"{prefix}{i + 1}", float(p)) for i, p in enumerate(rest)))


def make_cases(n: int, seed: int) -> list[PathCase]:
    """``n`` cases of the mix, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(list(KINDS), size=n, p=list(KINDS.values()))
    cases = []
    for i, kind in enumerate(kinds):
        if kind == "stable":
            paths = _split(rng, rng.uniform(0.9, 1.0), int(rng.integers(1, 3)), "path")
        elif kind == "two-way":
            paths = _split(rng, rng.uniform(0.45, 0.75), 1, "path")
        else:
            paths = _split(rng, rng.uniform(0.25, 0.6), int(rng.integers(2, 5)), "path")
        right = rng.uniform(0.9, 1.0) if rng.random() < 0.8 else rng.uniform(0.3, 0.8)
        cases.append(PathCase(f"c{seed}-{i}", str(kind), _split(rng, right, 2, "answer"), paths))
    return cases


def _decision(labels: Sequence[str], config: SequentialConfig) -> Decision:
    counts, unparseable, failed = tally(labels)
    return decide(counts, unparseable, failed, config)


def _scatter(decision: Decision) -> bool | None:
    """The path finding of a decision: scatter, stable, or ``None`` (undecided)."""
    if decision.verdict is BandDecision.CONTINUE or decision.forced:
        return None
    return decision.verdict in (BandDecision.IN_BAND, BandDecision.BELOW)


def probe(case: PathCase, config: SequentialConfig, stream: int, *, sample_path: bool) -> tuple[bool | None, int]:
    """One case sampled in rounds: its path finding and the samples it took."""
    path_config = replace(config, prior=DEFAULT_PRIOR)
    answers: list[str] = []
    paths: list[str] = []
    for i in itertools.count():
        if i >= config.k_max:
            break
        if answers and len(answers) >= config.k_min:
            answers_done = _decision(answers, config).stopped
            path_done = not sample_path or _decision(paths, path_config).stopped
            if answers_done and path_done:
                break
        answers.append(str(draw(case.answers, stream, case.id, i)))
        paths.append(str(draw(case.paths, stream, case.id + "/path", i)))
    return _scatter(_decision(paths, path_config)), len(paths)


def fixed(case: PathCase, stream: int) -> bool:
    """pass^k's fixed k: scatter when the path's p̂ of 8 samples is below the band's top."""
    counts, _, _ = tally(draw(case.paths, stream, case.id + "/path", i) for i in range(FIXED_K))
    return counts[0] / FIXED_K < HIGH


@dataclass
class Tally:
    found: int = 0
    labelled: int = 0
    undecided: int = 0
    calls: int = 0

    def line(self, name: str, truly: int, n: int, fixed_calls: int) -> str:
        recall = self.found / max(truly, 1)
        precision = self.found / max(self.labelled, 1)
        return (f"  {name:<28} recall {recall:.3f}  precision {precision:.3f}  undecided {self.undecided / n:5.1%}"
                f"  calls {self.calls / n:5.2f}/case = {self.calls / fixed_calls:.2f}x fixed k={FIXED_K}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    began = time.perf_counter()
    config = POLICIES["calibrated"].sequential
    assert config is not None
    print(f"path scatter: {len(args.seeds)} seeds x {args.cases} cases, calibrated policy (k_max {config.k_max})")
    for seed in args.seeds:
        cases = make_cases(args.cases, seed)
        truly = sum(c.scatter for c in cases)
        results = {"A on the answers' samples": Tally(), "B sampled to a decision": Tally(),
                   f"C fixed k = {FIXED_K}": Tally()}
        for case in cases:
            for name, sample_path in (("A on the answers' samples", False), ("B sampled to a decision", True)):
                finding, calls = probe(case, config, seed, sample_path=sample_path)
                t = results[name]
                t.calls += calls
                t.undecided += finding is None
                t.labelled += bool(finding)
                t.found += bool(finding) and case.scatter
            t = results[f"C fixed k = {FIXED_K}"]
            scatter = fixed(case, seed)
            t.calls += FIXED_K
            t.labelled += scatter
            t.found += scatter and case.scatter
        print(f"seed {seed}: {truly} of {len(cases)} cases truly scatter")
        for name, t in results.items():
            print(t.line(name, truly, len(cases), FIXED_K * len(cases)))
    print(f"({time.perf_counter() - began:.1f} s)")


if __name__ == "__main__":
    main()
