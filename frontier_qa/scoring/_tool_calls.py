"""Tool calls as answers: read the calls a model wrote or made, and put them in one comparable form.

A tool-calling case (answer format ``"json:calls"``, Tool-R0) is answered by the calls the
target makes. Its samples vote like any other answers once each is reduced to
:func:`canonical_calls` form: compact JSON, calls sorted, numbers written as strings read as
numbers, whitespace collapsed. Reading is Tool-R0's "super-relaxed" one (App. E.2): JSON,
Python literals or fenced JSON (:func:`load_relaxed`), OpenAI's and other call shapes
(:func:`normalize_calls`), and calls written as text (:func:`calls_in_text`).

The probe scores tool-calling samples with :func:`tool_calls_answer`; the prompted curriculum
writes its gold calls' reference with :func:`canonical_calls`, so the two compare.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

FENCED = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)```", re.S)
"""A fenced code block: group 1 its language (may be empty), group 2 its body."""

_PLACEHOLDER = re.compile(r"\.\.\.|…")
_ARG_KEYS = ("arguments", "parameters", "args", "params", "input")
_NAME_KEYS = ("name", "tool", "tool_name", "function_name")
_ANSWER_TAG = re.compile(r"<tool_call_answer>(.*?)</tool_call_answer>", re.S | re.I)


def load_relaxed(text: str) -> Any:
    """Tool-R0's "super-relaxed" loader (App. E.2): JSON, Python literals or fenced JSON.

    Raises:
        ValueError: the text holds an ellipsis placeholder (``...``/``…``), which Tool-R0 treats
            as invalid, or parses under none of the three readings.
    """
    body = text.strip()
    fenced = FENCED.search(body)
    if fenced is not None:
        body = fenced.group(2).strip()
    if _PLACEHOLDER.search(body):
        raise ValueError("it holds an ellipsis placeholder ('...')")
    try:
        return json.loads(body)
    except ValueError:
        pass
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    # JSON literals inside an otherwise Python-style text (single quotes and true/null).
    pythonic = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", body)))
    try:
        return ast.literal_eval(pythonic)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"unreadable as JSON or a Python literal: {body[:120]!r}") from None


def normalize_calls(obj: Any) -> list[dict[str, Any]]:
    """Calls in canonical form ``[{"name": str, "arguments": {...}}]`` (Tool-R0 App. E.2).

    Accepts a list or a single call; OpenAI's ``{"function": {"name", "arguments"}}`` wrapper;
    ``arguments`` as a JSON string; ``parameters``/``args`` for ``arguments``; and, when there is
    no arguments field, the call's other keys as a flat argument map.

    Raises:
        ValueError: an item is not a call (no name, or arguments that are not a mapping).
    """
    items = obj if isinstance(obj, list) else [obj]
    calls = []
    for item in items:
        if not isinstance(item, Mapping):
            raise ValueError(f"a call must be an object, got {type(item).__name__}")
        source: Mapping[str, Any] = item["function"] if isinstance(item.get("function"), Mapping) else item
        name = next((source[k] for k in _NAME_KEYS if isinstance(source.get(k), str)), "")
        if not name.strip():
            raise ValueError(f"a call has no tool name: {json.dumps(item, default=str)[:120]}")
        key = next((k for k in _ARG_KEYS if k in source), None)
        args: Any = source[key] if key else {k: v for k, v in source.items()
                                              if k not in (*_NAME_KEYS, "type", "id", "function")}
        if isinstance(args, str):
            args = load_relaxed(args) if args.strip() else {}
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise ValueError(f"the arguments of {name!r} are not an object")
        calls.append({"name": name.strip(), "arguments": dict(args)})
    return calls


# A plain number written as a string; leading zeros (zip codes, ids) and 16+ digits stay text,
# as Tool-R0's comparator treats long numeric strings as identifiers (App. E.2).
_NUMERIC = re.compile(r"[-+]?(?:0|[1-9]\d{0,14})(?:\.\d+)?")


def _canonical_value(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 1e15 else value
    if isinstance(value, str):
        text = " ".join(value.split())
        return _canonical_value(float(text)) if _NUMERIC.fullmatch(text) else text
    if isinstance(value, Mapping):
        return {str(k): _canonical_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical_value(v) for v in value]
    return str(value)


def canonical_calls(calls: Sequence[Mapping[str, Any]]) -> str:
    """The comparison form of a list of calls: compact JSON, calls sorted, values normalised.

    Numbers written as strings become numbers (``"25"`` ≡ ``25`` ≡ ``25.0``), whitespace is
    collapsed, and the order of calls does not matter (Tool-R0 matches calls regardless of
    order). Two targets' answers, or an answer and the gold calls, are the same calls exactly
    when these strings are equal.
    """
    canon = [{"name": str(c["name"]), "arguments": _canonical_value(dict(c.get("arguments") or {}))} for c in calls]
    canon.sort(key=lambda c: json.dumps(c, sort_keys=True, ensure_ascii=False))
    return json.dumps(canon, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


_TOOL_CALL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S | re.I)


def calls_in_text(text: str) -> list[dict[str, Any]]:
    """Tool calls a model wrote as text: ``<tool_call_answer>`` (Tool-R0's solver), Hermes-style
    ``<tool_call>{...}</tool_call>`` blocks, or a JSON call list (fenced or bare); ``[]`` if none.
    """
    found = _ANSWER_TAG.findall(text)
    answer = found[-1].strip() if found else None
    candidates: list[Any] = []
    if answer is not None:
        candidates.append(answer)
    else:
        tagged = _TOOL_CALL_TAG.findall(text)
        if tagged:
            calls = []
            for block in tagged:
                try:
                    calls.extend(normalize_calls(load_relaxed(block)))
                except ValueError:
                    continue
            return calls
        candidates.extend(m.group(2) for m in reversed(list(FENCED.finditer(text))))
        candidates.append(text)
    for candidate in candidates:
        try:
            return normalize_calls(load_relaxed(candidate))
        except ValueError:
            continue
    return []


def tool_calls_answer(trajectory: Any) -> str | None:
    """The answer of a tool-calling case (answer format ``"json:calls"``) from a trajectory.

    The calls the target made (``Trajectory.tool_calls``, arguments read with
    :func:`load_relaxed`) or, when it made none, the calls written in its text
    (:func:`calls_in_text`), in :func:`canonical_calls` form so that it compares with the
    case's ``reference``. ``None`` when there are no calls (no answer: not a vote).
    """
    calls: list[dict[str, Any]] = []
    for call in getattr(trajectory, "tool_calls", ()) or ():
        try:
            args = load_relaxed(call.arguments) if str(call.arguments).strip() else {}
        except ValueError:
            args = {"__unparsed__": str(call.arguments)}
        calls.append({"name": call.name, "arguments": args if isinstance(args, Mapping) else {"__value__": args}})
    if not calls:
        text = getattr(trajectory, "text", None)
        calls = calls_in_text(text) if text else []
    return canonical_calls(calls) if calls else None
