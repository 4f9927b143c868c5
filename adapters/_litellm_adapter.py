"""Targets from any provider litellm supports: ``litellm:PROVIDER/MODEL``.

Keys come from the provider's usual variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``...);
``api_key`` and ``api_base`` options are passed through when given (``api_base`` is part
of the target id, the key never is). litellm's own retries are off; the runtime retries.

Cost comes from litellm's offline cost map (set ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so
``import litellm`` makes no network request): the response's ``response_cost``, else
``litellm.completion_cost``; ``None`` for models the map does not know. Tool calls the model
proposes are recorded as ``ToolCall(name, arguments, result=None)`` (not executed, so they do
not count towards Agent0's N_tool). ``n`` is sent only where litellm says the provider takes
it; otherwise one sample per request.

litellm reports a missing key as an ``InternalServerError`` saying "Missing credentials";
that is classified FATAL with a message saying which key to set (retrying cannot fix it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from frontier_qa._optional import require
from frontier_qa.adapters._openai_adapter import chat_request, classify_openai_error, trajectories_from_response
from frontier_qa.errors import ConfigError
from frontier_qa.redaction import redact, secret_values
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, Trajectory

_MISSING_KEY_MARKERS = ("missing credentials", "api_key client option must be set", "no api key provided")


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    litellm: Any = require("litellm", extra="all", purpose="litellm targets")
    litellm.suppress_debug_info = True  # its "Give Feedback" banners would flood the CLI
    return litellm


def _provider(litellm: Any, model: str, api_base: str | None) -> str:
    try:
        return str(litellm.get_llm_provider(model=model, api_base=api_base)[1])
    except Exception as exc:  # noqa: BLE001 - litellm raises BadRequestError for unknown providers
        raise ConfigError(
            f"litellm cannot tell which provider serves {model!r}",
            hint="write the model as PROVIDER/MODEL, e.g. 'litellm:openai/gpt-4o-mini' or "
            "'litellm:anthropic/claude-3-5-haiku-20241022' (https://docs.litellm.ai/docs/providers)",
        ) from exc


class LiteLLMAdapter(Adapter):
    """One ``litellm.acompletion`` request per call.

    Args:
        model: litellm model string, ``PROVIDER/MODEL``.
        api_key: the provider key (default: the provider's environment variable).
        api_base: a custom endpoint (e.g. a local OpenAI-compatible server).
        supports_n: whether to send ``n``; default: what litellm says about the provider.
        max_n: the most samples per request when ``n`` is supported.
        prefill: whether a final partial assistant message is continued; default: litellm's
            model info (``supports_assistant_prefill``).
        timeout: litellm's per-request timeout in seconds.
        drop_params: let litellm drop parameters the provider does not take (``seed``...).
        **completion_kwargs: more ``litellm.acompletion`` arguments (``extra_headers``...).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        supports_n: bool | None = None,
        max_n: int = 16,
        prefill: bool | None = None,
        timeout: float | None = 600.0,
        drop_params: bool = True,
        **completion_kwargs: Any,
    ) -> None:
        if not model.strip():
            raise ConfigError("litellm target spec has no model", hint="write it as litellm:PROVIDER/MODEL")
        litellm = _litellm()
        self.model = model.strip()
        self.api_base = api_base.rstrip("/") if api_base else None
        self.provider = _provider(litellm, self.model, self.api_base)
        self._api_key = api_key
        if supports_n is None:
            try:
                params = litellm.get_supported_openai_params(model=self.model, custom_llm_provider=self.provider)
            except Exception:  # noqa: BLE001 - unknown model: be conservative
                params = None
            supports_n = "n" in (params or ())
        if prefill is None:
            try:
                prefill = bool(litellm.get_model_info(self.model).get("supports_assistant_prefill"))
            except Exception:  # noqa: BLE001 - models missing from the cost map raise
                prefill = False
        self.max_n = max(1, int(max_n)) if supports_n else 1
        self.supports_prefill = prefill
        self.timeout = timeout
        self.drop_params = drop_params
        self.completion_kwargs = dict(completion_kwargs)
        self.id = f"litellm:{self.model}" + (f"@{self.api_base}" if self.api_base else "")
        self.secrets = tuple(s for s in (api_key, *secret_values(self.completion_kwargs)) if s)

    def request(self, case: Case, n: int, sampling: Sampling, start: int) -> dict[str, Any]:
        """The keyword arguments of ``litellm.acompletion`` for one call."""
        params = chat_request(self.model, case, n, sampling, start)
        kwargs: dict[str, Any] = {
            **params,
            "timeout": self.timeout,
            "max_retries": 0,  # the provider SDK's retries: off, the runtime retries
            "num_retries": 0,  # litellm's own retries: off
            "drop_params": self.drop_params,
            **self.completion_kwargs,
        }
        # per-call values win over user completion kwargs (the seed of the first sample asked keeps samples distinct)
        kwargs.update({key: params[key] for key in ("n", "stop", "seed", "tools") if key in params})
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self.api_base:
            kwargs["api_base"] = self.api_base
        return kwargs

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        litellm = _litellm()
        n = min(n, self.max_n)
        response = await litellm.acompletion(**self.request(case, n, sampling, start))
        return trajectories_from_response(
            case, response, start=start, cost_usd=self._cost(litellm, response),
            continued=self.supports_prefill and case.continues_assistant,
        )[:n]

    @staticmethod
    def _cost(litellm: Any, response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None)
        cost = hidden.get("response_cost") if isinstance(hidden, Mapping) else None
        if cost is None:
            try:
                cost = litellm.completion_cost(completion_response=response)
            except Exception:  # noqa: BLE001 - models missing from the cost map raise
                return None
        return float(cost) if cost is not None else None

    def classify(self, exc: BaseException) -> ErrorClass:
        text = str(exc).lower()
        if any(marker in text for marker in _MISSING_KEY_MARKERS):
            return ErrorClass(
                ErrorKind.FATAL,
                redact(f"no API key for {self.model!r} ({self.provider}): litellm reported "
                       f"'{str(exc)[:160]}'. Set the provider's key variable (e.g. "
                       f"{self.provider.upper()}_API_KEY) or pass api_key=... (for a local "
                       "server any placeholder such as 'EMPTY' works)", self.secrets),
            )
        return classify_openai_error(exc, self.secrets)

    def __repr__(self) -> str:
        return f"LiteLLMAdapter({self.model!r}, api_base={self.api_base!r})"


def create(rest: str, **options: Any) -> LiteLLMAdapter:
    """Registry factory for ``litellm:PROVIDER/MODEL`` specs."""
    return LiteLLMAdapter(rest, **options)


__all__ = ["LiteLLMAdapter", "create"]
