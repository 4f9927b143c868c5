"""Benchmark: what routing a framework agent's model calls through frontier-qa costs per call.

Not a test. Run from the repository root::

    python benchmarks/gateway_bench.py                    # 40 samples a variant, server answers after 50 ms
    python benchmarks/gateway_bench.py --samples 100 --api chat

The agent is an openai-agents ``Agent`` with one function tool (``add``), on
``OpenAIResponsesModel`` (``--api chat``: ``OpenAIChatCompletionsModel``), against
:class:`tests.servers.fake_openai.FakeOpenAIServer` (a real HTTP server on 127.0.0.1) scripted to ask
for the tool three times and then answer: four model calls per sample. Two variants, in one process:

* *direct*: ``Runner.run(agent, prompt)`` with the SDK's tracing off, as a user runs it without
  frontier-qa (no tracing at all: the cheapest baseline);
* *gateway*: the same agent as a ``routes_model_calls`` adapter inside a ManagedTarget with a
  SampleCache, tracing off: every model call through the gateway (call index, seed, per-call cache
  lookup and store, budget, stats, usage parsing) plus the sample's own cache lookup, claim and store;
* *frontier-qa*: the agent as an ``openai-agents:`` target (:class:`OpenAIAgentsAdapter`), what a
  user gets: the gateway, plus the SDK's tracing through OpenInference's processor into the span
  recorder, and the trajectory built from the spans.

Every sample index is new, so every call is a miss and a write (the most expensive path).

The variants run sample by sample, interleaved in a shuffled order, so a busy machine slows them
alike. Printed: each variant's median wall time per sample; the overhead as the median of per-pair
differences (with a 95 % bootstrap interval over the pairs), per sample, per model call and as a
share of the direct sample's wall time. Goals: <= 1 ms per model call and <= 5 % of a sample with
the server answering after 50 ms (the first part). The second part repeats it with an instant
server, where the overhead is the same number of milliseconds but a larger share. Beside the wall
time, the CPU time of the thread that runs the event loop (agent, SDK, gateway; not the server's
threads) is compared the same way: on a busy machine it is the steadier measure of the same cost.

Measured 2026-11-28 (2-CPU machine, load average 0.6-0.8; 100 samples a variant; docs/results.md),
server answering after 50 ms, per model call (95 % interval), share of a sample:
gateway +0.75 ms (+0.55 .. +1.10), 1.2 % on the Responses API; +0.92 ms (+0.60 .. +1.21), 1.6 % on chat;
the whole openai-agents: target +2.66 ms (+2.14 .. +3.03), 4.3 %; +2.80 ms (+2.39 .. +3.19), 4.7 %.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # for tests.servers (after an installed frontier_qa)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import agents  # noqa: E402
import openai  # noqa: E402

from frontier_qa.adapters._agents import AgentContext  # noqa: E402
from frontier_qa.adapters._openai_agents import OpenAIAgentsAdapter  # noqa: E402
from frontier_qa.runtime import Limits, ManagedTarget, SampleCache  # noqa: E402
from frontier_qa.runtime._gateway import ModelGateway  # noqa: E402
from frontier_qa.target import Adapter, Case, Sampling, Trajectory  # noqa: E402
from tests.runtime._gateway_agent import scripted  # noqa: E402
from tests.servers.fake_openai import FakeOpenAIServer  # noqa: E402

CALLS_PER_SAMPLE = 4
UNTRACED = agents.RunConfig(tracing_disabled=True)  # no spans made: the baseline pays for no tracing at all
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
            result = await agents.Runner.run(self.agent, case.prompt, run_config=UNTRACED)
        if ctx.stop_error is not None:
            raise ctx.stop_error
        return [Trajectory(str(result.final_output), usage=ctx.usage, sample_index=start)]


async def measure(api: str, latency_s: float, samples: int, seed: int) -> dict[str, list[float]]:
    with FakeOpenAIServer(answers=scripted(), latency_s=latency_s) as server, tempfile.TemporaryDirectory() as tmp:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0, timeout=30)
        agent = build_agent(client, api)
        gateway = ManagedTarget(AgentsAdapter(agent), Limits(), cache=SampleCache(Path(tmp) / "gateway"))
        full = ManagedTarget(OpenAIAgentsAdapter(agent, id="openai-agents:bench"), Limits(),
                             cache=SampleCache(Path(tmp) / "full"))
        counter = iter(range(10**9))  # a new sample index each time: every call a miss and a write

        async def direct() -> object:
            return (await agents.Runner.run(agent, CASE.prompt, run_config=UNTRACED)).final_output

        async def through(target: ManagedTarget) -> object:
            (got,) = await target.sample(CASE, 1, SAMPLING, start=next(counter))
            assert target is gateway or len(got.tool_calls) == CALLS_PER_SAMPLE - 1, got  # the trajectory is there
            return got.text

        variants: dict[str, Callable[[], Awaitable[object]]] = {
            "direct": direct, "gateway": lambda: through(gateway), "frontier-qa": lambda: through(full)}
        await _interleaved(variants, 5, seed + 1)  # warm up connections, imports, the cache file
        before = server.model_calls()
        times = await _interleaved(variants, samples, seed)
        assert server.model_calls() - before == 3 * samples * CALLS_PER_SAMPLE, "a call was lost or cached"
        for target in (gateway, full):
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


def _paired(base: list[float], other: list[float]) -> tuple[float, float, float]:
    """Median of the per-pair differences in ms, with a 95 % bootstrap interval (2,000 resamples)."""
    pairs = [(o - b) * 1e3 for b, o in zip(base, other, strict=True)]
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(pairs, k=len(pairs))) for _ in range(2000))
    return statistics.median(pairs), medians[50], medians[1949]


def report(title: str, times: dict[str, list[float]], goals: bool) -> None:
    base = times["direct"]
    print(f"\n{title}")
    print(f"  direct       {statistics.median(base) * 1e3:8.2f} ms per sample (median of {len(base)})")
    for variant, what in (("gateway", "model calls through the runtime, no trajectory"),
                          ("frontier-qa", "the openai-agents: target: the gateway, spans and trajectory")):
        print(f"  {variant:<12} {statistics.median(times[variant]) * 1e3:8.2f} ms per sample ({what})")
        _overhead(times, variant, goals)


def _overhead(times: dict[str, list[float]], variant: str, goals: bool) -> None:
    base, routed = times["direct"], times[variant]
    per_sample, low, high = _paired(base, routed)
    cpu, cpu_low, cpu_high = _paired(times["direct cpu"], times[f"{variant} cpu"])
    base_ms, routed_ms = statistics.median(base) * 1e3, statistics.median(routed) * 1e3
    per_call, share = per_sample / CALLS_PER_SAMPLE, per_sample / base_ms
    print(f"    overhead   {per_sample:+.3f} ms per sample (95% interval {low:+.3f} .. {high:+.3f}), "
          f"{per_call:+.3f} ms per model call ({low / CALLS_PER_SAMPLE:+.3f} .. {high / CALLS_PER_SAMPLE:+.3f}), "
          f"{share:+.2%} of a sample's wall time; ratio {variant} / direct = {routed_ms / base_ms:.4f}")
    print(f"    CPU of the event loop's thread: {cpu / CALLS_PER_SAMPLE:+.3f} ms per model call "
          f"({cpu_low / CALLS_PER_SAMPLE:+.3f} .. {cpu_high / CALLS_PER_SAMPLE:+.3f}); direct "
          f"{statistics.median(times['direct cpu']) * 1e3:.2f} ms per sample (the cache's writer thread not included)")
    if goals:
        print(f"    goal <= 1 ms per call: {'met' if per_call <= 1.0 else 'NOT met'} (interval's upper end "
              f"{'within' if high / CALLS_PER_SAMPLE <= 1.0 else 'above'} it); "
              f"goal <= 5 % of a sample: {'met' if share <= 0.05 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", choices=["responses", "chat"], default="responses", help="the agent's model API")
    parser.add_argument("--samples", type=int, default=40, help="samples per variant and part")
    parser.add_argument("--latency", type=float, default=0.05, help="server delay per model call, seconds")
    args = parser.parse_args()
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
