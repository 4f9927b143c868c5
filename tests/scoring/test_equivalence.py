"""Equivalence: normalization, numbers, symbolic math, and a time limit that holds in any thread.

The symbolic tests run the real math-verify in the real worker process (no mocks).
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_qa.errors import AnswerError
from frontier_qa.scoring._equivalence import (
    Comparator,
    Equivalence,
    comparator,
    equivalent,
    normalize,
    numbers_close,
    parse_number,
    warm_up,
)
from frontier_qa.scoring._symbolic import SymbolicPool

# An expression math-verify/sympy cannot settle quickly: comparing these ran > 100 s
# without a limit when this was written.
PATHOLOGICAL = ("2^{2^{100}}", "2^{2^{101}}")
# Slack for process scheduling on a loaded 2-core CI machine, seconds.
SLACK_S = 1.0


@pytest.fixture(scope="module", autouse=True)
def _worker_started() -> None:
    warm_up()  # the ~1 s start is not part of any comparison's time limit


# ------------------------------------------------------------------------ normalization


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  42  ", "42"),
        ("$\\frac{1}{2}$", "\\frac{1}{2}"),
        ("\\(x\\)", "x"),
        ("\\[ y \\]", "y"),
        ("\\text{Yes}", "yes"),
        ("\\mathrm{cm}", "cm"),
        ("\\textbf{\\text{B}}", "b"),
        ("New   York.", "new york"),
        (" X + 1 ", "x+1"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("90^\\circ", "90"),
        ("90^{\\circ}", "90"),
        ("90°", "90"),
        ("50\\%", "50%"),
        ("1\\,000", "1000"),
        ("1{,}000", "1,000"),
        ("\\dfrac{3}{4}", "\\frac{3}{4}"),
        ("\\tfrac12", "\\frac12"),
        ("{42}", "42"),
        ("\u22125", "-5"),
        ("\\$5", "5"),
        ("5 cm", "5 cm"),  # units are kept
        ("1, 2, ...", "1,2,..."),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_normalize_rejects_non_strings() -> None:
    with pytest.raises(AnswerError, match="NoneType"):
        normalize(None)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("42", Fraction(42)),
        ("-42", Fraction(-42)),
        ("+3", Fraction(3)),
        ("0.5", Fraction(1, 2)),
        (".25", Fraction(1, 4)),
        ("5.", Fraction(5)),
        ("1e3", Fraction(1000)),
        ("2.5E-2", Fraction(1, 40)),
        ("1,000", Fraction(1000)),
        ("1,234,567.5", Fraction(2469135, 2)),
        ("1/2", Fraction(1, 2)),
        ("-3/4", Fraction(-3, 4)),
        ("\\frac{1}{2}", Fraction(1, 2)),
        ("-\\frac{1}{3}", Fraction(-1, 3)),
        ("\\frac{-2}{4}", Fraction(-1, 2)),
        ("\\dfrac12", Fraction(1, 2)),
        ("50%", Fraction(1, 2)),
        ("12.5\\%", Fraction(1, 8)),
        ("1.5\\times10^{3}", Fraction(1500)),
        ("2 \\cdot 10^{-2}", Fraction(1, 50)),
        ("$7$", Fraction(7)),
        ("90^\\circ", Fraction(90)),
    ],
)
def test_parse_number(raw: str, value: Fraction) -> None:
    assert parse_number(raw) == value


@pytest.mark.parametrize(
    "raw",
    ["(1,2)", "1,2", "12,34", "1,0000", "x", "1/0", "\\frac{1}{0}", "", "1e99999999", "2^{10}", "1 1/2", "--5"],
)
def test_parse_number_rejects(raw: str) -> None:
    assert parse_number(raw) is None


def test_numbers_close_hand_values() -> None:
    one = Fraction(1)
    assert numbers_close(one, one + Fraction(1, 10**7), rel_tol=1e-6, abs_tol=1e-9)
    assert not numbers_close(one, one + Fraction(1, 10**5), rel_tol=1e-6, abs_tol=1e-9)
    assert numbers_close(Fraction(0), Fraction(1, 10**10), rel_tol=1e-6, abs_tol=1e-9)  # abs_tol
    assert not numbers_close(Fraction(0), Fraction(1, 10**8), rel_tol=1e-6, abs_tol=1e-9)
    assert numbers_close(one, Fraction(101, 100), rel_tol=0.01, abs_tol=0)
    assert not numbers_close(one, Fraction(102, 100), rel_tol=0.01, abs_tol=0)
    # relative to the larger magnitude: 10**30 and 10**30 + 10**23 differ by 1e-7 relative
    assert numbers_close(Fraction(10**30), Fraction(10**30 + 10**23), rel_tol=1e-6, abs_tol=0)


# ---------------------------------------------------------------------------- relation


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("0.5", "\\frac{1}{2}"),
        ("\\frac{1}{2}", "1/2"),
        ("0.5", "1/2"),
        ("1,000", "1000"),
        ("\\text{yes}", "yes"),
        ("YES", "yes."),
        ("50%", "0.5"),
        ("90^\\circ", "90"),
        ("0.3333333333", "1/3"),  # within rel 1e-6
        ("x+1", "1+x"),  # symbolic
        ("(x+1)^2", "x^2+2x+1"),
        ("\\sqrt{2}/2", "\\frac{1}{\\sqrt{2}}"),
        ("\\{1,2\\}", "\\{2,1\\}"),  # sets are unordered
        ("x=5", "5"),
        ("50\\%", "\\frac{x}{2x}"),
        ("(1,2)", "(1, 2)"),
    ],
)
def test_equivalent_pairs(a: str, b: str) -> None:
    assert equivalent(a, b)
    assert equivalent(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("(1,2)", "(2,1)"),  # tuples are ordered
        ("1,2", "12"),  # not a thousands separator
        ("50%", "50"),  # % means /100
        ("50\\%", "25\\cdot 2"),  # ... in the symbolic stage too
        ("0.333", "1/3"),  # outside the tolerance
        ("1234567", "1234568"),  # integers compare exactly, whatever the tolerance
        ("1/3", "333333/1000000"),
        ("x+1", "x+2"),
        ("[1,2)", "[1,2]"),
        ("5 cm", "5"),  # units are not dropped
        ("no", "on"),  # words are not products of symbols
        ("New York", "York New"),
        ("", ""),  # blank is no answer
    ],
)
def test_not_equivalent_pairs(a: str, b: str) -> None:
    assert not equivalent(a, b)
    assert not equivalent(b, a)


def test_none_is_equivalent_to_nothing() -> None:
    for mode in ("math", "numeric", "string"):
        assert not equivalent(None, None, mode=mode)
        assert not equivalent(None, "1", mode=mode)
        assert not equivalent("1", None, mode=mode)


def test_modes() -> None:
    assert equivalent("0.5", "1/2", mode="numeric")
    assert not equivalent("0.5", "1/2", mode="string")
    assert equivalent("\\text{Yes}", "yes", mode="string")
    assert not equivalent("x+1", "1+x", mode="numeric")  # no symbolic stage
    assert equivalent("x+1", "1+x", mode="math")


def test_tolerance_is_configurable() -> None:
    assert not equivalent("1", "1.001")
    assert equivalent("1", "1.001", rel_tol=1e-2)
    assert equivalent("0", "0.001", abs_tol=1e-2)
    # tolerance is for decimals: exactly written numbers stay exact
    assert not equivalent("100", "101", rel_tol=1e-1)
    assert equivalent("100", "101.0", rel_tol=1e-1)
    assert equivalent("1234567", "1234567.4")  # rel 3e-7 < 1e-6


def test_verdicts_and_stages() -> None:
    cmp = Comparator("math", timeout_s=5.0)
    assert cmp.verdict("Yes", "\\text{yes}") is Equivalence.EQUIVALENT
    assert cmp.verdict("1,000", "1000.0") is Equivalence.EQUIVALENT
    assert cmp.verdict("2", "3") is Equivalence.DIFFERENT
    assert cmp.verdict("2x", "x+x") is Equivalence.EQUIVALENT
    assert cmp.verdict("x+x", "2x") is Equivalence.EQUIVALENT  # same unordered pair: cached
    assert cmp.verdict(None, "1") is Equivalence.DIFFERENT  # not counted as a comparison
    assert cmp.stats == {"string": 1, "numeric": 2, "symbolic": 1, "undecided": 0, "cached": 1}
    assert cmp.key(" \\text{A}. ") == "a"


def test_shared_comparator_per_settings() -> None:
    assert comparator("math") is comparator("math")
    assert comparator("math", timeout_s=1.0) is not comparator("math")


@pytest.mark.parametrize(
    "kwargs",
    [{"mode": "fuzzy"}, {"timeout_s": 0}, {"timeout_s": -1.0}, {"rel_tol": -1e-6}],
)
def test_bad_settings(kwargs: dict) -> None:
    with pytest.raises(AnswerError):
        Comparator(**kwargs)


def test_non_string_answers_are_an_error() -> None:
    with pytest.raises(AnswerError, match="int"):
        equivalent(1, "1")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- time limit


def test_pathological_comparison_returns_within_limit() -> None:
    cmp = Comparator("math", timeout_s=1.0)
    start = time.monotonic()
    verdict = cmp.verdict(*PATHOLOGICAL)
    elapsed = time.monotonic() - start
    assert verdict is Equivalence.UNDECIDED
    assert elapsed < 1.0 + SLACK_S
    assert not cmp(*PATHOLOGICAL)  # undecided counts as not equivalent (and is cached)
    assert cmp.stats["undecided"] == 1 and cmp.stats["cached"] == 1
    assert cmp.verdict("x+1", "1+x") is Equivalence.EQUIVALENT  # the worker lives on


def test_time_limit_holds_in_a_worker_thread() -> None:
    # math-verify's own signal.alarm timeout raises ValueError outside the main thread.
    cmp = Comparator("math", timeout_s=1.0)
    result: list[tuple[Equivalence, float]] = []

    def run() -> None:
        start = time.monotonic()
        result.append((cmp.verdict(*PATHOLOGICAL), time.monotonic() - start))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    (verdict, elapsed), = result
    assert verdict is Equivalence.UNDECIDED and elapsed < 1.0 + SLACK_S


def test_time_limit_holds_under_asyncio_threads() -> None:
    async def main() -> list[bool]:
        return list(
            await asyncio.gather(
                asyncio.to_thread(equivalent, *PATHOLOGICAL, timeout_s=1.5),
                asyncio.to_thread(equivalent, "x^2-1", "(x-1)(x+1)", timeout_s=1.5),
                asyncio.to_thread(equivalent, "0.5", "\\frac12", timeout_s=1.5),
            )
        )

    start = time.monotonic()
    assert asyncio.run(main()) == [False, True, True]
    # each call is bounded by its limit; at worst the three queue for one worker
    assert time.monotonic() - start < 3 * 1.5 + SLACK_S


def test_hard_deadline_kills_a_stuck_worker_and_recovers() -> None:
    # The worker's soft SIGALRM deadline cannot stop work in C code; simulate such work
    # (signals blocked in the real child) so the parent's kill-and-restart path runs.
    workers = SymbolicPool(max_workers=1)
    try:
        workers.warm_up()
        start = time.monotonic()
        outcome = workers._ask({"a": "1", "b": "1", "soft_s": 0.5, "debug_block_signals_s": 30}, 1.0)
        elapsed = time.monotonic() - start
        assert outcome == "undecided" and elapsed < 1.0 + SLACK_S
        assert workers.killed == 1
        assert workers.compare("x+1", "1+x", 10.0) == "equal"  # a fresh worker took over
        assert workers.started == 2
    finally:
        workers.close()


def test_concurrent_callers_get_correct_answers() -> None:
    cmp = Comparator("math", timeout_s=10.0)
    pairs = [(f"{i}x+{i}", f"{i}(x+1)", True) for i in range(1, 7)]
    pairs += [(f"{i}x+{i}", f"{i}(x+2)", False) for i in range(1, 7)]
    pairs += [(f"{i}/4", f"{i * 25}%", True) for i in range(1, 7)]
    with ThreadPoolExecutor(max_workers=6) as executor:
        results = list(executor.map(lambda p: cmp(p[0], p[1]), pairs))
    assert results == [expected for _, _, expected in pairs]


# ------------------------------------------------------------------------- properties

_ANSWERS = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.fractions(max_denominator=50).map(lambda f: f"{f.numerator}/{f.denominator}"),
    st.sampled_from(["1,000", "(1,2)", "\\text{yes}", "Yes.", "0.5", "50%", "$x$", " x "]),
    st.text(alphabet="ab ,.{}\\$%", max_size=8),
)


@settings(max_examples=150, deadline=None)
@given(_ANSWERS, _ANSWERS)
def test_fast_modes_are_symmetric_and_reflexive(a: str, b: str) -> None:
    for mode in ("numeric", "string"):
        cmp = comparator(mode)
        assert cmp(a, b) == cmp(b, a)
        assert cmp(a, a) == bool(normalize(a))  # everything but a blank answer equals itself


@settings(max_examples=200, deadline=None)
@given(st.integers(-10**9, 10**9), st.integers(1, 10**6))
def test_fraction_spellings_agree(p: int, q: int) -> None:
    cmp = comparator("numeric")
    frac = Fraction(p, q)
    latex = f"\\frac{{{p}}}{{{q}}}" if p >= 0 else f"-\\frac{{{-p}}}{{{q}}}"
    assert cmp(f"{p}/{q}", latex)
    assert cmp(latex, repr(float(frac)))  # a float prints within rel 1e-6 of the value
    if frac.denominator == 1:
        assert cmp(f"{frac.numerator:,}", str(frac.numerator))  # thousands separators


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_normalize_is_idempotent(raw: str) -> None:
    once = normalize(raw)
    assert normalize(once) == once


def test_symbolic_work_stays_out_of_the_calling_process(tmp_path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from frontier_qa.scoring._equivalence import equivalent;"
        "print(equivalent('x+1', '1+x'), [m for m in ('sympy', 'math_verify') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True []"
