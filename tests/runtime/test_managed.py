"""ManagedTarget with an in-process scripted adapter: chunking, retries, budgets, cache, secrets.

The adapter here is a real :class:`Adapter` subclass whose behaviour per call is scripted
(no HTTP); the same properties are checked over real HTTP in ``tests/adapters/test_openai.py``.
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontier_qa.adapters import register
from frontier_qa.errors import BudgetExceededError, ConfigError, TargetError, TargetUnavailableError
from frontier_qa.runtime import Backoff, Budget, BudgetTracker, Limits, ManagedTarget, SampleCache, open_target
from frontier_qa.runtime._managed import _chunks
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, Trajectory, Usage

FAST = Backoff(initial_s=0.001, max_s=0.005, jitter_s=0.001)
CASE = Case(id="c", prompt="2+2?")
SAMPLING = Sampling(seed=0)


class Transient(Exception):
    pass


class Limited(Exception):
    def __init__(self, retry_after: float | None) -> None:
        super().__init__("429")
        self.retry_after = retry_after


class Fatal(Exception):
    pass


class ScriptedAdapter(Adapter):
    """Per call: the next script entry (an exception to raise, ``("short", k)`` to return only
    k samples, ``("sleep", s)`` to take s seconds); then plain successes.
    """

    def __init__(self, script: Sequence[object] = (), *, max_n: int = 4, tokens: int = 2, cost: float | None = None,
                 delay_s: float = 0.0) -> None:
        self.id = "scripted:test"
        self.max_n = max_n
        self.script = list(script)
        self.tokens = tokens
        self.cost = cost
        self.delay_s = delay_s
        self.calls: list[tuple[int, int]] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        with self._lock:
            self.calls.append((start, n))
            step = self.script.pop(0) if self.script else None
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if isinstance(step, BaseException):
                raise step
            if isinstance(step, tuple) and step[0] == "sleep":
                await asyncio.sleep(step[1])
            k = step[1] if isinstance(step, tuple) and step[0] == "short" else n
            return [
                Trajectory(text=f"s{start + j}", usage=Usage(self.tokens, 0), cost_usd=self.cost,
                           sample_index=start + j)
                for j in range(k)
            ]
        finally:
            with self._lock:
                self.in_flight -= 1

    def classify(self, exc: BaseException) -> ErrorClass:
        if isinstance(exc, Transient):
            return ErrorClass(ErrorKind.TRANSIENT, f"transient: {exc}")
        if isinstance(exc, Limited):
            return ErrorClass(ErrorKind.RATE_LIMITED, "rate limited", exc.retry_after)
        return super().classify(exc)


def managed(adapter: Adapter, tmp_path: Path | None = None, **limits: object) -> ManagedTarget:
    budget = limits.pop("budget", None)
    cache = SampleCache(tmp_path / "cache") if tmp_path is not None else None
    return ManagedTarget(adapter, Limits(backoff=FAST, **limits), budget, cache)  # type: ignore[arg-type]


def texts(trajectories: Sequence[Trajectory]) -> list[str | None]:
    return [t.text for t in trajectories]


def test_chunks_are_contiguous_and_capped() -> None:
    assert _chunks([0, 1, 2, 3, 4], 2) == [(0, 2), (2, 2), (4, 1)]
    assert _chunks([0, 2, 3, 7], 4) == [(0, 1), (2, 2), (7, 1)]
    assert _chunks([], 3) == []


def test_samples_are_split_into_calls_of_max_n_in_order() -> None:
    adapter = ScriptedAdapter(max_n=3)
    out = asyncio.run(managed(adapter).sample(CASE, 8, SAMPLING, start=2))
    assert sorted(adapter.calls) == [(2, 3), (5, 3), (8, 2)]
    assert texts(out) == [f"s{i}" for i in range(2, 10)]
    assert [t.sample_index for t in out] == list(range(2, 10))
    assert all(t.latency_s > 0 and not t.cached for t in out)


def test_short_answers_are_completed_without_loss_or_duplicates() -> None:
    adapter = ScriptedAdapter([("short", 1), ("short", 2)], max_n=4)
    target = managed(adapter)
    out = asyncio.run(target.sample(CASE, 4, SAMPLING))
    assert adapter.calls == [(0, 4), (1, 3), (3, 1)]
    assert texts(out) == ["s0", "s1", "s2", "s3"]
    assert target.stats().calls == 3 and target.stats().succeeded == 3


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(0, 12),
    start=st.integers(0, 5),
    max_n=st.integers(1, 5),
    cached=st.sets(st.integers(0, 17), max_size=6),
    shorts=st.lists(st.integers(1, 3), max_size=4),
)
def test_every_index_exactly_once(tmp_path: Path, n: int, start: int, max_n: int, cached: set[int],
                                  shorts: list[int]) -> None:
    cache = SampleCache(tmp_path / f"h{n}-{start}-{max_n}-{len(cached)}-{len(shorts)}")
    cache.clear()
    warm = ManagedTarget(ScriptedAdapter(max_n=1), Limits(backoff=FAST), None, cache)
    for i in cached:
        asyncio.run(warm.sample(CASE, 1, SAMPLING, start=i))
    adapter = ScriptedAdapter([("short", k) for k in shorts], max_n=max_n)
    target = ManagedTarget(adapter, Limits(backoff=FAST), None, cache)
    out = asyncio.run(target.sample(CASE, n, SAMPLING, start=start))
    wanted = list(range(start, start + n))
    assert [t.sample_index for t in out] == wanted
    assert texts(out) == [f"s{i}" for i in wanted]
    assert [t.cached for t in out] == [i in cached for i in wanted]
    asked = sorted(i for s, k in adapter.calls for i in range(s, s + k))
    assert set(asked) == set(wanted) - cached  # only the missing ones are generated
    assert all(k <= max_n for _, k in adapter.calls)
    assert target.stats().calls == len(adapter.calls)
    cache.close()  # the next example reuses the file: no write of this one may land after its clear()


def test_transient_errors_are_retried() -> None:
    adapter = ScriptedAdapter([Transient("503"), TimeoutError("read"), None], max_n=1)
    target = managed(adapter)
    assert texts(asyncio.run(target.sample(CASE, 1, SAMPLING))) == ["s0"]
    stats = target.stats()
    assert (stats.calls, stats.failed, stats.retries, stats.succeeded) == (3, 2, 2, 1)


def test_exhausted_retries_give_error_samples_that_are_not_cached(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([Transient("503")] * 3, max_n=2)
    target = managed(adapter, tmp_path, max_retries=2)
    out = asyncio.run(target.sample(CASE, 2, SAMPLING))
    assert [t.ok for t in out] == [False, False] and [t.sample_index for t in out] == [0, 1]
    assert out[0].error == "transient: transient: 503 (gave up after 3 attempts)"
    assert len(adapter.calls) == 3 and target.stats().failed_samples == 2
    again = asyncio.run(target.sample(CASE, 2, SAMPLING))  # errors were not cached: asked again
    assert texts(again) == ["s0", "s1"] and len(adapter.calls) == 4


def test_fatal_errors_raise_at_once() -> None:
    adapter = ScriptedAdapter([Fatal("model 'gpt-9' does not exist")], max_n=1)
    target = managed(adapter, max_retries=5)
    with pytest.raises(TargetError, match=r"failed: Fatal: model 'gpt-9' does not exist") as info:
        asyncio.run(target.sample(CASE, 3, SAMPLING))
    assert not isinstance(info.value, TargetUnavailableError)
    assert "not retried" in str(info.value)
    assert adapter.calls[0] == (0, 1) and target.stats().retries == 0


def test_rate_limited_waits_retry_after_instead_of_backoff() -> None:
    adapter = ScriptedAdapter([Limited(0.3)], max_n=1)
    slow_backoff = Backoff(initial_s=30.0, max_s=30.0, jitter_s=0.0)
    target = ManagedTarget(adapter, Limits(backoff=slow_backoff), None, None)
    began = time.monotonic()
    assert texts(asyncio.run(target.sample(CASE, 1, SAMPLING))) == ["s0"]
    elapsed = time.monotonic() - began
    assert 0.28 <= elapsed < 10.0  # Retry-After (0.3 s), not the 30 s backoff
    assert target.stats().rate_limited == 1


def test_a_retry_after_holds_the_other_calls_without_a_rate_limit() -> None:
    # no rpm/tpm configured: the server's pause must still hold a call that starts during it
    adapter = ScriptedAdapter([Limited(1.0)], max_n=1)
    started: dict[str, float] = {}
    generate = adapter.generate

    async def timed(case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        started.setdefault(case.id, time.monotonic())
        return await generate(case, n, sampling, start=start)

    adapter.generate = timed  # type: ignore[method-assign]
    target = managed(adapter, max_concurrency=4)

    async def two_calls() -> float:
        began = time.monotonic()
        first = asyncio.create_task(target.sample(CASE, 1, SAMPLING))
        await asyncio.sleep(0.2)  # the first call has had its 429 by now
        await target.sample(Case("d", "x"), 1, SAMPLING)
        await first
        return began

    began = asyncio.run(two_calls())
    assert started["d"] - began >= 0.95  # it waited out the pause, it did not start at 0.2 s
    assert target.stats().rate_limited == 1


def test_a_call_waiting_for_a_slot_is_not_sent_to_a_halted_target() -> None:
    adapter = ScriptedAdapter([Transient("down")] * 5, max_n=1, delay_s=0.1)
    target = managed(adapter, max_consecutive_failures=1, max_concurrency=1)

    async def two_cases() -> list[object]:
        return await asyncio.gather(target.sample(CASE, 1, SAMPLING), target.sample(Case("d", "x"), 1, SAMPLING),
                                    return_exceptions=True)

    outcomes = asyncio.run(two_cases())
    assert all(isinstance(o, TargetUnavailableError) for o in outcomes)
    assert len(adapter.calls) == 1  # the second call saw the halt once it had the slot


def test_consecutive_failures_stop_the_run() -> None:
    adapter = ScriptedAdapter([Transient("down")] * 50, max_n=1)
    target = managed(adapter, max_retries=10, max_consecutive_failures=4, max_concurrency=1)
    with pytest.raises(TargetUnavailableError, match=r"failed 4 calls in a row") as info:
        asyncio.run(target.sample(CASE, 3, SAMPLING))
    assert "transient: down" in str(info.value)
    assert len(adapter.calls) == 4
    with pytest.raises(TargetUnavailableError):  # later calls stop before touching the backend
        asyncio.run(target.sample(Case("other", "x"), 1, SAMPLING))
    assert len(adapter.calls) == 4


def test_a_success_resets_the_consecutive_count() -> None:
    script: list[object] = [Transient("a"), Transient("b"), None, Transient("c"), Transient("d"), None]
    adapter = ScriptedAdapter(script, max_n=1)
    target = managed(adapter, max_consecutive_failures=3, max_concurrency=1)
    assert texts(asyncio.run(target.sample(CASE, 2, SAMPLING))) == ["s0", "s1"]


def test_timeout_abandons_the_call_and_retries() -> None:
    adapter = ScriptedAdapter([("sleep", 5.0)], max_n=1)
    target = managed(adapter, timeout_s=0.2)
    began = time.monotonic()
    assert texts(asyncio.run(target.sample(CASE, 1, SAMPLING))) == ["s0"]
    assert time.monotonic() - began < 3.0
    assert len(adapter.calls) == 2 and target.stats().failed == 1


def test_concurrency_cap_holds_across_many_tasks() -> None:
    adapter = ScriptedAdapter(max_n=1, delay_s=0.02)
    target = managed(adapter, max_concurrency=3)

    async def many() -> list[list[Trajectory]]:
        return await asyncio.gather(*(target.sample(Case(f"c{i}", f"q{i}"), 2, SAMPLING) for i in range(10)))

    results = asyncio.run(many())
    assert all(texts(r) == ["s0", "s1"] for r in results)
    assert adapter.peak == 3 and len(adapter.calls) == 20


def test_budget_max_calls_stops_without_overshoot(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(max_n=1, delay_s=0.02)
    target = managed(adapter, tmp_path, max_concurrency=4, budget=Budget(max_calls=6))
    with pytest.raises(BudgetExceededError, match=r"max_calls = 6"):
        asyncio.run(target.sample(CASE, 20, SAMPLING))
    assert len(adapter.calls) == 6
    assert target.snapshot().calls == 6 and target.snapshot().in_flight == 0
    assert target.remaining()["calls"] == 0
    # the finished samples were kept: a bigger budget later pays only for the rest
    more = ManagedTarget(ScriptedAdapter(max_n=1), Limits(backoff=FAST), Budget(max_calls=14), target.cache)
    out = asyncio.run(more.sample(CASE, 20, SAMPLING))
    assert texts(out) == [f"s{i}" for i in range(20)] and sum(t.cached for t in out) == 6


def test_token_and_cost_budgets_overshoot_at_most_the_calls_in_flight() -> None:
    adapter = ScriptedAdapter(max_n=1, tokens=4, cost=0.25)
    target = managed(adapter, max_concurrency=1, budget=Budget(max_tokens=10))
    with pytest.raises(BudgetExceededError, match="max_tokens"):
        asyncio.run(target.sample(CASE, 10, SAMPLING))
    assert len(adapter.calls) == 3 and target.snapshot().tokens == 12  # 8 < 10 let the 3rd start

    shared = BudgetTracker(Budget(max_cost_usd=0.6))  # one budget for two targets
    first = managed(ScriptedAdapter(max_n=1, cost=0.25), budget=shared, max_concurrency=1)
    second = managed(ScriptedAdapter(max_n=1, cost=0.25), budget=shared, max_concurrency=1)
    asyncio.run(first.sample(CASE, 2, SAMPLING))
    with pytest.raises(BudgetExceededError, match="max_cost_usd"):
        asyncio.run(second.sample(CASE, 5, SAMPLING))
    assert shared.snapshot().calls == 3 and shared.snapshot().cost_usd == pytest.approx(0.75)


def test_cache_makes_reruns_free_and_extends_by_index(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(max_n=4, cost=0.5)
    target = managed(adapter, tmp_path, budget=Budget(max_calls=3))
    first = asyncio.run(target.sample(CASE, 4, SAMPLING))
    assert len(adapter.calls) == 1
    again = asyncio.run(target.sample(CASE, 4, SAMPLING))
    assert [t.cached for t in again] == [True] * 4 and len(adapter.calls) == 1
    assert [(t.text, t.usage, t.cost_usd) for t in again] == [(t.text, t.usage, t.cost_usd) for t in first]
    assert target.snapshot().calls == 1 and target.snapshot().cost_usd == 2.0  # cache hits cost nothing
    more = asyncio.run(target.sample(CASE, 3, SAMPLING, start=3))  # index 3 cached; 4, 5 new
    assert [t.cached for t in more] == [True, False, False] and adapter.calls[-1] == (4, 2)
    # a different sampling setup or tool list is a different sample
    asyncio.run(target.sample(CASE, 1, Sampling(seed=0, temperature=0.5)))
    assert len(adapter.calls) == 3
    stats = target.stats()
    assert (stats.samples, stats.cached) == (4 + 4 + 3 + 1, 4 + 1)


def test_sample_sync_works_repeatedly_and_from_threads() -> None:
    target = managed(ScriptedAdapter(max_n=2))
    assert texts(target.sample_sync(CASE, 3, SAMPLING)) == ["s0", "s1", "s2"]
    results: list[list[str | None]] = []
    workers = [threading.Thread(target=lambda: results.append(texts(target.sample_sync(CASE, 2, SAMPLING))))
               for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert results == [["s0", "s1"]] * 3


def test_rpm_limit_spaces_calls() -> None:
    adapter = ScriptedAdapter(max_n=1)
    target = managed(adapter, rpm=1200)  # one call every 50 ms
    began = time.monotonic()
    asyncio.run(target.sample(CASE, 5, SAMPLING))
    assert time.monotonic() - began >= 4 * 0.05 - 0.01


def test_secrets_stay_out_of_errors_and_tracebacks() -> None:
    key = "sk-test-SECRET-0123456789"
    adapter = ScriptedAdapter([Fatal(f"Incorrect API key provided: {key}")], max_n=1)
    adapter.secrets = (key,)  # type: ignore[attr-defined]
    target = managed(adapter)
    with pytest.raises(TargetError) as info:
        asyncio.run(target.sample(CASE, 1, SAMPLING))
    shown = "".join(traceback.format_exception(info.value)) + repr(info.value) + repr(target)
    assert key not in shown and "Incorrect API key provided: ***" in str(info.value)


def test_bad_arguments_and_adapter_bugs() -> None:
    target = managed(ScriptedAdapter())
    with pytest.raises(ConfigError):
        asyncio.run(target.sample(CASE, -1, SAMPLING))
    assert asyncio.run(target.sample(CASE, 0, SAMPLING)) == []

    class Broken(ScriptedAdapter):
        async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
            return ["not a trajectory"]  # type: ignore[list-item]

    with pytest.raises(TargetError, match="must return Trajectory"):
        asyncio.run(managed(Broken()).sample(CASE, 1, SAMPLING))

    class Empty(ScriptedAdapter):
        async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
            self.calls.append((start, n))
            return []

    empty = Empty()
    out = asyncio.run(managed(empty, max_retries=1).sample(CASE, 1, SAMPLING))
    assert "returned no samples" in (out[0].error or "") and len(empty.calls) == 2


def test_open_target_builds_managed_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    register("scripted-test", lambda rest, **options: ScriptedAdapter(**options))
    target = open_target("scripted-test:x", limits={"max_retries": 1}, budget={"max_calls": 5}, max_n=2)
    assert isinstance(target, ManagedTarget) and target.limits.max_retries == 1 and target.max_n == 2
    assert texts(target.sample_sync(CASE, 2, SAMPLING)) == ["s0", "s1"]
    assert (tmp_path / ".frontier-qa" / "cache" / "samples.sqlite3").exists()  # default cache location
    assert open_target(ScriptedAdapter(), cache=False).cache is None  # type: ignore[union-attr]
    elsewhere = open_target(ScriptedAdapter(), cache=tmp_path / "x")
    assert elsewhere.cache.path == tmp_path / "x" / "samples.sqlite3"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="adapter options"):
        open_target(ScriptedAdapter(), max_n=3)
    with pytest.raises(ConfigError, match="unknown target scheme"):
        open_target("nope:x")
    with pytest.raises(ConfigError, match="tool_options"):
        open_target("scripted-test:x", tool_options={"max_turns": 2})


def test_cache_masks_secrets_and_replays_what_was_returned(tmp_path: Path) -> None:
    key = "sk-live-ABCDEFGH12345"

    class Echo(ScriptedAdapter):
        async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
            self.calls.append((start, n))
            return [Trajectory(text=f"key {key}; write api_key=abcd1234 in .env; 123456789 and api_key=None",
                               sample_index=start)]

    adapter = Echo(max_n=1)
    adapter.secrets = (key,)  # type: ignore[attr-defined]
    target = managed(adapter, tmp_path)
    (live,) = asyncio.run(target.sample(CASE, 1, SAMPLING))
    (replayed,) = asyncio.run(target.sample(CASE, 1, SAMPLING))
    # the known key and a credential-shaped assignment are masked, live and on replay alike (what the
    # store and the cache keep is what is scored); a number and a short value stay
    assert live.text == replayed.text == "key ***; write api_key=*** in .env; 123456789 and api_key=None"
    assert replayed.cached and len(adapter.calls) == 1
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())
    assert key.encode() not in stored
