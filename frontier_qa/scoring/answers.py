"""Read the final answer out of a target's text, in the form the case asks for.

Every extractor returns ``None`` when there is no answer — never a placeholder string
such as ``"None"`` that a majority vote could count (the reference code's
``answers[-1]`` took the last *character* of a string, and an absent box became
``"e"``; docs/method.md, defects 1 and 5). Formats are chosen per case
(:attr:`frontier_qa.target.Case.answer_format`):

========================  =============================================================
``"boxed"``               the last top-level ``\\boxed{…}`` / ``\\fbox{…}`` (nested braces)
``"final_answer"``        the last ``Final answer: …`` / ``Answer: …`` line, or ``#### 42``
``"json:<field>"``        a field of a JSON object (``answer``, ``result.value``, ``items.0``)
``"text"``                the whole text, stripped (open-ended tasks)
``"auto"``                boxed, then final-answer line, then JSON ``answer``, then a reply
                          that is nothing but a short answer (``42``, ``Saturday``,
                          ``$1.50``: one line, at most 8 words), else ``None``
========================  =============================================================

``auto`` is the default of a case that does not name its format: an agent that answers
in plain text is read as it answers, and one that boxes or labels its answer is read by
the box or label. A long reply with no marked answer is none: open-ended answers need
``"text"`` (compared by meaning).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from frontier_qa.errors import AnswerError

ANSWER_FORMATS: tuple[str, ...] = ("auto", "boxed", "final_answer", "json:<field>", "text")
"""The answer formats :func:`extract_answer` understands (``<field>`` is a dotted path)."""

_BOX_OPENER = re.compile(r"\\(?:boxed|fbox)\s*\{")
# A brace escaped as \{ or \} is a literal brace in LaTeX and does not nest.
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.S)

# "Final answer: 42", "**Final Answer:** 42", "**Answer**: 42", "### Final answer: 42".
_LABEL = r"(?:final[ \t]+answer|answer)"
_MARKUP = r"[ \t>*_#\-]*"
_FINAL_LINE = re.compile(
    rf"^{_MARKUP}{_LABEL}[ \t]*(?:\*\*|__)?[ \t]*[:：](?P<value>[^\n]*)$", re.I | re.M
)
# Inside a sentence: "... so the final answer is 42." / "Counting gives 49. Final answer: 49".
# Only the two-word label counts mid-line: a bare "answer is" is too common in reasoning.
_FINAL_INLINE = re.compile(
    r"\bfinal[ \t]+answer[ \t]*(?:\*\*|__)?[ \t]*(?:[:：]|is\b)[ \t]*(?P<value>[^\n]+)", re.I
)
# "**Final Answer**" or "#### Final answer" alone on a line: the answer is on the next line.
_FINAL_HEADING = re.compile(rf"^{_MARKUP}final[ \t]+answer[ \t]*(?:\*\*|__)?[ \t]*$", re.I | re.M)
# GSM8K's "#### 42". The value must start like a number so a markdown heading
# ("#### Step 2") is not taken for an answer.
_GSM8K_LINE = re.compile(r"^[ \t]*####[ \t]*(?P<value>[-+$\\.(\d][^\n]*)$", re.M)
_EMPHASIS = re.compile(r"^(?:\*\*|__|\*|_|`)+|(?:\*\*|__|\*|_|`)+$")
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\n(?P<body>.*?)```", re.S)


def check_answer_format(answer_format: str) -> str:
    """Validate an answer format and return it stripped.

    Args:
        answer_format: one of :data:`ANSWER_FORMATS`, e.g. ``"boxed"`` or ``"json:result.value"``.

    Raises:
        AnswerError: the format is unknown or ``json:`` has no field path.
    """
    fmt = answer_format.strip() if isinstance(answer_format, str) else answer_format
    if fmt in ("auto", "boxed", "final_answer", "text"):
        return fmt
    if isinstance(fmt, str) and fmt.startswith("json:"):
        path = fmt[len("json:") :].strip()
        if not path or any(not part for part in path.split(".")):
            raise AnswerError(
                f"answer format {answer_format!r} has an empty JSON field path",
                hint="write the field as json:<field>, e.g. json:answer or json:result.value",
            )
        return f"json:{path}"
    raise AnswerError(
        f"unknown answer format {answer_format!r}",
        hint="use one of: " + ", ".join(ANSWER_FORMATS),
    )


def extract_answer(text: str | None, answer_format: str = "auto") -> str | None:
    """Extract the final answer from ``text`` in the given format.

    Args:
        text: the target's final text; ``None`` for a failed sample.
        answer_format: one of :data:`ANSWER_FORMATS`.

    Returns:
        The answer, stripped, or ``None`` when there is none (or ``text`` is ``None``).

    Raises:
        AnswerError: unknown ``answer_format``, or ``text`` is not a string.
    """
    fmt = check_answer_format(answer_format)
    if text is None:
        return None
    if not isinstance(text, str):
        raise AnswerError(
            f"cannot extract an answer from a {type(text).__name__}",
            hint="pass the target's final text (a str), or None for a failed sample",
        )
    if fmt == "boxed":
        return extract_boxed(text)
    if fmt == "final_answer":
        return extract_final_answer(text)
    if fmt == "text":
        return text.strip() or None
    if fmt == "auto":
        read = _read_auto(text)
        return None if read is None else read[1]
    return extract_json_field(text, fmt[len("json:") :])


def _read_auto(text: str) -> tuple[str, str] | None:
    """``(form, answer)`` from the first form of :data:`AUTO_FORMS` that ``text`` holds."""
    for form, reader in AUTO_FORMS:
        found = reader(text)
        if found is not None:
            return form, found
    return None


def answer_form(text: str | None, answer_format: str) -> str | None:
    """The form an answer was read from: for ``auto`` the form it found (``boxed``, ``answer
    line``, ``JSON``, ``plain reply``), for any other format the format itself; ``None`` when
    the text holds no answer in that format (what a report counts as unreadable).
    """
    fmt = check_answer_format(answer_format)
    if text is None:
        return None
    if fmt == "auto":
        read = _read_auto(text)
        return None if read is None else read[0]
    return fmt if extract_answer(text, fmt) is not None else None


def sample_answers(samples: Iterable[Any], answer_format: str) -> list[str | None]:
    """The answer of each sample (a :class:`~frontier_qa.target.Trajectory`) in ``answer_format``;
    a failed sample (``ok`` false) has none.

    Raises:
        AnswerError: unknown ``answer_format``.
    """
    fmt = check_answer_format(answer_format)
    return [extract_answer(t.text, fmt) if t.ok else None for t in samples]


def extract_boxed(text: str) -> str | None:
    """The content of the last top-level ``\\boxed{…}`` (or ``\\fbox{…}``), braces balanced.

    ``\\boxed {x}`` (space before the brace) counts; ``\\{``/``\\}`` are literal braces.
    A box that directly wraps another box is unwrapped (``\\boxed{\\boxed{1}}`` → ``1``).

    Returns:
        The stripped content, or ``None`` when there is no box, the last box never closes
        (a truncated generation: an earlier box is an intermediate result, not the answer),
        or the box is empty.
    """
    last: str | None = None
    pos = 0
    while (opener := _BOX_OPENER.search(text, pos)) is not None:
        end = closing_brace(text, opener.end())
        if end is None:
            return None
        last = text[opener.end() : end]
        pos = end + 1
    if last is None:
        return None
    last = last.strip()
    inner = _BOX_OPENER.match(last)
    if inner is not None and closing_brace(last, inner.end()) == len(last) - 1:
        return extract_boxed(last)
    return last or None


def closing_brace(text: str, start: int) -> int | None:
    """Index of the ``}`` closing the group opened just before ``start``, or ``None``."""
    depth = 1
    for token in _BRACE_TOKEN.finditer(text, start):
        char = token.group()
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return token.start()
    return None


def extract_final_answer(text: str) -> str | None:
    """The answer on the last ``Final answer:``/``Answer:`` line or GSM8K ``#### …`` line.

    Labels are case-insensitive and may carry markdown (``**Final answer:** 42``,
    ``**Answer**: 42``, ``### Final Answer: 42``). When the label stands alone
    (``Final answer:`` or a ``**Final Answer**`` heading) the answer is the next non-empty
    line. A boxed value on the line is unboxed; emphasis around the value is removed.

    Returns:
        The answer from whichever form appears last in ``text``, or ``None``.
    """
    found: list[tuple[int, str]] = []
    for match in _FINAL_LINE.finditer(text):
        value = match.group("value").strip() or _next_line(text, match.end())
        found.append((match.start(), value))
    for match in _FINAL_INLINE.finditer(text):
        if not any(start == match.start() for start, _ in found):
            found.append((match.start(), match.group("value").strip().rstrip(".")))
    for match in _FINAL_HEADING.finditer(text):
        found.append((match.start(), _next_line(text, match.end())))
    for match in _GSM8K_LINE.finditer(text):
        found.append((match.start(), match.group("value")))
    if not found:
        return None
    value = max(found, key=lambda item: item[0])[1].strip()
    boxed = extract_boxed(value)
    if boxed is not None:
        return boxed
    return _EMPHASIS.sub("", value).strip() or None


PLAIN_MAX_WORDS = 8
PLAIN_MAX_CHARS = 64
_ANSWER_IS = re.compile(r"^(?:the\s+)?answer\s*(?:is\b|[:：])\s*", re.I)


def extract_plain(text: str) -> str | None:
    """Read a reply that is nothing but its answer (``42``, ``Saturday``, ``**$1.50**``, ``The answer is 7.``).

    One line of at most :data:`PLAIN_MAX_WORDS` words and :data:`PLAIN_MAX_CHARS` characters,
    with emphasis, a leading "the answer is" and a closing full stop removed. A reply holding a
    box (an unclosed one is a cut-off generation), a JSON value or a code fence is not plain.

    Returns:
        The answer, or ``None`` for anything longer or marked up.
    """
    value = text.strip()
    if (not value or "\n" in value or len(value) > PLAIN_MAX_CHARS or len(value.split()) > PLAIN_MAX_WORDS
            or _BOX_OPENER.search(value) or value[0] in "{[" or "```" in value):
        return None
    value = _ANSWER_IS.sub("", _EMPHASIS.sub("", value).strip())
    value = _EMPHASIS.sub("", value.rstrip(".").strip()).strip()
    return value or None


AUTO_FORMS: tuple[tuple[str, Callable[[str], str | None]], ...] = (
    ("boxed", extract_boxed), ("answer line", extract_final_answer),
    ("JSON", lambda text: extract_json_field(text, "answer")), ("plain reply", extract_plain))
"""The forms ``auto`` tries, in this order, each with its reader."""


def _next_line(text: str, pos: int) -> str:
    for line in text[pos:].splitlines():
        if line.strip():
            return line
    return ""


def extract_json_field(text: str, field: str = "answer") -> str | None:
    """A field of a JSON object in ``text``, as a string.

    Looks, in order, at the whole text as JSON; the last fenced code block (```` ```json ````)
    whose object has the field; the last top-level JSON object in the text that has it.

    Args:
        text: the target's final text.
        field: dotted path (``"answer"``, ``"result.value"``); integer parts index lists.

    Returns:
        Strings stripped; numbers and booleans as JSON writes them (``42``, ``0.5``, ``true``);
        objects and lists as compact JSON; ``None`` when absent, ``null`` or an empty string.
    """
    path = field.split(".")
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    else:
        return _as_answer(_lookup(whole, path))
    for fence in reversed(list(_FENCE.finditer(text))):
        try:
            value = _lookup(json.loads(fence.group("body")), path)
        except (ValueError, RecursionError):
            continue
        if value is not _MISSING:
            return _as_answer(value)
    for obj in reversed(_top_level_objects(text)):
        value = _lookup(obj, path)
        if value is not _MISSING:
            return _as_answer(value)
    return None


_MISSING: Any = object()


def _lookup(obj: Any, path: list[str]) -> Any:
    for part in path:
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.lstrip("-").isdigit() and -len(obj) <= int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return _MISSING
    return obj


def _as_answer(value: Any) -> str | None:
    if value is _MISSING or value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _top_level_objects(text: str) -> list[Any]:
    """Every JSON object in ``text`` that is not inside another one, in order."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pos = text.find("{", pos + 1)
            continue
        found.append(obj)
        pos = text.find("{", end)
    return found
