"""Benchmark: the sampling policies against Agent0's fixed k = 10, end to end through ``frontier-qa probe``.

For each mix of :mod:`benchmarks.mixes` (realistic, balanced, frontier-heavy) and each seed,
the same cases file is probed once per policy by the real command line, in a fresh store::

    frontier-qa probe --target python:benchmarks/mixture_agent.py:solve --curriculum CASES \\
        --policy NAME --no-replay ...

The scripted agent draws sample i of a case from the case's known answer distribution at a
hashed uniform, so every policy reads the same sample stream (common random numbers), and
the truth (where the true majority probability p* lies) is exact. Scored per run, from
``cases.jsonl`` and ``report.json``:

* calls: target calls (report.json), and their ratio to fixed k = 10 on the same cases;
* band accuracy: in band vs not against the truth, an unresolved case counted by its leaning
  (fixed k's verdict is p̂ in the band);
* recall: share of the truly in-band cases labelled frontier; "+lean" adds the unresolved
  cases leaning in band (reported, to be sampled further: nothing is lost, but they are not
  frontier labels);
* precision: share of frontier labels truly in band (the calibration, against the truth);
* unresolved: share of cases left unresolved.

``warm`` rows start the default policy from the store of a run on other cases of the same
mix (``probing.prior_from_store``: the population prior a second nightly run starts from).
Goals: calls ≤ 0.5× fixed on realistic and ≤ 0.7× on the others, band accuracy
≥ fixed − 1 point, recall ≥ fixed − 3 points; each row says which it meets.

Run (about 6 minutes on 2 cores; ``--markdown`` prints the table of docs/results.md)::

    python benchmarks/sequential_bench.py [--cases 100] [--seeds 1 2 3] [--big 1000] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from mixes import MIXES, make_cases, write_cases  # noqa: E402

AGENT = "python:benchmarks/mixture_agent.py:solve"
POLICIES = ("calibrated", "economy", "thorough")
GOAL_RATIO = {"realistic": 0.5, "balanced": 0.7, "frontier-heavy": 0.7}


@dataclass(frozen=True)
class Score:
    calls: int
    accuracy: float
    recall: float
    recall_lean: float
    precision: float
    unresolved: float
    frontier: int
    in_band: int


def probe(cases: Path, policy: str, store: Path, out: Path, n: int) -> Score:
    """One ``frontier-qa probe`` run; its score against the truth in the cases' metadata."""
    cmd = [sys.executable, "-m", "frontier_qa", "probe", "--target", AGENT, "--curriculum", str(cases),
           "--policy", policy, "--store", str(store), "--out", str(out), "--no-replay", "--progress", "off",
           "--max-candidates", str(n), "--concurrency", "8", "--set", "probing.batch_size=8",
           "--set", "probing.verify_references=false", "--set", "validation.dedupe_threshold=null",
           "--format", "json"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 1, 3):  # 3: the gate could not judge (too many unresolved): still scored
        raise SystemExit(f"frontier-qa probe failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    report = json.loads((out / "report.json").read_text())
    rows = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    return score(rows, report["cost"]["calls"], fixed=policy == "fixed")


def side(row: dict, fixed: bool) -> str:
    """The run's band verdict for a case: its class's side, or an unresolved case's leaning."""
    if row["case_class"] == "frontier":
        return "in"
    if fixed or row["case_class"] != "unresolved":
        return "out"
    leaning = row["case"]["metadata"].get("band_posterior", {}).get("leaning", "below")
    return "in" if leaning == "in band" else "out"


def score(rows: list[dict], calls: int, *, fixed: bool) -> Score:
    truth = [row["case"]["metadata"]["truth"] == "in" for row in rows]
    said = [side(row, fixed) == "in" for row in rows]
    frontier = [row["case_class"] == "frontier" for row in rows]
    n_in = sum(truth)
    return Score(
        calls=calls,
        accuracy=sum(s == t for s, t in zip(said, truth, strict=True)) / len(rows),
        recall=sum(f and t for f, t in zip(frontier, truth, strict=True)) / max(n_in, 1),
        recall_lean=sum(s and t for s, t in zip(said, truth, strict=True)) / max(n_in, 1),
        precision=sum(f and t for f, t in zip(frontier, truth, strict=True)) / max(sum(frontier), 1),
        unresolved=sum(row["case_class"] == "unresolved" for row in rows) / len(rows),
        frontier=sum(frontier),
        in_band=n_in,
    )


def mean(scores: list[Score]) -> Score:
    fields = Score.__dataclass_fields__
    return Score(**{f: statistics.fmean(getattr(s, f) for s in scores) for f in fields})  # type: ignore[arg-type]


def goals(mix: str, s: Score, fixed: Score) -> str:
    ratio = s.calls / fixed.calls  # of the means: the same cases' total calls
    checks = [("calls", ratio <= GOAL_RATIO[mix]), ("acc", s.accuracy >= fixed.accuracy - 0.01),
              ("recall", s.recall >= fixed.recall - 0.03)]
    missed = [name for name, ok in checks if not ok]
    return "all goals met" if not missed else "misses " + ", ".join(missed)


def spread(values: list[float], fmt: str) -> str:
    """The mean over seeds, and the range when there is more than one seed."""
    text = format(statistics.fmean(values), fmt)
    return text if len(values) < 2 else f"{text} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def row(label: str, mix: str, policy: str, runs: list[Score], fixed_runs: list[Score], markdown: bool) -> str:
    """One table row: means over seeds with their ranges; calls as a ratio to fixed k on the same seed."""
    s, fixed = mean(runs), mean(fixed_runs)
    ratios = [r.calls / f.calls for r, f in zip(runs, fixed_runs, strict=True)]
    cells = [label, policy, "1.00" if policy == "fixed" else spread(ratios, ".2f"),
             spread([r.accuracy for r in runs], ".3f"),
             spread([r.recall for r in runs], ".3f"), f"{s.recall_lean:.3f}", f"{s.precision:.3f}",
             f"{s.unresolved:.0%}", "" if policy == "fixed" else goals(mix, s, fixed)]
    if markdown:
        return "| " + " | ".join(cells) + " |"
    return aligned(cells).rstrip()


WIDTHS = (15, 19, 17, 19, 19, 7, 7, 6, 0)


def aligned(cells: Sequence[str]) -> str:
    """One plain-text table line: cells padded to :data:`WIDTHS`, the two names left, the figures right."""
    return " ".join(f"{c:<{w}}" if i < 2 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, WIDTHS, strict=True)))


HEADER = ("mix", "policy", "calls", "acc", "recall", "+lean", "prec", "unres", "goals (calls, acc, recall)")


def run_mix(mix: str, n: int, seeds: list[int], work: Path, policies: tuple[str, ...]) -> dict[str, list[Score]]:
    """Every policy on every seed's cases of ``mix``; the warm rows reuse the previous seed's store."""
    scores: dict[str, list[Score]] = {p: [] for p in ("fixed", *policies, "calibrated, warm")}
    for i, seed in enumerate(seeds):
        cases = write_cases(make_cases(mix, n, seed), work / f"{mix}-{seed}.jsonl", stream=seed)
        for policy in ("fixed", *policies):
            store, out = work / f"{mix}-{seed}-{policy}", work / f"o-{mix}-{seed}-{policy}"
            scores[policy].append(probe(cases, policy, store, out, n))
        # warm: the store of the other cases of this mix (the next seed's, cyclically) seeds the prior
        other = seeds[(i + 1) % len(seeds)]
        other_cases = write_cases(make_cases(mix, n, other + 1000), work / f"{mix}-{other}-w.jsonl", stream=other)
        warm = work / f"{mix}-{seed}-warm"
        probe(other_cases, "calibrated", warm, work / f"o-{mix}-{seed}-w0", n)
        scores["calibrated, warm"].append(probe(cases, "calibrated", warm, work / f"o-{mix}-{seed}-warm", n))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="cases per mix and seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--mixes", nargs="+", default=list(MIXES), choices=list(MIXES))
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--big", type=int, default=1000, help="cases of one realistic run, fixed vs default (0: skip)")
    parser.add_argument("--markdown", action="store_true", help="print the table of docs/results.md")
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="frontier-qa-seqbench-") as tmp:
        work = Path(tmp)
        print(f"{args.cases} cases per mix x seeds {args.seeds}; fixed k = 10 is the baseline on the same cases; "
              f"means over seeds (range over seeds); acc and +lean count an unresolved case by its leaning")
        if args.markdown:
            print("| " + " | ".join(HEADER) + " |")
            print("|" + "---|" * len(HEADER))
        else:
            print(aligned(HEADER))
        for mix in args.mixes:
            scores = run_mix(mix, args.cases, args.seeds, work, tuple(args.policies))
            fixed = mean(scores["fixed"])
            truth_share = fixed.in_band / args.cases
            for policy, runs in scores.items():
                label = f"{mix} ({truth_share:.0%} in band)" if policy == "fixed" else ""
                print(row(label, mix, policy, runs, scores["fixed"], args.markdown), flush=True)
            for path in work.iterdir():
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        if args.big:
            cases = write_cases(make_cases("realistic", args.big, 99), work / "big.jsonl", stream=99)
            fixed = probe(cases, "fixed", work / "big-fixed", work / "o-big-fixed", args.big)
            seq = probe(cases, "calibrated", work / "big-cal", work / "o-big-cal", args.big)
            label = f"realistic x {args.big} ({fixed.in_band / args.big:.0%} in band)"
            print(row(label, "realistic", "fixed", [fixed], [fixed], args.markdown))
            print(row("", "realistic", "calibrated", [seq], [fixed], args.markdown))
    print(f"({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
