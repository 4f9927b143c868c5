"""Make user and model text safe for XML 1.0, HTML and Markdown.

XML 1.0 allows only #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
(https://www.w3.org/TR/xml/#charsets); a model's output can hold anything. Disallowed
characters (including lone surrogates) become visible ``\\xNN`` / ``\\uNNNN`` text rather
than vanishing, so a reader still sees that they were there.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from frontier_qa.redaction import redact

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object) -> str:
    """``str(text)``, secrets masked, with every character XML 1.0 cannot hold written as an escape."""
    return _NOT_XML.sub(_visible, "" if text is None else redact(str(text)))


def shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters, with an ellipsis when cut; secrets are masked first, so a
    cut never leaves half a key behind.
    """
    text = redact(text)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def esc(text: object) -> str:
    """Cleaned and HTML-escaped (quotes too), for element text and attribute values."""
    return html.escape(clean(text), quote=True)


_MD_INLINE = re.compile(r"([\\`*_\[\]|~])")  # emphasis, code, links, table cells, strikethrough
_MD_LINE_START = re.compile(r"^([#>+=-])")  # headings, quotes, bullet lists where a line starts
_MD_ORDERED = re.compile(r"^(\d+)([.)])")  # "12. " starts an ordered list: escape the dot


def md(text: object, limit: int | None = None) -> str:
    """Inline Markdown text, safe inside a table cell: one line, specials escaped, HTML inert."""
    value = " ".join(clean(text).split())
    if limit is not None:
        value = shorten(value, limit)
    value = html.escape(value, quote=False)  # GitHub renders raw HTML: keep tags inert
    value = _MD_INLINE.sub(r"\\\1", value)
    value = _MD_ORDERED.sub(r"\1\\\2", value)
    return _MD_LINE_START.sub(r"\\\1", value)


def fmt_p(p: float | None) -> str:
    """p̂ or a bound as two decimals, a dash when missing."""
    return "—" if p is None else f"{p:.2f}"


def fmt_usd(usd: float | None) -> str:
    """Dollars with precision that suits the amount; 'unknown' when no sample reported a cost."""
    if usd is None:
        return "unknown"
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


def write_text(path: str | os.PathLike[str], text: str, *, errors: str = "strict") -> Path:
    """Write ``text`` as UTF-8 to ``path``, creating its folder, secrets masked; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(redact(text).encode("utf-8", errors))
    return path
