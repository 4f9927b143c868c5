"""Does the boundary search find planted boundaries, and for how many target calls against a uniform grid?

Scripted agents answer the built-in ``arithmetic`` generator (``digits`` 1-8, ``op`` held at
``mul``: one 8-level ordinal knob) with P(correct) a known function of the knob value:

* **monotone**: P falls smoothly with the number of digits;
* **non-monotone**: P dips below 0.3 at 4 digits, recovers at 5-6, then falls (the boundary is
  the first crossing from the easy end);
* **noisy**: instances of one level differ (each instance's P is the level's ± up to 0.25).

Every run goes through the real probe engine (``probe`` with a generators curriculum, a scripted
adapter in the real runtime), one seed per run. For each agent it prints:

* the share of runs whose estimated 0.8- and 0.3-crossings both lie within one knob step of the
  planted ones (goal: ≥ 90 %), and the target calls of the search;
* the **uniform grid** the same engine runs (every level, ``m`` instances of the same samples
  each): the smallest ``m`` that reaches the same 90 % on *this* agent, and the smallest that
  reaches it on *every* agent (a grid is fixed before anyone knows the agent's curve), and the
  search's calls as a ratio of each (goal: ≤ 0.4× the grid's calls).

Then **shrinking**: agents that fail stably (one wrong answer) from a planted knob value on, a
failure found at 8 digits is shrunk, and the result compared with the planted minimal failing
knob values (goal: ≥ 90 % of runs).

    python benchmarks/boundary_bench.py              # 20 seeds per agent (about 3 minutes on 2 cores)
    python benchmarks/boundary_bench.py --seeds 40
    python benchmarks/boundary_bench.py --quick      # 5 seeds, for a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from frontier_qa.generators._core import GENERATOR_KEY  # noqa: E402
from frontier_qa.generators._explore import Explorer, ExploreSettings, GeneratorCurriculum  # noqa: E402
from frontier_qa.generators._loading import load_generator  # noqa: E402
from frontier_qa.generators._search import LevelEvidence, SearchSettings, grid_crossing, within_one  # noqa: E402
from frontier_qa.probing import ProbeSettings, probe  # noqa: E402
from frontier_qa.probing._run import ProbeRun  # noqa: E402
from frontier_qa.store import CaseStore  # noqa: E402
from frontier_qa.target import Case  # noqa: E402
from frontier_qa.testing import ScriptedAdapter, open_scripted  # noqa: E402

THRESHOLDS = (0.8, 0.3)


@dataclass(frozen=True)
class Planted:
    """A scripted agent: P(correct) per level of ``digits`` (1..8), and how much instances differ."""

    name: str
    curve: tuple[float, ...]
    spread: float = 0.0

    def crossing(self, threshold: float) -> int | None:
        """The planted first crossing (level index) from the easy end, ``None`` when never below."""
        return next((i for i, p in enumerate(self.curve) if p < threshold), None)


AGENTS = (
    Planted("monotone", (0.98, 0.95, 0.9, 0.7, 0.5, 0.25, 0.1, 0.03)),
    Planted("non-monotone", (0.97, 0.93, 0.6, 0.2, 0.45, 0.9, 0.15, 0.05)),
    Planted("noisy", (0.97, 0.92, 0.85, 0.6, 0.4, 0.2, 0.08, 0.03), spread=0.25),
)


def _u(*parts: Any) -> float:
    """A uniform number in [0, 1) from its parts (deterministic: the scripted agent is a pure function)."""
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big") / 2**64


def planted_agent(agent: Planted, salt: int) -> Callable[[Case, int], str]:
    """Right with the instance's P, else one of several wrong answers (scattered)."""

    def answer(case: Case, i: int) -> str:
        info = case.metadata[GENERATOR_KEY]
        p = agent.curve[int(info["knobs"]["digits"]) - 1]
        if agent.spread:
            p = min(1.0, max(0.0, p + agent.spread * (2 * _u(salt, case.id, "instance") - 1)))
        if _u(salt, case.id, i) < p:
            return f"\\boxed{{{case.reference}}}"
        return f"\\boxed{{{int(case.reference or 0) + 1 + int(_u(salt, case.id, i, 'w') * 9)}}}"

    return answer


def failing_agent(minimal: dict[str, int], salt: int) -> Callable[[Case, int], str]:
    """Fails stably (one wrong answer, 98 % of samples) at ``digits >= minimal[op]``; right (97 %) elsewhere."""

    def answer(case: Case, i: int) -> str:
        knobs = case.metadata[GENERATOR_KEY]["knobs"]
        fails = int(knobs["digits"]) >= minimal.get(str(knobs["op"]), 99)
        right = _u(salt, case.id, i) < (0.02 if fails else 0.97)
        wrong = int(case.reference or 0) + (7 if fails else 1 + int(_u(salt, case.id, i, "w") * 9))
        return f"\\boxed{{{case.reference if right else wrong}}}"

    return answer


async def _search(agent: Planted, seed: int, search: SearchSettings) -> tuple[list[LevelEvidence], Any, int]:
    gen = load_generator({"use": "arithmetic", "knobs": {"op": ["mul"]}})
    adapter = ScriptedAdapter(planted_agent(agent, seed))
    curriculum = GeneratorCurriculum([gen], ExploreSettings(search=search, evidence=False, shrink=False, seed=seed))
    with tempfile.TemporaryDirectory() as tmp:
        await probe(open_scripted(adapter), curriculum, ProbeSettings(seed=seed), store=CaseStore(Path(tmp)))
    found = curriculum.searches[0]
    return found.evidence, found, len(adapter.calls)


def _ok(estimates: Sequence[int | None], agent: Planted) -> bool:
    n = len(agent.curve)
    return all(within_one(e, agent.crossing(t), n) for e, t in zip(estimates, THRESHOLDS, strict=True))


async def crossings(seeds: Sequence[int], search: SearchSettings, grid_max: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for agent in AGENTS:
        hits, calls, grids = 0, 0, []
        for seed in seeds:
            _, found, used = await _search(agent, seed, search)
            hits += _ok([found.crossing(t).index for t in THRESHOLDS], agent)
            calls += used
            # one grid run at the largest size; a grid of m instances is its first m at each level
            evidence, _, _ = await _search(agent, 10_000 + seed, replace(search, grid=grid_max))
            grids.append(evidence)
        by_m = {}
        for m in range(1, grid_max + 1):
            ok = 0
            for evidence in grids:
                cut = [LevelEvidence(ev.index, ev.value, ev.instances[:m]) for ev in evidence]
                ok += _ok([grid_crossing(cut, t) for t in THRESHOLDS], agent)
            by_m[m] = ok / len(seeds)
        out[agent.name] = {"hit": hits / len(seeds), "calls": calls / len(seeds), "grid": by_m}
    return out


async def shrinking(seeds: Sequence[int], search: SearchSettings) -> tuple[int, int, list[str], float]:
    """Shrink a failure found at 8 digits; count runs that return the planted minimal knob values."""
    gen = load_generator("arithmetic")
    scenarios = (
        # (planted first failing digits per op, where the failure is found, the minimal failing knobs)
        ({"mul": 5, "add": 7}, {"digits": 8, "op": "mul"}, {"digits": 5, "op": "mul"}),
        ({"mul": 4, "add": 4, "sub": 4}, {"digits": 8, "op": "mul"}, {"digits": 4, "op": "add"}),
        ({"add": 6}, {"digits": 8, "op": "add"}, {"digits": 6, "op": "add"}),
    )
    hits = total = 0
    misses: list[str] = []
    calls = 0
    for minimal, start, want in scenarios:
        for seed in seeds:
            adapter = ScriptedAdapter(failing_agent(minimal, seed))
            target = open_scripted(adapter)
            curriculum = GeneratorCurriculum([gen], ExploreSettings(search=search, seed=seed))
            with tempfile.TemporaryDirectory() as tmp:
                run = ProbeRun(target, CaseStore(Path(tmp)), ProbeSettings(seed=seed), judge=None, sandbox=None,
                               progress=None)
                await run.start(None, False, "boundary-bench")
                try:
                    explorer = Explorer(run, curriculum)
                    case = gen.case(seed, start)
                    failed, _ = await run.prober.probe(case, run.draw, run_id=run.run_id, verified=True)
                    if failed.case_class.value != "failure":
                        misses.append(f"seed {seed}: the start case was {failed.case_class.value}, not a failure")
                        total += 1
                        continue
                    shrunk = await explorer.shrink(gen, failed)
                finally:
                    run.release()
            total += 1
            calls += len(adapter.calls)
            got = {} if shrunk is None else {k: shrunk.knobs[k] for k in want}
            if got == want:
                hits += 1
            else:
                misses.append(f"seed {seed}: planted {want}, shrunk to {got}")
    return hits, total, misses, calls / max(total, 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="runs per agent (default 20)")
    parser.add_argument("--quick", action="store_true", help="5 seeds")
    parser.add_argument("--first-seed", type=int, default=300,
                        help="first seed (default 300: the search's defaults were chosen on seeds 0-239)")
    parser.add_argument("--grid-max", type=int, default=24, help="largest grid size tried (instances per level)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a search setting other than the default (e.g. --set confidence=0.85)")
    args = parser.parse_args(argv)
    seeds = range(args.first_seed, args.first_seed + (5 if args.quick else args.seeds))
    search = SearchSettings()
    for item in args.set:
        key, _, value = item.partition("=")
        search = replace(search, **{key: type(getattr(search, key) or 0)(float(value)) if key != "stride"
                                    else int(value)})
    start = time.perf_counter()
    print(f"boundary search: seeds {seeds.start}-{seeds.stop - 1} per agent; thresholds {THRESHOLDS}; "
          f"settings {search}")
    results = asyncio.run(crossings(seeds, search, args.grid_max))
    shared = None
    for m in range(1, args.grid_max + 1):
        if all(r["grid"][m] >= 0.9 for r in results.values()):
            shared = m
            break
    per_level = search.samples * len(AGENTS[0].curve)  # a grid instance is sampled as often as a search instance
    print(f"\n{'agent':<14} {'search ok':>9} {'calls':>7} | {'grid m':>6} {'grid calls':>10} {'ratio':>6} | "
          f"{'shared m':>8} {'calls':>6} {'ratio':>6}")
    for agent in AGENTS:
        r = results[agent.name]
        own = next((m for m in range(1, args.grid_max + 1) if r["grid"][m] >= 0.9), None)
        own_calls = math.nan if own is None else own * per_level
        shared_calls = math.nan if shared is None else shared * per_level
        print(f"{agent.name:<14} {r['hit']:>9.0%} {r['calls']:>7.1f} | {own or '>' + str(args.grid_max):>6} "
              f"{own_calls:>10.0f} {r['calls'] / own_calls:>6.2f} | {shared or '-':>8} {shared_calls:>6.0f} "
              f"{r['calls'] / shared_calls:>6.2f}")
    print("  (ok: both crossings within one knob step of the planted ones; ratio: search calls / grid calls;"
          " goal ok >= 90 %, ratio <= 0.4)")
    hits, total, misses, calls = asyncio.run(shrinking(seeds, search))
    print(f"\nshrinking: planted minimal failing knob values returned in {hits}/{total} runs "
          f"({hits / max(total, 1):.0%}; goal >= 90 %); {calls:.0f} target calls per shrink on average")
    for miss in misses[:10]:
        print(f"  miss: {miss}")
    print(f"\n{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
