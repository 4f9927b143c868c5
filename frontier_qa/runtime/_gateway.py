"""``ModelGateway``: a framework agent's own model calls, made through frontier-qa's runtime.

A framework agent (openai-agents, LangGraph with langchain-openai, Pydantic AI) calls its model
through the openai SDK, which sends every request with an ``httpx.AsyncClient``. The gateway
patches ``httpx.AsyncClient.send`` once per process (idempotently; Inspect's ``agent_bridge``
patches the openai client the same way). The patch looks at a context variable that
:meth:`ModelGateway.sample` sets for one sample: outside a sample, and for any request that is
not a ``POST`` to a model path (``.../chat/completions``, ``.../responses``, ``.../completions``),
the original ``send`` runs untouched. Inside one, the request goes where it was going (whatever
base URL and key the client was built with; no user code changes) and on its way gets:

* a *call index*: the sample's model calls are numbered 0, 1, 2... in the order they are sent
  (the openai SDK's own retry of a call, ``x-stainless-retry-count > 0``, keeps its index);
* a *seed*: a chat or completions body without ``seed`` gets ``stable_seed`` of the sample's
  seed (:attr:`AgentContext.seed`) and the call index; the Responses API has no seed field. A
  streamed chat or completions request that does not ask for usage gets
  ``stream_options.include_usage`` (the budget needs the tokens; the stream then ends with one
  chunk without choices that carries them, as OpenAI sends it; openai-agents asks only OpenAI);
* the *per-call cache*: the key is the sample's key (:meth:`ManagedTarget.sample_keys`: target id
  and version, the case's messages and tools, sampling, sample index) with the call index and a
  hash of the method, path and body as sent (the SDKs serialise one request the same way every
  run; the body carries the conversation so far, so a replay never answers a different question).
  Headers (``Authorization``) are never part of it. A hit is answered from the cache (no network,
  no budget, no rate limit); a 2xx reply is stored. So a probe killed in the middle of a sample,
  resumed, replays the calls it already paid (those committed: the cache's ``flush_interval_s``)
  and pays only the rest. Calls that an agent makes in parallel are numbered in the order they
  are sent: if that order changes between runs, those calls miss (the key holds the body), never
  get another call's reply;
* the target's *limits*: model calls in flight (``Limits.max_concurrency``, apart from the
  samples' own slots), the RPM/TPM pacer (tokens estimated from the body), ``Limits.timeout_s``
  per call, and retries with the target's backoff for 429 (Retry-After honoured, and every new
  call paused that long), 408/409/425/5xx, timeouts and connection errors. When the retries run
  out, the last error reply goes to the SDK with ``x-should-retry: false`` (it raises as it
  would, without retrying on top); a connection that never answered becomes a 502 saying so;
* the *budget*: each call reserves one call and settles its real tokens (``usage``: chat
  ``prompt_tokens``/``completion_tokens``, Responses ``input_tokens``/``output_tokens``, from the
  final usage chunk or ``response.completed`` of a stream) and its cost (the adapter's ``price``,
  ``(USD per 1M prompt tokens, USD per 1M completion tokens)``, when it has one; else unknown).

The numbers go to one place each: the calls, successes, failures, retries, tokens and replayed
calls to the target's :class:`~frontier_qa.runtime.RuntimeStats` (``cached_calls``); the tokens
and cost of every call, replayed or live, to the sample's ``AgentContext`` (``add_usage``; the
gateway adds no steps: the span recorder records model calls).

*Stopping.* The SDK wraps an exception raised in its transport as a connection error and
retries it, so a stop is also left in ``ctx.stop_error``: a budget that allows no new call
(:class:`~frontier_qa.errors.BudgetExceededError`), a target that failed too often in a row
(:class:`~frontier_qa.errors.TargetUnavailableError`) and a fatal reply (401, 403, other 4xx;
:class:`~frontier_qa.errors.TargetError`, the reply still goes to the SDK). The adapter raises
``ctx.stop_error`` once the agent returns or raises; later calls of the sample raise it at once.

*Streams* (``"stream": true``) are read whole from the server first, so that they can be
cached and their usage counted; the caller then gets the server's response, read: its stream
yields the (decoded) bytes it holds, so the SDK parses the events as usual. A reply made here (a
replay, a masked or a final one) drops ``content-length``, ``content-encoding`` and
``transfer-encoding``, which described the body on the wire. The agent sees its tokens arrive
together, when the reply is complete.

*Secrets.* A stored reply passes the runtime's masking (:mod:`frontier_qa.redaction`), and a
live reply that holds a secret is masked the same way before the agent reads it, so a replay
and the live call agree. A reply is stored as a trajectory-shaped record (``text``: the body,
``messages[0]``: status and content type, ``usage``, ``cost_usd``) in the same SQLite file as
the samples, with the same batched commits.

*Not routed*: synchronous clients (``openai.OpenAI``, ``httpx.Client``), clients that do not
use httpx, and calls made from threads or tasks that do not inherit the sample's context
(a thread pool started by the agent). Their calls go out untouched and uncounted; a synchronous
client's model call inside a sample is named in a warning, once per target.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime
import hashlib
import json
import logging
import re
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from frontier_qa.errors import BudgetExceededError, FrontierQAError, TargetError
from frontier_qa.redaction import mentions, redact
from frontier_qa.runtime._aio import CallTimeout, within
from frontier_qa.runtime._budget import Reservation
from frontier_qa.runtime._cache import record_json, trajectory_from_json
from frontier_qa.runtime._rate_limit import estimate_tokens
from frontier_qa.runtime._retry import classify_status, parse_retry_after, retry_wait_s
from frontier_qa.target import ErrorClass, ErrorKind, Trajectory, Usage, stable_seed

if TYPE_CHECKING:
    from frontier_qa.adapters._agents import AgentContext
    from frontier_qa.runtime._managed import ManagedTarget

log = logging.getLogger(__name__)

MODEL_PATHS = ("/chat/completions", "/responses", "/completions")
_BODY_PATHS = ("/chat/completions", "/completions")  # seeded, usage asked of streams (not Responses)
_STALE_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
_NO_RETRY = ("x-should-retry", "false")  # the openai SDK's header: do not retry this reply
Send = Callable[..., Awaitable[httpx.Response]]


@dataclass
class _Route:
    """One sample's route: the gateway, the sample's context, and how many calls it has sent."""

    gateway: ModelGateway
    ctx: AgentContext
    calls: int = 0
    sample_key: str | None = None

    def call_index(self, request: httpx.Request) -> int:
        """The next call's index; an SDK retry of the last call (``x-stainless-retry-count``) keeps it."""
        if self.calls and request.headers.get("x-stainless-retry-count", "0") not in ("", "0"):
            return self.calls - 1
        self.calls += 1
        return self.calls - 1


_ROUTE: contextvars.ContextVar[_Route | None] = contextvars.ContextVar("frontier_qa_model_route", default=None)


class ModelGateway:
    """Routes the model calls of a :class:`ManagedTarget`'s agent through the target's runtime.

    :class:`~frontier_qa.runtime.ManagedTarget` makes one for an adapter with
    ``routes_model_calls = True`` and sets it as ``adapter.gateway``; the adapter runs each
    sample's agent inside :meth:`sample`.

    Args:
        target: the managed target whose limits, budget, cache and statistics the calls use.
    """

    def __init__(self, target: ManagedTarget) -> None:
        self.target = target
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        _install()

    @contextlib.contextmanager
    def sample(self, ctx: AgentContext) -> Iterator[None]:
        """Route every model call made in this context (and tasks it starts) as ``ctx``'s sample."""
        token = _ROUTE.set(_Route(self, ctx))
        try:
            yield
        finally:
            _ROUTE.reset(token)

    # --- one call --------------------------------------------------------------------------

    async def _handle(self, route: _Route, send: Send, request: httpx.Request,
                      kwargs: dict[str, Any]) -> httpx.Response:
        ctx = route.ctx
        if ctx.stop_error is not None:
            raise ctx.stop_error
        index = route.call_index(request)
        request = await _prepared(request, ctx.seed, index)
        cache = self.target.cache
        key = None
        if cache is not None:
            if route.sample_key is None:
                route.sample_key = self.target.sample_keys(ctx.case, ctx.sampling, [ctx.sample_index])[ctx.sample_index]
            key = _call_key(route.sample_key, index, request)
            hit = cache.get(key)
            if hit is not None:
                self.target._count(cached_calls=1)
                ctx.add_usage(hit.usage.prompt_tokens, hit.usage.completion_tokens, hit.cost_usd)
                status, content_type = hit.messages[0]["status"], hit.messages[0]["content_type"]
                return _made(request, int(status), [("content-type", str(content_type))], (hit.text or "").encode())
        response, usage, cost = await self._live(ctx, send, request, kwargs)
        if response.is_success:
            if key is not None and cache is not None:
                response = self._store(key, response, usage, cost, ctx.sample_index)
            ctx.add_usage(usage.prompt_tokens, usage.completion_tokens, cost)
        return response

    async def _live(self, ctx: AgentContext, send: Send, request: httpx.Request,
                    kwargs: dict[str, Any]) -> tuple[httpx.Response, Usage, float | None]:
        """The call with the target's limits, budget and retries; the last reply when they run out."""
        target, limits = self.target, self.target.limits
        estimated = _estimate(_json(request.content), ctx) if limits.tpm else 0
        retry = 0
        while True:
            try:
                target._check_halted()
            except FrontierQAError as exc:
                ctx.stop_error = exc
                raise
            response, verdict = await self._attempt(ctx, send, request, kwargs, estimated)
            if isinstance(verdict, Reservation):
                usage = _usage(response.content)
                cost = _cost(usage, getattr(target.adapter, "price", None))
                target._call_succeeded(verdict, estimated, usage.total_tokens, cost)
                return response, usage, cost
            verdict = ErrorClass(verdict.kind, redact(verdict.message, target._secrets), verdict.retry_after)
            if target._on_failure(verdict):
                ctx.stop_error = target._unavailable()
                raise ctx.stop_error
            if verdict.kind is ErrorKind.FATAL:
                ctx.stop_error = TargetError(
                    f"target {target.id!r} failed: {verdict.message}",
                    hint="this error is not retried; fix the credentials, model name or request and run again")
                return response, Usage(), None
            if retry >= limits.max_retries:
                log.warning("gave up on a model call of case %r from %s after %d attempts: %s", ctx.case.id,
                            target.id, retry + 1, verdict.message)
                return _final(response), Usage(), None
            retry += 1
            target._count(retries=1)
            if verdict.kind is ErrorKind.RATE_LIMITED and verdict.retry_after is not None:
                target._limiter.pause_for(min(verdict.retry_after, limits.backoff.max_retry_after_s))
            wait = retry_wait_s(limits.backoff, retry, verdict)
            log.info("retrying a model call to %s in %.2f s (%s: %s)", target.id, wait, verdict.kind.value,
                     verdict.message)
            await target._sleep(wait)

    async def _attempt(self, ctx: AgentContext, send: Send, request: httpx.Request, kwargs: dict[str, Any],
                       estimated: int) -> tuple[httpx.Response, ErrorClass | Reservation]:
        """One attempt: a slot, the pacer, a budget reservation, the request. Returns the reply (read
        whole) and the verdict on it if it failed, else (a 2xx reply) the reservation for the caller
        to settle with the reply's usage.
        """
        target = self.target
        async with self._semaphore():
            if target._limiter.active:
                await target._limiter.acquire(estimated)
            try:
                reservation = target.budget.reserve()
            except BudgetExceededError as exc:
                ctx.stop_error = exc
                raise
            target._count(calls=1)
            try:
                response = await within(_fetch(send, request, kwargs), target.limits.timeout_s)
            except asyncio.CancelledError:
                target.budget.settle(reservation)
                target._limiter.refund(estimated)
                raise
            except (httpx.TransportError, CallTimeout) as exc:
                target.budget.settle(reservation)
                target._limiter.refund(estimated)
                what = (f"no answer within Limits.timeout_s = {target.limits.timeout_s} s"
                        if isinstance(exc, CallTimeout) else f"{type(exc).__name__}: {exc}")
                return _unreachable(request, what), ErrorClass(ErrorKind.TRANSIENT, f"connection failed: {what}")
        if response.is_success:
            return response, reservation
        target.budget.settle(reservation)
        target._limiter.refund(estimated)
        return response, _verdict(response)

    def _store(self, key: str, response: httpx.Response, usage: Usage, cost: float | None,
               sample_index: int) -> httpx.Response:
        """Queue a 2xx reply for the cache (masked if it holds a secret); returns what the agent reads."""
        target, cache = self.target, self.target.cache
        assert cache is not None
        try:
            text = response.content.decode("utf-8")
        except UnicodeDecodeError:
            return response  # not text: served, never replayed
        content_type = response.headers.get("content-type", "application/json")
        record = Trajectory(text=text, messages=({"status": response.status_code, "content_type": content_type},),
                            usage=usage, cost_usd=cost, sample_index=sample_index)
        masked = None
        if mentions(text, target._secrets):
            masked = record_json(record, target._secrets)
            record = trajectory_from_json(masked)
            response = _made(response.request, response.status_code, _fresh_headers(response.headers),
                             (record.text or "").encode(), response.elapsed)
        cache.put(key, target.id, record, record=masked, secrets=target._secrets, checked=True)
        return response

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores.setdefault(loop, asyncio.Semaphore(self.target.limits.max_concurrency))
        return semaphore


# --- the patch ------------------------------------------------------------------------------


def _install() -> None:
    """Patch ``httpx.AsyncClient.send`` (once per process): routed while a sample's route is set."""
    original = httpx.AsyncClient.send
    if getattr(original, "_frontier_qa_gateway", False):
        return

    async def send(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        route = _ROUTE.get()
        if route is None or request.method != "POST" or not request.url.path.endswith(MODEL_PATHS):
            return await original(self, request, **kwargs)

        async def forward(req: httpx.Request, **options: Any) -> httpx.Response:
            return await original(self, req, **options)

        return await route.gateway._handle(route, forward, request, kwargs)

    send._frontier_qa_gateway = True  # type: ignore[attr-defined]
    httpx.AsyncClient.send = send  # type: ignore[method-assign]
    original_sync = httpx.Client.send

    def sync_send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        route = _ROUTE.get()
        if route is not None and request.method == "POST" and request.url.path.endswith(MODEL_PATHS):
            _unrouted(route.gateway.target.id)
        return original_sync(self, request, **kwargs)

    httpx.Client.send = sync_send  # type: ignore[method-assign]


_WARNED_SYNC: set[str] = set()


def _unrouted(target_id: str) -> None:
    """Say once per target that a synchronous client made a model call inside a sample: it goes out
    as it is, with no limit, retry, cache or count (``model.invoke`` in a plain ``def`` node).
    """
    if target_id not in _WARNED_SYNC:
        _WARNED_SYNC.add(target_id)
        log.warning("%s: the agent made a model call with a synchronous client; frontier-qa routes async "
                    "clients only, so this call is not rate-limited, retried, cached or counted in calls and "
                    "budgets. Use the async entry points (ainvoke, an async node, AsyncOpenAI)", target_id)


# --- requests and replies -------------------------------------------------------------------


async def _prepared(request: httpx.Request, seed: int | None, index: int) -> httpx.Request:
    """The request, its body completed where a chat or completions body lacks what the runtime needs:
    a ``seed``, and for a stream ``stream_options.include_usage`` (the tokens, for the budget).
    """
    try:
        raw = request.content
    except httpx.RequestNotRead:
        raw = await request.aread()
    if not raw or not request.url.path.endswith(_BODY_PATHS):
        return request
    body = _json(raw)
    if not isinstance(body, dict):
        return request
    changed = False
    if seed is not None and "seed" not in body:
        body["seed"] = stable_seed(f"frontier-qa/model-call/{seed}/{index}")
        changed = True
    options = body.get("stream_options")
    if body.get("stream") and not (isinstance(options, dict) and options.get("include_usage")):
        body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
        changed = True
    if not changed:
        return request
    content = json.dumps(body, ensure_ascii=False).encode()
    headers = httpx.Headers(request.headers)
    headers["content-length"] = str(len(content))
    return httpx.Request(request.method, request.url, headers=headers, content=content, extensions=request.extensions)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def _call_key(sample_key: str, index: int, request: httpx.Request) -> str:
    """The cache key of call ``index`` of a sample: the sample's key, the index, and the request's
    method, path and body as sent (the seeded body; clients serialise one request the same way each run).
    """
    head = f"{sample_key}\0call {index}\0{request.method} {request.url.path}\0".encode()
    return hashlib.sha256(head + request.content).hexdigest()


async def _fetch(send: Send, request: httpx.Request, kwargs: Mapping[str, Any]) -> httpx.Response:
    """Send ``request`` upstream and read the reply whole (a stream too). The response is handed on as
    it is: once read, its stream yields the decoded bytes it holds, whatever ``stream`` the caller asked.
    """
    response = await send(request, **{**kwargs, "stream": True})
    try:
        await response.aread()
    finally:
        await response.aclose()
    return response


def _made(request: httpx.Request, status: int, headers: list[tuple[str, str]], content: bytes,
          elapsed: datetime.timedelta = datetime.timedelta(0)) -> httpx.Response:
    """A response made here (a replay, a masked or final reply) whose stream yields ``content``."""
    response = httpx.Response(status, headers=headers, content=content, request=request)
    response.elapsed = elapsed
    return response


def _fresh_headers(headers: httpx.Headers) -> list[tuple[str, str]]:
    """``headers`` without those that describe the body as it came over the wire (length, encoding)."""
    return [(k, v) for k, v in headers.items() if k.lower() not in _STALE_HEADERS]


def _final(response: httpx.Response) -> httpx.Response:
    """``response`` marked so that the openai SDK raises it instead of retrying on top of the gateway."""
    headers = [h for h in _fresh_headers(response.headers) if h[0].lower() != _NO_RETRY[0]] + [_NO_RETRY]
    return _made(response.request, response.status_code, headers, response.content, response.elapsed)


def _unreachable(request: httpx.Request, what: str) -> httpx.Response:
    """A 502 in OpenAI's error shape for a call that got no reply (what the SDK raises once retries end)."""
    message = f"frontier-qa: no reply from {request.url.host}: {what}"
    body = json.dumps({"error": {"message": message, "type": "server_error", "code": "no_reply"}}).encode()
    return _made(request, 502, [("content-type", "application/json")], body)


def _verdict(response: httpx.Response) -> ErrorClass:
    """How to treat an error reply: 429 rate limited (with Retry-After), 408/409/425/5xx transient, else fatal."""
    status = response.status_code
    kind = classify_status(status) or ErrorKind.FATAL
    try:
        detail = json.loads(response.content)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        detail = response.content[:200].decode("utf-8", "replace")
    retry_after = parse_retry_after(response.headers) if kind is ErrorKind.RATE_LIMITED else None
    return ErrorClass(kind, f"HTTP {status}: {detail}", retry_after)


# a usage field: the quotes and colon keep it from matching inside a string (escaped quotes there)
_TOKENS = re.compile(rb'"(prompt_tokens|completion_tokens|input_tokens|output_tokens)"\s*:\s*(\d+)')


def _usage(content: bytes) -> Usage:
    """Tokens a reply reports: the last ``usage`` in it (a JSON body's; a stream's usage chunk or
    ``response.completed``, which come last). A regular expression, not a parse: the SDK parses it.
    """
    found = {name: int(value) for name, value in _TOKENS.findall(content)}  # later ones win
    prompt = found.get(b"prompt_tokens", found.get(b"input_tokens", 0))
    completion = found.get(b"completion_tokens", found.get(b"output_tokens", 0))
    return Usage(prompt, completion)


def _cost(usage: Usage, price: Any) -> float | None:
    if not (isinstance(price, tuple) and len(price) == 2):
        return None
    return (usage.prompt_tokens * float(price[0]) + usage.completion_tokens * float(price[1])) / 1e6


def _estimate(body: Any, ctx: AgentContext) -> int:
    """A TPM estimate from the request body (chat ``messages`` or Responses ``input``)."""
    if not isinstance(body, dict):
        return estimate_tokens(ctx.case.messages, 1, ctx.sampling.max_tokens)
    items = body.get("messages", body.get("input", body.get("prompt", "")))
    messages = [{"content": items}] if isinstance(items, str) else [
        m if isinstance(m, dict) else {"content": m} for m in items or ()]
    limit = body.get("max_completion_tokens") or body.get("max_tokens") or body.get("max_output_tokens")
    return estimate_tokens(messages, int(body.get("n") or 1), int(limit or ctx.sampling.max_tokens),
                           body.get("tools") or ())


__all__ = ["MODEL_PATHS", "ModelGateway"]
