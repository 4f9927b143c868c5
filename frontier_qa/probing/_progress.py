"""Progress output for ``frontier-qa probe`` and ``replay``: a live bar on a terminal, quiet lines in CI.

:class:`ProbeProgress` is the engine's ``progress`` callback (it takes
:class:`~frontier_qa.probing._engine.ProgressEvent` values). Modes:

* ``rich``: a progress bar over candidates (out of ``probing.max_candidates`` when set) and a
  live line of counters by class, replay verdicts and the remaining budget;
* ``plain``: one line per finding (a failure, suspect or frontier case, a regression or flaky
  replay), a counters line at most every ``interval_s`` seconds, and the stop reason — fit
  for CI logs, which keep every line;
* ``auto`` (default): ``rich`` on a terminal, ``plain`` when the stream is not a TTY or
  ``CI`` is set (GitHub Actions, GitLab and most CI services set ``CI=true``);
* ``off``: nothing.

A run is never silent: ``plain`` writes a ``started`` line the moment the run begins and a
heartbeat line whenever ``heartbeat_s`` (30 s) passed without one — the phase (which knob is
being searched, cases being sampled), the cases decided, the calls so far (read live from the
target's budget) and the last boundary estimate — so a model that loads or a long batch shows
as work, not as a hang; ``rich`` keeps the same line live under its bar.

Every line carries the budget line of the target (``target.snapshot().describe()``,
e.g. ``calls 40/500, tokens 6200, cost $ 0.0000, wall s 12.3``): how much is left is the
first thing to know about a run that pays per call.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import IO, Any

from frontier_qa.errors import ConfigError
from frontier_qa.store._records import CLASS_ORDER, CaseClass

MODES = ("auto", "rich", "plain", "off")
_FINDINGS = (CaseClass.FAILURE, CaseClass.SUSPECT, CaseClass.FRONTIER, CaseClass.UNCHECKED)
_LOUD_VERDICTS = ("regression", "flaky")


def resolve_mode(mode: str, stream: IO[str], env: dict[str, str] | None = None) -> str:
    """The mode ``auto`` stands for on ``stream``: ``rich`` on a TTY outside CI, else ``plain``."""
    if mode not in MODES:
        raise ConfigError(f"unknown progress mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    if mode != "auto":
        return mode
    env = dict(os.environ) if env is None else env
    in_ci = env.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    is_tty = bool(getattr(stream, "isatty", lambda: False)())
    return "rich" if is_tty and not in_ci else "plain"


def counts_line(counts: dict[str, int] | Any) -> str:
    """``12 cases: pass 6, frontier 4, failure 1, suspect 1`` (classes with zero left out)."""
    parts = [f"{c.value} {counts.get(c.value, 0)}" for c in CLASS_ORDER if counts.get(c.value, 0)]
    total = sum(counts.get(c.value, 0) for c in CLASS_ORDER)
    return f"{total} cases" + (f": {', '.join(parts)}" if parts else "")


class ProbeProgress:
    """The engine's progress callback; use as a context manager around the run.

    Args:
        mode: ``auto``, ``rich``, ``plain`` or ``off`` (see the module docstring).
        stream: where to write (default ``sys.stderr``, so stdout keeps the summary).
        total: candidates expected (``probing.max_candidates``), for the bar; ``None``: unknown.
        title: the bar's label (``probe`` or ``replay``).
        interval_s: plain mode: least seconds between two counters lines.
        heartbeat_s: plain mode: most seconds without a line (a heartbeat fills the gap);
            ``None``: no heartbeat.
        clock: monotonic clock in seconds (tests pass a fake one).
    """

    def __init__(
        self,
        mode: str = "auto",
        *,
        stream: IO[str] | None = None,
        total: int | None = None,
        title: str = "probe",
        interval_s: float = 10.0,
        heartbeat_s: float | None = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.mode = resolve_mode(mode, self.stream)
        self.total = total
        self.title = title
        self.interval_s = interval_s
        self.clock = clock
        self.counts: dict[str, int] = {}
        self.verdicts: Counter[str] = Counter()
        self.budget: str | None = None
        self.stop_reason: str | None = None
        self._started = clock()
        self._last_line = self._started
        self._live: Any = None
        self._bar: Any = None
        self._task: Any = None
        self.heartbeat_s = heartbeat_s
        self.phase = "starting: opening the target, waiting for its first answers"
        self.estimate: str | None = None  # the last boundary estimate of a generators run
        self._live_budget: Callable[[], str | None] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def attach(self, budget: Callable[[], str | None]) -> None:
        """Read the budget line live (the run calls this): a heartbeat shows calls made since the last event."""
        self._live_budget = budget

    # -- context -------------------------------------------------------------------------------

    def __enter__(self) -> ProbeProgress:
        if self.mode == "rich":
            from rich.console import Console, Group
            from rich.live import Live
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.text import Text

            console = Console(file=self.stream)
            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console)
            self._task = self._bar.add_task(f"{self.title}: candidates", total=self.total)
            status = self

            class _Status:
                def __rich__(self) -> Text:
                    return Text(status.status_line(), style="dim")

            self._live = Live(Group(self._bar, _Status()), console=console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        elif self.mode == "plain":
            self._write(f"{self._stamp()} started   {self.title}; a line at least every "
                        f"{self.heartbeat_s or self.interval_s:g} s until it ends")
            if self.heartbeat_s is not None:
                self._beat = threading.Thread(target=self._heartbeats, name="frontier-qa-progress", daemon=True)
                self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
            self._beat = None
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def _heartbeats(self) -> None:
        assert self.heartbeat_s is not None
        due = max(self.heartbeat_s * 0.95, self.heartbeat_s - 1.0)  # a little early: never over heartbeat_s
        while not self._stop.wait(min(0.5, self.heartbeat_s)):
            if self.clock() - self._last_line >= due:
                self._write(f"{self._stamp()} working   {self.heartbeat_line()}")

    def heartbeat_line(self) -> str:
        """Phase, cases decided, calls so far and the last boundary estimate, in one line."""
        parts = [self.phase]
        if any(self.counts.get(c.value, 0) for c in CLASS_ORDER) or not self.estimate:
            parts.append(counts_line(self.counts))  # a generators search counts tasks in its estimate
        budget = self._budget()
        if budget:
            parts.append(budget)
        if self.estimate:
            parts.append(f"so far: {self.estimate}")
        return " | ".join(parts)

    def _budget(self) -> str | None:
        if self._live_budget is not None:
            try:
                return self._live_budget() or self.budget
            except Exception:  # noqa: BLE001 - a progress line must never break the run
                return self.budget
        return self.budget

    # -- events ----------------------------------------------------------------------------------

    def status_line(self) -> str:
        """Counters, replay verdicts and budget in one line."""
        parts = [self.phase, counts_line(self.counts)] if self.mode == "rich" else [counts_line(self.counts)]
        if self.counts.get("candidates"):
            parts.append(f"{self.counts['candidates']} candidates")
        if self.verdicts:
            parts.append("replay " + ", ".join(f"{v} {n}" for v, n in sorted(self.verdicts.items())))
        if self.budget:
            parts.append(self.budget)
        return " | ".join(parts)

    def __call__(self, event: Any) -> None:
        """Take one :class:`~frontier_qa.probing._engine.ProgressEvent`."""
        if event.counts:
            self.counts = dict(event.counts)
        if event.budget:
            self.budget = event.budget
        verdict = event.comparison.verdict.value if getattr(event, "comparison", None) is not None else None
        if event.kind == "replayed" and verdict:
            self.verdicts[verdict] += 1
        if event.kind == "stopped":
            self.stop_reason = event.message
        self._track_phase(event)
        if event.kind == "waiting" and self.mode != "off":  # before the bar has anything to show
            print(f"frontier-qa: {event.message}", file=self.stream, flush=True)
            return
        if self.mode == "rich":
            self._rich(event)
        elif self.mode == "plain":
            self._plain(event, verdict)

    def _track_phase(self, event: Any) -> None:
        if event.kind == "axis":
            self.phase, self.estimate = event.message, None
        elif event.kind == "measured":
            self.estimate = event.message
        elif event.kind == "boundary":
            self.estimate = f"found {event.message}"
        elif event.kind == "proposed":
            self.phase = "proposing and sampling cases"
        elif event.kind == "replayed":
            self.phase = "replaying the stored cases"
        elif event.kind in ("sampled", "classified") and self.phase.startswith("starting"):
            self.phase = "sampling cases"

    def _stamp(self) -> str:
        return f"[{self.title} {self.clock() - self._started:7.1f}s]"

    def _rich(self, event: Any) -> None:
        if self._bar is None:
            return
        self._bar.update(self._task, completed=self.counts.get("candidates", 0))
        if event.kind == "boundary":
            self._bar.console.print(f"  boundary  {event.message}", markup=False, highlight=False)
        if event.kind == "classified" and event.case_class in (CaseClass.FAILURE, CaseClass.SUSPECT):
            self._bar.console.print(f"  {event.case_class.value:<9} {event.case_id}  {_p(event.p_hat)}  "
                                    f"{_short(event.message)}", markup=False, highlight=False)

    def _plain(self, event: Any, verdict: str | None) -> None:
        now = self.clock()
        stamp = f"[{self.title} {now - self._started:7.1f}s]"
        budget = f" | {self.budget}" if self.budget else ""
        if event.kind == "classified" and event.case_class in _FINDINGS:
            why = f" — {_short(event.message)}" if event.case_class is not CaseClass.FRONTIER else ""
            self._write(f"{stamp} {event.case_class.value:<9} {event.case_id} {_p(event.p_hat)} k={event.k}"
                        f"{why}{budget}")
        elif event.kind == "replayed" and verdict in _LOUD_VERDICTS:
            self._write(f"{stamp} {verdict:<9} {event.case_id} {_short(event.message)}{budget}")
        elif event.kind in ("axis", "boundary"):  # a generators run: which knob, and what was found on it
            self._write(f"{stamp} {event.kind:<9} {event.message}{budget if event.kind == 'boundary' else ''}")
            return
        elif event.kind == "measured" and now - self._last_line >= self.interval_s:
            self._write(f"{stamp} measured  {event.message}{budget}")
            return
        elif event.kind == "stopped":
            self._write(f"{stamp} stopped ({event.message}): {self.status_line()}")
            return
        if event.kind in ("classified", "replayed") and now - self._last_line >= self.interval_s:
            self._write(f"{stamp} {self.status_line()}")

    def _write(self, line: str) -> None:
        with self._lock:  # the heartbeat thread writes too
            self._last_line = self.clock()
            print(line, file=self.stream, flush=True)


def _p(p_hat: float | None) -> str:
    return "p̂=—" if p_hat is None else f"p̂={p_hat:.2f}"


def _short(text: str, limit: int = 100) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["MODES", "ProbeProgress", "counts_line", "resolve_mode"]
