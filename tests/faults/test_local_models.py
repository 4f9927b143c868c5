"""In-process models and agents: slow is not stuck, and exiting never aborts."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.factories import REPO
from tests.faults.conftest import Faults, case_rows

pytestmark = pytest.mark.faults

EXIT_MID_GENERATION = textwrap.dedent('''
    import atexit, sys, threading, time
    # registered before frontier-qa's own hook, so it runs after it (atexit is last in, first out)
    atexit.register(lambda: print("worker alive at exit:", hf._batcher._thread.is_alive(), flush=True))
    from tests.tiny_models import build_tiny_model
    from frontier_qa.adapters._hf_adapter import HFAdapter
    from frontier_qa.target import Case, Sampling
    from tests.factories import run

    hf = HFAdapter(build_tiny_model(sys.argv[1]))
    generating = threading.Event()
    plain = hf._generate_rows
    def rows(batch):
        generating.set()
        return plain(batch)
    hf._generate_rows = rows

    def caller():  # a probe's sample still waiting when the program ends
        try:
            run(hf.generate(Case(id="c", prompt="hello " * 50), 32, Sampling(temperature=1.0, max_tokens=100000)))
            print("generation finished", flush=True)
        except Exception as exc:
            print("caller got", type(exc).__name__, flush=True)

    threading.Thread(target=caller, daemon=True).start()
    generating.wait(60)
    time.sleep(1.0)  # the worker is inside model.generate (torch's C++ thread pool busy)
    print("exiting", flush=True)
''')


@pytest.mark.model
def test_exiting_while_a_local_model_generates_does_not_abort(tmp_path: Path) -> None:
    # Before the fix this exited 134 ("terminate called without an active exception") 3 runs in 3:
    # a daemon thread still inside torch while the interpreter tore down its thread pools.
    pytest.importorskip("transformers")
    script = tmp_path / "exit_mid.py"
    script.write_text(EXIT_MID_GENERATION)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "tiny")], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                                                       "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    assert "terminate called" not in done.stderr
    assert done.returncode == 0, done.stderr[-2000:]
    # the atexit hook stopped the batch at its next step and joined the worker
    assert done.stdout.splitlines()[-1] == "worker alive at exit: False"
    assert "generation finished" not in done.stdout


def test_a_slow_python_agent_is_not_timed_out_and_the_console_says_so(faults: Faults) -> None:
    faults.behave(delay=1.0)
    faults.write_cases(case_rows(2))
    rc, out, err = faults.cli(*faults.probe_args("--k", "2", "--set", "target.limits.timeout_s=0.2",
                                                 "--set", "target.limits.slow_call_s=0.5", "--out", "out"))
    assert rc == 0, out + err
    assert "has run 0.5 s and is still going; it computes in this process, so no per-call timeout" in err
    assert err.count("is still going") == 1  # once per target
    assert "stopped: curriculum exhausted" in out
    assert len(faults.agent_calls()) == 2 * 2  # every sample answered once, none retried


def test_a_local_timeout_that_fires_says_why_the_run_stopped(faults: Faults) -> None:
    faults.behave(delay=1.0)
    rc, out, err = faults.cli(*faults.probe_args(
        "--set", "target.limits.local_timeout_s=0.2", "--set", "target.limits.max_retries=0",
        "--set", "target.limits.max_consecutive_failures=2", "--concurrency", "1", "--out", "out"))
    assert "Traceback" not in err
    assert "stopped: target unavailable" in out
    assert "no answer within Limits.local_timeout_s = 0.2 s" in out + err
    assert "raise target.limits.local_timeout_s (now 0.2 s)" in out  # the health hint names the right key
    assert rc == 3, out + err
