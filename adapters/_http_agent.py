"""Agents behind an HTTP JSON endpoint as targets (``http://host:port/path``, ``https://…``).

The request and reply contract is in :mod:`frontier_qa.adapters.workflow`'s docstring.
"""

from __future__ import annotations

import asyncio
import re
import time
import weakref
from collections.abc import Mapping
from typing import Any

from frontier_qa.adapters._agents import (
    AgentContext,
    to_trajectory,
)
from frontier_qa.errors import ConfigError
from frontier_qa.runtime._aio import gather_or_cancel
from frontier_qa.runtime._env import UnsetVariableError, expand_env
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, Trajectory

# ----- HTTP agents --------------------------------------------------------------------------


class AgentHTTPError(Exception):
    """An HTTP agent answered with an error status (message already free of header secrets)."""

    def __init__(self, message: str, status: int, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status_code = status
        self.retry_after = retry_after


class MalformedReplyError(Exception):
    """An HTTP agent answered 200 with a body that is not the JSON contract."""


def _expand(value: str, header: str) -> str:
    try:
        return expand_env(value)
    except UnsetVariableError as err:
        raise ConfigError(f"header {header!r} {err.message}", hint=err.hint) from None


class HttpAgentAdapter(Adapter):
    """An agent behind an HTTP JSON endpoint (contract in :mod:`frontier_qa.adapters.workflow`).

    Args:
        url: the endpoint that receives the POST.
        headers: extra request headers (auth); values may be ``${ENV_VAR}``. Never logged.
        timeout_s: seconds for one request (connect + read).
        batch: ask for all ``n`` samples in one request and read ``{"samples": [...]}``.
        max_n: samples per request when ``batch`` (default 16; 1 otherwise).
        id: the target id (default ``http:<url>``); part of every cache key.
        version: the agent's version (``target.version`` in a config): part of every cache
            key and record, so answers of another version are never replayed from the cache.
    """

    supports_prefill = False

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 300.0,
        batch: bool = False,
        max_n: int | None = None,
        id: str | None = None,  # noqa: A002 - matches Adapter.id
        version: str | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"agent URL {url!r} must start with http:// or https://")
        self.url = url
        self.headers = {str(k): _expand(str(v), str(k)) for k, v in (headers or {}).items()}
        self.secrets = tuple(v for v in self.headers.values() if len(v) >= 4)
        self.timeout_s = float(timeout_s)
        self.batch = bool(batch)
        self.max_n = int(max_n or (16 if batch else 1)) if batch else 1
        self._version = version
        shown = re.sub(r"//[^/@]*@", "//", url)  # never put user:password@ into ids
        self.id = id or f"http:{shown}"
        # one httpx.AsyncClient per event loop: a client's connections belong to the loop that made them
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        shown = {k: "***" for k in self.headers}
        return f"HttpAgentAdapter({self.id!r}, headers={shown}, timeout_s={self.timeout_s}, batch={self.batch})"

    def version(self) -> str | None:
        return self._version

    def _client(self) -> Any:
        import httpx

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(timeout=self.timeout_s, headers=self.headers, follow_redirects=False)
            self._clients[loop] = client
        return client

    def request_body(self, case: Case, sampling: Sampling, index: int, n: int) -> dict[str, Any]:
        """The JSON object POSTed for samples ``index..index+n-1`` (the documented contract)."""
        return {
            "case_id": case.id,
            "prompt": case.prompt,
            "system": case.system,
            "messages": case.messages,
            "topic": case.topic,
            "answer_format": case.answer_format,
            "tools": list(case.tools),
            "sample_index": index,
            "n": n,
            "seed": sampling.seed_for(case, index),
            "sampling": sampling.as_dict(),
            "metadata": dict(case.metadata),
        }

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        """One request per sample (concurrently), or one for all ``n`` with ``batch``."""
        if self.batch:
            return await self._post(case, sampling, start, n)
        parts = await gather_or_cancel([self._post(case, sampling, i, 1) for i in range(start, start + n)])
        return [t for part in parts for t in part]

    async def _post(self, case: Case, sampling: Sampling, index: int, n: int) -> list[Trajectory]:
        from frontier_qa.redaction import redact
        from frontier_qa.runtime._retry import parse_retry_after

        started = time.monotonic()
        response = await self._client().post(self.url, json=self.request_body(case, sampling, index, n))
        latency = time.monotonic() - started
        if response.status_code != 200:
            body = redact(response.text[:300], self.secrets)
            retry_after = parse_retry_after(response.headers) if response.status_code == 429 else None
            status = response.status_code
            raise AgentHTTPError(f"HTTP {status} from {self.id}: {body}", status, retry_after)
        try:
            reply = response.json()
        except ValueError as exc:
            raise MalformedReplyError(f"{self.id} answered with invalid JSON: {response.text[:200]!r}") from exc
        replies = reply.get("samples") if self.batch and isinstance(reply, Mapping) else [reply]
        if not isinstance(replies, list) or not replies or not all(isinstance(r, Mapping) for r in replies):
            raise MalformedReplyError(f"{self.id} answered {str(reply)[:200]!r}, not the agent JSON contract")
        out = []
        for j, item in enumerate(replies[:n]):
            ctx = AgentContext(case, index + j, sampling)
            try:
                out.append(to_trajectory(item, ctx, latency))
            except (TypeError, ValueError) as exc:
                raise MalformedReplyError(f"{self.id} sample {index + j}: {exc}") from exc
        return out

    def classify(self, exc: BaseException) -> ErrorClass:
        from frontier_qa.redaction import redact
        from frontier_qa.runtime._retry import classify_status

        message = redact(f"{type(exc).__name__}: {exc}", self.secrets)
        if isinstance(exc, AgentHTTPError):
            kind = classify_status(exc.status_code) or ErrorKind.FATAL
            return ErrorClass(kind, message, exc.retry_after)
        if isinstance(exc, MalformedReplyError):
            return ErrorClass(ErrorKind.TRANSIENT, message)
        import httpx

        if isinstance(exc, (httpx.TimeoutException, httpx.TransportError, TimeoutError, ConnectionError)):
            return ErrorClass(ErrorKind.TRANSIENT, message)
        return ErrorClass(ErrorKind.FATAL, message)

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None and not client.is_closed:
            await client.aclose()


def create_http(url: str, **options: Any) -> HttpAgentAdapter:
    """Factory for ``http://…`` / ``https://…`` specs; ``options`` go to :class:`HttpAgentAdapter`."""
    try:
        return HttpAgentAdapter(url, **options)
    except TypeError as exc:
        raise ConfigError(f"bad option for an HTTP agent: {exc}",
                          hint="known: headers, timeout_s, batch, max_n, id, version") from exc
