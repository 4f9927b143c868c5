"""Contradiction guard for open-ended clustering: cheap surface rules that embeddings miss.

Sentence embeddings place "Yes, it is." next to "No, it is not.", "Spiders have 6 legs."
next to "Spiders have eight legs." and "The capital of Australia is Sydney." next to "The
capital of Australia is Canberra." (MiniLM cosine distance 0.1-0.3, closer than many
paraphrases) because they share topic and words. :mod:`frontier_qa.scoring._semantic` sets the
distance of every pair flagged here to the maximum (2.0) before clustering. Three rules, each
high precision on its own and all pure string work (no model, microseconds per answer):

* ``"polarity"`` — one answer starts with yes/yeah/yep/yup/sure/true, the other with
  no/nope/false;
* ``"numbers"`` — both answers state numbers and share none. Digits and number words count
  ("eight", "fifty-six", "one hundred" → 8, 56, 100), so "Eight legs." contradicts "6 legs.";
* ``"entities"`` — both answers name entities, and after dropping the group's *background*
  entities they name no entity in common ("... is Canberra." vs "... is Sydney.").

The entity rule needs the whole group of answers, not just a pair:

1. **Entity vocabulary.** A word is an entity if it is written with a capital letter where
   English would not force one (not sentence-initial), or belongs to a short answer of
   capitalised words ("Canberra.", "Mark Twain.", not "Axial tilt."), has two or more
   letters ("°C" is a unit) and is no function word. Entity words are compared lower-cased, accents
   folded, possessive and plural ``s`` dropped; once a word is an entity anywhere in the
   group, every answer that contains it names it ("quicksort" = "Quicksort.").
2. **Negation.** Entities after "not", "rather than", "instead of", "never", "unlike" up to
   the end of the clause are *rejected*, not named: "It's Canberra, not Sydney." names
   only Canberra, so it joins the Canberra answers rather than bridging to Sydney.
3. **Background.** An echo of the question ("Australia" in "Sydney is the capital of
   Australia.") is shared by answers that disagree. An entity is background when it
   co-occurs with two entities that never occur together (Australia with Canberra and with
   Sydney) and it is never the whole answer itself (no answer names only it, as a single
   name such as "Neil Armstrong."): without that second condition, "Neil Armstrong, on
   Apollo 11." and "Neil Armstrong; Buzz Aldrin followed." would make Armstrong background.

Costs, measured in ``benchmarks/semantic_threshold.py``: answers that agree but name
different entities and nothing in common ("Samuel Clemens." / "Mark Twain.", "100 °C" /
"212 °F") are kept apart; an answer that explains with extra names can be split from a
short one when the shared name happens to be background.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from frontier_qa.errors import ConfigError

RULES = frozenset({"polarity", "numbers", "entities"})

_POLARITY = {
    "yes": 1, "yeah": 1, "yep": 1, "yup": 1, "sure": 1, "true": 1,
    "no": -1, "nope": -1, "false": -1,
}  # fmt: skip
_LEADING_WORD = re.compile(r"[^\w]*([a-z]+)\b")
_DIGITS = re.compile(r"(?<![\w.])[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
# A run of number words: "fifty-six", "one hundred and five", "two thousand".
_NUMBER_WORDS = re.compile(
    r"\b(?:" + "|".join([*_UNITS, *_SCALES]) + r")(?:(?:[\s-]+|\s+and\s+)(?:"
    + "|".join([*_UNITS, *_SCALES]) + r"))*\b",
    re.IGNORECASE,
)
# Words: start with a letter (any script); identifiers stay whole ("LOG_LEVEL", "PyYAML"),
# an inner apostrophe too ("Australia's", "it's").
_WORD = re.compile(r"[^\W\d_][\w]*(?:['’][^\W\d_]+)?")
_SENTENCE_END = re.compile(r"[.!?]\s*$|^\s*$")
_CLAUSE_END = re.compile(r"[.,;:!?()—–]|\s-\s")
_NEGATION = re.compile(r"\b(?:not|rather\s+than|instead\s+of|never|unlike)\b", re.IGNORECASE)
_NEGATION_STOP = re.compile(r"\bbut\b", re.IGNORECASE)
# Capitalised words that are not names: sentence starters, pronouns, answer words.
_FUNCTION_WORDS = frozenset(
    """a an the it it's its this that these those there here he she they we you i i'm me my
    our your their his her yes yeah yep yup sure no nope not true false ok okay correct
    wrong use using in on at of for with by from to and or but because since so then
    about around approximately roughly just only all some any each every both either
    neither is are was were be been being do does did has have had can could will would
    should may might must if when where why how what which who whom whose while after
    before during as than also probably likely definitely answer mean means""".split()
)


def _fold(word: str) -> str:
    """Lower-case, strip accents and a possessive / plural s: "Brontë's" -> "bronte"."""
    word = unicodedata.normalize("NFKD", word.lower())
    word = "".join(ch for ch in word if not unicodedata.combining(ch))
    word = re.sub(r"['’]s$", "", word)
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def _words_to_number(phrase: str) -> float:
    total, current = 0, 0
    for word in re.split(r"[\s-]+", phrase.lower()):
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _SCALES:
            current = max(current, 1) * _SCALES[word]
            if _SCALES[word] >= 1_000:  # "two thousand five hundred" = 2000 + 500
                total, current = total + current, 0
    return float(total + current)


def numbers_in(text: str) -> frozenset[float]:
    """Numbers an answer states, written with digits or words ("eight", "fifty-six").

    >>> sorted(numbers_in("Fifty-six, i.e. 7 x 8."))
    [7.0, 8.0, 56.0]
    """
    found = {float(n.replace(",", "")) for n in _DIGITS.findall(text)}
    found.update(_words_to_number(m.group(0)) for m in _NUMBER_WORDS.finditer(text))
    return frozenset(found)


def polarity_of(text: str) -> int:
    """+1 / -1 for a leading yes-like / no-like word ("Yes, ...", "Nope."), else 0."""
    match = _LEADING_WORD.match(text.lower())
    return _POLARITY.get(match.group(1), 0) if match else 0


@dataclass(frozen=True)
class _Words:
    """One answer's words: folded forms, and which could be entity mentions."""

    folded: tuple[str, ...]
    capital_cue: tuple[bool, ...]  # capitalised where English would not force it
    negated: tuple[bool, ...]  # inside "not ..." up to the end of the clause


def _words(text: str) -> _Words:
    matches = list(_WORD.finditer(text))
    # A short answer made of capitalised words is a name even at the sentence start
    # ("Canberra.", "Mark Twain."); "Axial tilt." or "Printing press." is not.
    content = [m.group(0) for m in matches if m.group(0).lower() not in _FUNCTION_WORDS]
    name_answer = len(matches) <= 3 and all(word[0].isupper() for word in content)
    folded, cue, negated = [], [], []
    negation_at = [m.end() for m in _NEGATION.finditer(text)]
    for m in matches:
        word = m.group(0)
        initial = bool(_SENTENCE_END.search(text[: m.start()]))
        folded.append(_fold(word))
        cue.append(
            word[0].isupper()
            and (not initial or name_answer)
            and len(word) > 1  # "°C", "°F", "O(n)": units and notation, not names
            and word.lower() not in _FUNCTION_WORDS
            and not _NUMBER_WORDS.fullmatch(word)
        )
        # negated: a negation cue precedes it in the same clause, with no "but" between
        negated.append(
            any(
                end <= m.start()
                and not _CLAUSE_END.search(text[end : m.start()])
                and not _NEGATION_STOP.search(text[end : m.start()])
                for end in negation_at
            )
        )
    return _Words(tuple(folded), tuple(cue), tuple(negated))


def entity_terms(texts: Sequence[str]) -> list[frozenset[str]]:
    """Per answer, the entities it names after dropping the group's background entities.

    Args:
        texts: the answers of one group (one question's k samples).

    Returns:
        One set of folded entity words per text, in order; empty when the answer names no
        entity beyond the background (then the entity rule never fires for it).
    """
    words = [_words(text) for text in texts]
    vocabulary = {
        w for ws in words for w, cue in zip(ws.folded, ws.capital_cue, strict=True) if cue
    }
    named: list[frozenset[str]] = []
    single_name: set[str] = set()  # entities that are, somewhere, the whole answer
    for ws in words:
        positions = [
            i
            for i, (w, neg) in enumerate(zip(ws.folded, ws.negated, strict=True))
            if w in vocabulary and not neg
        ]
        terms = frozenset(ws.folded[i] for i in positions)
        named.append(terms)
        if positions and positions[-1] - positions[0] == len(positions) - 1:
            single_name.update(terms)  # adjacent words: one name ("Neil Armstrong")
    background = set()
    for term in vocabulary - single_name:
        partners = [terms - {term} for terms in named if term in terms and len(terms) > 1]
        # Background iff two answers pair it with entities that never co-occur.
        if any(
            not any(u in t and v in t for t in named)
            for a, b in combinations(partners, 2)
            for u in a - b
            for v in b - a
        ):
            background.add(term)
    return [terms - background for terms in named]


def check_rules(rules: bool | Collection[str]) -> frozenset[str]:
    """The rule names a ``contradiction_guard`` value switches on (True = all, False = none)."""
    if rules is True:
        return RULES
    if rules is False or rules is None:
        return frozenset()
    if isinstance(rules, str):
        rules = [rules]
    chosen = frozenset(rules)
    unknown = chosen - RULES
    if unknown:
        raise ConfigError(
            f"unknown contradiction rule(s) {sorted(unknown)}",
            hint=f"use True, False or a subset of {sorted(RULES)}",
        )
    return chosen


def contradiction_matrix(
    texts: Sequence[str], rules: bool | Collection[str] = True
) -> np.ndarray:
    """Which pairs of one group's answers contradict each other.

    Args:
        texts: the answers of one group, e.g. the k samples of one case.
        rules: True (all of :data:`RULES`), False (none), or a subset such as
            ``{"polarity", "numbers"}``.

    Returns:
        Symmetric (n, n) boolean matrix, False on the diagonal.

    Raises:
        ConfigError: an unknown rule name.
    """
    chosen = check_rules(rules)
    n = len(texts)
    conflict = np.zeros((n, n), dtype=bool)
    if not chosen or n < 2:
        return conflict
    polarity = [polarity_of(t) for t in texts] if "polarity" in chosen else [0] * n
    numbers = [numbers_in(t) for t in texts] if "numbers" in chosen else [frozenset()] * n
    entities = entity_terms(texts) if "entities" in chosen else [frozenset()] * n
    for i, j in combinations(range(n), 2):
        conflict[i, j] = conflict[j, i] = bool(
            (polarity[i] and polarity[j] and polarity[i] != polarity[j])
            or (numbers[i] and numbers[j] and not numbers[i] & numbers[j])
            or (entities[i] and entities[j] and not entities[i] & entities[j])
        )
    return conflict


def contradicts(a: str, b: str, rules: bool | Collection[str] = True) -> bool:
    """Whether two answers contradict on a surface signal that embeddings miss.

    The pair is its own group, so no entity is background: prefer
    :func:`contradiction_matrix` on all k answers, which is what clustering uses.

    >>> contradicts("Yes.", "No, it raises."), contradicts("Eight legs.", "6 legs.")
    (True, True)
    >>> contradicts("30", "15% of 200 is 30."), contradicts("Canberra.", "Sydney.")
    (False, True)
    """
    return bool(contradiction_matrix([a, b], rules)[0, 1])
