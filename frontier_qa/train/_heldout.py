"""Held-out problems with known answers: what each co-evolution iteration is measured on.

Agent0 reports the executor's accuracy on math and general reasoning benchmarks after each
iteration (Figure 4). Those benchmarks cannot be downloaded here, so a run measures its
executor on a held-out file the user gives (JSONL or YAML of ``{problem, answer}``), or on the
built-in ``builtin:arithmetic`` set: 40 multi-step arithmetic word problems generated from a
fixed seed, answers computed exactly. It is easy for a real model and hard for a tiny one; it
says whether the executor still answers in ``\\boxed{}`` and gets integers right, nothing about
olympiad math.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from frontier_qa.errors import ConfigError

BUILTIN = "builtin:arithmetic"
BUILTIN_SIZE = 40


@dataclass(frozen=True)
class HeldOut:
    """One held-out problem: the question and its exact answer (a string, compared by equivalence)."""

    id: str
    problem: str
    answer: str


def _arithmetic(n: int = BUILTIN_SIZE, seed: int = 20251121) -> list[HeldOut]:
    rng = random.Random(seed)
    items: list[HeldOut] = []
    seen: set[str] = set()
    forms = (
        lambda a, b, c: (f"A shop sells pencils at {a} cents each. Mia buys {b} pencils and pays with {c} dollars. "
                         f"How many cents of change does she get?", 100 * c - a * b),
        lambda a, b, c: (f"What is {a} × {b} − {c}?", a * b - c),
        lambda a, b, c: (f"A train travels {a} km per hour for {b} hours, then {c} km more. "
                         "How many kilometres does it travel in total?", a * b + c),
        lambda a, b, c: (f"What is the sum of all integers from {a} to {a + b} inclusive?",
                         sum(range(a, a + b + 1))),
        lambda a, b, c: (f"{a * b} apples are shared equally among {b} baskets, and then {c} apples are added to "
                         "each basket. How many apples are in one basket?", a + c),
    )
    while len(items) < n:
        a, b = rng.randint(12, 99), rng.randint(3, 19)
        form = forms[len(items) % len(forms)]
        c = rng.randint((a * b) // 100 + 1, (a * b) // 100 + 9) if len(items) % len(forms) == 0 else rng.randint(5, 60)
        problem, answer = form(a, b, c)
        if problem in seen:
            continue
        seen.add(problem)
        items.append(HeldOut(f"arith-{len(items):02d}", problem, str(answer)))
    return items


def load_heldout(source: str, *, limit: int | None = None) -> list[HeldOut]:
    """The held-out set: ``builtin:arithmetic`` or a JSONL / YAML file of ``{problem, answer}`` rows.

    Rows may also name the question ``question`` and carry an ``id``.

    Raises:
        ConfigError: the file is missing or a row has no problem or no answer (naming the row).
    """
    if source == BUILTIN:
        items = _arithmetic()
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise ConfigError(f"held-out set {source!r} is not a file",
                              hint=f"give a JSONL/YAML file of {{problem, answer}} rows, or {BUILTIN}")
        text = path.read_text(encoding="utf-8")
        if path.suffix in (".yaml", ".yml"):
            import yaml

            rows = yaml.safe_load(text) or []
            rows = rows.get("problems", rows) if isinstance(rows, dict) else rows
        else:
            try:
                rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError as err:
                raise ConfigError(f"{source}: line {err.lineno} is not JSON: {err.msg}",
                                  hint="one JSON object per line: {\"problem\": ..., \"answer\": ...}") from None
        items = []
        for i, row in enumerate(rows):
            problem = row.get("problem", row.get("question")) if isinstance(row, dict) else None
            answer = row.get("answer") if isinstance(row, dict) else None
            if not problem or answer is None or str(answer).strip() == "":
                raise ConfigError(f"{source}: row {i + 1} needs a problem and an answer",
                                  hint="write rows as {\"problem\": \"...\", \"answer\": \"...\"}")
            items.append(HeldOut(str(row.get("id", f"heldout-{i:03d}")), str(problem), str(answer).strip()))
        if not items:
            raise ConfigError(f"held-out set {source!r} is empty", hint="add {problem, answer} rows")
    return items[:limit] if limit else items


__all__ = ["BUILTIN", "HeldOut", "load_heldout"]
