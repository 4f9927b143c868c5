"""Which CPU engine should drive the embedded default's agent: transformers or CTranslate2?

The embedded default probes ``examples/agents/smol_agent.py`` (SmolLM2-135M-Instruct with a
sandboxed Python tool). This runs that agent, end to end (its model calls, the sandbox, the
answer step), on the same generator instances with each engine in one process, one after the
other, each from an empty sample cache:

* ``hf:smollm2``: transformers, float32 (the baseline);
* ``ct2:smollm2``: CTranslate2 with float32 weights (the ``local`` extra's engine, the default's);
* ``ct2:smollm2`` with int8 weights (``--int8``): faster per token, different answers.

It prints, per engine, the wall time, the agent's tokens, the time ratio against transformers,
and the accuracy per knob value with a 90 % Wilson interval, then the adoption rule of issue 29:
an engine replaces transformers as the default only when it is ≥ 1.5× faster end to end **and**
its accuracy interval at every knob value overlaps transformers' (equal answer quality within
noise).

    python benchmarks/engine_bench.py                      # arithmetic add, digits 1,2,3,5: 8 instances x 2 samples
    python benchmarks/engine_bench.py --instances 4 --int8
    python benchmarks/engine_bench.py --generator dates --knob days --values 1,7,30 --context crosses=month
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

AGENT = f"python:{REPO / 'examples' / 'agents' / 'smol_agent.py'}:solve"


def _reset_agent() -> None:
    """Forget the agent module's model, so the next sample opens the engine the env names."""
    for name, module in list(sys.modules.items()):
        if name.startswith("frontier_qa_agent_smol_agent"):
            module._model = None  # type: ignore[attr-defined]


async def run_engine(spec: str, options: dict[str, str], cases: list, samples: int, temperature: float) -> dict:
    from frontier_qa.generators._core import check_for
    from frontier_qa.runtime import open_target
    from frontier_qa.scoring.answers import extract_answer
    from frontier_qa.target import Sampling

    os.environ["FRONTIER_QA_AGENT_MODEL"] = spec
    os.environ["FRONTIER_QA_AGENT_CACHE"] = tempfile.mkdtemp(prefix="engine-bench-cache-")
    if options.get("quantization"):
        os.environ["FRONTIER_QA_CT2_QUANTIZATION"] = options["quantization"]
    else:
        os.environ.pop("FRONTIER_QA_CT2_QUANTIZATION", None)
    _reset_agent()
    target = open_target(AGENT, cache=False)
    sampling = Sampling(temperature=temperature, top_p=0.95, max_tokens=128, seed=0)
    # the model loads (and, for ct2, converts once) outside the timed part
    warm = cases[0][1]
    await target.sample(warm, 1, sampling, start=10_000)
    began = time.perf_counter()
    results = await asyncio.gather(*(target.sample(case, samples, sampling) for _, case in cases))
    wall = time.perf_counter() - began
    tokens = target.snapshot().tokens if hasattr(target.snapshot(), "tokens") else None
    per_value: dict[object, list[bool]] = {}
    for (value, case), trajectories in zip(cases, results, strict=True):
        check = check_for(case)
        for t in trajectories:
            if check is not None:
                ok = bool(check(t.text or ""))
            else:
                answer = extract_answer(t.text)
                ok = answer is not None and answer.strip() == case.reference
            per_value.setdefault(value, []).append(ok)
    await target.aclose()
    _reset_agent()
    return {"wall": wall, "tokens": tokens, "accuracy": per_value}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generator", default="arithmetic")
    parser.add_argument("--knob", default="digits")
    parser.add_argument("--values", default="1,2,3,5")
    parser.add_argument("--context", default="op=add", help="the other knobs, k=v,k=v")
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--temperature", type=float, default=0.15)
    parser.add_argument("--int8", action="store_true", help="also CTranslate2 with int8 weights")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    from frontier_qa.generators._core import get, instance_seed
    from frontier_qa.probing._sequential import wilson_interval

    gen = get(args.generator)
    context = dict(kv.split("=", 1) for kv in args.context.split(",") if kv)
    knob = gen.knob(args.knob)
    values = [type(knob.levels[0])(v) for v in args.values.split(",")]
    cases = []
    for value in values:
        knobs = gen.check_knobs({**context, args.knob: value})
        for i in range(args.instances):
            cases.append((value, gen.case(instance_seed(0, gen.name, knobs, i), knobs)))
    engines = [("hf:smollm2", "hf:smollm2", {}), ("ct2:smollm2 (float32)", "ct2:smollm2", {"quantization": "float32"})]
    if args.int8:
        engines.append(("ct2:smollm2 (int8)", "ct2:smollm2", {"quantization": "int8"}))
    print(f"engine_bench: {gen.name} {args.knob} in {values} ({context}), {args.instances} instances x "
          f"{args.samples} samples per value, T={args.temperature}; agent {AGENT.rsplit('/', 1)[-1]}")
    rows = {}
    for label, spec, options in engines:
        got = asyncio.run(run_engine(spec, options, cases, args.samples, args.temperature))
        rows[label] = got
        acc = "  ".join(f"{v}: {sum(ok) / len(ok):.2f}" for v, ok in got["accuracy"].items())
        print(f"  {label:<22} {got['wall']:7.1f} s   accuracy {acc}", flush=True)
    base = rows["hf:smollm2"]
    print("\nside by side (time ratio = transformers' wall time / the engine's; 90 % Wilson intervals):")
    for label, got in rows.items():
        if label == "hf:smollm2":
            continue
        speed = base["wall"] / got["wall"]
        equal = True
        for v in values:
            a, b = base["accuracy"][v], got["accuracy"][v]
            lo_a, hi_a = wilson_interval(sum(a), len(a), 0.9)
            lo_b, hi_b = wilson_interval(sum(b), len(b), 0.9)
            inside = lo_a <= hi_b and lo_b <= hi_a  # the two 90 % intervals overlap: equal within noise
            equal = equal and inside
            print(f"  {label:<22} {args.knob}={v}: {sum(a) / len(a):.2f} [{lo_a:.2f}, {hi_a:.2f}] (hf) vs "
                  f"{sum(b) / len(b):.2f} [{lo_b:.2f}, {hi_b:.2f}]{'' if inside else '  <- differs'}")
        verdict = "adopt" if speed >= 1.5 and equal else "keep transformers"
        why = [] if speed >= 1.5 else [f"only {speed:.2f}x faster (needs 1.5x)"]
        if not equal:
            why.append("accuracy differs beyond noise at some knob value")
        print(f"  {label:<22} {speed:.2f}x transformers' speed end to end -> {verdict}"
              + (f" ({'; '.join(why)})" if why else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
