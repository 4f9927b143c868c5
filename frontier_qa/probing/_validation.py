"""Validation of proposed cases before any target call: format, tool-call statics, near-duplicates, critic.

The probe engine never samples a proposal that fails here; it records it as ``invalid``
with the reason. Checks, in order:

1. **Format** (:func:`check_format`): non-empty id and prompt, a known answer format, a
   reference that is a non-blank string when given.
2. **Tool-call statics** (:func:`check_tool_calls`, Tool-R0 §3.2.1 Eq. 2, its "compiler-like
   gate"): every gold call names a tool on the case's menu, passes every required parameter,
   passes no parameter the schema does not declare, matches the declared JSON types (Tool-R0
   skips type checks to save time; here they are cheap), and every non-trivial argument value
   (not a boolean or null) appears in the question as a whole-word match — the task must
   carry the evidence for its own answer.
3. **Near-duplicates**: BLEU distance d = 1 − BLEU (Agent0 Eq. 4's measure, via NLTK with the
   reference's smoothing) against the earlier survivors of this batch and the recently seen
   prompts; a generated proposal with d < ``dedupe_threshold`` to any of them is a repeat. A
   case a person wrote (a cases file, a committed suite) is removed only when identical.
4. **Critic** (optional, SAGE): an object with ``async judge(proposal) -> TaskCritique``;
   asked only about proposals that passed 1–3, since it costs model calls.

Checks 1–3 are pure and cheap (:meth:`Validator.check`); the critic is separate
(:meth:`Validator.critique`) so sharded runs can check every proposal identically and pay
the critic only for their own shard.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from frontier_qa.errors import AnswerError, ConfigError
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.scoring.answers import check_answer_format
from frontier_qa.target import Case, Sampling, Target

Check = Callable[[Proposal], "str | None"]
"""A static check: the reason the proposal is invalid, or ``None`` when it passes."""

DEFAULT_DEDUPE_THRESHOLD = 0.5
"""τ on BLEU distance, as Agent0's repetition clustering (docs/method.md; R-Zero's constant)."""


# --- results and the critic seam ---------------------------------------------------------


@dataclass(frozen=True)
class TaskCritique:
    """A critic's judgement of a proposed task.

    Attributes:
        score: the critic's quality score, normalised to [0, 1] (SAGE: s / 10; 0 when none).
        passed: whether the task is good enough to probe.
        reason: one line saying why.
        validity: the task's validity when the critic judged it (``"well-posed"``, ``"ill-posed"``,
            ``"unverifiable"``; :mod:`frontier_qa.probing._validity`), ``None`` when it did not say.
        judge: which judge gave ``validity`` (``"rules"``, ``"model <id>"``, ``"author"``).
    """

    score: float
    passed: bool
    reason: str
    validity: str | None = None
    judge: str | None = None


@dataclass(frozen=True)
class ValidationResult:
    """One proposal's verdict; unpacks as ``proposal, ok, reason = result``.

    Attributes:
        proposal: the proposal as given.
        ok: whether it may be sampled.
        reason: why it is invalid (``None`` when ok).
        critic: the critic's verdict when one was asked.
    """

    proposal: Proposal
    ok: bool
    reason: str | None = None
    critic: TaskCritique | None = None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.proposal, self.ok, self.reason))


async def ask_once(model: Target, case: Case, sampling: Sampling) -> tuple[str | None, str]:
    """One reply of a judging model (a critic, a validity judge) to ``case``, seeded by the case's id
    (its last ``-``-part, hex), so a rerun asks the same request and hits the cache.

    Returns:
        ``(text, "")``, or ``(None, why)`` when the model returned no text.
    """
    seed = int(case.id.rsplit("-", 1)[-1][:8], 16) & 0x7FFFFFFF
    got = await model.sample(case, 1, replace(sampling, seed=seed), start=0)
    reply = got[0] if got else None
    if reply is None or not reply.ok or reply.text is None:
        return None, (reply.error or "no text") if reply is not None else "no sample returned"
    return reply.text, ""


@runtime_checkable
class Critic(Protocol):
    """Judges whether a proposed task is well posed before the target sees it (SAGE)."""

    async def judge(self, proposal: Proposal) -> TaskCritique: ...


# --- format ------------------------------------------------------------------------------


def check_format(proposal: Proposal) -> str | None:
    """Non-empty id and prompt, a known answer format, a non-blank reference when given."""
    case = proposal.case
    if not isinstance(case.id, str) or not case.id.strip():
        return "the case has no id"
    if not isinstance(case.prompt, str) or not case.prompt.strip():
        # a curriculum that could not parse its model's output says why (prompted curricula)
        return str(case.metadata.get("invalid_reason") or "the prompt is empty")
    try:
        check_answer_format(case.answer_format)
    except AnswerError as err:
        return err.message
    if case.reference is not None and (not isinstance(case.reference, str) or not case.reference.strip()):
        return "the reference answer is blank (leave it out when there is none)"
    if not isinstance(case.topic, str) or not case.topic.strip():
        return "the topic is empty"
    return None


# --- tool calls (Tool-R0 static checks) ---------------------------------------------------

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, (list, tuple)),
    "object": lambda v: isinstance(v, Mapping),
    "null": lambda v: v is None,
}


def tool_menu(tools: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Tool name → parameters schema, from OpenAI-style (``{"type": "function", "function":
    {...}}``) or flat (``{"name": ..., "parameters": ...}``) tool schemas.

    Raises:
        ConfigError: a tool has no name.
    """
    menu: dict[str, Mapping[str, Any]] = {}
    for i, tool in enumerate(tools):
        function = tool.get("function")
        spec: Mapping[str, Any] = function if isinstance(function, Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"tool {i} has no name", hint='write each tool as {"name": ..., "parameters": {...}}')
        params = spec.get("parameters", spec.get("input_schema")) or {}
        menu[name] = params if isinstance(params, Mapping) else {}
    return menu


def normalize_call(call: Mapping[str, Any] | str) -> tuple[str | None, dict[str, Any] | None]:
    """A gold call as ``(name, arguments)``; ``arguments`` is ``None`` when it cannot be read.

    Accepts ``{"name", "arguments"}`` (arguments as an object or a JSON string), the OpenAI
    wrapper ``{"function": {...}}``, and Tool-R0's fallback of a flat argument map beside ``name``.
    """
    data: object = call
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return None, None
    if not isinstance(data, Mapping):
        return None, None
    function = data.get("function")
    if isinstance(function, Mapping):
        data = function
    name = data.get("name")
    if "arguments" in data or "parameters" in data:
        args = data.get("arguments", data.get("parameters"))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                return name, None
        if args is None:
            args = {}
    else:
        args = {k: v for k, v in data.items() if k != "name"}
    return (name if isinstance(name, str) else None), (dict(args) if isinstance(args, Mapping) else None)


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else list(declared or [])
    known = [t for t in types if t in _JSON_TYPES]
    if known and not any(_JSON_TYPES[t](value) for t in known):
        return False
    enum = schema.get("enum")
    return not (isinstance(enum, list) and value not in enum)


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _number_forms(value: int | float) -> set[str]:
    if isinstance(value, float):
        if not math.isfinite(value):
            return {str(value)}
        if value.is_integer():
            return {str(int(value)), str(value)}
        return {repr(value), f"{value:g}"}
    return {str(value)}


def grounded(value: Any, text: str) -> bool:
    """Whether a gold argument value appears in ``text`` as a whole word (Tool-R0: vals(a⋆) ↪ q).

    Booleans, ``None`` and blank strings are trivial and always count as grounded; lists and
    objects are grounded when every leaf is. Matching ignores case.
    """
    for leaf in _leaves(value):
        if leaf is None or isinstance(leaf, bool) or (isinstance(leaf, str) and not leaf.strip()):
            continue
        if isinstance(leaf, (int, float)):
            # a number may not be part of a longer number: 3 is not in "3.5" or "13"
            forms = [rf"(?<![\w.]){re.escape(f)}(?![\w]|\.\d)" for f in _number_forms(leaf)]
        else:
            s = str(leaf).strip()
            left = r"(?<!\w)" if s[0].isalnum() or s[0] == "_" else ""
            right = r"(?!\w)" if s[-1].isalnum() or s[-1] == "_" else ""
            forms = [left + re.escape(s) + right]
        if not any(re.search(form, text, re.IGNORECASE) for form in forms):
            return False
    return True


def check_tool_calls(proposal: Proposal) -> str | None:
    """Tool-R0's static checks of gold calls against the case's tool menu (see module docstring)."""
    case = proposal.case
    if not case.tools and not proposal.gold_calls:
        return None
    try:
        menu = tool_menu(case.tools)
    except ConfigError as err:
        return f"bad tool menu: {err.message}"
    if proposal.gold_calls and not menu:
        return "the task has gold calls but offers no tools"
    for n, raw in enumerate(proposal.gold_calls, start=1):
        name, args = normalize_call(raw)
        where = f"gold call {n}"
        if name is None:
            return f"{where} has no tool name"
        if name not in menu:
            return f"{where} names tool {name!r}, which is not on the menu ({', '.join(sorted(menu))})"
        if args is None:
            return f"{where} ({name}): arguments are not a JSON object"
        schema = menu[name]
        declared = schema.get("properties")
        props: Mapping[str, Any] = declared if isinstance(declared, Mapping) else {}
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        missing = [r for r in required if r not in args]
        if missing:
            return f"{where} ({name}) misses required argument(s) {', '.join(missing)}"
        for key, value in args.items():
            if props and key not in props:
                return f"{where} ({name}) passes {key!r}, which the tool does not declare"
            param = props.get(key)
            if isinstance(param, Mapping) and not _type_ok(value, param):
                return f"{where} ({name}): {key}={value!r} does not match the declared type {param.get('type')!r}"
            if not grounded(value, case.prompt):
                return f"{where} ({name}): value {value!r} of {key!r} does not appear in the question"
    return None


DEFAULT_CHECKS: tuple[Check, ...] = (check_format, check_tool_calls)


# --- near-duplicates ---------------------------------------------------------------------


def bleu_distance(text: str, other: str) -> float:
    """1 − BLEU(hypothesis ``text``, reference [``other``]), whitespace tokens, uniform 4-gram
    weights, NLTK smoothing method 1 (the Agent0 reference's settings), in [0, 1].
    """
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    a, b = text.split(), other.split()
    if not a or not b:
        return 1.0
    if a == b:
        return 0.0
    score = sentence_bleu([b], a, weights=(0.25, 0.25, 0.25, 0.25), smoothing_function=SmoothingFunction().method1)
    return 1.0 - float(score)


def nearest(text: str, others: Iterable[str]) -> tuple[float, str | None]:
    """The smallest BLEU distance from ``text`` to any of ``others``, and that text."""
    best, which = 1.0, None
    for other in others:
        d = bleu_distance(text, other)
        if d < best or which is None:
            best, which = d, other
    return best, which


# --- the validator -----------------------------------------------------------------------


class Validator:
    """Runs the checks, near-duplicate removal and the optional critic over a batch.

    Args:
        checks: static checks, each returning a reason or ``None`` (default: format and
            Tool-R0 tool-call checks). The first failing one decides the reason.
        critic: an optional :class:`Critic`, asked only about proposals that pass the rest.
        dedupe_threshold: BLEU distance below which a generated proposal repeats an earlier
            one; ``None`` or ``0`` turns near-duplicate removal off. Proposals a person wrote
            (``Proposal.written``: cases files, committed suites) are removed only when their
            prompt is identical to an earlier one.
        max_concurrent_critic: critic calls in flight at once.
    """

    def __init__(
        self,
        checks: Sequence[Check] = DEFAULT_CHECKS,
        critic: Critic | None = None,
        dedupe_threshold: float | None = DEFAULT_DEDUPE_THRESHOLD,
        *,
        max_concurrent_critic: int = 4,
    ) -> None:
        if dedupe_threshold is not None and not 0.0 <= dedupe_threshold <= 1.0:
            raise ConfigError(
                f"dedupe_threshold={dedupe_threshold} must be in [0, 1] or None",
                hint="0.5 is Agent0's τ on BLEU distance; None or 0 turns near-duplicate removal off",
            )
        if max_concurrent_critic < 1:
            raise ConfigError(f"max_concurrent_critic={max_concurrent_critic} must be >= 1")
        self.checks = tuple(checks)
        self.critic = critic
        self.dedupe_threshold = dedupe_threshold or None  # 0: no distance is below it, the same as off
        self.max_concurrent_critic = max_concurrent_critic

    def check(self, proposals: Sequence[Proposal], seen_texts: Iterable[str] = ()) -> list[ValidationResult]:
        """Static checks and near-duplicate removal (no model calls), in proposal order.

        Args:
            proposals: the batch.
            seen_texts: prompts of recently accepted cases (earlier batches, replayed cases).

        Returns:
            One result per proposal, aligned with ``proposals``.
        """
        seen = [t for t in seen_texts if t.strip()]
        kept: list[str] = []
        out: list[ValidationResult] = []
        for proposal in proposals:
            reason = None
            for check in self.checks:
                reason = check(proposal)
                if reason:
                    break
            if reason is None and proposal.written:
                # a case a person wrote is theirs to keep: only an identical repeat goes
                same = _normal(proposal.case.prompt)
                other = next((t for t in [*kept, *seen] if _normal(t) == same), None)
                if other is not None:
                    where = "this batch" if other in kept else "a recent case"
                    reason = f"identical to a prompt of {where}: {_short(other)}"
            elif reason is None and self.dedupe_threshold is not None:
                d, other = nearest(proposal.case.prompt, [*kept, *seen])
                if other is not None and d < self.dedupe_threshold:
                    where = "this batch" if other in kept else "a recent case"
                    reason = (
                        f"near-duplicate of {where} (BLEU distance {d:.2f} < {self.dedupe_threshold}): "
                        f"{_short(other)}"
                    )
            if reason is None:
                kept.append(proposal.case.prompt)
            out.append(ValidationResult(proposal, reason is None, reason))
        return out

    async def critique(self, results: Sequence[ValidationResult]) -> list[ValidationResult]:
        """Ask the critic about every result that is still ok; others pass through unchanged."""
        if self.critic is None:
            return list(results)
        critic = self.critic
        gate = asyncio.Semaphore(self.max_concurrent_critic)

        async def one(result: ValidationResult) -> ValidationResult:
            if not result.ok:
                return result
            async with gate:
                verdict = await critic.judge(result.proposal)
            if verdict.passed:
                return replace(result, critic=verdict)
            if verdict.validity is not None and verdict.reason.startswith(verdict.validity):
                # a validity judge (frontier_qa.probing._validity) says why in its own words
                return ValidationResult(result.proposal, False, f"{verdict.reason} (judge: {verdict.judge})", verdict)
            return ValidationResult(
                result.proposal, False, f"critic rejected it (score {verdict.score:.2f}): {verdict.reason}", verdict
            )

        return list(await asyncio.gather(*(one(r) for r in results)))

    async def validate(
        self, proposals: Sequence[Proposal], seen_texts: Iterable[str] = ()
    ) -> list[ValidationResult]:
        """:meth:`check`, then :meth:`critique` on the survivors; aligned with ``proposals``."""
        return await self.critique(self.check(proposals, seen_texts))


def _normal(text: str) -> str:
    return " ".join(text.split())


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "DEFAULT_CHECKS",
    "DEFAULT_DEDUPE_THRESHOLD",
    "Check",
    "Critic",
    "TaskCritique",
    "ValidationResult",
    "Validator",
    "ask_once",
    "bleu_distance",
    "check_format",
    "check_tool_calls",
    "grounded",
    "nearest",
    "normalize_call",
    "tool_menu",
]
