"""Retry policy: how long to wait after a failed attempt, and HTTP helpers adapters share.

"Adapters decide, the core retries" (inspect_ai ``_retry.py``): an adapter turns its
exception into an :class:`~frontier_qa.target.ErrorClass`; this module turns that verdict
into a wait. Transient errors back off exponentially with jitter (tenacity); rate-limit
errors wait exactly the server's ``Retry-After`` when it sent one, else back off too.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from typing import Any

from tenacity import RetryCallState, wait_exponential, wait_random
from tenacity.wait import wait_base

from frontier_qa.runtime._limits import Backoff
from frontier_qa.target import ErrorClass, ErrorKind


class AttemptFailed(Exception):
    """One attempt failed with a retryable verdict (internal to the runtime's retry loop)."""

    def __init__(self, verdict: ErrorClass) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


class BackoffWait(wait_base):
    """tenacity wait strategy: Retry-After when the server gave one, else exponential + jitter.

    Args:
        backoff: the exponential schedule and the cap on Retry-After.
    """

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self._exponential = wait_exponential(multiplier=backoff.initial_s, max=backoff.max_s)
        self._jitter = wait_random(0, backoff.jitter_s)

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None and outcome.failed else None
        verdict = getattr(exc, "verdict", None)
        if (
            isinstance(verdict, ErrorClass)
            and verdict.kind is ErrorKind.RATE_LIMITED
            and verdict.retry_after is not None
        ):
            return min(max(verdict.retry_after, 0.0), self.backoff.max_retry_after_s)
        # wait_exponential gives multiplier * 2**(attempt-1), capped at max
        return self._exponential(retry_state) + self._jitter(retry_state)


def parse_retry_after(headers: Mapping[str, Any] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``Retry-After`` / ``retry-after-ms`` headers, or ``None``.

    ``Retry-After`` may be a number of seconds or an HTTP date (RFC 9110 §10.2.3);
    ``retry-after-ms`` (OpenAI, Azure) takes precedence when present.

    Args:
        headers: response headers (any case-insensitive or plain mapping).
        now: current UNIX time in seconds for HTTP dates (default: ``time.time()``).
    """
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
            if math.isfinite(value) and value >= 0:
                return value
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def classify_status(status: int | None) -> ErrorKind | None:
    """The usual verdict for an HTTP status: 429 rate limited; 408, 409, 425 and 5xx
    transient (what OpenAI's own client retries); other 4xx fatal; ``None`` if unknown.
    """
    if status is None:
        return None
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status in (408, 409, 425) or status >= 500:
        return ErrorKind.TRANSIENT
    if 400 <= status < 500:
        return ErrorKind.FATAL
    return None


__all__ = ["AttemptFailed", "BackoffWait", "classify_status", "parse_retry_after"]
