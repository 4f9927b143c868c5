"""The model gateway: a framework-style agent's own model calls go through the target's runtime.

The agent (tests/runtime/_gateway_agent.py) is a plain ``openai.AsyncOpenAI`` tool loop making four
model calls per sample, built with its own base URL and key; it runs inside a real ManagedTarget with
a SampleCache against :class:`tests.servers.fake_openai.FakeOpenAIServer`. The server's request
counts are compared with the runtime's statistics.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from frontier_qa.adapters._agents import AgentContext
from frontier_qa.errors import BudgetExceededError, TargetError
from frontier_qa.runtime import Backoff, Budget, Limits, ManagedTarget, SampleCache
from frontier_qa.runtime._gateway import ModelGateway
from frontier_qa.target import Adapter, Case, Sampling, Trajectory, stable_seed
from tests.factories import REPO
from tests.runtime._gateway_agent import CASE, SAMPLING, LoopAgent, scripted
from tests.servers.fake_openai import CHAT_PATH, RESPONSES_PATH, FakeOpenAIServer

FAST = Backoff(initial_s=0.01, max_s=0.05, jitter_s=0.0)
CALLS = 4  # per sample: three tool rounds and the answer
APIS = [("chat", False), ("chat", True), ("responses", False), ("responses", True)]


def managed(agent: LoopAgent, cache: Path | None = None, **options: Any) -> ManagedTarget:
    options.setdefault("limits", Limits(backoff=FAST, timeout_s=10.0))
    return ManagedTarget(agent, cache=SampleCache(cache) if cache is not None else None, **options)


def probe(target: ManagedTarget, n: int = 1, sampling: Sampling = SAMPLING) -> list[Any]:
    async def go() -> list[Any]:
        return await target.sample(CASE, n, sampling)

    return asyncio.run(go())


@pytest.mark.parametrize(("api", "stream"), APIS)
def test_every_model_call_is_counted_once(tmp_path: Path, api: str, stream: bool) -> None:
    with FakeOpenAIServer(answers=scripted()) as server:
        target = managed(LoopAgent(server.base_url, api=api, stream=stream), tmp_path)
        got = probe(target, n=2)
        assert server.count(RESPONSES_PATH if api == "responses" else CHAT_PATH) == server.model_calls() == 2 * CALLS
    assert [t.text for t in got] == ["The sum is \\boxed{6}."] * 2  # 1 + 2 + 3: the loop ran to its end
    stats = target.stats()
    assert (stats.calls, stats.succeeded, stats.failed, stats.retries, stats.samples) == (2 * CALLS, 2 * CALLS, 0, 0, 2)
    assert stats.tokens == sum(t.usage.total_tokens for t in got) > 0  # the same tokens, counted once
    assert target.snapshot().calls == 2 * CALLS and target.snapshot().tokens == stats.tokens


def test_calls_outside_a_sample_and_other_requests_are_untouched() -> None:
    async def go(server: FakeOpenAIServer) -> tuple[int, int]:
        async with httpx.AsyncClient() as client:
            plain = await client.post(f"{server.base_url}/chat/completions", json={"messages": []})
            listing = await client.get(f"{server.base_url}/models")
        return plain.status_code, listing.status_code

    with FakeOpenAIServer() as server:
        ModelGateway(managed(LoopAgent(server.base_url)))  # installs the patch (again: idempotent)
        ModelGateway(managed(LoopAgent(server.base_url)))
        assert asyncio.run(go(server)) == (200, 200)
        assert "seed" not in server.requests[0].body


class SyncClientAgent(Adapter):
    """An agent whose one model call uses the synchronous openai client (``model.invoke`` in a plain node)."""

    routes_model_calls = True
    gateway: ModelGateway | None = None

    def __init__(self, base_url: str) -> None:
        self.id, self.base_url = "sync-client-agent", base_url

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        assert self.gateway is not None
        ctx = AgentContext(case, start, sampling)
        client = openai.OpenAI(base_url=self.base_url, api_key="x", max_retries=0)
        with self.gateway.sample(ctx):
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": case.prompt}])
        return [Trajectory(reply.choices[0].message.content, sample_index=start)]


def test_a_synchronous_clients_model_call_goes_out_unrouted_and_a_warning_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    with FakeOpenAIServer() as server, caplog.at_level("WARNING", logger="frontier_qa.runtime._gateway"):
        target = managed(SyncClientAgent(server.base_url))
        probe(target, n=2)
        assert server.model_calls() == 2 and target.stats().calls == 0  # out untouched, and uncounted
    warned = [r.getMessage() for r in caplog.records if "synchronous client" in r.getMessage()]
    assert len(warned) == 1 and "sync-client-agent" in warned[0]  # once per target, naming it


def test_seeds_are_injected_per_call_and_stable() -> None:
    def seeds(server: FakeOpenAIServer) -> list[Any]:
        return [r.body.get("seed") for r in server.requests if r.path == CHAT_PATH]

    with FakeOpenAIServer(answers=scripted()) as server:
        probe(managed(LoopAgent(server.base_url)))
        first = seeds(server)
        server.reset()
        probe(managed(LoopAgent(server.base_url)))  # no cache: paid again, with the same seeds
        assert seeds(server) == first
        server.reset()
        probe(managed(LoopAgent(server.base_url, api="responses")))
        assert all("seed" not in r.body for r in server.requests)  # the Responses API takes none
    ctx_seed = SAMPLING.seed_for(CASE, 0)
    assert first == [stable_seed(f"frontier-qa/model-call/{ctx_seed}/{i}") for i in range(CALLS)]


def test_rpm_limit_paces_the_model_calls_not_the_sample() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(seconds)

    with FakeOpenAIServer(answers=scripted()) as server:
        target = managed(LoopAgent(server.base_url), limits=Limits(rpm=300, timeout_s=10.0), sleep=sleep)
        probe(target)
        assert server.model_calls() == target.stats().calls == CALLS
    # 300 RPM: 0.2 s between starts. The three calls after the first waited for the pacer; the first
    # did not: the sample took no token of its own
    paced = [w for w in waits if w > 0.05]
    assert len(paced) == CALLS - 1 and all(w <= 0.2 for w in paced)


@pytest.mark.parametrize(("api", "stream"), APIS)
def test_per_call_cache_replays_a_sample_whose_record_is_gone(tmp_path: Path, api: str, stream: bool) -> None:
    with FakeOpenAIServer(answers=scripted()) as server:
        first = probe(managed(LoopAgent(server.base_url, api=api, stream=stream), tmp_path))
        again = managed(LoopAgent(server.base_url, api=api, stream=stream), tmp_path)
        assert probe(again)[0].cached and server.model_calls() == CALLS  # the whole sample, cached
        sample_key = again.sample_keys(CASE, SAMPLING, [0])[0]
        with sqlite3.connect(tmp_path / "samples.sqlite3") as db:
            assert db.execute("DELETE FROM samples WHERE key = ?", (sample_key,)).rowcount == 1
        replay = managed(LoopAgent(server.base_url, api=api, stream=stream), tmp_path)
        got = probe(replay)
        assert server.model_calls() == CALLS  # every model call came from the per-call cache
    stats = replay.stats()
    assert (stats.calls, stats.cached_calls, stats.cached) == (0, CALLS, 0)
    assert got[0].text == first[0].text and got[0].usage == first[0].usage  # usage replayed into the sample


def test_429_with_retry_after_is_retried_by_the_gateway() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(seconds)

    with FakeOpenAIServer(answers=scripted(), script=["ok", "429:0.05", "503"]) as server:
        target = managed(LoopAgent(server.base_url), sleep=sleep)  # the SDK itself retries nothing
        got = probe(target)
        assert server.model_calls() == CALLS + 2
    assert got[0].ok and got[0].text == "The sum is \\boxed{6}."
    stats = target.stats()
    assert (stats.calls, stats.succeeded, stats.retries, stats.rate_limited, stats.failed) == (CALLS + 2, CALLS, 2, 1, 2)
    assert 0.05 in waits  # the server's Retry-After, exactly


def test_retries_run_out_and_the_sdk_raises_the_last_reply() -> None:
    limits = Limits(backoff=FAST, timeout_s=10.0, max_retries=1)
    with FakeOpenAIServer(answers=scripted(), script=["500"] * 20) as server:
        target = managed(LoopAgent(server.base_url), limits=limits)
        got = probe(target)
        # each sample attempt: 1 + 1 gateway attempts, no SDK retry on top; the sample is retried once
        assert server.model_calls() == 4
    assert not got[0].ok and "HTTP 500" in (got[0].error or "")
    stats = target.stats()  # the failed sample attempts are no calls of their own; retries: two of model
    assert (stats.calls, stats.failed, stats.retries, stats.failed_samples) == (4, 4, 3, 1)  # calls, one of the sample


def test_401_stops_the_run() -> None:
    with FakeOpenAIServer(answers=scripted(), api_key="the-right-key-123") as server:
        target = managed(LoopAgent(server.base_url, api_key="a-wrong-key-456"))
        with pytest.raises(TargetError, match="HTTP 401") as raised:
            probe(target)
        assert server.model_calls() == 1
    assert "a-wrong-key-456" not in str(raised.value)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_budget_stops_mid_sample_with_budget_exceeded(tmp_path: Path, api: str) -> None:
    with FakeOpenAIServer(answers=scripted()) as server:
        target = managed(LoopAgent(server.base_url, api=api), tmp_path, budget=Budget(max_calls=2))
        with pytest.raises(BudgetExceededError, match="max_calls = 2"):
            probe(target)
        assert server.model_calls() == 2
        stats = target.stats()
        assert (stats.calls, stats.retries, stats.failed) == (2, 0, 0)
        resumed = managed(LoopAgent(server.base_url, api=api), tmp_path)  # a larger budget: the rest only
        assert probe(resumed)[0].text == "The sum is \\boxed{6}."
        assert server.model_calls() == CALLS and resumed.stats().cached_calls == 2


def test_a_secret_key_never_reaches_the_cache(tmp_path: Path) -> None:
    key = "sk-proj-" + "Q7x" * 16
    with FakeOpenAIServer(answers=scripted(echo=f"(key {key})"), api_key=key) as server:
        target = managed(LoopAgent(server.base_url, api_key=key), tmp_path)
        got = probe(target)
        assert server.model_calls() == CALLS
        asyncio.run(target.aclose())
    assert key not in (got[0].text or "") and "\\boxed{6}" in (got[0].text or "")
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert key.encode() not in stored and b"boxed{6}" in stored


def test_a_killed_probe_resumes_paying_only_the_calls_not_made(tmp_path: Path) -> None:
    child: dict[str, subprocess.Popen[str]] = {}
    killed = threading.Event()
    answer = scripted()
    done_before_kill = 2

    def answers(body: dict[str, Any], index: int) -> Any:
        items = [m for m in body.get("messages", []) if m.get("role") == "tool"]
        if len(items) == done_before_kill and not killed.is_set():
            time.sleep(0.5)  # ten flush intervals: the calls before this one are committed
            os.kill(child["p"].pid, signal.SIGKILL)
            killed.set()
        return answer(body, index)

    with FakeOpenAIServer(answers=answers) as server:
        child["p"] = subprocess.Popen(
            [sys.executable, "-m", "tests.runtime._gateway_agent", server.base_url, str(tmp_path), "chat"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        child["p"].wait(timeout=60)
        assert killed.is_set() and child["p"].returncode == -signal.SIGKILL
        paid = server.model_calls()
        assert paid == done_before_kill + 1  # two answered, the third in flight when it died
        target = managed(LoopAgent(server.base_url), tmp_path)
        got = probe(target)
        assert server.model_calls() - paid == CALLS - done_before_kill  # the lost call and the last one
    assert got[0].text == "The sum is \\boxed{6}."
    assert (target.stats().cached_calls, target.stats().calls) == (done_before_kill, CALLS - done_before_kill)


class AgentsAdapter(Adapter):
    """An openai-agents Agent, its client built by the user: nothing in it knows about frontier-qa."""

    routes_model_calls = True
    in_process = True
    gateway: ModelGateway | None = None

    def __init__(self, agent: Any, streamed: bool) -> None:
        self.id = f"openai-agents:test{'+stream' if streamed else ''}"
        self.agent, self.streamed = agent, streamed

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        import agents

        assert self.gateway is not None
        ctx = AgentContext(case, start, sampling)
        with self.gateway.sample(ctx):
            if self.streamed:
                run = agents.Runner.run_streamed(self.agent, case.prompt)
                async for _ in run.stream_events():
                    pass
            else:
                run = await agents.Runner.run(self.agent, case.prompt)
        if ctx.stop_error is not None:
            raise ctx.stop_error
        return [Trajectory(str(run.final_output), usage=ctx.usage, sample_index=start)]


@pytest.mark.parametrize(("api", "stream"), APIS)
def test_an_openai_agents_agent_is_routed_without_changes(tmp_path: Path, api: str, stream: bool) -> None:
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)

    @agents.function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def target(server: FakeOpenAIServer) -> ManagedTarget:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        model = (agents.OpenAIResponsesModel if api == "responses" else agents.OpenAIChatCompletionsModel)(
            model="m", openai_client=client)
        return managed(AgentsAdapter(agents.Agent(name="adder", tools=[add], model=model), stream), tmp_path)

    with FakeOpenAIServer(answers=scripted()) as server:
        routed = target(server)
        got = probe(routed, n=2)
        assert server.model_calls() == routed.stats().calls == routed.stats().succeeded == 2 * CALLS
        routed.flush()
        with sqlite3.connect(tmp_path / "samples.sqlite3") as db:  # only the calls remain: replayed
            db.execute("DELETE FROM samples WHERE key IN (?, ?)", tuple(routed.sample_keys(CASE, SAMPLING, [0, 1]).values()))
        replayed = target(server)
        again = probe(replayed, n=2)
        assert server.model_calls() == 2 * CALLS and replayed.stats().cached_calls == 2 * CALLS
    assert [t.text for t in got] == [t.text for t in again] == ["The sum is \\boxed{6}."] * 2
    assert got[0].usage.total_tokens > 0 and again[0].usage == got[0].usage
    if api == "chat":
        assert all("seed" in r.body for r in server.requests)
