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
The variants are interleaved call by call in a shuffled order, so a busy machine slows them
alike; each variant's overhead is the median of its per-call differences from the plain loop's
call of the same round, with a 95 % bootstrap interval over the rounds (the difference of the
medians is printed beside it), and the machine's load average before and after. Goals:
≤ 0.2 ms without the cache, ≤ 0.3 ms with it, met when the interval's upper end
is within them. Part 3 isolates the runtime's bookkeeping with an in-process adapter that
answers instantly.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.servers
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from frontier_qa.adapters._openai_adapter import OpenAIAdapter  # noqa: E402
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


async def _interleaved(variants: dict[str, Callable[[int], Awaitable[object]]], calls: int,
                       seed: int = 0) -> dict[str, list[float]]:
    """Time single calls, the variants interleaved call by call in a shuffled order.

    Interleaving at the level of one call puts every variant under the same machine load
    (other processes, CPU frequency, the server's state); the shuffle removes any advantage
    of going first.
    """
    order = list(variants)
    rng = random.Random(seed)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(calls):
        rng.shuffle(order)
        for name in order:
            began = time.perf_counter()
            await variants[name](i)
            times[name].append(time.perf_counter() - began)
    return times


async def overhead(calls: int) -> dict[str, list[float]]:
    import openai

    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0, timeout=30)
        adapter = OpenAIAdapter("fake-model", base_url=server.base_url, max_n=1)
        bare = ManagedTarget(adapter, Limits(max_retries=0), None, None)
        cached = ManagedTarget(adapter, Limits(max_retries=0), None, SampleCache(Path(tmp)))
        case = Case("c", "q")

        async def plain(i: int) -> None:
            await client.chat.completions.create(
                model="fake-model", messages=case.messages, temperature=1.0, top_p=1.0, max_tokens=16, seed=0
            )

        variants: dict[str, Callable[[int], Awaitable[object]]] = {
            "plain openai loop": plain,
            "adapter only": lambda i: adapter.generate(case, 1, SAMPLING),
            "managed, no cache": lambda i: bare.sample(case, 1, SAMPLING, start=i),
            # fresh keys (sample index i of a case no call used): every call is a miss and a write
            "managed + sqlite cache": lambda i: cached.sample(case, 1, SAMPLING, start=i),
        }
        await _interleaved(variants, 200, seed=1)  # warm up connections, imports and the cache file
        cached.cache.clear()  # type: ignore[union-attr]
        times = await _interleaved(variants, calls)
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


async def bookkeeping(calls: int) -> dict[str, list[float]]:
    adapter = InstantAdapter()
    with tempfile.TemporaryDirectory() as tmp:
        limits = Limits(max_retries=0, rpm=1e9, tpm=1e12)  # limiter active but never waiting
        bare = ManagedTarget(adapter, limits, None, None)
        cached = ManagedTarget(adapter, limits, None, SampleCache(Path(tmp)))
        case = Case("c", "q")
        variants: dict[str, Callable[[int], Awaitable[object]]] = {
            "adapter.generate": lambda i: adapter.generate(case, 1, SAMPLING, start=i),
            "managed, no cache": lambda i: bare.sample(case, 1, SAMPLING, start=i),
            "managed + sqlite cache": lambda i: cached.sample(case, 1, SAMPLING, start=i),
        }
        times = await _interleaved(variants, calls)
        cached.cache.close()  # type: ignore[union-attr]
        return times


def _table(times: dict[str, list[float]], goals: dict[str, float] | None = None) -> None:
    """Per variant: median ms per call, and its overhead over the first variant (the baseline).

    The calls were interleaved, so call *i* of every variant ran next to call *i* of the
    baseline, under the same load: the overhead quoted is the median of those per-pair
    differences, with a 95 % bootstrap interval (2,000 resamples of the pairs). The difference
    of the two medians is shown beside it. A goal is met when the interval's upper end is
    within it; an interval reaching below zero means the variant cannot be told apart from the
    baseline at this run's noise (the median is then the measurement, not the interval).
    """
    import numpy as np

    rng = np.random.default_rng(0)
    base_name, base = next(iter(times.items()))
    b = np.asarray(base)
    print(f"{'variant':<24} {'median':>9}   {'overhead: median of pairs, 95% interval':<44} {'diff. of medians':>16}")
    for name, values in times.items():
        v = np.asarray(values)
        line = f"{name:<24} {np.median(v) * 1e3:6.3f} ms"
        if name != base_name:
            pairs = (v - b) * 1e3
            paired = float(np.median(pairs))
            picks = rng.integers(0, pairs.size, size=(2000, pairs.size))
            low, high = np.percentile(np.median(pairs[picks], axis=1), [2.5, 97.5])
            of_medians = (np.median(v) - np.median(b)) * 1e3
            line += f"   {paired:+.3f} ms ({low:+.3f} .. {high:+.3f}){'':<19} {of_medians:+.3f} ms"
            goal = (goals or {}).get(name)
            if goal is not None:
                line += f"   goal <= {goal} ms: {'met' if high <= goal else 'NOT met'}"
            if low <= 0:
                line += "   (interval reaches 0: not told apart from the baseline at this noise)"
        print(line)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rpm", type=float, default=600.0, help="requests per minute to hold")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the throughput run")
    parser.add_argument("--latency", type=float, default=0.05, help="server latency per request, seconds")
    parser.add_argument("--concurrency", type=int, default=32, help="Limits.max_concurrency")
    parser.add_argument("--calls", type=int, default=4000, help="calls per variant in the overhead parts")
    parser.add_argument("--skip-throughput", action="store_true", help="only the overhead parts")
    args = parser.parse_args()

    if not args.skip_throughput:
        _throughput(args)
    print(f"\n== overhead per call: {args.calls} calls per variant, interleaved call by call, zero-latency server ==")
    print(f"before: {_load()}")
    times = asyncio.run(overhead(args.calls))
    print(f"after:  {_load()}")
    _table(times, {"managed, no cache": 0.2, "managed + sqlite cache": 0.3})
    print(f"\n== runtime bookkeeping alone: instant in-process adapter, {args.calls} calls per variant ==")
    _table(asyncio.run(bookkeeping(args.calls)))


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
