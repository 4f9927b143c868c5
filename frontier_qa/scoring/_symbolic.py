"""Symbolic answer comparison in a worker process, with a time limit that works from any thread.

math-verify bounds its own work with ``signal.alarm``, which only works in the main
thread; the probe engine calls from asyncio worker threads. So the comparison runs in a
persistent child process (``python -c "...serve()"``) that answers one JSON line per
request. Inside the child a soft ``SIGALRM`` deadline (in *its* main thread) stops runaway
sympy work and the child lives on; if the child does not answer by the hard deadline
(work stuck in C code, a memory blow-up) the parent kills it and starts a new one for the
next request. Either way the caller gets ``"undecided"`` within ``timeout_s``.

The parent never imports sympy or math-verify: a pathological expression cannot hang or
bloat the process that runs the probe.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Literal

from frontier_qa.errors import AnswerError

Outcome = Literal["equal", "different", "undecided"]

# The child finishes on its own before the parent gives up, so that a timed-out sympy
# call costs a restart only when it could not be interrupted.
_SOFT_SHARE = 0.8
_STARTUP_TIMEOUT_S = 60.0
# Address-space cap for the child: sympy can try to build huge integers; a MemoryError
# in the child is an "undecided", not a swapping machine.
_MEMORY_LIMIT_BYTES = 4 * 1024**3


class _Worker:
    """One child process and the thread that reads its answers."""

    def __init__(self) -> None:
        self._stderr: IO[bytes] = tempfile.TemporaryFile()
        env = dict(os.environ)
        # Make the child find this very frontier_qa, installed or not.
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "from frontier_qa.scoring._symbolic import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name="frontier-qa-symbolic-reader", daemon=True).start()
        ready: str | None = ""
        deadline = time.monotonic() + _STARTUP_TIMEOUT_S
        while ready is not None and ready.strip() != "ready":
            try:
                ready = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                ready = None
        if ready is None:
            tail = self._stderr_tail()
            self.kill()
            raise AnswerError(
                "the symbolic equivalence worker did not start: " + tail,
                hint="check that math-verify is installed (pip install 'math-verify>=0.7'), "
                "or compare with mode='numeric' / mode='string'",
            )

    def _read(self) -> None:
        assert self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        finally:
            self._lines.put(None)  # EOF: the child exited or was killed
            self._proc.stdout.close()

    def _stderr_tail(self) -> str:
        try:
            self._stderr.seek(0)
            return self._stderr.read()[-2000:].decode("utf-8", "replace").strip() or "(no output)"
        except (OSError, ValueError):
            return "(no output)"

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def ask(self, request: dict[str, Any], timeout_s: float) -> Outcome:
        """Send one request; ``"undecided"`` (and a dead worker) when no answer comes in time."""
        assert self._proc.stdin is not None
        deadline = time.monotonic() + timeout_s
        try:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            self.kill()
            return "undecided"
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            self.kill()
            return "undecided"
        try:
            outcome = json.loads(line).get("outcome")
        except (ValueError, AttributeError):
            self.kill()  # out of step with the protocol: start afresh
            return "undecided"
        return outcome if outcome in ("equal", "different") else "undecided"

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - kill -9 did not reap in 5 s
            pass
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        except OSError:
            pass
        self._stderr.close()
        # stdout is closed by the reader thread when it sees EOF.


class SymbolicPool:
    """Up to ``max_workers`` child processes shared by every comparator in this process.

    Thread-safe: a caller takes an idle worker (starting one if fewer than ``max_workers``
    exist), or waits for one. Counters say how often each thing happened.
    """

    def __init__(self, max_workers: int = 2) -> None:
        self.max_workers = max(1, max_workers)
        self._slots = threading.BoundedSemaphore(self.max_workers)
        self._changed = threading.Condition()
        self._idle: list[_Worker] = []
        self._starting = 0  # replacements being started in the background
        self._closed = False
        self.started = 0
        self.killed = 0

    def compare(self, a: str, b: str, timeout_s: float) -> Outcome:
        """Compare two LaTeX/plain-math answers symbolically within ``timeout_s`` seconds."""
        return self._ask({"a": a, "b": b, "soft_s": timeout_s * _SOFT_SHARE}, timeout_s)

    def _ask(self, request: dict[str, Any], timeout_s: float) -> Outcome:
        with self._slots:
            worker = self._take()
            outcome = worker.ask(request, timeout_s)
            with self._changed:
                if worker.alive and not self._closed:
                    self._idle.append(worker)
                    self._changed.notify()
                    return outcome
                if worker.alive:
                    worker.kill()  # the pool was closed while this worker was busy
                    return outcome
                self.killed += 1
                if self._closed:
                    return outcome
                self._starting += 1
            # Start the replacement now, in the background, so that the next caller does
            # not pay the start (~1 s) on top of its own time limit.
            threading.Thread(target=self._replace, name="frontier-qa-symbolic-start", daemon=True).start()
            return outcome

    def _replace(self) -> None:
        try:
            worker: _Worker | None = _Worker()
        except AnswerError:
            worker = None  # the next _take starts one itself and reports the error
        with self._changed:
            self._starting -= 1
            self.started += worker is not None
            if worker is not None and self._closed:
                worker.kill()
            elif worker is not None:
                self._idle.append(worker)
            self._changed.notify()

    def _take(self) -> _Worker:
        with self._changed:
            self._closed = False
            while not self._idle and self._starting:
                self._changed.wait()
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                worker.kill()
            self.started += 1
        return _Worker()  # outside the lock: a start takes ~1 s and must not block the others

    def warm_up(self) -> None:
        """Start one worker now, so the first comparison does not pay for the start (~1 s)."""
        with self._slots:
            worker = self._take()
            with self._changed:
                self._idle.append(worker)
                self._changed.notify()

    def close(self) -> None:
        """Stop every idle worker (busy ones are stopped when they are handed back)."""
        with self._changed:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_POOL: SymbolicPool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> SymbolicPool:
    """The process-wide worker pool, created on first use and closed at exit."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = SymbolicPool(max_workers=min(2, os.cpu_count() or 1))
            atexit.register(_POOL.close)
        return _POOL


# ---------------------------------------------------------------------------- child side


class _Deadline(BaseException):
    """Raised by the child's SIGALRM handler; a BaseException so sympy's ``except Exception`` lets it through."""


def serve() -> None:  # pragma: no cover - runs in the child process; exercised through SymbolicPool
    """Child main loop: read ``{"a", "b", "soft_s"}`` lines, write ``{"outcome"}`` lines."""
    import logging
    import signal

    # Answers go out on a private copy of stdout; anything a library prints goes to stderr,
    # so stray output cannot put the parent out of step with the protocol.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT_BYTES, _MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    from functools import lru_cache

    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    # Timeouts are ours (below), so math-verify's "timeout disabled" warning is noise.
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    latex_config = [LatexExtractionConfig(boxed_match_priority=0)]
    expr_config = [ExprExtractionConfig()]

    @lru_cache(maxsize=4096)
    def parsed(answer: str) -> tuple[Any, ...]:
        found = parse(f"${answer}$", latex_config, parsing_timeout=None)
        if not found:
            found = parse(answer, expr_config, parsing_timeout=None)
        return tuple(found)

    def compare(a: str, b: str) -> Outcome:
        pa, pb = list(parsed(a)), list(parsed(b))
        if not pa or not pb:
            return "different"
        # math-verify is not symmetric (gold vs prediction); votes need a symmetric relation.
        same = verify(pa, pb, timeout_seconds=None) or verify(pb, pa, timeout_seconds=None)
        return "equal" if same else "different"

    def on_alarm(signum: int, frame: object) -> None:
        raise _Deadline

    has_alarm = hasattr(signal, "setitimer")
    if has_alarm:
        signal.signal(signal.SIGALRM, on_alarm)
    print("ready", file=channel, flush=True)
    for line in sys.stdin:
        outcome: Outcome = "undecided"
        try:
            request = json.loads(line)
            try:
                if has_alarm:
                    signal.setitimer(signal.ITIMER_REAL, max(0.001, float(request["soft_s"])))
                if request.get("debug_block_signals_s"):
                    # Test hook: simulate work the soft deadline cannot interrupt (C code),
                    # so the parent's hard deadline and restart path can be tested for real.
                    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
                    end = time.monotonic() + float(request["debug_block_signals_s"])
                    while time.monotonic() < end:
                        pass
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
                outcome = compare(str(request["a"]), str(request["b"]))
            finally:
                if has_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        except (_Deadline, MemoryError, RecursionError):
            outcome = "undecided"
        except Exception:  # noqa: BLE001 - a parse bug must not kill the worker
            outcome = "undecided"
        print(json.dumps({"outcome": outcome}), file=channel, flush=True)
