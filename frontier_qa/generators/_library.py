"""The built-in task generators: five skills with a difficulty knob each, references computed exactly.

Each generator is the solution program of its tasks: it draws an instance from the seeded
``rng`` it is given (and nothing else, so a seed names one task) and computes the answer, so the
reference is right by construction. Every prompt states every fact it needs, has one correct
answer and ends with a short instruction on the answer's form ("Give only the final number.").

* :func:`arithmetic`: ``a + b``, ``a - b`` or ``a × b`` with operands of exactly ``digits``
  digits; its ``shrink`` draws the smallest such operands.
* :func:`number_words`: the same arithmetic with the operands written in words ("forty-seven
  plus twelve"), so reading the numbers is the skill; its ``shrink`` draws the shortest spellings.
* :func:`dates`: the date ``days`` after a start date whose span crosses a month end or a year
  end (years 1990-2030, leap years included); its check reads the date in several forms.
* :func:`units`: a chain of ``chain`` conversion facts between invented units, so nothing can be
  recalled instead of computed; its check accepts thousands separators and the unit's name.
* :func:`word_problems`: a running quantity in a short story, changed by ``steps`` operations,
  with ``distractors`` irrelevant sentences holding numbers that must be ignored.

Importing the module registers them (:func:`frontier_qa.generators._core.registered` does).
"""

from __future__ import annotations

import calendar
import random
import re
from collections.abc import Callable, Mapping
from datetime import date, timedelta
from functools import partial

from frontier_qa.generators._core import Task, categorical, generator, ordinal

_INSTRUCTION = "Give only the final number."
_SYMBOL = {"add": "+", "sub": "-", "mul": "×"}

# -- arithmetic ------------------------------------------------------------------------------------


def _binary_task(a: int, b: int, op: str, render: Callable[[int], str] = str,
                 names: Mapping[str, str] = _SYMBOL) -> Task:
    """The task "What is a ○ b?" with each operand written by ``render`` and ``op`` named by ``names``
    (for ``sub`` the larger operand comes first); the reference is the exact integer in digits.
    """
    if op == "sub":
        a, b = max(a, b), min(a, b)
    value = a + b if op == "add" else a - b if op == "sub" else a * b
    return Task(f"What is {render(a)} {names[op]} {render(b)}? {_INSTRUCTION}", reference=str(value),
                metadata={"operands": [a, b], "op": op})


def _arithmetic_simplest(rng: random.Random, digits: int, op: str) -> Task:
    """The simplest instance at ``digits``: operands just above ``10**(digits-1)`` (1-digit: 2-4)."""
    low = 10 ** (digits - 1)
    a, b = ((rng.randint(2, 4) if digits == 1 else low + rng.randrange(10)) for _ in range(2))
    return _binary_task(a, b, op)


@generator(knobs=[ordinal("digits", 1, 8, easy="low"), categorical("op", ["add", "sub", "mul"])],
           shrink=_arithmetic_simplest)
def arithmetic(rng: random.Random, digits: int, op: str) -> Task:
    """Multi-digit integer arithmetic: two operands of exactly ``digits`` digits.

    Args:
        rng: the instance's random source.
        digits: the digit count of both operands (1-8).
        op: ``add``, ``sub`` or ``mul``; for ``sub`` the larger operand comes first, so the
            answer is never negative.

    Returns:
        "What is a ○ b?" with the exact integer as the reference.
    """
    a, b = (rng.randrange(10 ** (digits - 1), 10**digits) for _ in range(2))
    return _binary_task(a, b, op)


# -- arithmetic on numbers written in words --------------------------------------------------------

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((10**9, "billion"), (10**6, "million"), (1000, "thousand"), (100, "hundred"))
_OP_WORD = {"add": "plus", "sub": "minus", "mul": "times"}


def spell(n: int) -> str:
    """``n`` (0 ≤ n < 10**12) in English words: 342 → "three hundred forty-two"."""
    if not 0 <= n < 10**12:
        raise ValueError(f"spell() takes 0 <= n < 10**12, not {n}")
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    for scale, name in _SCALES:
        if n >= scale:
            rest = n % scale
            return f"{spell(n // scale)} {name}" + ("" if rest == 0 else f" {spell(rest)}")
    raise AssertionError("unreachable")


def _words_simplest(rng: random.Random, digits: int, op: str) -> Task:
    """The simplest instance at ``digits``: the shortest spellings (1-digit: 2-4; else round numbers)."""
    low = 10 ** (digits - 1)
    a, b = ((rng.randint(2, 4) if digits == 1 else low * rng.randint(1, 3)) for _ in range(2))
    return _binary_task(a, b, op, spell, _OP_WORD)


@generator(knobs=[ordinal("digits", 1, 6, easy="low"), categorical("op", ["add", "sub", "mul"])],
           shrink=_words_simplest)
def number_words(rng: random.Random, digits: int, op: str) -> Task:
    """Arithmetic on numbers written in words: "What is forty-seven plus twelve?".

    The computation is what :func:`arithmetic` asks; reading the numbers is the skill. An agent
    with a calculator tool finds :func:`arithmetic` easy at any size and can still fail here,
    where it must turn "three hundred forty-three" into 343 before it can compute.

    Args:
        rng: the instance's random source.
        digits: the digit count of both operands (1-6).
        op: ``add`` (plus), ``sub`` (minus, the larger first) or ``mul`` (times).

    Returns:
        The question in words, with the exact integer (in digits) as the reference.
    """
    a, b = (rng.randrange(10 ** (digits - 1), 10**digits) for _ in range(2))
    return _binary_task(a, b, op, spell, _OP_WORD)


# -- dates -----------------------------------------------------------------------------------------

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]  # spelled out: calendar.month_name follows the process's locale
_YMD = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_MDY = re.compile(r"([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})")
_DMY = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?([a-z]+)\.?,?\s+(\d{4})")
_WEEKDAY = re.compile(r"^(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+")


def _month(word: str) -> int:
    """1-12 for a month's name or an abbreviation of it (3 letters or more); 0 for anything else."""
    if len(word) >= 3:
        for i, name in enumerate(_MONTHS, 1):
            if name.startswith(word):
                return i
    return 0


def parse_date(text: str) -> date | None:
    """A date written as ``2024-02-13``, ``2024/02/13``, ``February 13, 2024``, ``Feb 13, 2024``
    or ``13 February 2024`` (an optional weekday before it); ``None`` for anything else.
    """
    s = _WEEKDAY.sub("", str(text).strip().strip("*`\"'").strip().rstrip(".").lower())
    try:
        if m := _YMD.fullmatch(s):
            return date(int(m[1]), int(m[2]), int(m[3]))
        if (m := _MDY.fullmatch(s)) and _month(m[1]):
            return date(int(m[3]), _month(m[1]), int(m[2]))
        if (m := _DMY.fullmatch(s)) and _month(m[2]):
            return date(int(m[3]), _month(m[2]), int(m[1]))
    except (ValueError, OverflowError):
        pass
    return None


def _date_check(expected: date, answer: str) -> bool:
    try:
        return parse_date(answer) == expected
    except Exception:  # a check never raises: anything unreadable is wrong
        return False


@generator(knobs=[ordinal("days", values=[1, 3, 7, 15, 30, 60, 120, 365], low=1, high=365, easy="low"),
                  categorical("crosses", ["month", "year"])])
def dates(rng: random.Random, days: int, crosses: str) -> Task:
    """Date arithmetic: the date ``days`` after a start date in 1990-2030.

    Args:
        rng: the instance's random source.
        days: how many days to add (1-365).
        crosses: ``year``: the span crosses a year end; ``month``: it crosses a month end and,
            below 365 days, no year end (at 365 days some do, as every start does then).

    Returns:
        The question with the ISO date as the reference and a check that reads other forms.
    """
    while True:
        year = rng.randint(1990, 2030)
        month = 12 if crosses == "year" else rng.randint(1, 12)
        month_end = date(year, month, calendar.monthrange(year, month)[1])
        start = month_end - timedelta(days=rng.randrange(days))  # start + days is past month_end
        end = start + timedelta(days=days)
        if start.year >= 1990 and (crosses == "year" or days == 365 or end.year == start.year):
            break
    unit = "day" if days == 1 else "days"
    prompt = (f"What date is {days} {unit} after {start.isoformat()}? "
              "Give only the date, as YYYY-MM-DD.")
    return Task(prompt, reference=end.isoformat(), check=partial(_date_check, end),
                metadata={"start": start.isoformat()})


# -- units -----------------------------------------------------------------------------------------

_UNIT_NAMES = ["blip", "zork", "flurb", "quib", "snarg", "vell", "trop", "dap", "glim", "morp", "wug", "fenk",
               "plonk", "krell", "yarp", "tand", "drub", "skiv", "nolp", "grenk"]


def _units_check(expected: int, unit: str, answer: str) -> bool:
    try:
        s = str(answer).strip().strip("*`\"'").strip().rstrip(".").lower()
        m = re.fullmatch(rf"(\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\s+{unit}s?)?", s)
        return m is not None and int(m[1].replace(",", "")) == expected
    except Exception:  # a check never raises
        return False


@generator(knobs=[ordinal("chain", 1, 6, easy="low")])
def units(rng: random.Random, chain: int) -> Task:
    """Unit-conversion chains between invented units: ``chain`` facts "1 A = f B" to multiply.

    Args:
        rng: the instance's random source.
        chain: how many conversion facts link the first unit to the last (1-6); each factor is
            2-12, the facts are stated in shuffled order and the quantity asked about is 2-9.

    Returns:
        The facts and the question, with the exact integer as the reference and a check that
        accepts "1,234", "1234" or "1234 zorks".
    """
    names = rng.sample(_UNIT_NAMES, chain + 1)
    factors = [rng.randint(2, 12) for _ in range(chain)]
    facts = [f"1 {names[i]} = {f} {names[i + 1]}s" for i, f in enumerate(factors)]
    rng.shuffle(facts)
    q = rng.randint(2, 9)
    value = q
    for f in factors:
        value *= f
    prompt = ("These units are related by the following facts:\n" + "".join(f"- {fact}\n" for fact in facts)
              + f"How many {names[-1]}s are in {q} {names[0]}s? {_INSTRUCTION}")
    return Task(prompt, reference=str(value), check=partial(_units_check, value, names[-1]),
                metadata={"units": names, "factors": factors, "quantity": q})


# -- word problems ---------------------------------------------------------------------------------

_STORIES = [  # place, item, opening, add, subtract, multiply ({n}: the number; {place}, {item})
    ("fruit shop", "apples", "A fruit shop opens in the morning with {n} apples in stock.",
     ["A delivery brings {n} more apples.", "The owner buys {n} more apples from a farmer."],
     ["Customers buy {n} apples.", "The owner throws away {n} bruised apples."]),
    ("library", "books", "A library has {n} books on its shelves.",
     ["Neighbours donate {n} more books to the library.", "The library buys {n} new books."],
     ["The library sells {n} worn-out books.", "The library gives away {n} old books."]),
    ("bakery", "bread rolls", "A bakery has {n} bread rolls ready at dawn.",
     ["The bakers bake {n} more bread rolls.", "A second oven adds {n} more bread rolls."],
     ["Customers buy {n} bread rolls.", "The bakery sends {n} bread rolls to a cafe."]),
]
_MULTIPLY = "After a big delivery, the {place} has {n} times as many {item} as it had just before."
_DISTRACTORS = [
    "The {place} opened {n} years ago.",
    "The walk from the {place} to the train station takes {n} minutes.",
    "The {place} has {n} windows facing the street.",
    "The owner of the {place} has {n} cousins.",
    "The temperature outside is {n} degrees.",
    "The {place}'s delivery van is {n} years old.",
]


@generator(knobs=[ordinal("steps", 1, 6, easy="low"), ordinal("distractors", 0, 3, easy="low")])
def word_problems(rng: random.Random, steps: int, distractors: int) -> Task:
    """Multi-step word problems: a running count changed by ``steps`` add/subtract/multiply operations.

    Args:
        rng: the instance's random source.
        steps: how many operations change the count (1-6); every intermediate count is a
            positive integer.
        distractors: how many irrelevant sentences holding a number are mixed in (0-3).

    Returns:
        The story with the final count as the reference; metadata ``numbers_used`` (the start
        then each operand), ``operations`` and ``distractors`` (the irrelevant sentences).
    """
    place, item, opening, adds, subs = rng.choice(_STORIES)
    value = rng.randint(10, 50)
    numbers, ops = [value], []
    sentences = [opening.format(n=value)]
    for _ in range(steps):
        choices = ["add"] + (["sub"] if value >= 2 else []) + (["mul"] if value <= 300 else [])
        op = rng.choice(choices)
        if op == "add":
            n = rng.randint(2, 40)
            value, template = value + n, rng.choice(adds)
        elif op == "sub":
            n = rng.randint(1, min(value - 1, 40))
            value, template = value - n, rng.choice(subs)
        else:
            n = rng.randint(2, 3)
            value, template = value * n, _MULTIPLY
        numbers.append(n)
        ops.append(op)
        sentences.append(template.format(n=n, place=place, item=item))
    noise = [t.format(n=rng.randint(2, 60), place=place) for t in rng.sample(_DISTRACTORS, distractors)]
    for sentence in noise:  # anywhere after the opening: none of them changes the count
        sentences.insert(rng.randint(1, len(sentences)), sentence)
    prompt = " ".join(sentences) + f" How many {item} does the {place} have now? {_INSTRUCTION}"
    return Task(prompt, reference=str(value),
                metadata={"numbers_used": numbers, "operations": ops, "distractors": noise})
