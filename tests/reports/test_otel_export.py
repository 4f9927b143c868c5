"""Case verdicts as OpenTelemetry events (issue 32, item 4), received by a real OTLP/HTTP collector.

A real probe (the CLI, in this process) of the calculator ``python:`` agent: each sample runs in an
``invoke_agent`` span whose ids the store keeps, and the run's end sends one
``gen_ai.evaluation.result`` event per case to the in-process collector (:mod:`tests.servers.otlp_collector`),
parented to the majority sample's span and listing every sample's. Off unless asked (the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` alone sends nothing), one masked warning when the endpoint cannot
take the events, and the header's secret in no file and no message.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import socket
from pathlib import Path

import pytest

from frontier_qa.cli import main
from frontier_qa.config import load_config
from frontier_qa.config._build import otel_verdicts
from frontier_qa.errors import ConfigError
from frontier_qa.redaction import redact
from frontier_qa.scoring.bands import AGENT0_BAND
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CaseRecord, PassK, PathCluster, PathRecord
from tests.factories import REPO, probed_record
from tests.secrets.test_sinks import leaks
from tests.servers.otlp_collector import Event, OtlpCollector

pytest.importorskip("opentelemetry.sdk.trace")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

AGENT = f"python:{REPO / 'examples' / 'agents' / 'calculator_agent.py'}:solve"
SECRET = "fqa-otel-header-4b7e19c2"  # in a variable whose name says nothing: masked only because it is a header
CASES = [{"id": "sum-1", "prompt": "What is 2 + 3 * 4?", "reference": "14", "reference_verified": True,
          "topic": "arithmetic"},
         {"id": "sum-2", "prompt": "What is (7 - 2) * 6?", "reference": "30", "reference_verified": True,
          "topic": "arithmetic"},
         {"id": "words-1", "prompt": "Name a colour.", "reference": "red", "topic": "words"}]  # the agent raises


def _probe(root: Path, *flags: str, headers: bool = True) -> int:
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    config = "export:\n  otel:\n    headers:\n      Authorization: Bearer ${FQA_OTEL_HEADER}\n" if headers else ""
    (root / "frontier-qa.yaml").write_text(config + "gate:\n  max_unresolved_share: 1.0\n", encoding="utf-8")
    return main(["probe", "--config", str(root / "frontier-qa.yaml"), "--target", AGENT,
                 "--curriculum", str(root / "cases.jsonl"), "--policy", "fixed", "--k", "3",
                 "--store", str(root / "store"), "--out", str(root / "out"), "--progress", "off", *flags])


def _records(root: Path) -> dict[str, CaseRecord]:
    return CaseStore(root / "store").latest()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("FQA_OTEL_HEADER", SECRET)
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
                 "OTEL_EXPORTER_OTLP_LOGS_HEADERS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_probe_sends_one_event_per_case_parented_to_its_samples_spans(
        tmp_path: Path, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    with OtlpCollector() as collector, caplog.at_level(logging.DEBUG):
        assert _probe(tmp_path, "--otel-endpoint", collector.endpoint) == 0
    records = _records(tmp_path)
    events: dict[str, Event] = {e.attributes["frontier_qa.case.id"]: e for e in collector.events}
    assert len(collector.events) == len(CASES) and set(events) == set(records)
    assert {h.get("authorization") for _, h, _ in collector.requests} == {f"Bearer {SECRET}"}  # the header went
    for case_id, record in records.items():
        event = events[case_id]
        spans = [s.span for s in record.samples]
        assert all(span and len(span) == 49 for span in spans) and len(set(spans)) == 3  # one span per sample
        # the calculator answers alike every time: the majority's first sample is sample 0
        assert f"{event.trace_id}-{event.span_id}" == spans[0]
        assert event.event_name == "gen_ai.evaluation.result"
        attributes = event.attributes
        assert attributes["gen_ai.evaluation.name"] == "frontier-qa.case"
        assert attributes["gen_ai.evaluation.score.label"] == record.case_class.value
        assert attributes["gen_ai.evaluation.score.value"] == pytest.approx(record.p_hat)
        assert attributes["gen_ai.evaluation.explanation"] == record.reason
        assert attributes["frontier_qa.sample_spans"] == tuple(spans)
        assert (attributes["frontier_qa.k"], attributes["frontier_qa.run.id"], attributes["frontier_qa.target.id"]) \
            == (3, record.run_id, record.target_id)
        assert (attributes["frontier_qa.band.low"], attributes["frontier_qa.band.high"]) \
            == (AGENT0_BAND.low, AGENT0_BAND.high)
        assert attributes["frontier_qa.case.topic"] == record.topic
        assert "gen_ai.response.id" not in attributes
        assert event.resource["service.name"] == "frontier-qa"
    assert events["sum-1"].attributes["gen_ai.evaluation.score.label"] == "pass"
    path = records["sum-1"].path  # the agent called its calculator: the path was analysed, and goes along
    assert path is not None and events["sum-1"].attributes["frontier_qa.path.majority"] == path.majority
    assert events["sum-1"].attributes["frontier_qa.path.p_hat"] == pytest.approx(path.p_hat)
    assert events["words-1"].attributes["error.type"] == "unresolved"  # every sample raised: no verdict
    printed = capsys.readouterr()
    assert redact(SECRET) != SECRET  # registered as a secret: masked wherever text is written
    assert leaks(SECRET, tmp_path, texts=(printed.out, printed.err, caplog.text)) == []


def test_off_by_default_the_standard_variables_alone_send_nothing(
        tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    with OtlpCollector() as collector:
        env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        assert _probe(tmp_path, headers=False) == 0
    assert collector.requests == []
    assert all(s.span for r in _records(tmp_path).values() for s in r.samples)  # the spans are kept all the same


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("refusing", [False, True], ids=["unreachable", "refusing"])
def test_an_endpoint_that_cannot_take_the_events_is_one_warning_and_the_run_goes_on(
        tmp_path: Path, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture, refusing: bool) -> None:
    with OtlpCollector(status=401) as collector, caplog.at_level(logging.DEBUG):
        endpoint = collector.endpoint if refusing else f"http://127.0.0.1:{_closed_port()}"
        rc = _probe(tmp_path, "--otel-endpoint", endpoint, "--set", "export.otel.timeout_s=1")
    assert rc == 0
    assert len(_records(tmp_path)) == len(CASES)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1, said  # the SDK's own retry and failure messages held back
    assert f"{endpoint}/v1/logs" in said[0] and "3 verdict event(s)" in said[0]
    if refusing:
        assert "401" in said[0]
    printed = capsys.readouterr()
    assert leaks(SECRET, tmp_path, texts=(printed.out, printed.err, caplog.text)) == []


def test_targets_without_spans_send_events_without_a_parent_and_paths_and_pass_k_go_along(
        env: pytest.MonkeyPatch) -> None:
    from frontier_qa.reports._otel_export import OtelVerdicts

    path = PathRecord(granularity="tools", p_hat=0.5, majority="search", decision="in_band", finding="scatter",
                      clusters=[PathCluster(path="search", count=2), PathCluster(path="lookup", count=2)],
                      reason="two paths")
    record = probed_record("plain-1").model_copy(update={"path": path, "pass_k": PassK(k=4, n=4, passed=4, value=1.0)})
    with OtlpCollector() as collector:
        assert OtelVerdicts(endpoint=collector.endpoint, service_name="ci-probe").send([record], AGENT0_BAND) == 1
    [event] = collector.events
    assert (event.trace_id, event.span_id) == ("", "")
    assert "frontier_qa.sample_spans" not in event.attributes
    assert event.attributes["frontier_qa.path.finding"] == "scatter"
    assert event.attributes["frontier_qa.path.p_hat"] == 0.5
    assert event.attributes["frontier_qa.path.majority"] == "search"
    assert event.attributes["frontier_qa.pass_k"] == 1.0
    assert event.resource["service.name"] == "ci-probe"
    assert event.time_ns == int(record.finished_at.timestamp() * 1e9)


def test_a_header_naming_an_unset_variable_is_a_config_error_at_its_key(
        tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    env.delenv("FQA_OTEL_HEADER")
    (tmp_path / "c.yaml").write_text("export:\n  otel:\n    headers:\n      Authorization: Bearer ${FQA_OTEL_HEADER}\n",
                                     encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        otel_verdicts(load_config(tmp_path / "c.yaml"))
    assert raised.value.key == ("export", "otel", "headers", "Authorization")
    assert "FQA_OTEL_HEADER" in str(raised.value)


def test_the_pytest_plugin_sends_the_events_of_each_run_it_ends(pytester: pytest.Pytester,
                                                                 env: pytest.MonkeyPatch) -> None:
    pytester.makefile(".jsonl", cases="\n".join(json.dumps(c) for c in CASES[:2]))
    with OtlpCollector() as collector:
        pytester.makepyfile(test_agent=f'''
import pytest


@pytest.mark.frontier(target={AGENT!r}, curriculum="cases.jsonl", k=3, sequential=False,
                      set={{"export.otel.endpoint": {collector.endpoint!r}}})
def test_agent(frontier_case):
    frontier_case.assert_no_regression()
''')
        plugin = "frontier_qa.plugins.pytest_plugin"  # -p it unless the installed package registers it already
        registered = any(ep.value == plugin for ep in importlib.metadata.entry_points(group="pytest11"))
        for mode in ("generate", "replay"):  # the probe for new cases (Session.probe), then the items' replay run
            result = pytester.runpytest_subprocess(*([] if registered else ["-p", plugin]), "-p", "no:cacheprovider",
                                                   f"--frontier-mode={mode}")
            assert result.ret == 0, result.stdout.str()[-3000:]
    store = CaseStore(pytester.path / ".frontier-qa")
    runs: dict[str, list[Event]] = {}
    for event in collector.events:
        runs.setdefault(event.attributes["frontier_qa.run.id"], []).append(event)
    assert len(runs) == 2 and all(run.startswith("pytest-") for run in runs)
    for run_id, events in runs.items():  # each run's end sent its latest records, linked to their samples
        latest = store.latest(run_id=run_id)
        assert sorted(e.attributes["frontier_qa.case.id"] for e in events) == sorted(latest)
        for event in events:
            record = latest[event.attributes["frontier_qa.case.id"]]
            assert f"{event.trace_id}-{event.span_id}" == record.samples[0].span


def test_a_samples_span_holds_the_spans_its_agent_starts_and_is_no_step_of_its_own() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from frontier_qa.adapters._python_agent import PythonAgentAdapter
    from frontier_qa.adapters._spans import span_recorder
    from frontier_qa.target import Case, Sampling

    recorder = span_recorder()
    finished = InMemorySpanExporter()
    recorder.provider.add_span_processor(SimpleSpanProcessor(finished))

    async def agent(case: Case, ctx: object) -> str:  # a framework's instrumentation, as it would start its spans
        with recorder.sample(ctx), trace.get_tracer("a-framework").start_as_current_span(  # type: ignore[arg-type]
                "execute_tool add", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add"}):
            return "\\boxed{4}"

    sample = asyncio.run(PythonAgentAdapter(agent, id="python:otel-test").run_sample(Case(id="c-1", prompt="2+2?"),
                                                                                     Sampling(), 0))
    finished.shutdown()
    spans = {s.name: s for s in finished.get_finished_spans() if s.context.trace_id == int(sample.span[:32], 16)}
    outer, inner = spans["invoke_agent python:otel-test"], spans["execute_tool add"]
    assert sample.span == f"{outer.context.trace_id:032x}-{outer.context.span_id:016x}"
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id
    assert outer.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert [c.name for c in sample.tool_calls] == ["add"]  # the tool, once; the sample's own span is no step
    assert not any(m.get("content") == "agent python:otel-test" for m in sample.messages)
