"""The base of the adapters whose model runs in this process (transformers, in-process vLLM).

Both own a model on one worker thread (:class:`~frontier_qa.adapters._batching.MicroBatcher`):
concurrent ``generate`` calls are merged into one batch, weighted by their samples; the
model loads on that thread before the first batch. They render prompts the same way, through
the tokenizer's chat template (:func:`render_prompt`, with prefill), and return the
conversation after a sample the same way (:func:`conversation_after`). A subclass provides
``_load`` (on the worker) and ``_run_batch`` (one result, or an error, per request).
The engines that generate row by row (transformers, CTranslate2) share their stop rules
(:class:`RowStopper`) and their ``create`` factory (:func:`create_local`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from frontier_qa.adapters._batching import BatchStoppedError, MicroBatcher
from frontier_qa.adapters.tool_executor import STOP_AFTER_CODE, find_code
from frontier_qa.errors import ConfigError
from frontier_qa.runtime._local_models import model_info, resolve_model
from frontier_qa.target import Adapter, Case, Sampling, Trajectory, Usage


@dataclass(frozen=True)
class BatchRequest:
    """One ``generate`` call as queued for the worker (a subclass may add fields)."""

    case: Case
    n: int
    sampling: Sampling
    start: int


R = TypeVar("R", bound=BatchRequest)  # a subclass's queued request
Row = TypeVar("Row")  # one sample to draw, as a subclass's engine takes it


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

    def _use_tokenizer(self, tokenizer: Any, chat_template: str | None) -> None:
        """Sets :attr:`tokenizer`, with ``chat_template`` in place of its own when one is given.

        Raises:
            ConfigError: the tokenizer has no chat template then.
        """
        self.tokenizer = tokenizer
        if chat_template is not None:
            tokenizer.chat_template = chat_template
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError(
                f"the tokenizer in {str(self.path)!r} has no chat template",
                hint="use an instruct/chat model, or pass chat_template='<jinja template>' as an option",
            )

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

    def _sample_rows(self, requests: list[R], results: list[list[Trajectory] | BaseException],
                     row: Callable[[R, list[int], int], Row]) -> tuple[list[Row], list[int]]:
        """One row a sample of every request that renders (:meth:`_render_all`), made by
        ``row(request, prompt ids, sample index)`` (the absolute index, from ``request.start``),
        and the request index of each row.
        """
        rows: list[Row] = []
        owners: list[int] = []
        for r, prompt in self._render_all(requests, results):
            request = requests[r]
            for i in range(request.start, request.start + request.n):
                rows.append(row(request, prompt, i))
                owners.append(r)
        return rows, owners

    @staticmethod
    def _stopped(requests: list[R]) -> list[list[Trajectory] | BaseException]:
        """The result of every request of a batch the batcher stopped."""
        return [BatchStoppedError("the local model stopped this batch before it finished")] * len(requests)

    @staticmethod
    def _gather(requests: list[R], results: list[list[Trajectory] | BaseException], owners: list[int],
                outputs: list[tuple[str, int, int]]) -> list[list[Trajectory] | BaseException]:
        """``results`` with each row's ``(text, prompt tokens, completion tokens)`` appended as a
        sample of its request (``owners``), numbered from the request's ``start``.
        """
        index = {r: requests[r].start for r in range(len(requests))}
        for owner, (text, prompt_tokens, completion_tokens) in zip(owners, outputs, strict=True):
            request = requests[owner]
            trajectory = Trajectory(
                text=text,
                messages=conversation_after(request.case, text),
                usage=Usage(prompt_tokens, completion_tokens),
                sample_index=index[owner],
            )
            index[owner] += 1
            assert isinstance(results[owner], list)
            results[owner].append(trajectory)  # type: ignore[union-attr]
        return results


class StopRow(Protocol):
    """What :class:`RowStopper` reads of a row: its own max tokens and stop strings."""

    @property
    def max_tokens(self) -> int: ...

    @property
    def stop(self) -> tuple[str, ...]: ...


class RowStopper:
    """The stop rules of one batch's rows: each row ends at its own max tokens, stop strings, a
    closed python block (``STOP_AFTER_CODE``) or EOS.

    The engine's callback feeds each row's new tokens to :meth:`add` (the ids so far are kept in
    ``ids``); ``lengths[r]`` is how many tokens row ``r`` had generated when it first finished
    (``None`` while it runs), since an engine may pad a finished row afterwards with a real token.
    ``abort()`` true means the engine should end every row (the batcher is closing or nobody
    waits for the batch any more).
    """

    def __init__(self, tokenizer: Any, rows: Sequence[StopRow], eos_ids: Sequence[int],
                 abort: Callable[[], bool] = lambda: False) -> None:
        self.tokenizer = tokenizer
        self.rows = rows
        self.abort = abort
        self.eos = set(eos_ids)
        self.ids: list[list[int]] = [[] for _ in rows]
        self.lengths: list[int | None] = [None] * len(rows)
        self.code = [STOP_AFTER_CODE in row.stop for row in rows]
        self.stops = [tuple(s for s in row.stop if s and s != STOP_AFTER_CODE) for row in rows]
        # A stop string of c characters spans at most 4c bytes, so at most 4c byte-level tokens
        # (+1 for a token that starts before it): decoding that tail is enough to see it.
        self.tail = [4 * max((len(s) for s in stops), default=0) + 1 for stops in self.stops]

    def add(self, r: int, token: int) -> bool:
        """Row ``r``'s next token; True when it ends the row (whose length is then recorded)."""
        ids = self.ids[r]
        ids.append(token)
        finished = token in self.eos or len(ids) >= self.rows[r].max_tokens
        if not finished and self.stops[r]:
            text = self.tokenizer.decode(ids[-self.tail[r] :], skip_special_tokens=True)
            finished = any(stop in text for stop in self.stops[r])
        if not finished and self.code[r] and "`" in self.tokenizer.decode([token]):
            # only a token with a backtick can close a block: decode the whole turn then
            finished = find_code(self.tokenizer.decode(ids, skip_special_tokens=True)) is not None
        if finished:
            self.lengths[r] = len(ids)
        return finished


A = TypeVar("A", bound=LocalBatchedAdapter[Any])


def create_local(adapter: Callable[..., A], scheme: str, rest: str, options: dict[str, Any]) -> A:
    """The ``create`` factory of a ``scheme:PATH`` / ``scheme:smollm2`` spec whose options go to ``adapter``.

    An alias (``smollm2``) is built or found in the local model cache first
    (:func:`frontier_qa.runtime._local_models.resolve_model`; ``cache_dir`` may be passed for it).

    Raises:
        ConfigError: an option ``adapter`` does not take.
    """
    cache_dir = options.pop("cache_dir", None)
    folder, name = resolve_model(rest, cache_dir=cache_dir)
    accepted = set(inspect.signature(adapter).parameters) - {"model"}  # the class's __init__, less self
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(unknown)} for target '{scheme}:{rest}'",
            hint=f"{scheme} targets accept: {', '.join(sorted(accepted | {'cache_dir'}))}",
        )
    options.setdefault("name", name)
    return adapter(folder, **options)


__all__ = ["BatchRequest", "LocalBatchedAdapter", "RowStopper", "conversation_after", "create_local", "render_prompt"]
