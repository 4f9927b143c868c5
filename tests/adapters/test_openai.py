"""The openai adapter and the runtime against a real OpenAI-compatible HTTP server.

Every test talks through the real ``openai.AsyncOpenAI`` client over TCP to
:class:`tests.servers.fake_openai.FakeOpenAIServer`; server-side request counts are
compared with the runtime's own statistics, so nothing is lost or counted twice.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from pathlib import Path

import openai
import pytest

from frontier_qa.adapters import create_adapter
from frontier_qa.adapters._openai_adapter import OpenAIAdapter, split_spec, split_usage
from frontier_qa.errors import BudgetExceededError, ConfigError, TargetError, TargetUnavailableError
from frontier_qa.runtime import Backoff, Budget, Limits, ManagedTarget, open_target, run_sync
from frontier_qa.target import Case, Sampling, Usage
from tests.servers.fake_openai import FakeOpenAIServer, fake_openai, served  # noqa: F401 - fixture

FAST = Backoff(initial_s=0.01, max_s=0.05, jitter_s=0.01)
SAMPLING = Sampling(seed=0, max_tokens=32)
ANSWERS = {"2+2?": ["\\boxed{4}", "\\boxed{4}", "\\boxed{5}", "\\boxed{4}"]}
ADD = Case("add", "2+2?")


def target_for(server: FakeOpenAIServer, tmp_path: Path | None = None, *, limits: Limits | None = None,
               budget: Budget | None = None, **options: object) -> ManagedTarget:
    target = open_target(
        f"openai:fake-model@{server.base_url}",
        limits=limits or Limits(backoff=FAST, timeout_s=5.0),
        budget=budget,
        cache=tmp_path / "cache" if tmp_path is not None else False,
        **options,
    )
    assert isinstance(target, ManagedTarget)
    return target


def test_spec_parsing_and_usage_split() -> None:
    assert split_spec("Qwen/Qwen3-4B@http://127.0.0.1:8000/v1/") == ("Qwen/Qwen3-4B", "http://127.0.0.1:8000/v1")
    assert split_spec("gpt-4o-mini") == ("gpt-4o-mini", None)
    assert split_usage(7, 10, 3) == [Usage(3, 4), Usage(2, 3), Usage(2, 3)]
    adapter = create_adapter("openai:m@http://127.0.0.1:9/v1")
    assert adapter.id == "openai:m@http://127.0.0.1:9/v1" and adapter.max_n == 16
    assert create_adapter("openai:m@http://127.0.0.1:9/v1", supports_n=False).max_n == 1
    with pytest.raises(ConfigError, match="two base URLs"):
        create_adapter("openai:m@http://127.0.0.1:9/v1", base_url="http://other/v1")
    with pytest.raises(ConfigError, match="price"):
        create_adapter("openai:m@http://127.0.0.1:9/v1", price={"input": 1})


def test_fake_server_serves_models(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    async def models() -> list[str]:
        client = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="x", max_retries=0)
        return [m.id for m in (await client.models.list()).data]

    assert asyncio.run(models()) == ["fake-model"]
    assert fake_openai.count("/v1/models") == 1


def test_n_samples_in_one_request_with_usage_and_price(tmp_path: Path) -> None:
    with FakeOpenAIServer(answers=ANSWERS) as server:
        target = target_for(server, price={"input": 1.0, "output": 2.0})
        out = target.sample_sync(ADD, 4, SAMPLING)
        assert [t.text for t in out] == served(ANSWERS["2+2?"], ADD, SAMPLING, 4)
        assert server.count() == 1 and target.stats().calls == 1
        body = server.requests[0].body
        assert (body["n"], body["seed"], body["max_tokens"], body["model"]) == (
            4, SAMPLING.seed_for(ADD, 0), 32, "fake-model")
        # server usage: prompt 1 word, completion 4 words; split 1/0/0/0 and 1 each
        assert sum((t.usage for t in out), Usage()) == Usage(1, 4)
        assert sum(t.cost_usd or 0 for t in out) == pytest.approx((1 * 1.0 + 4 * 2.0) / 1e6)
        assert target.snapshot().tokens == 5
        assert out[2].messages[-1] == {"role": "assistant", "content": out[2].text}


def test_sample_i_is_stable_across_chunking() -> None:
    # seed + start makes the server's answer depend on the sample index, not on the batching
    with FakeOpenAIServer(answers=ANSWERS) as server:
        whole = target_for(server).sample_sync(Case("add", "2+2?"), 4, SAMPLING)
        pieces = target_for(server, max_n=1).sample_sync(Case("add", "2+2?"), 4, SAMPLING)
        assert [t.text for t in pieces] == [t.text for t in whole]
        # in any order; a case's seeds are consecutive from its own base
        assert sorted(r.body["seed"] for r in server.requests[1:]) == [SAMPLING.seed_for(ADD, i) for i in range(4)]


def test_server_ignoring_n_falls_back_to_single_requests() -> None:
    with FakeOpenAIServer(answers=ANSWERS, supports_n=False) as server:
        target = target_for(server)
        out = target.sample_sync(Case("add", "2+2?"), 4, SAMPLING)
        assert [t.text for t in out] == served(ANSWERS["2+2?"], ADD, SAMPLING, 4)
        assert [t.sample_index for t in out] == [0, 1, 2, 3]
        assert target.max_n == 1
        assert server.count() == target.stats().calls == 4  # n=4 (1 back), then 3 single requests


def test_server_rejecting_n_falls_back_to_single_requests() -> None:
    with FakeOpenAIServer(answers=ANSWERS, reject_n=True) as server:
        target = target_for(server)
        out = target.sample_sync(Case("add", "2+2?"), 3, SAMPLING)
        assert [t.text for t in out] == served(ANSWERS["2+2?"], ADD, SAMPLING, 3)
        assert server.count() == target.stats().calls == 4  # the 400, then 3 single requests
        assert [r.body.get("n") for r in server.requests] == [3, None, None, None]


def test_greedy_sampling_asks_one_real_sample_per_request_and_keeps_n() -> None:
    # vLLM refuses n > 1 at temperature 0; hosted APIs are not deterministic there either.
    greedy = Sampling(seed=0, max_tokens=32, temperature=0.0)
    with FakeOpenAIServer(answers=ANSWERS) as server:
        target = target_for(server)
        out = target.sample_sync(Case("add", "2+2?"), 3, greedy)
        assert [t.sample_index for t in out] == [0, 1, 2]
        assert [r.body.get("n") for r in server.requests] == [None, None, None]
        assert target.max_n > 1  # a later sampled (temperature > 0) call still batches with n
        target.sample_sync(Case("add", "2+2?"), 3, SAMPLING)
        assert server.requests[-1].body.get("n") == 3


def test_prefill_continues_the_assistant_turn() -> None:
    case = Case("p", "2+2?", history=({"role": "assistant", "content": "Let me think. "},))
    with FakeOpenAIServer(answers=ANSWERS) as server:
        out = target_for(server, prefill=True).sample_sync(case, 1, SAMPLING)
        body = server.requests[0].body
        assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
        assert out[0].text == "\\boxed{4}"
        assert out[0].messages[-1] == {"role": "assistant", "content": "Let me think. \\boxed{4}"}
        target_for(server).sample_sync(case, 1, SAMPLING)  # without prefill=True: plain chat
        assert "continue_final_message" not in server.requests[1].body


def test_tool_calls_are_recorded_but_not_counted_as_executed() -> None:
    tool = {"type": "function", "function": {"name": "python", "parameters": {"type": "object"}}}
    answer = {"content": None, "tool_calls": [{"name": "python", "arguments": '{"code": "print(1)"}'}]}
    with FakeOpenAIServer(answers={"run it": answer}) as server:
        out = target_for(server).sample_sync(Case("t", "run it", tools=(tool,)), 1, SAMPLING)
        assert server.requests[0].body["tools"] == [tool]
        (call,) = out[0].tool_calls
        assert (call.name, call.arguments, call.result) == ("python", '{"code": "print(1)"}', None)
        assert out[0].n_tool_calls == 0 and out[0].ok and out[0].text == ""


def test_retry_after_is_honoured() -> None:
    with FakeOpenAIServer(script=["429:0.4"]) as server:
        target = target_for(server, limits=Limits(backoff=Backoff(initial_s=20, max_s=20, jitter_s=0)))
        began = time.monotonic()
        out = target.sample_sync(Case("a", "hi"), 1, SAMPLING)
        elapsed = time.monotonic() - began
        assert out[0].ok and server.count() == 2 and target.stats().rate_limited == 1
        assert 0.35 <= elapsed < 10  # waited the server's 0.4 s, not the 20 s backoff
        gap = server.requests[1].at - server.requests[0].at
        assert gap >= 0.35


def test_unauthorized_is_fatal_sent_once_and_the_key_is_never_shown(tmp_path: Path) -> None:
    key = "sk-wrong-0123456789abcdef"
    with FakeOpenAIServer(api_key="sk-right-key") as server:  # the server echoes the wrong key
        target = target_for(server, tmp_path, api_key=key, limits=Limits(backoff=FAST, max_retries=5))
        with pytest.raises(TargetError) as info:
            target.sample_sync(Case("a", "hi"), 3, SAMPLING)
        assert server.count() == 1
        assert "HTTP 401" in str(info.value) and "API key" in str(info.value)
        shown = "".join(traceback.format_exception(info.value)) + repr(info.value) + repr(target)
        assert key not in shown and "***" in str(info.value)
        # a working call with the key in the options writes no key into the cache
        good = target_for(server, tmp_path, api_key="sk-right-key")
        assert good.sample_sync(Case("a", "hi"), 2, SAMPLING)[0].ok
        good.flush()  # writes are batched: commit before reading the files themselves
        stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())
        assert b"sk-right-key" not in stored and b"boxed{42}" in stored


@pytest.mark.parametrize("fault", ["500", "503", "malformed", "wrong", "html", "hang"])
def test_transient_faults_are_retried_until_an_answer(fault: str) -> None:
    with FakeOpenAIServer(script=[fault, fault]) as server:
        # a short timeout only where the server hangs: elsewhere a loaded CI machine could trip it
        timeout_s = 0.5 if fault == "hang" else 10.0
        target = target_for(server, limits=Limits(backoff=FAST, timeout_s=timeout_s))
        out = target.sample_sync(Case("a", "hi"), 2, SAMPLING)
        assert [t.text for t in out] == ["The answer is \\boxed{42}."] * 2
        stats = target.stats()
        assert server.count() == stats.calls == 3 and (stats.failed, stats.succeeded) == (2, 1)


@pytest.mark.parametrize("status", ["400", "403", "404"])
def test_client_errors_are_fatal(status: str) -> None:
    with FakeOpenAIServer(script=[status]) as server:
        with pytest.raises(TargetError, match=f"HTTP {status}"):
            target_for(server).sample_sync(Case("a", "hi"), 1, SAMPLING)
        assert server.count() == 1


def test_random_faults_lose_nothing_and_count_everything() -> None:
    rates = {"429:0.01": 0.1, "500": 0.1, "malformed": 0.05, "fewer": 0.1, "latency:0.02": 0.1}
    answers = {f"q{i}": [f"\\boxed{{{i}-{j}}}" for j in range(4)] for i in range(12)}
    with FakeOpenAIServer(answers=answers, fault_rates=rates, seed=7) as server:
        target = target_for(server, limits=Limits(backoff=FAST, max_retries=3, max_concurrency=6))

        async def run() -> list[list[object]]:
            return await asyncio.gather(*(target.sample(Case(f"c{i}", f"q{i}"), 4, SAMPLING) for i in range(12)))

        results = asyncio.run(run())
        stats = target.stats()
        assert server.count() == stats.calls == stats.succeeded + stats.failed
        for i, out in enumerate(results):
            assert [t.sample_index for t in out] == [0, 1, 2, 3]  # type: ignore[attr-defined]
            expected = served(answers[f"q{i}"], Case(f"c{i}", f"q{i}"), SAMPLING, 4)
            for j, t in enumerate(out):
                assert t.text == expected[j] or (t.error and "gave up" in t.error)  # type: ignore[attr-defined]
        assert stats.samples == 48 and stats.failed > 0


def test_budget_stops_at_max_calls_without_overshoot(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.05) as server:
        target = target_for(server, tmp_path, budget=Budget(max_calls=5), max_n=1,
                            limits=Limits(backoff=FAST, max_concurrency=4))
        with pytest.raises(BudgetExceededError, match="max_calls = 5"):
            target.sample_sync(Case("a", "hi"), 12, SAMPLING)
        assert server.count() == 5 == target.snapshot().calls


def test_cache_makes_a_rerun_cost_zero_calls(tmp_path: Path) -> None:
    with FakeOpenAIServer(answers=ANSWERS) as server:
        first = target_for(server, tmp_path).sample_sync(Case("add", "2+2?"), 4, SAMPLING)
        again_target = target_for(server, tmp_path)
        again = again_target.sample_sync(Case("add", "2+2?"), 4, SAMPLING)
        assert server.count() == 1 and again_target.stats().calls == 0
        assert [t.text for t in again] == [t.text for t in first] and all(t.cached for t in again)
        assert again_target.snapshot().calls == 0 and again_target.snapshot().tokens == 0


def test_consecutive_failures_raise_target_unavailable() -> None:
    with FakeOpenAIServer(fault_rates={"503": 1.0}) as server:
        target = target_for(server, limits=Limits(backoff=FAST, max_retries=10, max_consecutive_failures=4,
                                                  max_concurrency=1))
        with pytest.raises(TargetUnavailableError, match="failed 4 calls in a row"):
            target.sample_sync(Case("a", "hi"), 1, SAMPLING)
        assert server.count() == 4


def test_missing_key_for_openai_itself_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIAdapter("gpt-4o-mini")


def test_tools_spec_runs_the_code_the_server_writes(tmp_path: Path) -> None:
    """``tools+openai:...`` wraps the managed target with the tool executor (chat mode)."""
    from frontier_qa.adapters.tool_executor import ToolExecutor

    def answer(body: dict, index: int) -> str:
        seen_output = any("```output" in str(m.get("content")) for m in body["messages"])
        return "So it is \\boxed{42}." if seen_output else "Let me compute.\n```python\nprint(6 * 7)\n```"

    with FakeOpenAIServer(answers=answer) as server:
        target = open_target(f"tools+openai:fake-model@{server.base_url}", cache=tmp_path / "cache",
                             limits=Limits(backoff=FAST), tool_options={"sandbox": {"timeout_s": 10}})
        assert isinstance(target, ToolExecutor) and isinstance(target.inner, ManagedTarget)
        (out,) = run_sync(target.sample(Case("t", "What is 6*7?"), 1, SAMPLING))
        assert out.n_tool_calls == 1 and out.tool_calls[0].result == "42"
        assert out.text.endswith("\\boxed{42}.")
        assert server.count() == 2 and server.requests[0].body["stop"] == ["```output"]
