"""Retry policy: how long to wait after a failed attempt, and HTTP helpers adapters share.

"Adapters decide, the core retries" (inspect_ai ``_retry.py``): an adapter turns its
exception into an :class:`~frontier_qa.target.ErrorClass`; this module turns that verdict
into a wait. Transient errors back off exponentially with jitter (tenacity); rate-limit
errors wait exactly the server's ``Retry-After`` when it sent one, else back off too.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from typing import Any

from tenacity import RetryCallState
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

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None and outcome.failed else None
        verdict = getattr(exc, "verdict", None)
        return retry_wait_s(self.backoff, retry_state.attempt_number,
                            verdict if isinstance(verdict, ErrorClass) else None)


def retry_wait_s(backoff: Backoff, retry: int, verdict: ErrorClass | None = None) -> float:
    """Seconds to wait before retry ``retry`` (1-based) after a failure judged ``verdict``.

    A rate-limit verdict carrying the server's Retry-After waits exactly that (clipped to
    ``backoff.max_retry_after_s``); anything else waits ``min(initial_s * 2**(retry-1), max_s)``
    plus a uniform jitter in ``[0, jitter_s]``.
    """
    if verdict is not None and verdict.kind is ErrorKind.RATE_LIMITED and verdict.retry_after is not None:
        return min(max(verdict.retry_after, 0.0), backoff.max_retry_after_s)
    exponential = min(backoff.initial_s * 2.0 ** max(retry - 1, 0), backoff.max_s)
    return exponential + random.uniform(0.0, backoff.jitter_s)


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


__all__ = ["AttemptFailed", "BackoffWait", "classify_status", "parse_retry_after", "retry_wait_s"]
