"""GPU smoke test before the validation spends minutes: CUDA is visible and a bf16 matmul runs at speed.

``python benchmarks/gpu/smoke.py --json smoke.json`` prints and writes the device, its memory, the
torch / CUDA versions and the bf16 matmul rate (8192³, the mean of 10 products after 3 warm-ups:
an H100 gave ≈ 800 TFLOP/s on random data in this workplace's device notes). Without CUDA it exits 1,
unless ``--cpu-ok`` (the dry run), which times a small product on CPU so the code still runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def matmul_rate(torch: Any, device: str, n: int, repeats: int = 10, warmup: int = 3) -> float:
    """bf16 ``n × n × n`` matrix products per second, as TFLOP/s (2n³ operations each)."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(warmup):
        a @ b
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(repeats):
        c = a @ b
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    if not torch.isfinite(c.float().sum()):
        raise RuntimeError("the bf16 product is not finite")
    return 2 * n**3 * repeats / elapsed / 1e12


def smoke(cpu_ok: bool = False) -> dict[str, Any]:
    """What the GPU is and how fast a bf16 product runs on it (``cuda: false`` without one)."""
    import torch

    report: dict[str, Any] = {"torch": torch.__version__, "cuda_build": torch.version.cuda,
                              "cuda": torch.cuda.is_available()}
    if report["cuda"]:
        props = torch.cuda.get_device_properties(0)
        report.update(device=torch.cuda.get_device_name(0), devices=torch.cuda.device_count(),
                      memory_gib=round(props.total_memory / 2**30, 1), multiprocessors=props.multi_processor_count,
                      bf16=torch.cuda.is_bf16_supported(), matmul_n=8192)
        report["bf16_tflops"] = round(matmul_rate(torch, "cuda", 8192), 1)
    elif cpu_ok:
        report.update(device="cpu", matmul_n=256, bf16_tflops=round(matmul_rate(torch, "cpu", 256, repeats=3), 4))
    return report


def main(argv: list[str] | None = None) -> int:
    """Print the smoke report; exit 1 without CUDA unless ``--cpu-ok``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    parser.add_argument("--cpu-ok", action="store_true", help="no GPU is fine (the CPU dry run)")
    args = parser.parse_args(argv)
    report = smoke(args.cpu_ok)
    print(json.dumps(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    if not report["cuda"] and not args.cpu_ok:
        print("smoke: CUDA is not visible to torch; the GPU validation cannot run", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
