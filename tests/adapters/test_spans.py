"""Trajectories from OpenTelemetry spans (issue 31, item 3): real SDK spans in each convention,
samples kept apart on one loop, and a real Pydantic AI agent against a real HTTP server.

The convention tests start spans with the real ``opentelemetry-sdk`` tracer of a provider holding
only a :class:`SpanRecorder`; the end-to-end tests use the process's recorder and the frameworks'
own instrumentation (:func:`instrument`).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry import context as otel_context  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402

from frontier_qa.adapters import _spans  # noqa: E402
from frontier_qa.adapters._agents import AgentContext, to_trajectory  # noqa: E402
from frontier_qa.adapters._spans import MAX_CHARS, SpanRecorder, instrument, span_recorder  # noqa: E402
from frontier_qa.errors import MissingExtraError  # noqa: E402
from frontier_qa.target import Case, Sampling, ToolCall  # noqa: E402
from tests.factories import REPO  # noqa: E402
from tests.servers.fake_openai import FakeOpenAIServer  # noqa: E402

CASE = Case(id="c1", prompt="What is the capital of France?")


@pytest.fixture
def recorder() -> Iterator[SpanRecorder]:
    provider = TracerProvider()
    found = SpanRecorder(provider)
    provider.add_span_processor(found)
    yield found
    provider.shutdown()


def _ctx(index: int = 0) -> AgentContext:
    return AgentContext(CASE, index, Sampling())


def _tracer(recorder: SpanRecorder) -> trace.Tracer:
    return recorder.provider.get_tracer("test")


def _kinds(ctx: AgentContext) -> list[tuple[str, str]]:
    return [(e["role"], e.get("kind", e.get("name", ""))) for e in ctx.events]


# ----- the conventions ---------------------------------------------------------------------------


def test_genai_semantic_convention_spans_become_model_calls_tool_calls_and_steps(recorder: SpanRecorder) -> None:
    tracer, ctx = _tracer(recorder), _ctx()
    with recorder.sample(ctx):
        with tracer.start_as_current_span("invoke_agent triage", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"}):
            with tracer.start_as_current_span("chat gpt-4o", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 3}):
                pass
            with tracer.start_as_current_span("execute_tool search", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": '{"query": "paris"}'}) as span:
                span.set_attribute("gen_ai.tool.call.result", "Paris is the capital")
            with tracer.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}) as span:
                span.record_exception(KeyError("no such page"))
                span.set_status(Status(StatusCode.ERROR, "KeyError: 'no such page'"))
            with tracer.start_as_current_span("text_completion m2", attributes={
                    "gen_ai.operation.name": "text_completion"}):
                pass
        assert ctx.events == []  # steps are added when the sample ends, in start order
    assert ctx.events == [
        {"role": "step", "content": "agent triage", "kind": "agent", "agent": "triage"},
        {"role": "step", "content": "model call", "kind": "model", "model": "gpt-4o", "input_tokens": 12,
         "output_tokens": 3},
        {"role": "tool", "name": "search", "arguments": '{"query": "paris"}', "content": "Paris is the capital"},
        {"role": "tool", "name": "lookup", "arguments": "", "content": "KeyError: 'no such page'",
         "error": "KeyError: 'no such page'"},
        {"role": "step", "content": "model call", "kind": "model", "model": "m2"},
    ]
    assert ctx.tool_calls == [ToolCall("search", '{"query": "paris"}', "Paris is the capital"),
                              ToolCall("lookup", "", None, "KeyError: 'no such page'")]


def test_openinference_spans_tool_llm_agent_handoff_and_chains(recorder: SpanRecorder) -> None:
    tracer, ctx = _tracer(recorder), _ctx()
    with recorder.sample(ctx):
        with tracer.start_as_current_span("Agent workflow", attributes={"openinference.span.kind": "AGENT"}):
            with tracer.start_as_current_span("LangGraph", attributes={"openinference.span.kind": "CHAIN"}):
                with tracer.start_as_current_span("response", attributes={
                        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4.1",
                        "llm.token_count.prompt": 40, "llm.token_count.completion": 7}):
                    pass
                with tracer.start_as_current_span("get_weather", attributes={
                        "openinference.span.kind": "TOOL", "tool.name": "get_weather",
                        "input.value": '{"city": "Paris"}', "output.value": "sunny"}):
                    pass
                with tracer.start_as_current_span("handoff to Billing", attributes={
                        "openinference.span.kind": "TOOL", "input.value": "Triage", "output.value": "Billing"}):
                    pass
                with tracer.start_as_current_span("broken", attributes={
                        "openinference.span.kind": "TOOL", "tool.name": "broken", "input.value": "{}"}) as span:
                    span.record_exception(RuntimeError("backend down"))  # OpenInference sets no status here
    assert ctx.events == [
        {"role": "step", "content": "agent Agent workflow", "kind": "agent", "agent": "Agent workflow"},
        {"role": "step", "content": "model call", "kind": "model", "model": "gpt-4.1", "input_tokens": 40,
         "output_tokens": 7},
        {"role": "tool", "name": "get_weather", "arguments": '{"city": "Paris"}', "content": "sunny"},
        {"role": "step", "content": "handoff to Billing", "kind": "handoff", "target": "Billing", "source": "Triage"},
        {"role": "tool", "name": "broken", "arguments": "{}", "content": "RuntimeError: backend down",
         "error": "RuntimeError: backend down"},
    ]


def test_pydantic_ai_version_2_attributes(recorder: SpanRecorder) -> None:
    tracer, ctx = _tracer(recorder), _ctx()
    with recorder.sample(ctx):
        with tracer.start_as_current_span("agent run", attributes={"agent_name": "support"}):
            with tracer.start_as_current_span("running tool", attributes={
                    "gen_ai.tool.name": "search", "tool_arguments": '{"q": "x"}', "tool_response": "found"}):
                pass
            with tracer.start_as_current_span("running output function", attributes={
                    "gen_ai.tool.name": "final_result", "tool_arguments": '{"answer": 1}'}):
                pass  # the structured answer, not a tool the agent chose
            with tracer.start_as_current_span("execute_tool final_result", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "final_result",
                    "logfire.msg": "running output function: final_result"}):
                pass  # the same in versions 3-5
    assert _kinds(ctx) == [("step", "agent"), ("tool", "search")]
    assert ctx.events[0]["agent"] == "support"
    assert ctx.tool_calls == [ToolCall("search", '{"q": "x"}', "found")]


def test_huge_arguments_and_results_are_cut_with_a_marker(recorder: SpanRecorder) -> None:
    tracer, ctx = _tracer(recorder), _ctx()
    with recorder.sample(ctx):
        with tracer.start_as_current_span("execute_tool dump", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "dump",
                "gen_ai.tool.call.arguments": "a" * 10_000, "gen_ai.tool.call.result": "r" * 1_000_000}):
            pass
    (call,) = ctx.tool_calls
    assert call.arguments.startswith("a" * MAX_CHARS) and call.arguments.endswith("…[6000 characters cut]")
    assert len(call.result or "") < MAX_CHARS + 40 and (call.result or "").endswith("…[996000 characters cut]")


def test_a_call_inside_the_same_call_counts_once_and_other_spans_are_no_steps(recorder: SpanRecorder) -> None:
    tracer, ctx = _tracer(recorder), _ctx()
    with tracer.start_as_current_span("chat outside", attributes={"gen_ai.operation.name": "chat"}):
        pass  # no sample: nobody's
    with recorder.sample(ctx):
        with tracer.start_as_current_span("chat gpt-4o", attributes={"gen_ai.operation.name": "chat"}):
            with tracer.start_as_current_span("ChatCompletion", attributes={"openinference.span.kind": "LLM"}):
                pass  # the client library's span under the framework's
        with tracer.start_as_current_span("POST /v1/chat/completions", attributes={"http.method": "POST"}):
            pass
        with tracer.start_as_current_span("execute_tool search", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}):
            with tracer.start_as_current_span("MCP send tools/call search", attributes={"mcp.method.name": "tools/call"}):
                with tracer.start_as_current_span("tools/call search", attributes={  # an in-process MCP server's
                        "mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search"}):
                    pass
        with tracer.start_as_current_span("execute_tool research", attributes={  # an agent as a tool
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "research"}):
            with tracer.start_as_current_span("invoke_agent researcher", attributes={
                    "gen_ai.operation.name": "invoke_agent"}):
                with tracer.start_as_current_span("invoke_agent helper", attributes={
                        "gen_ai.operation.name": "invoke_agent"}):
                    with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
                        pass
                with tracer.start_as_current_span("execute_tool search", attributes={
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}):
                    pass
    assert _kinds(ctx) == [("step", "model"), ("tool", "search"), ("tool", "research"), ("step", "agent"),
                           ("step", "agent"), ("step", "model"), ("tool", "search")]


def test_a_span_started_where_the_context_did_not_follow_belongs_to_its_parents_sample(
        recorder: SpanRecorder) -> None:
    """A framework that starts spans in a worker thread of its own, with an explicit parent."""
    tracer, ctx = _tracer(recorder), _ctx()

    def worker(parent: otel_context.Context) -> None:  # a bare thread: no copy of the sample's context
        with tracer.start_as_current_span("execute_tool t", context=parent, attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "in_thread"}):
            pass

    with recorder.sample(ctx):
        with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
            thread = threading.Thread(target=worker, args=(otel_context.get_current(),))
            thread.start()
            thread.join()
        thread = threading.Thread(target=worker, args=(otel_context.Context(),))  # no parent: nobody's
        thread.start()
        thread.join()
    assert [e.get("name") for e in ctx.events if e["role"] == "tool"] == ["in_thread"]


def test_two_samples_on_one_loop_keep_their_own_spans(recorder: SpanRecorder) -> None:
    tracer = _tracer(recorder)

    async def tool(name: str, query: str) -> None:
        with tracer.start_as_current_span(f"execute_tool {name}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps({"query": query})}):
            await asyncio.sleep(0.001)

    async def agent(ctx: AgentContext, word: str) -> None:
        with recorder.sample(ctx):
            for step in range(5):
                with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
                    await asyncio.sleep(0.001)  # the other sample runs here
                # tools in child tasks: the sample's context goes with them
                await asyncio.gather(tool("search", f"{word}-{step}"), tool("fetch", f"{word}-{step}"))

    async def main() -> tuple[AgentContext, AgentContext]:
        a, b = _ctx(0), _ctx(1)
        await asyncio.gather(agent(a, "a"), agent(b, "b"))
        return a, b

    a, b = asyncio.run(main())
    for ctx, word in ((a, "a"), (b, "b")):
        queries = [json.loads(c.arguments)["query"] for c in ctx.tool_calls]
        assert sorted(queries) == sorted(f"{word}-{s}" for s in range(5) for _ in range(2))
        assert sum(1 for e in ctx.events if e.get("kind") == "model") == 5
        roles = [e["role"] for e in ctx.events]
        assert roles == ["step", "tool", "tool"] * 5  # in start order: each model call, then its tools


# ----- the process's recorder and the frameworks' instrumentation --------------------------------


def test_the_process_recorder_joins_the_global_sdk_provider_once() -> None:
    recorder = span_recorder()
    assert span_recorder() is recorder
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider) and recorder.provider is provider
    assert sum(p is recorder for p in provider._active_span_processor._span_processors) == 1


USER_PROVIDER = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from frontier_qa.adapters._agents import AgentContext
from frontier_qa.adapters._spans import span_recorder
from frontier_qa.target import Case, Sampling

exported = InMemorySpanExporter()
mine = TracerProvider()
mine.add_span_processor(SimpleSpanProcessor(exported))
trace.set_tracer_provider(mine)  # the user's own, with its exporter

recorder = span_recorder()
ctx = AgentContext(Case(id="c", prompt="p"), 0, Sampling())
with recorder.sample(ctx):
    with trace.get_tracer("app").start_as_current_span("execute_tool search", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}):
        pass
assert recorder.provider is mine and trace.get_tracer_provider() is mine
assert [s.name for s in exported.get_finished_spans()] == ["execute_tool search"]  # still exported
assert [c.name for c in ctx.tool_calls] == ["search"]
print("ok")
"""


def test_a_users_own_tracer_provider_and_its_exporters_stay() -> None:
    done = subprocess.run([sys.executable, "-c", USER_PROVIDER], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_missing_instrumentation_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_spans, "_INSTRUMENTED", set())
    monkeypatch.setitem(sys.modules, "openinference.instrumentation.langchain", None)
    with pytest.raises(MissingExtraError) as raised:
        instrument("langgraph")
    assert raised.value.extra == "langgraph" and "openinference-instrumentation-langchain" in str(raised.value)
    with pytest.raises(ValueError, match="no span instrumentation for 'crewai'"):
        instrument("crewai")


def _search_then_answer(body: dict[str, Any], index: int) -> Any:
    """One tool call a turn (calls made in one turn may run in any order): search, population, answer."""
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    if done == 2:
        return "The capital is \\boxed{Paris}."
    if done == 1:
        return {"content": None, "tool_calls": [{"name": "population", "arguments": json.dumps({"city": "paris"})}]}
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    query = "paris" if "France" in question else "berlin"
    return {"content": None, "tool_calls": [{"name": "search", "arguments": json.dumps({"query": query})}]}


def test_a_real_pydantic_ai_agent_records_its_tool_calls_in_order() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    recorder = instrument("pydantic-ai")
    assert instrument("pydantic-ai") is recorder  # once
    with FakeOpenAIServer(answers=_search_then_answer) as server:
        model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(base_url=server.base_url, api_key="x"))
        agent = Agent(model)

        @agent.tool_plain
        def search(query: str) -> str:
            return f"{query.title()} is a capital city."

        @agent.tool_plain
        def population(city: str) -> int:
            return 2_100_000

        async def sample(ctx: AgentContext, question: str) -> Any:
            with recorder.sample(ctx):
                result = await agent.run(question)
            return to_trajectory(result.output, ctx, 0.1)

        async def main() -> list[Any]:
            return await asyncio.gather(sample(_ctx(0), "What is the capital of France?"),
                                        sample(_ctx(1), "And of Germany?"))

        france, germany = asyncio.run(main())
    assert france.text == "The capital is \\boxed{Paris}."
    assert [(c.name, json.loads(c.arguments)) for c in france.tool_calls] == [
        ("search", {"query": "paris"}), ("population", {"city": "paris"})]
    assert france.tool_calls[0].result == "Paris is a capital city." and france.tool_calls[1].result == "2100000"
    assert json.loads(germany.tool_calls[0].arguments) == {"query": "berlin"}  # each sample its own spans
    steps = [m.get("kind") or m.get("name") for m in france.messages if m["role"] in ("step", "tool")]
    assert steps == ["agent", "model", "search", "model", "population", "model"]
    models = [m for m in france.messages if m.get("kind") == "model"]
    assert [m["model"] for m in models] == ["gpt-test"] * 3 and models[0]["input_tokens"] > 0


def test_a_real_openai_agents_run_records_tools_handoffs_and_keeps_its_traces_in_the_process() -> None:
    pytest.importorskip("agents")
    pytest.importorskip("openinference.instrumentation.openai_agents")
    import agents
    from agents.tracing import get_trace_provider
    from agents.tracing.processors import default_processor
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents._processor import OpenInferenceTracingProcessor

    def registered() -> list[Any]:
        return list(get_trace_provider()._multi_processor._processors)  # type: ignore[attr-defined]

    recorder = instrument("openai-agents")
    agents.add_trace_processor(default_processor())  # the SDK's exporter to OpenAI's servers, back again
    assert instrument("openai-agents") is recorder
    assert registered() and all(isinstance(p, OpenInferenceTracingProcessor) for p in registered())

    def triage_then_billing(body: dict[str, Any], index: int) -> Any:
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        if "transfer_to_billing" not in tools:
            return "Refund issued: \\boxed{yes}"  # the billing agent
        if not any(m["role"] == "tool" for m in body["messages"]):
            return {"content": None, "tool_calls": [{"name": "lookup", "arguments": json.dumps({"order": 17})}]}
        return {"content": None, "tool_calls": [{"name": "transfer_to_billing", "arguments": "{}"}]}

    with FakeOpenAIServer(answers=triage_then_billing) as server:
        model = agents.OpenAIChatCompletionsModel(
            model="gpt-test", openai_client=AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0))

        @agents.function_tool
        def lookup(order: int) -> str:
            """Look an order up."""
            return f"order {order}: paid"

        billing = agents.Agent(name="Billing", instructions="Refund.", model=model)
        triage = agents.Agent(name="Triage", instructions="Route.", model=model, tools=[lookup], handoffs=[billing])
        ctx = _ctx()

        async def main() -> Any:
            with recorder.sample(ctx):
                return (await agents.Runner.run(triage, "I want a refund")).final_output

        assert asyncio.run(main()) == "Refund issued: \\boxed{yes}"
    assert ctx.tool_calls == [ToolCall("lookup", '{"order": 17}', "order 17: paid")]
    steps = [(e.get("kind") or e["name"], e.get("agent") or e.get("target") or e.get("model"))
             for e in ctx.events]
    assert steps == [("agent", "Agent workflow"), ("agent", "Triage"), ("model", "gpt-test"), ("lookup", None),
                     ("model", "gpt-test"), ("handoff", "Billing"), ("agent", "Billing"), ("model", "gpt-test")]


def test_a_real_langgraph_agent_records_its_tool_calls() -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain_openai")
    pytest.importorskip("openinference.instrumentation.langchain")
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    recorder = instrument("langgraph")
    with FakeOpenAIServer(answers=_search_then_answer) as server:
        @tool
        def search(query: str) -> str:
            """Search the web."""
            return f"{query.title()} is a capital city."

        @tool
        def population(city: str) -> int:
            """How many people live in a city."""
            return 2_100_000

        llm = ChatOpenAI(model="gpt-test", base_url=server.base_url, api_key="x")
        with warnings.catch_warnings():  # moved to langchain.agents (not installed with the langgraph extra)
            warnings.simplefilter("ignore")
            graph = create_react_agent(llm, [search, population])
        ctx = _ctx()

        async def main() -> Any:
            with recorder.sample(ctx):
                return (await graph.ainvoke({"messages": [("user", "What is the capital of France?")]}))["messages"]

        messages = asyncio.run(main())
    assert messages[-1].content == "The capital is \\boxed{Paris}."
    assert [(c.name, c.result) for c in ctx.tool_calls] == [("search", "Paris is a capital city."),
                                                           ("population", "2100000")]
    assert [e.get("kind") for e in ctx.events if e["role"] == "step"].count("model") == 3
