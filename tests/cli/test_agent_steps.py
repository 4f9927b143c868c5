"""An agent's steps, captured from its OpenTelemetry spans, in the store, ``cases show`` and report.html.

A real probe (the CLI in this process) of a ``python:`` agent that runs a real Pydantic AI agent
inside the span recorder's sample scope, against the OpenAI-compatible test server, which scripts
a tool call (whose arguments carry a planted secret, as a model might copy one from its context)
and then the answer. The store, every report and the sample cache must keep the steps and never
the secret.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.cli import main
from frontier_qa.redaction import MASK
from frontier_qa.store._case_store import CaseStore
from tests.secrets.test_sinks import leaks
from tests.servers.fake_openai import FakeOpenAIServer

pytest.importorskip("pydantic_ai")
pytest.importorskip("opentelemetry.sdk.trace")

SECRET = "fqa-span-arg-9d3c71b2"
AGENT = '''
import os

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from frontier_qa.adapters._spans import instrument

recorder = instrument("pydantic-ai")
model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(base_url=os.environ["FQA_TEST_BASE_URL"], api_key="x"))
agent = Agent(model)


@agent.tool_plain
def search(query: str, key: str) -> str:
    return query.title() + " is the capital of France."


async def run(case, ctx):
    with recorder.sample(ctx):
        result = await agent.run(case.prompt)
    return result.output
'''
CASES = [{"id": "capital-1", "prompt": "What is the capital of France?", "reference": "Paris",
          "reference_verified": True, "topic": "geography"},
         {"id": "plain-1", "prompt": "Say hello.", "reference": "hello", "topic": "greetings"}]


def _script(body: dict[str, Any], index: int) -> Any:
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "France" not in question:
        return "\\boxed{hello}"  # no tool: a sample with a model call only
    if any(m["role"] == "tool" for m in body["messages"]):
        return "The capital is \\boxed{Paris}."
    return {"content": None, "tool_calls": [{"name": "search", "arguments": json.dumps({"query": "paris",
                                                                                         "key": SECRET})}]}


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("steps")
    (root / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    with FakeOpenAIServer(answers=_script) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("FQA_TEST_BASE_URL", server.base_url)
        patch.setenv("FQA_SPAN_API_KEY", SECRET)  # a secret frontier-qa knows: masked wherever text is written
        patch.chdir(root)
        rc = main(["probe", "--target", f"python:{root / 'agent.py'}:run", "--curriculum", "cases.jsonl",
                   "--policy", "fixed", "--k", "2", "--store", "store", "--out", "out", "--progress", "off"])
        assert rc == 0
        # the agent got the secret and sent it back with the tool's result: it was in its spans
        assert any(SECRET in json.dumps(r.body) for r in server.requests if "tool" in json.dumps(r.body))
        yield root


def _show(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> str:
    capsys.readouterr()
    assert main(["cases", "show", *args, "--store", str(root / "store")]) == 0
    return capsys.readouterr().out


def test_the_store_keeps_each_samples_steps(probed: Path) -> None:
    records = {r.id: r for r in CaseStore(probed / "store").case_records()}
    steps = records["capital-1"].samples[0].steps
    assert [(s.kind, s.name) for s in steps] == [("agent", "agent"), ("model", "gpt-test"), ("tool", "search"),
                                                 ("model", "gpt-test")]
    assert json.loads(steps[2].arguments or "") == {"query": "paris", "key": MASK}  # stored redacted
    assert [s.kind for s in records["plain-1"].samples[0].steps] == ["agent", "model"]


def test_cases_show_prints_the_step_line_under_each_answer(probed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _show(capsys, probed, "capital-1")
    assert '      2 × Paris\n          steps: model → search(query="paris", key="***") → model → answer "Paris"\n' in out
    data = json.loads(_show(capsys, probed, "capital-1", "--json"))
    assert data["answers"] == [{"answer": "Paris", "votes": 2,
                                "steps": 'model → search(query="paris", key="***") → model → answer "Paris"'}]
    assert 'steps: model → answer "hello"' in _show(capsys, probed, "plain-1")


def test_report_html_shows_the_step_line(probed: Path) -> None:
    page = (probed / "out" / "report.html").read_text(encoding="utf-8")
    assert ('<div class="steps">model → search(query=&quot;paris&quot;, key=&quot;***&quot;) → model → '
            "answer &quot;Paris&quot;</div>") in page


def test_a_secret_in_a_tool_argument_reaches_no_file(probed: Path) -> None:
    assert list((probed / "store").rglob("samples.sqlite3"))  # the sample cache was written, and is searched
    assert leaks(SECRET, probed) == []
