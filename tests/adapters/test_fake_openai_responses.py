"""The test server's Responses API and streaming, read by the real clients that will talk to it.

The real ``openai`` SDK parses every reply shape (Responses non-streaming and streaming, chat
streaming with tool-call deltas and a usage chunk), and openai-agents completes a tool-call loop
against it with both of its model classes: the framework tests and the gateway's rely on both.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import openai
import pytest

from tests.servers.fake_openai import CHAT_PATH, RESPONSES_PATH, FakeOpenAIServer, ToolScript, ToolTurn, call

TOOL_THEN_TEXT = {"weather in Paris?": [{"content": None, "tool_calls": [
    {"name": "get_weather", "arguments": '{"city": "Paris"}'}]}]}
TOOLS_RESPONSES = [{"type": "function", "name": "get_weather", "description": "Weather of a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                   "required": ["city"]}}]
TOOLS_CHAT = [{"type": "function", "function": {**{k: v for k, v in TOOLS_RESPONSES[0].items() if k != "type"},
                                                "strict": True}}]


def _tool_loop_answers(body: dict[str, Any], index: int) -> Any:
    """A tool call first; once the tool's output is in the conversation, a text answer quoting it."""
    items = body.get("messages") or body.get("input") or []
    outputs = [i for i in items if isinstance(i, dict) and (i.get("role") == "tool"
                                                            or i.get("type") == "function_call_output")]
    if outputs:
        last = outputs[-1]
        return f"It is {last.get('content') or last.get('output')}."
    return {"content": None, "tool_calls": [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]}


def _client(server: FakeOpenAIServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)


def test_responses_non_streaming_tool_call_then_text() -> None:
    async def go(server: FakeOpenAIServer) -> None:
        client = _client(server)
        first = await client.responses.create(model="m", input="weather in Paris?", tools=TOOLS_RESPONSES)
        call = first.output[0]
        assert call.type == "function_call" and call.name == "get_weather"
        assert json.loads(call.arguments) == {"city": "Paris"} and call.call_id
        assert first.usage is not None and first.usage.input_tokens == 3 and first.usage.total_tokens == 4
        follow = [{"role": "user", "content": [{"type": "input_text", "text": "weather in Paris?"}]},
                  call.model_dump(exclude_none=True),
                  {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
        second = await client.responses.create(model="m", input=follow, tools=TOOLS_RESPONSES)
        assert second.output_text == "It is sunny."
        assert second.output[0].type == "message"

    with FakeOpenAIServer(answers=_tool_loop_answers) as server:
        asyncio.run(go(server))
        assert server.count(RESPONSES_PATH) == 2 and server.model_calls() == 2


def test_responses_answers_by_last_user_input_text() -> None:
    async def go(server: FakeOpenAIServer) -> tuple[Any, Any]:
        client = _client(server)
        as_string = await client.responses.create(model="m", input="weather in Paris?")
        as_items = await client.responses.create(model="m", input=[
            {"role": "user", "content": "something else"},
            {"role": "user", "content": [{"type": "input_text", "text": "weather in Paris?"}]}])
        return as_string, as_items

    with FakeOpenAIServer(answers=TOOL_THEN_TEXT) as server:
        as_string, as_items = asyncio.run(go(server))
    assert [o.type for o in as_string.output] == [o.type for o in as_items.output] == ["function_call"]


def test_responses_streaming_events_and_final_response() -> None:
    async def go(server: FakeOpenAIServer) -> tuple[list[str], Any, Any]:
        client = _client(server)
        kinds = []
        stream = await client.responses.create(model="m", input="hi", stream=True)
        async for event in stream:
            kinds.append(event.type)
        async with client.responses.stream(model="m", input="weather in Paris?",
                                           tools=TOOLS_RESPONSES) as helper:
            async for _ in helper:
                pass
            tool = await helper.get_final_response()
        async with client.responses.stream(model="m", input="hi") as helper:
            text = await helper.get_final_response()
        return kinds, tool, text

    with FakeOpenAIServer(answers=TOOL_THEN_TEXT, default_answer="Hello there, friend.") as server:
        kinds, tool, text = asyncio.run(go(server))
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert {"response.output_item.added", "response.output_text.delta", "response.output_item.done"} <= set(kinds)
    assert tool.output[0].type == "function_call" and json.loads(tool.output[0].arguments) == {"city": "Paris"}
    assert text.output_text == "Hello there, friend." and text.usage.output_tokens == 3


def test_chat_streaming_deltas_tool_calls_and_usage() -> None:
    async def go(server: FakeOpenAIServer) -> tuple[str, Any, Any]:
        client = _client(server)
        pieces, usage = [], None
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
            stream_options={"include_usage": True})
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
            if chunk.usage is not None:
                usage = chunk.usage
        async with client.chat.completions.stream(
                model="m", messages=[{"role": "user", "content": "weather in Paris?"}], tools=TOOLS_CHAT) as helper:
            async for _ in helper:
                pass
            final = await helper.get_final_completion()
        return "".join(pieces), usage, final

    with FakeOpenAIServer(answers=TOOL_THEN_TEXT, default_answer="A rather long answer, cut in deltas.") as server:
        text, usage, final = asyncio.run(go(server))
        assert server.count(CHAT_PATH) == 2
    assert text == "A rather long answer, cut in deltas."
    assert usage is not None and usage.completion_tokens == 7 and usage.prompt_tokens == 1
    call = final.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert final.choices[0].finish_reason == "tool_calls"


def test_faults_apply_to_the_responses_api() -> None:
    async def go(server: FakeOpenAIServer) -> Any:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=1)
        return await client.responses.create(model="m", input="hi")

    with FakeOpenAIServer(script=["429:0.01"]) as server:
        reply = asyncio.run(go(server))
        assert reply.output_text and server.count(RESPONSES_PATH) == 2
        assert [r.fault.kind for r in server.requests] == ["status", "ok"]


def test_latency_applies_to_every_model_request() -> None:
    async def go(server: FakeOpenAIServer) -> float:
        started = time.monotonic()
        await _client(server).responses.create(model="m", input="hi", stream=True)
        return time.monotonic() - started

    with FakeOpenAIServer(latency_s=0.05) as server:
        assert asyncio.run(go(server)) >= 0.05  # a lower bound: the server waited before answering


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize("streamed", [False, True])
def test_openai_agents_tool_loop(api: str, streamed: bool) -> None:
    agents = pytest.importorskip("agents")
    calls: list[str] = []
    untraced = agents.RunConfig(tracing_disabled=True)  # this run only: the process's tracing stays as it was

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        calls.append(city)
        return "sunny"

    async def go(server: FakeOpenAIServer) -> str:
        client = _client(server)
        model_class = agents.OpenAIResponsesModel if api == "responses" else agents.OpenAIChatCompletionsModel
        agent = agents.Agent(name="weather", instructions="Answer with the tool.", tools=[get_weather],
                             model=model_class(model="fake-model", openai_client=client))
        if streamed:
            run = agents.Runner.run_streamed(agent, "weather in Paris?", run_config=untraced)
            async for _ in run.stream_events():
                pass
            return str(run.final_output)
        return str((await agents.Runner.run(agent, "weather in Paris?", run_config=untraced)).final_output)

    with FakeOpenAIServer(answers=_tool_loop_answers) as server:
        answer = asyncio.run(go(server))
        assert server.count(RESPONSES_PATH if api == "responses" else CHAT_PATH) == 2
    assert calls == ["Paris"] and answer == "It is sunny."


SCRIPT = ToolScript((
    ToolTurn("capital of Kenya", (call("capital", country="Kenya"), call("search_facts", query="Kenya")),
             "The capital of Kenya is Nairobi."),
    ToolTurn("capital of Peru", (call("search_facts", query="Peru"),), "The capital of Peru is Lima."),
))


async def _scripted_run(client: openai.AsyncOpenAI, api: str, streamed: bool, task: str,
                        seed: int | None) -> tuple[str, str]:
    """One tool loop as an SDK runs it: (the tool the model called, the text it answered after its result)."""
    if api == "chat":
        messages: list[Any] = [{"role": "user", "content": task}]
        extra = {"seed": seed} if seed is not None else {}
        first = await client.chat.completions.create(model="m", messages=messages, tools=TOOLS_CHAT, **extra)
        (tool_call,) = first.choices[0].message.tool_calls or []
        messages += [first.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": tool_call.id, "content": "a result"}]
        if streamed:
            chunks = await client.chat.completions.create(model="m", messages=messages, stream=True)
            text = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
        else:
            text = (await client.chat.completions.create(model="m", messages=messages)).choices[0].message.content
        return tool_call.function.name, text or ""
    first_response = await client.responses.create(model="m", input=task, tools=TOOLS_RESPONSES)
    (fc,) = first_response.output
    assert fc.type == "function_call"
    follow = [{"role": "user", "content": task}, fc.model_dump(exclude_none=True),
              {"type": "function_call_output", "call_id": fc.call_id, "output": "a result"}]
    if streamed:
        async with client.responses.stream(model="m", input=follow) as stream:  # type: ignore[arg-type]
            text = (await stream.get_final_response()).output_text
    else:
        text = (await client.responses.create(model="m", input=follow)).output_text  # type: ignore[arg-type]
    return fc.name, text


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize("streamed", [False, True])
def test_a_tool_script_splits_its_random_turn_evenly_and_answers_the_same_after_either_tool(
        api: str, streamed: bool) -> None:
    async def go(server: FakeOpenAIServer) -> None:
        client = _client(server)
        kenya = [await _scripted_run(client, api, streamed, "What is the capital of Kenya?", None) for _ in range(8)]
        assert sorted(tool for tool, _ in kenya) == ["capital"] * 4 + ["search_facts"] * 4  # the per-prompt counter
        assert {text for _, text in kenya} == {"The capital of Kenya is Nairobi."}
        peru = [await _scripted_run(client, api, streamed, "What is the capital of Peru?", None) for _ in range(3)]
        assert peru == [("search_facts", "The capital of Peru is Lima.")] * 3
        if api == "chat":  # a seed picks the tool: the same seed, the same tool; consecutive seeds alternate
            seeded = [(await _scripted_run(client, api, streamed, "capital of kenya", s))[0] for s in (7, 7, 8, 9)]
            assert seeded == ["search_facts", "search_facts", "capital", "search_facts"]

    with FakeOpenAIServer(answers=SCRIPT) as server:
        asyncio.run(go(server))
    assert SCRIPT({"input": "Hello?"}, 0) == "I cannot help with that."  # a task no turn matches
