"""Few-shot task prompts for small curriculum models.

Agent0's curriculum prompt (Table 7) asks for tagged output, a boxed answer and a difficulty
number; a 135M-parameter model such as SmolLM2-135M-Instruct cannot follow it (0 valid tasks
out of 24 in our trials, 0 of 8 with a ``<question>`` prefill). It can *continue a pattern*:
shown a few worked problems written as

.. code-block:: text

    Problem: A box holds 6 rows of 8 eggs. How many eggs are in the box?
    Answer: 48
    Program: print(6 * 8)

and asked for one more about a topic, with the assistant turn prefilled with ``Problem:``,
it writes a new problem in that shape nearly every time. This module builds that prompt and
reads the answer back.

* The examples shown are drawn per request (by the request's seed) from a pool: the built-in
  :data:`MATH_EXAMPLES` or the user's own, so proposals differ.
* In-context adaptation, the small-model way: recent *frontier* cases (and stable wrong
  answers) go first among the examples, so the model writes more tasks like the ones the
  target found hard. Telling a 135M model "these were too easy" does nothing.
* ``Answer`` and ``Program`` are two derivations of the reference: the engine runs the program
  in the sandbox and trusts the reference only when both agree (:mod:`frontier_qa.probing._verify`);
  a small model's references are often wrong, and this is what keeps its mistakes from being
  reported as the target's failures.
* A problem that copies a shown example (BLEU distance below the dedupe threshold) is
  rejected here, with the reason, since the validator never sees the examples.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from frontier_qa.curricula._templates import ParsedTask
from frontier_qa.errors import ConfigError
from frontier_qa.probing._validation import nearest

PREFILL = "Problem:"
STOP: tuple[str, ...] = ("\nProblem:", "\n\n\n")
"""Stop after one problem: the start of the next one, or two blank lines."""
MIN_WORDS = 5
MAX_QUESTION_CHARS = 400


@dataclass(frozen=True)
class Example:
    """One worked problem shown to the model."""

    problem: str
    answer: str
    program: str | None = None

    def render(self) -> str:
        lines = [f"Problem: {one_line(self.problem)}", f"Answer: {one_line(self.answer)}"]
        if self.program:
            lines.append(f"Program: {one_line(self.program)}")
        return "\n".join(lines)


MATH_EXAMPLES: tuple[Example, ...] = (
    Example("Tom has 12 apples and gives away 5. How many apples does he have left?", "7", "print(12 - 5)"),
    Example("A box holds 6 rows of 8 eggs. How many eggs are in the box?", "48", "print(6 * 8)"),
    Example("What is 15% of 240?", "36", "print(240 * 15 / 100)"),
    Example("A train travels 180 km in 3 hours. What is its average speed in km per hour?", "60",
            "print(180 / 3)"),
    Example("Sara buys 4 pens at 3 dollars each and a notebook for 7 dollars. How much does she spend in dollars?",
            "19", "print(4 * 3 + 7)"),
    Example("A rectangle is 9 cm long and 4 cm wide. What is its area in square cm?", "36", "print(9 * 4)"),
    Example("Ana is 3 times as old as her son, who is 11. How old will Ana be in 5 years?", "38",
            "print(3 * 11 + 5)"),
    Example("A film starts at 7:40 pm and lasts 95 minutes. How many minutes after 9:00 pm does it end?", "15",
            "print(40 + 95 - 120)"),
    Example("What is 3/4 of 56?", "42", "print(56 * 3 // 4)"),
    Example("A shirt costs 40 dollars and is sold at a 25% discount. What is the new price in dollars?", "30",
            "print(40 * (1 - 0.25))"),
    Example("Each bus carries 45 students. How many buses are needed for 200 students?", "5",
            "print(-(-200 // 45))"),
    Example("A tank holds 120 liters and drains 8 liters per minute. After how many minutes is it empty?", "15",
            "print(120 / 8)"),
)
"""Built-in worked examples for ``domain="math"`` (each program prints its answer)."""


def copied(question: str | None, shown: Sequence[str], threshold: float | None) -> str | None:
    """Why ``question`` counts as a copy of one of the ``shown`` problems, or ``None``.

    A copy is closer than ``threshold`` in BLEU distance (the validator's dedupe measure, which
    never sees the examples); ``threshold=None`` keeps copies.
    """
    if question is None or threshold is None or not shown:
        return None
    distance, other = nearest(question, list(shown))
    if other is not None and distance < threshold:
        return f"copies a shown example (BLEU distance {distance:.2f} < {threshold}): {one_line(other)[:80]}"
    return None


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def load_examples(rows: Sequence[Mapping[str, object]]) -> tuple[Example, ...]:
    """Examples from rows with ``problem`` (or ``question``/``prompt``), ``answer``, optional ``program``.

    Raises:
        ConfigError: a row without a problem or an answer (names the row and the fix).
    """
    examples = []
    for i, row in enumerate(rows):
        problem = row.get("problem") or row.get("question") or row.get("prompt")
        answer = row.get("answer", row.get("reference"))
        if not problem or answer is None or not str(answer).strip():
            raise ConfigError(f"few-shot example {i} needs a problem and an answer",
                              hint='write {"problem": "...", "answer": "...", "program": "print(...)"}')
        program = row.get("program") or row.get("solution")
        examples.append(Example(str(problem), str(answer), str(program) if program else None))
    if not examples:
        raise ConfigError("the few-shot example list is empty", hint="give at least one example or leave it unset")
    return tuple(examples)


def prompt(examples: Sequence[Example], topic: str | None, domain: str = "math") -> str:
    """The user message: the worked examples, then a request for one new problem."""
    kind = "math word problems" if domain == "math" else "reasoning problems"
    head = (f"Here are short {kind}. Each has its answer and a one-line Python program that prints "
            "the answer.")
    about = f" about {topic}" if topic else ""
    body = "\n\n".join(e.render() for e in examples)
    return f"{head}\n\n{body}\n\nWrite one new problem{about}, different from these, in the same format."


def choose(pool: Sequence[Example], preferred: Sequence[Example], shown: int, rng: random.Random) -> list[Example]:
    """``shown`` examples: the preferred ones (most recent last) first, the rest drawn from ``pool``."""
    chosen = list(preferred[-shown:]) if shown else []
    rest = [e for e in pool if e not in chosen]
    chosen += rng.sample(rest, min(len(rest), max(0, shown - len(chosen))))
    rng.shuffle(chosen)
    return chosen


_NUMBER_WITH_UNIT = re.compile(r"^\$?\s*(-?\d[\d,]*(?:\.\d+)?(?:/\d+)?)\s*(?:[A-Za-z][A-Za-z ]{0,20}|%)?\.?$")
_ASKS = re.compile(r"^\W*(find|compute|calculate|solve|determine|evaluate|simplify|work out|estimate)\b", re.I)
_FIELD = re.compile(r"^\s*\**\s*(Problem|Answer|Program)\s*\**\s*:\s*\**\s*(.*)$", re.I)  # **Problem:** too


def parse(text: str, *, prefilled: bool) -> ParsedTask:
    """Read ``Problem:`` / ``Answer:`` / ``Program:`` lines (the first problem only).

    ``prefilled``: the text continues a ``Problem:`` the request already wrote.
    """
    body = (PREFILL + text) if prefilled else text
    fields: dict[str, str] = {}
    for line in body.splitlines():
        if not line.strip():
            continue
        found = _FIELD.match(line)
        if found is None:
            if not fields:
                continue  # chatter before the first field
            break  # the block ended
        name, value = found.group(1).lower(), found.group(2).strip()
        if name in fields:
            break  # a second problem starts
        fields[name] = value
    question = fields.get("problem", "")
    if not question:
        return ParsedTask(None, error="no 'Problem:' line in the curriculum output")
    if len(question.split()) < MIN_WORDS:
        return ParsedTask(None, error=f"the problem is too short ({len(question.split())} words)")
    if len(question) > MAX_QUESTION_CHARS:
        return ParsedTask(None, error=f"the problem is too long ({len(question)} characters)")
    if not (question.rstrip().endswith("?") or _ASKS.match(question)):
        return ParsedTask(None, error="the problem asks nothing (no question mark, no 'Find/Compute/...')")
    answer = fields.get("answer") or None
    if answer is not None and "=" in answer:
        answer = answer.rsplit("=", 1)[1].strip() or None  # "10 * 100 = 1000": the result
    if answer is not None:
        number = _NUMBER_WITH_UNIT.match(answer)
        if number is not None:
            answer = number.group(1).replace(",", "")  # "18 days", "$30": the number
    program = fields.get("program") or None
    if program is not None and "print(" not in program:
        program = None  # not a program that prints anything: nothing to verify with
    if answer is None:
        # Alone, a program's output would become a *verified* reference (frontier_qa.probing._verify); a
        # small model's program is trusted only when its Answer line agrees.
        program = None
    return ParsedTask(question, reference=answer, solution=program)


__all__ = ["MATH_EXAMPLES", "PREFILL", "STOP", "Example", "choose", "copied", "load_examples", "parse", "prompt"]
