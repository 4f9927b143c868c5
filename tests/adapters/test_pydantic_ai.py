"""Pydantic AI agents as targets: the real ``pydantic_ai`` package against the fake OpenAI server.

The server scripts the model: a tool call first, then the answer once the tool's result is in
the conversation. Agents are built the way users build them (``OpenAIChatModel`` with an
``OpenAIProvider`` pointed at the server), either in the test or in an agent file loaded by spec.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from frontier_qa.adapters import create_adapter  # noqa: E402
from frontier_qa.adapters._pydantic_ai import PydanticAIAdapter  # noqa: E402
from frontier_qa.errors import ConfigError, MissingExtraError, TargetError  # noqa: E402
from frontier_qa.target import Case, Sampling, ToolCall, Trajectory  # noqa: E402
from tests.factories import REPO  # noqa: E402
from tests.servers.fake_openai import CHAT_PATH, FakeOpenAIServer  # noqa: E402

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima"}
EXAMPLE = REPO / "examples" / "agents" / "pydantic_ai_agent.py"


def script(body: dict[str, Any], index: int) -> Any:
    """Ask for the capital named in the task; answer once the tool's result came back (chat
    completions or the Responses API).
    """
    items = body.get("messages") or body["input"]
    last = items[-1]
    if last.get("role") == "tool" or last.get("type") == "function_call_output":
        return f"The capital is \\boxed{{{last.get('content', last.get('output'))}}}."
    task = next(m["content"] for m in items if m.get("role") == "user")
    task = task if isinstance(task, str) else " ".join(part["text"] for part in task)
    country = task.rsplit(" ", 1)[-1].rstrip("?")
    return {"content": None, "tool_calls": [{"name": "capital", "arguments": json.dumps({"country": country})}]}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(answers=script) as srv:
        yield srv


def geo_agent(base_url: str, api_key: str = "sk-test", responses: bool = False, **options: Any) -> Agent[None, Any]:
    provider = OpenAIProvider(base_url=base_url, api_key=api_key)
    model = (OpenAIResponsesModel if responses else OpenAIChatModel)("fake-model", provider=provider)
    agent: Agent[None, Any] = Agent(model, name="geo", system_prompt="You are a geographer.", **options)

    @agent.tool_plain
    def capital(country: str) -> str:
        """The capital of ``country``."""
        return CAPITALS[country]  # KeyError for an unknown country: the tool fails

    return agent


def run(adapter: PydanticAIAdapter, case: Case, n: int = 1) -> list[Trajectory]:
    return asyncio.run(adapter.generate(case, n, Sampling()))


def test_a_tool_call_then_the_answer(server: FakeOpenAIServer) -> None:
    adapter = PydanticAIAdapter(geo_agent(server.base_url))
    (t,) = run(adapter, Case("c1", "What is the capital of France?", system="Answer in one line."))
    assert t.ok and t.text == "The capital is \\boxed{Paris}."
    assert server.count(CHAT_PATH) == 2  # the tool call, then the answer
    first, second = (r.body["messages"] for r in server.requests)
    # the agent's system prompt and the case's (as the run's instructions) are both sent
    assert [m["content"] for m in first if m["role"] == "system"] == ["You are a geographer.", "Answer in one line."]
    assert second[-1] == {"role": "tool", "tool_call_id": second[-2]["tool_calls"][0]["id"], "content": "Paris"}
    assert t.usage.prompt_tokens > 0 and t.usage.completion_tokens > 0
    # the trajectory, from Pydantic AI's spans: the agent, a model call, the tool call, a model call
    assert t.tool_calls == (ToolCall("capital", '{"country": "France"}', "Paris"),)
    steps = [m.get("kind") or m["role"] for m in t.messages]
    assert steps == ["system", "user", "agent", "model", "tool", "model", "assistant"]


@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
def test_streamed_runs_on_both_apis(server: FakeOpenAIServer, responses: bool) -> None:
    adapter = PydanticAIAdapter(geo_agent(server.base_url, responses=responses), stream=True)
    (t,) = run(adapter, Case("c1", "What is the capital of Japan?"))
    assert t.text == "The capital is \\boxed{Tokyo}." and t.tool_calls == (ToolCall("capital", '{"country": "Japan"}', "Tokyo"),)
    assert [r.path for r in server.requests] == ["/v1/responses" if responses else CHAT_PATH] * 2
    assert all(r.body["stream"] is True for r in server.requests)  # the run went on past the tool call, streamed
    assert t.usage.prompt_tokens > 0


def test_the_responses_api_without_streaming(server: FakeOpenAIServer) -> None:
    (t,) = run(PydanticAIAdapter(geo_agent(server.base_url, responses=True)), Case("c1", "What is the capital of France?"))
    assert t.text == "The capital is \\boxed{Paris}." and t.tool_calls[0].result == "Paris"
    assert server.model_calls() == server.count("/v1/responses") == 2


def test_each_sample_is_a_fresh_run(server: FakeOpenAIServer) -> None:
    adapter = PydanticAIAdapter(geo_agent(server.base_url))
    out = run(adapter, Case("c1", "What is the capital of Japan?"), n=3)
    assert [t.text for t in out] == ["The capital is \\boxed{Tokyo}."] * 3 and [t.sample_index for t in out] == [0, 1, 2]
    # no sample sees another's conversation: every first request holds only the system prompt and the task
    assert sorted(len(r.body["messages"]) for r in server.requests) == [2, 2, 2, 4, 4, 4]


class Answer(BaseModel):
    answer: str
    confidence: float


def test_a_structured_output_is_read_through_its_answer_field() -> None:
    def final(body: dict[str, Any], index: int) -> Any:
        assert [t["function"]["name"] for t in body["tools"]] == ["final_result"]
        return {"content": None, "tool_calls": [{"name": "final_result",
                                                 "arguments": '{"answer": "\\\\boxed{12}", "confidence": 0.9}'}]}

    with FakeOpenAIServer(answers=final) as srv:
        model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=srv.base_url, api_key="sk-test"))
        (t,) = run(PydanticAIAdapter(Agent(model, output_type=Answer)), Case("c", "3 * 4?"))
    assert t.ok and t.text == "\\boxed{12}"


def test_a_failing_tool_fails_that_sample_only(server: FakeOpenAIServer) -> None:
    from frontier_qa.runtime import open_target

    target = open_target(PydanticAIAdapter(geo_agent(server.base_url)), cache=False)
    (bad,) = target.sample_sync(Case("c2", "What is the capital of Atlantis?"), 1, Sampling())
    (good,) = target.sample_sync(Case("c1", "What is the capital of France?"), 1, Sampling())
    assert bad.text is None and bad.error.startswith("the pydantic-ai agent raised KeyError: 'Atlantis'")
    assert bad.tool_calls == (ToolCall("capital", '{"country": "Atlantis"}', None, "KeyError: 'Atlantis'"),)
    assert good.text == "The capital is \\boxed{Paris}."
    assert target.stats().retries == 0  # a broken tool is not retried


def test_max_turns_caps_the_model_requests() -> None:
    always = {"content": None, "tool_calls": [{"name": "capital", "arguments": '{"country": "France"}'}]}
    with FakeOpenAIServer(answers=lambda body, i: always) as srv:
        (t,) = run(PydanticAIAdapter(geo_agent(srv.base_url), max_turns=2), Case("c", "Loop?"))
        assert srv.count(CHAT_PATH) == 2
    assert t.text is None and "UsageLimitExceeded" in (t.error or "")


def test_a_history_becomes_the_message_history(server: FakeOpenAIServer) -> None:
    call = {"id": "call_a", "type": "function", "function": {"name": "capital", "arguments": '{"country": "Japan"}'}}
    history = ({"role": "assistant", "content": None, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": "call_a", "name": "capital", "content": "Tokyo"})
    (t,) = run(PydanticAIAdapter(geo_agent(server.base_url)),
               Case("c", "What is the capital of Japan?", system="Be brief.", history=history))
    assert t.text == "The capital is \\boxed{Tokyo}." and server.count(CHAT_PATH) == 1  # the tool ran before
    sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "system", "user", "assistant", "tool"]
    assert sent[3]["tool_calls"][0]["id"] == "call_a" and sent[4]["tool_call_id"] == "call_a"


def test_a_401_stops_the_run_without_showing_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from frontier_qa.runtime import open_target

    key = "sk-wrong0123456789abcdefghijkl"  # too short for the key pattern: masked as the environment's secret
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with FakeOpenAIServer(api_key="sk-right", answers=script) as srv:
        target = open_target(PydanticAIAdapter(geo_agent(srv.base_url, api_key=key)), cache=False)
        with pytest.raises(TargetError, match="401") as info:
            target.sample_sync(Case("c1", "What is the capital of France?"), 1, Sampling())
        assert srv.count(CHAT_PATH) == 1  # not retried
    assert key not in str(info.value) and key not in repr(info.value.__cause__)


# ----- specs --------------------------------------------------------------------------------


AGENT_FILE = """
import os
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

version = "3"
provider = OpenAIProvider(base_url=os.environ["TEST_BASE_URL"], api_key="sk-test")
agent = Agent(OpenAIChatModel("fake-model", provider=provider), name="echo")
not_an_agent = {"name": "geo"}
no_model = Agent(name="empty")
"""


@pytest.fixture
def agent_file(tmp_path: Path, agent_imports: None) -> Path:
    path = tmp_path / "my_agent.py"
    path.write_text(AGENT_FILE)
    return path


def test_a_spec_loads_the_agent(agent_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer() as srv:
        monkeypatch.setenv("TEST_BASE_URL", srv.base_url)
        adapter = create_adapter(f"pydantic-ai:{agent_file}:agent", stream=False)
        assert isinstance(adapter, PydanticAIAdapter) and adapter.id == f"pydantic-ai:{agent_file}:agent"
        assert (adapter.version() or "").startswith("3+src.")
        (t,) = run(adapter, Case("c", "Hello"))
    assert t.text == "The answer is \\boxed{42}."  # the server's default answer


def test_the_example_agent_runs_from_its_spec(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
                                              agent_imports: None) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_MODEL", "fake-model")
    adapter = create_adapter(f"pydantic-ai:{EXAMPLE}:agent")
    (t,) = run(adapter, Case("c1", "What is the capital of Kenya?"))
    assert t.text == "The capital is \\boxed{Nairobi}." and t.tool_calls[0].name == "capital"
    assert server.count("/v1/responses") == 2  # "openai:" models speak the Responses API
    assert server.requests[0].body["model"] == "fake-model"


@pytest.mark.parametrize(("attr", "message"), [
    ("missing", "has no attribute 'missing'"),
    ("not_an_agent", "builtins.dict is not a Pydantic AI agent"),
    ("Agent", "Agent is a class, not a Pydantic AI agent"),
    ("no_model", "has no model"),
])
def test_a_wrong_attribute_is_a_config_error(agent_file: Path, server: FakeOpenAIServer,
                                             monkeypatch: pytest.MonkeyPatch, attr: str, message: str) -> None:
    monkeypatch.setenv("TEST_BASE_URL", server.base_url)
    with pytest.raises(ConfigError, match=message):
        create_adapter(f"pydantic-ai:{agent_file}:{attr}")


def test_an_unknown_option_and_a_missing_framework_are_usage_errors(
        agent_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="unknown option.*temperature"):
        create_adapter(f"pydantic-ai:{agent_file}:agent", temperature=0.3)
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    with pytest.raises(MissingExtraError, match=r"frontier-qa\[pydantic-ai\]"):
        create_adapter(f"pydantic-ai:{agent_file}:agent")


# ----- through the runtime: the model gateway -------------------------------------------------


@pytest.mark.parametrize("api", ["responses", "chat-streamed"])
def test_every_model_call_is_counted_and_cached_by_the_runtime(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent_imports: None, api: str) -> None:
    import sqlite3

    from frontier_qa.runtime import open_target

    case, sampling = Case("c1", "What is the capital of Peru?"), Sampling(seed=7)
    with FakeOpenAIServer(answers=script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_MODEL", "fake-model")

        def target() -> Any:
            if api == "responses":  # the example agent, from its spec: "openai:" speaks Responses
                return open_target(f"pydantic-ai:{EXAMPLE}:agent", cache=tmp_path)
            return open_target(PydanticAIAdapter(geo_agent(srv.base_url), stream=True), cache=tmp_path)

        first = target()
        paid = first.sample_sync(case, 2, sampling)
        assert [t.text for t in paid] == ["The capital is \\boxed{Lima}."] * 2
        assert first.stats().calls == srv.model_calls() == 4  # two model calls per sample, each counted
        first.flush()
        assert [t.cached for t in target().sample_sync(case, 2, sampling)] == [True, True]
        # a probe killed before it recorded its samples: each model call replays from the per-call cache
        with sqlite3.connect(tmp_path / "samples.sqlite3") as db:
            for key in first.sample_keys(case, sampling, [0, 1]).values():
                assert db.execute("DELETE FROM samples WHERE key = ?", (key,)).rowcount == 1
        resumed = target()
        again = resumed.sample_sync(case, 2, sampling)
        assert srv.model_calls() == 4 and (resumed.stats().calls, resumed.stats().cached_calls) == (0, 4)
    assert [(t.text, t.tool_calls, t.usage) for t in again] == [(t.text, t.tool_calls, t.usage) for t in paid]
