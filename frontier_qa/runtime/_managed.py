"""``ManagedTarget``: one adapter wrapped with cache, concurrency cap, rate limits, budget,
timeout and retries, exposed as a :class:`~frontier_qa.target.Target`.

"Adapters decide, the core retries" (inspect_ai ``_retry.py``). For ``sample(case, n,
sampling, start=s)`` the runtime:

1. serves indices ``s..s+n-1`` found in the cache (they cost nothing and count against no budget)
   and, in the same step, claims the rest (single flight across processes sharing the cache: a
   sample another process is fetching is waited for, not paid again);
2. splits the claimed ones into backend calls of at most ``adapter.max_n`` samples;
3. per attempt: takes a concurrency slot, waits for the RPM/TPM pacer, reserves the budget,
   calls ``adapter.generate`` under ``Limits.timeout_s`` (``Limits.local_timeout_s``, default
   none, for in-process adapters: a local model on a busy CPU is slow, not stuck); a call still
   running after ``Limits.slow_call_s`` is reported once per target (a warning on this module's logger);
4. on an exception asks ``adapter.classify``: FATAL raises :class:`TargetError` at once;
   TRANSIENT backs off (exponential + jitter); RATE_LIMITED waits ``Retry-After`` (and
   pauses every new call that long) or backs off. Retries are capped per call; a call that
   runs out of retries yields trajectories with ``error`` set (scored as failures);
   ``Limits.max_consecutive_failures`` failed attempts in a row, across all calls, stop the
   run with :class:`TargetUnavailableError`.

Logged on this module's logger (``frontier_qa.runtime._managed``; ``frontier-qa -v`` shows
INFO): each retry (INFO, with the redacted verdict), a call that runs out of retries and a
target that stops the run (WARNING); rate-limit waits on ``frontier_qa.runtime._rate_limit``.

An adapter with ``routes_model_calls = True`` (a framework agent) gets a
:class:`~frontier_qa.runtime._gateway.ModelGateway` as ``adapter.gateway``: its agent's model calls
take the rate limits, retries, budget and per-call cache one by one, so its sample takes none of
its own (still a concurrency slot, the timeout, halting and the whole-sample cache).

Every requested index comes back exactly once and in order: if an adapter returns fewer
samples than asked (a server that ignored ``n``), the missing indices are requested again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from frontier_qa.errors import BudgetExceededError, ConfigError, TargetError, TargetUnavailableError
from frontier_qa.redaction import mentions, redact, register_secrets
from frontier_qa.runtime._aio import CallTimeout, gather_or_cancel, run_sync, within
from frontier_qa.runtime._budget import BudgetSnapshot, BudgetTracker, Reservation
from frontier_qa.runtime._cache import SampleCache, record_json, trajectory_from_json
from frontier_qa.runtime._limits import Budget, Limits
from frontier_qa.runtime._rate_limit import RateLimiter, Sleep, estimate_tokens
from frontier_qa.runtime._retry import AttemptFailed, BackoffWait
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, Trajectory, Usage, cache_key

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RuntimeStats:
    """What a managed target has done so far.

    Attributes:
        calls: backend calls dispatched (every retry attempt counts; equals the requests
            a server sees for adapters that make one request per call).
        succeeded: calls that returned samples.
        failed: calls that raised (any kind).
        retries: attempts after the first of a call.
        rate_limited: failed calls classified RATE_LIMITED.
        samples: samples returned by ``sample`` (cached and failed included).
        cached: samples served from the cache (those another process fetched meanwhile included).
        shared: samples another process sharing the cache was fetching, waited for instead of paid.
        abandoned: server calls given up before their reply (timed out, cancelled): counted as
            calls, with estimated tokens in the budget.
        failed_samples: samples returned with ``error`` set (retries exhausted).
        slow_calls: calls that ran longer than ``Limits.slow_call_s``.
        tokens: prompt and completion tokens the calls reported (estimates for abandoned calls).
        cost_usd: US dollars of the calls that reported a cost; ``None`` while none did.
        cached_calls: model calls of framework agents replayed from the per-call cache
            (:mod:`frontier_qa.runtime._gateway`; their samples were not cached whole).

    For an adapter that routes its agent's model calls through the runtime
    (``routes_model_calls``), a call is one model call of the agent, not one sample.
    """

    calls: int = 0
    succeeded: int = 0
    failed: int = 0
    retries: int = 0
    rate_limited: int = 0
    samples: int = 0
    cached: int = 0
    failed_samples: int = 0
    slow_calls: int = 0
    shared: int = 0
    abandoned: int = 0
    tokens: int = 0
    cost_usd: float | None = None
    cached_calls: int = 0


def _chunks(indices: Sequence[int], max_n: int) -> list[tuple[int, int]]:
    """Contiguous runs of ``indices`` (sorted), each cut into pieces of at most ``max_n``."""
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and out[-1][0] + out[-1][1] == i and out[-1][1] < max_n:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((i, 1))
    return out


class ManagedTarget:
    """A :class:`~frontier_qa.target.Target` built from an :class:`Adapter` and the runtime.

    Args:
        adapter: the backend (one attempt per ``generate``, never retries itself).
        limits: rate limits, concurrency, timeout and retry policy.
        budget: a :class:`Budget` or a shared :class:`BudgetTracker` (default: unlimited).
        cache: a :class:`SampleCache`, or ``None`` for no caching.
        secrets: extra secret strings to keep out of messages and the cache (the adapter's
            own ``secrets`` attribute is always included).
        sleep: coroutine used for every wait (injectable for tests).
        version: a version given by configuration (a model revision, a deployment tag); it
            goes in front of the adapter's own version (``v7+src.3f2a9c1b``). The version is
            part of every cache key: a new version never replays another version's samples.
    """

    def __init__(
        self,
        adapter: Adapter,
        limits: Limits | None = None,
        budget: Budget | BudgetTracker | None = None,
        cache: SampleCache | None = None,
        *,
        secrets: Iterable[str] = (),
        sleep: Sleep = asyncio.sleep,
        version: str | None = None,
    ) -> None:
        self.adapter = adapter
        self._secrets = tuple(secrets) + tuple(getattr(adapter, "secrets", ()) or ())
        register_secrets(self._secrets)  # masked at every sink of this process from now on
        self.id: str = redact(adapter.id, self._secrets)  # a key in a spec (a URL's ?key=) is no identity
        self._version = version
        self.limits = limits or Limits()
        self.budget = budget if isinstance(budget, BudgetTracker) else BudgetTracker(budget)
        self.cache = cache
        self._sleep = sleep
        self._limiter = RateLimiter(self.limits.rpm, self.limits.tpm, rpm_burst=self.limits.rpm_burst, sleep=sleep)
        self._wait = BackoffWait(self.limits.backoff)
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._counts = dict.fromkeys((f for f in RuntimeStats.__dataclass_fields__ if f != "cost_usd"), 0)
        self._cost: float | None = None
        self._consecutive_failures = 0
        self._halted: str | None = None
        self._slow_reported = False
        # an agent whose own model calls come through the runtime: each is a call, the sample is not
        # an adapter whose calls take the limits and budget elsewhere (a Ray worker's own runtime,
        # :mod:`frontier_qa.runtime._ray_executor`) is treated the same way, with no gateway here
        self._routed = bool(getattr(adapter, "routes_model_calls", False) or getattr(adapter, "calls_elsewhere", False))
        if getattr(adapter, "routes_model_calls", False):
            from frontier_qa.runtime._gateway import ModelGateway  # httpx, only for such agents

            adapter.gateway = ModelGateway(self)  # type: ignore[attr-defined]

    # --- Target protocol ------------------------------------------------------------------

    @property
    def max_n(self) -> int:
        return self.adapter.max_n

    @property
    def supports_prefill(self) -> bool:
        return self.adapter.supports_prefill

    @property
    def stops_after_code(self) -> bool:
        """Whether the adapter ends a turn after a closed python block (``tool_executor.STOP_AFTER_CODE``)."""
        return bool(getattr(self.adapter, "stops_after_code", False))

    async def sample(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        """Trajectories for sample indices ``start..start+n-1``, in order, each exactly once.

        Raises:
            TargetError: the adapter classified an error FATAL (bad key, bad request...).
            TargetUnavailableError: too many consecutive failures; the run should stop.
            BudgetExceededError: a needed call could not start within the budget. Samples
                finished before that are cached (when a cache is set), so nothing is lost.
        """
        if n < 0 or start < 0:
            raise ConfigError(f"sample(n={n}, start={start}) is invalid", hint="n and start must be >= 0")
        if n == 0:
            return []
        indices = range(start, start + n)
        # keys only with a cache: hashing them is most of a free call's cost
        keys = self.sample_keys(case, sampling, indices) if self.cache is not None else {}
        results = await self._fetch(case, sampling, list(indices), keys)
        out = [results[i] for i in indices]
        self._count(samples=len(out))
        return out

    def sample_sync(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        """Blocking :meth:`sample`, for scripts and notebooks (runs on a private event loop)."""
        return run_sync(self.sample(case, n, sampling, start=start))

    def sample_keys(self, case: Case, sampling: Sampling, indices: Iterable[int]) -> dict[int, str]:
        """The cache key of each sample index of ``case`` (target id and version, messages, tools, sampling)."""
        extra: dict[str, Any] = {"tools": list(case.tools)} if case.tools else {}
        version = self.version()
        if version is not None:
            extra["version"] = version
        return {i: cache_key(self.id, case.messages, sampling, i, extra or None) for i in indices}

    # --- progress -------------------------------------------------------------------------

    def stats(self) -> RuntimeStats:
        """Calls, retries and samples so far."""
        with self._lock:
            return replace(RuntimeStats(**self._counts), cost_usd=self._cost)

    def snapshot(self) -> BudgetSnapshot:
        """Budget spending so far and what is left (see :meth:`BudgetTracker.snapshot`)."""
        return self.budget.snapshot()

    def remaining(self) -> dict[str, float | int | None]:
        """Calls, tokens, US dollars and wall seconds left in the budget (``None``: unlimited)."""
        return self.budget.remaining()

    def version(self) -> str | None:
        """The configured version and the adapter's own, joined by ``+`` (``None`` if neither)."""
        parts = [v for v in (self._version, self.adapter.version()) if v]
        return "+".join(dict.fromkeys(parts)) or None

    def flush(self) -> None:
        """Commit the samples the cache still queues (the probe calls it before recording a case)."""
        if self.cache is not None:
            self.cache.flush()

    async def aclose(self) -> None:
        """Close the adapter and the cache."""
        await self.adapter.aclose()
        if self.cache is not None:
            self.cache.close()

    def __repr__(self) -> str:
        return f"ManagedTarget({redact(self.id, self._secrets)!r}, {self.limits!r})"

    # --- internals ------------------------------------------------------------------------

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for key, value in deltas.items():
                self._counts[key] += value

    async def _gather(self, coros: list[Coroutine[Any, Any, T]]) -> list[T]:
        """Run chunks together. A budget stop lets the siblings finish (their calls are paid
        for and their samples get cached), and a fatal error found meanwhile outranks it; a
        target error cancels them.
        """
        if len(coros) == 1:
            return [await coros[0]]
        return await gather_or_cancel(coros, let_finish=lambda err: isinstance(err, BudgetExceededError))

    async def _fetch(
        self, case: Case, sampling: Sampling, indices: list[int], keys: dict[int, str]
    ) -> dict[int, Trajectory]:
        """Samples read from the cache, claimed and fetched here, or waited for when another
        process (or task) sharing the cache is fetching them (single flight).
        """
        out: dict[int, Trajectory] = {}
        todo = list(indices)
        while todo:
            theirs: list[int] = []
            if self.cache is None:
                mine = todo
            else:  # one step reads what is cached and claims the rest
                index = {keys[i]: i for i in todo}
                hits, own, other = self.cache.acquire(index)
                for key, hit in hits.items():
                    out[index[key]] = replace(hit, sample_index=index[key], cached=True, latency_s=0.0)
                self._count(cached=len(hits))
                mine = sorted(index[k] for k in own)
                theirs = [index[k] for k in other]
            chunks = _chunks(mine, max(1, self.adapter.max_n))
            coros = [self._fill(case, sampling, first, count, keys) for first, count in chunks]
            if theirs:
                coros.append(self._await_others(theirs, keys))
            if coros:
                for part in await self._gather(coros):
                    out.update(part)
            todo = [i for i in todo if i not in out]  # left by an owner that failed or died: claim them again
        return out

    async def _await_others(self, indices: list[int], keys: dict[int, str]) -> dict[int, Trajectory]:
        """Wait until each sample another owner claimed is stored (returned) or given up (left out)."""
        assert self.cache is not None
        waiting = {keys[i]: i for i in indices}
        out: dict[int, Trajectory] = {}
        delay = 0.02
        while waiting:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)
            for key, hit in self.cache.get_many(waiting).items():
                i = waiting.pop(key)
                out[i] = replace(hit, sample_index=i, cached=True, latency_s=0.0)
            if waiting:
                live = self.cache.pending(waiting)
                for key in [k for k in waiting if k not in live]:
                    del waiting[key]
        self._count(cached=len(out), shared=len(out))
        return out

    async def _fill(
        self, case: Case, sampling: Sampling, first: int, count: int, keys: dict[int, str]
    ) -> dict[int, Trajectory]:
        try:
            return await self._fill_claimed(case, sampling, first, count, keys)
        finally:
            if self.cache is not None:  # queued samples keep their claims until committed; a failure frees the rest
                self.cache.release(keys[i] for i in range(first, first + count))

    async def _fill_claimed(
        self, case: Case, sampling: Sampling, first: int, count: int, keys: dict[int, str]
    ) -> dict[int, Trajectory]:
        out: dict[int, Trajectory] = {}
        next_index, end = first, first + count
        while next_index < end:
            n = min(end - next_index, max(1, self.adapter.max_n))
            got = await self._call(case, n, sampling, next_index)
            for j, trajectory in enumerate(got[:n]):
                index = next_index + j
                if trajectory.sample_index != index or trajectory.cached:
                    trajectory = replace(trajectory, sample_index=index, cached=False)
                masked = None
                if trajectory.ok and mentions(trajectory, self._secrets):
                    # a key echoed in the output: every run sees what the store and the cache keep
                    # (masked), so a replay from either agrees with the live call
                    masked = record_json(trajectory, self._secrets)
                    trajectory = trajectory_from_json(masked)
                if self.cache is not None and trajectory.ok:
                    # without a secret, the cache's writer serialises it, off this call's path
                    self.cache.put(keys[index], self.id, trajectory, record=masked, secrets=self._secrets,
                                   checked=masked is None)
                out[index] = trajectory
            next_index += len(got[:n])  # fewer than asked (server ignored n): ask again for the rest
        return out

    async def _call(self, case: Case, n: int, sampling: Sampling, start: int) -> list[Trajectory]:
        """One backend call with retries; error trajectories if the retries run out."""
        try:  # the first attempt goes straight through: building a retry loop costs more than most calls
            return await self._attempt(case, n, sampling, start)
        except AttemptFailed as failure:
            first = failure
        made, replayed = 1, False
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.limits.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(AttemptFailed),
            sleep=self._sleep,
            before_sleep=self._log_retry,
            reraise=True,
        )

        async def attempt() -> list[Trajectory]:
            nonlocal made, replayed
            if not replayed:  # tenacity's attempt 1 is the one that already failed: it only
                replayed = True  # computes the wait before attempt 2 from it
                raise first
            made += 1
            self._count(retries=1)
            return await self._attempt(case, n, sampling, start)

        try:
            if self.limits.max_retries == 0:
                raise first
            return await retrying(attempt)
        except AttemptFailed as failure:
            verdict = failure.verdict
            message = f"{verdict.kind.value}: {verdict.message} (gave up after {made} attempts)"
            log.warning("gave up on %d sample(s) of case %r from %s: %s", n, case.id,
                        redact(self.id, self._secrets), message)
            self._count(failed_samples=n)
            return [
                Trajectory(text=None, messages=tuple(case.messages), error=message, sample_index=start + j)
                for j in range(n)
            ]

    def _log_retry(self, state: RetryCallState) -> None:
        """Tenacity's before_sleep: one INFO line per retry (the verdict's message is redacted)."""
        failure = state.outcome.exception() if state.outcome is not None else None
        verdict = getattr(failure, "verdict", None)
        why = f"{verdict.kind.value}: {verdict.message}" if isinstance(verdict, ErrorClass) else "failed"
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.info("retrying a call to %s in %.2f s (attempt %d of %d: %s)", redact(self.id, self._secrets),
                 wait, state.attempt_number, self.limits.max_retries + 1, why)

    def _semaphore(self) -> asyncio.Semaphore:
        # asyncio primitives belong to one loop; sample_sync and pytest use several
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._semaphores.get(loop)
            if semaphore is None:
                semaphore = self._semaphores[loop] = asyncio.Semaphore(self.limits.max_concurrency)
            return semaphore

    def _unavailable(self) -> TargetUnavailableError:
        return TargetUnavailableError(
            self._halted or "target unavailable",
            hint="check that the target is up and reachable, then run again (finished samples "
            "are cached); or raise Limits.max_consecutive_failures",
        )

    def _check_halted(self) -> None:
        if self._halted is not None:
            raise self._unavailable()

    async def _attempt(self, case: Case, n: int, sampling: Sampling, start: int) -> list[Trajectory]:
        """One call of the adapter. A routed agent's sample takes no budget, rate-limit token or call
        count of its own: its model calls do (:mod:`frontier_qa.runtime._gateway`).
        """
        self._check_halted()
        routed = self._routed
        estimated = estimate_tokens(case.messages, n, sampling.max_tokens, case.tools) if self.limits.tpm else 0
        async with self._semaphore():
            if self._limiter.active and not routed:
                await self._limiter.acquire(estimated)
            self._check_halted()  # it may have halted while this call waited for its slot or the limiter
            reservation = None if routed else self.budget.reserve()
            self._count(calls=int(not routed))
            started = time.monotonic()
            watch = self._watch_slow()
            try:
                got = await within(self.adapter.generate(case, n, sampling, start=start), self.timeout_s)
                if not got:
                    raise _NoSamples(f"{self.id} returned no samples for a request of {n}")
                if not all(isinstance(t, Trajectory) for t in got):
                    raise TypeError(f"{type(self.adapter).__name__}.generate must return Trajectory objects")
            except asyncio.CancelledError:
                self._settle_abandoned(reservation, estimated, case, n, sampling)
                raise
            except Exception as exc:  # noqa: BLE001 - every failure goes through classify
                if routed and isinstance(exc, (BudgetExceededError, TargetError, ConfigError)):
                    raise  # the gateway's stop (ctx.stop_error), or the adapter's usage error (an MCP server)
                if isinstance(exc, CallTimeout):
                    self._settle_abandoned(reservation, estimated, case, n, sampling)
                elif reservation is not None:
                    self.budget.settle(reservation)
                    self._limiter.refund(estimated)
                verdict = self._classify(exc)
                cause = None if self._leaks(exc) else exc  # never chain a secret into a traceback
                if self._on_failure(verdict, call=not routed):
                    raise self._unavailable() from cause
                if verdict.kind is ErrorKind.FATAL:
                    raise TargetError(
                        f"target {redact(self.id, self._secrets)!r} failed: {verdict.message}",
                        hint="this error is not retried; fix the credentials, model name or request "
                        "and run again",
                    ) from cause
                if verdict.kind is ErrorKind.RATE_LIMITED and verdict.retry_after is not None:
                    self._limiter.pause_for(min(verdict.retry_after, self.limits.backoff.max_retry_after_s))
                raise AttemptFailed(verdict) from cause
            finally:
                if watch is not None:
                    watch.cancel()
        latency = time.monotonic() - started
        if reservation is not None:  # a routed sample's calls were settled one by one
            usage = sum((t.usage for t in got), Usage())
            costs = [t.cost_usd for t in got if t.cost_usd is not None]
            self._call_succeeded(reservation, estimated, usage.total_tokens, sum(costs) if costs else None)
        return [t if t.latency_s else replace(t, latency_s=latency) for t in got]

    def _call_succeeded(self, reservation: Reservation, estimated: int, tokens: int, cost_usd: float | None) -> None:
        """Settle a call that answered: budget, TPM correction, the failure streak, statistics."""
        self.budget.settle(reservation, tokens=tokens, cost_usd=cost_usd)
        if tokens:
            self._limiter.reconcile(estimated, tokens)
        with self._lock:
            self._consecutive_failures = 0
            if cost_usd is not None:
                self._cost = (self._cost or 0.0) + cost_usd
        self._count(succeeded=1, tokens=tokens)

    def _settle_abandoned(self, reservation: Reservation | None, estimated: int, case: Case, n: int,
                          sampling: Sampling) -> None:
        """A call given up before its reply (timeout, cancellation) was still run, and billed,
        by a server: it counts as a call with estimated tokens (prompt + n · max_tokens).
        An in-process model stops the abandoned work, so nothing is estimated for it.
        """
        if reservation is None:  # a routed sample: its model calls settle themselves
            return
        if getattr(self.adapter, "in_process", False):
            self.budget.settle(reservation)
            self._limiter.refund(estimated)
            return
        guess = estimate_tokens(case.messages, n, sampling.max_tokens, case.tools)
        self.budget.settle(reservation, tokens=guess, estimated=True)
        self._count(abandoned=1, tokens=guess)
        if estimated:
            self._limiter.reconcile(estimated, guess)

    @property
    def timeout_s(self) -> float | None:
        """The wall-clock limit of one call: ``Limits.local_timeout_s`` for in-process adapters."""
        return self.limits.local_timeout_s if getattr(self.adapter, "in_process", False) else self.limits.timeout_s

    def _watch_slow(self) -> asyncio.TimerHandle | None:
        """Report a call still running after ``Limits.slow_call_s`` (the first one per target)."""
        after = self.limits.slow_call_s
        if after is None or (self.timeout_s is not None and self.timeout_s <= after):
            return None
        return asyncio.get_running_loop().call_later(after, self._slow, after)

    def _slow(self, after: float) -> None:
        self._count(slow_calls=1)
        if self._slow_reported:
            return
        self._slow_reported = True
        target = redact(self.id, self._secrets)
        if self.timeout_s is None:
            why = ("it computes in this process, so no per-call timeout applies (Limits.local_timeout_s); "
                   "a busy machine makes it slow, not stuck" if getattr(self.adapter, "in_process", False)
                   else "no per-call timeout is set (Limits.timeout_s)")
        else:
            why = f"it is abandoned and retried at {self.timeout_s:g} s"
        log.warning("a call to %s has run %g s and is still going; %s. The run goes on "
                    "(Ctrl-C stops it and keeps what is done). Later slow calls to this target are counted, not shown.",
                    target, after, why)

    def _classify(self, exc: BaseException) -> ErrorClass:
        if isinstance(exc, _NoSamples):
            verdict = ErrorClass(ErrorKind.TRANSIENT, str(exc))
        elif isinstance(exc, CallTimeout):
            which = "local_timeout_s" if getattr(self.adapter, "in_process", False) else "timeout_s"
            verdict = ErrorClass(ErrorKind.TRANSIENT, f"no answer within Limits.{which} = {self.timeout_s} s")
        else:
            try:
                verdict = self.adapter.classify(exc)
            except Exception as bug:  # noqa: BLE001 - a broken classifier must not hide the error
                verdict = ErrorClass(ErrorKind.FATAL, f"{type(exc).__name__}: {exc} (classify failed: {bug!r})")
        return replace(verdict, message=redact(verdict.message, self._secrets))

    def _on_failure(self, verdict: ErrorClass, *, call: bool = True) -> bool:
        """Count a failed call (``call=False``: a routed agent's sample, whose model calls counted
        themselves: the streak only); ``True`` when the run must stop (consecutive failures).
        """
        with self._lock:
            self._consecutive_failures += 1
            limit = self.limits.max_consecutive_failures
            if (verdict.kind is not ErrorKind.FATAL and limit is not None and self._consecutive_failures >= limit
                    and self._halted is None):
                self._halted = (
                    f"target {redact(self.id, self._secrets)!r} failed {self._consecutive_failures} "
                    f"calls in a row (Limits.max_consecutive_failures = {limit}); last error: "
                    f"{verdict.kind.value}: {verdict.message}"
                )
                log.warning("%s; no more calls go to it", self._halted)
        self._count(failed=int(call), rate_limited=int(call and verdict.kind is ErrorKind.RATE_LIMITED))
        return self._halted is not None

    def _leaks(self, exc: BaseException) -> bool:
        """Whether chaining ``exc`` would carry a secret into a traceback."""
        text = f"{exc!s} {exc!r} {getattr(exc, 'body', '')}"
        return redact(text, self._secrets) != text


class _NoSamples(Exception):
    """The adapter returned an empty list."""


__all__ = ["ManagedTarget", "RuntimeStats", "run_sync"]
