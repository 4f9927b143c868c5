"""OpenAI Agents SDK agents as targets: the real ``agents`` package against the fake OpenAI server.

The server scripts the model: a tool call, then an answer that quotes the tool's result; a unit
question is first handed off to the example's units agent. Every model call is a real HTTP call
to 127.0.0.1; no trace may leave the process (a guard refuses and records any other host).
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.adapters import create_adapter
from frontier_qa.errors import ConfigError, MissingExtraError, TargetError
from frontier_qa.runtime import open_target
from frontier_qa.runtime._aio import run_sync
from frontier_qa.target import Case, Sampling, Trajectory
from tests.cli.runner import run_cli
from tests.factories import REPO
from tests.servers.fake_openai import CHAT_PATH, RESPONSES_PATH, FakeOpenAIServer

pytest.importorskip("agents")

EXAMPLE = REPO / "examples" / "agents" / "openai_agents_agent.py"
SPEC = f"openai-agents:{EXAMPLE}:triage_agent"

STRICT_AGENT = '''import os

from agents import Agent, OpenAIChatCompletionsModel, function_tool
from openai import AsyncOpenAI

# the other way to give the SDK a model: a chat-completions model on a client the agent builds
client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"], max_retries=0)


@function_tool(failure_error_function=None)  # the tool's exception ends the run
def capital_of(country: str) -> str:
    """The capital of a country."""
    if country == "Atlantis":
        raise LookupError("Atlantis sank")
    return {"France": "Paris", "Japan": "Tokyo"}[country]


def instructions(wrapper, agent):
    if "explode" in wrapper.context.case.prompt:
        raise RuntimeError("the instructions exploded")
    return f"Answer briefly (sample {wrapper.context.sample_index})."


agent = Agent(name="strict", instructions=instructions, tools=[capital_of],
              model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client))
not_an_agent = {"name": "strict"}
'''


# ----- the scripted model ---------------------------------------------------------------------


def _turn(body: dict[str, Any]) -> tuple[str, str | None, set[str]]:
    """The task, the last tool output (``None`` when the model has not called a tool since) and the
    tools offered, from a chat-completions or a Responses request.
    """
    if "messages" in body:
        items, tools = body["messages"], {t["function"]["name"] for t in body.get("tools", [])}
        last = items[-1]
        output = last["content"] if last["role"] == "tool" else None
    else:
        items, tools = body["input"], {t["name"] for t in body.get("tools", [])}
        last = items[-1]
        output = last["output"] if last.get("type") == "function_call_output" else None
    task = next(i["content"] for i in items if i.get("role") == "user")
    return task, output, tools


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{"name": name, "arguments": json.dumps(arguments)}]}


def script(body: dict[str, Any], index: int) -> Any:
    """Capitals through ``capital_of``; conversions handed to the units agent, then ``convert_units``."""
    task, output, tools = _turn(body)
    if capital := re.search(r"capital of (\w+)", task):
        return _call("capital_of", country=capital[1]) if output is None else f"It is \\boxed{{{output}}}."
    if convert := re.search(r"[Cc]onvert ([\d.]+) (\w+) to (\w+)", task):
        if "convert_units" not in tools:
            return _call("transfer_to_units_agent")
        if output is None or "assistant" in output:  # no call yet, or the handoff's own output
            return _call("convert_units", value=float(convert[1]), from_unit=convert[2], to_unit=convert[3])
        return f"That is \\boxed{{{output}}} {convert[3]}."
    return "I cannot help with that."


# ----- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def remote_hosts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Hosts other than this machine that something tried to reach (refused; none by the end): the
    SDK's traces are flushed at the end, so an exporter still registered would try.
    """
    tried: list[str] = []
    resolve = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("127.0.0.1", "localhost", "::1", None):
            tried.append(str(host))
            raise OSError(f"test guard: no connection to {host}")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    yield tried
    from agents.tracing import flush_traces

    flush_traces()
    assert tried == []


@pytest.fixture
def chat_completions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Model names get the SDK's chat-completions model instead of its default, the Responses API."""
    from agents.models import _openai_shared

    monkeypatch.setattr(_openai_shared, "_use_responses_by_default", False)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, remote_hosts: list[str], agent_imports: None) -> Iterator[FakeOpenAIServer]:
    """The fake server with :func:`script`, named by ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``."""
    with FakeOpenAIServer(answers=script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
        yield srv


def _steps(t: Trajectory) -> list[str]:
    """The trajectory's tool calls and steps in order, one short line each."""
    return [f"tool {m['name']}" if m["role"] == "tool" else m["content"]
            for m in t.messages if m["role"] in ("tool", "step")]


def sample(spec: str, prompt: str, n: int = 1, **options: Any) -> list[Trajectory]:
    target = open_target(spec, cache=False, **options)
    return target.sample_sync(Case(f"c-{abs(hash(prompt))}", prompt), n, Sampling(seed=0))


def strict_spec(tmp_path: Path, attr: str = "agent") -> str:
    (tmp_path / "strict_agent.py").write_text(STRICT_AGENT)
    return f"openai-agents:{tmp_path / 'strict_agent.py'}:{attr}"


# ----- answers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["run", "streamed"])
def test_a_tool_call_then_the_answer_that_quotes_its_result_on_the_responses_api(
        server: FakeOpenAIServer, stream: bool) -> None:
    out = sample(SPEC, "What is the capital of France?", n=2, stream=stream)
    assert [t.text for t in out] == ["It is \\boxed{Paris}."] * 2 and [t.sample_index for t in out] == [0, 1]
    assert all(t.ok and t.usage.prompt_tokens > 0 for t in out)
    assert server.count(RESPONSES_PATH) == 4 and server.model_calls() == 4  # a tool call and an answer each
    first = server.requests[0].body
    assert first["input"] == [{"role": "user", "content": "What is the capital of France?"}]
    assert "capital_of" in first["instructions"] and first.get("stream", False) is stream
    for t in out:  # the trajectory, from the SDK's spans: the model call, the tool with its result, the answer
        assert [(c.name, json.loads(c.arguments), c.result) for c in t.tool_calls] == [
            ("capital_of", {"country": "France"}, "Paris")]
        assert _steps(t) == ["agent triage_agent", "model call", "tool capital_of", "model call"]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "streamed"])
def test_chat_completions_work_too(server: FakeOpenAIServer, chat_completions: None, stream: bool) -> None:
    (out,) = sample(SPEC, "What is the capital of Japan?", stream=stream)
    assert out.text == "It is \\boxed{Tokyo}." and [c.result for c in out.tool_calls] == ["Tokyo"]
    assert server.count(CHAT_PATH) == 2 and server.count(RESPONSES_PATH) == 0
    assert server.requests[0].body.get("stream", False) is stream


def test_a_handoff_runs_the_units_agent_and_its_tool_and_the_trajectory_shows_it(server: FakeOpenAIServer) -> None:
    (out,) = sample(SPEC, "Convert 5 km to mi, please.")
    assert out.text == "That is \\boxed{3.106856} mi."
    offered = [{t["name"] for t in r.body["tools"]} for r in server.requests]
    assert offered == [{"capital_of", "search_facts", "transfer_to_units_agent"}, {"convert_units"}, {"convert_units"}]
    assert [(c.name, json.loads(c.arguments), c.result) for c in out.tool_calls] == [
        ("convert_units", {"value": 5.0, "from_unit": "km", "to_unit": "mi"}, "3.106856")]
    assert _steps(out) == ["agent triage_agent", "model call", "handoff to units_agent", "agent units_agent",
                           "model call", "tool convert_units", "model call"]


def test_the_cases_system_prompt_and_history_become_input_items() -> None:
    from frontier_qa.adapters._openai_agents import input_items

    case = Case("h", "Capital of Peru?", system="Be terse.", history=(
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."}]},
        {"role": "tool", "name": "capital_of", "content": "Lima"}))
    assert input_items(case.messages) == [
        {"role": "system", "content": "Be terse."}, {"role": "user", "content": "Capital of Peru?"},
        {"role": "assistant", "content": "Checking."}, {"role": "user", "content": "[tool capital_of] Lima"}]


# ----- model calls through frontier-qa's runtime ------------------------------------------------------


@pytest.mark.parametrize("api", ["responses", "chat_completions"])
def test_every_model_call_is_counted_and_cached_so_a_second_run_pays_none(
        server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api: str) -> None:
    from agents.models import _openai_shared

    monkeypatch.setattr(_openai_shared, "_use_responses_by_default", api == "responses")
    cases = [Case("capital", "What is the capital of Kenya?"), Case("units", "Convert 2 mi to km.")]

    def run(n: int) -> tuple[list[list[Trajectory]], Any]:
        target = open_target(SPEC, cache=tmp_path / "cache")
        try:
            return [target.sample_sync(case, n, Sampling(seed=3)) for case in cases], target.stats()
        finally:
            run_sync(target.aclose())  # type: ignore[attr-defined]

    first, stats = run(2)
    assert [[t.text for t in out] for out in first] == [["It is \\boxed{Nairobi}."] * 2,
                                                        ["That is \\boxed{3.218688} km."] * 2]
    assert stats.calls == server.model_calls() == 2 * 2 + 2 * 3 and stats.cached_calls == 0
    assert stats.tokens == sum(t.usage.prompt_tokens + t.usage.completion_tokens for out in first for t in out) > 0
    if api == "chat_completions":  # the Responses API has no seed field
        seeds = [r.body["seed"] for r in server.requests]
        assert len(set(seeds)) == len(seeds)  # one per sample and call
    server.reset()
    again, stats = run(3)  # samples 0 and 1 again (from the cache), and a new one
    assert server.model_calls() == stats.calls == 2 + 3
    assert [[(t.text, t.tool_calls) for t in out[:2]] for out in again] == [
        [(t.text, t.tool_calls) for t in out] for out in first]


def test_a_sample_stopped_after_its_first_model_call_pays_only_the_rest_when_run_again(
        server: FakeOpenAIServer, tmp_path: Path) -> None:
    case = Case("units", "Convert 3 km to m.")
    server.push("ok", "401")  # the handoff is answered, then the run stops
    target = open_target(SPEC, cache=tmp_path / "cache")
    with pytest.raises(TargetError):
        target.sample_sync(case, 1, Sampling(seed=1))
    run_sync(target.aclose())  # type: ignore[attr-defined]
    assert server.model_calls() == 2
    target = open_target(SPEC, cache=tmp_path / "cache")
    (out,) = target.sample_sync(case, 1, Sampling(seed=1))
    assert out.text == "That is \\boxed{3000.0} m."
    assert server.model_calls() == 2 + 2 and target.stats().cached_calls == 1  # the handoff call was replayed


# ----- errors ---------------------------------------------------------------------------------------


def test_a_tools_error_the_sdk_shows_the_model_is_an_answer_not_a_failure(server: FakeOpenAIServer) -> None:
    (out,) = sample(SPEC, "What is the capital of Atlantis?")
    assert out.ok and "no capital known for 'Atlantis'" in (out.text or "")


def test_an_exception_in_a_tool_or_the_agent_fails_that_sample_only(server: FakeOpenAIServer, tmp_path: Path) -> None:
    spec = strict_spec(tmp_path)
    (sank,) = sample(spec, "What is the capital of Atlantis?")
    (exploded,) = sample(spec, "explode: what is the capital of France?")
    (fine,) = sample(spec, "What is the capital of Japan?")
    assert sank.text is None and "Atlantis sank" in (sank.error or "") and "openai-agents agent raised" in sank.error
    assert exploded.text is None and "the instructions exploded" in (exploded.error or "")
    assert fine.ok and fine.text == "It is \\boxed{Tokyo}."
    (call,) = sank.tool_calls  # the failed sample keeps its trajectory up to the failure
    assert call.name == "capital_of" and call.result is None and "Atlantis sank" in (call.error or "")
    assert "the instructions exploded" in exploded.messages[-1]["error"]


def test_max_turns_ends_a_run_that_needs_more_turns(server: FakeOpenAIServer) -> None:
    (out,) = sample(SPEC, "What is the capital of France?", max_turns=1)
    assert out.text is None and "MaxTurnsExceeded" in (out.error or "")
    with pytest.raises(ConfigError, match="max_turns=0"):
        create_adapter(SPEC, max_turns=0)


def test_a_401_from_the_server_stops_the_run(monkeypatch: pytest.MonkeyPatch, remote_hosts: list[str],
                                             agent_imports: None) -> None:
    with FakeOpenAIServer(answers=script, api_key="sk-right") as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        with pytest.raises(TargetError, match="401|Incorrect API key"):
            sample(SPEC, "What is the capital of France?")
        assert srv.model_calls() == 1  # not retried


def test_a_missing_attribute_or_another_object_is_a_clear_config_error(server: FakeOpenAIServer,
                                                                       tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no attribute 'nope'"):
        create_adapter(f"openai-agents:{EXAMPLE}:nope")
    with pytest.raises(ConfigError, match="expected an agents.Agent object, found .*FunctionTool") as tool:
        create_adapter(f"openai-agents:{EXAMPLE}:capital_of")
    assert "Agent(name=" in (tool.value.hint or "")
    with pytest.raises(ConfigError, match="found a builtins.dict"):
        create_adapter(strict_spec(tmp_path, "not_an_agent"))
    with pytest.raises(ConfigError, match="unknown option"):
        create_adapter(SPEC, temperature=0.5)


# ----- the CLI, end to end ------------------------------------------------------------------------


CASES = [{"id": "capital-france", "topic": "geography", "prompt": "What is the capital of France?",
          "reference": "Paris", "reference_verified": True},
         {"id": "km-to-mi", "topic": "units", "prompt": "Convert 5 km to mi.", "reference": "3.106856",
          "reference_verified": True}]


def test_frontier_qa_probe_runs_the_example_agent_from_the_command_line(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("FRONTIER_QA_") or n == "CI"]:
        monkeypatch.delenv(name)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    args = ["--target", f"openai-agents:{EXAMPLE}:triage_agent", "--k", "2", "--policy", "fixed",
            "--progress", "off", "--store", "store"]
    rc, out, err = run_cli(tmp_path, capsys, ["probe", *args, "--curriculum", "cases.jsonl", "--out", "out"])
    assert rc == 0, out + err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {c["id"]: (c["case_class"], c["majority"]) for c in report["cases"]} == {
        "capital-france": ("pass", "Paris"), "km-to-mi": ("pass", "3.106856")}
    assert server.model_calls() == 2 * 2 + 2 * 3  # per sample: 2 for a capital, 3 with the handoff
    rc, out, _ = run_cli(tmp_path, capsys, ["cases", "show", "km-to-mi", "--store", "store"])
    assert rc == 0 and "handoff(units_agent) → model → convert_units(value=5.0" in out


def test_without_the_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)  # what an environment without openai-agents imports
    with pytest.raises(MissingExtraError, match="openai-agents") as missing:
        create_adapter(SPEC)
    assert "frontier-qa[openai-agents]" in str(missing.value)


def test_with_the_sdks_tracing_off_the_answer_stands_and_a_warning_says_no_steps_are_recorded(
        server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture) -> None:
    import agents

    agents.set_tracing_disabled(True)
    try:
        with caplog.at_level("WARNING", logger="frontier_qa.adapters._openai_agents"):
            (out,) = sample(SPEC, "What is the capital of France?", id="openai-agents:untraced")
    finally:
        agents.set_tracing_disabled(False)
    assert out.text == "It is \\boxed{Paris}." and _steps(out) == []  # no spans: no steps, and the user is told
    assert [r.getMessage() for r in caplog.records if "tracing is off" in r.getMessage()] != []
