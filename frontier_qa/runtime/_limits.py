"""The knobs of the target runtime: rate limits, retries and budgets, as frozen values.

``Limits`` says how fast and how persistently one target is called; ``Budget`` says how
much a run may spend in total. Each is one frozen pydantic value (:func:`~frontier_qa._frozen.frozen_value`):
the Python API builds it, and the config file uses the same class as its ``limits`` and
``budget`` sections, so a bound is written once, here.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator

from frontier_qa._frozen import from_mapping, frozen_value

Seconds = Annotated[float, Field(ge=0)]
# a positive finite number, or None for no limit
PositiveOrNone = Annotated["float | None", Field(gt=0, allow_inf_nan=False)]


@frozen_value
class Backoff:
    """Exponential backoff between retries of one call (config: ``limits.backoff``).

    The wait before retry ``r`` (1-based) is ``min(initial_s * 2**(r-1), max_s)`` plus a
    uniform jitter in ``[0, jitter_s]`` (spreads retries of concurrent calls apart).

    Attributes:
        initial_s: first wait, in seconds.
        max_s: the longest exponential wait, in seconds (jitter comes on top).
        jitter_s: the largest random extra per wait, in seconds.
        max_retry_after_s: the longest server ``Retry-After`` honoured, in seconds; a longer
            one is clipped to this (a server asking for an hour would stall the run).
    """

    initial_s: Seconds = 1.0
    max_s: Seconds = 60.0
    jitter_s: Seconds = 1.0
    max_retry_after_s: Seconds = 300.0

    @field_validator("max_s")
    @classmethod
    def _not_below_initial(cls, value: float, info: ValidationInfo) -> float:
        initial = info.data.get("initial_s")
        if initial is not None and value < initial:
            raise ValueError(f"should be >= initial_s ({initial})")
        return value


@frozen_value
class Limits:
    """How one target may be called (config: ``target.limits`` and every model's ``limits``).

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

    rpm: Annotated[PositiveOrNone, Field(description="requests per minute; null: no limit")] = None
    tpm: Annotated[PositiveOrNone, Field(description="tokens per minute; null: no limit")] = None
    max_concurrency: Annotated[int, Field(ge=1, description="backend calls in flight at once")] = 16
    timeout_s: Annotated[PositiveOrNone, Field(description="seconds per call to a server before a retry")] = 120.0
    local_timeout_s: Annotated[PositiveOrNone, Field(
        description="the same for in-process models and Python agents; null: no limit")] = None
    slow_call_s: Annotated[PositiveOrNone, Field(
        description="report a call still running after this long")] = 60.0
    max_retries: Annotated[int, Field(ge=0)] = 5
    backoff: Backoff = Field(default_factory=Backoff)
    max_consecutive_failures: Annotated[int | None, Field(ge=1)] = 25
    rpm_burst: Annotated[int, Field(ge=1)] = 1

    @classmethod
    def from_dict(cls, data: Any) -> Limits:
        """Build from a config mapping; ``backoff`` may be a nested mapping. Unknown keys raise."""
        return from_mapping(cls, data, "limits")

    def with_(self, **changes: Any) -> Limits:
        """A copy with some fields changed."""
        return replace(self, **changes)


@frozen_value
class Budget:
    """What a whole run may spend; every field ``None`` means unlimited (config: ``budget``,
    shared by the target, curriculum model, critic and judge).

    A budget stops *new* backend calls; calls already in flight finish, so a run
    overshoots by at most what those calls use. Cached samples cost nothing.

    Attributes:
        max_calls: backend calls (each retry attempt is a call).
        max_tokens: prompt + completion tokens, as the backend reports them.
        max_cost_usd: US dollars, from the trajectories' ``cost_usd``.
        max_wall_s: seconds since the first call of the run.
    """

    max_calls: Annotated[int | None, Field(ge=0, description="backend calls (each retry counts)")] = None
    max_tokens: Annotated[int | None, Field(ge=0, description="prompt + completion tokens")] = None
    max_cost_usd: Annotated[float | None, Field(ge=0, description="US dollars")] = None
    max_wall_s: Annotated[float | None, Field(ge=0, description="seconds since the first call")] = None

    @classmethod
    def from_dict(cls, data: Any) -> Budget:
        """Build from a config mapping. Unknown keys raise :class:`~frontier_qa.errors.ConfigError`."""
        return from_mapping(cls, data, "budget")

    @property
    def unlimited(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))


__all__ = ["Backoff", "Budget", "Limits"]
