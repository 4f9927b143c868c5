"""The knobs of the target runtime: rate limits, retries and budgets, as frozen values.

``Limits`` says how fast and how persistently one target is called; ``Budget`` says how
much a run may spend in total. Both are plain values so a config file, the CLI and the
Python API build them the same way (``Limits.from_dict``, ``Budget.from_dict``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from frontier_qa.errors import ConfigError


def _check(condition: bool, what: str, value: Any, rule: str) -> None:
    if not condition:
        raise ConfigError(f"{what} = {value!r} is invalid", hint=f"{what} must be {rule}")


def _positive_or_none(value: float | None, what: str) -> None:
    if value is not None:
        _check(isinstance(value, (int, float)) and math.isfinite(value) and value > 0, what, value,
               "a positive number, or None for no limit")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff between retries of one call.

    The wait before retry ``r`` (1-based) is ``min(initial_s * 2**(r-1), max_s)`` plus a
    uniform jitter in ``[0, jitter_s]`` (spreads retries of concurrent calls apart).

    Attributes:
        initial_s: first wait, in seconds.
        max_s: the longest exponential wait, in seconds (jitter comes on top).
        jitter_s: the largest random extra per wait, in seconds.
        max_retry_after_s: the longest server ``Retry-After`` honoured, in seconds; a longer
            one is clipped to this (a server asking for an hour would stall the run).
    """

    initial_s: float = 1.0
    max_s: float = 60.0
    jitter_s: float = 1.0
    max_retry_after_s: float = 300.0

    def __post_init__(self) -> None:
        for name in ("initial_s", "max_s", "jitter_s", "max_retry_after_s"):
            value = getattr(self, name)
            _check(isinstance(value, (int, float)) and value >= 0, f"Backoff.{name}", value,
                   "a number of seconds >= 0")
        _check(self.max_s >= self.initial_s, "Backoff.max_s", self.max_s, ">= Backoff.initial_s")


@dataclass(frozen=True)
class Limits:
    """How one target may be called.

    Attributes:
        rpm: requests per minute, paced smoothly (GCRA); ``None`` for no limit.
        tpm: tokens per minute (prompt + completion, estimated before a call and
            corrected with the reported usage after it); ``None`` for no limit.
        max_concurrency: backend calls in flight at once (per event loop).
        timeout_s: seconds one call to a server may take before it is abandoned and retried;
            ``None`` for no timeout.
        local_timeout_s: the same for in-process targets (``Adapter.in_process``: transformers
            and vLLM models, Python agents), whose calls only get slower on a busy machine;
            default ``None``: no wall-clock limit (``Budget.max_wall_s`` still bounds the run).
        slow_call_s: seconds after which a call still running is reported once per target as
            slow (a warning on the ``frontier_qa`` logger, shown on the console); ``None``: never.
        max_retries: retries per call after the first attempt (0 = never retry).
        backoff: waits between retries.
        max_consecutive_failures: failed attempts in a row, across all calls, after which the
            run stops with :class:`~frontier_qa.errors.TargetUnavailableError`; ``None``: never.
        rpm_burst: requests that may start back to back before pacing applies (1 = evenly spaced).
    """

    rpm: float | None = None
    tpm: float | None = None
    max_concurrency: int = 16
    timeout_s: float | None = 120.0
    local_timeout_s: float | None = None
    slow_call_s: float | None = 60.0
    max_retries: int = 5
    backoff: Backoff = field(default_factory=Backoff)
    max_consecutive_failures: int | None = 25
    rpm_burst: int = 1

    def __post_init__(self) -> None:
        _positive_or_none(self.rpm, "Limits.rpm")
        _positive_or_none(self.tpm, "Limits.tpm")
        _positive_or_none(self.timeout_s, "Limits.timeout_s")
        _positive_or_none(self.local_timeout_s, "Limits.local_timeout_s")
        _positive_or_none(self.slow_call_s, "Limits.slow_call_s")
        _check(isinstance(self.max_concurrency, int) and self.max_concurrency >= 1,
               "Limits.max_concurrency", self.max_concurrency, "an integer >= 1")
        _check(isinstance(self.max_retries, int) and self.max_retries >= 0,
               "Limits.max_retries", self.max_retries, "an integer >= 0")
        _check(self.max_consecutive_failures is None
               or (isinstance(self.max_consecutive_failures, int) and self.max_consecutive_failures >= 1),
               "Limits.max_consecutive_failures", self.max_consecutive_failures, "an integer >= 1 or None")
        _check(isinstance(self.rpm_burst, int) and self.rpm_burst >= 1,
               "Limits.rpm_burst", self.rpm_burst, "an integer >= 1")
        if isinstance(self.backoff, Mapping):  # from_dict-style nesting in a plain constructor
            object.__setattr__(self, "backoff", Backoff(**self.backoff))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Limits:
        """Build from a config mapping; ``backoff`` may be a nested mapping. Unknown keys raise."""
        data = dict(data or {})
        _reject_unknown(cls, data, "limits")
        if isinstance(data.get("backoff"), Mapping):
            _reject_unknown(Backoff, data["backoff"], "limits.backoff")
            data["backoff"] = Backoff(**data["backoff"])
        return cls(**data)

    def with_(self, **changes: Any) -> Limits:
        """A copy with some fields changed."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Budget:
    """What a whole run may spend; every field ``None`` means unlimited.

    A budget stops *new* backend calls; calls already in flight finish, so a run
    overshoots by at most what those calls use. Cached samples cost nothing.

    Attributes:
        max_calls: backend calls (each retry attempt is a call).
        max_tokens: prompt + completion tokens, as the backend reports them.
        max_cost_usd: US dollars, from the trajectories' ``cost_usd``.
        max_wall_s: seconds since the first call of the run.
    """

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_wall_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_calls", "max_tokens"):
            value = getattr(self, name)
            _check(value is None or (isinstance(value, int) and value >= 0), f"Budget.{name}", value,
                   "an integer >= 0, or None for no limit")
        for name in ("max_cost_usd", "max_wall_s"):
            value = getattr(self, name)
            _check(value is None or (isinstance(value, (int, float)) and value >= 0), f"Budget.{name}",
                   value, "a number >= 0, or None for no limit")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Budget:
        """Build from a config mapping. Unknown keys raise :class:`ConfigError`."""
        data = dict(data or {})
        _reject_unknown(cls, data, "budget")
        return cls(**data)

    @property
    def unlimited(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))


def _reject_unknown(cls: type, data: Mapping[str, Any], where: str) -> None:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(map(repr, unknown))} in {where}",
                          hint=f"allowed keys: {', '.join(sorted(known))}")


__all__ = ["Backoff", "Budget", "Limits"]
