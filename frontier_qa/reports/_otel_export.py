"""Case verdicts as OpenTelemetry events (issue 32, item 4): the team's tracing stack sees what a run found.

One ``gen_ai.evaluation.result`` event (the GenAI semantic conventions, development status) per case
of the run, sent to any OTLP/HTTP endpoint when the run ends; off unless the config's ``export.otel``
(or the Python API's ``ProbeSettings(verdicts=OtelVerdicts(...))``) asks for it: the standard
``OTEL_EXPORTER_OTLP_*`` variables never turn it on by themselves.

* **What an event says**: ``gen_ai.evaluation.name`` ``frontier-qa.case``, ``score.value`` p̂,
  ``score.label`` the case's class (``frontier``, ``failure``, ``pass``...), ``explanation`` the
  reason; then frontier-qa's own attributes (:func:`verdict_attributes`): the case, its topic, the
  band, k, the path finding and the path's p̂ and majority, pass^k, the target and the run.
* **Linked to the samples**: an in-process agent's samples each run in an ``invoke_agent`` span
  (:func:`frontier_qa.adapters._spans.agent_span`), stored as ``SampleRecord.span``. The event
  carries the trace context of the majority answer's first sample and lists every sample's span in
  ``frontier_qa.sample_spans``. Targets without spans (HTTP, plain models, cached samples) give events
  without a parent. ``gen_ai.response.id`` is left out: no record keeps the model's response ids.
* **Redacted like every other sink**: every text attribute goes through
  :func:`~frontier_qa.redaction.redact`, and the headers' values (``${VAR}`` secrets) are registered
  as secrets, so no message, log or report shows them.
* **Never fails the run**: an endpoint that cannot be reached, or refuses the events, gives one
  warning naming it; the SDK's own retry messages are held back while the events go out.

The OpenTelemetry SDK is imported only when events are sent (the ``otel`` extra).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frontier_qa._optional import require
from frontier_qa.redaction import redact, register_secrets, secret_values
from frontier_qa.scoring.bands import Band
from frontier_qa.store._records import CaseClass, CaseRecord

if TYPE_CHECKING:
    from opentelemetry.context import Context

log = logging.getLogger(__name__)

EVENT = "gen_ai.evaluation.result"
EVALUATION = "frontier-qa.case"
"""``gen_ai.evaluation.name`` of every event: one case's verdict."""
LOGS_PATH = "/v1/logs"
DEFAULT_ENDPOINT = "http://localhost:4318"  # the OTLP/HTTP default, as the SDK's
BATCH = 512  # events per request: a large run's verdicts in a few requests, none near the 64 MiB cap
_SDK_LOGGERS = ("opentelemetry.exporter.otlp.proto.http._log_exporter", "opentelemetry.exporter.otlp.common.http")

Attributes = dict[str, str | bool | int | float | tuple[str, ...]]


def sample_spans(record: CaseRecord) -> tuple[str, ...]:
    """The spans the case's samples ran in (``"<trace id>-<span id>"``), in sample order."""
    return tuple(s.span for s in record.samples if s.span)


def parent_span(record: CaseRecord) -> str | None:
    """The span the case's event is parented to: the first sample that gave the majority answer,
    else the first sample with a span; ``None`` when no sample ran in one.
    """
    spanned = [s for s in record.samples if s.span]
    majority = next((s for s in spanned if record.majority is not None and s.answer == record.majority), None)
    chosen = majority or next(iter(spanned), None)
    return None if chosen is None else chosen.span


def verdict_attributes(record: CaseRecord, band: Band, secrets: Sequence[str] = ()) -> Attributes:
    """The event's attributes for one case (text redacted); keys without a value are left out."""
    values: dict[str, Any] = {
        "gen_ai.evaluation.name": EVALUATION,
        "gen_ai.evaluation.score.value": record.p_hat,
        "gen_ai.evaluation.score.label": record.case_class.value,
        "gen_ai.evaluation.explanation": record.reason,
        # the semconv's "evaluation could not be done": sampling stopped before a decision
        "error.type": "unresolved" if record.case_class is CaseClass.UNRESOLVED else None,
        "frontier_qa.case.id": record.id,
        "frontier_qa.case.topic": record.topic,
        "frontier_qa.band.low": band.low,
        "frontier_qa.band.high": band.high,
        "frontier_qa.k": record.k,
        "frontier_qa.target.id": record.target_id,
        "frontier_qa.target.version": record.target_version,
        "frontier_qa.run.id": record.run_id,
        "frontier_qa.sample_spans": sample_spans(record) or None,
    }
    interval = record.interval
    if interval is not None:
        values.update({"frontier_qa.interval.low": interval.low, "frontier_qa.interval.high": interval.high})
    if record.path is not None:
        path = record.path
        values.update({"frontier_qa.path.finding": path.finding, "frontier_qa.path.p_hat": path.p_hat,
                       "frontier_qa.path.majority": path.majority, "frontier_qa.path.reason": path.reason})
    if record.pass_k is not None:
        values.update({"frontier_qa.pass_k": record.pass_k.value, "frontier_qa.pass_k.k": record.pass_k.k})
    if record.verdict is not None:
        values["frontier_qa.replay.verdict"] = record.verdict.verdict
    return {key: redact(value, secrets) if isinstance(value, str) else value
            for key, value in values.items() if value not in (None, "")}


def logs_url(endpoint: str | None) -> str:
    """The URL the events are posted to: ``endpoint`` (a base URL: ``/v1/logs`` is added), else the
    standard variables' (``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` as is, ``OTEL_EXPORTER_OTLP_ENDPOINT``
    plus the path), else the OTLP default. They say where, never whether.
    """
    if endpoint is None:
        full = os.environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")
        if full:
            return full
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT
    base = endpoint.rstrip("/")
    return base if base.endswith(LOGS_PATH) else base + LOGS_PATH


@dataclass(frozen=True)
class OtelVerdicts:
    """Sends each run's case verdicts to an OTLP/HTTP endpoint as the run ends (module docstring).

    Attributes:
        endpoint: the collector's base URL (``http://127.0.0.1:4318``); ``None``: the standard
            variables' (:func:`logs_url`).
        headers: HTTP headers sent with the events, as ``(name, value)`` pairs (resolved values:
            registered as secrets, masked wherever text is written).
        service_name: the ``service.name`` of the events' resource.
        timeout_s: seconds sending may take, retries included.

    Raises:
        MissingExtraError: ``opentelemetry-exporter-otlp-proto-http`` is not installed (made before
            the run, not at its end).
    """

    endpoint: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    service_name: str = "frontier-qa"
    timeout_s: float = 10.0
    url: str = field(init=False)

    def __post_init__(self) -> None:
        require("opentelemetry.exporter.otlp.proto.http._log_exporter", extra="otel",
                purpose="Sending verdicts to OpenTelemetry", package="opentelemetry-exporter-otlp-proto-http")
        register_secrets(self.secrets())
        object.__setattr__(self, "url", logs_url(self.endpoint))

    def secrets(self) -> tuple[str, ...]:
        """The headers' secret values: the config's, and the standard variables' the exporter adds."""
        from opentelemetry.util.re import parse_env_headers

        env = os.environ.get("OTEL_EXPORTER_OTLP_LOGS_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")
        headers = {**parse_env_headers(env, liberal=True), **dict(self.headers)}
        return secret_values({"headers": headers})

    def send(self, records: Sequence[CaseRecord], band: Band) -> int:
        """Send one event per record; how many the endpoint took (0 after the one warning). Never raises."""
        if not records:
            return 0
        secrets = self.secrets()
        said = _Held()
        try:
            with said:
                sent = _export(self, [_event(r, band, secrets) for r in records])
            failed = None if sent else said.first or "it did not take them"
        except Exception as exc:  # noqa: BLE001 - a sink never fails the run
            failed = f"{type(exc).__name__}: {exc}"
        if failed is None:
            return len(records)
        log.warning(redact(f"could not send {len(records)} verdict event(s) to the OpenTelemetry endpoint {self.url} "
                           f"({failed}); the run's results are in the store and the reports as always", secrets))
        return 0


@dataclass(frozen=True)
class _Event:
    attributes: Attributes
    parent: str | None
    time_ns: int


def _event(record: CaseRecord, band: Band, secrets: Sequence[str]) -> _Event:
    return _Event(verdict_attributes(record, band, secrets), parent_span(record),
                  int(record.finished_at.timestamp() * 1e9))


def _context(parent: str | None) -> Context:
    """A context holding the parent span (remote: it ended in another provider), or an invalid one:
    an event without a parent, whatever span is current where the run ends.
    """
    from opentelemetry import trace

    if parent is None:
        return trace.set_span_in_context(trace.INVALID_SPAN)
    trace_id, _, span_id = parent.partition("-")
    span = trace.NonRecordingSpan(trace.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True,
                                                    trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
    return trace.set_span_in_context(span)


def _export(sink: OtelVerdicts, events: Sequence[_Event]) -> bool:
    """Emit the events on a provider of their own and post them in batches; whether all went."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import (
        InMemoryLogRecordExporter,
        LogRecordExportResult,
        SimpleLogRecordProcessor,
    )
    from opentelemetry.sdk.resources import Resource

    from frontier_qa import __version__

    gathered = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": sink.service_name}), shutdown_on_exit=False)
    provider.add_log_record_processor(SimpleLogRecordProcessor(gathered))
    logger = provider.get_logger("frontier_qa", __version__)
    for event in events:
        logger.emit(timestamp=event.time_ns, context=_context(event.parent), attributes=event.attributes,
                    event_name=EVENT)
    batch = list(gathered.get_finished_logs())
    provider.shutdown()
    exporter = OTLPLogExporter(endpoint=sink.url, headers=dict(sink.headers), timeout=sink.timeout_s)
    try:
        for start in range(0, len(batch), BATCH):
            if exporter.export(batch[start:start + BATCH]) is not LogRecordExportResult.SUCCESS:
                return False
    finally:
        exporter.shutdown()
    return True


class _Held(logging.Filter):
    """While sending: the exporter's own retry and failure messages held back (the sink says it
    once, masked), the first one kept as the reason (a retry's says what went wrong, the last only
    that retrying ended).
    """

    def __init__(self) -> None:
        super().__init__()
        self.first: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.first is None:
            self.first = record.getMessage().split(", retrying in ")[0]
        return False

    def __enter__(self) -> None:
        for name in _SDK_LOGGERS:
            logging.getLogger(name).addFilter(self)

    def __exit__(self, *exc: object) -> None:
        for name in _SDK_LOGGERS:
            logging.getLogger(name).removeFilter(self)


__all__ = ["EVALUATION", "EVENT", "OtelVerdicts", "logs_url", "parent_span", "sample_spans", "verdict_attributes"]
