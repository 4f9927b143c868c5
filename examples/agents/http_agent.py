"""An agent behind frontier-qa's HTTP JSON contract, in plain stdlib Python.

It shows what an agent written in any language must do (the contract is in the docstring
of ``frontier_qa.adapters.workflow``): read the POSTed JSON, answer with
``{"answer": ..., "tool_calls": [...], "usage": {...}}``. Faults can be injected for tests.

Run it and probe it::

    python examples/agents/http_agent.py --port 9000
    frontier-qa probe --target http://127.0.0.1:9000/agent ...

In tests: ``with AgentServer(answer_fn, script=["429:0.1", "500"]) as server: server.url``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], dict[str, Any]]


def arithmetic_reply(request: dict[str, Any]) -> dict[str, Any]:
    """A tiny agent: evaluates the arithmetic in the prompt with one recorded tool call."""
    expression = "".join(ch for ch in request["prompt"] if ch in "0123456789+-*/(). ").strip(" .")
    try:
        value = eval(expression, {"__builtins__": {}}, {})  # noqa: S307 - digits and operators only
    except Exception as exc:  # noqa: BLE001 - the agent reports its own failure per the contract
        return {"error": f"cannot evaluate {expression!r}: {exc}"}
    words = sum(len(str(m.get("content", "")).split()) for m in request["messages"])
    return {
        "answer": f"\\boxed{{{value}}}",
        "tool_calls": [{"name": "eval", "arguments": {"expression": expression}, "result": str(value)}],
        "usage": {"prompt_tokens": words, "completion_tokens": 3},
        "cost_usd": 0.001,
    }


class AgentServer:
    """A real HTTP agent on 127.0.0.1 (free port), in a thread; stops when the block ends.

    Args:
        reply: request JSON -> reply JSON (the agent).
        script: faults for the first requests, in arrival order: ``"ok"``, ``"429"``
            (Retry-After 1 s) / ``"429:S"`` (Retry-After S s) / ``"429:-"`` (none),
            ``"500"``, ``"503"``, ``"400"``, ``"401"`` (echoes the Authorization header,
            like a careless gateway), ``"malformed"`` (truncated JSON), ``"wrong"``
            (valid JSON, wrong shape), ``"hang:S"`` (wait S s, then answer).
        batch: reply to ``n`` with ``{"samples": [...]}``.
    """

    def __init__(self, reply: Reply = arithmetic_reply, *, script: Sequence[str] = (), batch: bool = False,
                 port: int = 0, path: str = "/agent") -> None:
        self.reply = reply
        self.script = list(script)
        self.batch = batch
        self.path = path
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="agent-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.path}"

    def __enter__(self) -> AgentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_fault(self) -> str:
        with self._lock:
            return self.script.pop(0) if self.script else "ok"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # headers and body leave in one packet (no delayed-ACK stall)
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(request)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path != server.path:
                    return self._send(404, b'{"error": "no such agent"}')
                fault = server._next_fault()
                kind, _, arg = fault.partition(":")
                if kind == "429":
                    headers = {} if arg == "-" else {"Retry-After": arg or "1"}
                    return self._send(429, b'{"error": "slow down"}', headers)
                if kind in ("500", "503", "400"):
                    return self._send(int(kind), json.dumps({"error": f"injected {kind}"}).encode())
                if kind == "401":
                    echoed = self.headers.get("Authorization", "")
                    return self._send(401, json.dumps({"error": f"bad credentials: {echoed}"}).encode())
                if kind == "malformed":
                    return self._send(200, b'{"answer": "\\\\boxed{4')
                if kind == "wrong":
                    return self._send(200, b'{"result": "no answer field"}')
                if kind == "hang":
                    time.sleep(float(arg or 30))
                if server.batch:
                    first, n = request["sample_index"], request.get("n", 1)
                    samples = [server.reply({**request, "sample_index": first + j, "n": 1}) for j in range(n)]
                    return self._send(200, json.dumps({"samples": samples}).encode())
                return self._send(200, json.dumps(server.reply(request)).encode())

        return Handler


def main() -> None:
    """Serve the example agent on ``--port`` until Ctrl-C."""
    parser = argparse.ArgumentParser(description="Serve the example arithmetic agent over HTTP.")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    with AgentServer(port=args.port) as server:
        print(f"agent listening on {server.url} (Ctrl-C to stop)")
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
