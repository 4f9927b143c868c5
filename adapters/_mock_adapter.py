"""A scripted target: answers that are a pure function of the case and the sample index.

``mock:`` specs open one, so that a probe config, a suite or a CI job can be tried offline,
for free and deterministically, before it meets a real model::

    frontier-qa probe --target mock:unsure --curriculum cases.jsonl
    frontier-qa probe --target mock:tests/mock-target.yaml --config my-probe.yaml

``mock:right`` answers every case with its reference (``metadata["truth"]`` first), so every
case passes; ``mock:wrong`` answers ``mock-wrong`` everywhere (stable failures, or suspects
without a verified reference); ``mock:unsure`` answers the reference and ``mock-wrong`` in
equal shares (p̂ = 0.5: the frontier everywhere); ``mock:silent`` never gives an answer
(unparseable samples). ``mock:PATH`` reads a script (YAML or JSON)::

    version: "2"                  # optional; shown in records (the id changes with the script anyway)
    default: $reference           # what cases no rule matches answer (default: $reference)
    rules:                        # the first rule whose conditions all hold answers the case
      - topic: weekdays           # conditions: id (exact), topic (exact), contains (a prompt substring)
        answers: {$reference: 1, Friday: 1}   # weights: the first k samples follow them closely
      - id: add-easy
        answer: "42"              # one answer every time
      - contains: capital
        answers: {Canberra: 3, Sydney: 2}

An answer is a literal string, ``$reference`` (the case's reference) or ``$none`` (no answer:
an unparseable sample; YAML ``null`` works too; an open-ended ``text`` case gets "I am not sure.",
which is an answer there; other formats get two lines of prose, which none of them reads). The
same mapping may be given inline with ``mock:inline`` and the target option ``script``
(``target: {spec: "mock:inline", options: {script: {...}}}``). Each sample's text is written
in the case's answer format (``\\boxed{}`` by default, the bare answer for ``text``, a
``Final answer:`` line, a JSON object for ``json:<field>``, the call list itself for
``json:calls``), so the probe reads back exactly the scripted answer. The target id carries a
hash of the script: change the script and cached samples of the old one are never reused.

Weighted answers are drawn with a low-discrepancy sequence per case (:func:`pick`): among the
first k samples each answer's count is within about one of k times its share, so p̂ is what
the weights say, not a coin's luck. :mod:`frontier_qa.testing` builds on this adapter.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from frontier_qa.errors import ConfigError
from frontier_qa.target import Adapter, Case, Sampling, Trajectory, Usage

AnswerFn = Callable[[Case, int], "str | None"]
"""The answer of sample ``index`` of ``case``; ``None`` is an unparseable sample."""

REFERENCE = "$reference"
NONE = "$none"
WRONG = "mock-wrong"
PRESETS: dict[str, Mapping[str, Any]] = {
    "right": {"default": REFERENCE},
    "wrong": {"default": WRONG},
    "unsure": {"default": {REFERENCE: 1, WRONG: 1}},
    "silent": {"default": NONE},
}
_CONDITIONS = ("id", "topic", "contains")
_PHI = (math.sqrt(5.0) - 1.0) / 2.0  # golden-ratio step: the most even low-discrepancy sequence


# --- answer functions ------------------------------------------------------------------------------


def _offset(key: str) -> float:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2.0**64


def pick(
    distribution: Mapping[str | None, float] | Sequence[tuple[str | None, float]], key: str, index: int
) -> str | None:
    """The answer of sample ``index`` for ``key`` under ``distribution`` (weights, any scale).

    u_i = frac(offset(key) + (i + 1)·φ) is spread evenly over [0, 1), so among the first k
    samples each answer's count is within about one of k·weight.
    """
    items = list(distribution.items()) if isinstance(distribution, Mapping) else list(distribution)
    total = sum(w for _, w in items)
    u = (_offset(key) + (index + 1) * _PHI) % 1.0
    acc = 0.0
    for answer, weight in items:
        acc += weight / total
        if u < acc:
            return answer
    return items[-1][0]


def truth_of(case: Case) -> str | None:
    """The right answer of a scripted case: ``metadata["truth"]``, else the reference."""
    truth = case.metadata.get("truth")
    return str(truth) if truth is not None else case.reference


def always_right(case: Case, index: int) -> str | None:
    """Answers every case with :func:`truth_of` (no answer when the case has none)."""
    return truth_of(case)


def always(answer: str | None) -> AnswerFn:
    """Answers ``answer`` to every case and sample."""
    return lambda case, index: answer


def from_distribution(table: Mapping[str, Mapping[str | None, float]], default: AnswerFn = always_right) -> AnswerFn:
    """Per case id, an answer distribution; cases not in ``table`` use ``default``."""

    def answer(case: Case, index: int) -> str | None:
        dist = table.get(case.id)
        return default(case, index) if dist is None else pick(dist, case.id, index)

    return answer


def moody(topic: str, wrong: str = "wrong", share_right: float = 0.5) -> AnswerFn:
    """Right everywhere except on ``topic``, where it answers right with ``share_right``."""

    def answer(case: Case, index: int) -> str | None:
        if case.topic != topic:
            return truth_of(case)
        return pick({truth_of(case): share_right, wrong: 1.0 - share_right}, case.id, index)

    return answer


def render(answer: str | None, answer_format: str) -> str:
    """A sample's text that the probe reads back as ``answer`` in ``answer_format``."""
    if answer is None:  # read as an answer only by `text`; `auto` takes a short reply for one
        return "I am not sure." if answer_format == "text" else "I am not sure; I would need more to go on.\nSorry."
    if answer_format == "text" or answer_format == "json:calls":
        return answer
    if answer_format == "final_answer":
        return f"Let me think.\nFinal answer: {answer}"
    if answer_format.startswith("json:"):
        value: Any = answer
        for key in reversed(answer_format[len("json:"):].split(".")):
            value = {key: value}
        return json.dumps(value, ensure_ascii=False)
    return f"Let me think. \\boxed{{{answer}}}"


# --- the adapter -----------------------------------------------------------------------------------


class ScriptedAdapter(Adapter):
    """A backend whose sample ``i`` of a case answers ``answer(case, i)``.

    Wrap it in the runtime (:func:`frontier_qa.testing.open_scripted`, or a ``mock:`` spec with
    :func:`frontier_qa.runtime.open_target`) and it gets the cache, budget and retries every real
    target gets. It records each backend call in :attr:`calls`.

    Args:
        answer: the answer function; may be swapped at any time (a target that changes).
        id: the target id (part of cache keys).
        version: the target version reported to records.
        max_n: samples per backend call (1: calls == samples).
        gate: an :class:`asyncio.Event`; when set to an unset event, calls after
            ``gate_after`` wait on it (to cancel a run mid-way).
        gate_after: calls served before the gate applies.
    """

    def __init__(self, answer: AnswerFn = always_right, *, id: str = "scripted:test", version: str | None = "1",
                 max_n: int = 1, gate: asyncio.Event | None = None, gate_after: int = 0) -> None:
        self.answer = answer
        self.id = id
        self._version = version
        self.max_n = max_n
        self.gate = gate
        self.gate_after = gate_after
        self.calls: list[tuple[str, int, int]] = []  # (case id, start, n) per backend call

    def version(self) -> str | None:
        return self._version

    @property
    def samples(self) -> int:
        """Samples produced so far (cached samples never reach the adapter)."""
        return sum(n for _, _, n in self.calls)

    def samples_for(self, case_id: str) -> list[int]:
        """Sample indices the backend produced for a case, in call order."""
        return [i for cid, start, n in self.calls if cid == case_id for i in range(start, start + n)]

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        if self.gate is not None and len(self.calls) >= self.gate_after:
            await self.gate.wait()
        self.calls.append((case.id, start, n))
        await asyncio.sleep(0)
        return [Trajectory(text=render(self.answer(case, i), case.answer_format), usage=Usage(12, 6), sample_index=i)
                for i in range(start, start + n)]


# --- mock: scripts ---------------------------------------------------------------------------------


def _answer_value(value: Any, where: str) -> str | None:
    if value is None or value == NONE:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"mock script: {where}: {value!r} is not an answer",
                          hint="write a string (or a number), $reference or $none")
    return str(value)


def _weights(value: Any, where: str) -> list[tuple[str | None, float]] | str | None:
    """A rule's answer: one answer (a string / None) or weighted answers."""
    if not isinstance(value, Mapping):
        return _answer_value(value, where)
    if not value:
        raise ConfigError(f"mock script: {where}: no answers", hint="give at least one answer with a weight")
    out = []
    for answer, weight in value.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise ConfigError(f"mock script: {where}: the weight of {answer!r} is {weight!r}",
                              hint="weights are numbers >= 0, e.g. {$reference: 1, Friday: 1}")
        out.append((_answer_value(answer, where), float(weight)))
    if sum(w for _, w in out) <= 0:
        raise ConfigError(f"mock script: {where}: every weight is 0", hint="give one answer a weight above 0")
    return out


def _resolve(answer: str | None, case: Case) -> str | None:
    return truth_of(case) if answer == REFERENCE else answer


def script_answers(script: Mapping[str, Any]) -> AnswerFn:
    """The answer function of a mock script (see the module docstring for its form).

    Raises:
        ConfigError: an unknown key, a rule without an answer, or an answer that is not one.
    """
    unknown = set(script) - {"version", "default", "rules"}
    if unknown:
        raise ConfigError(f"mock script: unknown key(s) {sorted(unknown)}", hint="use version, default and rules")
    default = _weights(script.get("default", REFERENCE), "default")
    rules = script.get("rules") or []
    if not isinstance(rules, list):
        raise ConfigError("mock script: rules must be a list", hint="write rules: [{topic: ..., answers: {...}}, ...]")
    parsed = []
    for i, rule in enumerate(rules, 1):
        where = f"rule {i}"
        if not isinstance(rule, Mapping):
            raise ConfigError(f"mock script: {where} is not a mapping", hint="write {topic: ..., answer: ...}")
        extra = set(rule) - {*_CONDITIONS, "answer", "answers"}
        if extra:
            raise ConfigError(f"mock script: {where}: unknown key(s) {sorted(extra)}",
                              hint=f"conditions: {', '.join(_CONDITIONS)}; then answer or answers")
        if ("answer" in rule) == ("answers" in rule):
            raise ConfigError(f"mock script: {where} needs one of answer / answers", hint="answer: \"42\"")
        conditions = {k: str(rule[k]) for k in _CONDITIONS if k in rule}
        parsed.append((conditions, _weights(rule["answer"] if "answer" in rule else rule["answers"], where)))

    def matches(conditions: Mapping[str, str], case: Case) -> bool:
        return (conditions.get("id", case.id) == case.id and conditions.get("topic", case.topic) == case.topic
                and conditions.get("contains", "") in case.prompt)

    def answer(case: Case, index: int) -> str | None:
        chosen = next((a for c, a in parsed if matches(c, case)), default)
        if isinstance(chosen, list):
            return _resolve(pick(chosen, case.id, index), case)
        return _resolve(chosen, case)

    return answer


def load_script(source: str | Path) -> dict[str, Any]:
    """Read a mock script file (YAML or JSON)."""
    import yaml

    path = Path(source)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML
    except OSError as err:
        raise ConfigError(f"mock: cannot read the script {path}: {err.strerror}",
                          hint=f"mock:PATH names a YAML/JSON script, or use a preset: {', '.join(PRESETS)}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"mock: {path} is not valid YAML/JSON: {err}", hint="fix the script") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"mock: {path} must hold a mapping",
                          hint="write default: and rules: (see frontier_qa.testing)")
    return dict(data)


def create(rest: str, *, script: Mapping[str, Any] | None = None, max_n: int = 1,
           id: str | None = None) -> ScriptedAdapter:
    """Factory for ``mock:`` specs: a preset name, ``PATH`` to a script, or ``inline`` with ``script=``.

    ``id`` is the spec as the user wrote it (a config file's ``mock:script.yaml`` is opened from
    the file's folder by its absolute path, but keeps the written id); the script's hash is
    appended either way.
    """
    if rest == "inline":
        if script is None:
            raise ConfigError("mock:inline needs the target option 'script'",
                              hint="target: {spec: 'mock:inline', options: {script: {default: $reference}}}")
        data = dict(script)
    elif script is not None:
        raise ConfigError(f"the option 'script' was given with mock:{rest}", hint="use mock:inline with script=")
    elif rest in PRESETS:
        data = dict(PRESETS[rest])
    else:
        data = load_script(rest)
    answer = script_answers(data)
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:12]
    version = str(data["version"]) if data.get("version") is not None else digest
    return ScriptedAdapter(answer, id=f"{id or f'mock:{rest}'}@{digest}", version=version, max_n=max_n)


__all__ = [
    "NONE",
    "PRESETS",
    "REFERENCE",
    "AnswerFn",
    "ScriptedAdapter",
    "always",
    "always_right",
    "create",
    "from_distribution",
    "load_script",
    "moody",
    "pick",
    "render",
    "script_answers",
    "truth_of",
]
