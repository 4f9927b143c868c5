"""The executor as a target during co-evolution: one engine per executor model, shared by the phases.

Every phase that samples the executor (the curriculum's reward, the pool, held-out and Table 5
evaluation) goes through the probe's tool-integrated target, ``tools+<backend>:<model>``, with
the run's sandbox. ``executor.sampler`` picks the backend:

    transformers    ``tools+hf:``: the model in this process (small models, CPU)
    vllm            ``tools+vllm:``: an in-process ``vllm.LLM`` (its engine core in a child process)
    vllm-server     ``tools+vllm-server:``: a managed OpenAI-compatible vLLM server on a free port

At Agent0's scale the executor answers ≈ 102,400 curriculum-reward samples (5 rounds × 2,048
tasks × k = 10), 10,000 pool samples and the evaluation per iteration, so it is opened once per
model and kept open across
phases: iteration t's curriculum and pool both sample executor t − 1 from one engine. The
executor's training phase changes the weights, so the engine is closed before it (freeing the
GPU for ADPO) and the next phase opens ``tools+…:<new model>``: the weights sampled are always
the latest trained ones. Samples are cached in ``<run_dir>/executor-cache`` under the target's
id, which names the model folder, so a resumed run does not sample a task twice.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from frontier_qa.config import TargetConfig
from frontier_qa.runtime import Limits, open_target, run_sync
from frontier_qa.target import Target

SAMPLER_PREFIX = {"transformers": "hf", "vllm": "vllm", "vllm-server": "vllm-server"}
"""``executor.sampler`` → the adapter prefix of the tool-integrated spec."""

CACHE_DIR = "executor-cache"
VLLM_GPU_SHARE = 0.4
"""In-process vLLM's ``gpu_memory_utilization`` unless ``executor.target_options`` sets one: the
curriculum trains on the same GPU while its reward samples the executor."""


OWN_MODEL_LIMITS = Limits(timeout_s=None)
"""Limits for the run's own models (executor and curriculum): no rate limit and no per-call timeout.
A local model answers the calls queued on it one batch at a time, so on a busy machine a call can
wait minutes for its turn; a timeout there would turn slowness into failure. Errors still count
towards ``max_consecutive_failures``."""


def model_options(model: Any, extra: dict[str, Any]) -> dict[str, Any]:
    """Adapter options from a model section (dtype, chat template, remote code) under ``extra``."""
    options = dict(extra)
    if model.dtype != "auto":
        options.setdefault("dtype", model.dtype)
    if model.chat_template is not None:
        options.setdefault("chat_template", model.chat_template)
    if model.trust_remote_code:
        options.setdefault("trust_remote_code", True)
    return options


def executor_spec(sampler: str, model: str | Path) -> str:
    """``tools+<prefix>:<model>`` for ``executor.sampler``."""
    return f"tools+{SAMPLER_PREFIX[sampler]}:{model}"


def executor_target_config(config: Any, model: Path, cache: Path | bool) -> TargetConfig:
    """The executor as a probe target: the sampler's spec with the run's sandbox and adapter options."""
    e = config.executor
    options = model_options(e.model, e.target_options)
    if e.sampler == "vllm":
        options.setdefault("gpu_memory_utilization", VLLM_GPU_SHARE)
    return TargetConfig(spec=executor_spec(e.sampler, model), options=options,
                        tool_options=e.tools.executor_options(),
                        cache=str(cache) if isinstance(cache, Path) else cache)


def open_executor(config: Any, model: Path, cache: Path | bool) -> Target:
    """Open ``executor_target_config`` with :data:`OWN_MODEL_LIMITS` (the executor is the run's own model)."""
    t = executor_target_config(config, model, cache)
    return open_target(t.spec or "", limits=OWN_MODEL_LIMITS, cache=t.cache if t.cache is not False else False,
                       tool_options=t.tool_options, **t.options)


def free_memory() -> None:
    """Collect garbage and return cached GPU memory (after a model or an engine is closed)."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover - the train extra brings torch
        pass


def close_target(target: Target) -> None:
    """Close a target (its engine, server or model) and free the memory it held."""
    close = getattr(target, "aclose", None)
    if close is not None:
        run_sync(close())
    free_memory()


class ExecutorTargets:
    """The open executor target, one model at a time.

    Args:
        config: the co-evolution config (``executor.sampler``, its options and tools).
        say: progress lines ("opening ...", "closing ...").

    Attributes:
        opened: every model folder opened, in order (one engine start each).
    """

    def __init__(self, config: Any, say: Callable[[str], None] = lambda line: None) -> None:
        self.config = config
        self.say = say
        self.cache = Path(config.run_dir) / CACHE_DIR
        self.opened: list[Path] = []
        self._model: Path | None = None
        self._target: Target | None = None

    @property
    def model(self) -> Path | None:
        """The model folder of the open target, ``None`` when none is open."""
        return self._model

    def get(self, model: Path) -> Target:
        """The target for ``model``: the open one, or a new one (closing a different model's first)."""
        model = Path(model)
        if self._target is not None and self._model == model:
            return self._target
        self.release()
        spec = executor_spec(self.config.executor.sampler, model)
        self.say(f"executor: opening {spec}")
        self._target = open_executor(self.config, model, self.cache)
        self._model = model
        self.opened.append(model)
        return self._target

    def release(self) -> None:
        """Close the open target (before the executor trains: its weights are about to change)."""
        if self._target is None:
            return
        target, self._target, self._model = self._target, None, None
        close_target(target)

    def __enter__(self) -> ExecutorTargets:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["CACHE_DIR", "OWN_MODEL_LIMITS", "SAMPLER_PREFIX", "VLLM_GPU_SHARE", "ExecutorTargets", "close_target",
           "executor_spec", "executor_target_config", "free_memory", "model_options", "open_executor"]
