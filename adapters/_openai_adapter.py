"""Targets behind an OpenAI-compatible chat API (vLLM, llama.cpp server, gateways, OpenAI).

Spec: ``openai:MODEL@BASE_URL`` (e.g. ``openai:Qwen/Qwen3-4B@http://127.0.0.1:8000/v1``) or
``openai:MODEL`` (base URL from ``OPENAI_BASE_URL``, else api.openai.com). The key comes
from the ``api_key`` option or ``OPENAI_API_KEY``; a local server without one gets vLLM's
placeholder ``"EMPTY"``.

The adapter makes one request per ``generate`` with the client's own retries off
(``max_retries=0``): the runtime retries. It asks for ``n`` samples in one request unless
``supports_n=False``; a server that rejects ``n`` (400) or returns fewer choices is switched
to one sample per request automatically. With ``prefill=True`` a case ending in a partial
assistant message is continued through vLLM's ``continue_final_message`` (the trajectory's
``text`` is the continuation; its last message is the whole assistant turn).

The response helpers here (:func:`trajectories_from_response`, :func:`classify_openai_error`)
also serve the litellm adapter, whose exceptions subclass the openai ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from frontier_qa._optional import require
from frontier_qa.errors import ConfigError
from frontier_qa.redaction import redact, secret_values
from frontier_qa.runtime._retry import classify_status, parse_retry_after
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, ToolCall, Trajectory, Usage

OPENAI_URL = "https://api.openai.com/v1"


class MalformedResponseError(Exception):
    """The server answered 200 with something that is not a chat completion."""


class NUnsupportedError(Exception):
    """The server rejected ``n > 1``; the adapter now asks one sample per request."""


def split_spec(rest: str) -> tuple[str, str | None]:
    """``"MODEL@http://h:p/v1"`` → ``("MODEL", "http://h:p/v1")``; ``"MODEL"`` → ``("MODEL", None)``."""
    match = re.match(r"^(?P<model>.+?)@(?P<url>https?://.+)$", rest.strip())
    if match:
        return match["model"], match["url"].rstrip("/")
    if not rest.strip():
        raise ConfigError("openai target spec has no model", hint="write it as openai:MODEL@BASE_URL or openai:MODEL")
    return rest.strip(), None


def split_usage(prompt_tokens: int, completion_tokens: int, parts: int) -> list[Usage]:
    """Share one response's usage among its ``parts`` samples (remainders to the first ones),
    so per-sample usages add up exactly to what the server reported.
    """
    parts = max(parts, 1)

    def share(total: int) -> list[int]:
        base, extra = divmod(max(total, 0), parts)
        return [base + (1 if i < extra else 0) for i in range(parts)]

    return [Usage(p, c) for p, c in zip(share(prompt_tokens), share(completion_tokens), strict=True)]


def _tool_calls(message: Any) -> tuple[ToolCall, ...]:
    calls = getattr(message, "tool_calls", None) or ()
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else getattr(call, "function", None)
        if isinstance(function, Mapping):
            name, arguments = function.get("name"), function.get("arguments")
        else:
            name, arguments = getattr(function, "name", None), getattr(function, "arguments", None)
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        # proposed, not executed: only executed calls count towards Agent0's N_tool
        out.append(ToolCall(name=str(name or ""), arguments=arguments, result=None))
    return tuple(out)


def _assistant_message(text: str | None, calls: tuple[ToolCall, ...]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    return message


def trajectories_from_response(
    case: Case,
    response: Any,
    *,
    start: int,
    cost_usd: float | None = None,
    price: tuple[float, float] | None = None,
    continued: bool = False,
) -> list[Trajectory]:
    """Trajectories from a chat-completion object (openai ``ChatCompletion`` or litellm
    ``ModelResponse``), one per choice in order.

    Args:
        case: the case asked (its messages start each trajectory).
        response: the parsed response.
        start: sample index of the first choice.
        cost_usd: the whole response's cost, split evenly among choices.
        price: ``(usd per 1M prompt tokens, usd per 1M completion tokens)``, used when
            ``cost_usd`` is ``None``.
        continued: the last case message was a partial assistant turn that was continued.

    Raises:
        MalformedResponseError: no choices, or a choice without a message.
    """
    choices = getattr(response, "choices", None)
    if not isinstance(choices, Sequence) or isinstance(choices, (str, bytes)) or not choices:
        shown = response if isinstance(response, str) else type(response).__name__
        raise MalformedResponseError(f"the server's answer is not a chat completion (got {str(shown)[:200]!r})")
    usage = getattr(response, "usage", None)
    shares = split_usage(
        int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0), len(choices)
    )
    out = []
    for j, (choice, share) in enumerate(zip(choices, shares, strict=True)):
        message = getattr(choice, "message", None)
        if message is None:
            raise MalformedResponseError(f"choice {j} of the server's answer has no message")
        text = getattr(message, "content", None)
        calls = _tool_calls(message)
        messages = [*case.messages]
        if continued:
            prefix = messages.pop()
            merged = dict(prefix, content=f"{prefix.get('content') or ''}{text or ''}")
            messages.append(merged)
        else:
            messages.append(_assistant_message(text, calls))
        if cost_usd is not None:
            cost: float | None = cost_usd / len(choices)
        elif price is not None:
            cost = (share.prompt_tokens * price[0] + share.completion_tokens * price[1]) / 1e6
        else:
            cost = None
        out.append(
            Trajectory(
                text=text if text is not None else ("" if calls else None),
                messages=tuple(messages),
                tool_calls=calls,
                usage=share,
                cost_usd=cost,
                sample_index=start + j,
                error=None if (text is not None or calls) else "the model returned no content",
            )
        )
    return out


def _status_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", None) or exc)


_HINTS = {
    401: "check the API key (the api_key option or the provider's key variable, e.g. OPENAI_API_KEY)",
    403: "the key has no access to this model or endpoint",
    404: "check the model name and the base URL (it usually ends in /v1)",
}


def classify_openai_error(exc: BaseException, secrets: Sequence[str] = ()) -> ErrorClass:
    """Verdict for an exception of the openai client (or litellm's subclasses).

    429 → rate limited (with Retry-After when sent; ``insufficient_quota`` → fatal);
    timeouts, connection errors, 408/409/425/5xx, malformed bodies → transient;
    other 4xx → fatal. Messages are redacted with ``secrets``.
    """
    openai = require("openai", extra="all", purpose="OpenAI-compatible targets")

    def verdict(kind: ErrorKind, message: str, retry_after: float | None = None) -> ErrorClass:
        return ErrorClass(kind, redact(message, secrets), retry_after)

    if isinstance(exc, NUnsupportedError):
        return verdict(ErrorKind.TRANSIENT, str(exc))
    if isinstance(exc, (MalformedResponseError, json.JSONDecodeError, openai.APIResponseValidationError)):
        return verdict(ErrorKind.TRANSIENT, f"malformed response body: {exc}")
    if isinstance(exc, openai.APITimeoutError):
        return verdict(ErrorKind.TRANSIENT, f"request timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        return verdict(ErrorKind.TRANSIENT, f"connection failed: {exc}")
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APIError) and isinstance(status, int):
        message = f"HTTP {status}: {_status_message(exc)}"
        kind = classify_status(status) or ErrorKind.FATAL
        code = getattr(exc, "code", None)
        if status == 429 and code == "insufficient_quota":
            return verdict(ErrorKind.FATAL, f"{message} (the account is out of credit)")
        headers = getattr(exc, "litellm_response_headers", None) or getattr(
            getattr(exc, "response", None), "headers", None
        )
        retry_after = parse_retry_after(headers) if kind is ErrorKind.RATE_LIMITED else None
        if status in _HINTS:
            message = f"{message} — {_HINTS[status]}"
        return verdict(kind, message, retry_after)
    if isinstance(exc, (TimeoutError, ConnectionError, asyncio.TimeoutError)):
        return verdict(ErrorKind.TRANSIENT, f"{type(exc).__name__}: {exc}")
    if isinstance(exc, openai.APIError):  # no status: a body or stream that broke mid-way
        return verdict(ErrorKind.TRANSIENT, f"{type(exc).__name__}: {exc}")
    return verdict(ErrorKind.FATAL, f"{type(exc).__name__}: {exc}")


_PRICE_HINT = "price={'input': USD_PER_1M_PROMPT_TOKENS, 'output': USD_PER_1M_COMPLETION_TOKENS}"


def _price(option: Any) -> tuple[float, float] | None:
    if option is None:
        return None
    if isinstance(option, Mapping):
        try:
            return float(option["input"]), float(option["output"])
        except KeyError as exc:
            raise ConfigError(f"price={dict(option)!r} lacks {exc}", hint=_PRICE_HINT) from None
    if isinstance(option, Sequence) and len(option) == 2:
        return float(option[0]), float(option[1])
    raise ConfigError(f"price={option!r} is not understood", hint=_PRICE_HINT)


def _mentions_n(exc: BaseException) -> bool:
    text = _status_message(exc).lower()
    return bool(re.search(r"\bn\b|'n'|\"n\"|choice|num_return|best_of", text))


def chat_request(model: str, case: Case, n: int, sampling: Sampling, start: int) -> dict[str, Any]:
    """The OpenAI chat-completion parameters of one call, shared by the openai and litellm adapters.

    ``n`` is sent only when more than one sample is asked for; sample ``i`` of a case uses
    seed ``sampling.seed_for(case, i)`` (see :class:`~frontier_qa.target.Sampling`), so a call
    starting at ``start`` sends ``sampling.seed_for(case, start)``.
    """
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": case.messages,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
    }
    if n > 1:
        kwargs["n"] = n
    if sampling.stop:
        kwargs["stop"] = list(sampling.stop)
    if sampling.seed is not None:
        kwargs["seed"] = sampling.seed_for(case, start)
    if case.tools:
        kwargs["tools"] = [dict(t) for t in case.tools]
    return kwargs


class OpenAIAdapter(Adapter):
    """One request per call to an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        model: the model name the server knows.
        base_url: the API root (``http://127.0.0.1:8000/v1``); default ``OPENAI_BASE_URL``
            or OpenAI's.
        api_key: the key; default ``OPENAI_API_KEY``, or ``"EMPTY"`` for a custom base URL.
        supports_n: ask for several samples per request (``n``).
        max_n: the most samples per request.
        prefill: continue a final partial assistant message (vLLM ``continue_final_message``).
        price: ``{"input": usd_per_1M_prompt_tokens, "output": usd_per_1M_completion_tokens}``
            (or a 2-tuple) to compute ``cost_usd``; ``None``: cost unknown.
        timeout: the client's per-request timeout in seconds (the runtime also has one).
        headers: extra HTTP headers (secret-named ones are redacted everywhere).
        extra_body: extra JSON fields for every request (``{"top_k": 20}`` for vLLM).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        supports_n: bool = True,
        max_n: int = 16,
        prefill: bool = False,
        price: Mapping[str, float] | Sequence[float] | None = None,
        timeout: float | None = 600.0,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        # imported now, not in the first call, so the import never eats a call's timeout
        self._openai = require("openai", extra="all", purpose="OpenAI-compatible targets")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and self.base_url != OPENAI_URL:
            key = "EMPTY"  # vLLM / llama.cpp servers accept any key; the client insists on one
        if not key:
            raise ConfigError(f"no API key for {model!r} at {self.base_url}",
                              hint="set OPENAI_API_KEY or pass api_key=... (or a base URL of your own server)")
        self._api_key = key
        self.max_n = max(1, int(max_n)) if supports_n else 1
        self.supports_prefill = bool(prefill)
        self.price = _price(price)
        self.timeout = timeout
        self.headers = dict(headers or {})
        self.extra_body = dict(extra_body or {})
        self.id = f"openai:{model}@{self.base_url}"
        self.secrets = (key, *secret_values(self.headers))
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        # building a client loads TLS certificates (0.1-0.3 s, blocking): do it now, not
        # inside the first rate-limited call; the first event loop to ask gets this one
        self._spare: Any = self._new_client()
        self._spare.chat.completions  # noqa: B018 - its lazy imports take ~0.5 s: pay them here too

    def _new_client(self) -> Any:
        return self._openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key,
            max_retries=0,  # the runtime retries, with budgets and rate limits in view
            timeout=self.timeout,
            default_headers=self.headers or None,
        )

    def _client(self) -> Any:
        # an httpx pool belongs to the loop that opened it: one client per loop
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client, self._spare = (self._spare or self._new_client()), None
            self._clients[loop] = client
        return client

    def request(self, case: Case, n: int, sampling: Sampling, start: int) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for one call."""
        kwargs = chat_request(self.model, case, n, sampling, start)
        extra = dict(self.extra_body)
        if self.supports_prefill and case.continues_assistant:
            extra.update(continue_final_message=True, add_generation_prompt=False)
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        n = min(n, self.max_n)
        if sampling.temperature <= 0:
            # vLLM refuses n > 1 for greedy decoding ("n must be 1 when using greedy sampling"),
            # and hosted APIs are not deterministic at temperature 0 either: ask one real sample
            # per request (the runtime asks again for the rest) without giving up n for later calls.
            n = 1
        try:
            response = await self._client().chat.completions.create(**self.request(case, n, sampling, start))
        except self._openai.BadRequestError as exc:
            if n > 1 and _mentions_n(exc):
                self.max_n = 1
                raise NUnsupportedError(
                    f"{self.model} at {self.base_url} rejected n={n} ({_status_message(exc)}); "
                    "asking one sample per request from now on"
                ) from exc
            raise
        out = trajectories_from_response(
            case, response, start=start, price=self.price,
            continued=self.supports_prefill and case.continues_assistant,
        )
        if n > 1 and len(out) < n:
            self.max_n = 1  # the server ignored n; the runtime asks again for the rest
        return out[:n]

    def classify(self, exc: BaseException) -> ErrorClass:
        return classify_openai_error(exc, self.secrets)

    async def aclose(self) -> None:
        for client in [*self._clients.values(), *([self._spare] if self._spare is not None else [])]:
            with contextlib.suppress(RuntimeError):  # its loop is closed already; the pool went with it
                await client.close()
        self._spare = None
        self._clients.clear()

    def __repr__(self) -> str:
        return f"OpenAIAdapter({self.model!r}, base_url={self.base_url!r})"


def create(rest: str, **options: Any) -> OpenAIAdapter:
    """Registry factory for ``openai:MODEL[@BASE_URL]`` specs."""
    model, base_url = split_spec(rest)
    if base_url is not None and options.get("base_url") not in (None, base_url):
        raise ConfigError(f"two base URLs for {model!r}: {base_url!r} in the spec and {options['base_url']!r} "
                          "in the options", hint="give the base URL once")
    options["base_url"] = options.get("base_url") or base_url
    return OpenAIAdapter(model, **options)


__all__ = [
    "MalformedResponseError",
    "NUnsupportedError",
    "OpenAIAdapter",
    "classify_openai_error",
    "create",
    "split_spec",
    "split_usage",
    "trajectories_from_response",
]
