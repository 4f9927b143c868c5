"""The runtime's pure parts: limits, GCRA pacing, retry waits, budgets, redaction, the cache."""

from __future__ import annotations

import asyncio
import email.utils
import json
import sqlite3
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from tenacity import RetryCallState

from frontier_qa.errors import BudgetExceededError, ConfigError
from frontier_qa.redaction import mentions
from frontier_qa.runtime import (
    Backoff,
    BackoffWait,
    Budget,
    BudgetTracker,
    Limits,
    Pacer,
    RateLimiter,
    SampleCache,
    classify_status,
    estimate_tokens,
    parse_retry_after,
    redact,
    redact_options,
    secret_values,
)
from frontier_qa.runtime._cache import trajectory_from_json, trajectory_to_json
from frontier_qa.runtime._retry import AttemptFailed
from frontier_qa.target import ErrorClass, ErrorKind, ToolCall, Trajectory, Usage


class FakeClock:
    """A clock that moves only when told (or when a sleeper sleeps)."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 9))
        self.now += seconds


# --- values -----------------------------------------------------------------------------


def test_limits_reject_bad_values_with_the_field_named() -> None:
    with pytest.raises(ConfigError, match=r"Limits.rpm"):
        Limits(rpm=0)
    with pytest.raises(ConfigError, match=r"Limits.max_concurrency"):
        Limits(max_concurrency=0)
    with pytest.raises(ConfigError, match=r"Backoff.max_s"):
        Backoff(initial_s=5, max_s=1)
    with pytest.raises(ConfigError, match=r"Budget.max_calls"):
        Budget(max_calls=-1)


def test_limits_and_budget_from_dict() -> None:
    limits = Limits.from_dict({"rpm": 600, "backoff": {"initial_s": 0.5, "max_s": 4}})
    assert limits.rpm == 600 and limits.backoff == Backoff(initial_s=0.5, max_s=4)
    assert Budget.from_dict({"max_calls": 3}).max_calls == 3
    assert Budget().unlimited and not Budget(max_wall_s=1).unlimited
    with pytest.raises(ConfigError, match=r"unknown key\(s\) 'rmp'") as info:
        Limits.from_dict({"rmp": 600})
    assert "rpm" in str(info.value)  # the hint lists the allowed keys


# --- pacing -----------------------------------------------------------------------------


def test_pacer_spaces_requests_evenly() -> None:
    clock = FakeClock(0.0)
    pacer = Pacer(rate_per_s=2.0, capacity=1, clock=clock)  # 120 rpm: one every 0.5 s
    assert [pacer.reserve() for _ in range(4)] == [0.0, 0.5, 1.0, 1.5]
    clock.now = 10.0  # idle a long time: no credit beyond the burst
    assert [pacer.reserve() for _ in range(2)] == [10.0, 10.5]


def test_pacer_admit_spaces_late_wakers() -> None:
    clock = FakeClock(0.0)
    pacer = Pacer(rate_per_s=2.0, capacity=1, clock=clock)
    assert [pacer.reserve() for _ in range(3)] == [0.0, 0.5, 1.0]
    assert pacer.admit() == 0.0
    clock.now = 2.0  # the loop stalled: all three slots are past due
    assert pacer.admit() == 0.0
    # not a burst: the next one waits (half a second after the last dispatch, less a quarter
    # interval of forgiven timer lateness)
    assert pacer.admit() == pytest.approx(0.375)
    clock.now = 2.5
    assert pacer.admit() == 0.0


def test_pacer_burst_then_pace() -> None:
    pacer = Pacer(rate_per_s=1.0, capacity=3, clock=FakeClock(0.0))
    assert [pacer.reserve() for _ in range(5)] == [0.0, 0.0, 0.0, 1.0, 2.0]


def test_token_pacer_reconciles_overestimates() -> None:
    clock = FakeClock(0.0)
    tokens = Pacer(rate_per_s=10.0, capacity=600, clock=clock)  # 600 tpm
    assert tokens.reserve(600) == 0.0  # the whole minute at once
    assert tokens.reserve(100) == pytest.approx(10.0)  # 100 tokens refill in 10 s
    tokens.adjust(-500)  # the first call used 100, not 600
    assert tokens.reserve(100) == pytest.approx(0.0)
    # weights above capacity are clipped instead of waiting forever
    assert Pacer(1.0, 5, clock=FakeClock(0.0)).reserve(50) == 0.0


def test_rate_limiter_waits_for_rpm_and_tpm() -> None:
    clock = FakeClock(0.0)
    limiter = RateLimiter(rpm=60, tpm=120, clock=clock, sleep=clock.sleep)

    async def run() -> list[float]:
        starts = []
        for _ in range(3):
            await limiter.acquire(60)
            starts.append(clock.now)
        return starts

    # rpm 60: one per second; tpm 120 (2 tokens/s, burst 120): the third 60-token call
    # must wait until 60 tokens refilled: 30 s after the start
    assert asyncio.run(run()) == [0.0, 1.0, 30.0]


def test_rate_limiter_pause_holds_every_new_start() -> None:
    clock = FakeClock(0.0)
    limiter = RateLimiter(rpm=600, clock=clock, sleep=clock.sleep)

    async def run() -> list[float]:
        await limiter.acquire()
        limiter.pause_for(5.0)  # a 429 said Retry-After: 5
        await limiter.acquire()
        first = clock.now
        await limiter.acquire()
        return [first, clock.now]

    assert asyncio.run(run()) == pytest.approx([5.0, 5.1])
    assert not RateLimiter().active


def test_estimate_tokens_is_prompt_quarter_chars_plus_completion_cap() -> None:
    messages = [{"role": "user", "content": "x" * 38}]  # json.dumps adds 2 quote chars: 40 chars
    assert estimate_tokens(messages, n=3, max_tokens=100) == 10 + 300


# --- retry policy -----------------------------------------------------------------------


def _state(exc: BaseException, attempt: int) -> RetryCallState:
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    state.set_exception((type(exc), exc, None))
    return state


def test_backoff_is_exponential_and_capped_and_honours_retry_after() -> None:
    wait = BackoffWait(Backoff(initial_s=1.0, max_s=5.0, jitter_s=0.0, max_retry_after_s=30.0))
    transient = AttemptFailed(ErrorClass(ErrorKind.TRANSIENT, "503"))
    assert [wait(_state(transient, a)) for a in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    limited = AttemptFailed(ErrorClass(ErrorKind.RATE_LIMITED, "429", retry_after=7.5))
    assert wait(_state(limited, 1)) == 7.5
    assert wait(_state(AttemptFailed(ErrorClass(ErrorKind.RATE_LIMITED, "429", 999.0)), 1)) == 30.0
    # rate limited without Retry-After: plain backoff
    assert wait(_state(AttemptFailed(ErrorClass(ErrorKind.RATE_LIMITED, "429")), 2)) == 2.0
    jittered = BackoffWait(Backoff(initial_s=1.0, max_s=5.0, jitter_s=0.5))
    assert all(1.0 <= jittered(_state(transient, 1)) <= 1.5 for _ in range(50))


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=1_000_000.0) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "-3"}) is None
    assert parse_retry_after(None) is None


def test_classify_status() -> None:
    assert classify_status(429) is ErrorKind.RATE_LIMITED
    assert [classify_status(s) for s in (408, 409, 500, 502, 503)] == [ErrorKind.TRANSIENT] * 5
    assert [classify_status(s) for s in (400, 401, 403, 404, 422)] == [ErrorKind.FATAL] * 5
    assert classify_status(None) is None and classify_status(200) is None


# --- budget -----------------------------------------------------------------------------


def test_budget_counts_calls_in_flight() -> None:
    tracker = BudgetTracker(Budget(max_calls=2))
    first, second = tracker.reserve(), tracker.reserve()
    with pytest.raises(BudgetExceededError, match="1 in flight|2 in flight"):
        tracker.reserve()
    tracker.settle(first, tokens=10)
    with pytest.raises(BudgetExceededError, match=r"max_calls = 2"):
        tracker.reserve()
    tracker.settle(second)
    snap = tracker.snapshot()
    assert (snap.calls, snap.in_flight, snap.tokens, snap.remaining_calls) == (2, 0, 10, 0)
    with pytest.raises(RuntimeError, match="settled twice"):
        tracker.settle(first)


def test_budget_tokens_cost_and_wall() -> None:
    clock = FakeClock(0.0)
    tracker = BudgetTracker(Budget(max_tokens=100, max_cost_usd=0.5, max_wall_s=60), clock=clock)
    tracker.settle(tracker.reserve(), tokens=60, cost_usd=0.2)
    assert tracker.remaining() == {"calls": None, "tokens": 40, "cost_usd": pytest.approx(0.3), "wall_s": 60.0}
    tracker.settle(tracker.reserve(), tokens=60, cost_usd=0.1)  # started with room, may overshoot
    with pytest.raises(BudgetExceededError, match=r"120 tokens used reach Budget.max_tokens = 100"):
        tracker.reserve()

    money = BudgetTracker(Budget(max_cost_usd=0.5), clock=clock)
    money.settle(money.reserve(), cost_usd=0.5)
    with pytest.raises(BudgetExceededError, match=r"max_cost_usd"):
        money.reserve()

    wall = BudgetTracker(Budget(max_wall_s=10), clock=clock)
    wall.settle(wall.reserve())
    clock.now += 10
    assert not wall.can_start()
    with pytest.raises(BudgetExceededError, match=r"max_wall_s = 10"):
        wall.reserve()
    assert "calls 1" in wall.snapshot().describe() and "wall s 10.0/10.0" in wall.snapshot().describe()


# --- secrets ----------------------------------------------------------------------------


def test_redact_removes_known_values_bearer_tokens_and_key_assignments() -> None:
    text = "bad key sk-live-123456 sent as Authorization: Bearer abc.def-123 with api_key=zzzz9999"
    out = redact(text, ["sk-live-123456"])
    assert "sk-live-123456" not in out and "abc.def-123" not in out and "zzzz9999" not in out
    assert out.startswith("bad key *** sent")
    assert redact("short x", ["x"]) == "short x"  # 1-char "secrets" would shred the text


def test_mentions_finds_a_secret_anywhere_in_a_trajectory_without_serialising_it() -> None:
    key = "sk-live-123456"
    clean = Trajectory(text="ok", messages=({"role": "user", "content": [{"type": "text", "text": "q"}]},),
                       tool_calls=(ToolCall("python", "print(1)", "1"),), usage=Usage(3, 1))
    assert not mentions(clean, [key]) and not mentions(clean, [])
    assert mentions(replace(clean, text=f"the key is {key}"), [key])
    assert mentions(replace(clean, messages=({"role": "tool", "content": [{"text": key}]},)), [key])
    assert mentions(replace(clean, tool_calls=(ToolCall("env", "{}", f"KEY={key}"),)), [key])
    assert not mentions(replace(clean, text="x y"), ["x"])  # as redact: short values are no secrets


def test_secret_option_names() -> None:
    # every header value is a secret but the plain ones (a custom header may carry a key)
    options = {"api_key": "k1", "max_tokens": 5, "model": {"password": "pw"},
               "headers": {"Authorization": "Bearer k2", "X-Tenant-Key": "t", "Content-Type": "application/json"}}
    assert set(secret_values(options)) == {"k1", "Bearer k2", "k2", "t", "pw"}
    assert redact_options(options) == {"api_key": "***", "max_tokens": 5, "model": {"password": "***"},
                                       "headers": {"Authorization": "***", "X-Tenant-Key": "***",
                                                   "Content-Type": "application/json"}}


# --- cache ------------------------------------------------------------------------------


def _trajectory(**changes: object) -> Trajectory:
    base = {
        "text": "\\boxed{4}",
        "messages": ({"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "\\boxed{4}"}),
        "tool_calls": (ToolCall("python", "print(2+2)", result="4"),),
        "usage": Usage(3, 5),
        "cost_usd": 0.001,
        "latency_s": 0.5,
        "sample_index": 7,
    }
    base.update(changes)
    return Trajectory(**base)  # type: ignore[arg-type]


def test_trajectory_json_round_trip() -> None:
    trajectory = _trajectory()
    assert trajectory_from_json(trajectory_to_json(trajectory)) == trajectory
    # the same text as the plain dataclasses.asdict form (existing cache files stay readable)
    rich = replace(trajectory, tool_calls=(ToolCall("python", "print(1)", "1", None),), cost_usd=0.5,
                   messages=({"role": "assistant", "content": [{"type": "text", "text": "é"}], "x": ("a", 1)},
                             {"role": "tool", "content": Usage(1, 2)}))  # a dataclass inside a message
    assert trajectory_to_json(rich) == json.dumps({**asdict(rich), "v": 1}, ensure_ascii=False, sort_keys=True)


def test_cache_writer_masks_secrets_it_is_given(tmp_path: Path) -> None:
    cache = SampleCache(tmp_path)
    cache.put("k", "t", _trajectory(text="sk-live-123456 leaked"), secrets=("sk-live-123456",))
    assert cache.flush() == 1 and SampleCache(tmp_path).get("k").text == "*** leaked"  # type: ignore[union-attr]
    cache.close()


def test_cache_put_get_clear_and_refuse_errors(tmp_path: Path) -> None:
    cache = SampleCache(tmp_path / "c")
    assert cache.get("k") is None and len(cache) == 0 and cache  # an empty cache is truthy
    assert not (tmp_path / "c").exists()  # reading creates nothing
    assert cache.put("k1", "target-a", _trajectory())
    assert cache.put("k2", "target-b", _trajectory(text="other"))
    assert not cache.put("k3", "target-a", _trajectory(text=None, error="HTTP 500"))
    assert cache.get("k1") == _trajectory() and cache.get("k3") is None
    assert set(cache.get_many(["k1", "k2", "k3"])) == {"k1", "k2"}
    assert cache.flush() == 2 and cache.flush() == 0
    assert SampleCache(tmp_path / "c").get("k2").text == "other"  # type: ignore[union-attr]
    # a second cache on the same file in this process (a re-run, a resumed curriculum) reads what
    # the first still queues: the read commits it (another process sees it within the interval)
    assert cache.put("k4", "target-b", _trajectory(text="queued")) and cache._pending
    assert SampleCache(tmp_path / "c").get("k4").text == "queued"  # type: ignore[union-attr]
    assert cache._pending == {} and cache.flush() == 0
    assert cache.clear("target-b") == 2
    assert cache.put("k2", "target-b", _trajectory(text="other")) and cache.flush() == 1
    assert cache.clear("target-a") == 1 and len(cache) == 1
    assert cache.clear() == 1 and len(cache) == 0
    # counting and deleting see every queued sample: this cache's and a sibling's on the same file
    sibling = SampleCache(tmp_path / "c")
    assert cache.put("k5", "target-a", _trajectory()) and sibling.put("k6", "target-b", _trajectory())
    assert len(sibling) == 2 and cache._pending == {} and sibling._pending == {}
    assert sibling.put("k7", "target-b", _trajectory()) and cache.clear("target-b") == 2 and len(cache) == 1
    sibling.close()


def test_cache_skips_records_of_another_version(tmp_path: Path) -> None:
    cache = SampleCache(tmp_path / "samples.sqlite3")
    cache.put("k", "t", _trajectory())
    cache.flush()
    conn = sqlite3.connect(cache.path)
    conn.execute("UPDATE samples SET record = ?", ('{"v": 0, "text": "old"}',))
    conn.commit()
    conn.close()
    assert cache.get("k") is None


def test_cache_in_unwritable_place_says_how_to_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = SampleCache(blocker / "cache")
    with pytest.raises(ConfigError, match="cannot open the sample cache") as info:
        cache.put("k", "t", _trajectory())
    assert "cache=False" in str(info.value)


def test_importing_the_runtime_loads_no_provider_sdk(tmp_path: Path) -> None:
    code = ("import sys, frontier_qa.runtime;"
            "print([m for m in ('litellm', 'openai', 'httpx', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
