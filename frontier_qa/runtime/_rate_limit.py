"""Smooth request and token pacing (GCRA), safe across asyncio tasks and threads.

The Generic Cell Rate Algorithm keeps one number per limit, the *theoretical arrival
time* (TAT) of the next unit of work, instead of a bucket that refills on a timer. A
request of weight ``w`` may start at ``max(TAT, now) + w·T − capacity·T`` (``T`` = seconds per
unit), and pushes TAT forward by ``w·T``. This is exactly a token bucket of ``capacity``
units refilled at ``1/T`` per second, but needs no background task and hands out start
times in FIFO order, so waiting callers sleep once instead of polling.

* Requests per minute: weight 1, capacity ``rpm_burst`` (1 = evenly spaced requests, which
  providers that meter per second as well as per minute tolerate best).
* The request limit is also checked strictly when a request is actually dispatched
  (:meth:`Pacer.admit`), so a caller that wakes late (a stalled event loop) cannot burst.
* Tokens per minute: weight = estimated tokens of the call, capacity = one minute's tokens
  (OpenAI documents continuous replenishment up to the per-minute limit). After the call
  the estimate is corrected with the reported usage (:meth:`RateLimiter.reconcile`).
* A 429 with ``Retry-After`` pauses all new starts until then (:meth:`RateLimiter.pause_for`):
  the server has said the whole key is over its limit, not just this request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[Any]]


class Pacer:
    """One GCRA limit: ``rate_per_s`` units per second with a burst of ``capacity`` units.

    Args:
        rate_per_s: sustained units per second (e.g. ``rpm / 60``).
        capacity: units that may be used back to back when idle (>= 1).
        clock: monotonic clock in seconds (injectable for tests).
    """

    def __init__(self, rate_per_s: float, capacity: float, *, clock: Clock = time.monotonic) -> None:
        if rate_per_s <= 0 or capacity < 1:
            raise ValueError("rate_per_s must be > 0 and capacity >= 1")
        self.interval_s = 1.0 / rate_per_s
        self.capacity = float(capacity)
        self._clock = clock
        self._tat = -math.inf  # theoretical arrival time of the next unit (schedule)
        self._sent_tat = -math.inf  # the same, over what was actually dispatched (admit)
        self._lock = threading.Lock()

    def reserve(self, weight: float = 1.0) -> float:
        """Claim ``weight`` units and return the clock time at which they may be used.

        Weights above ``capacity`` are clipped to it (otherwise they could never start).
        """
        weight = min(max(weight, 0.0), self.capacity)
        with self._lock:
            now = self._clock()
            tat = max(self._tat, now)
            self._tat = tat + weight * self.interval_s
            return max(now, self._tat - self.capacity * self.interval_s)

    def admit(self, weight: float = 1.0) -> float:
        """Strict GCRA check at the moment of dispatch: ``0.0`` if ``weight`` units may go now
        (they are recorded), else the seconds to wait before asking again.

        :meth:`reserve` hands out a FIFO schedule; a caller that wakes late (an event loop
        that stalled) would otherwise fire together with the callers scheduled after it.
        Checking actual dispatch times keeps the burst within ``capacity`` after any stall.
        """
        weight = min(max(weight, 0.0), self.capacity)
        with self._lock:
            now = self._clock()
            # forgive a waker's lateness up to a quarter interval: timer jitter must not make
            # the schedule drift (1 ms late per request is 1 % of throughput at 600 RPM)
            tat = max(self._sent_tat, now - 0.25 * self.interval_s)
            allowed = tat + (weight - self.capacity) * self.interval_s
            if allowed > now + 1e-9:
                return allowed - now
            self._sent_tat = tat + weight * self.interval_s
            return 0.0

    def adjust(self, delta: float) -> None:
        """Add ``delta`` units to what was used (negative: give back an over-estimate)."""
        with self._lock:
            if self._tat > -math.inf:
                self._tat += delta * self.interval_s
            if self._sent_tat > -math.inf:
                self._sent_tat += delta * self.interval_s

    def hold_until(self, when: float) -> None:
        """Start nothing before clock time ``when`` (a server's Retry-After)."""
        with self._lock:
            # next start = TAT + T - capacity·T must be >= when
            floor = when + (self.capacity - 1.0) * self.interval_s
            self._tat = max(self._tat, floor)
            self._sent_tat = max(self._sent_tat, floor)


def estimate_tokens(
    messages: Sequence[Mapping[str, Any]], n: int, max_tokens: int, tools: Sequence[Any] = ()
) -> int:
    """A conservative token estimate for a call: prompt at ~4 characters per token, plus
    ``n · max_tokens`` completion tokens (how OpenAI itself charges a request against TPM).
    """
    chars = sum(len(json.dumps(m.get("content", ""), ensure_ascii=False)) for m in messages)
    if tools:
        chars += len(json.dumps(list(tools), default=str))
    return math.ceil(chars / 4) + max(n, 1) * max(max_tokens, 0)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits for one target.

    Args:
        rpm: requests per minute, or ``None``.
        tpm: tokens per minute, or ``None``.
        rpm_burst: requests that may start back to back (1 = evenly spaced).
        clock: monotonic clock in seconds.
        sleep: coroutine function that sleeps for a number of seconds.
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        rpm_burst: int = 1,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._requests = Pacer(rpm / 60.0, rpm_burst, clock=clock) if rpm else None
        self._tokens = Pacer(tpm / 60.0, tpm, clock=clock) if tpm else None
        self._paused_until = -math.inf
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Whether :meth:`acquire` may wait: a limit is configured, or a server's Retry-After pause
        is in force (otherwise acquire is a no-op, and callers may skip it).
        """
        return self._requests is not None or self._tokens is not None or self._paused_until > self._clock()

    async def acquire(self, tokens: int = 0) -> None:
        """Wait until one request of about ``tokens`` tokens may start."""
        while True:
            with self._lock:
                paused_until = self._paused_until
            now = self._clock()
            if paused_until > now:
                log.debug("rate limit: the server asked for a pause; waiting %.2f s", paused_until - now)
                await self._sleep(paused_until - now)
                continue
            start = now
            if self._requests is not None:
                start = max(start, self._requests.reserve(1))
            if self._tokens is not None:
                start = max(start, self._tokens.reserve(tokens))
            if start > now:
                log.debug("rate limit: waiting %.2f s for the RPM/TPM pacing", start - now)
                await self._sleep(start - now)
            if self._requests is not None:
                # woke late after a stall? then space out from the last actual dispatch
                while (wait := self._requests.admit()) > 0:
                    await self._sleep(wait)
            with self._lock:
                paused = self._paused_until > self._clock()
            if not paused:
                return
            # a 429 arrived while we slept: our slot is forfeit, queue again after the pause

    def reconcile(self, estimated: int, actual: int) -> None:
        """Correct the TPM limit after a call: it used ``actual`` tokens, not ``estimated``."""
        if self._tokens is not None:
            self._tokens.adjust(actual - min(estimated, self._tokens.capacity))

    def refund(self, estimated: int) -> None:
        """Give back the tokens of a call that failed before using any."""
        self.reconcile(estimated, 0)

    def pause_for(self, seconds: float) -> None:
        """Let no request start for ``seconds`` (the server's Retry-After)."""
        log.info("rate limited: no new request starts for %.2f s (the server's Retry-After)", seconds)
        until = self._clock() + max(seconds, 0.0)
        with self._lock:
            self._paused_until = max(self._paused_until, until)
        if self._requests is not None:
            self._requests.hold_until(until)


__all__ = ["Pacer", "RateLimiter", "estimate_tokens"]
