"""The example multi-step agent (examples/agents/smol_agent.py), driven by a scripted model server.

The agent is the embedded default target; here its model is the fake OpenAI-compatible server
(a real HTTP server) so the test checks the agent's own logic: draft, sandboxed code run,
follow-up, tool calls recorded, samples distinct per index. The SmolLM2 run is in the slow test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_qa.runtime import open_target
from frontier_qa.target import Case, Sampling
from tests.servers.fake_openai import FakeOpenAIServer

AGENT = Path(__file__).resolve().parents[1] / "examples" / "agents" / "smol_agent.py"


def _answers(body: dict, index: int) -> str:
    last = body["messages"][-1]["content"]
    if last.startswith("The code printed:"):
        printed = last.split("```output\n", 1)[1].split("\n```", 1)[0]
        return f"\\boxed{{{printed}}}"
    if index % 2 == 0:  # even samples compute, odd ones guess
        return "```python\nprint(23 * 17 + 5)\n```"
    return "It is \\boxed{400}."


@pytest.fixture
def agent_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    import sys

    with FakeOpenAIServer(answers=_answers) as server:
        monkeypatch.setenv("FRONTIER_QA_AGENT_MODEL", f"openai:scripted@{server.base_url}")
        monkeypatch.setenv("FRONTIER_QA_AGENT_CACHE", str(tmp_path / "agent-cache"))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        # a fresh module each test: the agent keeps one model target per process
        for name in [m for m in sys.modules if m.endswith("smol_agent")]:
            monkeypatch.delitem(sys.modules, name)
        yield open_target(f"python:{AGENT}:solve", cache=False), server


def test_agent_runs_code_in_the_sandbox_and_answers(agent_target) -> None:  # type: ignore[no-untyped-def]
    target, server = agent_target
    out = target.sample_sync(Case("mul", "What is 23 * 17 + 5?"), 4, Sampling(seed=0, temperature=0.8))
    assert [t.sample_index for t in out] == [0, 1, 2, 3]
    assert all(t.ok for t in out)
    computed, guessed = out[0], out[1]
    assert computed.n_tool_calls == 1
    (call,) = computed.tool_calls
    assert call.name == "python" and "print(23 * 17 + 5)" in call.arguments and call.result.strip() == "396"
    assert computed.text.endswith("\\boxed{396}") and "```output\n396\n```" in computed.text
    assert guessed.n_tool_calls == 0 and guessed.text == "It is \\boxed{400}."
    # two model calls for each computing sample, one for each guessing sample
    assert server.count("/v1/chat/completions") == 2 + 1 + 2 + 1
