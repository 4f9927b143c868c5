"""A small, real OpenAI-compatible HTTP server with fault injection, for tests and benchmarks.

It runs the stdlib ``http.server.ThreadingHTTPServer`` (HTTP/1.1, keep-alive) on
``127.0.0.1`` at a free port, in a background thread, and stops itself when its ``with``
block ends. Real clients (``openai.AsyncOpenAI``, ``litellm``, ``httpx``) talk to it over
TCP, so retries, timeouts and header handling are exercised for real.

Endpoints:
    ``POST /v1/chat/completions`` (honours ``n`` unless ``supports_n=False``; ``seed``;
    ``tools``; ``stream``), ``POST /v1/responses`` (the Responses API: ``input`` as a string
    or a list of items, ``tools`` of type function; ``stream``), ``GET /v1/models``. Anything
    else is a 404 in OpenAI's error shape.

Answers are deterministic. ``answers`` maps the *last user message* (for the Responses API:
the last user input text) to a string or a list of strings (or dicts
``{"content": ..., "tool_calls": [{"name": ..., "arguments": ...}]}``; on the Responses API the
tool calls become ``function_call`` output items, the content a ``message`` item).
Choice ``j`` of a request carrying ``seed`` gets item ``(seed + j) % len(list)`` (frontier-qa
sends ``Sampling.seed_for(case, start)``, so sample *i* of a case always gets the same item:
:func:`served` says which); without a seed a
per-prompt arrival counter is used. ``answers`` may also be a callable
``(request_body, index) -> str | dict``. Unknown prompts get ``default_answer``.

*Scripted tool choice* (:class:`ToolScript`, an ``answers`` callable): per kind of request
(a :class:`ToolTurn`, matched on a substring of the user's task) the model's first turn is a tool
call, the turn after a tool result a final text that is the same whichever tool ran (answers
agree while paths differ). A turn with one call always makes it (the right tool, or the wrong
one, as the case's expectations see it); a turn with several makes call ``index % len(calls)``:
on chat completions carrying a ``seed`` that is the seed, so each sample keeps its tool (and
consecutive seeds, as frontier-qa's own chat targets send, alternate; the seeds frontier-qa's model
gateway gives a framework agent's calls are hashes, so there the split is a fixed draw for a given
probe seed); without one (the Responses API, a client that sends none) it is the per-prompt
arrival counter, which splits every 2m samples exactly m / m. It works on both APIs, streamed or not::

    script = ToolScript((
        ToolTurn("capital of Kenya", (call("capital", country="Kenya"), call("search_facts", query="Kenya")),
                 "The capital of Kenya is \\boxed{Nairobi}."),
        ToolTurn("capital of Peru", (call("search_facts", query="capital of Peru"),), "\\boxed{Lima}"),
    ))
    with FakeOpenAIServer(answers=script) as srv: ...

*Streaming* (``"stream": true``) answers the same content as server-sent events: chat
completions as ``chat.completion.chunk`` deltas (text, then tool-call deltas, then the finish
reason, then a usage chunk when ``stream_options.include_usage`` is set, then ``[DONE]``); the
Responses API as ``response.created``, ``response.output_item.added``, ``response.content_part.added``,
``response.output_text.delta``/``.done``, ``response.function_call_arguments.delta``/``.done``,
``response.output_item.done`` and ``response.completed`` carrying the whole response with usage.

Faults are injected per model request (chat or Responses), in arrival order: first from ``script`` (a list of
:class:`Fault` or short strings), then at random with ``fault_rates`` (seeded). Short forms:

=================  =====================================================================
``"ok"``           a normal answer
``"latency:S"``    wait S seconds, then a normal answer
``"429"``          429 with ``Retry-After: 1``; ``"429:0.3"`` sets Retry-After to 0.3 s;
                   ``"429:-"`` sends no Retry-After header
``"500"``/``"503"``  that 5xx status with an OpenAI-style error body
``"400"``/``"401"``/``"403"``/``"404"``  that status (401 echoes the presented key, like a
                   careless gateway, so redaction can be tested)
``"hang"``         never answer (until the server stops); ``"hang:S"`` gives up after S s
                   and closes the connection without a response
``"malformed"``    200 with a truncated JSON body
``"wrong"``        200 with valid JSON that is not a chat completion (no ``choices``)
``"html"``         200 with an HTML page (a proxy's error page)
``"fewer"``        a normal answer with a single choice whatever ``n`` asked for
=================  =====================================================================

``rpm=R`` makes the server meter model requests like a provider: a request that would exceed R
requests per minute (a GCRA token bucket of ``rpm_burst`` requests, refilled at R/60 per second)
gets a 429 with the ``Retry-After`` seconds until it would have fit, and is not counted against
the limit; :meth:`FakeOpenAIServer.rate_limited` counts them.

``api_key="k"`` makes the server demand ``Authorization: Bearer k`` (401 otherwise).
Usage is counted in whitespace-separated words: prompt tokens = words in all messages (input
texts, instructions and tool outputs on the Responses API), completion tokens = words in each
answer (at least 1). :meth:`FakeOpenAIServer.model_calls` counts both model endpoints together.

Example::

    with FakeOpenAIServer(answers={"2+2?": ["\\\\boxed{4}", "\\\\boxed{5}"]}, script=["429:0.2"]) as srv:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        ...
        assert srv.count() == 2  # the 429, then the answer

Other tests reuse it through the ``fake_openai`` pytest fixture (import it into the test
module: ``from tests.servers.fake_openai import fake_openai  # noqa: F401``).
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:  # the fixture is for pytest; benchmarks import the server without it
    import pytest
except ImportError:  # pragma: no cover
    pytest = None  # type: ignore[assignment]

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
MODEL_PATHS = (CHAT_PATH, RESPONSES_PATH)
AnswerItem = str | Mapping[str, Any]
Answers = Mapping[str, AnswerItem | Sequence[AnswerItem]] | Callable[[dict[str, Any], int], AnswerItem]


@dataclass(frozen=True)
class Fault:
    """One injected behaviour for one model request (chat or Responses).

    Attributes:
        kind: ``ok``, ``latency``, ``status`` (an error status), ``hang``, ``malformed``,
            ``wrong``, ``html`` or ``fewer``.
        status: HTTP status for ``kind == "status"``.
        retry_after: Retry-After header value in seconds (429 only; ``None``: no header).
        delay_s: seconds to wait first (``latency``) or to hang for (``hang``).
    """

    kind: str = "ok"
    status: int | None = None
    retry_after: float | None = None
    delay_s: float = 0.0

    @classmethod
    def parse(cls, text: str | Fault | None) -> Fault:
        """Read a short form such as ``"429:0.5"`` or ``"hang"`` (see the module docstring)."""
        if isinstance(text, Fault):
            return text
        if text is None:
            return cls()
        name, _, arg = str(text).partition(":")
        if name.isdigit():
            status = int(name)
            if status == 429:
                retry_after = None if arg == "-" else float(arg or 1)
                return cls("status", status=429, retry_after=retry_after)
            return cls("status", status=status)
        if name in ("ok", "malformed", "wrong", "html", "fewer"):
            return cls(name)
        if name == "latency":
            return cls("latency", delay_s=float(arg))
        if name == "hang":
            return cls("hang", delay_s=float(arg) if arg else 3600.0)
        raise ValueError(f"unknown fault {text!r}; see tests/servers/fake_openai.py for the forms")


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received (headers lower-cased) and which fault it answered with."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    fault: Fault
    at: float = field(default=0.0)  # time.monotonic() on arrival


def served(options: Sequence[Any], case: Any, sampling: Any, n: int, start: int = 0) -> list[Any]:
    """The items the server answers for samples ``start .. start + n - 1`` of ``case``
    (frontier-qa seeds sample ``i`` with ``sampling.seed_for(case, i)``).
    """
    return [options[sampling.seed_for(case, i) % len(options)] for i in range(start, start + n)]


def call(name: str, **arguments: Any) -> Mapping[str, Any]:
    """One scripted tool call: ``{"name": name, "arguments": <arguments as JSON>}``."""
    return {"name": name, "arguments": json.dumps(arguments)}


@dataclass(frozen=True)
class ToolTurn:
    """How the scripted model answers one kind of request.

    Attributes:
        match: a substring of the user's task (case-insensitive) that picks this turn.
        calls: the tool calls it may make first (:func:`call`); one: always that one; several: one
            of them per request, ``index % len(calls)`` (see the module docstring).
        answer: the final text once a tool result is in the conversation, whichever tool ran.
    """

    match: str
    calls: tuple[Mapping[str, Any], ...]
    answer: str


@dataclass(frozen=True)
class ToolScript:
    """An ``answers`` callable that scripts tool choice per kind of request (:class:`ToolTurn`).

    A task no turn matches gets ``default``. The call is chosen from the request's ``index``
    (its seed, or the per-prompt counter), so the same request gets the same tool.
    """

    turns: tuple[ToolTurn, ...]
    default: str = "I cannot help with that."

    def turn_for(self, body: Mapping[str, Any]) -> ToolTurn | None:
        """The turn whose ``match`` the request's user task contains (the first one), if any."""
        task = _last_user_text(body).lower()
        return next((t for t in self.turns if t.match.lower() in task), None)

    def __call__(self, body: dict[str, Any], index: int) -> AnswerItem:
        turn = self.turn_for(body)
        if turn is None:
            return self.default
        if _after_tool_result(body) or not turn.calls:
            return turn.answer
        return {"content": None, "tool_calls": [dict(turn.calls[index % len(turn.calls)])]}


def _after_tool_result(body: Mapping[str, Any]) -> bool:
    """Whether the request's last item is a tool's result (chat: a ``tool`` message; Responses: a
    ``function_call_output`` item).
    """
    items = body.get("messages", body.get("input"))
    if not isinstance(items, Sequence) or isinstance(items, str) or not items:
        return False
    last = items[-1]
    return isinstance(last, Mapping) and (last.get("role") == "tool" or last.get("type") == "function_call_output")


def _words(text: Any) -> int:
    return len(str(text or "").split())


class FakeOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 with scripted or random faults.

    Args:
        answers: per-prompt answers or a callable (see the module docstring).
        default_answer: answer for prompts not in ``answers``.
        script: faults for the first requests, in arrival order (then normal service).
        fault_rates: ``{short_form: probability}`` applied after the script, e.g.
            ``{"429:0.1": 0.05, "500": 0.05}``; draws use ``random.Random(seed)``.
        seed: seed for ``fault_rates``.
        latency_s: delay before every model answer (chat and Responses, streamed or not),
            in seconds (benchmarks use it as the model's think time).
        api_key: if set, requests must carry ``Authorization: Bearer <api_key>``.
        supports_n: when ``False`` the server ignores ``n`` and returns one choice.
        reject_n: when ``True`` a request with ``n > 1`` gets a 400 "n must be 1" (llama.cpp style).
        model: the model name listed by ``/v1/models``.
        rpm: requests per minute the server accepts (over it: 429 with Retry-After); ``None``: no limit.
        rpm_burst: requests that may arrive back to back within ``rpm`` (the bucket's size).
    """

    def __init__(
        self,
        *,
        answers: Answers | None = None,
        default_answer: AnswerItem = "The answer is \\boxed{42}.",
        script: Sequence[str | Fault | None] = (),
        fault_rates: Mapping[str, float] | None = None,
        seed: int = 0,
        latency_s: float = 0.0,
        api_key: str | None = None,
        supports_n: bool = True,
        reject_n: bool = False,
        model: str = "fake-model",
        rpm: float | None = None,
        rpm_burst: int = 1,
    ) -> None:
        self.rpm = rpm
        self.rpm_burst = rpm_burst
        self._tat = 0.0  # the rate limit's theoretical arrival time (GCRA)
        self.answers = answers or {}
        self.default_answer = default_answer
        self.fault_rates = [(Fault.parse(k), float(p)) for k, p in (fault_rates or {}).items()]
        self.latency_s = latency_s
        self.api_key = api_key
        self.supports_n = supports_n
        self.reject_n = reject_n
        self.model = model
        self._script: list[Fault] = [Fault.parse(f) for f in script]
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._counters: Counter[str] = Counter()
        self._ids = itertools.count()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"server_state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release hanging handlers and close the socket."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # --- inspection and control -------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (a copy)."""
        with self._lock:
            return list(self._requests)

    def count(self, path: str = CHAT_PATH) -> int:
        """How many requests arrived for ``path`` (faulted ones included)."""
        with self._lock:
            return self._counters[path]

    def model_calls(self) -> int:
        """Requests to both model endpoints (chat completions and Responses), faulted ones included."""
        with self._lock:
            return sum(self._counters[path] for path in MODEL_PATHS)

    def rate_limited(self) -> int:
        """Model requests refused for going over ``rpm``."""
        with self._lock:
            return self._counters["rate_limited"]

    def _over_rate(self, now: float) -> float | None:
        """Seconds until a request arriving ``now`` fits the ``rpm`` limit; ``None``: it fits (counted)."""
        if not self.rpm:
            return None
        interval = 60.0 / self.rpm
        tat = max(self._tat, now)
        if tat - now > (self.rpm_burst - 1) * interval + 1e-9:
            return tat - now - (self.rpm_burst - 1) * interval
        self._tat = tat + interval
        return None

    def push(self, *faults: str | Fault | None) -> None:
        """Append faults to the script (they apply to the next requests)."""
        with self._lock:
            self._script.extend(Fault.parse(f) for f in faults)

    def reset(self) -> None:
        """Forget recorded requests and counters (the script is kept)."""
        with self._lock:
            self._requests.clear()
            self._counters.clear()

    # --- behaviour ---------------------------------------------------------------------

    def _record(self, method: str, path: str, headers: Mapping[str, str], body: Any) -> Fault:
        with self._lock:
            fault = Fault()
            wait = self._over_rate(time.monotonic()) if path in MODEL_PATHS else None
            if wait is not None:
                fault = Fault("status", status=429, retry_after=round(max(wait, 0.001), 3))
                self._counters["rate_limited"] += 1
            elif path in MODEL_PATHS:
                if self._script:
                    fault = self._script.pop(0)
                else:
                    draw = self._rng.random()
                    for candidate, probability in self.fault_rates:
                        if draw < probability:
                            fault = candidate
                            break
                        draw -= probability
            self._requests.append(RecordedRequest(method, path, headers, body, fault, time.monotonic()))
            self._counters[path] += 1
            return fault

    def _answer(self, body: Mapping[str, Any], index: int) -> dict[str, Any]:
        if callable(self.answers):
            item = self.answers(dict(body), index)
        else:
            options = self.answers.get(_last_user_text(body), self.default_answer)
            if isinstance(options, (str, Mapping)):
                options = [options]
            item = options[index % len(options)]
        if isinstance(item, str):
            return {"content": item}
        return dict(item)

    def _indices(self, body: Mapping[str, Any], n: int) -> list[int]:
        seed = body.get("seed")
        if isinstance(seed, int):
            return [seed + j for j in range(n)]
        key = json.dumps(body.get("messages", body.get("input", [])), sort_keys=True)
        with self._lock:
            first = self._counters[f"prompt:{key}"]
            self._counters[f"prompt:{key}"] += n
        return [first + j for j in range(n)]

    def completion(self, body: Mapping[str, Any], *, fewer: bool = False) -> dict[str, Any]:
        """The chat-completion JSON for ``body`` (no faults)."""
        n = int(body.get("n") or 1)
        if fewer or not self.supports_n:
            n = 1
        choices, completion_tokens = [], 0
        for j, index in enumerate(self._indices(body, n)):
            answer = self._answer(body, index)
            message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
            if answer.get("tool_calls"):
                message["tool_calls"] = [
                    {
                        "id": f"call_{next(self._ids)}",
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c.get("arguments", "{}")},
                    }
                    for c in answer["tool_calls"]
                ]
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            choices.append({"index": j, "message": message, "finish_reason": finish, "logprobs": None})
            completion_tokens += max(1, _words(answer.get("content")))
        prompt_tokens = sum(_words(m.get("content")) for m in body.get("messages", []))
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def response(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The Responses-API JSON for ``body`` (no faults): a ``message`` item for the text and a
        ``function_call`` item per scripted tool call.
        """
        answer = self._answer(body, self._indices(body, 1)[0])
        output: list[dict[str, Any]] = []
        if answer.get("content") or not answer.get("tool_calls"):
            output.append({
                "id": f"msg_{next(self._ids)}", "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": answer.get("content") or "", "annotations": []}],
            })
        for call in answer.get("tool_calls") or ():
            output.append({
                "id": f"fc_{next(self._ids)}", "type": "function_call", "status": "completed",
                "call_id": f"call_{next(self._ids)}", "name": call["name"],
                "arguments": call.get("arguments", "{}"),
            })
        input_tokens = sum(_words(text) for text in _input_texts(body))
        output_tokens = max(1, _words(answer.get("content")))
        return {
            "id": f"resp_{next(self._ids)}", "object": "response", "created_at": int(time.time()),
            "model": body.get("model", self.model), "status": "completed", "output": output,
            "parallel_tool_calls": True, "tool_choice": body.get("tool_choice", "auto"),
            "tools": list(body.get("tools") or []), "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "metadata": {}, "temperature": body.get("temperature"),
            "top_p": body.get("top_p"),
            "usage": {
                "input_tokens": input_tokens, "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
                "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0},
            },
        }


def chat_chunks(completion: Mapping[str, Any], *, include_usage: bool) -> list[dict[str, Any]]:
    """A finished chat completion as the ``chat.completion.chunk`` objects a streaming server sends."""
    head = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"]}
    chunks: list[dict[str, Any]] = []

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> None:
        chunks.append({**head, "choices": [{"index": index, "delta": delta, "finish_reason": finish,
                                            "logprobs": None}]})

    for choice in completion["choices"]:
        j, message = choice["index"], choice["message"]
        chunk(j, {"role": "assistant", "content": ""})
        for piece in _pieces(message.get("content") or ""):
            chunk(j, {"content": piece})
        for k, call in enumerate(message.get("tool_calls") or ()):
            chunk(j, {"tool_calls": [{"index": k, "id": call["id"], "type": "function",
                                      "function": {"name": call["function"]["name"], "arguments": ""}}]})
            for piece in _pieces(call["function"]["arguments"]):
                chunk(j, {"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
        chunk(j, {}, choice["finish_reason"])
    if include_usage:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks


def response_events(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A finished Responses-API object as the server-sent events of ``"stream": true``."""
    events: list[dict[str, Any]] = []

    def event(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    event("response.created", response={**response, "status": "in_progress", "output": [], "usage": None})
    for i, item in enumerate(response["output"]):
        where = {"output_index": i, "item_id": item["id"]}
        if item["type"] == "function_call":
            event("response.output_item.added", output_index=i, item={**item, "arguments": "",
                                                                       "status": "in_progress"})
            for piece in _pieces(item["arguments"]):
                event("response.function_call_arguments.delta", **where, delta=piece)
            event("response.function_call_arguments.done", **where, arguments=item["arguments"],
                  name=item["name"])
        else:
            event("response.output_item.added", output_index=i, item={**item, "content": [],
                                                                       "status": "in_progress"})
            for c, part in enumerate(item["content"]):
                at = {**where, "content_index": c}
                event("response.content_part.added", **at, part={**part, "text": ""})
                for piece in _pieces(part["text"]):
                    event("response.output_text.delta", **at, delta=piece, logprobs=[])
                event("response.output_text.done", **at, text=part["text"], logprobs=[])
                event("response.content_part.done", **at, part=part)
        event("response.output_item.done", output_index=i, item=item)
    event("response.completed", response=response)
    return events


def _pieces(text: str, size: int = 8) -> list[str]:
    """``text`` cut into deltas of ``size`` characters (at least one, possibly empty, piece)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _sse(events: Sequence[Mapping[str, Any]], *, named: bool, done: bool) -> bytes:
    """Server-sent events: ``event:`` lines (Responses API) or bare ``data:`` lines (chat), then ``[DONE]``."""
    lines = [(f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def _parts_text(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` of its parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _last_user_text(body: Mapping[str, Any]) -> str:
    """The last user message (chat) or the last user input text (Responses API)."""
    items = body.get("messages")
    if items is None:
        items = body.get("input", [])
        if isinstance(items, str):
            return items
    for item in reversed(items or []):
        if isinstance(item, Mapping) and item.get("role") == "user":
            return _parts_text(item.get("content"))
    return ""


def _input_texts(body: Mapping[str, Any]) -> list[str]:
    """Every text a Responses-API request sends (instructions, messages, tool outputs)."""
    items = body.get("input", [])
    texts = [str(body.get("instructions") or "")]
    if isinstance(items, str):
        return [*texts, items]
    for item in items:
        if isinstance(item, Mapping):
            texts.append(_parts_text(item.get("content")) if "content" in item else str(item.get("output", "")))
    return texts


_REASONS = {
    400: ("invalid_request_error", "Invalid request: the parameter set is not supported."),
    401: ("invalid_api_key", "Incorrect API key provided: {key}."),
    403: ("permission_denied", "You do not have access to this model."),
    404: ("not_found_error", "The model does not exist."),
    429: ("rate_limit_exceeded", "Rate limit reached for requests. Please retry later."),
    500: ("server_error", "The server had an error while processing your request."),
    502: ("server_error", "Bad gateway."),
    503: ("server_error", "The engine is currently overloaded, please try again later."),
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers behind httpx pools
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall
    server_state: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers)

    def _send(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout); nothing to do

    def _error(self, status: int, presented_key: str = "", headers: Mapping[str, str] | None = None) -> None:
        code, message = _REASONS.get(status, ("error", f"HTTP {status}"))
        body = {"error": {"message": message.format(key=presented_key), "type": code, "code": code}}
        self._send_json(status, body, headers)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        state = self.server_state
        state._record("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None)
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": state.model, "object": "model", "created": 0, "owned_by": "fake"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._error(404)

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        state = self.server_state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        fault = state._record("POST", self.path, headers, body)
        if self.path not in MODEL_PATHS:
            self._error(404)
            return
        if not isinstance(body, dict):
            self._error(400)
            return
        presented = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if state.api_key is not None and presented != state.api_key:
            self._error(401, presented)
            return
        if state.reject_n and int(body.get("n") or 1) > 1:
            self._send_json(400, {"error": {"message": "n must be 1: only one completion choice is allowed",
                                            "type": "invalid_request_error", "code": None, "param": "n"}})
            return
        if state.latency_s:
            state._stopping.wait(state.latency_s)
        if fault.kind == "latency":
            state._stopping.wait(fault.delay_s)
        if fault.kind == "hang":
            state._stopping.wait(fault.delay_s)
            self.close_connection = True  # never answer: the client must time out
            return
        if fault.kind == "status":
            extra = {}
            if fault.status == 429 and fault.retry_after is not None:
                extra["Retry-After"] = f"{fault.retry_after:g}"
            self._error(int(fault.status or 500), presented, extra)
        elif fault.kind == "malformed":
            self._send(200, b'{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"ind', "application/json")
        elif fault.kind == "wrong":
            self._send_json(200, {"object": "status", "detail": "upstream queue full, try later"})
        elif fault.kind == "html":
            self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        elif self.path == RESPONSES_PATH:
            response = state.response(body)
            if body.get("stream"):
                self._send(200, _sse(response_events(response), named=True, done=False), "text/event-stream")
            else:
                self._send_json(200, response)
        else:
            completion = state.completion(body, fewer=fault.kind == "fewer")
            if body.get("stream"):
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                self._send(200, _sse(chat_chunks(completion, include_usage=usage), named=False, done=True),
                           "text/event-stream")
            else:
                self._send_json(200, completion)


def _fake_openai() -> Iterator[FakeOpenAIServer]:
    """A started :class:`FakeOpenAIServer` with default answers and no faults."""
    with FakeOpenAIServer() as server:
        yield server


fake_openai = pytest.fixture(_fake_openai, name="fake_openai") if pytest is not None else _fake_openai


__all__ = ["CHAT_PATH", "MODEL_PATHS", "RESPONSES_PATH", "Fault", "FakeOpenAIServer", "RecordedRequest", "ToolScript",
           "ToolTurn", "call", "fake_openai"]
