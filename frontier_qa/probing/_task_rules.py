"""Rules that find ill-posed and unverifiable word problems, without a model.

Each rule reads a task's text and returns a :class:`Finding` or ``None``. They look for what small
curriculum models get wrong when they imitate word problems (issue 27), in the words of the
labelling rule (``benchmarks/data/validity/RULE.md``):

* **not a task**: no question and no request, or a request for a problem that is not there;
* **false premise**: an impossible date, a false everyday fact ("a week has 8 days"), half of an odd
  number of people, change from a note smaller than the price;
* **contradiction**: the task's own numbers disagree (parts that do not add up to the total, a
  length × width that is not the stated area, clock times that are not the stated duration, a
  unit price × count that is not the stated total, "half of them, 14" of 24);
* **unrelated / missing**: what is asked needs a quantity of a kind the task never gives (a speed
  from a distance alone, a time from a rate alone, an area from one side, an age with no age, a
  count of a thing never mentioned, a count from percentages alone, change with no price);
* **several readings**: phrases with two standard readings ("divide 30 by half", a monthly figure
  from weekly rates, "cut by a quarter" of a price);
* **unverifiable**: opinions ("which should they buy", "the best way"), predictions of prices and
  results, private facts with no numbers given ("how much did I spend").

A rule that fires is a claim with an error rate: ``benchmarks/validity_bench.py`` measures the
rules' catch rate and false rejections on the held-out half of the labelled set. Rules never say
a task *is* well-posed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

WELL_POSED = "well-posed"
ILL_POSED = "ill-posed"
UNVERIFIABLE = "unverifiable"


@dataclass(frozen=True)
class Finding:
    """What a rule found: the verdict, the kind (as in the labelling rule) and why, in words."""

    verdict: str
    kind: str
    reason: str


Rule = Callable[[str], "Finding | None"]

# --- reading a task ---------------------------------------------------------------------------

_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "hundred": 100,
}
_NUM = r"\d[\d,]*(?:\.\d+)?"

# unit words by dimension (singular and plural forms, abbreviations)
_UNITS: dict[str, tuple[str, ...]] = {
    "time": ("second", "seconds", "sec", "minute", "minutes", "min", "mins", "hour", "hours", "hr", "hrs", "day",
             "days", "week", "weeks", "month", "months", "year", "years", "decade", "decades"),
    "length": ("millimeter", "millimeters", "millimetre", "millimetres", "mm", "centimeter", "centimeters",
               "centimetre", "centimetres", "cm", "meter", "meters", "metre", "metres", "m", "kilometer",
               "kilometers", "kilometre", "kilometres", "km", "inch", "inches", "in", "foot", "feet", "ft",
               "yard", "yards", "yd", "mile", "miles", "mi", "block", "blocks", "lap", "laps"),
    "volume": ("liter", "liters", "litre", "litres", "l", "milliliter", "milliliters", "ml", "gallon", "gallons",
               "gal", "quart", "quarts", "pint", "pints", "cup", "cups", "ounce", "ounces", "oz"),
    "mass": ("gram", "grams", "g", "kilogram", "kilograms", "kg", "pound", "pounds", "lb", "lbs", "ton", "tons"),
    "money": ("dollar", "dollars", "cent", "cents", "euro", "euros", "pound", "pounds"),
}
_UNIT_DIM = {u: dim for dim, units in _UNITS.items() for u in units}
_SPEED = re.compile(r"\b(mph|km/h|kmh|kph|knots?|miles an hour|miles per hour|kilometers per hour|kilometres per hour|"
                    r"meters per second|m/s|feet per second)\b", re.I)
_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})\s*(a\.?m\.?|p\.?m\.?)?", re.I)
_CLOCK_WORDS = re.compile(r"\b(\d{1,2})\s*(a\.?m\.?|p\.?m\.?|o'clock)|\bnoon\b|\bmidnight\b", re.I)
_MONEY = re.compile(r"(?:\$|€|£)\s?(" + _NUM + r")|(" + _NUM + r")\s?(?:dollars?|cents?|euros?)\b", re.I)
_PERCENT = re.compile(r"(" + _NUM + r")\s?(?:%|percent\b)", re.I)
_FRACTION = re.compile(r"\b\d+/\d+\b|\b(half|third|thirds|quarter|quarters|fourth|fifth|fifths)\b", re.I)
_QUESTION_START = re.compile(
    r"^\s*(what|how|which|when|where|who|whose|why|find|calculate|compute|determine|work out|give|name|express|"
    r"estimate|convert|round|simplify|evaluate|show|write|list|divide|add|subtract|multiply|is|are|does|do|did|can|"
    r"will|would|should|if)\b", re.I)


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.?!])\s+(?=[A-Z$0-9\"'(])", " ".join(text.split()))
    return [p for p in parts if p.strip()]


def _split(text: str) -> tuple[str, str]:
    """``(context, question)``: the last sentence that asks something, and everything before it."""
    sentences = _sentences(text)
    for i in range(len(sentences) - 1, -1, -1):
        s = sentences[i]
        if "?" in s or _QUESTION_START.match(s):
            # a question often starts with the condition it needs: "If ..., how many ...?"
            return " ".join(sentences[:i]), s
    return " ".join(sentences), ""


def _number(token: str) -> float | None:
    token = token.lower().replace(",", "")
    if token in _WORD_NUMBERS:
        return float(_WORD_NUMBERS[token])
    try:
        return float(token)
    except ValueError:
        return None


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in re.findall(_NUM, text)]


_IRREGULAR = {"women": "woman", "men": "man", "children": "child", "people": "person", "feet": "foot",
              "teeth": "tooth", "mice": "mouse", "geese": "goose"}


def _singular(word: str) -> str:
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "sses", "xes", "oes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        return w[:-1]
    return w


def _mentions(text: str, noun: str) -> bool:
    """Whether ``text`` mentions ``noun`` (either number, or as the head of a compound)."""
    stem = _singular(noun)
    words = {_singular(w) for w in re.findall(r"[A-Za-z]+", text)}
    return stem in words or noun.lower() in words


def _dimensions(text: str) -> dict[str, int]:
    """How many quantities of each dimension ``text`` states outside rates ("per hour" is not a time)."""
    dims: dict[str, int] = {}
    stripped = _SPEED.sub(" SPEED ", text)
    for m in re.finditer(r"(" + _NUM + r"|\b(?:" + "|".join(_WORD_NUMBERS) + r"|a|an|half an?)\b)[\s-]*"
                         r"([A-Za-z]+)(?:\s+(per|an|a|each|every)\s+([A-Za-z]+))?", stripped, re.I):
        unit = m.group(2).lower()
        dim = _UNIT_DIM.get(unit)
        if dim is None:
            continue
        rate_unit = (m.group(4) or "").lower()
        if m.group(3) and _UNIT_DIM.get(rate_unit) is not None:
            dims["rate"] = dims.get("rate", 0) + 1
            dims[f"rate:{dim}"] = dims.get(f"rate:{dim}", 0) + 1
            continue
        if m.group(1).lower() in ("a", "an") and dim != "time":
            continue  # "a foot of snow" states no amount worth counting
        dims[dim] = dims.get(dim, 0) + 1
    if _MONEY.search(text):
        dims["money"] = dims.get("money", 0) + len(_MONEY.findall(text))
    if _CLOCK.search(text) or _CLOCK_WORDS.search(text):
        dims["clock"] = len(_CLOCK.findall(text)) + len(_CLOCK_WORDS.findall(text))
    if _SPEED.search(text):
        dims["speed"] = len(_SPEED.findall(text))
    if re.search(r"\b(each|every|per|a|an)\s+(day|night|week|hour|minute|month|year)\b", text, re.I):
        dims["period"] = 1
    return dims


def _ill(kind: str, reason: str) -> Finding:
    return Finding(ILL_POSED, kind, reason)


# --- not a task --------------------------------------------------------------------------------


def no_question(text: str) -> Finding | None:
    """Statements only: nothing is asked or requested."""
    context, question = _split(text)
    if question:
        if not re.search(r"\d", text) and "?" not in text and re.search(
                r"\b(the following|below|this problem|the problem|this question)\b", text, re.I):
            return _ill("not-a-task", "it asks to solve a problem that is not there")
        return None
    return _ill("not-a-task", "nothing is asked: no question and no request")


# --- false premises ----------------------------------------------------------------------------

_MONTH_DAYS = {"january": 31, "february": 29, "march": 31, "april": 30, "may": 31, "june": 30, "july": 31,
               "august": 31, "september": 30, "october": 31, "november": 30, "december": 31}
_FACTS = (
    (r"\b(?:a|one|each|every) week (?:has|is|of|contains|lasts) (\w+) days\b", 7, "a week has 7 days"),
    (r"\bsince (?:a|one) week (?:has|is) (\w+) days\b", 7, "a week has 7 days"),
    (r"\b(?:an|one|each|every) hour (?:has|is|of|contains|lasts) (\w+) minutes\b", 60, "an hour has 60 minutes"),
    (r"\b(?:a|one|each|every) minute (?:has|is|of|contains|lasts) (\w+) seconds\b", 60, "a minute has 60 seconds"),
    (r"\b(?:a|one|each|every) day (?:has|is|of|contains|lasts) (\w+) hours\b", 24, "a day has 24 hours"),
    (r"\b(?:a|one|each|every) year (?:has|is|of|contains|lasts) (\w+) months\b", 12, "a year has 12 months"),
    (r"\b(?:a|one) dozen (?:is|has|means|equals) (\w+)\b", 12, "a dozen is 12"),
    (r"\b(?:a|one) foot (?:has|is|equals) (\w+) inches\b", 12, "a foot is 12 inches"),
)
_COUNTABLE_EXCLUDED = set(_UNIT_DIM) | {"percent", "pages", "page"}


def false_premise(text: str) -> Finding | None:
    """An impossible date, a false everyday fact, a share of indivisible things, change from too little."""
    low = text.lower()
    for m in re.finditer(r"\b(" + "|".join(_MONTH_DAYS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?\b", low):
        if int(m.group(2)) > _MONTH_DAYS[m.group(1)]:
            return _ill("false-premise", f"{m.group(1).title()} {m.group(2)} does not exist")
    for m in re.finditer(r"\b(\d{1,2})(?:st|nd|rd|th)? of (" + "|".join(_MONTH_DAYS) + r")\b", low):
        if int(m.group(1)) > _MONTH_DAYS[m.group(2)]:
            return _ill("false-premise", f"{m.group(2).title()} {m.group(1)} does not exist")
    for pattern, truth, fact in _FACTS:
        claim = re.search(pattern, low)
        if claim is not None:
            said = _number(claim.group(1))
            if said is not None and said != truth:
                return _ill("false-premise", f"it says otherwise, but {fact}")
    for m in re.finditer(r"\b(half|a third|one third|a quarter|one quarter|a fourth)\s+of\s+(?:the|its|his|her|their)?"
                         r"\s*(\d+)\s+([a-z]+)", low):
        n, noun = int(m.group(2)), m.group(3)
        parts = {"half": 2}.get(m.group(1), 4 if "quarter" in m.group(1) or "fourth" in m.group(1) else 3)
        if n % parts and noun not in _COUNTABLE_EXCLUDED and _singular(noun) not in _COUNTABLE_EXCLUDED:
            return _ill("false-premise", f"{m.group(1)} of {n} {noun} is not a whole number of {noun}")
    paying = re.search(r"(?:\$|€|£)\s?(" + _NUM + r")[^.?!]*?\b(?:with|using|hands over|gives)\s+(?:a|an|one)\s+(?:\$|€|£)\s?("
                       + _NUM + r")\s*(?:bill|note)", text, re.I)
    if paying and re.search(r"\bchange\b", text, re.I):
        price, paid = float(paying.group(1).replace(",", "")), float(paying.group(2).replace(",", ""))
        if paid < price:
            return _ill("false-premise", f"a {paid:g} note does not pay a price of {price:g}: there is no change")
    return None


# --- contradictions ----------------------------------------------------------------------------

_FRACTION_OF = {"half": 0.5, "a third": 1 / 3, "one third": 1 / 3, "a quarter": 0.25, "one quarter": 0.25,
                "two thirds": 2 / 3, "three quarters": 0.75, "a fifth": 0.2}


def _clock_minutes(h: str, m: str, half: str | None) -> int:
    hour = int(h) % 12 if half else int(h)
    if half and half.lower().startswith("p"):
        hour += 12
    return hour * 60 + int(m)


def contradiction(text: str) -> Finding | None:
    """The task's own numbers disagree with each other."""
    low = " ".join(text.lower().split())
    # a total and its parts: "30 students: 18 girls and 14 boys", "24 pets, of which 10 cats and 9 dogs"
    m = re.search(r"\b(\d+)\s+([a-z]+)(?::|,\s*(?:of (?:whom|which|them)|including)|\s+(?:made up of|consisting of))"
                  r"\s*(\d+)\s+[a-z]+(?:,\s*(\d+)\s+[a-z]+)?,?\s+and\s+(\d+)\s+[a-z]+", low)
    if m:
        total = int(m.group(1))
        parts = [int(g) for g in (m.group(3), m.group(4), m.group(5)) if g]
        if sum(parts) != total:
            return _ill("contradiction", f"{' + '.join(map(str, parts))} is not the {total} {m.group(2)} stated")
    # "A box holds 24 chocolates. Half of them, 14 chocolates, ..."
    share = re.search(r"\b(" + "|".join(_FRACTION_OF) + r") of (?:them|these|those|the [a-z]+)\s*(?:,|\(|—|-|:)\s*(\d+)\b",
                      low)
    if share:
        before = _numbers(low[: share.start()])
        if before:
            whole, stated = before[-1], float(share.group(2))
            if abs(whole * _FRACTION_OF[share.group(1)] - stated) > 1e-9:
                return _ill("contradiction", f"{share.group(1)} of {whole:g} is not {stated:g}")
    # "3 out of 5 (33%)": a share and its percentage
    for m in re.finditer(r"\b(\d+)\s+(?:out of|of|in)\s+(?:every\s+)?(\d+)\s*[a-z]*\s*\(?\s*(?:,|or|is|=|\()?\s*(\d+(?:\.\d+)?)\s?%",
                         low):
        part, whole, pct = int(m.group(1)), int(m.group(2)), float(m.group(3))
        if whole and abs(100 * part / whole - pct) > 1.0:
            return _ill("contradiction", f"{part} of {whole} is {100 * part / whole:.0f}%, not {pct:g}%")
    # the same thing given two values: "a box holds 48 eggs ... a box holds 25 eggs"
    values: dict[tuple[str, str], str] = {}
    for m in re.finditer(r"\b(?:a|an|each|every|one|the)\s+([a-z]+)\s+(holds|costs|contains|weighs|has|is worth|measures)\s+"
                         r"(\$?\d[\d,.]*)\b", low):
        key = (_singular(m.group(1)), m.group(2))
        value = m.group(3).rstrip(".,")
        if key in values and values[key] != value:
            return _ill("contradiction", f"{m.group(1)} {m.group(2)} both {values[key]} and {value}")
        values.setdefault(key, value)
    # length × width against a stated area
    m = re.search(r"(" + _NUM + r")\s*([a-z]+)\s+long\s+and\s+(" + _NUM + r")\s*[a-z]*\s*wide", low)
    area = re.search(r"\barea\s+(?:is|of|was|measures)\s+(" + _NUM + r")", low)
    if m and area:
        product = float(m.group(1).replace(",", "")) * float(m.group(3).replace(",", ""))
        if abs(product - float(area.group(1).replace(",", ""))) > 1e-6:
            return _ill("contradiction", f"{m.group(1)} × {m.group(3)} is not the stated area {area.group(1)}")
    # two clock times against a stated duration
    clocks = _CLOCK.findall(text)
    duration = re.search(r"\b(?:a |an )?(?:trip|journey|ride|flight|drive|shift|meeting|game|movie) (?:of|lasting|that "
                       r"(?:took|lasted)) (" + _NUM + r") hours?\b|\b(" + _NUM + r")-hour (?:trip|journey|ride|flight|"
                       r"drive|shift)\b", low)
    if len(clocks) == 2 and duration:
        hours = float(duration.group(1) or duration.group(2))
        start, end = (_clock_minutes(*c) for c in clocks)
        span = (end - start) % (24 * 60)
        if abs(span - hours * 60) > 1e-6:
            return _ill("contradiction", f"the clock times are {span // 60}h{span % 60:02d} apart, not {hours:g} hours")
    # unit price × count against a stated total
    price = re.search(r"(?:\$|€|£)\s?(" + _NUM + r")\s*(?:each|apiece|a piece|per [a-z]+)", low)
    bought = re.search(r"\b(?:bought|buys|buy|paid for|purchased)\s+(\d+)\s+(?:of them\s+|[a-z]+\s+)?for\s+(?:\$|€|£)\s?("
                       + _NUM + r")", low)
    if price and bought:
        unit, count, paid_total = float(price.group(1)), int(bought.group(1)), float(bought.group(2).replace(",", ""))
        if abs(unit * count - paid_total) > 1e-6:
            return _ill("contradiction", f"{count} at {unit:g} each is {unit * count:g}, not the {paid_total:g} stated")
    return None


# --- what is asked against what is given --------------------------------------------------------

_AGE_GIVEN = (r"\b(years? old|age|ages|aged|born|older|younger|birthday|turns?|\d+-year-old|as old as)\b|"
              r"\b(?:is|was|turned|turns) \d{1,3}\b")
_TIMED = r"\b(trip|journey|ride|flight|drive|movie|film|show|meeting|game|class|lesson|break|shift|nap|wait|race|walk)\b"
_COMPLEMENTS = {"boy": "girl", "girl": "boy", "man": "woman", "woman": "man", "men": "woman", "women": "man",
                "adult": "child", "child": "adult", "children": "adult", "male": "female", "female": "male"}
_GENERIC_COUNTS = {"time", "times", "way", "ways", "more", "fewer", "less", "much", "many", "other", "others",
                   "total", "altogether", "in", "of", "are", "is", "were", "was", "do", "does", "did", "will", "can",
                   "would", "should", "have", "has", "had", "left", "remain", "remaining", "each", "different",
                   "whole", "full", "complete", "equal", "people", "person", "number", "numbers", "item", "items",
                   "thing", "things", "one", "ones", "piece", "pieces", "part", "parts", "unit", "units"}
_ASK_COUNT = re.compile(r"\bhow many\s+(?:more\s+|fewer\s+|extra\s+|additional\s+|whole\s+|full\s+|complete\s+)?"
                        r"(?:\$?\d+\s+)?([a-z]+)", re.I)


def missing_or_unrelated(text: str) -> Finding | None:
    """What is asked needs a quantity of a kind the task never gives."""
    context, question = _split(text)
    if not question:
        return None
    q = question.lower()
    given = _dimensions(context) if context else {}
    given_all = _dimensions(text)
    # a speed from what is given
    if re.search(r"\b(how fast|what (?:is|was) (?:the|its|his|her|their) (?:average )?speed|at what speed|"
                 r"what speed)\b", q):
        if not given_all.get("speed") and not (given_all.get("length") and (given_all.get("time")
                                                                          or given_all.get("clock"))):
            return _ill("missing", "a speed needs a distance and a time; the task does not give both")
    # a duration from what is given
    if re.search(r"\bhow long (?:will|does|did|would) (?:it|the [a-z]+|[a-z]+) (?:take|last)\b|"
                 r"\bhow many (?:minutes|hours|days|weeks|seconds) (?:will|does|did|would|until|before)\b", q):
        amounts = sum(given_all.get(d, 0) for d in ("length", "volume", "mass", "money"))
        if not (given_all.get("time") or given_all.get("clock") or given_all.get("period")) \
                and not (given_all.get("rate") and amounts):
            what = "a distance or amount to go with the rate" if given_all.get("rate") or given_all.get("speed") \
                else "any time, rate or amount"
            return _ill("missing", f"a duration needs {what}; the task does not give it")
        if given_all.get("rate") and not amounts and not given_all.get("time") and not given_all.get("clock"):
            return _ill("missing", "a duration from a rate needs the amount to cover; the task does not give it")
        if given_all.get("speed") and not given_all.get("length") and not given_all.get("time") \
                and not given_all.get("clock"):
            return _ill("missing", "a travel time from a speed needs the distance; the task does not give it")
    # an area from one side
    if re.search(r"\b(?:what is|find|calculate|what's) (?:the |its |his |her |their )?(?:total )?area\b|\barea of\b|\bhow many square\b", q):
        sides = given_all.get("length", 0)
        shaped = re.search(r"\b(square|circle|circular|cube|equilateral|radius|diameter)\b", text, re.I)
        if sides < 2 and not shaped and not re.search(r"\barea\b", context, re.I) \
                and not re.search(r"\b(\d+)\s*(?:by|x|×)\s*(\d+)\b", text, re.I):
            return _ill("missing", "an area needs two sides (or a shape with one); the task gives one")
    # a width or length from an area that is not given
    if re.search(r"\bhow (?:wide|long|tall|deep) is\b|\bwhat is (?:the|its) (?:width|length|height)\b", q) and not (
            given_all.get("clock") or given_all.get("time") or re.search(_TIMED, q)):
        if not given.get("length") and not re.search(r"\b(area|perimeter|square (?:meters|feet|metres|yards|"
                                                     r"centimeters|inches))\b", context, re.I):
            return _ill("missing", "a length needs some length, area or perimeter; the task gives none")
        if given.get("length", 0) < 2 and re.search(r"\bhow wide\b|\bwidth\b", q) and not re.search(
                r"\b(area|perimeter|square (?:meters|feet|metres|yards|centimeters|inches)|times as|twice|half)\b",
                context, re.I):
            return _ill("missing", "a width from one length needs the area or perimeter; the task gives neither")
    # an age with no age given
    m = re.search(r"\bhow old (?:is|was|will|would) (?:the |a |an )?([a-z]+)", q)
    if m and not re.search(_AGE_GIVEN, context, re.I):
        noun = m.group(1)
        kind = "unrelated" if not _mentions(context, noun) else "missing"
        return _ill(kind, "an age is asked but the task gives no age, birth year or age difference")
    # change with no price
    if re.search(r"\b(?:how much|what) change\b|\bchange (?:does|did|will|should) \w+ (?:get|receive)\b", q):
        amounts = len(_MONEY.findall(text))
        if amounts < 2 and not re.search(r"\b(each|per|a piece|apiece)\b", text, re.I) or amounts == 0:
            return _ill("missing", "change needs the price as well as the money paid; the task gives one amount")
    # a fraction of something cut into an unknown number of pieces
    if re.search(r"\bwhat fraction\b|\bwhat part\b|\bwhat share\b", q) and re.search(
            r"\binto (?:some |several |many |a few )?(?:equal |same-size |equal-size )?(pieces|parts|slices|portions)\b",
            context, re.I):
        return _ill("missing", "the number of equal pieces is not given")
    # money asked where the task names no amount of money
    if re.search(r"\bhow much (?:will|does|did|would|do) [^?]*\b(?:cost|pay|spend|charge|earn|save)\b|\bwhat (?:is|was|will be) "
                 r"the (?:price|cost)\b|\bhow much money\b|\bhow many (?:dollars|euros|cents)\b", q) \
            and not given_all.get("money") and not re.search(r"\b(price|cost|costs|paid|earns?|salary|wage)\b[^.?!]*\d",
                                                               context, re.I):
        return _ill("missing", "an amount of money is asked, but the task gives no price or amount")
    # a count asked with no number anywhere (not an everyday fact such as the days in a week)
    if re.search(r"\bhow (?:many|much)\b", q) and not re.search(r"\d", text) and not re.search(
            r"\b(" + "|".join(_WORD_NUMBERS) + r"|dozen|half|twice|double|triple)\b", text, re.I) and not re.search(
            r"\bhow many \w+ (?:are|is) (?:there )?in (?:a|an|one|each)\b", q):
        return _ill("missing", "a number is asked, but the task gives no numbers")
    if not context:  # one sentence: the rest compares the question with what comes before it
        return None
    # a count asked of something never mentioned
    for m in _ASK_COUNT.finditer(q):
        noun = m.group(1).lower()
        if noun in _GENERIC_COUNTS or _singular(noun) in _GENERIC_COUNTS:
            continue
        dim = _UNIT_DIM.get(noun)
        if dim == "time" and re.search(r"\b(old|ago|older|younger|age)\b", q) and re.search(_AGE_GIVEN, text, re.I):
            continue  # "how many years ago was he twice as old": ages are the time given
        if dim is not None:
            others = {d for d in given_all if d == dim or d == f"rate:{dim}"}
            if dim == "time" and (given_all.get("clock") or given_all.get("period") or given_all.get("speed")):
                others.add("time")
            if dim == "length" and given_all.get("speed"):
                others.add("length")
            if not others and not re.search(r"\b(" + "|".join(_UNITS[dim]) + r")\b", context, re.I):
                return _ill("unrelated", f"it asks for {noun}, but the task gives no quantity of {dim}")
            continue
        other = _COMPLEMENTS.get(noun) or _COMPLEMENTS.get(_singular(noun))
        if other is not None and _mentions(text, other):
            continue  # "28 students, 16 girls: how many boys?" counts the rest
        if not _mentions(context, noun) and not _mentions(q[: m.start()], noun):
            if re.search(r"\d", q) and not re.search(r"\d", context):
                continue
            return _ill("unrelated", f"it asks how many {noun}, which the task never mentions")
        # a count from percentages alone
        absolute = [n for n in _numbers(re.sub(_PERCENT, " ", text)) if n]
        if _PERCENT.search(text) and not absolute and not _FRACTION.search(text):
            return _ill("missing", f"a count of {noun} from percentages alone: the total is not given")
    return None


# --- several readings ----------------------------------------------------------------------------


def several_readings(text: str) -> Finding | None:
    """Phrases with two standard readings that give different answers."""
    low = text.lower()
    if re.search(r"\bdivide[sd]?\s+(?:\d+|a number)\s+by\s+(?:a\s+)?half\b", low):
        return _ill("readings", "'divide by half' reads as ÷ 2 or ÷ 0.5")
    if re.search(r"\b(?:in|per|each|every|a)\s+(?:a\s+)?month\b", _split(text)[1].lower()) and re.search(
            r"\b(?:a|an|per|each|every)\s+(?:week|day|hour)\b", low) and not re.search(
            r"\b(\d+|four|five)\s+weeks?\s+(?:in|per|a|each)\s+(?:a\s+|the\s+)?month\b|\bweeks? in (?:a|the|each) month\b|"
            r"\bdays? in (?:a|the|each|this|that) month\b|\b(?:january|february|march|april|may|june|july|august|"
            r"september|october|november|december)\b|\b\d+[- ]day month\b", low):
        return _ill("readings", "a month is not a whole number of weeks: 4 weeks or 30 days give different answers")
    question = _split(text)[1].lower()
    if re.search(r"\b(?:wants|plans|hopes|is going|needs|would like) to (?:buy|get|add|sell|give away|lose|eat|spend)\b",
                 low) and re.search(r"\bhow (?:many|much) [^?]*\b(?:does|do|is|are) [^?]*\b(?:have|has|left|own|there)\b",
                                   question) and not re.search(r"\b(?:after|then|once|when|if)\b", question):
        return _ill("readings", "it is unclear whether the count is asked before or after what is planned")
    if re.search(r"\b(?:cut|reduced|lowered|raised|increased|marked down|discounted)\s+by\s+a\s+quarter\b", low) and \
            _MONEY.search(text):
        return _ill("readings", "'by a quarter' of a price reads as 25 % or as 25 cents")
    return None


# --- unverifiable ---------------------------------------------------------------------------------


def unverifiable(text: str) -> Finding | None:
    """Opinions, predictions and private facts: real questions with no answer a reader can check."""
    _, question = _split(text)
    q = question.lower()
    if not q:
        return None
    if re.search(r"\b(which|what)\b[^?]*\bshould\b[^?]*\b(buy|choose|pick|invest|get|take|use|do)\b", q) or re.search(
            r"\b(best|smartest|wisest|ideal|most sensible) (?:way|choice|option|size|time|plan|thing|investment|place)\b",
            q) or re.search(r"\b(?:is it|would it be) (?:worth|wise|better)\b", q):
        return Finding(UNVERIFIABLE, "", "it asks for an opinion or a choice, not a computed answer")
    future = r"\b(next (?:year|month|week|season)|a year from now|in the future|tomorrow|next week's|in \w+ years' time)"
    if re.search(future, q) and re.search(r"\b(cost|price|worth|pass|win|score|sell for|rain|value)\b", q) \
            and not re.search(r"\b(increase|rise|grow|go up|fall|drop|decrease)s?\b[^.]*\b(\d+%|\d+ percent|by \$)",
                              text, re.I):
        return Finding(UNVERIFIABLE, "", "it asks for a prediction that the task gives no rule for")
    if re.search(r"\b(i|my|me|we|our)\b", q) and not re.search(r"\d", text):
        return Finding(UNVERIFIABLE, "", "it asks about private facts the task does not state")
    return None


RULES: tuple[Rule, ...] = (no_question, false_premise, contradiction, several_readings, missing_or_unrelated,
                           unverifiable)
"""Every rule, in the order a finding is reported (the first ill-posed finding is the reason)."""


def rule_findings(text: str) -> list[Finding]:
    """Every rule that fires on ``text``, in :data:`RULES` order."""
    found: list[Finding] = []
    for rule in RULES:
        finding = rule(text)
        if finding is not None:
            found.append(finding)
    return found


__all__ = ["ILL_POSED", "RULES", "UNVERIFIABLE", "WELL_POSED", "Finding", "Rule", "contradiction", "false_premise",
           "missing_or_unrelated", "no_question", "rule_findings", "several_readings", "unverifiable"]
