"""Benchmark: which sampling and labelling settings should the default policy use? An in-process sweep.

``benchmarks/sequential_bench.py`` measures the named policies end to end through the CLI
(minutes per row). This sweep runs the prober's own decision in-process on the fair mixes of
:mod:`benchmarks.mixes` (topics independent of kind, a noisy difficulty ``hint``), so that many
settings can be compared in minutes, and *chooses* one by measurement: on tuning seeds
(:data:`~mixes.TUNING_SEEDS`), reported on held-out seeds (:data:`~mixes.HELD_OUT_SEEDS`).

What it mirrors of a ``frontier-qa probe`` run over a cases file (batch_size 8, concurrency 8):

* a real :class:`~frontier_qa.probing._case_prober.CaseProber` holds the policy, sizes first
  rounds (``first_round``: a hint near the band merges the first two rounds) and refits the
  population prior (``refit``: from the uninformed start, smoothing 10, after each batch once
  10 new cases came in);
* cases go in batches of 8 sampled side by side: round by round, each case in the batch draws its
  next round and decides (in case order within a round), so the label ledger sees cases in the
  order they stop, as the run's does when rounds take equal time;
* each round: :func:`~frontier_qa.probing._sequential.decide` with the in-band confidence
  ``ledger.threshold(policy.confidence)``, and an in-band stop is labelled frontier only if
  ``ledger.admit`` takes it (else the case samples on): set-level labels
  (:mod:`frontier_qa.probing._set_labels`) or today's per-case rule (``mode="case"``);
* optionally the difficulty predictor: ``DifficultyPredictor`` fitted online, cases predicted
  trivially easy or hopeless skipped (``should_skip``, explore share 0.1), its prediction (or the
  cases file's hint) sizing the first round.

Scored against the exact truth (p* in the band), each figure the mean over seeds:

* calls: samples drawn, as a ratio to fixed k = 10 on the same cases; rounds: sampling rounds per
  case (round trips: the latency a smaller round costs without cross-case batching);
* precision / recall: of the frontier labels against the truly in-band cases (``unresolved`` is
  never a frontier label, a skipped case never labelled); unresolved: share forced at k_max;
* band accuracy: in band vs not, an unresolved case counted by its leaning (fixed k: p̂ in band);
* ×window: recall at matched precision, the setting's recall over fixed k = 10's best p̂ window
  (the window of p̂ values, chosen on the tuning seeds, with the highest recall at precision
  ≥ 0.9; scored on the held-out seeds). Goal: ≥ 1.5× on realistic, ≥ 1.1× on the others.

The choice: on the tuning seeds, among settings with precision ≥ 0.9, unresolved ≤ 20 %, band
accuracy ≥ fixed k − 1 point and calls ≤ today's default on every mix, the highest mean ×window;
settings within one standard error of it (binomial, about 0.05) are tied, and the fewest calls
wins among them. The held-out table then says whether the choice holds.

What it found (100 cases per mix): set-level labels at alpha 0.07 label about as surely as per-case
labels at 0.93 (a case stops as soon as it crosses the threshold, so each label spends about its
own share of the budget and the floor never binds below alpha 0.1); alpha 0.1 breaks 0.9
precision on the tuning seeds. Rounds of 2 then 1 stop each case at the sample that decides it:
8-12 % fewer calls than rounds of 3 at the same precision and recall (rounds of 1 decide the same,
with one more round trip; k_min 1 or 2 alike: no case stops on one sample). Its choice was set
labels (alpha 0.07, floor 0.7) with rounds of 2 then 1, but end to end (``sequential_bench.py``,
the real prober with 8 cases at once) rounds of 2 then 1 dropped frontier precision on the
realistic mix to 0.86 (0.90 with rounds of 3), which this simulator does not reproduce (it scores
0.93 for both): the default kept per-case labels and rounds of 3. Item 5: the curriculum's hint alone
(first-round size) changes calls by under 4 %; the online predictor with the hint as a feature
saves 3-12 % of the calls at equal precision (its skips), without the hint it loses in-band cases
(realistic recall 0.59 -> 0.44): worth it only where cases carry a ``predicted_pass_rate``.

Run (about 10 minutes of one core: 31 minutes under the shared 2-core machine's load; ``--cases 50``
and ``--full`` for the whole grid while exploring)::

    python benchmarks/policy_sweep.py [--cases 100] [--markdown] [--full] [--labels ALPHA FLOOR]
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from mixes import BAND, HELD_OUT_SEEDS, MIXES, TUNING_SEEDS, SimCase, draw, make_cases, mix_arguments  # noqa: E402

from frontier_qa.probing import _sequential  # noqa: E402
from frontier_qa.probing._case_prober import CaseProber  # noqa: E402
from frontier_qa.probing._sequential import (  # noqa: E402
    POLICIES,
    BandDecision,
    Decision,
    SequentialConfig,
    decide,
    run_sequential,
    tally,
)
from frontier_qa.probing._set_labels import Labelling, Ledger  # noqa: E402
from frontier_qa.probing._settings import ProbeSettings  # noqa: E402
from frontier_qa.scoring._difficulty import DifficultyPredictor, should_skip  # noqa: E402

BATCH = 8  # probing.batch_size and concurrency of the end-to-end benchmarks
TARGET_PRECISION = 0.9
TODAY = POLICIES["calibrated"].sequential
assert TODAY is not None
CASE = Labelling(mode="case")


@dataclass(frozen=True)
class Setting:
    """One row of the sweep: a policy, a labelling and where first-round hints come from.

    ``hint``: ``"none"``; ``"curriculum"`` (the cases file's predicted_pass_rate sizes the first
    round); ``"predictor"`` / ``"predictor+hint"`` (the online predictor skips and sizes, without /
    with the cases file's hint as its feature).
    """

    name: str
    config: SequentialConfig
    labelling: Labelling = CASE
    hint: str = "none"


@dataclass(frozen=True)
class Score:
    """Counts of one run (mix, seed, setting) against the truth, or of several added; see the module docstring.

    Ratios are of the pooled counts (all seeds' cases together), as ``sequential_bench.py`` pools them.
    """

    cases: int
    calls: int
    rounds: int
    truly: int
    labelled: int
    hits: int
    forced: int
    right: int
    skipped: int

    def __add__(self, other: Score) -> Score:
        return Score(*(getattr(self, f) + getattr(other, f) for f in Score.__dataclass_fields__))

    @property
    def ratio(self) -> float:
        """Calls as a share of fixed k = 10's on the same cases."""
        return self.calls / (10 * self.cases)

    @property
    def recall(self) -> float:
        return self.hits / max(self.truly, 1)

    @property
    def precision(self) -> float:
        return self.hits / max(self.labelled, 1)

    @property
    def unresolved(self) -> float:
        return self.forced / self.cases

    @property
    def accuracy(self) -> float:
        return self.right / self.cases


@dataclass
class Job:
    """A case being sampled: its samples so far, rounds, last decision and first-round hint."""

    case: SimCase
    hint: float | None
    labels: list[Hashable | None] = field(default_factory=list)
    rounds: int = 0
    decision: Decision | None = None
    frontier: bool = False


def sequential(case: SimCase, config: SequentialConfig, stream: int) -> tuple[Decision, list[Hashable | None]]:
    """One case sampled in rounds until the policy stops, alone (``policy_bound.py``'s part B)."""
    drawn = (draw(case.answers, stream, case.id, i) for i in itertools.count())
    return run_sequential(lambda n: list(itertools.islice(drawn, n)), config)


def memoised(posterior: Callable[..., Any]) -> Callable[..., Any]:
    """``band_posterior`` computed once per (evidence, prior, draws): it is deterministic (seeded)."""
    cache: dict[tuple[Any, ...], Any] = {}

    def once(counts: Sequence[int], n_unparseable: int = 0, **kw: Any) -> Any:
        key = (tuple(counts), n_unparseable, *sorted(kw.items()))
        if key not in cache:
            cache[key] = posterior(counts, n_unparseable, **kw)
        return cache[key]

    return once


def step(job: Job, prober: CaseProber, ledger: Ledger, seed: int) -> None:
    """One round of a case: draw, decide at the ledger's threshold, label if the ledger admits it."""
    policy = prober.policy
    assert policy is not None
    n = prober.first_round(job.hint) if job.decision is None else job.decision.next_n
    job.labels += [draw(job.case.answers, seed, job.case.id, len(job.labels) + i) for i in range(n)]
    job.rounds += 1
    counts, unparseable, _ = tally(job.labels)
    for _ in range(2):  # admit fails only when the threshold moved: decide again at the new one
        at = replace(policy, confidence=ledger.threshold(policy.confidence))
        job.decision = decide(counts, unparseable, 0, at)
        if not job.decision.in_band:
            return
        if ledger.admit(job.decision.posterior.inside, policy.confidence):
            job.frontier = True
            return


def predictor_hint(predictor: DifficultyPredictor | None, case: SimCase, setting: Setting) -> float | None:
    """The prediction of the run's predictor, else the cases file's own (as ``ProbeRun._predict``)."""
    curriculum = case.hint if setting.hint in ("curriculum", "predictor+hint") else None
    if predictor is None:
        return curriculum
    own = predictor.predict(case.row(0)["prompt"], topic=case.topic, curriculum=curriculum)  # type: ignore[arg-type]
    return own if own is not None else curriculum


def run(mix: str, n: int, seed: int, setting: Setting) -> Score:
    """Every case of one mix and seed, in batches as a probe run samples them."""
    prober = CaseProber(ProbeSettings(sequential=setting.config, k=setting.config.k_max), target_id="policy-sweep")
    ledger = Ledger(setting.labelling)
    predictor = DifficultyPredictor() if setting.hint.startswith("predictor") else None
    rng = random.Random(0)  # ProbeRun.rng: random.Random(settings.seed)
    jobs: list[Job] = []
    skipped = 0
    cases = make_cases(mix, n, seed)
    for start in range(0, n, BATCH):
        batch: list[Job] = []
        for case in cases[start:start + BATCH]:
            hint = predictor_hint(predictor, case, setting)
            if predictor is not None and hint is not None and should_skip(hint, 0.1, rng):
                skipped += 1
                continue
            batch.append(Job(case, hint))
        while active := [j for j in batch if j.decision is None or not j.decision.stopped]:
            for job in active:
                step(job, prober, ledger, seed)
        for job in batch:
            counts, unparseable, _ = tally(job.labels)
            prober.observations[job.case.id] = (counts, unparseable)
            if predictor is not None and not (job.decision and job.decision.forced):
                curriculum = job.case.hint if setting.hint == "predictor+hint" else None
                predictor.observe(job.case.row(0)["prompt"], counts[0] if counts else 0, len(job.labels),  # type: ignore[arg-type]
                                  topic=job.case.topic, curriculum=curriculum)
        prober.refit()
        jobs += batch
    return score(jobs, cases, skipped)


def score(jobs: Sequence[Job], cases: Sequence[SimCase], skipped: int) -> Score:
    forced = [j for j in jobs if j.decision is not None and j.decision.forced]
    said_in = {j.case.id for j in jobs if j.frontier} | {
        j.case.id for j in forced if j.decision is not None and j.decision.verdict is BandDecision.IN_BAND}
    return Score(cases=len(cases), calls=sum(len(j.labels) for j in jobs), rounds=sum(j.rounds for j in jobs),
                 truly=sum(c.truth == "in" for c in cases), labelled=sum(j.frontier for j in jobs),
                 hits=sum(j.frontier and j.case.truth == "in" for j in jobs), forced=len(forced),
                 right=sum((c.id in said_in) == (c.truth == "in") for c in cases), skipped=skipped)


# --- fixed k = 10 and its best p̂ window ------------------------------------------------------


def fixed_top(case: SimCase, stream: int, k: int = 10) -> int:
    """Votes of the majority answer among fixed k's k samples (p̂ = top / k, Agent0 Eq. 6)."""
    counts, _, _ = tally(draw(case.answers, stream, case.id, i) for i in range(k))
    return counts[0] if counts else 0


def fixed_in_band(case: SimCase, stream: int, k: int = 10) -> bool:
    """Agent0's rule: p̂ of k samples in the band."""
    return BAND[0] <= fixed_top(case, stream, k) / k <= BAND[1]


def window_score(rows: Sequence[tuple[int, bool]], window: tuple[int, int]) -> tuple[float, float]:
    """Recall and precision of labelling frontier the cases whose majority votes lie in ``window``.

    Args:
        rows: (majority votes of 10, truly in band) per case, every seed's cases pooled.
        window: inclusive (low, high) on the majority votes.
    """
    said = [window[0] <= top <= window[1] for top, _ in rows]
    hits = sum(s and t for s, (_, t) in zip(said, rows, strict=True))
    return hits / max(sum(t for _, t in rows), 1), hits / max(sum(said), 1)


def best_window(rows: Sequence[tuple[int, bool]], k: int = 10) -> tuple[int, int] | None:
    """Fixed k's p̂ window with the highest recall at precision ≥ :data:`TARGET_PRECISION` (ties: the narrowest).

    The definition of ``sequential_bench.best_window``, on vote counts instead of p̂.
    """
    scored = {(lo, hi): window_score(rows, (lo, hi)) for lo in range(k + 1) for hi in range(lo, k + 1)}
    held = [w for w, (recall, precision) in scored.items() if precision >= TARGET_PRECISION and recall > 0]
    return max(held, key=lambda w: (scored[w][0], w[0] - w[1])) if held else None


# --- the sweep ---------------------------------------------------------------------------------


def setting(name: str, labelling: Labelling = CASE, hint: str = "none", **overrides: Any) -> Setting:
    return Setting(name, replace(TODAY, **overrides), labelling, hint)


def settings(labels: Labelling, *, full: bool = False) -> list[Setting]:
    """Today's default, set labels, then rounds, k_min, confidence_out and k_max, per case and with ``labels``.

    ``full``: every alpha x floor and every rounds x k_min pair. The default leaves out the rows the
    full grid found identical to a neighbour: floors 0.6-0.8 at alpha <= 0.07 (the ledger's room
    never reaches 1 - floor), k_min 1 vs 2 and rounds 1+1 vs 2+1 (no case stops on one sample:
    the same decisions, one more round trip).
    """
    tag = f"set a={labels.alpha}/{labels.floor}"
    grid = itertools.product((0.05, 0.07, 0.1), (0.6, 0.7, 0.8)) if full else (
        (0.05, 0.7), (0.07, 0.7), (0.1, 0.7), (0.1, 0.8))
    rows = [setting("today: case labels, rounds 3+3"),
            *(setting(f"set a={alpha} floor={floor}", Labelling("set", alpha, floor)) for alpha, floor in grid)]
    shapes = (((2, 2), 2), ((2, 1), 2), ((2, 1), 1), ((1, 1), 1), ((1, 1), 2)) if full else (
        ((2, 2), 2), ((2, 1), 2), ((1, 1), 1))
    for rounds, k_min in shapes:
        plus = "+".join(map(str, rounds))
        rows.append(setting(f"case, rounds {plus}, k_min {k_min}", rounds=rounds, k_min=k_min))
        if full or rounds == (2, 1):
            rows.append(setting(f"{tag}, rounds {plus}, k_min {k_min}", labels, rounds=rounds, k_min=k_min))
    for out in (0.7, 0.9):
        rows.append(setting(f"case, rounds 2+1, out {out}", rounds=(2, 1), k_min=2, confidence_out=out))
        if full:
            rows.append(setting(f"{tag}, rounds 2+1, out {out}", labels, rounds=(2, 1), k_min=2, confidence_out=out))
    rows.append(setting("case, rounds 2+1, k_max 40", rounds=(2, 1), k_min=2, k_max=40))
    rows.append(setting(f"{tag}, rounds 2+1, k_max 40", labels, rounds=(2, 1), k_min=2, k_max=40))
    return rows


def hint_settings(base: Setting) -> list[Setting]:
    """Item 5: the chosen setting without a hint, with the curriculum's, with the online predictor."""
    return [replace(base, name=f"{base.name} | {hint}", hint=hint)
            for hint in ("curriculum", "predictor", "predictor+hint")]


def measure(rows: Sequence[Setting], n: int, seeds: Sequence[int]) -> dict[str, dict[str, Score]]:
    """Pooled score per setting and mix over ``seeds``."""
    return {row.name: {mix: sum((run(mix, n, seed, row) for seed in seeds[1:]), run(mix, n, seeds[0], row))
                       for mix in MIXES} for row in rows}


@dataclass(frozen=True)
class Fixed:
    """Fixed k = 10 on one mix: its band accuracy and its best p̂ window's recall (tuning, held out)."""

    accuracy: float
    window: tuple[int, int] | None
    window_recall: float
    window_precision: float


def fixed_k(mix: str, n: int, tuning: Sequence[int], seeds: Sequence[int]) -> Fixed:
    """Fixed k = 10's figures on ``seeds``, its window chosen on ``tuning``."""
    def rows(seeds: Sequence[int]) -> list[tuple[int, bool]]:
        return [(fixed_top(c, seed), c.truth == "in") for seed in seeds for c in make_cases(mix, n, seed)]

    window = best_window(rows(tuning))
    scored = rows(seeds)
    recall, precision = window_score(scored, window) if window else (0.0, 0.0)
    band = (round(BAND[0] * 10), round(BAND[1] * 10))
    accuracy = sum((band[0] <= top <= band[1]) == t for top, t in scored) / len(scored)
    return Fixed(accuracy, window, recall, precision)


def admissible(scores: dict[str, Score], today: dict[str, Score], fixed: dict[str, Fixed]) -> bool:
    return all(s.precision >= TARGET_PRECISION and s.unresolved <= 0.2 and s.accuracy >= fixed[m].accuracy - 0.01
               and s.calls <= today[m].calls for m, s in scores.items())


def gain(scores: dict[str, Score], fixed: dict[str, Fixed]) -> tuple[float, float]:
    """Mean over mixes of recall over fixed k's window recall (recall at matched precision), and its
    standard error (binomial, from each mix's truly in-band cases).
    """
    ratios = [s.recall / max(fixed[m].window_recall, 1e-9) for m, s in scores.items()]
    errors = [math.sqrt(s.recall * (1 - s.recall) / max(s.truly, 1)) / max(fixed[m].window_recall, 1e-9)
              for m, s in scores.items()]
    return statistics.fmean(ratios), math.sqrt(sum(e * e for e in errors)) / len(errors)


def choose(table: dict[str, dict[str, Score]], fixed: dict[str, Fixed], names: Sequence[str]) -> str:
    """The admissible setting with the highest recall at matched precision; settings within one standard
    error of the best are tied on recall, and the one with the fewest calls wins among them.
    """
    today = table[names[0]]
    fits = [name for name in names if admissible(table[name], today, fixed)] or [names[0]]
    best, error = max(gain(table[name], fixed) for name in fits)
    tied = [name for name in fits if gain(table[name], fixed)[0] >= best - error]
    return min(tied, key=lambda name: sum(s.calls for s in table[name].values()))


def print_table(title: str, table: dict[str, dict[str, Score]], fixed: dict[str, Fixed], marks: dict[str, str],
                markdown: bool) -> None:
    print(f"\n{title}\n")
    head = "setting | " + " | ".join(f"{m}: calls, rounds, prec, recall (×window), unres, acc" for m in MIXES)
    print(f"| {head} |\n|---|" + "---|" * len(MIXES) if markdown else head)
    for name, per_mix in table.items():
        cells = [f"{s.ratio:.2f}, {s.rounds / s.cases:.1f}, {s.precision:.3f}, {s.recall:.3f} "
                 f"({s.recall / max(fixed[m].window_recall, 1e-9):.2f}×), {s.unresolved:.0%}, {s.accuracy:.3f}"
                 + (f", skip {s.skipped / s.cases:.0%}" if s.skipped else "") for m, s in per_mix.items()]
        label = name + marks.get(name, "")
        print(f"| {label} | " + " | ".join(cells) + " |" if markdown else f"{label}: " + "; ".join(cells), flush=True)
    fixed_cells = [f"1.00, 1.0, {f.window_precision:.3f}, {f.window_recall:.3f} ("
                   + (f"p̂ in [{f.window[0] / 10:.1f}, {f.window[1] / 10:.1f}]" if f.window else "no window at 0.9")
                   + f"), 0%, {f.accuracy:.3f}" for f in fixed.values()]
    line = " | ".join(fixed_cells) if markdown else "; ".join(fixed_cells)
    print(f"| fixed k = 10, best p̂ window | {line} |" if markdown else f"fixed k = 10, best p̂ window: {line}")


def main() -> None:
    parser = mix_arguments(__doc__)
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument("--labels", nargs=2, type=float, default=(0.07, 0.7), metavar=("ALPHA", "FLOOR"),
                        help="set labels the rounds / k_min / confidence_out / k_max rows use")
    parser.add_argument("--full", action="store_true", help="the whole grid (see settings())")
    args = parser.parse_args()
    began = time.perf_counter()
    _sequential.band_posterior = memoised(_sequential.band_posterior)  # type: ignore[assignment]
    tuning = args.seeds if args.seeds != [1, 2, 3] else list(TUNING_SEEDS)
    rows = settings(Labelling("set", *args.labels), full=args.full)
    names = [r.name for r in rows]
    fixed_t = {m: fixed_k(m, args.cases, tuning, tuning) for m in MIXES}
    fixed_h = {m: fixed_k(m, args.cases, tuning, HELD_OUT_SEEDS) for m in MIXES}
    tuned = measure(rows, args.cases, tuning)
    chosen = choose(tuned, fixed_t, names)
    held = measure(rows, args.cases, HELD_OUT_SEEDS)
    marks = {n: " ✓" for n in names if admissible(tuned[n], tuned[names[0]], fixed_t)}
    marks[chosen] = " **chosen**"
    print(f"{args.cases} cases per mix; chosen on tuning seeds {tuning}, figures on held-out seeds "
          f"{list(HELD_OUT_SEEDS)} (✓: meets the goals on the tuning seeds)")
    print_table("Held-out seeds", held, fixed_h, marks, args.markdown)
    print_table("Tuning seeds", tuned, fixed_t, marks, args.markdown)
    base = next(r for r in rows if r.name == chosen)
    hinted = {f"{chosen} | none": held[chosen], **measure(hint_settings(base), args.cases, HELD_OUT_SEEDS)}
    print_table("Item 5: first-round hints and the difficulty predictor (held-out seeds)", hinted, fixed_h, {},
                args.markdown)
    print(f"\n({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
