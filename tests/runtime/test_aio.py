"""The shared asyncio helpers: gather-and-cancel and the sync bridges."""

from __future__ import annotations

import asyncio

import pytest

from frontier_qa.errors import BudgetExceededError, ConfigError, TargetUnavailableError
from frontier_qa.runtime._aio import gather_or_cancel, run_blocking, run_sync


async def _steps(log: list[str], name: str, n: int, fail: BaseException | None = None) -> str:
    for _ in range(n):
        await asyncio.sleep(0)
    if fail is not None:
        log.append(f"{name} raised")
        raise fail
    log.append(f"{name} done")
    return name


def test_results_come_in_order_and_an_error_cancels_the_siblings() -> None:
    log: list[str] = []
    assert asyncio.run(gather_or_cancel([_steps(log, "slow", 5), _steps(log, "fast", 1)])) == ["slow", "fast"]
    assert asyncio.run(gather_or_cancel([])) == []
    log.clear()
    with pytest.raises(TargetUnavailableError):
        asyncio.run(gather_or_cancel([_steps(log, "late", 50), _steps(log, "bad", 1, TargetUnavailableError("x"))]))
    assert log == ["bad raised"]  # the sibling never finished


def test_allowed_errors_let_the_siblings_finish_and_a_fatal_one_outranks_them() -> None:
    log: list[str] = []
    budget = lambda err: isinstance(err, BudgetExceededError)  # noqa: E731
    with pytest.raises(BudgetExceededError):
        asyncio.run(gather_or_cancel([_steps(log, "late", 20), _steps(log, "stop", 1, BudgetExceededError("b"))],
                                     let_finish=budget))
    assert log == ["stop raised", "late done"]
    log.clear()
    with pytest.raises(TargetUnavailableError):
        asyncio.run(gather_or_cancel([_steps(log, "stop", 1, BudgetExceededError("b")),
                                      _steps(log, "fatal", 20, TargetUnavailableError("down"))], let_finish=budget))
    assert log == ["stop raised", "fatal raised"]


def test_cancelling_the_caller_cancels_every_coroutine() -> None:
    log: list[str] = []

    async def main() -> None:
        task = asyncio.ensure_future(gather_or_cancel([_steps(log, "a", 100), _steps(log, "b", 100)]))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)

    asyncio.run(main())
    assert log == []


def test_run_blocking_works_with_and_without_a_running_loop() -> None:
    log: list[str] = []
    assert run_blocking(_steps(log, "plain", 2)) == "plain"

    async def inside() -> str:
        return run_blocking(_steps(log, "nested", 2))  # a fresh loop in a helper thread

    assert asyncio.run(inside()) == "nested"
    with pytest.raises(TargetUnavailableError):
        run_blocking(_steps(log, "bad", 1, TargetUnavailableError("x")))


def test_run_sync_shares_one_loop_and_refuses_to_block_it() -> None:
    async def loop_id() -> int:
        return id(asyncio.get_running_loop())

    assert run_sync(loop_id()) == run_sync(loop_id())

    async def reenter() -> None:
        run_sync(loop_id())

    with pytest.raises(ConfigError, match="inside the runtime's own event loop"):
        run_sync(reenter())
