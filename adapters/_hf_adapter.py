"""Local transformers models as targets (spec ``hf:/path/to/model`` or ``hf:smollm2``).

CPU-friendly: float32 on CPU (bf16 is ≈ 50× slower there), CUDA when present. Concurrent
``generate`` calls are merged by :class:`~frontier_qa.adapters._batching.MicroBatcher`
into one left-padded batch, so asking for every case of a round at once runs one
``model.generate``; one worker thread owns the model.

Each row of a batch is one sample and draws from its own random stream seeded with
``Sampling.seed_for(case, sample_index)`` (the base seed mixed with the case, plus the index;
``Sampling.seed`` docs), so sample ``i`` of a case is the same text
whether it was drawn alone, with ``n=10`` or next to other cases. Transformers' own sampler
uses one global generator for the whole batch, which would tie a sample to its batch
neighbours; here a logits processor samples every row itself and leaves the chosen token as
the only finite logit, and ``generate`` runs greedy over that.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_qa._optional import missing_extras, require
from frontier_qa.adapters._local_batched import (
    BatchRequest,
    LocalBatchedAdapter,
    RowStopper,
    conversation_after,
    create_local,
    render_prompt,
)
from frontier_qa.adapters.tool_executor import cut_turn
from frontier_qa.errors import ConfigError
from frontier_qa.runtime._cpu_share import ThreadFitter
from frontier_qa.runtime._local_models import quiet_progress_bars
from frontier_qa.target import Case, Sampling, Trajectory

_PURPOSE = "A local transformers target (hf:...)"


@dataclass(frozen=True)
class _Request(BatchRequest):
    """One ``generate`` call as queued for the worker, with its base seed."""

    seed: int  # the sample with absolute index j draws from seed + j (seed = Sampling.seed_for(case, 0))


@dataclass(frozen=True)
class _Row:
    """One sample to draw: a prompt and its own sampling parameters."""

    prompt_ids: list[int]
    seed: int
    temperature: float
    top_p: float
    max_tokens: int
    stop: tuple[str, ...]


class HFAdapter(LocalBatchedAdapter[_Request]):
    """A transformers causal LM answering cases through its chat template.

    Args:
        model: folder of a transformers model (loaded with ``local_files_only=True``).
        name: identity used in :attr:`id` (default: the folder's absolute path).
        dtype: ``"auto"`` (float32 on CPU; bfloat16, else float16, on CUDA), ``"float32"``,
            ``"bfloat16"`` or ``"float16"``.
        device: ``"auto"`` (CUDA if available, else CPU) or a torch device string.
        max_batch_rows: most samples (rows) in one ``model.generate`` call.
        batch_wait_s: seconds to wait for concurrent requests to join a batch.
        max_n: most samples one call may ask for.
        chat_template: a Jinja chat template overriding the tokenizer's.
        trust_remote_code: passed to ``from_pretrained``.

    Attributes:
        generate_calls: how many times ``model.generate`` ran (what micro-batching saves).
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        name: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        max_batch_rows: int = 32,
        batch_wait_s: float = 0.005,
        max_n: int = 64,
        chat_template: str | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        self.path = Path(model).expanduser().resolve()
        # A PEFT adapter folder (a LoRA checkpoint of the curriculum trainer) loads onto its base.
        self.base = adapter_base(self.path)
        if self.base is None and not (self.path / "config.json").is_file():
            raise ConfigError(
                f"hf model folder {str(self.path)!r} does not exist or has no config.json",
                hint="give a local transformers model folder (or a LoRA adapter folder with "
                "adapter_config.json); frontier-qa never downloads from a hub here (or use 'hf:smollm2' "
                "for the offline SmolLM2-135M-Instruct)",
            )
        self._torch = require("torch", extra="local", purpose=_PURPOSE)
        self._transformers = require("transformers", extra="local", purpose=_PURPOSE)
        self.device = _pick_device(self._torch, device)
        self.dtype_name = _pick_dtype(self._torch, dtype, self.device)
        self.id = f"hf:{name or self.path}?dtype={self.dtype_name}"
        self.max_n = max_n
        self.max_batch_rows = max_batch_rows
        self.generate_calls = 0
        self._chat_template = chat_template
        self._trust_remote_code = trust_remote_code
        self._threads: ThreadFitter | None = None
        self._start_batcher("hf", max_batch_rows=max_batch_rows, batch_wait_s=batch_wait_s)

    def _load(self) -> None:
        # transformers checks some packages only when a file needs them (a tokenizer that needs
        # sentencepiece or protobuf, GGUF weights that need accelerate): name the extra instead.
        with missing_extras("local", _PURPOSE):
            self._load_model()

    def _load_model(self) -> None:
        torch, transformers = self._torch, self._transformers
        weights = self.base or self.path
        has_tokenizer = any(self.path.glob("tokenizer*"))
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(self.path if has_tokenizer else weights), local_files_only=True,
            trust_remote_code=self._trust_remote_code,
        )
        self._use_tokenizer(tokenizer, self._chat_template)
        with quiet_progress_bars():  # a "Loading weights" bar per load fills CI logs
            model = transformers.AutoModelForCausalLM.from_pretrained(
                str(weights),
                dtype=getattr(torch, self.dtype_name),
                local_files_only=True,
                trust_remote_code=self._trust_remote_code,
            )
        if self.base is not None:  # merged once at load: generation then runs at full speed
            peft = require("peft", extra="train", purpose="Loading a LoRA adapter folder")
            model = peft.PeftModel.from_pretrained(model, str(self.path)).merge_and_unload()
        self.model = model.to(self.device)
        self.model.eval()
        self._threads = ThreadFitter(torch) if str(self.device) == "cpu" else None
        eos = {self.tokenizer.eos_token_id, *_as_list(self.model.generation_config.eos_token_id)}
        self.eos_ids = sorted(int(token) for token in eos if token is not None)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else self.eos_ids[0])

    def _request(self, case: Case, n: int, sampling: Sampling, start: int) -> _Request:
        seed = sampling.seed_for(case, 0)
        if seed is None:
            seed = secrets.randbits(62)
        return _Request(case, n, sampling, start, seed)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._batcher.close)
        self.model = None  # let the weights go even if the adapter object lives on
        self.tokenizer = None

    # ----- worker thread --------------------------------------------------------------

    def _run_batch(self, requests: list[_Request]) -> list[list[Trajectory] | BaseException]:
        results: list[list[Trajectory] | BaseException] = [[] for _ in requests]

        def row(request: _Request, prompt: list[int], i: int) -> _Row:
            s = request.sampling
            return _Row(prompt, request.seed + i, s.temperature, s.top_p, s.max_tokens, tuple(s.stop))

        rows, owners = self._sample_rows(requests, results, row)
        outputs: list[tuple[str, int, int]] = []
        for lo in range(0, len(rows), self.max_batch_rows):
            if self._batcher.should_stop():
                break  # the batcher turns a stopped batch into BatchStoppedError for its callers
            outputs.extend(self._generate_rows(rows[lo : lo + self.max_batch_rows]))
        if self._batcher.should_stop():
            return self._stopped(requests)
        return self._gather(requests, results, owners, outputs)

    def _generate_rows(self, rows: list[_Row]) -> list[tuple[str, int, int]]:
        """Run one ``model.generate`` over ``rows``; return (text, prompt tokens, completion tokens)."""
        torch, transformers = self._torch, self._transformers
        width = max(len(row.prompt_ids) for row in rows)
        # Left padding: every row's last prompt token sits in the last column, so new tokens
        # line up; the attention mask hides the padding (and generate derives positions from it).
        ids = [[self.pad_id] * (width - len(row.prompt_ids)) + row.prompt_ids for row in rows]
        mask = [[0] * (width - len(row.prompt_ids)) + [1] * len(row.prompt_ids) for row in rows]
        input_ids = torch.tensor(ids, dtype=torch.long, device=self.device)
        attention_mask = torch.tensor(mask, dtype=torch.long, device=self.device)
        stopper = _RowStopper(self.tokenizer, rows, self.eos_ids, abort=self._batcher.should_stop)
        config = transformers.GenerationConfig(
            do_sample=False,  # _RowSampler has already sampled; greedy reads its one-hot choice
            num_beams=1,
            max_new_tokens=max(row.max_tokens for row in rows),
            pad_token_id=self.pad_id,
            eos_token_id=self.eos_ids,
        )
        self.generate_calls += 1
        if self._threads is not None:
            self._threads.fit()  # the cores other processes leave free now (runtime/_cpu_share.py)
        with torch.inference_mode():
            sequences = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                generation_config=config,
                logits_processor=transformers.LogitsProcessorList([_RowSampler(torch, rows)]),
                stopping_criteria=transformers.StoppingCriteriaList([stopper]),
            )
        out = []
        for r, row in enumerate(rows):
            stopped_at = stopper.lengths[r]
            length = stopped_at if stopped_at is not None else sequences.shape[1] - width
            new = sequences[r, width : width + length].tolist()
            text = cut_turn(self.tokenizer.decode(new, skip_special_tokens=True), row.stop)
            out.append((text, len(row.prompt_ids), length))
        return out


class _RowSampler:
    """Logits processor that samples each row with its own seeded stream (see module doc).

    Temperature and top-p are applied per row; the draw is an inverse-CDF lookup with a
    uniform number from ``random.Random(seed)``, so it depends only on the row's own seed and
    probabilities, never on the other rows. Temperature 0 means greedy.
    """

    _NUCLEUS_K = 1024  # candidates tried before a full vocabulary sort (enough at top_p <= 0.99)

    def __init__(self, torch: Any, rows: Sequence[_Row]) -> None:
        self.torch = torch
        self.streams = [random.Random(row.seed) for row in rows]
        self.temperature = [row.temperature for row in rows]
        self.top_p = [row.top_p for row in rows]
        self.plain = [r for r, row in enumerate(rows) if row.temperature > 0 and row.top_p >= 1]
        self.nucleus = [r for r, row in enumerate(rows) if row.temperature > 0 and row.top_p < 1]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch = self.torch
        logits = scores.float()
        # One uniform per row per step, always drawn, so a row's stream never depends on others.
        u = [stream.random() for stream in self.streams]
        choice = logits.argmax(dim=-1)
        if self.plain:  # no nucleus: inverse CDF in vocabulary order, no sort needed
            rows = torch.tensor(self.plain, device=logits.device)
            temps = torch.tensor([self.temperature[r] for r in self.plain], device=logits.device)
            cdf = torch.softmax(logits[rows] / temps[:, None], dim=-1).cumsum(dim=-1)
            target = torch.tensor([u[r] for r in self.plain], device=logits.device) * cdf[:, -1]
            position = (cdf < target[:, None]).sum(dim=-1).clamp_max(logits.shape[-1] - 1)
            choice[rows] = position
        for r in self.nucleus:
            probs = torch.softmax(logits[r] / self.temperature[r], dim=-1)
            # The nucleus is the smallest prefix of tokens by probability with mass >= top_p;
            # a top-k usually holds it, and a full sort (≈ 5 ms at 49k tokens) is the fallback.
            ordered, order = probs.topk(min(self._NUCLEUS_K, probs.shape[-1]))
            if float(ordered.sum()) < self.top_p[r]:
                ordered, order = probs.sort(descending=True, stable=True)
            kept = ordered * ((ordered.cumsum(dim=-1) - ordered) < self.top_p[r])
            cdf = kept.cumsum(dim=-1)
            position = int((cdf < u[r] * cdf[-1]).sum().clamp_max(cdf.shape[-1] - 1))
            choice[r] = order[position]
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(1, choice[:, None], 0.0)
        return out


class _RowStopper(RowStopper):
    """Stopping criterion: each row ends by :class:`RowStopper`'s rules; the lengths it records
    matter since ``generate`` pads finished rows afterwards and the pad id may be a real token.
    ``abort()`` true ends every row at once.
    """

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch  # already loaded by the adapter; kept local so the module stays light

        if self.abort():
            return torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        last = input_ids[:, -1].tolist()  # called once a step: the token each row has just generated
        done = [self.lengths[r] is not None or self.add(r, int(last[r])) for r in range(len(self.rows))]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def adapter_base(folder: Path) -> Path | None:
    """The base model folder of a PEFT adapter folder, ``None`` when ``folder`` is not one.

    Raises:
        ConfigError: an adapter whose base model is not a model folder on this machine.
    """
    config = folder / "adapter_config.json"
    if (folder / "config.json").is_file() or not config.is_file():
        return None
    try:
        base = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read {str(config)!r}: {err}", hint="is the adapter folder complete?") from None
    base_path = Path(str(base or "")).expanduser()
    if not base or not (base_path / "config.json").is_file():
        raise ConfigError(
            f"the LoRA adapter in {str(folder)!r} needs its base model {base!r}, which is not a model "
            "folder on this machine",
            hint="merge it where the base exists (`frontier-qa train merge ADAPTER OUT`) and use hf:OUT",
        )
    return base_path.resolve()


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _pick_device(torch: Any, device: str) -> str:
    if device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def _pick_dtype(torch: Any, dtype: str, device: str) -> str:
    allowed = ("float32", "bfloat16", "float16")
    if dtype == "auto":
        if not device.startswith("cuda"):
            return "float32"  # bf16 matmuls are ≈ 50× slower on CPU (docs/environment.md)
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if dtype not in allowed:
        raise ConfigError(f"unknown dtype {dtype!r} for an hf target", hint=f"use 'auto' or one of {allowed}")
    return dtype


def create(rest: str, **options: Any) -> HFAdapter:
    """Factory for ``hf:PATH`` / ``hf:smollm2`` specs; ``options`` go to :class:`HFAdapter`.

    An alias (``smollm2``) is built or found in the local model cache first
    (:func:`frontier_qa.runtime._local_models.ensure_smollm2`); ``cache_dir`` may be passed for it.
    """
    return create_local(HFAdapter, "hf", rest, options)


__all__ = ["HFAdapter", "conversation_after", "create", "render_prompt"]
