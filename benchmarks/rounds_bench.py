"""Benchmark: do rounds of 1–2 samples cost latency on a local model, with and without cross-case batching?

Smaller rounds stop clear cases sooner (fewer samples), but a case then needs more round trips,
and each round trip on a local model is one ``model.generate`` over whatever requests reached
the micro-batcher together. This probes ``--cases`` arithmetic cases at once (``batch_size`` =
``concurrency`` = cases) end to end through the engine (:func:`frontier_qa.probe`) against
``hf:smollm2`` (SmolLM2-135M-Instruct, transformers, CPU) with the calibrated policy capped at
``--k`` samples and rounds of 3, 2 and 1, each with cross-case batching on (the adapter merges
the concurrent cases' requests: ``max_batch_rows`` 64) and off (``max_batch_rows`` = the round
size: every request runs alone; one model, its limits switched between variants). Sample ``i``
of a case is the same text in every variant (per-row seeded sampling), so the decisions differ
only by the round sizes.

A third variant per round size, ``on, before``, is batching as it was before issue 33: the
batcher's window only ``wait_s`` after the oldest request (the callers of a batch come back one
by one as each case is scored, so a round split into two batches; ``MicroBatcher.REGROUP_MAX_S``
0) and first rounds below ``k_min`` (rounds of 1 with k_min 3 made three round trips before any
case could stop; ``checkpoint_after`` without its ``k_min``).

Per variant: wall time per case decided, samples drawn, round trips per case (mean), backend
calls (``model.generate`` runs) and the mean rows per call, and the wall-time ratio against
rounds of 3 with batching on, measured in the same process. Variants alternate over
``--repeats`` passes and the fastest pass of each is kept (the machine is shared).

Run (SmolLM2: about 25 minutes on 2 busy cores, the ``off`` variants most of it; ``--tiny``: 2 minutes)::

    python benchmarks/rounds_bench.py [--cases 12] [--k 12] [--max-tokens 16] [--repeats 1] [--tiny]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "VLLM_NO_USAGE_STATS": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():  # fmt: skip
    os.environ.setdefault(key, value)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from frontier_qa import ProbeSettings, Sampling, probe  # noqa: E402
from frontier_qa.adapters._batching import MicroBatcher  # noqa: E402
from frontier_qa.probing import _case_prober, _sequential  # noqa: E402
from frontier_qa.probing._curriculum_seam import Proposal  # noqa: E402
from frontier_qa.probing._sequential import POLICIES  # noqa: E402
from frontier_qa.runtime import open_target  # noqa: E402
from frontier_qa.store._case_store import CaseStore  # noqa: E402
from frontier_qa.store._records import CaseClass  # noqa: E402
from frontier_qa.target import Case  # noqa: E402
from frontier_qa.testing import static_curriculum  # noqa: E402

ROUNDS = (3, 2, 1)


@dataclass(frozen=True)
class Measured:
    wall: float
    decided: int
    samples: int
    round_trips: float
    calls: int

    @property
    def per_case(self) -> float:
        return self.wall / max(self.decided, 1)


def cases(n: int) -> list[Proposal]:
    """Sums and products from easy to hard for a 135M model: a spread of p*."""
    out = []
    for i in range(n):
        a, b = 3 + 7 * i, 4 + 5 * i * i
        op, value = ("+", a + b) if i % 2 == 0 else ("*", a * b)
        out.append(Proposal(Case(id=f"r{i}", prompt=f"What is {a} {op} {b}? Reply with the number only.",
                                 topic="arithmetic", reference=str(value))))
    return out


def settings(rounds: int, args: argparse.Namespace) -> ProbeSettings:
    base = POLICIES["calibrated"].sequential
    assert base is not None
    return ProbeSettings(k=args.k, sequential=replace(base, rounds=(rounds,), k_max=args.k),  # its own cap: no warning
                         sampling=Sampling(temperature=1.0, max_tokens=args.max_tokens),
                         batch_size=args.cases, max_concurrent_cases=args.cases, max_candidates=args.cases,
                         replay_first=False, verify_references=False, prior_from_store=False, seed=0)


NOW_CHECKPOINT = _sequential.checkpoint_after
NOW_REGROUP = MicroBatcher.REGROUP_MAX_S


def old_checkpoint(k: int, rounds: tuple[int, ...], k_max: int, k_min: int = 1) -> int:
    return NOW_CHECKPOINT(k, rounds, k_max)  # a first round may end below k_min


def before(on: bool) -> None:
    """Batching as before issue 33 (``on``), or as now: the batcher's regrouping, the first round's k_min."""
    MicroBatcher.REGROUP_MAX_S = 0.0 if on else NOW_REGROUP
    for module in (_sequential, _case_prober):
        module.checkpoint_after = old_checkpoint if on else NOW_CHECKPOINT  # type: ignore[attr-defined]


async def measure(target: object, rounds: int, args: argparse.Namespace) -> Measured:
    adapter = target.adapter  # type: ignore[attr-defined]
    calls = adapter.generate_calls
    with tempfile.TemporaryDirectory(prefix="rounds-bench-") as folder:
        began = time.perf_counter()
        result = await probe(target, static_curriculum(cases(args.cases)), settings(rounds, args),  # type: ignore[arg-type]
                             store=CaseStore(folder))
        wall = time.perf_counter() - began
    records = result.records
    decided = sum(r.case_class is not CaseClass.UNRESOLVED for r in records)
    return Measured(wall, decided, sum(r.k for r in records), statistics.fmean(len(r.rounds) for r in records),
                    adapter.generate_calls - calls)


def batching(target: object, rows: int) -> None:
    """Most rows one ``generate`` takes (and one batch merges): 64 merges a round of cases, the round
    size runs every request alone.
    """
    adapter = target.adapter  # type: ignore[attr-defined]
    adapter.max_batch_rows = rows
    adapter._batcher.max_weight = rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--k", type=int, default=12, help="sample cap per case (the same in every variant)")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1, help="passes over the variants; the fastest is kept")
    parser.add_argument("--tiny", action="store_true",
                        help="the tiny random model of tests/tiny_models.py instead of SmolLM2 (a busy machine)")
    args = parser.parse_args()
    spec = "hf:smollm2"
    if args.tiny:
        from tests.tiny_models import build_tiny_model

        spec = f"hf:{build_tiny_model(Path(tempfile.mkdtemp(prefix='rounds-bench-tiny-')))}"
    print(f"{args.cases} cases at once, calibrated policy capped at k={args.k}, {args.max_tokens} tokens, T=1.0; "
          f"{'tiny random model' if args.tiny else spec} on CPU", flush=True)
    target = open_target(spec, cache=False, max_batch_rows=64)
    asyncio.run(measure(target, 3, args))  # untimed: the model, the engine and the posterior's first calls warm up
    best: dict[tuple[int, str], Measured] = {}
    for _ in range(args.repeats):
        for rounds in ROUNDS:
            for mode in ("on", "off", "on, before"):
                batching(target, rounds if mode == "off" else 64)
                before(mode == "on, before")
                got = asyncio.run(measure(target, rounds, args))
                before(False)
                print(f"  rounds of {rounds}, {mode}: {got.wall:.1f} s, {got.calls} calls", file=sys.stderr, flush=True)
                if (rounds, mode) not in best or got.wall < best[rounds, mode].wall:
                    best[rounds, mode] = got
    base = best[3, "on"]
    print("| rounds | batching | s per case decided | ratio vs rounds of 3, on | decided | samples | "
          "round trips per case | backend calls | rows per call |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (rounds, mode), m in best.items():
        print(f"| {rounds} | {mode} | {m.per_case:.2f} | {m.per_case / base.per_case:.2f} | {m.decided}/{args.cases} "
              f"| {m.samples} | {m.round_trips:.1f} | {m.calls} | {m.samples / max(m.calls, 1):.1f} |", flush=True)
    asyncio.run(target.aclose())


if __name__ == "__main__":
    main()
