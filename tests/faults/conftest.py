"""The fault suite: real CLI subprocesses under kill -9, SIGINT, two writers, bad input, busy CPUs.

Every test here runs ``python -m frontier_qa`` in its own process (what a user or CI runs), against
a scripted ``python:`` agent whose behaviour a JSON file steers (delay, wrong answers, exit codes),
so the faults are real (signals, locks, open files) while the target costs nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.factories import REPO

AGENT = '''
import json, os, time
from pathlib import Path

version = "1"
HERE = Path(__file__).parent


def answer(case, sample_index):
    behaviour = json.loads((HERE / "behaviour.json").read_text())
    with open(HERE / "calls.log", "a") as log:  # one line per sample the agent was asked for
        log.write(f"{os.getpid()} {case.id} {sample_index}\\n")
    me = f"{os.getpid()} "
    asked = sum(line.startswith(me) for line in (HERE / "calls.log").read_text().splitlines())
    held = lambda: (HERE / "hold").exists() or (HERE / f"hold-{os.getpid()}").exists()
    while asked > behaviour.get("hold_after", asked) and held():
        time.sleep(0.02)  # held: the test decides when this writer may go on
    time.sleep(behaviour.get("delay", 0.0))
    if behaviour.get("raise") is not None:
        raise SystemExit(behaviour["raise"])
    if behaviour.get("status") is not None:  # an HTTP error inside the agent (401: a bad key, fatal)
        error = RuntimeError(f"HTTP {behaviour['status']}")
        error.status_code = behaviour["status"]
        raise error
    truth = case.reference
    if behaviour.get("coin") and sample_index % 2:
        return "\\\\boxed{wrong}"
    return "\\\\boxed{%s}" % truth
'''


def case_rows(n: int) -> list[dict[str, Any]]:
    """``n`` arithmetic cases with verified references and distinct prompts."""
    rows = []
    for i in range(n):
        a, b = 17 + 13 * i, 5 + 7 * i
        rows.append({"id": f"add-{i}", "topic": "arithmetic", "reference": str(a + b), "reference_verified": True,
                     "prompt": f"Case {i}: Ana has {a} apples and gets {b} more from friend number {i * 3}. How many?"})
    return rows


class Faults:
    """A project folder (agent, behaviour, cases) and the CLI run in subprocesses inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "agent.py").write_text(AGENT)
        self.behave()
        self.write_cases(case_rows(8))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_QA_")}
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), self.env.get("PYTHONPATH")]))
        self.started: list[subprocess.Popen[str]] = []

    def kill_leftovers(self) -> None:
        """Kill the process group of every CLI a failed test left running (hung agents included)."""
        for proc in self.started:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()

    def behave(self, **behaviour: Any) -> None:
        (self.root / "behaviour.json").write_text(json.dumps(behaviour))

    def hold(self, pid: int | None = None) -> None:
        """Block a process's samples after its first ``hold_after`` (every process's: no ``pid``)
        until :meth:`release`, so a run stays live as long as the test needs.
        """
        (self.root / ("hold" if pid is None else f"hold-{pid}")).touch()

    def release(self, pid: int | None = None) -> None:
        (self.root / ("hold" if pid is None else f"hold-{pid}")).unlink(missing_ok=True)

    def write_cases(self, rows: list[dict[str, Any]]) -> None:
        (self.root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def probe_args(self, *extra: str, k: int = 4) -> list[str]:
        # fixed k: every case costs exactly k samples, whatever the answers (under the calibrated
        # policy 4 right answers of 4 are not yet 80 % sure: unresolved, and the gate exits 3)
        return ["probe", "--target", "python:agent.py:answer", "--curriculum", "cases.jsonl", "--policy", "fixed",
                "--k", str(k),
                "--store", "store", "--progress", "plain", *extra]

    def start(self, *args: str, stderr_to: Path | None = None) -> subprocess.Popen[str]:
        """Start the CLI (its own process group); ``stderr_to``: a file the test can read meanwhile."""
        err = stderr_to.open("w") if stderr_to is not None else subprocess.PIPE
        try:
            proc = subprocess.Popen([sys.executable, "-m", "frontier_qa", *args], cwd=self.root, env=self.env,
                                    stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
            self.started.append(proc)
            return proc
        finally:
            if stderr_to is not None:
                err.close()  # type: ignore[union-attr]

    def cli(self, *args: str, timeout: float = 120) -> tuple[int, str, str]:
        proc = self.start(*args)
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        return proc.returncode, out, err

    def agent_calls(self) -> list[tuple[str, str, int]]:
        """(pid, case id, sample index) of every sample the agent was asked for, in order."""
        path = self.root / "calls.log"
        if not path.exists():
            return []
        rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
        return [(pid, case, int(index)) for pid, case, index in rows]

    def run_cases(self, run_id: str) -> list[dict[str, Any]]:
        path = self.root / "store" / "runs" / f"{run_id}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if '"kind":"case"' in line]


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def start_held_writer(faults: Faults, run_id: str = "R", *args: str) -> subprocess.Popen[str]:
    """A probe of run ``run_id`` that records its first case, then is held live (:meth:`Faults.hold`)."""
    faults.behave(hold_after=4)
    faults.hold()
    proc = faults.start(*faults.probe_args("--run-id", run_id, "--concurrency", "1", *args))
    wait_for(lambda: len(faults.run_cases(run_id)) >= 1, what="the first writer's first case")
    return proc


@pytest.fixture
def faults(tmp_path: Path) -> Iterator[Faults]:
    project = Faults(tmp_path)
    yield project
    project.kill_leftovers()
