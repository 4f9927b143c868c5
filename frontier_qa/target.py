"""The target seam: what frontier-qa asks of anything it probes.

A *target* answers a case ``n`` times and returns ``n`` trajectories (one protocol,
like inspect_ai's ``ModelAPI``). Backends are *adapters*: small classes that make one
attempt at a call and say how their errors should be treated. Retrying, rate limiting,
concurrency caps, budgets and caching live in one place (:mod:`frontier_qa.runtime`)
and wrap every adapter the same way ("adapters decide, the core retries").

Everything here is a frozen value; nothing imports an I/O or ML library.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from frontier_qa._frozen import frozen_value

Message = Mapping[str, Any]
"""A chat message in OpenAI form: ``{"role": "user", "content": "..."}``."""


ORDERS = ("strict", "in_order", "any_order")
"""How :attr:`Expectations.tool_sequence` is matched (ADK's exact, in-order and any-order trajectory match)."""


@frozen_value
class ToolArguments:
    """What the arguments of one tool must be, in at least one call of it.

    Attributes:
        tool: the tool's name.
        arguments: the expected arguments (a JSON object's keys and values).
        match: ``"subset"`` (the default: the call has these keys with these values, and may have
            more) or ``"exact"`` (the call has exactly these arguments).
        check: instead of (or beside) ``arguments``, a function ``"module:function"`` or
            ``"path/to/file.py:function"`` called with the call's arguments as a dict; a truthy
            return is a match, an exception is not.
    """

    tool: Annotated[str, Field(min_length=1)]
    arguments: Mapping[str, Any] = Field(default_factory=dict)
    match: Literal["subset", "exact"] = "subset"
    check: str | None = None


@frozen_value
class Expectations:
    """What every sample's trajectory must do (checked per sample; pass^k counts the samples that meet them).

    Attributes:
        tools_used: tools each sample calls at least once.
        tools_not_used: tools no sample may call (a call that succeeded counts: a forbidden tool
            called "successfully" is the miss).
        tool_sequence: tools in the order expected, matched per :attr:`order`.
        order: ``"strict"`` (the calls are exactly this sequence), ``"in_order"`` (the default:
            these calls appear in this order, others may come between) or ``"any_order"`` (each
            appears, in any order).
        arguments: what some call of a tool must be given (:class:`ToolArguments`).
        max_steps: most steps a sample may take: tool calls plus model calls where the target
            records them (an agent framework's spans), tool calls alone otherwise.
    """

    tools_used: tuple[str, ...] = ()
    tools_not_used: tuple[str, ...] = ()
    tool_sequence: tuple[str, ...] = ()
    order: Literal["strict", "in_order", "any_order"] = "in_order"
    arguments: tuple[ToolArguments, ...] = ()
    max_steps: Annotated[int | None, Field(ge=1)] = None

    @property
    def empty(self) -> bool:
        """Whether nothing is expected (such an ``expect`` is treated as none)."""
        return not (self.tools_used or self.tools_not_used or self.tool_sequence or self.arguments
                    or self.max_steps is not None)


@frozen_value
class Case:
    """One task put to a target; also the ``case`` of every stored record and suite entry.

    Attributes:
        id: stable identifier (used in cache keys, reports and test ids).
        prompt: the user-facing task text.
        system: optional system prompt prepended to ``messages``.
        topic: free-form topic label for the frontier map.
        answer_format: how to read the final answer from a trajectory: ``"auto"`` (the
            default: a box, a "Final answer:" line, JSON ``answer`` or a short plain reply),
            ``"boxed"``, ``"final_answer"``, ``"json:<field>"`` or ``"text"`` (open-ended).
        tools: OpenAI-style tool schemas the target may call (tool-calling tasks).
        reference: the curriculum's reference answer, if any (unverified unless said so).
        reference_verified: whether the reference was checked (by executing the generator's
            solution or a stronger judge); only a verified reference can make a ``failure``
            (docs/method.md, QA note 1). Set by the engine on the records it writes.
        metadata: anything else, JSON-serialisable.
        history: messages after the task (earlier assistant turns, tool outputs). When the
            last one is an assistant message, adapters with ``supports_prefill`` continue it.
        expect: what every sample's trajectory must do (tools used or not, their order and
            arguments, the most steps): :class:`Expectations`; ``None``: nothing expected.
    """

    id: str
    prompt: str
    system: str | None = None
    topic: str = "general"
    answer_format: str = "auto"
    tools: tuple[Mapping[str, Any], ...] = ()
    reference: str | None = None
    reference_verified: bool = False
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    history: tuple[Message, ...] = ()
    expect: Expectations | None = None

    @model_serializer(mode="wrap")
    def _without_expect(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a case without expectations keeps the 0.1 shape in every store, suite and cases file
        data: dict[str, Any] = handler(self)
        if data.get("expect") is None:
            data.pop("expect", None)
        return data

    @classmethod
    def from_case(cls, case: Case, *, reference_verified: bool = False) -> Case:
        """``case`` as recorded, with ``reference_verified`` (the 0.1 ``CaseSpec.from_case``)."""
        return replace(case, reference_verified=reference_verified)

    def to_case(self) -> Case:
        """The case to probe again (replay): the same task, its reference not yet re-verified
        (the 0.1 ``CaseSpec.to_case``).
        """
        return replace(self, reference_verified=False) if self.reference_verified else self

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation that opens the case: optional system prompt, then the task."""
        out: list[dict[str, Any]] = []
        if self.system:
            out.append({"role": "system", "content": self.system})
        out.append({"role": "user", "content": self.prompt})
        out.extend(dict(m) for m in self.history)
        return out

    @property
    def continues_assistant(self) -> bool:
        """Whether the conversation ends in a partial assistant turn to be continued."""
        return bool(self.history) and self.history[-1].get("role") == "assistant"


def stable_seed(key: str) -> int:
    """A 31-bit seed derived from ``key`` (SHA-256), the same in every process and version."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") & 0x7FFFFFFF


def case_seed(seed: int, case: Case) -> int:
    """A case's base seed: ``seed`` mixed with the case's conversation (31 bits, stable across
    processes and versions; see :attr:`Sampling.seed`).
    """
    conversation = json.dumps(case.messages, sort_keys=True, ensure_ascii=False, default=str)
    return stable_seed(f"frontier-qa/sample/{seed}\0{conversation}")


@frozen_value
class Sampling:
    """Sampling of a model: the API value and the config sections ``probing.sampling``,
    ``curriculum.sampling`` (and the trainers' ``sampling`` keys).

    Attributes:
        temperature: softmax temperature (Agent0 samples the executor at 1.0).
        top_p: nucleus mass in (0, 1].
        max_tokens: cap on generated tokens per sample.
        stop: stop strings.
        seed: base seed. Where a backend takes seeds, sample ``i`` of a case uses
            :meth:`seed_for` ``(case, i)``: the base seed mixed with the case's conversation, plus
            ``i``. Mixing in the case keeps different cases on independent random streams (with
            ``seed + i`` for every case, sample ``i`` of every case drew the same random numbers,
            so a local model's answers moved together across cases).
    """

    temperature: Annotated[float, Field(ge=0)] = 1.0
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    max_tokens: Annotated[int, Field(ge=1)] = 512
    stop: tuple[str, ...] = ()
    seed: Annotated[int | None, Field(description="null: probing.seed")] = None

    def seed_for(self, case: Case, index: int) -> int | None:
        """The seed of sample ``index`` of ``case`` (``None`` without a base seed).

        ``case_seed(seed, case) + index``: reproducible for a case and a seed, independent across
        cases, and consecutive within a case, so a backend that numbers the ``n`` samples of one
        request ``s, s + 1, …`` (vLLM, OpenAI-compatible servers) gets sample ``i`` the same seed
        whether it was asked alone or in a batch.
        """
        return None if self.seed is None else case_seed(self.seed, case) + index

    def as_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "stop": list(self.stop),
            "seed": self.seed,
        }


@dataclass(frozen=True)
class ToolCall:
    """One executed tool call inside a trajectory.

    Attributes:
        name: tool name (``"python"`` for the sandboxed interpreter).
        arguments: the arguments as the model wrote them (JSON text or code).
        result: what the tool returned to the model (``None`` if it never ran).
        error: the tool's error text, if it failed.
    """

    name: str
    arguments: str
    result: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Usage:
    """Token counts for one sample (0 where the backend does not report them)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class Trajectory:
    """Everything one sample of a target did on one case.

    Attributes:
        text: the final assistant text (the answer is extracted from it); ``None`` on error.
        messages: the full conversation including tool turns.
        tool_calls: every executed tool call, in order.
        usage: tokens used by this sample.
        cost_usd: cost of this sample in US dollars, ``None`` when unknown.
        latency_s: wall-clock seconds this sample took (0 when served from cache).
        error: why the sample failed, ``None`` when it succeeded.
        sample_index: the index of this sample for its case (0-based; part of the cache key).
        cached: whether it was served from the on-disk cache.
        span: the OpenTelemetry span the sample ran in, ``"<trace id>-<span id>"`` in hex (an
            in-process agent's ``invoke_agent`` span); ``None`` for targets without spans and for
            cached samples (they did not run in this run).
    """

    text: str | None
    messages: tuple[Message, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    cost_usd: float | None = None
    latency_s: float = 0.0
    error: str | None = None
    sample_index: int = 0
    cached: bool = False
    span: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None

    @property
    def n_tool_calls(self) -> int:
        """Executed tool calls (Agent0's N_tool, counted from the trajectory, not the text)."""
        return sum(1 for call in self.tool_calls if call.result is not None or call.error is not None)


@runtime_checkable
class Target(Protocol):
    """Anything frontier-qa can probe.

    ``sample(case, n, sampling, start=s)`` returns trajectories for sample indices
    ``s .. s+n-1`` in that order. Sequential sampling asks for more samples of the same
    case with a larger ``start``; the cache keys on the index so statistics stay valid.
    """

    id: str

    async def sample(
        self, case: Case, n: int, sampling: Sampling, *, start: int = 0
    ) -> list[Trajectory]: ...


class ErrorKind(enum.Enum):
    """How the runtime should treat an adapter's exception."""

    FATAL = "fatal"  # auth, bad request, bad model name: fail at once with the message
    TRANSIENT = "transient"  # 5xx, timeouts, dropped connections, malformed bodies: back off and retry
    RATE_LIMITED = "rate_limited"  # 429 and friends: wait retry_after (or back off) and retry


@dataclass(frozen=True)
class ErrorClass:
    """An adapter's verdict on one exception."""

    kind: ErrorKind
    message: str
    retry_after: float | None = None  # seconds, from a Retry-After header when present


class Adapter:
    """Base class for backends. Subclasses implement :meth:`generate` and usually :meth:`classify`.

    An adapter makes *one attempt* at producing ``n`` samples and raises on failure; it
    never sleeps or retries itself. The runtime wraps it with retries, rate limits,
    budgets and the cache, and exposes it as a :class:`Target`.

    Attributes:
        id: stable identity of the target, e.g. ``"openai:gpt-4o-mini@http://127.0.0.1:8000/v1"``.
            It is part of every cache key, so it must change when the target does.
        max_n: the most samples one backend call may return (1 when the backend has no ``n``).
        supports_prefill: whether it can continue a final partial assistant message
            (needed by the tool-integrated executor's raw continuation mode).
        in_process: whether it computes in this process (a transformers or vLLM model, a
            Python agent) rather than waiting on a server. Such calls get slower, not stuck, on
            a busy machine, so the runtime applies ``Limits.local_timeout_s`` (default: none)
            instead of ``Limits.timeout_s``.
    """

    id: str = "adapter"
    max_n: int = 1
    supports_prefill: bool = False
    in_process: bool = False

    async def generate(
        self, case: Case, n: int, sampling: Sampling, *, start: int = 0
    ) -> list[Trajectory]:
        """Produce ``n`` trajectories (indices ``start..start+n-1``) in one attempt, or raise."""
        raise NotImplementedError

    def classify(self, exc: BaseException) -> ErrorClass:
        """Say whether ``exc`` is worth retrying. Default: timeouts and connection errors are."""
        if isinstance(exc, (TimeoutError, ConnectionError)):
            return ErrorClass(ErrorKind.TRANSIENT, f"{type(exc).__name__}: {exc}")
        return ErrorClass(ErrorKind.FATAL, f"{type(exc).__name__}: {exc}")

    def version(self) -> str | None:
        """The target's version (model revision, agent version) for reports; ``None`` if unknown."""
        return None

    async def aclose(self) -> None:
        """Release clients, servers or models the adapter holds."""


_KEY_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)  # built once: json.dumps
# with options builds an encoder per call, a fifth of a key's cost on every cached call


def cache_key(
    target_id: str, messages: Sequence[Message], sampling: Sampling, sample_index: int, extra: Any = None
) -> str:
    """A stable key for one sample: target, messages, sampling parameters and sample index."""
    payload = _KEY_JSON.encode(
        {
            "target": target_id,
            "messages": list(messages),
            "sampling": sampling.as_dict(),
            "index": sample_index,
            "extra": extra,
        }
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
