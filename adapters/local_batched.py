"""The base of the adapters whose model runs in this process (transformers, in-process vLLM).

Both own a model on one worker thread (:class:`~frontier_qa.adapters._batching.MicroBatcher`):
concurrent ``generate`` calls are merged into one batch, weighted by their samples; the
model loads on that thread before the first batch. They render prompts the same way, through
the tokenizer's chat template (:func:`render_prompt`, with prefill), and return the
conversation after a sample the same way (:func:`conversation_after`). A subclass provides
``_load`` (on the worker) and ``_run_batch`` (one result, or an error, per request).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from frontier_qa.adapters._batching import MicroBatcher
from frontier_qa.errors import ConfigError
from frontier_qa.runtime.local_models import model_info
from frontier_qa.target import Adapter, Case, Sampling, Trajectory


@dataclass(frozen=True)
class BatchRequest:
    """One ``generate`` call as queued for the worker (a subclass may add fields)."""

    case: Case
    n: int
    sampling: Sampling
    start: int


R = TypeVar("R", bound=BatchRequest)  # a subclass's queued request


def render_prompt(tokenizer: Any, case: Case) -> list[int]:
    """Token ids of ``case``'s prompt through the chat template.

    A conversation ending in a partial assistant message is continued (prefill); otherwise a
    generation prompt opens the assistant turn. Shared by the transformers and vLLM adapters.
    """
    prefill = case.continues_assistant
    text = tokenizer.apply_chat_template(
        case.messages,
        tools=list(case.tools) or None,
        tokenize=False,
        add_generation_prompt=not prefill,
        continue_final_message=prefill,
    )
    # The template already wrote the special tokens (e.g. <|im_start|>); adding a BOS would
    # put one in front that the model never saw in training.
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def conversation_after(case: Case, text: str) -> tuple[dict[str, Any], ...]:
    """The conversation after one sample: a prefilled assistant turn is extended, else added."""
    messages = case.messages
    if case.continues_assistant:
        last = dict(messages[-1])
        last["content"] = f"{last.get('content') or ''}{text}"
        return (*messages[:-1], last)
    return (*messages, {"role": "assistant", "content": text})


class LocalBatchedAdapter(Adapter, Generic[R]):
    """A local model behind a micro-batching worker thread (module docstring).

    Subclasses set :attr:`path` and :attr:`tokenizer` (in ``_load``), call
    :meth:`_start_batcher` at the end of ``__init__``, and implement :meth:`_request`,
    ``_load`` and ``_run_batch``.

    Attributes:
        generate_calls: how many times the model's ``generate`` ran (what batching saves).
    """

    supports_prefill = True
    stops_after_code = True  # tool_executor.STOP_AFTER_CODE: stop after a closed python block
    in_process = True

    path: Path
    tokenizer: Any
    generate_calls: int = 0
    _batcher: MicroBatcher[R, list[Trajectory]]

    def _start_batcher(self, kind: str, *, max_batch_rows: int, batch_wait_s: float) -> None:
        """The worker thread, which loads the model (``_load``) before its first batch."""
        self._batcher = MicroBatcher(
            self._run_batch,
            weight=lambda request: request.n,
            max_weight=max_batch_rows,
            wait_s=batch_wait_s,
            name=f"frontier-qa-{kind}:{self.path.name}",
            init=self._load,  # on the worker thread that will own the model
        )

    def _request(self, case: Case, n: int, sampling: Sampling, start: int) -> R:
        raise NotImplementedError

    def _load(self) -> None:
        raise NotImplementedError

    def _run_batch(self, requests: list[R]) -> list[list[Trajectory] | BaseException]:
        raise NotImplementedError

    def version(self) -> str | None:
        info = model_info(self.path)
        return info.get("source") if info else None

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        request = self._request(case, n, sampling, start)
        began = time.monotonic()
        trajectories = await self._batcher.submit(request)
        latency = time.monotonic() - began
        return [replace(t, latency_s=latency) for t in trajectories]

    # ----- worker thread --------------------------------------------------------------

    def render(self, case: Case) -> list[int]:
        """Token ids of ``case``'s prompt: chat template, generation prompt or prefill."""
        return render_prompt(self.tokenizer, case)

    def _render_all(self, requests: list[R],
                    results: list[list[Trajectory] | BaseException]) -> list[tuple[int, list[int]]]:
        """``(request index, prompt ids)`` of every request that renders; one that cannot
        fails alone (its result becomes the error).
        """
        rendered = []
        for r, request in enumerate(requests):
            try:
                rendered.append((r, self.render(request.case)))
            except Exception as exc:  # noqa: BLE001 - this request alone fails
                results[r] = ConfigError(f"case {request.case.id!r} cannot be rendered: {exc}")
        return rendered


__all__ = ["BatchRequest", "LocalBatchedAdapter", "conversation_after", "render_prompt"]
