"""Benchmark: torch threads for a CPU model beside busy processes (frontier_qa/runtime/_cpu_share.py).

Not a test. Run from the repository root::

    python benchmarks/cpu_share.py [--burners 0 2] [--tokens 48] [--repeats 3]

SmolLM2-135M (``hf:smollm2``, built offline) generates ``--tokens`` tokens greedily, with torch's
own thread count (one per core: the baseline) and with the count :class:`ThreadFitter` picks from
the kernel's count of running threads, alternating, beside 0 and 2 processes that each spin on a
core. It prints the median seconds of each and their ratio (baseline / fitted: above 1 means the
fitter is faster). Whole-process wall clock on a shared machine: compare the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(key, value)

import torch  # noqa: E402
import transformers  # noqa: E402

from frontier_qa.runtime import _cpu_share as cpu_share  # noqa: E402
from frontier_qa.runtime._local_models import ensure_smollm2  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burners", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = ensure_smollm2()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    inputs = tokenizer("Write a short math word problem about apples and oranges:", return_tensors="pt")
    ceiling = torch.get_num_threads()
    cpu_share.RECHECK_S = 0.0

    def generate() -> float:
        started = time.perf_counter()
        with torch.inference_mode():
            model.generate(**inputs, max_new_tokens=args.tokens, min_new_tokens=args.tokens, do_sample=False)
        return time.perf_counter() - started

    generate()  # warm up
    print(f"{os.cpu_count()} cores, torch starts with {ceiling} threads; {args.tokens} tokens per generation")
    for burners in args.burners:
        procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)]
        time.sleep(0.5)
        try:
            fitter = cpu_share.ThreadFitter(torch, ceiling=ceiling)
            base, fitted, chosen = [], [], []
            for _ in range(args.repeats):
                torch.set_num_threads(ceiling)
                base.append(generate())
                chosen.append(fitter.fit())
                fitted.append(generate())
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
        b, f = statistics.median(base), statistics.median(fitted)
        print(f"beside {burners} busy processes: {ceiling} threads {b:.2f} s, fitted ({sorted(set(chosen))} threads) "
              f"{f:.2f} s, ratio {b / f:.2f}x")
    torch.set_num_threads(ceiling)


if __name__ == "__main__":
    main()
