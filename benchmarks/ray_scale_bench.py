"""Benchmark: sampling throughput on Ray workers (1, 2, 4) vs the local executor, same server, same run.

Not a test. Needs the ``ray`` extra. Run from the repository root::

    python benchmarks/ray_scale_bench.py                      # 160 samples a variant, 0.5 s per answer
    python benchmarks/ray_scale_bench.py --samples 80 --rpm 900

A real local Ray cluster (a head and a second raylet on 127.0.0.1, :mod:`tests.servers.ray_cluster`)
and :class:`tests.servers.fake_openai.FakeOpenAIServer` answering every request after ``--latency``
seconds (latency-bound: a call waits, it does not compute), metering ``--rpm`` like a provider (429
above it). Each variant draws ``--samples`` samples of distinct cases through its target's ``sample``
(no cache), all asked at once:

* *local*: the target as one machine runs it (:func:`open_target`, ``max_concurrency = --slots``);
* *ray N*: N workers with ``--slots`` each (:func:`open_ray_target`), every call admitted by the
  run's one governor.

Twice: with no rate limit (expected: near-linear in workers, each adding ``slots / latency`` samples
a second) and with the limiter at ``--rpm`` (expected: linear until ``rpm / 60`` binds, then flat at
it, with no 429). Printed side by side: samples per second, the ratio to local, the share of the
RPM used, the server's 429s. Worker start-up (opening the target on each) is not timed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # for tests.servers (after an installed frontier_qa)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from frontier_qa.runtime import Limits, open_target  # noqa: E402
from frontier_qa.runtime._limits import Budget  # noqa: E402
from frontier_qa.runtime._ray_executor import RaySettings, open_ray_target  # noqa: E402
from frontier_qa.target import Case, Sampling  # noqa: E402
from tests.servers.fake_openai import FakeOpenAIServer  # noqa: E402
from tests.servers.ray_cluster import LocalRayCluster  # noqa: E402

SAMPLING = Sampling(seed=0, max_tokens=16)


async def draw(target: Any, samples: int, tag: str) -> float:
    """Seconds to draw ``samples`` samples of distinct cases, all asked at once."""
    cases = [Case(f"{tag}-{i}", f"{tag}: what is {i} plus 1?") for i in range(samples)]
    started = time.perf_counter()
    got = await asyncio.gather(*(target.sample(case, 1, SAMPLING) for case in cases))
    elapsed = time.perf_counter() - started
    failed = sum(1 for batch in got for t in batch if not t.ok)
    if failed:
        raise RuntimeError(f"{tag}: {failed} samples failed")
    return elapsed


async def variant(name: str, workers: int, args: argparse.Namespace, server: FakeOpenAIServer,
                  address: str, rpm: float | None) -> dict[str, Any]:
    spec = f"openai:fake-model@{server.base_url}"
    options = {"api_key": "x", "max_n": 1}
    limits = Limits(rpm=rpm, max_concurrency=args.slots * max(workers, 1), timeout_s=60)
    if workers == 0:
        target: Any = open_target(spec, limits=limits.with_(max_concurrency=args.slots), cache=False, **options)
    else:
        settings = RaySettings(address, workers=workers, slots=args.slots, cpus_per_worker=0.25)
        target = open_ray_target(spec, settings, limits=limits, budget=Budget(), cache=None, options=options)
    server.reset()
    refused = server.rate_limited()
    try:
        elapsed = await draw(target, args.samples, f"{name}-{rpm}")
    finally:
        await target.aclose()
    at = sorted(r.at for r in server.requests)
    span = at[-1] - at[0] if len(at) > 1 else elapsed
    share = (len(at) - 1) / (span * rpm / 60.0) if rpm and len(at) > 1 else None
    return {"name": name, "rate": args.samples / elapsed, "share": share,
            "429": server.rate_limited() - refused}


def table(title: str, rows: list[dict[str, Any]]) -> None:
    base = rows[0]["rate"]
    print(f"\n{title}")
    print(f"  {'executor':<10} {'samples/s':>10} {'vs local':>9} {'RPM share':>10} {'429s':>5}")
    for row in rows:
        share = "-" if row["share"] is None else f"{row['share']:.3f}"
        print(f"  {row['name']:<10} {row['rate']:>10.2f} {row['rate'] / base:>8.2f}x {share:>10} {row['429']:>5}")


async def main_async(args: argparse.Namespace, address: str) -> None:
    with FakeOpenAIServer(latency_s=args.latency, rpm=args.rpm, rpm_burst=2) as limited, \
            FakeOpenAIServer(latency_s=args.latency) as free:
        for title, server, rpm in (("no rate limit", free, None), (f"rpm {args.rpm:g} (the limiter's)", limited,
                                                                    args.rpm)):
            rows = [await variant("local", 0, args, server, address, rpm)]
            for n in (1, 2, 4):
                rows.append(await variant(f"ray {n}", n, args, server, address, rpm))
            table(f"{title}: {args.samples} samples a variant, {args.slots} slots a worker, "
                  f"{args.latency:g} s per answer", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=160)
    parser.add_argument("--slots", type=int, default=4, help="calls in flight per worker (and locally)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the server takes per answer")
    parser.add_argument("--rpm", type=float, default=1200.0, help="the server's limit and the limiter's")
    args = parser.parse_args()
    started = time.perf_counter()
    with LocalRayCluster(nodes=2, num_cpus=2) as cluster:
        print(f"cluster: 2 raylets on 127.0.0.1, up in {time.perf_counter() - started:.1f} s")
        import ray

        ray.init(address=cluster.address, namespace="frontier-qa", log_to_driver=False, logging_level="ERROR")
        try:
            asyncio.run(main_async(args, cluster.address))
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
