"""An OTLP/HTTP collector for tests: a real HTTP server on 127.0.0.1 that takes ``POST /v1/logs``.

Each request body is decoded as the protocol's ``ExportLogsServiceRequest`` (``opentelemetry-proto``)
and kept, with its headers, for the test to read as :class:`Event` values. ``status`` makes it refuse
every request with that HTTP status instead (an endpoint that rejects the events).
"""

from __future__ import annotations

import gzip
import threading
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Event:
    """One log record the collector received."""

    event_name: str
    attributes: dict[str, Any]
    trace_id: str  # hex; "" when the record has none
    span_id: str
    time_ns: int
    resource: dict[str, Any]
    scope: str


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in any_value.array_value.values)
    return None if kind is None else getattr(any_value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def decode(body: bytes) -> list[Event]:
    """The log records of one ``ExportLogsServiceRequest``."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    return [Event(record.event_name, _attributes(record.attributes), record.trace_id.hex(), record.span_id.hex(),
                  record.time_unix_nano, _attributes(resource_logs.resource.attributes), scope_logs.scope.name)
            for resource_logs in request.resource_logs for scope_logs in resource_logs.scope_logs
            for record in scope_logs.log_records]


class _Handler(BaseHTTPRequestHandler):
    collector: OtlpCollector

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        body = gzip.decompress(body) if encoding == "gzip" else zlib.decompress(body) if encoding == "deflate" else body
        self.collector.took(self.path, dict(self.headers.items()), body)
        status = self.collector.status if self.path == "/v1/logs" else 404
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Quiet: the test reads what arrived."""


class OtlpCollector:
    """``with OtlpCollector() as collector:`` then ``collector.endpoint`` and ``collector.events``."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def took(self, path: str, headers: dict[str, str], body: bytes) -> None:
        with self._lock:
            self.requests.append((path, headers, body))

    @property
    def events(self) -> list[Event]:
        """Every log record received, in arrival order."""
        with self._lock:
            return [event for path, _, body in self.requests if path == "/v1/logs" for event in decode(body)]

    @property
    def endpoint(self) -> str:
        """The base URL (the exporter adds ``/v1/logs``)."""
        assert self._httpd is not None, "collector not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> OtlpCollector:
        handler = type("Handler", (_Handler,), {"collector": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
