"""Benchmark: how many cases stay unresolved when ``k`` caps a sequential policy below its own k_max.

Under a sequential policy ``probing.k`` (``--k``) is the sample cap; a case still undecided
there ends ``unresolved``, and above the gate's limit (``gate.max_unresolved_share``, a fifth)
the run cannot judge the agent (exit 3). This measures the unresolved share per policy and cap
with the in-process simulator of ``benchmarks/policy_sweep.py`` (the prober's decision rule, the
prior refitted every 10 cases) on the fair mixes of :mod:`benchmarks.mixes`, and prints the
table :data:`frontier_qa.probing._k_cap.UNRESOLVED_AT_CAP` holds (lowest and highest share over
the three mixes), with the stored table beside it: a row that moved by more than 5 points is
marked, and the constants should be updated from this output.

Run (about 4 minutes on 2 cores)::

    python benchmarks/k_cap_bench.py [--cases 100] [--seeds 1 2 3]
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from mixes import MIXES, mix_arguments  # noqa: E402
from policy_sweep import run  # noqa: E402

from frontier_qa.probing._k_cap import UNRESOLVED_AT_CAP  # noqa: E402
from frontier_qa.probing._sequential import POLICIES  # noqa: E402

DRIFT = 0.05


def share(policy: str, cap: int, cases: int, seeds: list[int]) -> dict[str, float]:
    """Mean unresolved share per mix with ``policy`` capped at ``cap`` samples (as ProbeSettings.policy() caps it)."""
    base = POLICIES[policy].sequential
    assert base is not None
    config = replace(base, k_max=cap, k_min=min(base.k_min, cap))
    return {mix: statistics.fmean(run(mix, cases, seed, config).unresolved for seed in seeds) for mix in MIXES}


def main() -> None:
    args = mix_arguments(__doc__).parse_args()
    began = time.perf_counter()
    print(f"{args.cases} cases per mix x seeds {args.seeds}: unresolved share with k capping the policy")
    print("| policy | k | " + " | ".join(MIXES) + " | stored (low, high) |")
    print("|---|---|" + "---|" * len(MIXES) + "---|")
    table: dict[str, list[tuple[int, float, float]]] = {}
    for name, caps in UNRESOLVED_AT_CAP.items():
        for cap, low, high in caps:
            found = share(name, cap, args.cases, args.seeds)
            row = (cap, round(min(found.values()), 2), round(max(found.values()), 2))
            table.setdefault(name, []).append(row)
            moved = " (moved)" if max(abs(row[1] - low), abs(row[2] - high)) > DRIFT else ""
            print(f"| {name} | {cap} | " + " | ".join(f"{found[m]:.0%}" for m in MIXES)
                  + f" | {low:.2f}, {high:.2f}{moved} |", flush=True)
    print("\nUNRESOLVED_AT_CAP as measured:")
    for name, rows in table.items():
        print(f"    {name!r}: {tuple(rows)},")
    print(f"({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
