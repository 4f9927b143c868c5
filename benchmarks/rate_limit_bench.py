"""Benchmark: how close the runtime gets to an RPM limit, and what it costs per call.

Not a test. Run from the repository root::

    python benchmarks/rate_limit_bench.py                 # 600 RPM for 20 s, then the overhead
    python benchmarks/rate_limit_bench.py --rpm 3000 --seconds 10

Part 1 drives :class:`tests.servers.fake_openai.FakeOpenAIServer` (a real HTTP server on
127.0.0.1, fixed latency) through ``open_target("openai:...")`` with ``Limits(rpm=R)``,
queueing ``R·seconds/60`` one-sample requests at once, and prints the achieved rate as a
share of the limit (goal: >= 0.95), the busiest one-second window seen by the server (must
not exceed the limit's per-second rate by more than one request), and how many requests
were lost (goal: 0).

Part 2 measures the framework's own overhead per call, in one process: the same calls, one
at a time, to the same zero-latency server, made (a) by a plain asyncio loop with the openai
client, (b) through the adapter alone, (c) through the managed target without cache, (d)
with the SQLite cache storing every sample (fresh keys: every call is a miss and a write).
Rounds alternate between the variants, so a busy machine slows them alike; the overhead of
a variant is the median over rounds of its per-call time minus the plain loop's in the same
round, with the 25th–75th percentile of those differences. Goals (issue 15): ≤ 0.2 ms
without the cache, ≤ 0.3 ms with it. Part 3 isolates the runtime's bookkeeping with an
in-process adapter that answers instantly.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.servers
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from frontier_qa.adapters.openai_adapter import OpenAIAdapter  # noqa: E402
from frontier_qa.runtime import Limits, ManagedTarget, SampleCache  # noqa: E402
from frontier_qa.target import Adapter, Case, Sampling, Trajectory, Usage  # noqa: E402
from tests.servers.fake_openai import CHAT_PATH, FakeOpenAIServer  # noqa: E402

SAMPLING = Sampling(temperature=1.0, max_tokens=16, seed=0)


async def throughput(rpm: float, seconds: float, latency_s: float, concurrency: int) -> dict[str, float]:
    with FakeOpenAIServer(latency_s=latency_s) as server:
        adapter = OpenAIAdapter("fake-model", base_url=server.base_url, max_n=1)
        dispatched: list[float] = []
        generate = adapter.generate

        async def timed_generate(*args: object, **kwargs: object) -> object:
            dispatched.append(time.monotonic())  # when the runtime let the call go
            return await generate(*args, **kwargs)  # type: ignore[arg-type]

        adapter.generate = timed_generate  # type: ignore[method-assign]
        target = ManagedTarget(adapter, Limits(rpm=rpm, max_concurrency=concurrency, timeout_s=30, max_retries=0))
        count = max(2, round(rpm * seconds / 60))
        began = time.monotonic()
        results = await asyncio.gather(*(target.sample(Case(f"c{i}", f"q{i}"), 1, SAMPLING) for i in range(count)))
        elapsed = time.monotonic() - began
        arrivals = sorted(r.at for r in server.requests if r.path == CHAT_PATH)
        def busiest(times: list[float]) -> int:
            return max(sum(1 for t in times[i:] if t < a + 1.0) for i, a in enumerate(times))

        ok = sum(1 for r in results for t in r if t.ok)
        await target.aclose()
        return {
            "requests": count,
            "ok": ok,
            "server_saw": server.count(),
            "runtime_calls": target.stats().calls,
            "elapsed_s": elapsed,
            # the ideal schedule: count requests spaced 60/rpm apart, the last one answered after latency_s
            "share_of_limit": count * 60.0 / rpm / elapsed,
            # pacing alone: requests per minute between the first and the last dispatch
            "dispatch_rate_share": (len(dispatched) - 1) / (dispatched[-1] - dispatched[0]) * 60.0 / rpm,
            "busiest_1s_client": busiest(sorted(dispatched)),
            "busiest_1s_server": busiest(arrivals),
            "limit_per_s": rpm / 60.0,
        }


async def overhead(calls: int, rounds: int) -> dict[str, list[float]]:
    import openai

    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0, timeout=30)
        adapter = OpenAIAdapter("fake-model", base_url=server.base_url, max_n=1)
        bare = ManagedTarget(adapter, Limits(max_retries=0), None, None)
        cached = ManagedTarget(adapter, Limits(max_retries=0), None, SampleCache(Path(tmp)))
        case = Case("c", "q")
        tag = iter(range(10**9))

        async def plain() -> None:
            for _ in range(calls):
                await client.chat.completions.create(
                    model="fake-model", messages=case.messages, temperature=1.0, top_p=1.0, max_tokens=16, seed=0
                )

        async def adapter_only() -> None:
            for _ in range(calls):
                await adapter.generate(case, 1, SAMPLING)

        async def managed(target: ManagedTarget) -> None:
            round_tag = next(tag)  # fresh cache keys every round: every call is a miss and a write
            for i in range(calls):
                await target.sample(Case(f"c{round_tag}", f"q{round_tag}"), 1, SAMPLING, start=i)

        variants = {
            "plain openai loop": plain,
            "adapter only": adapter_only,
            "managed, no cache": lambda: managed(bare),
            "managed + sqlite cache": lambda: managed(cached),
        }
        for run in variants.values():  # warm up connections, imports and the cache file
            await run()
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, run in variants.items():
                began = time.perf_counter()
                await run()
                times[name].append((time.perf_counter() - began) / calls)
        await client.close()
        await adapter.aclose()
        cached.cache.close()  # type: ignore[union-attr]
        return times


class InstantAdapter(Adapter):
    """Answers at once, in-process: what is left to measure is the runtime's bookkeeping."""

    id = "instant"
    max_n = 1

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        return [Trajectory(text="ok", usage=Usage(3, 1), sample_index=start + j) for j in range(n)]


async def bookkeeping(calls: int, rounds: int) -> dict[str, list[float]]:
    adapter = InstantAdapter()
    with tempfile.TemporaryDirectory() as tmp:
        limits = Limits(max_retries=0, rpm=1e9, tpm=1e12)  # limiter active but never waiting
        bare = ManagedTarget(adapter, limits, None, None)
        cached = ManagedTarget(adapter, limits, None, SampleCache(Path(tmp)))
        tag = iter(range(10**9))

        async def direct() -> None:
            for i in range(calls):
                await adapter.generate(Case("c", "q"), 1, SAMPLING, start=i)

        async def managed(target: ManagedTarget) -> None:
            round_tag = next(tag)
            for i in range(calls):
                await target.sample(Case("c", f"q{round_tag}"), 1, SAMPLING, start=i)

        variants = {"adapter.generate": direct, "managed, no cache": lambda: managed(bare),
                    "managed + sqlite cache": lambda: managed(cached)}
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, run in variants.items():
                began = time.perf_counter()
                await run()
                times[name].append((time.perf_counter() - began) / calls)
        cached.cache.close()  # type: ignore[union-attr]
        return times


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def _table(times: dict[str, list[float]]) -> None:
    """Per variant: median ms per call, and the paired per-round difference to the first variant."""
    base = next(iter(times.values()))
    for name, values in times.items():
        diffs = [(v - b) * 1e3 for v, b in zip(values, base)]
        low, mid, high = _quartiles(diffs)
        extra = "" if values is base else f"   overhead {mid:+.3f} ms/call (quartiles {low:+.3f} .. {high:+.3f})"
        print(f"{name:<24} median {statistics.median(values) * 1e3:7.3f} ms/call{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rpm", type=float, default=600.0, help="requests per minute to hold")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the throughput run")
    parser.add_argument("--latency", type=float, default=0.05, help="server latency per request, seconds")
    parser.add_argument("--concurrency", type=int, default=32, help="Limits.max_concurrency")
    parser.add_argument("--calls", type=int, default=200, help="calls per overhead round")
    parser.add_argument("--rounds", type=int, default=21, help="overhead rounds (alternating variants)")
    parser.add_argument("--skip-throughput", action="store_true", help="only the overhead parts")
    args = parser.parse_args()

    if not args.skip_throughput:
        _throughput(args)
    print(f"\n== overhead per call: {args.calls} sequential calls x {args.rounds} rounds, zero-latency server ==")
    _table(asyncio.run(overhead(args.calls, args.rounds)))
    print(f"\n== runtime bookkeeping alone: instant in-process adapter, "
          f"{args.calls * 5} calls x {args.rounds} rounds ==")
    _table(asyncio.run(bookkeeping(args.calls * 5, args.rounds)))


def _throughput(args: argparse.Namespace) -> None:
    print(f"== throughput: {args.rpm:g} RPM for {args.seconds:g} s, server latency {args.latency * 1000:g} ms ==")
    t = asyncio.run(throughput(args.rpm, args.seconds, args.latency, args.concurrency))
    lost = t["requests"] - t["ok"]
    print(f"requests {t['requests']:.0f}, ok {t['ok']:.0f}, lost {lost:.0f}; server saw {t['server_saw']:.0f}, "
          f"runtime counted {t['runtime_calls']:.0f}")
    print(f"elapsed {t['elapsed_s']:.2f} s; achieved / limit = {t['share_of_limit']:.3f} end to end "
          f"(goal >= 0.95); dispatch rate / limit = {t['dispatch_rate_share']:.3f}")
    print(f"busiest 1 s window: {t['busiest_1s_client']:.0f} dispatched, {t['busiest_1s_server']:.0f} arrived at "
          f"the server (limit {t['limit_per_s']:.2f}/s)")


if __name__ == "__main__":
    main()
