"""Run budgets: calls, tokens, US dollars and wall time, checked before every backend call.

A call is *reserved* right before it is dispatched and *settled* when it ends. A new call
may start only while every limit still has room, counting calls already in flight against
``max_calls``; tokens and cost are known only when a call ends, so those two can be
overshot by what the calls in flight use, never more. One tracker may be shared by
several targets (e.g. curriculum and executor) to cap a whole run. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from frontier_qa.errors import BudgetExceededError, RunInterruptedError
from frontier_qa.runtime._limits import Budget
from frontier_qa.runtime._rate_limit import Clock


@dataclass(frozen=True)
class BudgetSnapshot:
    """Spending so far, for progress output.

    Attributes:
        calls: backend calls finished (failed attempts included).
        in_flight: backend calls started and not finished.
        tokens: prompt + completion tokens reported by finished calls, plus estimates for
            calls abandoned without a reply (timed out, cancelled) that the server still ran.
        estimated_tokens: how many of ``tokens`` are such estimates.
        cost_usd: US dollars of finished calls whose cost is known.
        wall_s: seconds since the first call (0 before it).
        budget: the limits these are measured against.
        priced_calls: finished calls that reported a cost; none: the cost is unknown, not 0.
    """

    calls: int
    in_flight: int
    tokens: int
    cost_usd: float
    wall_s: float
    budget: Budget
    estimated_tokens: int = 0
    priced_calls: int = 0

    @property
    def remaining_calls(self) -> int | None:
        """Calls that may still start (``None``: unlimited)."""
        b = self.budget.max_calls
        return None if b is None else max(0, b - self.calls - self.in_flight)

    @property
    def remaining_tokens(self) -> int | None:
        b = self.budget.max_tokens
        return None if b is None else max(0, b - self.tokens)

    @property
    def remaining_cost_usd(self) -> float | None:
        b = self.budget.max_cost_usd
        return None if b is None else max(0.0, b - self.cost_usd)

    @property
    def remaining_wall_s(self) -> float | None:
        b = self.budget.max_wall_s
        return None if b is None else max(0.0, b - self.wall_s)

    def remaining(self) -> dict[str, float | int | None]:
        """``{"calls", "tokens", "cost_usd", "wall_s"}`` left (``None``: unlimited)."""
        return {
            "calls": self.remaining_calls,
            "tokens": self.remaining_tokens,
            "cost_usd": self.remaining_cost_usd,
            "wall_s": self.remaining_wall_s,
        }

    def describe(self) -> str:
        """One line for progress output, e.g. ``calls 12/100, tokens 3400, $0.0123``."""

        def part(label: str, used: float, limit: float | None, fmt: str) -> str:
            return f"{label} {used:{fmt}}" + ("" if limit is None else f"/{limit:{fmt}}")

        b = self.budget
        cost = (f"cost ${self.cost_usd:.4f}" if self.priced_calls else "cost unknown") + (
            "" if b.max_cost_usd is None else f"/{b.max_cost_usd:.4f}")
        return ", ".join(
            [
                part("calls", self.calls, b.max_calls, "d"),
                part("tokens", self.tokens, b.max_tokens, "d")
                + (f" ({self.estimated_tokens} estimated)" if self.estimated_tokens else ""),
                cost,
                part("wall s", self.wall_s, b.max_wall_s, ".1f"),
            ]
        )


@dataclass(frozen=True)
class Reservation:
    """A granted call slot; settle it exactly once."""

    id: int


class BudgetTracker:
    """Enforces a :class:`Budget` across every call of a run.

    Args:
        budget: the limits (default: unlimited, still tracking spending).
        clock: monotonic clock in seconds.
    """

    def __init__(self, budget: Budget | None = None, *, clock: Clock = time.monotonic) -> None:
        self.budget = budget or Budget()
        self._clock = clock
        self._lock = threading.Lock()
        self._started: float | None = None
        self._calls = 0
        self._tokens = 0
        self._estimated = 0
        self._cost = 0.0
        self._priced = 0
        self._open: set[int] = set()
        self._next_id = 0
        self._interrupted = False

    def interrupt(self) -> None:
        """Refuse every new call from now on (:class:`RunInterruptedError`); calls in flight go on."""
        with self._lock:
            self._interrupted = True

    @property
    def interrupted(self) -> bool:
        """Whether :meth:`interrupt` was called."""
        return self._interrupted

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._open)

    def _exhausted(self, now: float) -> str | None:
        b = self.budget
        if b.max_calls is not None and self._calls + len(self._open) >= b.max_calls:
            return (f"{self._calls} calls made and {len(self._open)} in flight reach "
                    f"Budget.max_calls = {b.max_calls}")
        if b.max_tokens is not None and self._tokens >= b.max_tokens:
            return f"{self._tokens} tokens used reach Budget.max_tokens = {b.max_tokens}"
        if b.max_cost_usd is not None and self._cost >= b.max_cost_usd:
            return f"${self._cost:.4f} spent reaches Budget.max_cost_usd = {b.max_cost_usd}"
        if b.max_wall_s is not None and self._started is not None and now - self._started >= b.max_wall_s:
            return f"{now - self._started:.1f} s elapsed reach Budget.max_wall_s = {b.max_wall_s}"
        return None

    def reserve(self) -> Reservation:
        """Claim one call, or raise :class:`BudgetExceededError` if no new call may start."""
        with self._lock:
            now = self._clock()
            if self._started is None:
                self._started = now
            if self._interrupted:
                raise RunInterruptedError("interrupted: no new backend call was started",
                                          hint="continue the run with --resume RUN_ID")
            reason = self._exhausted(now)
            if reason is not None:
                raise BudgetExceededError(
                    f"budget exhausted: {reason}; no new backend call was started",
                    hint="raise the budget (or run again: samples already made are cached and "
                    "cost nothing the second time)",
                )
            self._next_id += 1
            self._open.add(self._next_id)
            return Reservation(self._next_id)

    def settle(self, reservation: Reservation, *, tokens: int = 0, cost_usd: float | None = None,
               estimated: bool = False) -> None:
        """Record a finished call (failed ones too, with 0 tokens): once per reservation.

        ``estimated``: ``tokens`` is an estimate (a call abandoned before the server said
        what it used); counted like reported tokens, and shown apart.
        """
        with self._lock:
            if reservation.id not in self._open:
                raise RuntimeError(f"reservation {reservation.id} settled twice or never granted")
            self._open.discard(reservation.id)
            self._calls += 1
            self._tokens += max(int(tokens), 0)
            if estimated:
                self._estimated += max(int(tokens), 0)
            if cost_usd is not None:
                self._cost += max(float(cost_usd), 0.0)
                self._priced += 1

    def cancel(self, reservation: Reservation) -> None:
        """Drop a reservation whose call never started (its caller stopped first): nothing is counted."""
        with self._lock:
            self._open.discard(reservation.id)

    def can_start(self) -> bool:
        """Whether a new call would be granted now."""
        with self._lock:
            return self._exhausted(self._clock()) is None

    def snapshot(self) -> BudgetSnapshot:
        """Spending so far and what is left."""
        with self._lock:
            now = self._clock()
            wall = 0.0 if self._started is None else now - self._started
            return BudgetSnapshot(self._calls, len(self._open), self._tokens, self._cost, wall, self.budget,
                                  estimated_tokens=self._estimated, priced_calls=self._priced)

    def remaining(self) -> dict[str, float | int | None]:
        """Calls, tokens, cost and wall seconds left (``None``: unlimited)."""
        return self.snapshot().remaining()

    def __repr__(self) -> str:
        return f"BudgetTracker({self.snapshot().describe()})"


__all__ = ["BudgetSnapshot", "BudgetTracker", "Reservation"]
