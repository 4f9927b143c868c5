"""Benchmark: what micro-batching a round of cases buys on local models (SmolLM2-135M, CPU).

Not a test. Run from the repository root::

    python benchmarks/local_batching_bench.py                    # transformers only
    python benchmarks/local_batching_bench.py --vllm --server    # + in-process vLLM and a managed server

For each backend, one round of ``--cases`` cases × ``--n`` sampled answers (``--max-tokens``
each) is asked (a) one case at a time, awaiting each (the baseline), then (b) all at once
with ``asyncio.gather``, which the adapter merges into batched calls. It prints generated
tokens per second for both (best of ``--repeats`` alternating rounds), their ratio (b / a),
and how many backend calls (b) took; for
vLLM also the engine's load time and, for the server, its time to first answer ``/v1/models``.
Numbers are whole-process wall-clock on a shared machine: compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "VLLM_NO_USAGE_STATS": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():  # fmt: skip
    os.environ.setdefault(key, value)

from frontier_qa.adapters import create_adapter  # noqa: E402
from frontier_qa.target import Adapter, Case, Sampling  # noqa: E402


def round_of(cases: int) -> list[Case]:
    return [Case(id=f"add{i}", prompt=f"What is {i + 17} + {3 * i + 5}? Explain briefly.") for i in range(cases)]


async def tokens_per_s(adapter: Adapter, cases: list[Case], n: int, sampling: Sampling, together: bool) -> float:
    began = time.perf_counter()
    if together:
        results = await asyncio.gather(*(adapter.generate(c, n, sampling) for c in cases))
    else:
        results = [await adapter.generate(c, n, sampling) for c in cases]
    elapsed = time.perf_counter() - began
    return sum(t.usage.completion_tokens for r in results for t in r) / elapsed


def measure(name: str, adapter: Adapter, args: argparse.Namespace) -> None:
    cases = round_of(args.cases)
    sampling = Sampling(temperature=1.0, max_tokens=args.max_tokens, seed=0)
    asyncio.run(adapter.generate(cases[0], 1, Sampling(max_tokens=4, seed=0)))  # warm-up
    one_by_one, batched, merged = [], [], []
    for _ in range(args.repeats):  # alternate, keep the best: the least disturbed by neighbours
        one_by_one.append(asyncio.run(tokens_per_s(adapter, cases, args.n, sampling, together=False)))
        calls = getattr(adapter, "generate_calls", 0)
        batched.append(asyncio.run(tokens_per_s(adapter, cases, args.n, sampling, together=True)))
        merged.append(getattr(adapter, "generate_calls", 0) - calls)
    counted = hasattr(adapter, "generate_calls")
    calls_note = f"  backend calls per round: {args.cases} -> {max(merged)}" if counted else ""
    print(f"{name:12s} one case at a time {max(one_by_one):7.1f} tok/s   whole round {max(batched):7.1f} tok/s   "
          f"ratio {max(batched) / max(one_by_one):5.2f}{calls_note}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--n", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="rounds per variant; the best is shown")
    parser.add_argument("--vllm", action="store_true", help="also in-process vLLM (≈ 5 GB RAM)")
    parser.add_argument("--server", action="store_true", help="also a managed vLLM server (≈ 5 GB RAM)")
    args = parser.parse_args()
    print(f"round: {args.cases} cases × n={args.n}, {args.max_tokens} tokens each, T=1.0", flush=True)

    hf = create_adapter("hf:smollm2")
    measure("hf", hf, args)
    asyncio.run(hf.aclose())
    del hf

    if args.vllm:
        began = time.perf_counter()
        llm = create_adapter("vllm:smollm2")
        print(f"vllm         engine load {time.perf_counter() - began:.1f} s", flush=True)
        measure("vllm", llm, args)
        asyncio.run(llm.aclose())
        del llm

    if args.server:
        server = create_adapter("vllm-server:smollm2", startup_timeout_s=900)
        print(f"vllm-server  ready after {server.server.ready_s:.1f} s", flush=True)
        try:
            measure("vllm-server", server, args)
        finally:
            asyncio.run(server.aclose())


if __name__ == "__main__":
    main()
