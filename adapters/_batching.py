"""Micro-batching: merge concurrent requests to one local model into one batched call.

The probe loop asks a target for all cases of a round concurrently (``asyncio.gather``). A
local model is fastest when those requests reach it as *one* padded batch, and it must
only ever be driven by one thread. :class:`MicroBatcher` owns that thread: requests wait
in a queue, and each time the model is free the worker takes everything that arrived
(waiting at most ``wait_s`` after the oldest request for stragglers) up to ``max_weight``
rows, runs it, and hands each caller its own result. While a batch runs, new requests pile
up and form the next one, so a busy model batches without any timing luck.

A batch's callers come back one by one: the probe scores each case's samples and decides on
it before it asks again (milliseconds a case, so 16 cases take tens of milliseconds, past
``wait_s``). Taking only the first few of them would split one round of cases into two
batches, each a full ``generate`` (rounds of 1–2 samples would pay it every round). So while
fewer requests are queued than the last batch held, the worker waits for the rest as long as
they keep arriving (each within :attr:`MicroBatcher.REGROUP_GAP_S` of the one before), at most
:attr:`MicroBatcher.REGROUP_SHARE` of the last batch's run time (and
:attr:`MicroBatcher.REGROUP_MAX_S`): a short wait against a whole extra batch.

A batch that nobody waits for any more (every caller was cancelled: a Ctrl-C, a timeout)
or that runs while the batcher closes is *stopped*: ``run_batch`` polls
:meth:`MicroBatcher.should_stop` between generation steps and gives up, and its callers get
:class:`BatchStoppedError`, never a truncated result. Live batchers are closed by an
``atexit`` hook, which stops the running batch and joins the worker: a daemon thread still
inside torch when the interpreter tears down its C++ thread pools aborts the process with
"terminate called without an active exception" (exit 134).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

R = TypeVar("R")  # request
S = TypeVar("S")  # result
T = TypeVar("T")


@dataclass
class _Item:
    payload: Any
    future: concurrent.futures.Future[Any]
    weight: int = 1
    arrived: float = field(default_factory=time.monotonic)
    is_call: bool = False  # a function to run alone on the worker thread, not a request
    abandoned: bool = False  # its caller stopped waiting (cancelled)


class BatcherClosedError(RuntimeError):
    """The batcher was closed before this request ran."""


class BatchStoppedError(BatcherClosedError):
    """The batch holding this request was stopped before it finished (closing, or abandoned)."""


_LIVE: weakref.WeakSet[MicroBatcher[Any, Any]] = weakref.WeakSet()


class MicroBatcher(Generic[R, S]):
    """Run ``run_batch`` on one worker thread over requests merged from concurrent callers.

    Args:
        run_batch: takes a list of requests and returns one result per request, in order;
            an element may be an exception instance, which fails only that request. If it
            raises for a batch of several, each request is retried alone so one bad request
            cannot fail its neighbours.
        weight: rows a request occupies (e.g. its sample count ``n``); default 1.
        max_weight: most rows merged into one batch (a heavier single request runs alone).
        wait_s: seconds to wait after the oldest queued request for more to arrive.
        name: worker thread name.
        init: run alone on the worker thread before the constructor returns (e.g. loading a
            model the thread will own); if it raises, the worker is closed and the error raised.

    Attributes:
        batches: how many times ``run_batch`` was called (the merge counter tests read).
        requests: how many requests were submitted.
    """

    REGROUP_GAP_S = 0.05  # the last batch's callers still coming back: each within this of the one before
    REGROUP_SHARE = 0.1  # wait for them at most this share of the last batch's run time ...
    REGROUP_MAX_S = 0.25  # ... and at most this

    def __init__(
        self,
        run_batch: Callable[[list[R]], Sequence[S | BaseException]],
        *,
        weight: Callable[[R], int] | None = None,
        max_weight: int = 32,
        wait_s: float = 0.005,
        name: str = "frontier-qa-batcher",
        init: Callable[[], object] | None = None,
    ) -> None:
        if max_weight < 1 or wait_s < 0:
            raise ValueError(f"max_weight must be >= 1 and wait_s >= 0, got {max_weight}, {wait_s}")
        self._run_batch = run_batch
        self._weight = weight or (lambda _request: 1)
        self.max_weight = max_weight
        self.wait_s = wait_s
        self.batches = 0
        self.requests = 0
        self._pending: deque[_Item] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._stopping = threading.Event()  # close() was called: the running batch ends early
        self._running: list[_Item] = []  # the batch on the worker now
        self._last: tuple[int, float] = (0, 0.0)  # the last batch: its requests, its run time (s)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()
        _LIVE.add(self)
        if init is not None:
            try:
                self.call(init)
            except BaseException:
                self.close()
                raise

    # ----- callers' side -------------------------------------------------------------

    async def submit(self, request: R) -> S:
        """Queue ``request`` and wait for its result (raises what ``run_batch`` gave for it)."""
        item = _Item(request, concurrent.futures.Future(), max(1, self._weight(request)))
        future = self._enqueue(item)
        self.requests += 1
        # wrap_future propagates cancellation: a cancelled caller's request is skipped when
        # queued; when it already runs, the batch stops once every caller in it has left.
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            item.abandoned = True
            raise

    def should_stop(self) -> bool:
        """For ``run_batch``, polled between steps: stop now (closing, or no caller waits)."""
        if self._stopping.is_set():
            return True
        running = self._running
        return bool(running) and all(item.abandoned for item in running)

    def call(self, fn: Callable[[], T], timeout: float | None = None) -> T:
        """Run ``fn()`` alone on the worker thread (e.g. loading the model) and return its value."""
        future = self._enqueue(_Item(fn, concurrent.futures.Future(), is_call=True))
        return future.result(timeout)

    def pending(self) -> int:
        """Requests queued and not yet taken by the worker."""
        with self._cond:
            return len(self._pending)

    def close(self, timeout: float | None = None) -> None:
        """Stop the worker: the running batch ends at its next step (its callers get
        :class:`BatchStoppedError`), queued requests fail, and the worker is joined.
        """
        self._stopping.set()
        with self._cond:
            self._closed = True
            dropped = list(self._pending)
            self._pending.clear()
            self._cond.notify_all()
        for item in dropped:
            if item.future.set_running_or_notify_cancel():
                item.future.set_exception(BatcherClosedError("the local model was closed before this request ran"))
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    def _enqueue(self, item: _Item) -> concurrent.futures.Future[Any]:
        with self._cond:
            if self._closed:
                raise BatcherClosedError("the local model was closed; create a new adapter")
            self._pending.append(item)
            self._cond.notify_all()
        return item.future

    # ----- worker side ---------------------------------------------------------------

    def _take(self) -> list[_Item] | None:
        """Block until work is queued; return one call or a batch of requests (None: closed)."""
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            if self._pending[0].is_call:
                return [self._pending.popleft()]
            # Wait for stragglers: until wait_s after the *oldest* request arrived, so requests
            # that queued while the previous batch ran are taken at once; longer while the last
            # batch's callers are still coming back (module docstring).
            while not self._closed and self._queued_weight() < self.max_weight:
                remaining = self._deadline() - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            batch: list[_Item] = []
            weight = 0
            while self._pending and not self._pending[0].is_call:
                item = self._pending[0]
                if batch and weight + item.weight > self.max_weight:
                    break
                self._pending.popleft()
                batch.append(item)
                weight += item.weight
            return batch

    def _deadline(self) -> float:
        """When the worker stops waiting for more requests to join the oldest queued one."""
        oldest = self._pending[0].arrived
        deadline = oldest + self.wait_s
        size, run_s = self._last
        if sum(1 for item in self._pending if not item.is_call) < size:
            regroup = oldest + min(self.REGROUP_SHARE * run_s, self.REGROUP_MAX_S)
            deadline = max(deadline, min(regroup, self._pending[-1].arrived + self.REGROUP_GAP_S))
        return deadline

    def _queued_weight(self) -> int:
        total = 0
        for item in self._pending:
            if item.is_call:
                break
            total += item.weight
        return total

    def _loop(self) -> None:
        while True:
            items = self._take()
            if items is None:
                return
            live = [item for item in items if item.future.set_running_or_notify_cancel()]
            if not live:
                continue
            if live[0].is_call:
                _settle(live[0].future, live[0].payload)
            else:
                began = time.monotonic()
                self._run(live)
                self._last = (len(live), time.monotonic() - began)

    def _run(self, items: list[_Item]) -> None:
        self.batches += 1
        self._running = items
        try:
            results = list(self._run_batch([item.payload for item in items]))
            if len(results) != len(items):
                raise RuntimeError(f"run_batch returned {len(results)} results for {len(items)} requests")
            if self.should_stop():  # whatever run_batch made of a stopped batch is cut short
                raise BatchStoppedError("the local model stopped this batch before it finished")
        except BaseException as exc:  # noqa: BLE001 - handed to the callers, never swallowed
            if self.should_stop() and not isinstance(exc, BatchStoppedError):
                exc = BatchStoppedError(f"the local model stopped this batch before it finished ({exc!r})")
            if len(items) == 1 or isinstance(exc, (KeyboardInterrupt, SystemExit, BatchStoppedError)):
                for item in items:
                    item.future.set_exception(exc)
                return
            for item in items:  # isolate the request that broke the batch
                self._run([item])
            return
        finally:
            self._running = []
        for item, result in zip(items, results, strict=True):
            if isinstance(result, BaseException):
                item.future.set_exception(result)
            else:
                item.future.set_result(result)


def _settle(future: concurrent.futures.Future[Any], fn: Callable[[], Any]) -> None:
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - handed to the caller
        future.set_exception(exc)


@atexit.register
def _close_live_batchers() -> None:
    """At interpreter exit, stop every running batch and join its worker (see module doc)."""
    for batcher in list(_LIVE):
        batcher.close()


__all__ = ["BatchStoppedError", "BatcherClosedError", "MicroBatcher"]
