"""The run's governor (:class:`Governor`) as a plain object: no Ray, the real limiter and budget.

The cluster tests (tests/runtime/test_ray_cluster.py) check the same object as a Ray actor with real
workers; these check its bookkeeping exactly: pacing across callers, the concurrency cap, refusals,
and what a dead worker's open calls become.
"""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from frontier_qa.errors import BudgetExceededError, RunInterruptedError
from frontier_qa.runtime._limits import Budget, Limits
from frontier_qa.runtime._ray_limiter import Governor, granted


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_admissions_from_every_worker_share_one_rpm_pacer() -> None:
    governor = Governor(Limits(rpm=600, max_concurrency=100), Budget())  # one call per 0.1 s

    async def main() -> list[float]:
        async def one(worker: str) -> float:
            answer = await governor.admit(worker, 0)
            granted(answer)
            return time.monotonic()
        return sorted(await asyncio.gather(*(one(f"w{i % 3}") for i in range(6))))
    times = run(main())
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.09  # evenly spaced whichever worker asked


def test_the_concurrency_cap_holds_until_calls_settle() -> None:
    governor = Governor(Limits(max_concurrency=2), Budget())

    async def main() -> tuple[int, bool]:
        first = granted(await governor.admit("w0"))
        granted(await governor.admit("w1"))
        third = asyncio.ensure_future(governor.admit("w0"))
        await asyncio.sleep(0.05)
        waiting = not third.done()
        governor.settle(first.id, tokens=5)
        granted(await asyncio.wait_for(third, 1))
        return governor.open_grants(), waiting
    open_grants, waited = run(main())
    assert waited and open_grants == 2
    assert governor.snapshot().calls == 1 and governor.snapshot().tokens == 5


def test_refusals_travel_as_data_and_raise_as_themselves() -> None:
    governor = Governor(Limits(), Budget(max_calls=1))
    granted(run(governor.admit("w0")))
    with pytest.raises(BudgetExceededError, match="Budget.max_calls = 1"):
        granted(run(governor.admit("w1")))
    governor.interrupt()
    with pytest.raises(RunInterruptedError):
        granted(governor.reserve("driver"))
    assert governor.open_grants() == 1  # a refusal holds no slot


def test_a_dead_workers_open_calls_are_counted_as_spent_and_free_their_slots() -> None:
    governor = Governor(Limits(max_concurrency=3, tpm=100_000), Budget())

    async def main() -> None:
        for worker, tokens in (("w0", 40), ("w1", 70), ("w1", 30)):
            granted(await governor.admit(worker, tokens))
    run(main())
    assert governor.forget("w1") == 2
    spent = governor.snapshot()
    assert governor.open_grants() == 1 and governor.open_grants("w1") == 0
    assert spent.calls == 2 and spent.tokens == 100 and spent.estimated_tokens == 100 and spent.in_flight == 1


def test_a_grant_given_back_unused_costs_nothing() -> None:
    governor = Governor(Limits(max_concurrency=1), Budget(max_calls=5))
    reservation = granted(run(governor.admit("w0", 10)))
    governor.release(reservation.id)
    assert governor.open_grants() == 0
    assert governor.snapshot().calls == 0 and governor.snapshot().in_flight == 0
    granted(run(governor.admit("w0")))  # the slot is free again


def test_without_the_ray_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from frontier_qa.errors import MissingExtraError
    from frontier_qa.runtime._ray_executor import connect

    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where the package is absent
    with pytest.raises(MissingExtraError) as caught:
        connect("auto")
    assert caught.value.extra == "ray" and "frontier-qa[ray]" in (caught.value.hint or "")


def test_a_workers_error_comes_back_as_its_class_or_a_target_error() -> None:
    from frontier_qa.errors import TargetError, TargetUnavailableError
    from frontier_qa.runtime._ray_executor import rebuilt

    stop = rebuilt("TargetUnavailableError", "failed 25 calls in a row", "check the target")
    assert type(stop) is TargetUnavailableError and stop.hint == "check the target"
    missing = rebuilt("MissingExtraError", "pydantic-ai is not installed on the worker", "install it")
    assert type(missing) is TargetError and "pydantic-ai" in missing.message  # its own arguments differ
    assert type(rebuilt("KeyError", "x", None)) is TargetError


def test_a_cluster_address_that_refuses_connections_is_a_config_error_at_once() -> None:
    """Ray's own init retries an unreachable GCS for minutes; a refused HOST:PORT is said before it starts."""
    import socket

    from frontier_qa.errors import ConfigError
    from frontier_qa.runtime._ray_executor import connect

    pytest.importorskip("ray", reason="the ray extra is not installed")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConfigError, match=f"cannot reach the Ray cluster at '127.0.0.1:{port}'") as err:
        connect(f"127.0.0.1:{port}")  # before ray.init: nothing was started
    assert "ray start --head" in (err.value.hint or "")
