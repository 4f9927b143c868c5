"""A generated task's topic, read from its text: the nearest configured topic by sentence embedding.

A prompted curriculum asks its model for a task *about* a topic, in rotation; a small model often
writes about something else (issue 27: the snail-in-a-well task came back under "shopping"), so
the topic it was asked for misfiles the task in the frontier map. :class:`TopicAssigner` files
each task under the configured topic whose description, "a math word problem about {topic}", is
nearest to the task's text by cosine similarity of sentence embeddings (all-MiniLM-L6-v2 by
default, the ``embed`` extra's model). The topic asked for stays in the case's metadata
(``asked_topic``). ``benchmarks/validity_bench.py --topics`` measures how often a reader agrees.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from frontier_qa.errors import ConfigError

log = logging.getLogger(__name__)

TOPIC_FROM = ("text", "asked")
"""Where a generated task's topic comes from: its ``text`` (:class:`TopicAssigner`), or the topic ``asked`` for."""

TEMPLATES = {"math": "a math word problem about {topic}"}
DEFAULT_TEMPLATE = "a question about {topic}"


class TopicAssigner:
    """Files task texts under the nearest of ``topics``.

    Args:
        topics: the topic names (the curriculum's ``topics``).
        domain: the curriculum's domain; picks the description template (:data:`TEMPLATES`).
        embedder: anything with ``encode(texts) -> array``, or an embedder spec for
            :func:`~frontier_qa.scoring._embedders.get_embedder` (default ``None``: the bundled
            sentence-transformers model); a spec is loaded on first use.

    Raises:
        ConfigError: no topics.
    """

    def __init__(self, topics: Sequence[str], *, domain: str = "math", embedder: Any = None) -> None:
        if not topics:
            raise ConfigError("topics from the text need topic names", hint="set curriculum.topics")
        self.topics = list(dict.fromkeys(topics))
        self.template = TEMPLATES.get(domain, DEFAULT_TEMPLATE)
        self._embedder = embedder
        self._topic_rows: Any = None

    @property
    def method(self) -> str:
        return f"nearest of the configured topics by sentence embedding, each as {self.template!r}"

    def _rows(self, texts: Sequence[str]) -> Any:
        import numpy as np

        if self._embedder is None or isinstance(self._embedder, str):
            from frontier_qa.scoring._embedders import get_embedder

            self._embedder = get_embedder(self._embedder)
        rows = np.asarray(self._embedder.encode(list(texts)), dtype=float)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)

    def assign_many(self, texts: Sequence[str]) -> list[str]:
        """The topic of each text, in order."""
        if not texts:
            return []
        if self._topic_rows is None:
            self._topic_rows = self._rows([self.template.format(topic=t) for t in self.topics])
        similarity = self._rows(texts) @ self._topic_rows.T
        return [self.topics[int(i)] for i in similarity.argmax(axis=1)]

    def assign(self, text: str) -> str:
        """The topic of one text."""
        return self.assign_many([text])[0]


__all__ = ["DEFAULT_TEMPLATE", "TEMPLATES", "TOPIC_FROM", "TopicAssigner"]
