"""Benchmark: what routing a framework agent's model calls through frontier-qa costs per call.

Not a test. Run from the repository root::

    python benchmarks/gateway_bench.py                    # 40 samples a variant, server answers after 50 ms
    python benchmarks/gateway_bench.py --samples 100 --api chat

The agent is an openai-agents ``Agent`` with one function tool (``add``), on
``OpenAIResponsesModel`` (``--api chat``: ``OpenAIChatCompletionsModel``), against
:class:`tests.servers.fake_openai.FakeOpenAIServer` (a real HTTP server on 127.0.0.1) scripted to ask
for the tool three times and then answer: four model calls per sample. Two variants, in one process:

* *direct*: ``Runner.run(agent, prompt)``, as a user runs it;
* *frontier-qa*: the same agent as a ``routes_model_calls`` adapter inside a ManagedTarget with a
  SampleCache: every model call through the gateway (call index, seed, per-call cache lookup and
  store, budget, stats, usage parsing) plus the sample's own cache lookup, claim and store. Every
  sample index is new, so every call is a miss and a write (the most expensive path).

The variants run sample by sample, interleaved in a shuffled order, so a busy machine slows them
alike. Printed: each variant's median wall time per sample; the overhead as the median of per-pair
differences (with a 95 % bootstrap interval over the pairs), per sample, per model call and as a
share of the direct sample's wall time. Goals: <= 1 ms per model call and <= 5 % of a sample with
the server answering after 50 ms (the first part). The second part repeats it with an instant
server, where the overhead is the same number of milliseconds but a larger share. Beside the wall
time, the CPU time of the thread that runs the event loop (agent, SDK, gateway; not the server's
threads) is compared the same way: on a busy machine it is the steadier measure of the same cost.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.servers
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import agents  # noqa: E402
import numpy as np  # noqa: E402
import openai  # noqa: E402

from frontier_qa.adapters._agents import AgentContext  # noqa: E402
from frontier_qa.runtime import Limits, ManagedTarget, SampleCache  # noqa: E402
from frontier_qa.runtime._gateway import ModelGateway  # noqa: E402
from frontier_qa.target import Adapter, Case, Sampling, Trajectory  # noqa: E402
from tests.runtime._gateway_agent import scripted  # noqa: E402
from tests.servers.fake_openai import FakeOpenAIServer  # noqa: E402

CALLS_PER_SAMPLE = 4
CASE = Case("sum", "Add up, please.")
SAMPLING = Sampling(seed=0, max_tokens=64)


@agents.function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def build_agent(client: openai.AsyncOpenAI, api: str) -> agents.Agent[Any]:
    model_class = agents.OpenAIResponsesModel if api == "responses" else agents.OpenAIChatCompletionsModel
    return agents.Agent(name="adder", instructions="Use the tool.", tools=[add],
                        model=model_class(model="fake-model", openai_client=client))


class AgentsAdapter(Adapter):
    """The openai-agents agent as a target whose model calls go through the gateway."""

    routes_model_calls = True
    in_process = True
    gateway: ModelGateway | None = None

    def __init__(self, agent: agents.Agent[Any]) -> None:
        self.id = "openai-agents:bench"
        self.agent = agent

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        assert self.gateway is not None
        ctx = AgentContext(case, start, sampling)
        with self.gateway.sample(ctx):
            result = await agents.Runner.run(self.agent, case.prompt)
        if ctx.stop_error is not None:
            raise ctx.stop_error
        return [Trajectory(str(result.final_output), usage=ctx.usage, sample_index=start)]


async def measure(api: str, latency_s: float, samples: int, seed: int) -> dict[str, list[float]]:
    with FakeOpenAIServer(answers=scripted(), latency_s=latency_s) as server, tempfile.TemporaryDirectory() as tmp:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0, timeout=30)
        agent = build_agent(client, api)
        target = ManagedTarget(AgentsAdapter(agent), Limits(), cache=SampleCache(Path(tmp)))
        counter = iter(range(10**9))  # a new sample index each time: every call a miss and a write

        async def direct() -> object:
            return (await agents.Runner.run(agent, CASE.prompt)).final_output

        async def through() -> object:
            return (await target.sample(CASE, 1, SAMPLING, start=next(counter)))[0].text

        variants: dict[str, Callable[[], Awaitable[object]]] = {"direct": direct, "frontier-qa": through}
        await _interleaved(variants, 5, seed + 1)  # warm up connections, imports, the cache file
        before = server.model_calls()
        times = await _interleaved(variants, samples, seed)
        assert server.model_calls() - before == 2 * samples * CALLS_PER_SAMPLE, "a call was lost or cached"
        stats = target.stats()
        assert stats.calls == (samples + 5) * CALLS_PER_SAMPLE and stats.failed == 0, stats
        await target.aclose()
        await client.close()
        return times


async def _interleaved(variants: dict[str, Callable[[], Awaitable[object]]], rounds: int,
                       seed: int) -> dict[str, list[float]]:
    """Wall and event-loop-thread CPU seconds per sample, the variants interleaved in a shuffled order."""
    order = list(variants)
    rng = random.Random(seed)
    times: dict[str, list[float]] = {name: [] for name in [*variants, *(f"{v} cpu" for v in variants)]}
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            began, cpu = time.perf_counter(), time.thread_time()
            answer = await variants[name]()
            times[f"{name} cpu"].append(time.thread_time() - cpu)
            times[name].append(time.perf_counter() - began)
            assert answer == "The sum is \\boxed{6}.", answer
    return times


def _paired(base: np.ndarray, other: np.ndarray) -> tuple[float, float, float]:
    """Median of the per-pair differences in ms, with a 95 % bootstrap interval (2,000 resamples)."""
    pairs = (other - base) * 1e3
    picks = np.random.default_rng(0).integers(0, pairs.size, size=(2000, pairs.size))
    low, high = np.percentile(np.median(pairs[picks], axis=1), [2.5, 97.5])
    return float(np.median(pairs)), float(low), float(high)


def report(title: str, times: dict[str, list[float]], goals: bool) -> None:
    base, routed = np.asarray(times["direct"]), np.asarray(times["frontier-qa"])
    per_sample, low, high = _paired(base, routed)
    cpu, cpu_low, cpu_high = _paired(np.asarray(times["direct cpu"]), np.asarray(times["frontier-qa cpu"]))
    per_call, share = per_sample / CALLS_PER_SAMPLE, per_sample / (np.median(base) * 1e3)
    print(f"\n{title}")
    print(f"  direct       {np.median(base) * 1e3:8.2f} ms per sample (median of {base.size})")
    print(f"  frontier-qa  {np.median(routed) * 1e3:8.2f} ms per sample")
    print(f"  overhead     {per_sample:+.3f} ms per sample (95% interval {low:+.3f} .. {high:+.3f}), "
          f"{per_call:+.3f} ms per model call ({low / CALLS_PER_SAMPLE:+.3f} .. {high / CALLS_PER_SAMPLE:+.3f}), "
          f"{share:+.2%} of a sample's wall time; ratio frontier-qa / direct = "
          f"{np.median(routed) / np.median(base):.4f}")
    print(f"  CPU of the event loop's thread: {cpu / CALLS_PER_SAMPLE:+.3f} ms per model call "
          f"({cpu_low / CALLS_PER_SAMPLE:+.3f} .. {cpu_high / CALLS_PER_SAMPLE:+.3f}); direct "
          f"{np.median(times['direct cpu']) * 1e3:.2f} ms per sample (the cache's writer thread not included)")
    if goals:
        call_ok, share_ok = high / CALLS_PER_SAMPLE <= 1.0, per_sample / (np.median(base) * 1e3) <= 0.05
        print(f"  goal <= 1 ms per call: {'met' if call_ok else 'NOT met'}; "
              f"goal <= 5 % of a sample: {'met' if share_ok else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", choices=["responses", "chat"], default="responses", help="the agent's model API")
    parser.add_argument("--samples", type=int, default=40, help="samples per variant and part")
    parser.add_argument("--latency", type=float, default=0.05, help="server delay per model call, seconds")
    args = parser.parse_args()
    agents.set_tracing_disabled(True)
    one, five, _ = os.getloadavg()
    print(f"openai-agents {agents.__version__ if hasattr(agents, '__version__') else ''} on the {args.api} API, "
          f"{CALLS_PER_SAMPLE} model calls per sample; load average {one:.2f} (1 min), {five:.2f} (5 min) "
          f"on {os.cpu_count()} CPUs")
    times = asyncio.run(measure(args.api, args.latency, args.samples, seed=0))
    report(f"server answers after {args.latency * 1e3:g} ms", times, goals=True)
    times = asyncio.run(measure(args.api, 0.0, args.samples, seed=1))
    report("server answers at once (the overhead alone)", times, goals=False)


if __name__ == "__main__":
    main()
