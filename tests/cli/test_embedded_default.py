"""The embedded default: the README's main command, a real probe with no API key and no GPU.

Two task generators (digit sums, and the same sums in words) probe the example agent
(examples/agents/smol_agent.py, SmolLM2-135M with a sandboxed Python tool); the CLI runs in its own
process from the repository root, exactly as the Quickstart runs it, on one knob (number words,
digits 1-4) so the test takes a few minutes. Two CPU-burning processes run beside it (a loaded CI
machine): in-process model calls must get slower, never time out, and the process must exit 0, not
abort at interpreter exit (what tests/faults/test_local_models.py checks with tiny in-process models).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.factories import REPO

ONE_KNOB = "curriculum.generators=[{use: number_words, knobs: {op: [add], digits: [1, 2, 3, 4]}}]"


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.faults
def test_default_config_finds_where_the_example_agent_stops_reading_numbers(tmp_path: Path, report_measurement,  # type: ignore[no-untyped-def]
                                                                           cpu_burners) -> None:
    pytest.importorskip("transformers")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_QA_") or k == "FRONTIER_QA_CACHE"}
    env["FRONTIER_QA_AGENT_CACHE"] = str(tmp_path / "agent-cache")
    out = tmp_path / "report"
    cmd = [sys.executable, "-m", "frontier_qa", "probe", "--config", "configs/default.yaml",
           "--store", str(tmp_path / "store"), "--out", str(out), "--progress", "plain", "--set", ONE_KNOB]
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    assert "terminate called" not in done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "no answer within" not in done.stdout + done.stderr  # no call was timed out
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("[probe")]
    assert lines[0].startswith("[probe     0.0s] started")  # alive from the first second
    stamps = [float(re.match(r"\[probe\s+([\d.]+)s\]", line)[1]) for line in lines]  # type: ignore[index]
    assert max(b - a for a, b in zip(stamps, stamps[1:], strict=False)) < 45  # a line every 30 s (+ a busy machine)

    report = json.loads((out / "report.json").read_text())
    assert report["gate"]["health"] == []
    assert {"cases.jsonl", "report.json", "junit.xml", "report.md", "report.html"} <= {p.name for p in out.iterdir()}
    assert report["run"]["target_id"] == "python:examples/agents/smol_agent.py:solve"
    assert re.fullmatch(r"4\.(ct2|hf)\+src\.[0-9a-f]{8}", report["run"]["target_version"])
    (boundary,) = report["boundaries"]
    assert boundary["generator"] == "number_words" and boundary["knob"] == "digits" and boundary["problem"] is None
    high, low = boundary["crossings"]
    # one-digit number words are right 0.8-1.0 of the time (an unseeded sampler: runs differ, README),
    # so the 0.8 crossing is decided at 2 digits or already at 1; every run so far fell below 0.3 at 3
    # digits (none right from 3 on): that crossing is decided inside the knob's range
    assert high["threshold"] == 0.8 and high["status"] in ("found", "at the easy end"), high
    assert high["first_below"] in (1, 2), high
    assert low["threshold"] == 0.3 and low["status"] == "found", low
    assert 1 <= low["last_above"] < low["first_below"] <= 4, low
    assert '<circle class="acc"' in (out / "report.html").read_text()  # the accuracy-by-knob plot
    rows = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    for row in rows:  # every frontier and failure case rests on a computed reference
        if row["case_class"] in ("frontier", "failure"):
            assert row["case"]["reference_verified"], row["id"]
    # the agent is found unreliable on a case: a failure (p̂ below the band), or with k <= 4 of an unseeded
    # sampler a frontier case where 1 of 4 right leaves the interval inside the band (1 CI run in 3 on
    # 2026-11-28 kept no failure; the crossings above are the finding itself)
    assert any(row["case_class"] in ("failure", "frontier") for row in rows), [r["case_class"] for r in rows]
    # the agent used its Python tool
    assert sum(s["n_tool_calls"] for row in rows for s in row["samples"]) >= len(rows)
    report_measurement("embedded_default", f"embedded default (number_words digits 1-4): {high['text']}; {low['text']}; "
                                           f"{boundary['calls']} calls in {wall:.0f} s beside {cpu_burners} CPU burners")
