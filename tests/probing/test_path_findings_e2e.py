"""Issue 32's proof, end to end: each framework's example agent, probed from the command line against
a test server that scripts its tool choice, gets the path findings and pass^k the issue names.

The server (:class:`~tests.servers.fake_openai.ToolScript`) answers the cases of
``examples/agents/trajectory_cases.yaml``: for Kenya it picks the capital lookup or the fact search
at random (the answer is Nairobi either way: answers agree, paths scatter), for Peru it always
searches (a tool the case forbids: a wrong path), for the Seine it always searches (the case's own
tool: a stable, right path). Every probe is real: the framework packages, their spans, the model
gateway, the prober and the store; only the model is scripted.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontier_qa.reports._summary import summarize
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CaseRecord, SampleRecord
from frontier_qa.target import Case
from tests.cli.runner import run_cli
from tests.factories import REPO
from tests.servers.fake_openai import CHAT_PATH, RESPONSES_PATH, FakeOpenAIServer, ToolScript, ToolTurn, call
from tests.servers.otlp_collector import Event, OtlpCollector

K = 8
AGENTS = REPO / "examples" / "agents"
CASES = AGENTS / "trajectory_cases.yaml"
# framework -> (agent file, object, its capital tool, --set options, the API its model speaks): one
# probe each on the Responses API, chat completions streamed, and the Responses API streamed
FRAMEWORKS = {
    "openai-agents": ("openai_agents_agent.py", "triage_agent", "capital_of", [], RESPONSES_PATH),
    "langgraph": ("langgraph_agent.py", "graph", "capital", ["target.options.stream=true"], CHAT_PATH),
    "pydantic-ai": ("pydantic_ai_agent.py", "agent", "capital", ["target.options.stream=true"], RESPONSES_PATH),
}
# The probe's seed. The Responses API takes no seed, so the server's per-prompt counter splits Kenya's 8
# samples 4 / 4; langgraph's chat calls carry the gateway's seeds, derived from this one, and the script
# picks by their parity: seed 1 splits them 4 / 4 too (seed 0 would split them 6 / 2)
SEED = 1


def script(capital: str) -> ToolScript:
    """The model's tool choice per case, for an agent whose capital lookup is named ``capital``."""
    return ToolScript((
        ToolTurn("capital of Kenya", (call(capital, country="Kenya"), call("search_facts", query="capital of Kenya")),
                 "The capital of Kenya is \\boxed{Nairobi}."),
        ToolTurn("capital of Peru", (call("search_facts", query="capital of Peru"),),
                 "The capital of Peru is \\boxed{Lima}."),
        ToolTurn("river flows through Paris", (call("search_facts", query="river flows through Paris"),),
                 "The \\boxed{Seine} flows through Paris."),
    ))


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, agent_imports: None) -> Iterator[None]:
    for name in [n for n in os.environ if n.startswith("FRONTIER_QA_") or n == "CI"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    monkeypatch.setenv("OPENAI_MODEL", "fake-model")
    yield


def probe(framework: str, policy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
          monkeypatch: pytest.MonkeyPatch) -> tuple[FakeOpenAIServer, dict[str, CaseRecord], list[Event]]:
    """Probe the framework's example agent (a copy: its module is this test's own) with the cases file,
    its verdicts sent to an in-process OTLP collector.
    """
    file, name, capital, options, _ = FRAMEWORKS[framework]
    agent = Path(shutil.copy(AGENTS / file, tmp_path))
    shutil.copy(CASES, tmp_path)
    with FakeOpenAIServer(answers=script(capital)) as server, OtlpCollector() as collector:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        args = ["probe", "--target", f"{framework}:{agent}:{name}", "--curriculum", CASES.name, "--k", str(K),
                "--policy", policy, "--seed", str(SEED), "--progress", "off", "--store", "store", "--out", "out",
                "--otel-endpoint", collector.endpoint, *(f"--set={o}" for o in options)]
        rc, out, err = run_cli(tmp_path, capsys, args)
    assert rc == 1 and "wrong" in out, out + err  # the gate fails on the wrong path (gate.max_wrong_paths: 0)
    return server, CaseStore(tmp_path / "store").latest(), collector.events


def tools_of(sample: SampleRecord) -> list[str]:
    return [s.name for s in sample.steps if s.kind == "tool"]


def passes(sample: SampleRecord, case: Case) -> bool:
    """The sample met the case's expectations and its answer is the reference: checked here, from the
    stored steps, apart from the prober's own ``misses``.
    """
    expect = case.expect
    assert expect is not None and (not expect.tool_sequence or expect.order == "strict")  # as the file's is
    tools = tools_of(sample)
    steps = sum(s.kind in ("tool", "model") for s in sample.steps)
    return (sample.error is None and sample.answer == case.reference
            and all(t in tools for t in expect.tools_used) and not any(t in tools for t in expect.tools_not_used)
            and (not expect.tool_sequence or tools == list(expect.tool_sequence))
            and (expect.max_steps is None or steps <= expect.max_steps))


# fixed k = 8 for each framework; and once with the default, adaptive policy, whose stop gives way to
# pass^k's k (every counted case is sampled 8 times) and which decides Kenya's scattered path in band at 8
@pytest.mark.parametrize(("framework", "policy"), [*((f, "fixed") for f in FRAMEWORKS), ("pydantic-ai", "calibrated")])
def test_scatter_wrong_and_stable_paths_and_pass_hat_k_of_each_frameworks_example_agent(
        framework: str, policy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, clean_env: None) -> None:
    server, records, events = probe(framework, policy, tmp_path, capsys, monkeypatch)
    capital, api = FRAMEWORKS[framework][2], FRAMEWORKS[framework][4]
    assert server.count(api) == server.model_calls() == 3 * K * 2  # a tool call and an answer per sample
    assert set(records) == {"capital-kenya", "capital-peru", "river-paris"}
    for record in records.values():  # every answer agrees with its reference: the findings are the paths'
        assert (record.case_class.value, len(record.samples), record.n_failed) == ("pass", K, 0), record.reason
        assert {s.answer for s in record.samples} == {record.case.reference}

    kenya, peru, seine = records["capital-kenya"], records["capital-peru"], records["river-paris"]
    split = sorted(tuple(tools_of(s)) for s in kenya.samples)
    assert set(split) == {(capital,), ("search_facts",)}, split
    assert kenya.path is not None and kenya.path.finding == "scatter", kenya.path
    assert peru.path is not None and peru.path.finding == "wrong", peru.path
    assert peru.path.majority == "search_facts" and peru.path.p_hat == 1.0
    assert seine.path is not None and seine.path.finding is None and seine.path.p_hat == 1.0, seine.path
    assert split.count((capital,)) == K // 2, f"{split}: see SEED"

    # pass^k at k = 8, recomputed from the stored samples' steps and answers
    exact = {}
    for record in (kenya, peru, seine):
        passed, n = sum(passes(s, record.case) for s in record.samples), len(record.samples)
        exact[record.id] = (passed, n, math.comb(passed, K) / math.comb(n, K))
        assert record.pass_k is not None
        assert (record.pass_k.k, record.pass_k.passed, record.pass_k.n, record.pass_k.value) == (K, *exact[record.id])
    assert exact == {"capital-kenya": (K // 2, K, 0.0), "capital-peru": (0, K, 0.0), "river-paris": (K, K, 1.0)}
    # ... and the run's summary, the one source of every report's numbers
    summary = summarize(records.values())
    assert summary.path_findings == {"scatter": 1, "wrong": 1, "undecided": 0} and summary.paths == 3
    assert summary.pass_k is not None and (summary.pass_k.k, summary.pass_k.cases) == (K, 3)
    assert summary.pass_k.value == pytest.approx(sum(v for _, _, v in exact.values()) / 3)
    assert summary.pass_k.pass_1 == pytest.approx(sum(p / n for p, n, _ in exact.values()) / 3)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert (report["path_findings"], report["pass_k"]["value"]) == (summary.path_findings, summary.pass_k.value)
    assert [c["name"] for c in report["gate"]["checks"] if not c["passed"]] == ["wrong_paths"]

    # the verdicts out: one gen_ai.evaluation.result event per case, in the sample spans' trace
    assert sorted(e.attributes["frontier_qa.case.id"] for e in events) == sorted(records)
    for event in events:
        record = records[event.attributes["frontier_qa.case.id"]]
        assert event.event_name == "gen_ai.evaluation.result"
        assert event.attributes["gen_ai.evaluation.score.label"] == "pass"
        assert event.attributes.get("frontier_qa.path.finding") == record.path.finding  # type: ignore[union-attr]
        assert event.attributes["frontier_qa.pass_k"] == record.pass_k.value  # type: ignore[union-attr]
        assert f"{event.trace_id}-{event.span_id}" == record.samples[0].span
        assert event.attributes["frontier_qa.sample_spans"] == tuple(s.span for s in record.samples)
