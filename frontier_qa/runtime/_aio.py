"""Small asyncio helpers the runtime, the adapters, the probe and the trainers share.

* :func:`gather_or_cancel`: run coroutines together; the first error cancels the rest (or,
  for errors the caller names, lets them finish) and is raised; cancelling the caller
  cancels them all, so nothing keeps running behind a failed or stopped call.
* :func:`run_sync`: the blocking API's bridge (``sample_sync``): every call runs on one
  long-lived background loop, so the clients adapters keep stay on the loop that made them;
* :func:`run_blocking`: a self-contained coroutine (the sandbox's) run to completion from
  sync code, even from a thread whose event loop is running (a fresh loop in a helper thread);
* :func:`within`: the runtime's own per-call timeout (a backend call, a routed model call),
  told apart from a ``TimeoutError`` the call raised itself.

Stdlib only (and the base's errors).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

from frontier_qa.errors import ConfigError

T = TypeVar("T")


async def _cancel_all(tasks: Iterable[asyncio.Future[Any]]) -> None:
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def gather_or_cancel(coros: Iterable[Coroutine[Any, Any, T]], *,
                           let_finish: Callable[[BaseException], bool] | None = None) -> list[T]:
    """The coroutines' results in order; the first exception cancels the others and is raised.

    Args:
        coros: what to run together.
        let_finish: errors for which the siblings run to the end instead of being cancelled
            (e.g. a budget stop: calls already paid for should land). Once they have, the
            first of their errors that ``let_finish`` does not allow is raised (it outranks
            the allowed one), else the first error.

    Cancelling the caller cancels every coroutine and waits for them to unwind.
    """
    tasks = [asyncio.ensure_future(c) for c in coros]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        await _cancel_all(tasks)
        raise
    failed = [t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
    if not failed:
        return [t.result() for t in tasks]
    first = failed[0].exception()
    assert first is not None
    if let_finish is None or not let_finish(first):
        await _cancel_all(tasks)
        raise first
    try:
        await asyncio.gather(*tasks, return_exceptions=True)
    except asyncio.CancelledError:
        await _cancel_all(tasks)
        raise
    errors = [e for t in tasks if not t.cancelled() and (e := t.exception()) is not None]
    raise next((e for e in errors if not let_finish(e)), first)


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, even when this thread runs an event loop.

    Without a running loop this is :func:`asyncio.run`; inside one, the coroutine runs on a
    fresh loop in a helper thread and this call blocks until it is done (its error is raised
    here). For calls that share the runtime's long-lived loop (pooled HTTP clients), use
    :func:`run_sync` instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="frontier-qa-blocking")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


# --- the runtime's private event loop for the blocking API ---------------------------------

_sync_loop: asyncio.AbstractEventLoop | None = None
_sync_lock = threading.Lock()


def _loop() -> asyncio.AbstractEventLoop:
    global _sync_loop
    with _sync_lock:
        if _sync_loop is None or _sync_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="frontier-qa-sync", daemon=True).start()
            _sync_loop = loop
        return _sync_loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code and return its result.

    All blocking calls share one background event loop, so clients that adapters keep
    (HTTP connection pools) stay on the loop that made them.
    """
    loop = _loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise ConfigError("sample_sync was called from inside the runtime's own event loop",
                          hint="use 'await target.sample(...)' in async code")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


class CallTimeout(Exception):
    """A backend call ran past ``Limits.timeout_s`` (the runtime's own timeout)."""


async def within(coro: Coroutine[Any, Any, T], timeout_s: float | None) -> T:
    """Await ``coro`` for at most ``timeout_s`` seconds, then cancel it and raise
    :class:`CallTimeout` (unlike ``asyncio.wait_for``, distinguishable from a
    ``TimeoutError`` the adapter raised itself).
    """
    if timeout_s is None:
        return await coro
    if hasattr(asyncio, "timeout"):  # Python 3.11+: no extra task per call
        try:
            async with asyncio.timeout(timeout_s) as scope:
                return await coro
        except TimeoutError:
            if scope.expired():
                raise CallTimeout() from None
            raise
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    if not done:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise CallTimeout()
    return task.result()


__all__ = ["CallTimeout", "gather_or_cancel", "run_blocking", "run_sync", "within"]
