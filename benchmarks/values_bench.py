"""Benchmark: what validating the frozen values (Sampling, Case, Limits) costs per construction.

Not a test. Run from the repository root::

    python benchmarks/values_bench.py              # 20 000 constructions per variant, best of 7

The config sections and the API share one frozen pydantic dataclass per concept
(``frontier_qa/_frozen.py``), so every ``Sampling(...)``, ``Case(...)`` and
``dataclasses.replace(...)`` validates its fields. The engine builds them once per run, per
case, or per model call (``replace(sampling, seed=...)``), never in a per-token loop. This
prints each operation's time next to two baselines measured in the same process: the same
fields as a plain frozen stdlib dataclass (what they were in 0.1), and ``cache_key`` for one
sample (work the runtime does for every sample anyway). Ratios, not absolute times, are the
result: a busy machine scales both sides.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from frontier_qa.runtime._limits import Limits
from frontier_qa.target import Case, Sampling, cache_key


@dataclasses.dataclass(frozen=True)
class PlainSampling:  # the 0.1 definition: no validation
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512
    stop: tuple[str, ...] = ()
    seed: int | None = None


def best_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    sampling = Sampling(temperature=0.7, stop=("</s>",))
    plain = PlainSampling(temperature=0.7, stop=("</s>",))
    case = Case(id="c", prompt="What is 2 + 2?", history=({"role": "assistant", "content": "Let"},), metadata={"a": 1})
    turn = ({"role": "tool", "content": "4"},)
    runs = {
        "plain dataclass replace(seed=)  [0.1 baseline]": lambda: dataclasses.replace(plain, seed=3),
        "cache_key of one sample        [per-sample baseline]": lambda: cache_key("t", case.messages, sampling, 3),
        "replace(Sampling, seed=)  (per model call)": lambda: dataclasses.replace(sampling, seed=3),
        "Sampling(...)             (per run)": lambda: Sampling(temperature=0.7, top_p=0.9, max_tokens=64),
        "Case(...)                 (per proposal)": lambda: Case(id="x", prompt="p", metadata={"a": 1}),
        "replace(Case, history=)   (per tool turn)": lambda: dataclasses.replace(case, history=case.history + turn),
        "Limits(...)               (per model opened)": lambda: Limits(rpm=600, backoff={"initial_s": 0.5}),
    }
    times = {name: best_us(fn, args.number, args.repeat) for name, fn in runs.items()}
    plain_us, key_us = list(times.values())[:2]
    print(f"{'operation':52s} {'us':>7s} {'x plain':>8s} {'x cache_key':>12s}")
    for name, us in times.items():
        print(f"{name:52s} {us:7.2f} {us / plain_us:8.2f} {us / key_us:12.2f}")


if __name__ == "__main__":
    main()
