"""The sample cache batches its writes: what survives ``kill -9`` of a real process.

The guarantee (``frontier_qa/runtime/_cache.py``): every sample of a case the probe has
recorded is committed before the record is written, and any sample is committed at most
``flush_interval_s`` after it was paid for, by the cache's writer thread. Each test starts a
real Python process, kills it with SIGKILL mid-run (no atexit, no finally) and reads what
reached the SQLite file; the last lets a process exit normally without closing its cache.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from frontier_qa.probing import ProbeSettings
from frontier_qa.store._case_store import CaseStore
from frontier_qa.target import Case, cache_key
from tests.factories import REPO

CALLS = """
import asyncio, sys, time
from frontier_qa.runtime import Limits, ManagedTarget, SampleCache
from frontier_qa.target import Case, Sampling
from frontier_qa.testing import ScriptedAdapter, always

async def main():
    target = ManagedTarget(ScriptedAdapter(always("42")), Limits(), None, SampleCache(sys.argv[1]))
    for i in range(100_000):
        await target.sample(Case("c", "What is 6 x 7?"), 1, Sampling(seed=0), start=i)
        print(i, time.monotonic(), flush=True)  # paid for and returned: reported
        await asyncio.sleep(0.002)

asyncio.run(main())
"""

PROBE = """
import asyncio, sys
from frontier_qa.probing import ProbeSettings, probe
from frontier_qa.store._case_store import CaseStore
from frontier_qa.testing import EndlessCurriculum, ScriptedAdapter, case, moody, open_scripted
from frontier_qa.probing._curriculum_seam import Proposal

class Slow(ScriptedAdapter):
    async def generate(self, case, n, sampling, *, start=0):
        await asyncio.sleep(0.003)
        return await super().generate(case, n, sampling, start=start)

make = lambda i: Proposal(case(f"w{i}", f"Which weekday comes {i} days after Monday?", topic="weekdays", truth="Friday"))
asyncio.run(probe(open_scripted(Slow(moody("weekdays")), sys.argv[1]), EndlessCurriculum(make),
                  ProbeSettings(replay_first=False, max_candidates=None), store=CaseStore(sys.argv[2])))
"""


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL


def _keys(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {row[0] for row in conn.execute("SELECT key FROM samples")}
    finally:
        conn.close()


def test_a_paid_sample_is_on_disk_within_the_flush_interval_after_kill_9(tmp_path: Path, report_measurement) -> None:  # type: ignore[no-untyped-def]
    from frontier_qa.target import Sampling

    process = _spawn(CALLS, str(tmp_path / "cache"))
    assert process.stdout is not None
    paid: list[tuple[int, float]] = []
    while not paid or paid[-1][1] - paid[0][1] < 2.5:  # 2.5 s of calls: many flush intervals
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.stderr else "no output"
        index, at = line.split()
        paid.append((int(index), float(at)))
    killed_at = time.monotonic()
    _kill(process)
    stored = _keys(tmp_path / "cache" / "samples.sqlite3")
    key = lambda i: cache_key("scripted:test", Case("c", "What is 6 x 7?").messages, Sampling(seed=0), i,  # noqa: E731
                            {"version": "1"})  # the scripted adapter is version 1
    # 0.05 s interval; 1 s of slack for a busy machine (the writer thread is not scheduled at once)
    settled = [i for i, at in paid if at < killed_at - 1.05]
    assert settled and all(key(i) in stored for i in settled)
    lost = [i for i, _ in paid if key(i) not in stored]
    report_measurement("cache_kill_9", f"cache kill -9: {len(paid)} samples reported, {len(lost)} not on disk, "
                                       f"all of them paid in the last {killed_at - paid[lost[0]][1]:.3f} s"
                       if lost else f"cache kill -9: {len(paid)} samples reported, all on disk")


def test_every_sample_of_a_recorded_case_survives_kill_9(tmp_path: Path) -> None:
    store_dir, cache_dir = tmp_path / "store", tmp_path / "cache"
    process = _spawn(PROBE, str(cache_dir), str(store_dir))
    runs = store_dir / "runs"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # kill once a dozen cases are recorded (the run goes on forever)
        files = list(runs.glob("*.jsonl")) if runs.exists() else []
        if files and sum('"kind":"case"' in line for line in files[0].read_text().splitlines()) >= 12:
            break
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        time.sleep(0.05)
    _kill(process)
    records = CaseStore(store_dir).case_records()
    assert len(records) >= 12
    stored = _keys(cache_dir / "samples.sqlite3")
    sampling = ProbeSettings().run_sampling()
    for record in records:
        case = record.case.to_case()
        extra = {"version": record.target_version} if record.target_version else None
        missing = [s.sample_index for s in record.samples
                   if cache_key(record.target_id, case.messages, sampling, s.sample_index, extra) not in stored]
        assert not missing, f"{record.id}: samples {missing} were recorded but never reached the cache"
    assert records[0].case_class.value in {"frontier", "pass", "unresolved"}


UNCLOSED = """
import sys
from frontier_qa.runtime import SampleCache
from frontier_qa.target import Trajectory, Usage

cache = SampleCache(sys.argv[1], flush_interval_s=3600)  # the writer would wait an hour
for i in range(3):
    cache.put(f"k{i}", "t", Trajectory(text=f"s{i}", usage=Usage(1, 1), sample_index=i))
print(len(cache._pending), flush=True)  # queued, not committed; the process exits without close()
"""


def test_a_normal_exit_commits_the_samples_of_a_cache_nobody_closed(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", UNCLOSED, str(tmp_path / "cache")], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"
    with sqlite3.connect(tmp_path / "cache" / "samples.sqlite3") as conn:
        assert sorted(k for (k,) in conn.execute("SELECT key FROM samples")) == ["k0", "k1", "k2"]
