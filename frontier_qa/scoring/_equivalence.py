"""Whether two extracted answers say the same thing: string, numeric and symbolic equivalence.

Self-consistency merges equivalent answers before voting (Agent0 §3.2, Eq. 6), so this
relation decides p̂. A comparison goes through cheap stages first and stops at the first
that can decide:

1. **string** — :func:`normalize` forms are equal (case, spacing, ``$``, ``\\text{}``…);
2. **numeric** — both are plain numbers (``1,000``, ``-2.5e3``, ``1/2``, ``\\frac{1}{2}``,
   ``50%``): equal within a relative/absolute tolerance; decisive, no symbolic step;
3. **symbolic** (mode ``"math"``) — math-verify/sympy in a worker process with a hard
   time limit that works from any thread (:mod:`frontier_qa.scoring._symbolic`). A comparison that
   runs out of time is *undecided*, which counts as not equivalent.

Decisions, so that the relation stays principled:

* ``None`` (no answer) is equivalent to nothing, not even ``None``.
* ``%`` means "/100": ``50%`` ≡ ``0.5`` ≡ ``1/2`` and ``50%`` ≢ ``50``. (Ask for "a number
  of percent" in the prompt when ``50`` should be the answer.)
* Units are *not* dropped (``5 cm`` ≢ ``5``: dropping them would also make ``5 cm`` ≡ ``5 m``),
  except degrees (``90^\\circ`` ≡ ``90``), which math answers write either way.
* Numeric tolerance applies when either side is written as a decimal (``0.3333333`` ≡
  ``1/3``); integers and fractions of integers compare exactly (``1234567`` ≢ ``1234568``).
* ``1,000`` is one thousand (groups of exactly three digits); ``(1,2)`` and ``1,2`` are not
  numbers and go to the symbolic stage, where ``(1,2)`` ≢ ``(2,1)``.
* Text with words of two or more letters (``New York``, ``yes``) is compared as a string
  only: sympy would read ``no`` as ``n·o`` and make it equal to ``on``.
* The relation is symmetric; numeric tolerance is not transitive, and self-consistency
  closes it transitively (union-find), as any merge of "equivalent" answers must.
"""

from __future__ import annotations

import enum
import functools
import re
import threading
from collections import OrderedDict
from fractions import Fraction
from typing import Literal

from frontier_qa.errors import AnswerError
from frontier_qa.scoring._symbolic import pool
from frontier_qa.scoring.answers import closing_brace

Mode = Literal["math", "numeric", "string"]
MODES: tuple[str, ...] = ("math", "numeric", "string")
DEFAULT_TIMEOUT_S = 2.0
DEFAULT_REL_TOL = 1e-6
DEFAULT_ABS_TOL = 1e-9


class Equivalence(enum.Enum):
    """Whether two answers are equivalent: the outcome of one comparison."""

    EQUIVALENT = "equivalent"
    DIFFERENT = "different"
    UNDECIDED = "undecided"  # the symbolic stage ran out of time (counts as not equivalent)


# ------------------------------------------------------------------------ normalization

_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|textup|mathrm|mathbf|mathit|mathsf|mathtt"
    r"|mathbb|mbox|hbox|operatorname|boxed|fbox)\s*\{"
)
_DROPPED = re.compile(
    r"\\(?:left|right|[bB]igg?[lr]?|displaystyle|textstyle)(?![a-zA-Z])|\\[,!;:]"
    r"|\^\s*\{?\s*\\circ\s*\}?|\\degree(?![a-zA-Z])|°|\\\$|\$"
)
_SPACES = re.compile(r"\\(?:quad|qquad)(?![a-zA-Z])|\\ |~")
_OUTER_DELIMS = re.compile(r"^\\\((.*)\\\)$|^\\\[(.*)\\\]$", re.S)
_SPACE_NEAR_SYMBOL = re.compile(r"\s*([^\w\s])\s*")
_MAX_PASSES = 8


def normalize(answer: str) -> str:
    """A canonical string form of an answer, for exact comparison and as a grouping key.

    Strips surrounding space, ``$``/``\\(…\\)``/``\\[…\\]``, ``\\text{…}``-style wrappers,
    ``\\left``/``\\right``, LaTeX spacing, degree marks and one trailing period; maps
    ``\\dfrac``/``\\tfrac`` to ``\\frac``, ``\\%`` to ``%``, ``{,}`` to ``,`` and ``−`` to ``-``;
    casefolds; collapses whitespace and drops it next to symbols (``x + 1`` → ``x+1``),
    keeping it between words (``new york``).

    Raises:
        AnswerError: ``answer`` is not a string.
    """
    if not isinstance(answer, str):
        raise AnswerError(
            f"cannot normalize a {type(answer).__name__} as an answer",
            hint="pass the extracted answer string (None means no answer and is never equivalent)",
        )
    # One pass can expose more to strip (``\\left\\,`` → ``\\left``); repeat to a fixed point
    # so that the form is canonical: normalize(normalize(x)) == normalize(x).
    s = answer
    for _ in range(_MAX_PASSES):
        previous, s = s, _normalize_once(s)
        if s == previous:
            break
    return s


def _normalize_once(s: str) -> str:
    s = s.strip()
    outer = _OUTER_DELIMS.match(s)
    if outer is not None:
        s = (outer.group(1) if outer.group(1) is not None else outer.group(2)).strip()
    s = _unwrap(s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\%", "%")
    s = s.replace("{,}", ",").replace("\u2212", "-")
    s = _DROPPED.sub("", s)
    s = _SPACES.sub(" ", s)
    s = " ".join(s.casefold().split())
    s = _SPACE_NEAR_SYMBOL.sub(r"\1", s)
    if s.endswith(".") and not s.endswith(".."):
        s = s[:-1].rstrip()
    while s.startswith("{") and closing_brace(s, 1) == len(s) - 1:
        s = s[1:-1].strip()
    return s


def _unwrap(s: str) -> str:
    """Replace ``\\text{X}`` and friends by ``X`` (nested braces respected), repeatedly."""
    pos = 0
    while (match := _WRAPPER.search(s, pos)) is not None:
        end = closing_brace(s, match.end())
        if end is None:
            return s
        s = s[: match.start()] + s[match.end() : end] + s[end + 1 :]
        pos = match.start()
    return s


# ------------------------------------------------------------------------------ numbers

_UNSIGNED = r"(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"
_PLAIN = re.compile(rf"{_UNSIGNED}")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_SCIENTIFIC = re.compile(rf"({_UNSIGNED})(?:\\times|\\cdot|\*)\s?10\^(?:\{{([+-]?\d+)\}}|([+-]?\d))")
_SIGNED = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_FRAC = re.compile(rf"\\frac\{{({_SIGNED})\}}\{{({_SIGNED})\}}|\\frac\s*(\d)\s*(\d)")
_SLASH = re.compile(rf"({_UNSIGNED})/({_UNSIGNED})")
_MAX_EXPONENT = 1000  # 1e999999999 would make Fraction build a billion-digit integer
_MAX_NUMBER_CHARS = 1000


def parse_number(answer: str) -> Fraction | None:
    """The exact value of a plain-number answer, or ``None`` when it is not one.

    Understands integers, decimals, scientific notation (``1.5e3``, ``1.5\\times10^{3}``),
    thousands separators (``1,000,000``), fractions (``3/4``, ``\\frac{3}{4}``, ``\\dfrac34``),
    a leading sign and a trailing ``%`` (÷100), after :func:`normalize`.
    """
    return _number_of_normalized(normalize(answer))


def _number_of_normalized(s: str) -> Fraction | None:
    if not s or len(s) > _MAX_NUMBER_CHARS:
        return None
    scale = Fraction(1)
    if s.endswith("%"):
        s, scale = s[:-1], Fraction(1, 100)
    sign = 1
    if s and s[0] in "+-":
        sign, s = (-1 if s[0] == "-" else 1), s[1:]
    try:
        value = _unsigned_value(s)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return None if value is None else sign * value * scale


def _unsigned_value(s: str) -> Fraction | None:
    if _PLAIN.fullmatch(s):
        return _decimal(s)
    if _THOUSANDS.fullmatch(s):
        return Fraction(s.replace(",", ""))
    if match := _SCIENTIFIC.fullmatch(s):
        exponent = int(match.group(2) or match.group(3))
        if abs(exponent) > _MAX_EXPONENT:
            return None
        return _decimal(match.group(1)) * Fraction(10) ** exponent
    if match := _FRAC.fullmatch(s):
        top, bottom = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        return _decimal(top) / _decimal(bottom)
    if match := _SLASH.fullmatch(s):
        return _decimal(match.group(1)) / _decimal(match.group(2))
    return None


def _decimal(s: str) -> Fraction:
    _, _, exponent = s.partition("e")
    if exponent and abs(int(exponent)) > _MAX_EXPONENT:
        raise ValueError("exponent out of range")
    return Fraction(s)


def _is_exact(normalized: str) -> bool:
    """Whether a number is written exactly (integers, fractions of integers), not as a decimal."""
    return not any(mark in normalized for mark in (".", "e", "\\times", "\\cdot", "*"))


def numbers_close(x: Fraction, y: Fraction, *, rel_tol: float, abs_tol: float) -> bool:
    """``|x − y| ≤ max(rel_tol · max(|x|, |y|), abs_tol)``, computed exactly."""
    if x == y:
        return True
    return abs(x - y) <= max(Fraction(rel_tol) * max(abs(x), abs(y)), Fraction(abs_tol))


# ----------------------------------------------------------------------------- symbolic

_COMMAND = re.compile(r"\\[a-zA-Z]+")
_WORD = re.compile(r"[^\W\d_]{2,}")
_MATH_WORDS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp sqrt pi "
    "inf infty oo max min gcd lcm mod det lim".split()
)


def _is_prose(normalized: str) -> bool:
    """Whether an answer holds words, which sympy would misread as products of symbols."""
    return any(w not in _MATH_WORDS for w in _WORD.findall(_COMMAND.sub(" ", normalized)))


def _latex_ready(answer: str) -> str:
    """The raw answer for math-verify: no ``$``, Python ``**`` as ``^``, ASCII minus, and
    ``%`` as ``/100`` (math-verify alone would make ``50\\%`` equal to both ``50`` and ``0.5``).
    """
    s = answer.strip().replace("\\$", "").replace("$", "").replace("**", "^").replace("\u2212", "-")
    return s.replace("\\%", "/100").replace("%", "/100")


# --------------------------------------------------------------------------- comparator


class Comparator:
    """A cached, thread-safe equivalence relation on answers; call it like a function.

    Args:
        mode: ``"math"`` (string, numeric, then symbolic), ``"numeric"`` (string, numeric)
            or ``"string"`` (normalized string only).
        rel_tol: relative tolerance of numeric equality (dimensionless); used when either
            number is written as a decimal — integers and fractions compare exactly.
        abs_tol: absolute tolerance of numeric equality (in the answer's units), likewise.
        timeout_s: wall-clock limit of one symbolic comparison, seconds.
        cache_size: verdicts kept (least recently used are dropped).

    Attributes:
        stats: how many comparisons each stage decided (``string``, ``numeric``,
            ``symbolic``, ``undecided``) and how many came from the cache (``cached``).
    """

    def __init__(
        self,
        mode: Mode = "math",
        *,
        rel_tol: float = DEFAULT_REL_TOL,
        abs_tol: float = DEFAULT_ABS_TOL,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        cache_size: int = 100_000,
    ) -> None:
        if mode not in MODES:
            raise AnswerError(f"unknown equivalence mode {mode!r}", hint="use one of: " + ", ".join(MODES))
        if not timeout_s > 0 or not rel_tol >= 0 or not abs_tol >= 0:
            raise AnswerError(
                f"bad equivalence limits: timeout_s={timeout_s}, rel_tol={rel_tol}, abs_tol={abs_tol}",
                hint="timeout_s must be > 0 seconds; tolerances must be >= 0",
            )
        self.mode = mode
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol
        self.timeout_s = timeout_s
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str], Equivalence] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = {"string": 0, "numeric": 0, "symbolic": 0, "undecided": 0, "cached": 0}

    def __call__(self, a: str | None, b: str | None) -> bool:
        """Whether ``a`` and ``b`` are equivalent (``None`` never is; undecided is not)."""
        return self.verdict(a, b) is Equivalence.EQUIVALENT

    def key(self, answer: str) -> str:
        """The grouping key: answers with equal keys are always equivalent."""
        return normalize(answer)

    def verdict(self, a: str | None, b: str | None) -> Equivalence:
        """Compare two answers; :attr:`Equivalence.UNDECIDED` when the symbolic stage timed out."""
        if a is None or b is None:
            return Equivalence.DIFFERENT
        if not isinstance(a, str) or not isinstance(b, str):
            raise AnswerError(
                f"cannot compare {type(a).__name__} with {type(b).__name__} as answers",
                hint="pass extracted answer strings, or None for no answer",
            )
        a, b = a.strip(), b.strip()
        pair = (a, b) if a <= b else (b, a)  # symmetric: one cache entry per unordered pair
        with self._lock:
            cached = self._cache.get(pair)
            if cached is not None:
                self._cache.move_to_end(pair)
                self.stats["cached"] += 1
                return cached
        verdict, stage = self._decide(*pair)
        with self._lock:
            self.stats[stage] += 1
            self._cache[pair] = verdict
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return verdict

    def _decide(self, a: str, b: str) -> tuple[Equivalence, str]:
        na, nb = normalize(a), normalize(b)
        if na == nb:
            return (Equivalence.EQUIVALENT if na else Equivalence.DIFFERENT), "string"
        if not na or not nb or self.mode == "string":
            return Equivalence.DIFFERENT, "string"
        x, y = _number_of_normalized(na), _number_of_normalized(nb)
        if x is not None and y is not None:
            # Tolerance absorbs rounding in decimals; two exactly written numbers
            # (1234567 vs 1234568, 1/3 vs 2/6) must be equal exactly.
            if _is_exact(na) and _is_exact(nb):
                close = x == y
            else:
                close = numbers_close(x, y, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
            return (Equivalence.EQUIVALENT if close else Equivalence.DIFFERENT), "numeric"
        if self.mode == "numeric" or _is_prose(na) or _is_prose(nb):
            return Equivalence.DIFFERENT, "string"
        outcome = pool().compare(_latex_ready(a), _latex_ready(b), self.timeout_s)
        if outcome == "undecided":
            return Equivalence.UNDECIDED, "undecided"
        return (Equivalence.EQUIVALENT if outcome == "equal" else Equivalence.DIFFERENT), "symbolic"


@functools.lru_cache(maxsize=32)
def comparator(
    mode: Mode = "math",
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rel_tol: float = DEFAULT_REL_TOL,
    abs_tol: float = DEFAULT_ABS_TOL,
) -> Comparator:
    """The process-wide shared :class:`Comparator` for these settings (its cache is shared too)."""
    return Comparator(mode, timeout_s=timeout_s, rel_tol=rel_tol, abs_tol=abs_tol)


def equivalent(
    a: str | None,
    b: str | None,
    *,
    mode: Mode = "math",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rel_tol: float = DEFAULT_REL_TOL,
    abs_tol: float = DEFAULT_ABS_TOL,
) -> bool:
    """Whether two answers are equivalent. ``None`` is equivalent to nothing.

    Args:
        a: an extracted answer (LaTeX or plain text), or ``None`` for "no answer".
        b: the other answer, likewise.
        mode: ``"math"``, ``"numeric"`` or ``"string"`` (see :class:`Comparator`).
        timeout_s: wall-clock limit of the symbolic stage, seconds; a comparison that runs
            out of time is not equivalent. Safe to call from any thread.
        rel_tol: relative tolerance of numeric equality.
        abs_tol: absolute tolerance of numeric equality.

    Examples:
        >>> equivalent("0.5", "\\\\frac{1}{2}"), equivalent("1,000", "1000"), equivalent("(1,2)", "(2,1)")
        (True, True, False)
    """
    return comparator(mode, timeout_s=timeout_s, rel_tol=rel_tol, abs_tol=abs_tol)(a, b)


def warm_up() -> None:
    """Start a symbolic worker now (≈ 1 s) instead of on the first symbolic comparison."""
    pool().warm_up()


def shutdown() -> None:
    """Stop the idle symbolic workers (they restart on demand; also done at exit)."""
    pool().close()
