"""Reference verification: solution programs run in the real sandbox."""

from __future__ import annotations

import asyncio

import pytest

from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._verify import TRUSTED_KEY, Verification, solution_answer, verify_reference, verify_references
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.target import Case


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(timeout_s=5.0)


def proposal(
    solution: str | None, reference: str | None = "42", answer_format: str = "boxed", **meta: object
) -> Proposal:
    case = Case(id="v", prompt="What is 6 times 7?", reference=reference, answer_format=answer_format, metadata=meta)
    return Proposal(case, solution=solution)


def verify(p: Proposal, sandbox: Sandbox, **kw: object) -> Verification:
    return asyncio.run(verify_reference(p, sandbox, **kw))  # type: ignore[arg-type]


def test_the_printed_answer_is_read_like_a_targets() -> None:
    assert solution_answer("42\n") == "42"
    assert solution_answer("working...\n\\boxed{\\frac{1}{2}}\n") == "\\frac{1}{2}"
    assert solution_answer("steps\nFinal answer: 7\ntrailing log\n") == "7"
    assert solution_answer("a\n\n  b  \n\n") == "b"
    assert solution_answer("   \n") is None


def test_agreeing_output_verifies_the_reference(sandbox: Sandbox) -> None:
    check = verify(proposal("print(6 * 7)"), sandbox)
    assert (check.verified, check.reference, check.output) == (True, "42", "42")
    # equivalence, not string equality: 42.0 and 84/2 are the reference too
    assert verify(proposal("print(84 / 2)"), sandbox).verified


def test_missing_reference_is_replaced_by_the_output(sandbox: Sandbox) -> None:
    check = verify(proposal("import math\nprint(math.factorial(5))", reference=None), sandbox)
    assert (check.verified, check.reference) == (True, "120")
    assert "taken from the solution" in check.reason


def test_disagreeing_output_leaves_the_reference_unverified(sandbox: Sandbox) -> None:
    check = verify(proposal("print(6 * 7)", reference="41"), sandbox)
    assert (check.verified, check.reference, check.output) == (False, "41", "42")
    assert "solution printed '42' but the reference says '41'" in check.reason


def test_failing_programs_never_verify(sandbox: Sandbox) -> None:
    crash = verify(proposal("raise ValueError('bad input')"), sandbox)
    assert not crash.verified and crash.reference == "42"
    assert "exit status 1: ValueError: bad input" in crash.reason
    slow = verify(proposal("while True:\n    pass"), sandbox, timeout_s=0.5)
    assert not slow.verified and "timeout" in slow.reason
    silent = verify(proposal("x = 1"), sandbox)
    assert not silent.verified and silent.reason == "solution program printed nothing"
    # the sandbox has no network: a program that needs it fails
    net = verify(proposal("import urllib.request\nprint(urllib.request.urlopen('http://1.1.1.1').read())"), sandbox)
    assert not net.verified


def test_text_answers_compare_as_normalised_strings(sandbox: Sandbox) -> None:
    # the programs compute their text (a program that prints a literal verifies nothing: test_validity)
    assert verify(proposal("print('lisbon'.title() + '.')", reference="lisbon", answer_format="text"), sandbox).verified
    assert not verify(proposal("print('porto'.title())", reference="Lisbon", answer_format="text"), sandbox).verified


def test_trusted_and_missing_solutions_do_not_run(sandbox: Sandbox) -> None:
    trusted = verify(proposal(None, **{TRUSTED_KEY: True}), sandbox)
    assert trusted.verified and trusted.reason == "reference vouched for by its source"
    none = verify(proposal(None), sandbox)
    assert not none.verified and none.reason == "no solution program to verify the reference"
    # "trusted" needs a reference to vouch for
    assert not verify(proposal(None, reference=None, **{TRUSTED_KEY: True}), sandbox).verified


def test_many_proposals_are_verified_in_order(sandbox: Sandbox) -> None:
    items = [proposal(f"print({i} * 2)", reference=str(i * 2 + (i == 2))) for i in range(4)]
    checks = asyncio.run(verify_references(items, sandbox))
    assert [c.verified for c in checks] == [True, True, False, True]
    assert [c.output for c in checks] == ["0", "2", "4", "6"]
