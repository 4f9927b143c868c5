"""MCP tools (issue 31, item 4): a real stdio MCP server (examples/agents/mcp_server.py) started by
:class:`McpToolbox`, its tools called by the tool-integrated executor and by each framework's real
package against the local OpenAI-compatible test server, every call recorded once.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from frontier_qa.adapters._agents import _CONTEXT, AgentContext
from frontier_qa.adapters._mcp import McpServer, McpToolbox
from frontier_qa.errors import ConfigError, MissingExtraError, TargetError
from frontier_qa.runtime import Limits, open_target, run_sync
from frontier_qa.target import Case, Sampling, ToolCall
from tests.factories import REPO
from tests.servers.fake_openai import FakeOpenAIServer

pytest.importorskip("mcp")

T = TypeVar("T")
EXAMPLE = {"name": "facts", "command": sys.executable, "args": [str(REPO / "examples/agents/mcp_server.py")]}
CASE = Case("capital", "What is the capital of France?")
SAMPLING = Sampling(seed=0, max_tokens=64)
CALL = {"name": "lookup_capital", "arguments": '{"country": "France"}'}
# a second server: one tool named like the example's (a clash) and one that kills its own process
CRASHY = """
    import os
    import sys
    from mcp.server.mcpserver import MCPServer

    if len(sys.argv) > 1:  # a file to note this process's id in
        with open(sys.argv[1], "a") as pids:
            pids.write(f"{os.getpid()}\\n")

    server = MCPServer("crashy", log_level="WARNING")

    @server.tool()
    def lookup_capital(country: str) -> str:
        \"\"\"A second tool of that name.\"\"\"
        return "Atlantis"

    @server.tool()
    def crash() -> str:
        \"\"\"Exit at once.\"\"\"
        os._exit(3)

    server.run("stdio")
"""


def in_sample(make: Callable[[AgentContext], Awaitable[T]]) -> tuple[T, AgentContext]:
    """Run ``make(ctx)`` on a fresh event loop, as the code of one sample (tools record into ``ctx``)."""
    ctx = AgentContext(CASE, 0, SAMPLING)

    async def run() -> T:
        token = _CONTEXT.set(ctx)
        try:
            return await make(ctx)
        finally:
            _CONTEXT.reset(token)

    return asyncio.run(run()), ctx


def capital_then_answer(body: dict[str, Any], index: int) -> dict[str, Any]:
    """The scripted model: call ``lookup_capital`` once, then answer with what it returned."""
    results = [m for m in body["messages"] if m.get("role") == "tool"]
    if not results:
        return {"content": None, "tool_calls": [CALL]}
    return {"content": f"The capital is \\boxed{{{results[-1]['content']}}}."}


@pytest.fixture(scope="module")
def crashy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    path = tmp_path_factory.mktemp("mcp") / "crashy.py"
    path.write_text(textwrap.dedent(CRASHY))
    yield {"name": "crashy", "command": sys.executable, "args": [str(path)]}


# ----- the toolbox --------------------------------------------------------------------------


def test_tools_are_listed_called_and_recorded_and_clashing_names_get_the_server_prefix(
        crashy: dict[str, Any]) -> None:
    async def use(ctx: AgentContext) -> tuple[list[dict[str, Any]], list[str]]:
        async with McpToolbox([EXAMPLE, crashy]) as box:
            schemas = box.openai_tools()
            shown = [await box.call("facts_lookup_capital", {"country": "Japan"}),
                     await box.call("crashy_lookup_capital", '{"country": "Japan"}'),
                     await box.call("convert_units", {"value": 2, "from_unit": "km", "to_unit": "m"}),
                     await box.call("facts_lookup_capital", {"country": "Mars"}),  # the tool's error result
                     await box.call("lookup_capital", {"country": "Japan"})]  # no such name: both are prefixed
            with pytest.raises(TargetError, match="MCP server 'crashy' exited during a call of 'crash'"):
                await box.call("crash", {})
            return schemas, shown

    (schemas, shown), ctx = in_sample(use)
    by_name = {s["function"]["name"]: s["function"] for s in schemas}
    assert sorted(by_name) == ["convert_units", "crash", "crashy_lookup_capital", "facts_lookup_capital"]
    assert all(s["type"] == "function" for s in schemas)
    units = by_name["convert_units"]
    assert units["parameters"]["required"] == ["value", "from_unit", "to_unit"]
    assert units["parameters"]["properties"]["value"]["type"] == "number" and "km" in units["description"]
    assert shown[:3] == ["Tokyo", "Atlantis", "2000.0"]
    assert shown[3].startswith("Error: ") and "unknown country 'Mars'" in shown[3]
    assert shown[4].startswith("Error: unknown tool 'lookup_capital'")
    calls = ctx.tool_calls
    assert calls[0] == ToolCall("facts_lookup_capital", '{"country": "Japan"}', "Tokyo")
    assert calls[2] == ToolCall("convert_units", '{"from_unit": "km", "to_unit": "m", "value": 2}', "2000.0")
    assert calls[3].result is None and "unknown country 'Mars'" in (calls[3].error or "")
    assert len(calls) == 5  # the crash raised: a server that is gone is the run's error, not a call


def test_a_server_that_cannot_start_is_a_config_error_with_its_stderr_and_no_secret(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", "sk-mcp-test-0123456789abcdef")
    leaky = McpServer(sys.executable, ("-c", "import os, sys; print('bad token', os.environ['TOKEN'], file=sys.stderr);"
                                              "sys.exit(2)"), env={"TOKEN": "${MCP_TEST_TOKEN}"}, name="leaky")
    assert "sk-mcp" not in repr(leaky) and "MCP_TEST_TOKEN" not in repr(leaky)

    async def start(server: McpServer | dict[str, Any], timeout_s: float = 30.0) -> None:
        async with McpToolbox([server], start_timeout_s=timeout_s):
            pass

    with pytest.raises(ConfigError) as failed:
        asyncio.run(start(leaky))
    message = str(failed.value)
    assert "MCP server 'leaky' could not start: it exited before answering 'initialize'" in message
    assert "bad token" in message and "sk-mcp" not in message

    with pytest.raises(ConfigError, match=r"MCP server 'nope' could not start: its command 'no-such-mcp-server' "
                                          r"was not found(.|\n)*fix: install it or fix 'command'"):
        asyncio.run(start({"name": "nope", "command": "no-such-mcp-server"}))

    silent = {"name": "silent", "command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
    with pytest.raises(ConfigError, match="MCP server 'silent' could not start: it did not answer 'initialize' "
                                          "within 0.5 s"):
        asyncio.run(start(silent, 0.5))


def test_server_entries_are_checked_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    with pytest.raises(ConfigError, match=r"MCP server 'x': env refers to \$\{MCP_TEST_UNSET\}, which is not set"):
        McpToolbox([{"name": "x", "command": "srv", "env": {"K": "${MCP_TEST_UNSET}"}}])
    with pytest.raises(ConfigError, match="two MCP servers share a name"):
        McpToolbox(["srv --a", "srv --b"])
    with pytest.raises(ConfigError, match=r"unknown MCP server key\(s\) \['argv'\]"):
        McpServer.parse({"command": "srv", "argv": []})
    assert McpServer.parse("npx -y @modelcontextprotocol/server-filesystem /tmp").name == "server-filesystem"
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the extra were not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'frontier-qa\[mcp\]'"):
        McpToolbox([EXAMPLE])


def test_the_servers_stop_with_the_loop_that_started_them_and_start_again_on_the_next(
        crashy: dict[str, Any], tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    box = McpToolbox([{**crashy, "args": [*crashy["args"], str(pids)]}])

    async def capital() -> str:
        return await box.call("lookup_capital", {"country": "Peru"})

    assert asyncio.run(capital()) == "Atlantis"  # started on this loop; asyncio.run ends it and the server
    assert asyncio.run(capital()) == "Atlantis"  # a new loop: started again
    first, second = (int(p) for p in pids.read_text().split())
    assert not Path(f"/proc/{first}").exists()
    asyncio.run(box.aclose())  # not the loop it runs on: nothing to do
    assert first != second and not box.started


# ----- the tool-integrated executor ---------------------------------------------------------


def test_the_tool_executor_offers_mcp_tools_and_records_each_call(tmp_path: Path) -> None:
    from frontier_qa.adapters.tool_executor import ToolExecutor

    with FakeOpenAIServer(answers=capital_then_answer) as server:
        target = open_target(f"tools+openai:fake-model@{server.base_url}", cache=tmp_path / "cache",
                             limits=Limits(timeout_s=10), tool_options={"mcp_servers": [EXAMPLE]})
        assert isinstance(target, ToolExecutor) and target.mode == "chat" and "mcp=facts" in target.id
        try:
            (out,) = run_sync(target.sample(CASE, 1, SAMPLING))
            (again,) = run_sync(target.sample(CASE, 1, SAMPLING))  # the model's turns come from the cache
        finally:
            run_sync(target.aclose())
        first, second = (r.body for r in server.requests)
    assert out.ok and out.text == "The capital is \\boxed{Paris}."
    assert out.tool_calls == (ToolCall("lookup_capital", '{"country": "France"}', "Paris"),)
    assert out.n_tool_calls == 1 and again.tool_calls == out.tool_calls and again.text == out.text
    assert server.count() == 2
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup_capital", "convert_units"]
    call, reply = second["messages"][-2:]
    assert call["tool_calls"][0]["function"] == {"name": "lookup_capital", "arguments": '{"country": "France"}'}
    assert reply == {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": "Paris"}
    assert [m["role"] for m in out.messages] == ["user", "assistant", "tool", "assistant"]


def test_mcp_calls_count_towards_the_tool_budget() -> None:
    from frontier_qa.adapters.tool_executor import ToolExecutor

    units = {"name": "convert_units", "arguments": '{"value": 1, "from_unit": "km", "to_unit": "m"}'}

    def greedy(body: dict[str, Any], index: int) -> dict[str, Any]:  # two calls a turn, never an answer
        return {"content": "Checking.", "tool_calls": [CALL, units]}

    with FakeOpenAIServer(answers=greedy) as server:
        inner = open_target(f"openai:fake-model@{server.base_url}", cache=False, limits=Limits(timeout_s=10))
        target = ToolExecutor(inner, max_tool_turns=1, mcp_servers=[EXAMPLE])
        try:
            (out,) = run_sync(target.sample(CASE, 1, SAMPLING))
        finally:
            run_sync(target.aclose())
        second = server.requests[1].body
    assert out.n_tool_calls == 1 and out.tool_calls[0] == ToolCall("lookup_capital", CALL["arguments"], "Paris")
    assert [(c.name, c.result, c.error) for c in out.tool_calls[1:]] == [  # proposed in the last turn, not run
        ("lookup_capital", None, None), ("convert_units", None, None)]
    assert [m["content"] for m in second["messages"] if m["role"] == "tool"] == [
        "Paris", "Error: not run, the tool budget is spent"]
    assert server.count() == 2 and out.text == "Checking.\nChecking."


def test_the_executor_wants_chat_mode_for_mcp_tools() -> None:
    from frontier_qa.adapters.tool_executor import ToolExecutor

    with pytest.raises(ConfigError, match="mode='prefill' cannot offer MCP tools"):
        ToolExecutor(open_target("mock:right", cache=False), mode="prefill", mcp_servers=[EXAMPLE])


# ----- the frameworks, each with its real package --------------------------------------------


def framework_run(run: Callable[[McpToolbox, str], Awaitable[str]]) -> tuple[str, AgentContext, FakeOpenAIServer]:
    """Run an agent built on ``run(toolbox, base_url)`` for one sample; the model calls lookup_capital once."""
    with FakeOpenAIServer(answers=capital_then_answer) as server:

        async def sample(_ctx: AgentContext) -> str:
            async with McpToolbox([EXAMPLE]) as box:
                return await run(box, server.base_url)

        answer, ctx = in_sample(sample)
    return answer, ctx, server


def assert_recorded_once(answer: str, ctx: AgentContext, server: FakeOpenAIServer) -> None:
    assert "Paris" in answer
    assert ctx.tool_calls == [ToolCall("lookup_capital", '{"country": "France"}', "Paris")]
    tools = server.requests[0].body["tools"]
    assert {t["function"]["name"] for t in tools} == {"lookup_capital", "convert_units"}
    assert server.count() == 2


def test_openai_agents_sdk_agent_calls_mcp_tools() -> None:
    pytest.importorskip("agents")
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
    from openai import AsyncOpenAI

    from frontier_qa.adapters._mcp_frameworks import openai_agents_tools

    async def run(box: McpToolbox, base_url: str) -> str:
        model = OpenAIChatCompletionsModel("fake-model", openai_client=AsyncOpenAI(base_url=base_url, api_key="x"))
        agent = Agent(name="geo", instructions="Answer.", model=model, tools=openai_agents_tools(box))
        result = await Runner.run(agent, CASE.prompt, run_config=RunConfig(tracing_disabled=True))
        return str(result.final_output)

    assert_recorded_once(*framework_run(run))


def test_pydantic_ai_agent_calls_mcp_tools() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from frontier_qa.adapters._mcp_frameworks import pydantic_ai_toolset

    async def run(box: McpToolbox, base_url: str) -> str:
        model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=base_url, api_key="x"))
        agent = Agent(model, toolsets=[pydantic_ai_toolset(box)])
        return (await agent.run(CASE.prompt)).output

    assert_recorded_once(*framework_run(run))


def test_langgraph_agent_calls_mcp_tools() -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    from frontier_qa.adapters._mcp_frameworks import langchain_tools

    async def run(box: McpToolbox, base_url: str) -> str:
        agent = create_react_agent(ChatOpenAI(model="fake-model", base_url=base_url, api_key="x"),
                                   langchain_tools(box))
        state = await agent.ainvoke({"messages": [("user", CASE.prompt)]})
        return str(state["messages"][-1].content)

    assert_recorded_once(*framework_run(run))


def test_converters_want_a_started_toolbox() -> None:
    from frontier_qa.adapters._mcp_frameworks import langchain_tools

    with pytest.raises(ConfigError, match="the MCP toolbox is not started"):
        langchain_tools(McpToolbox([EXAMPLE]))



def test_the_docs_config_builds_the_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from frontier_qa.adapters.tool_executor import ToolExecutor

    page = (REPO / "docs/how-to/mcp-tools.md").read_text(encoding="utf-8")
    config = yaml.safe_load(page.split("```yaml\n", 1)[1].split("```", 1)[0])
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_docs0123456789abcdef")
    executor = ToolExecutor(open_target("mock:right", cache=False), **config["target"]["tool_options"])
    assert executor.toolbox is not None and [s.name for s in executor.toolbox.servers] == ["facts", "github"]
    assert executor.max_tool_turns == 6 and "ghp_docs" not in repr(executor.toolbox.servers)


# ----- framework targets given mcp_servers --------------------------------------------------------

AGENT_FILES = {
    "openai-agents": """
from agents import Agent, OpenAIChatCompletionsModel
from openai import AsyncOpenAI
import os
agent = Agent(name="geo", instructions="Answer.", model=OpenAIChatCompletionsModel(
    "fake-model", openai_client=AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="x")))
""",
    "pydantic-ai": """
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
import os
agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"],
                                                                   api_key="x")))
""",
}


@pytest.mark.parametrize("framework", sorted(AGENT_FILES))
def test_a_framework_target_given_mcp_servers_offers_their_tools_and_records_each_call_once(
        framework: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the spec, as a config gives it: the agent has no tools of its own; the servers' tools are
    offered beside them, and the call is in the trajectory once (from the framework's span), with its result.
    """
    (tmp_path / "geo_agent.py").write_text(AGENT_FILES[framework])
    with FakeOpenAIServer(answers=capital_then_answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        target = open_target(f"{framework}:{tmp_path / 'geo_agent.py'}:agent", mcp_servers=[EXAMPLE], cache=False)
        try:
            (out,) = target.sample_sync(CASE, 1, SAMPLING)
        finally:
            run_sync(target.aclose())
    assert out.ok and "Paris" in (out.text or ""), out.error
    assert [(c.name, c.result) for c in out.tool_calls] == [("lookup_capital", "Paris")]
    assert {t["function"]["name"] for t in server.requests[0].body["tools"]} >= {"lookup_capital", "convert_units"}
    assert server.model_calls() == 2 and target.stats().calls == 2


def test_a_langgraph_target_refuses_mcp_servers_with_the_fix(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    with pytest.raises(ConfigError, match="take no mcp_servers") as refused:
        open_target(f"langgraph:{REPO / 'examples/agents/langgraph_agent.py'}:graph", mcp_servers=[EXAMPLE],
                    cache=False)
    assert "where you build it" in (refused.value.hint or "")


def test_an_mcp_server_that_cannot_start_stops_a_framework_target_with_its_own_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The usage error (which server, its stderr, the fix), not the runtime's generic "fix the credentials"."""
    pytest.importorskip("pydantic_ai")
    (tmp_path / "geo_agent.py").write_text(AGENT_FILES["pydantic-ai"])
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached: the server fails first
    broken = {"name": "broken", "command": sys.executable, "args": ["-c", "import sys; sys.exit('no such tool')"]}
    target = open_target(f"pydantic-ai:{tmp_path / 'geo_agent.py'}:agent", mcp_servers=[broken], cache=False)
    try:
        with pytest.raises(ConfigError, match="broken") as stopped:
            target.sample_sync(CASE, 1, SAMPLING)
    finally:
        run_sync(target.aclose())
    assert not isinstance(stopped.value, TargetError) and "credentials" not in (stopped.value.hint or "")
