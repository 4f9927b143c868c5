"""Prompt templates for prompted curricula, and parsers for what the curriculum model writes.

Four task families, one template and one parser each:

* **reasoning** (``math``, ``general``): Agent0's curriculum prompt (Agent0 Table 7), which asks
  for ``<question>…</question>`` then ``\\boxed{answer}``. frontier-qa may add a topic and two
  optional blocks after the answer: a ```` ```python ```` program that prints the answer (the
  engine runs it to *verify* the reference; docs/method.md, QA note 1) and a
  ``<difficulty_prediction>0..8</difficulty_prediction>`` (self-aware RL, App. A.2).
* **tools**: Tool-R0's generator interface (Tool-R0 §3.2, App. B, C.2): ``<think>``,
  ``<question>``, ``<available_tools>`` and ``<tool_call_answer>`` (a JSON list of calls with
  flat primitive arguments, every value written verbatim in the question). The tool menu is
  taken from the user's real tool schemas, never invented by the model.
* **open-ended**: a question whose answer is free text, plus an optional model ``<answer>``.
* **workflow**: a multi-step request to a described agent, its ``<steps>`` and expected ``<answer>``.

Tool-R0's Fig. 10 prompt text is not reproduced in the paper's text; the tool template is written
from its description (App. B.2: domain/context constraints, menu cardinality, primitive-only
arguments, no placeholders, values verbatim in the question). Parsing is lenient where the
papers are (Tool-R0 App. E.2's "super-relaxed loader", :mod:`frontier_qa.scoring._tool_calls`)
and every parser reports *why* it failed.

Pure text functions: nothing here does I/O or imports an ML library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from frontier_qa.scoring._difficulty import curriculum_estimate, parse_difficulty_prediction
from frontier_qa.scoring._tool_calls import FENCED, canonical_calls, load_relaxed, normalize_calls
from frontier_qa.scoring.rewards import parse_curriculum_output

# ---------------------------------------------------------------------------------- templates

AGENT0_SYSTEM = (
    "You are an expert competition-math problem setter.\n"
    "FIRST, in your private scratch-pad, think step-by-step to design a brand-new, non-trivial problem. "
    "{scope} "
    "Aim for a difficulty such that fewer than 30% of advanced high-school students could solve it. "
    "Avoid re-using textbook cliches or famous contest problems.\n"
    "THEN, without revealing any of your private thoughts, output exactly the following two blocks:\n\n"
    "<question>\n{{The full problem statement on one or more lines}}\n</question>\n\n"
    "\\boxed{{final answer}}\n\n"
    "Do NOT output anything else—no explanations, no extra markup.{extras}"
)
"""Agent0 Table 7's system prompt (``{scope}`` and ``{extras}`` are frontier-qa's additions)."""

AGENT0_SCOPE = (
    "The problem could come from any field of mathematics, including but not limited to algebra, "
    "geometry, number theory, combinatorics, prealgebra, probability, statistics, and calculus."
)
AGENT0_USER = (
    "Generate one new, challenging reasoning question now. "
    "Remember to format the output exactly as instructed."
)
"""Agent0 Table 7's user prompt."""

GENERAL_SYSTEM = (
    "You are an expert setter of reasoning questions.\n"
    "FIRST, in your private scratch-pad, think step-by-step to design a brand-new, non-trivial question. "
    "{scope} "
    "Aim for a difficulty such that fewer than 30% of well-educated adults could answer it. "
    "Its final answer must be short: a number, a word, a name or a short phrase. "
    "Avoid re-using textbook cliches or well-known puzzles.\n"
    "THEN, without revealing any of your private thoughts, output exactly the following two blocks:\n\n"
    "<question>\n{{The full question on one or more lines}}\n</question>\n\n"
    "\\boxed{{final answer}}\n\n"
    "Do NOT output anything else—no explanations, no extra markup.{extras}"
)
"""Agent0 Table 7 adapted to general reasoning (same blocks and difficulty target)."""

GENERAL_SCOPE = (
    "The question could come from any field of general reasoning, including but not limited to "
    "logic, science, commonsense, planning, reading comprehension, and quantitative reasoning."
)

SOLUTION_EXTRA = (
    "```python\n# a self-contained program that computes the final answer and prints only it\n```"
)
DIFFICULTY_EXTRA = (
    "<difficulty_prediction>D</difficulty_prediction>\nwhere D is a number from 0 (easiest) to 8 "
    "(hardest): how hard the task is for the assistant being tested (aim for 4 or 5)."
)

OPEN_ENDED_SYSTEM = (
    "You are an expert writer of evaluation questions for AI assistants.\n"
    "FIRST, in your private scratch-pad, think step-by-step to design a brand-new question{topic}. "
    "Its answer is free text of one to three sentences, not a number or a multiple choice, yet a "
    "careful expert would give one answer in substance, so that good answers agree in meaning. "
    "Aim for a question that a strong assistant answers well only about half of the time. "
    "Avoid matters of opinion and famous textbook questions.\n"
    "THEN, without revealing any of your private thoughts, output exactly the following two blocks:\n\n"
    "<question>\n{{The full question}}\n</question>\n\n"
    "<answer>\n{{A model answer in one to three sentences}}\n</answer>\n\n"
    "Do NOT output anything else—no explanations, no extra markup.{extras}"
)

WORKFLOW_SYSTEM = (
    "You are an expert at writing test tasks for AI agents.\n"
    "The agent under test: {agent}\n{tools}"
    "FIRST, in your private scratch-pad, think step-by-step to design one realistic request a user "
    "could send this agent{topic}. Completing it must take several steps (for example: look "
    "something up, decide from what was found, then act), and its outcome must be stateable in one "
    "short line. Write every detail the agent needs (names, ids, amounts, dates) into the request; "
    "never use placeholders.\n"
    "THEN, without revealing any of your private thoughts, output exactly the following three blocks:\n\n"
    "<question>\n{{The user's request, as the user would write it}}\n</question>\n\n"
    "<steps>\n{{The steps a correct agent takes, one per line}}\n</steps>\n\n"
    "<answer>\n{{The expected outcome in one short line}}\n</answer>\n\n"
    "Do NOT output anything else—no explanations, no extra markup.{extras}"
)

TASK_USER = "Generate one new task now. Remember to format the output exactly as instructed."

TOOL_SYSTEM = (
    "You generate tool-calling tasks for testing an AI assistant.\n"
    "Specification: topic: {topic}; interaction: {context}; tools on the menu: {menu_size}; "
    "gold tool calls: exactly {n_calls}.\n"
    "Tool menu (JSON schemas):\n{menu}\n\n"
    "Rules:\n"
    "- Write a natural, specific user request in the topic above that the tools on the menu can fulfil.\n"
    "{context_rule}"
    "- The gold answer is exactly {n_calls} tool call(s), using only tools from the menu, each with "
    "every required parameter and flat primitive argument values (strings, numbers, booleans).\n"
    "- Every argument value must appear verbatim in the user request.\n"
    "- No meta-instructions, placeholders (such as \"...\" or <value>) or abstract descriptions.\n"
    "- In <available_tools>, list the names of the tools to offer the assistant: every tool your "
    "calls use, plus other menu tools as distractors.\n\n"
    "Output exactly these four blocks and nothing else:\n"
    "<think>your private planning</think>\n"
    "<question>the user request</question>\n"
    "<available_tools>[\"tool_name\", \"other_tool_name\"]</available_tools>\n"
    "<tool_call_answer>[{{\"name\": \"tool_name\", \"arguments\": {{\"param\": value}}}}]</tool_call_answer>"
    "{extras}"
)
"""Tool-R0's generator interface (App. B.2, C.2), grounded in the user's own tool schemas."""

MULTI_TURN_RULE = (
    "- Write the request as a short conversation (a few turns between user and assistant) "
    "embedded in the question text, ending with the user's request.\n"
)

MATH_CASE_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
OPEN_ENDED_CASE_SYSTEM = "Answer the question directly, in one to three sentences."
FINAL_ANSWER_CASE_SYSTEM = "When you have finished, state the outcome on a last line starting with 'Final answer:'."


def _extras(*blocks: str) -> str:
    shown = [b for b in blocks if b]
    if not shown:
        return ""
    return "\nThe only exception: after the blocks above you may add these optional blocks:\n\n" + "\n\n".join(shown)


def reasoning_prompt(
    domain: str, topic: str | None = None, *, ask_solution: bool = True, ask_difficulty: bool = True
) -> tuple[str, str]:
    """(system, user) for a reasoning task; with no topic and no extras, exactly Agent0 Table 7.

    Args:
        domain: ``"math"`` (Table 7) or ``"general"`` (Table 7 adapted to general reasoning).
        topic: restrict the task to this topic (replaces the "any field" sentence).
        ask_solution: ask for an optional program that prints the answer.
        ask_difficulty: ask for an optional ``<difficulty_prediction>``.
    """
    template, scope = (AGENT0_SYSTEM, AGENT0_SCOPE) if domain == "math" else (GENERAL_SYSTEM, GENERAL_SCOPE)
    if topic:
        scope = f"The {'problem' if domain == 'math' else 'question'} must be about {topic}."
    extras = _extras(SOLUTION_EXTRA if ask_solution else "", DIFFICULTY_EXTRA if ask_difficulty else "")
    return template.format(scope=scope, extras=extras), AGENT0_USER


def open_ended_prompt(topic: str | None = None, *, ask_difficulty: bool = True) -> tuple[str, str]:
    """(system, user) for an open-ended question (answer format ``"text"``)."""
    extras = _extras(DIFFICULTY_EXTRA if ask_difficulty else "")
    return OPEN_ENDED_SYSTEM.format(topic=f" about {topic}" if topic else "", extras=extras), TASK_USER


def workflow_prompt(
    agent_description: str, tools: Sequence[Mapping[str, Any]] = (), topic: str | None = None,
    *, ask_difficulty: bool = True,
) -> tuple[str, str]:
    """(system, user) for a multi-step task for the described agent."""
    listing = "".join(f"- {tool_name(t)}: {tool_description(t)}\n" for t in tools)
    extras = _extras(DIFFICULTY_EXTRA if ask_difficulty else "")
    system = WORKFLOW_SYSTEM.format(
        agent=agent_description.strip(),
        tools=f"Its tools:\n{listing}" if listing else "",
        topic=f", about {topic}" if topic else "",
        extras=extras,
    )
    return system, TASK_USER


def text_prompt(
    domain: str, topic: str | None = None, *, ask_solution: bool = True, ask_difficulty: bool = True,
    agent_description: str | None = None, tools: Sequence[Mapping[str, Any]] = (),
) -> tuple[str, str]:
    """(system, user) for a task of a text domain (``math``, ``general``, ``open_ended``, ``workflow``).

    The prompted curriculum and the trainer ask with it, so a trained curriculum is asked as it was
    trained. ``tools`` is asked for with :func:`tool_prompt`: its menu is drawn per task.
    """
    if domain in ("math", "general"):
        return reasoning_prompt(domain, topic, ask_solution=ask_solution, ask_difficulty=ask_difficulty)
    if domain == "open_ended":
        return open_ended_prompt(topic, ask_difficulty=ask_difficulty)
    if domain == "workflow":
        return workflow_prompt(agent_description or "", tools, topic, ask_difficulty=ask_difficulty)
    raise ValueError(f"{domain!r} is not a text domain")


def tool_prompt(
    menu: Sequence[Mapping[str, Any]], n_calls: int, context: str, topic: str | None = None,
    *, ask_difficulty: bool = True,
) -> tuple[str, str]:
    """(system, user) for a Tool-R0 task over ``menu`` (the user's schemas) with ``n_calls`` gold calls.

    Args:
        menu: the tool schemas offered to the generator (a subset of the user's tools).
        n_calls: number of gold calls asked for (Tool-R0's n).
        context: ``"single-turn"`` or ``"multi-turn"`` (Tool-R0's c).
        topic: the task domain (Tool-R0's d); ``None`` lets the generator pick one the tools fit.
        ask_difficulty: ask for an optional ``<difficulty_prediction>``.
    """
    system = TOOL_SYSTEM.format(
        topic=topic or "any topic these tools serve",
        context=context,
        menu_size=len(menu),
        n_calls=n_calls,
        menu="\n".join(json.dumps(dict(t), ensure_ascii=False, sort_keys=True) for t in menu),
        context_rule=MULTI_TURN_RULE if context == "multi-turn" else "",
        extras=_extras(DIFFICULTY_EXTRA if ask_difficulty else "").replace("after the blocks above", "at the end"),
    )
    return system, TASK_USER


# -------------------------------------------------------------------------- history block

HISTORY_HEADINGS: tuple[tuple[str, str], ...] = (
    ("frontier", "At the edge of its ability (its answers split, or it fails them consistently): "
                 "propose new tasks like these, on different content"),
    ("too_easy", "Too easy (it answers these reliably): make yours harder than these"),
    ("too_hard", "Too hard or unclear (its answers were scattered): make yours clearer or a little easier"),
    ("rejected", "Rejected before testing (fix these problems)"),
)


def default_case_system(domain: str, answer_format: str | None = None) -> str | None:
    """The system prompt of cases a curriculum writes for ``domain`` (``None``: none)."""
    if domain in ("math", "general"):
        return MATH_CASE_SYSTEM
    if domain == "open_ended":
        return OPEN_ENDED_CASE_SYSTEM
    if domain == "workflow" and answer_format == "final_answer":
        return FINAL_ANSWER_CASE_SYSTEM
    return None


def history_block(groups: Mapping[str, Sequence[str]], *, max_chars: int = 300) -> str:
    """The in-context memory shown to the curriculum: recent tasks by how the target did.

    Args:
        groups: example lines per group key of :data:`HISTORY_HEADINGS` (most recent last).
        max_chars: each example is cut to this many characters, on one line.

    Returns:
        Text to put before the generation request; ``""`` when every group is empty.
    """
    parts = []
    for key, heading in HISTORY_HEADINGS:
        lines = [_one_line(x, max_chars) for x in groups.get(key, ()) if x and x.strip()]
        if lines:
            parts.append(f"{heading}:\n" + "\n".join(f"- {line}" for line in lines))
    if not parts:
        return ""
    return "Recent tasks and how the assistant being tested did on them.\n\n" + "\n\n".join(parts) + "\n\n"


def _one_line(text: str, max_chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= max_chars else flat[: max_chars - 1].rstrip() + "…"


# -------------------------------------------------------------------------------- parsers


@dataclass(frozen=True)
class ParsedTask:
    """What a parser read from one curriculum output.

    Attributes:
        question: the task text, ``None`` when the output has none (then ``error`` says why).
        reference: the curriculum's (unverified) answer, if any.
        solution: a program that prints the answer (reasoning tasks), if any.
        predicted_pass_rate: the curriculum's difficulty number as a predicted p̂ in [0, 1].
        tool_names: tools the task offers (``<available_tools>``); empty when not given.
        gold_calls: expected calls ``{"name", "arguments"}``, values as written (tool tasks).
        steps: the expected steps (workflow tasks).
        error: why the output is unusable, ``None`` when it is usable.
    """

    question: str | None
    reference: str | None = None
    solution: str | None = None
    predicted_pass_rate: float | None = None
    tool_names: tuple[str, ...] = ()
    gold_calls: tuple[Mapping[str, Any], ...] = ()
    steps: tuple[str, ...] = ()
    error: str | None = None


_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_QUESTION_OPEN = re.compile(r"<question>", re.I)
_QUESTION_CLOSED = re.compile(r"<question>(.*?)</question>", re.S | re.I)
_PYTHON_LANGS = ("python", "py", "python3")
# Where an unclosed question ends: the answer, a code block or another tag.
_QUESTION_END = re.compile(
    r"\\boxed|\\fbox|```|<(?:/?answer|difficulty_prediction|steps|available_tools|tool_call_answer)>", re.I
)


def _tag(text: str, name: str) -> str | None:
    found = re.findall(rf"<{name}>(.*?)</{name}>", text, re.S | re.I)
    return found[-1].strip() if found else None


def _split_question(text: str) -> tuple[str | None, str, str | None]:
    """(question, the text after it, error). Think blocks are dropped first."""
    body = _THINK.sub("", text)
    closed = list(_QUESTION_CLOSED.finditer(body))
    if closed:
        question = closed[-1].group(1).strip()
        return (question or None), body[closed[-1].end():], (None if question else "the <question> block is empty")
    opened = list(_QUESTION_OPEN.finditer(body))
    if not opened:
        return None, body, "no <question> block in the curriculum output"
    rest = body[opened[-1].end():]
    end = _QUESTION_END.search(rest)
    question = rest[: end.start() if end else len(rest)].strip()
    if not question:
        return None, rest, "the <question> block is empty"
    return question, rest[end.start() if end else len(rest):], None


def _difficulty(text: str) -> float | None:
    value = parse_difficulty_prediction(text)
    return None if value is None else curriculum_estimate(value, scale=8.0, higher_is_harder=True)


def parse_reasoning(text: str) -> ParsedTask:
    """Read a reasoning task: ``<question>``, ``\\boxed{}`` answer, optional program and difficulty.

    The question is the last ``<question>`` block (an unclosed one runs to the answer, a code
    block or the next tag); ``<think>`` blocks are ignored. The reference is the last
    ``\\boxed{}`` after the question, outside code blocks (nested braces kept; a box inside the
    question is part of the question). The solution is the last python code block after the
    question.
    """
    question, tail, error = _split_question(text)
    if question is None:
        return ParsedTask(None, error=error)
    blocks = [m for m in FENCED.finditer(tail) if m.group(1).lower() in _PYTHON_LANGS or
              (not m.group(1) and "print(" in m.group(2))]
    solution = blocks[-1].group(2).strip() if blocks else None
    no_code = FENCED.sub("", tail)
    # The shared Agent0 parser, on the question and the code-free tail: its reference rules
    # (last box after the question, braces balanced) are the ones the rewards use.
    _, reference = parse_curriculum_output(f"<question>{question}</question>{no_code}")
    return ParsedTask(question, reference=reference, solution=solution or None,
                      predicted_pass_rate=_difficulty(no_code))


def parse_open_ended(text: str) -> ParsedTask:
    """Read an open-ended task: ``<question>`` and an optional model ``<answer>``."""
    question, tail, error = _split_question(text)
    if question is None:
        return ParsedTask(None, error=error)
    return ParsedTask(question, reference=_tag(tail, "answer") or None, predicted_pass_rate=_difficulty(tail))


def parse_workflow(text: str) -> ParsedTask:
    """Read a workflow task: ``<question>``, optional ``<steps>`` (one per line) and ``<answer>``."""
    question, tail, error = _split_question(text)
    if question is None:
        return ParsedTask(None, error=error)
    steps_text = _tag(tail, "steps") or ""
    steps = tuple(s for s in (re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip()
                              for line in steps_text.splitlines()) if s)
    return ParsedTask(question, reference=_tag(tail, "answer") or None, steps=steps,
                      predicted_pass_rate=_difficulty(tail))


def parse_tool_task(text: str) -> ParsedTask:
    """Read a Tool-R0 task: ``<question>``, ``<available_tools>`` and ``<tool_call_answer>``.

    ``<available_tools>`` may list names or whole schemas (only names are kept: the real
    schemas come from the user); a missing or unreadable block means "the whole menu".
    ``<tool_call_answer>`` is read with :func:`load_relaxed` and :func:`normalize_calls`.
    """
    question, tail, error = _split_question(text)
    if question is None:
        return ParsedTask(None, error=error)
    names: tuple[str, ...] = ()
    menu_text = _tag(tail, "available_tools")
    if menu_text:
        try:
            listed = load_relaxed(menu_text)
        except ValueError:
            listed = None
        items = listed if isinstance(listed, list) else [listed] if isinstance(listed, dict) else []
        names = tuple(n for n in (item if isinstance(item, str) else tool_name(item) if isinstance(item, Mapping)
                                  else "" for item in items) if n)
    answer = _tag(tail, "tool_call_answer")
    if answer is None:
        return ParsedTask(question, tool_names=names, error="no <tool_call_answer> block in the curriculum output")
    try:
        calls = normalize_calls(load_relaxed(answer))
    except ValueError as exc:
        return ParsedTask(question, tool_names=names, error=f"<tool_call_answer> is not a list of calls: {exc}")
    if not calls:
        return ParsedTask(question, tool_names=names, error="<tool_call_answer> holds no calls")
    return ParsedTask(question, tool_names=names, gold_calls=tuple(calls),
                      reference=canonical_calls(calls), predicted_pass_rate=_difficulty(tail))


PARSERS: dict[str, Callable[[str], ParsedTask]] = {
    "math": parse_reasoning, "general": parse_reasoning, "tools": parse_tool_task,
    "open_ended": parse_open_ended, "workflow": parse_workflow,
}
"""Each domain's parser of what the curriculum model writes (the instruct style)."""


# ----------------------------------------------------------------------------- tool schemas
# (reading and comparing tool calls: frontier_qa.scoring._tool_calls)


def tool_name(schema: Mapping[str, Any]) -> str:
    """The name in an OpenAI tool schema (``{"type": "function", "function": {...}}`` or flat)."""
    function = schema.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        return function["name"]
    name = schema.get("name")
    return name if isinstance(name, str) else ""


def tool_description(schema: Mapping[str, Any]) -> str:
    """The description in an OpenAI tool schema, ``""`` when it has none."""
    function = schema.get("function")
    source = function if isinstance(function, Mapping) else schema
    description = source.get("description")
    return " ".join(description.split()) if isinstance(description, str) else ""


def _value_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def ungrounded_values(question: str, calls: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Gold argument values that do not appear in the question (Tool-R0 Eq. 2's vals(a*) ↪ q).

    A value is grounded when its text appears in the question at word boundaries,
    case-insensitively; booleans and nulls are exempt (Tool-R0 App. C.2), list items are
    checked one by one.

    Returns:
        ``"tool.param=value"`` for each ungrounded value, in call order; empty when all are grounded.
    """
    missing = []
    for call in calls:
        for key, value in dict(call.get("arguments") or {}).items():
            for item in value if isinstance(value, list) else [value]:
                if item is None or isinstance(item, bool) or isinstance(item, (dict, list)):
                    continue
                text = _value_text(item).strip()
                if text and not re.search(rf"(?<!\w){re.escape(text)}(?!\w)", question, re.I):
                    missing.append(f"{call.get('name')}.{key}={item!r}")
    return tuple(missing)
