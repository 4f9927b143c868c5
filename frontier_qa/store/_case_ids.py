"""Case ids a person can read: a slug of the prompt and a short hash of the whole case.

``what-day-of-the-week-was-14-march-1879-3f2a9c``: the first words of the prompt (ASCII,
lower case, at most :data:`SLUG_CHARS` characters, cut at a word) and six hex digits of a
SHA-256 over everything the target sees (system prompt, prompt, tools, history), so equal
tasks get equal ids on every machine and two tasks that share their first words still differ.
Test ids and reports put the topic in front: ``dates/what-day-…-3f2a9c``.

frontier-qa 0.1 named cases ``case-`` plus 16 hex digits (and prompted curricula
``<domain>-`` plus 16); :func:`legacy_case_id` still computes that name, so a case already in a
store under it is found again (the engine looks a proposal's aliases up before giving it a
new id) and keeps its history and baseline.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata

from frontier_qa.redaction import redact
from frontier_qa.target import Case

SLUG_CHARS = 48
"""Most characters of the prompt's slug."""

HASH_DIGITS = 6
"""Hex digits of the hash that follows the slug (24 bits)."""


def slug(text: str, max_chars: int = SLUG_CHARS) -> str:
    """The first words of ``text`` as ``lower-case-ascii-words``, cut at a word; ``"case"`` if none.
    A secret in ``text`` never becomes part of an id (ids are shown everywhere: test ids, reports).
    """
    ascii_text = unicodedata.normalize("NFKD", redact(text)).encode("ascii", "ignore").decode("ascii")
    words = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(words) > max_chars:
        cut = words[: max_chars + 1]
        words = cut[: cut.rfind("-")] if "-" in cut[1:] else words[:max_chars]
    return words.strip("-") or "case"


def _payload(case: Case) -> str:
    return json.dumps(
        {"system": case.system, "prompt": case.prompt, "tools": list(case.tools), "history": list(case.history)},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )


def readable_id(prompt: str, *key: str) -> str:
    """``slug(prompt)-<hash of key>``: a readable id for any stable key (the prompt when none)."""
    parts = key or (prompt,)
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:HASH_DIGITS]
    return f"{slug(prompt)}-{digest}"


def case_id_for(case: Case) -> str:
    """The id of a case given without one: its prompt's slug and a hash of what the target sees."""
    return readable_id(case.prompt, _payload(case))


def legacy_case_id(case: Case) -> str:
    """The id frontier-qa 0.1 gave the same case (``case-`` and 16 hex digits)."""
    return "case-" + hashlib.sha256(_payload(case).encode("utf-8")).hexdigest()[:16]


__all__ = ["HASH_DIGITS", "SLUG_CHARS", "case_id_for", "legacy_case_id", "readable_id", "slug"]
