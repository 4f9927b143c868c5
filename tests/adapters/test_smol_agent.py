"""The example multi-step agent (examples/agents/smol_agent.py) with scripted models.

The agent is the embedded default target. Two scripted models check its own logic:

* the fake OpenAI-compatible server (a real HTTP server, no prefill): a program that prints the
  answer ends the sample, a failing program gets one fix, a direct ``\\boxed{}`` answer is
  accepted, and tool calls are recorded;
* an in-process adapter that continues prefilled replies (as local models do): the agent opens
  the code block and the answer box itself.

The SmolLM2 run is the embedded-default test (tests/cli/test_embedded_default.py).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from frontier_qa.runtime import open_target
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.target import Adapter, Case, Sampling, Trajectory
from tests.factories import REPO
from tests.servers.fake_openai import FakeOpenAIServer

AGENT = REPO / "examples" / "agents" / "smol_agent.py"


def _answers(body: dict, index: int) -> str:
    task = body["messages"][1]["content"]
    last = body["messages"][-1]["content"]
    kind = int(task.rsplit("#", 1)[1])  # the test writes which behaviour it wants into the task
    if "Without code" in last:
        return "I think \\boxed{7}."
    if kind == 0:  # computes
        return "```python\nprint(23 * 17 + 5)\n```"
    if kind == 1:  # answers directly
        return "It is \\boxed{400}."
    if kind == 2:  # a bug, then the fix
        return "```python\nprint(23 * 17 + 5)\n```" if "The code failed" in last else "```python\nprint(x)\n```"
    if kind == 3:  # always a bug: gives up after two programs
        return "```python\nprint(y)\n```"
    return "Let me think about it."  # 4: neither code nor an answer


@pytest.fixture
def agent_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    with FakeOpenAIServer(answers=_answers) as server:
        monkeypatch.setenv("FRONTIER_QA_AGENT_MODEL", f"openai:scripted@{server.base_url}")
        monkeypatch.setenv("FRONTIER_QA_AGENT_CACHE", str(tmp_path / "agent-cache"))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        # a fresh module each test: the agent keeps one model target per process
        for name in [m for m in sys.modules if "smol_agent" in m]:
            monkeypatch.delitem(sys.modules, name)
        yield open_target(f"python:{AGENT}:solve", cache=False), server


def sample(target, kind: int, n: int = 1):  # type: ignore[no-untyped-def]
    return target.sample_sync(Case(f"case{kind}", f"What is 23 * 17 + 5? #{kind}"), n, Sampling(seed=0, temperature=0.8))


def test_a_program_that_prints_the_answer_ends_the_sample(agent_target) -> None:  # type: ignore[no-untyped-def]
    target, server = agent_target
    out = sample(target, 0, 3)
    assert [t.sample_index for t in out] == [0, 1, 2] and all(t.ok for t in out)
    (call,) = out[0].tool_calls
    assert call.name == "python" and "print(23 * 17 + 5)" in call.arguments and call.result.strip() == "396"
    assert out[0].text.endswith("The final answer is \\boxed{396}") and "```output\n396\n```" in out[0].text
    assert server.count("/v1/chat/completions") == 3  # one model call per sample


def test_a_direct_answer_is_accepted_without_a_tool_call(agent_target) -> None:  # type: ignore[no-untyped-def]
    target, server = agent_target
    (out,) = sample(target, 1)
    assert out.n_tool_calls == 0 and out.text == "It is \\boxed{400}."
    assert server.count("/v1/chat/completions") == 1


def test_a_failing_program_gets_one_fix_with_the_error_shown(agent_target) -> None:  # type: ignore[no-untyped-def]
    target, server = agent_target
    (out,) = sample(target, 2)
    first, second = out.tool_calls
    assert first.error and "NameError" in first.result and second.result.strip() == "396"
    assert out.text.endswith("\\boxed{396}")
    fix = server.requests[-1].body["messages"][-1]["content"]
    assert "The code failed" in fix and "NameError" in fix


def test_after_two_failures_or_no_code_the_model_answers_directly(agent_target) -> None:  # type: ignore[no-untyped-def]
    target, server = agent_target
    (gave_up,) = sample(target, 3)
    assert gave_up.n_tool_calls == 2 and gave_up.text.endswith("I think \\boxed{7}.")
    last = server.requests[-1].body["messages"][-1]["content"]
    assert last.startswith("The code failed") and "Without code" in last  # the last error, then the ask
    (talked,) = sample(target, 4)
    assert talked.n_tool_calls == 0 and talked.text == "Let me think about it.\nI think \\boxed{7}."
    assert server.count("/v1/chat/completions") == 3 + 2


class Continuing(Adapter):
    """A local-model stand-in: continues prefilled assistant turns; records each request."""

    max_n = 1
    supports_prefill = True
    id = "continuing"

    def __init__(self) -> None:
        self.requests: list[Case] = []

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        self.requests.append(case)
        prefix = case.history[-1]["content"]
        if prefix == "```python\n":
            # first program prints nothing, the fix prints the answer; it never closes the block
            text = "x = 1\n" if len(self.requests) == 1 else "print(6 * 7)"
        else:
            text = "\\frac{1}{2}} because"
        return [Trajectory(text=text, sample_index=start)]


def load_agent(monkeypatch: pytest.MonkeyPatch, adapter: Adapter):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("smol_agent_under_test", AGENT)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    monkeypatch.setattr(module, "_model", open_target(adapter, cache=False))
    monkeypatch.setattr(module, "_sandbox", Sandbox(timeout_s=10))
    return module


class Context:
    """The parts of AgentContext the agent uses."""

    case = None

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, object]] = []
        self.steps: list[str] = []

    def add_usage(self, prompt: int, completion: int) -> None:
        pass

    def step(self, name: str) -> None:
        self.steps.append(name)

    def tool_call(self, name: str, arguments: str, result: str, error: object) -> None:
        self.calls.append((name, arguments, result, error))


def test_prefill_opens_the_code_block_and_the_answer_box(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = Continuing()
    agent = load_agent(monkeypatch, adapter)
    ctx = Context()
    out = asyncio.run(agent.solve("What is 6 * 7?", ctx, Sampling(seed=0), 0))
    assert [c.history[-1]["content"] for c in adapter.requests] == ["```python\n", "```python\n"]
    assert [args.strip() for _, args, _, _ in ctx.calls] == ["x = 1", "print(6 * 7)"]  # closed by the agent
    assert out["answer"].endswith("The final answer is \\boxed{42}")
    assert ctx.steps == ["write code (1)", "ran code", "write code (2)", "ran code"]


def test_prefilled_answers_keep_nested_braces(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = Continuing()
    adapter.requests.extend([Case("x", "x")] * 5)  # skip the program branch's first reply
    agent = load_agent(monkeypatch, adapter)
    assert agent._box_content("\\frac{1}{2}} because") == "\\frac{1}{2}"
    assert agent._box_content("42") == "42"
    assert agent._result("The ball costs $0.05.") == "0.05" and agent._result("x = 3/4") == "3/4"
    assert agent._result("hello world") == "hello world"
