"""Benchmark: what a prior carried over from an earlier run saves, and what a changed target version costs.

In-process, on the fair mixes of :mod:`benchmarks.mixes` (topics drawn apart from the kind), with
the decision rule and sample streams of ``benchmarks/policy_sweep.py`` and the prober's own prior
bookkeeping (:class:`frontier_qa.probing._priors.PriorBook`, :func:`~frontier_qa.probing._priors.carried`):
the default policy, the prior refitted every 10 cases. Each new run probes ``--cases`` cases of a
mix; what it starts from:

* **cold**: nothing (a first run);
* **warm**: an earlier run of ``--earlier`` *other* cases of the same mix, same version;
* **changed version, <rule>**: an earlier run of the same size on another mix, standing for an
  older version of the target (realistic <- frontier-heavy, balanced <- realistic, frontier-heavy
  <- realistic), counted by ``probing.prior_versions`` = ``same`` (left out: exactly cold), ``any``
  or ``discount``;
* **new version, same mix, discount**: a new version that behaves as the old one did (``any`` is
  then exactly warm, ``same`` exactly cold): what the guard gives up;
* **+ topics**: warm with a prior per topic (``prior_topic_min`` 20), on the fair topics (they say
  nothing of difficulty: it must not hurt) and on topics that *are* the kind (the leaky mixes:
  where it should help).

Scored as in ``policy_sweep.py``: calls as a ratio to fixed k = 10 on the same cases, recall and
precision of the frontier label against p* in the band, unresolved share; means over the
tuning seeds 1-3 and, apart, the held-out seeds 4-6.

Run (about 15 minutes on 2 cores)::

    python benchmarks/prior_carry_bench.py [--cases 100] [--earlier 200] [--seeds 1 2 3 4 5 6]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from mixes import HELD_OUT_SEEDS, MIXES, TUNING_SEEDS, SimCase, make_cases, mix_arguments  # noqa: E402
from policy_sweep import REFIT_EVERY, fixed_in_band, sequential  # noqa: E402

from frontier_qa.probing._priors import Observation, PriorBook, carried  # noqa: E402
from frontier_qa.probing._sequential import POLICIES, SequentialConfig, tally  # noqa: E402
from frontier_qa.probing._settings import ProbeSettings  # noqa: E402
from frontier_qa.store._records import PriorVersions  # noqa: E402

OLDER = {"realistic": "frontier-heavy", "balanced": "realistic", "frontier-heavy": "realistic"}
SMOOTHING = ProbeSettings().prior_smoothing
TOPIC_MIN = ProbeSettings().prior_topic_min
EARLIER_SEED = 100  # an earlier run's cases: seed + this (other cases, same mix)


@dataclass(frozen=True)
class Score:
    calls: float
    recall: float
    precision: float
    unresolved: float


def probe(cases: Sequence[SimCase], config: SequentialConfig, book: PriorBook, stream: int
          ) -> tuple[Score, dict[str, Observation]]:
    """One run over ``cases`` as the prober does it: each case with its topic's prior, a refit every 10."""
    if book.observations:
        book.refit()
    fitted = len(book.observations)
    calls = hits = labelled = unresolved = truly = 0
    seen: dict[str, Observation] = {}
    for case in cases:
        decision, labels = sequential(case, replace(config, prior=book.prior_for(case.topic)), stream)
        counts, unparseable, _ = tally(labels)
        seen[case.id] = (counts, unparseable, case.topic)
        book.observe(case.id, seen[case.id])
        if len(book.observations) - fitted >= REFIT_EVERY:
            book.refit()
            fitted = len(book.observations)
        inside, frontier = case.truth == "in", decision.in_band and not decision.forced
        calls += len(labels)
        truly += inside
        hits += frontier and inside
        labelled += frontier
        unresolved += decision.forced
    fixed_calls = 10 * len(cases)
    return Score(calls / fixed_calls, hits / max(truly, 1), hits / max(labelled, 1), unresolved / len(cases)), seen


def fixed(cases: Sequence[SimCase], stream: int) -> Score:
    """Fixed k = 10 (p̂ in the band) on the same streams."""
    truly = sum(c.truth == "in" for c in cases)
    said = [fixed_in_band(c, stream) for c in cases]
    hits = sum(s and c.truth == "in" for s, c in zip(said, cases, strict=True))
    return Score(1.0, hits / max(truly, 1), hits / max(sum(said), 1), 0.0)


def start_from(config: SequentialConfig, earlier: dict[str, Observation], *, same: bool, versions: PriorVersions,
               topic_min: int | None) -> PriorBook:
    """The book a run starts with after ``earlier`` (of this version when ``same``), as the run builds it."""
    found = carried(((i, "1" if same else "0", o) for i, o in earlier.items()), target_id="sim", version="1",
                    start=config.prior, versions=versions, smoothing=SMOOTHING, topic_min=topic_min)
    book = PriorBook(found.start, smoothing=SMOOTHING, topic_min=topic_min)
    book.observations = dict(found.observations)
    return book


def scenarios(mix: str, n: int, n_earlier: int, seed: int, config: SequentialConfig) -> dict[str, Score]:
    """Every start for one mix and seed (see the module docstring)."""
    cases = make_cases(mix, n, seed)
    leaky = [replace(c, topic=c.kind) for c in cases]

    def earlier(of: str, topic_is_kind: bool = False) -> dict[str, Observation]:
        old = make_cases(of, n_earlier, seed + EARLIER_SEED)
        old = [replace(c, topic=c.kind) for c in old] if topic_is_kind else old
        return probe(old, config, PriorBook(config.prior, smoothing=SMOOTHING), seed)[1]

    same_mix, older, same_leaky = earlier(mix), earlier(OLDER[mix]), earlier(mix, True)
    runs: dict[str, Callable[[], Score]] = {
        "fixed k = 10": lambda: fixed(cases, seed),
        "cold": lambda: probe(cases, config, PriorBook(config.prior, smoothing=SMOOTHING), seed)[0],
        "warm": lambda: probe(cases, config, start_from(config, same_mix, same=True, versions="same",
                                                        topic_min=None), seed)[0],
        "warm + topics (fair topics)": lambda: probe(cases, config, start_from(
            config, same_mix, same=True, versions="same", topic_min=TOPIC_MIN), seed)[0],
        "warm (topic = kind)": lambda: probe(leaky, config, start_from(
            config, same_leaky, same=True, versions="same", topic_min=None), seed)[0],
        "warm + topics (topic = kind)": lambda: probe(leaky, config, start_from(
            config, same_leaky, same=True, versions="same", topic_min=TOPIC_MIN), seed)[0],
    }
    for rule in ("any", "discount"):
        runs[f"changed version, {rule}"] = lambda rule=rule: probe(cases, config, start_from(  # type: ignore[misc]
            config, older, same=False, versions=rule, topic_min=None), seed)[0]
    # a new version that behaves like the old one: any is exactly warm here, same exactly cold
    runs["new version, same mix, discount"] = lambda: probe(cases, config, start_from(
        config, same_mix, same=False, versions="discount", topic_min=None), seed)[0]
    return {name: go() for name, go in runs.items()}


def cell(scores: Sequence[Score]) -> str:
    mean = {f: statistics.fmean(getattr(s, f) for s in scores) for f in Score.__dataclass_fields__}
    return f"{mean['calls']:.2f}, {mean['recall']:.3f}, {mean['precision']:.3f}, {mean['unresolved']:.0%}"


def main() -> None:
    parser = mix_arguments(__doc__)
    parser.add_argument("--earlier", type=int, default=200, help="cases of the earlier run")
    parser.add_argument("--mixes", nargs="+", default=list(MIXES), choices=list(MIXES))
    parser.set_defaults(seeds=[*TUNING_SEEDS, *HELD_OUT_SEEDS])
    args = parser.parse_args()
    began = time.perf_counter()
    config = POLICIES["calibrated"].sequential
    assert config is not None
    tuning = [s for s in args.seeds if s in TUNING_SEEDS]
    held = [s for s in args.seeds if s not in TUNING_SEEDS]
    print(f"{args.cases} cases per mix and seed after an earlier run of {args.earlier}; default policy; "
          "cells: calls / fixed k = 10, recall, precision, unresolved; changed version = (no guard) "
          "same: identical to cold")
    for mix in args.mixes:
        by_seed = {seed: scenarios(mix, args.cases, args.earlier, seed, config) for seed in args.seeds}
        print(f"\n{mix} (earlier version: {OLDER[mix]})\n")
        print(f"| start | tuning seeds {tuning} | held-out seeds {held} |\n|---|---|---|")
        for name in by_seed[args.seeds[0]]:
            cells = [cell([by_seed[s][name] for s in group]) if group else "—" for group in (tuning, held)]
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
