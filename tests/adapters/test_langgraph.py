"""LangGraph targets: the real langgraph + langchain-openai packages against the local OpenAI server.

Each test builds a real graph (``create_react_agent``, a hand-built ``StateGraph``, the example
agent) whose ``ChatOpenAI`` talks to :class:`FakeOpenAIServer` on 127.0.0.1; the server scripts
the tool calls and the answers.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402

from frontier_qa.adapters import create_adapter  # noqa: E402
from frontier_qa.adapters._framework import FrameworkAgentAdapter  # noqa: E402
from frontier_qa.adapters._langgraph import LangGraphAdapter, final_answer  # noqa: E402
from frontier_qa.errors import ConfigError, TargetError  # noqa: E402
from frontier_qa.runtime._aio import run_sync  # noqa: E402
from frontier_qa.target import Case, Sampling, ToolCall, Trajectory  # noqa: E402
from tests.factories import REPO  # noqa: E402
from tests.servers.fake_openai import FakeOpenAIServer  # noqa: E402

CASE = Case("capital", "What is the capital of France?", system="Answer with \\boxed{...}.")
ANSWER = "The capital of France is \\boxed{Paris}."


@tool
def capital(country: str) -> str:
    """The capital city of a country."""
    if country == "Atlantis":
        raise LookupError("Atlantis sank")
    return {"France": "Paris", "Japan": "Tokyo"}[country]


def tool_then_answer(country: str = "France") -> Callable[[dict[str, Any], int], Any]:
    """The server's script: call ``capital(country)``, then answer once the tool's result is in."""

    def answer(body: dict[str, Any], index: int) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return ANSWER
        return {"content": None, "tool_calls": [{"name": "capital", "arguments": json.dumps({"country": country})}]}

    return answer


def react_graph(server: FakeOpenAIServer, **kwargs: Any) -> Any:
    model = ChatOpenAI(model="fake-model", base_url=server.base_url, api_key="sk-test", max_retries=0)
    return create_react_agent(model, [capital], **kwargs)


def sample(adapter: FrameworkAgentAdapter, case: Case = CASE, n: int = 1) -> list[Trajectory]:
    # the runtime's one background loop: ChatOpenAI keeps its async HTTP client across calls, on
    # the loop that made it (a fresh asyncio.run per sample would find it bound to a closed loop)
    return run_sync(adapter.generate(case, n, Sampling()))


def model_requests(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_a_react_agent_calls_its_tool_then_answers(stream: bool) -> None:
    with FakeOpenAIServer(answers=tool_then_answer()) as server:
        [t] = sample(LangGraphAdapter(react_graph(server), stream=stream))
        bodies = model_requests(server)
    assert (t.text, t.error) == (ANSWER, None)
    assert len(bodies) == 2
    # the case's conversation went in as messages; the tool ran and its result went back to the model
    assert [m["role"] for m in bodies[0]["messages"]] == ["system", "user"]
    last = bodies[1]["messages"][-1]
    assert (last["role"], last["content"]) == ("tool", "Paris")
    # streamed runs stream the model's tokens, as a streaming app's graph does
    assert all(bool(b.get("stream")) is stream for b in bodies)
    assert t.tool_calls == (ToolCall("capital", '{"country": "France"}', "Paris"),)


def test_parallel_calls_of_one_tool_keep_their_own_arguments() -> None:
    def both(body: dict[str, Any], index: int) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return "\\boxed{Tokyo, Paris}"
        return {"content": None, "tool_calls": [{"name": "capital", "arguments": json.dumps({"country": c})}
                                                for c in ("Japan", "France", "Japan")]}

    with FakeOpenAIServer(answers=both) as server:
        graph = create_react_agent(ChatOpenAI(model="m", base_url=server.base_url, api_key="sk-test", max_retries=0),
                                   [capital], version="v1")  # v1: one ToolNode task, the calls run in parallel
        [t] = sample(LangGraphAdapter(graph))
    # each call's arguments beside its own result (matched by call id), whichever order the calls started in
    assert (t.text, t.error) == ("\\boxed{Tokyo, Paris}", None)
    assert sorted((json.loads(c.arguments)["country"], c.result) for c in t.tool_calls) == [
        ("France", "Paris"), ("Japan", "Tokyo"), ("Japan", "Tokyo")]


def test_the_example_agent_from_a_spec_uses_both_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [("capital", {"country": "Japan"}), ("convert", {"value": 100, "from_unit": "km", "to_unit": "mi"})]

    def script(body: dict[str, Any], index: int) -> Any:
        done = sum(m["role"] == "tool" for m in body["messages"])
        if done < len(calls):
            name, arguments = calls[done]
            return {"content": None, "tool_calls": [{"name": name, "arguments": json.dumps(arguments)}]}
        return "Tokyo; 100 km is \\boxed{62.14} mi."

    # a copy: the module (its ChatOpenAI bound to this server) is this test's own
    agent_file = Path(shutil.copy(REPO / "examples" / "agents" / "langgraph_agent.py", tmp_path))
    with FakeOpenAIServer(answers=script, api_key="sk-example") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-example")
        monkeypatch.setenv("OPENAI_MODEL", "fake-model")
        adapter = create_adapter(f"langgraph:{agent_file}:graph")
        [t] = sample(adapter, Case("trip", "Capital of Japan, and 100 km in miles?"))
        bodies = model_requests(server)
    assert (t.text, t.error) == ("Tokyo; 100 km is \\boxed{62.14} mi.", None)
    assert adapter.id == f"langgraph:{agent_file}:graph" and "src." in (adapter.version() or "")
    assert [m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"] == ["Tokyo", "62.14"]
    assert {t["function"]["name"] for t in bodies[0]["tools"]} == {"capital", "search_facts", "convert"}
    # the trajectory, from LangChain's OpenTelemetry spans: each tool call with its arguments and result,
    # in order, between the model calls (a one-argument tool's arguments named too)
    assert [(c.name, json.loads(c.arguments), c.result, c.error) for c in t.tool_calls] == [
        ("capital", {"country": "Japan"}, "Tokyo", None),
        ("convert", {"value": 100, "from_unit": "km", "to_unit": "mi"}, "62.14", None)]
    steps = [m.get("kind") or m["role"] for m in t.messages if m["role"] in ("step", "tool")]
    assert [s for s in steps if s != "agent"] == ["model", "tool", "model", "tool", "model"]


def test_an_exception_in_a_tool_fails_that_sample_only() -> None:
    atlantis = Case("atlantis", "What is the capital of Atlantis?")

    def script(body: dict[str, Any], index: int) -> Any:
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        country = "Atlantis" if prompt == atlantis.prompt else "France"
        return tool_then_answer(country)(body, index)

    with FakeOpenAIServer(answers=script) as server:
        adapter = LangGraphAdapter(react_graph(server))
        [failed] = sample(adapter, atlantis)
        [fine] = sample(adapter)
    assert failed.text is None
    assert failed.error is not None and "LookupError: Atlantis sank" in failed.error
    assert failed.error.startswith("the langgraph agent raised")
    assert [(c.name, c.arguments, c.error) for c in failed.tool_calls] == [
        ("capital", '{"country": "Atlantis"}', "LookupError: Atlantis sank")]
    assert (fine.text, fine.error) == (ANSWER, None)


def test_a_401_stops_the_run_at_once() -> None:
    from frontier_qa.runtime import open_target

    with FakeOpenAIServer(api_key="sk-right") as server:
        model = ChatOpenAI(model="fake-model", base_url=server.base_url, api_key="sk-wrong-7f3a", max_retries=0)
        target = open_target(LangGraphAdapter(create_react_agent(model, [capital])), cache=False)
        with pytest.raises(TargetError) as raised:
            target.sample_sync(CASE, 1, Sampling())
        assert server.count() == 1  # stopped at once, not retried
    assert "401" in str(raised.value) and "not retried" in str(raised.value)


def test_max_turns_caps_the_model_calls_and_fails_the_sample() -> None:
    def always_a_tool(body: dict[str, Any], index: int) -> Any:
        return {"content": None, "tool_calls": [{"name": "capital", "arguments": '{"country": "France"}'}]}

    with FakeOpenAIServer(answers=always_a_tool) as server:
        [t] = sample(LangGraphAdapter(react_graph(server), max_turns=3))
        assert server.count() == 3
    assert t.error is not None and "GraphRecursionError" in t.error and "max_turns=3" in t.error
    with FakeOpenAIServer(answers=always_a_tool) as server:
        # a step limit of the graph's own: create_react_agent answers "need more steps" rather than raise
        graph = react_graph(server).with_config(recursion_limit=4)
        [t] = sample(LangGraphAdapter(graph))
        assert server.count() == 2
    assert t.error is not None and "ran out of steps" in t.error


def test_each_sample_runs_on_a_fresh_thread_of_a_checkpointed_graph() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    with FakeOpenAIServer(answers=tool_then_answer()) as server:
        texts = [t.text for t in sample(LangGraphAdapter(react_graph(server, checkpointer=InMemorySaver())), n=3)]
        bodies = model_requests(server)
    assert texts == [ANSWER] * 3
    # no sample saw another one's conversation: every first turn holds the case alone
    assert sorted(len(b["messages"]) for b in bodies) == [2, 2, 2, 4, 4, 4]


class Question(TypedDict):
    question: str


class QA(TypedDict, total=False):
    question: str
    answer: str
    notes: str


def qa_graph(node: Callable[[QA], dict[str, Any]]) -> Any:
    builder = StateGraph(QA, input_schema=Question)
    builder.add_node("answer", node)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile()


def test_a_graph_without_messages_gets_the_task_text_and_answers_by_key() -> None:
    [t] = sample(LangGraphAdapter(qa_graph(lambda s: {"answer": f"\\boxed{{{len(s['question'])}}}"})))
    assert (t.text, t.error) == (f"\\boxed{{{len(CASE.prompt)}}}", None)
    with pytest.raises(TargetError, match=r"gave no answer.*'state_keys': \['notes', 'question'\]"):
        sample(LangGraphAdapter(qa_graph(lambda s: {"notes": "thinking"})))


def test_a_functional_api_graph_answers_with_its_return_value() -> None:
    from langgraph.func import entrypoint

    @entrypoint()
    async def count(inputs: dict[str, Any]) -> str:
        return f"\\boxed{{{len(inputs['messages'])}}}"

    assert [t.text for s in (False, True) for t in sample(LangGraphAdapter(count, stream=s))] == ["\\boxed{2}"] * 2


def test_the_answer_is_the_text_of_the_graphs_last_message() -> None:
    parts = AIMessage(content=[{"type": "reasoning", "reasoning": "hmm"}, {"type": "text", "text": "\\boxed{4}"}])
    assert final_answer({"messages": [HumanMessage("2+2?"), parts]}) == "\\boxed{4}"
    assert final_answer({"messages": [HumanMessage("q"), ToolMessage("42", tool_call_id="c")]}) == "42"
    with pytest.raises(TypeError, match="added no reply"):
        final_answer({"messages": [HumanMessage("q")]})
    pending = AIMessage(content="", tool_calls=[{"name": "capital", "args": {}, "id": "c"}])
    with pytest.raises(TypeError, match=r"tool calls pending.*\['capital'\]"):
        final_answer({"messages": [HumanMessage("q"), pending]})


GRAPHS = (
    "from typing_extensions import TypedDict\n"
    "from langgraph.graph import StateGraph, START, END\n\n\n"
    "class Odd(TypedDict):\n    numbers: list\n\n\n"
    "builder = StateGraph(Odd)\nbuilder.add_node('n', lambda s: s)\n"
    "builder.add_edge(START, 'n')\nbuilder.add_edge('n', END)\n"
    "graph = builder.compile()\n\n\ndef run(task):\n    return task\n")


@pytest.mark.parametrize(("attribute", "options", "message", "hint"), [
    ("nope", {}, "has no attribute 'nope'", ""),
    ("builder", {}, "StateGraph builder, not a compiled graph", ".compile()"),
    ("run", {}, "names a function, not a compiled LangGraph graph", ""),
    ("graph", {}, r"no key frontier-qa can put the case in \(its keys: \['numbers'\]\)", ""),
    ("graph", {"streaming": True}, "unknown option.*streaming", ""),
], ids=["missing", "builder", "function", "state-keys", "option"])
def test_spec_errors_say_what_to_fix(tmp_path: Path, attribute: str, options: dict[str, Any], message: str,
                                     hint: str) -> None:
    agent_file = tmp_path / "graphs.py"
    agent_file.write_text(GRAPHS)
    with pytest.raises(ConfigError, match=message) as raised:
        create_adapter(f"langgraph:{agent_file}:{attribute}", **options)
    assert hint in (raised.value.hint or "")


# ----- through frontier-qa's runtime: the model gateway ---------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_every_model_call_goes_through_the_runtime_and_a_rerun_pays_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool) -> None:
    from frontier_qa.runtime import open_target

    agent_file = Path(shutil.copy(REPO / "examples" / "agents" / "langgraph_agent.py", tmp_path))
    sampling = Sampling(seed=1)

    def run() -> tuple[Any, list[Trajectory]]:
        target = open_target(f"langgraph:{agent_file}:graph", cache=tmp_path / "cache", stream=stream)
        got = target.sample_sync(CASE, 3, sampling)
        target.flush()
        return target, got

    with FakeOpenAIServer(answers=tool_then_answer("Kenya")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        target, got = run()
        paid = server.model_calls()
        again, cached = run()  # the samples come from the cache whole
        assert server.model_calls() == paid and again.stats().cached == 3
        keys = again.sample_keys(CASE, sampling, [0, 1, 2])
        with sqlite3.connect(tmp_path / "cache" / "samples.sqlite3") as db:
            db.executemany("DELETE FROM samples WHERE key = ?", [(k,) for k in keys.values()])
        replay, replayed = run()  # the graphs run again, every model call answered from the per-call cache
        assert server.model_calls() == paid
    assert [(t.text, t.error) for t in got] == [(ANSWER, None)] * 3
    stats = target.stats()
    assert stats.calls == paid == 6 and stats.samples == 3  # a tool call and an answer per sample, each counted
    assert stats.tokens == sum(t.usage.total_tokens for t in got)
    # ChatOpenAI asks a server other than OpenAI's for no usage in a stream (stream_usage=False); the gateway
    # asks for it (stream_options.include_usage), so streamed samples count their tokens too
    assert all(t.usage.total_tokens > 0 for t in got)
    assert (replay.stats().calls, replay.stats().cached_calls) == (0, 6)
    assert [(t.text, t.tool_calls) for t in replayed] == [(t.text, t.tool_calls) for t in got]
    assert [t.tool_calls for t in got] == [(ToolCall("capital", '{"country": "Kenya"}', "Nairobi"),)] * 3
