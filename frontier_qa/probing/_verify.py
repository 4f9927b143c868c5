"""Verify a proposed case's reference answer by running its solution program in the sandbox.

A curriculum's reference answer is only a claim; Agent0's reference code trusted it and let
a wrong one erase the uncertainty signal (docs/method.md, defect 2). The QA notes (problem 1)
ask to check it before anything is called a *failure*: execute the generator's solution.
Here a :class:`~frontier_qa.probing._curriculum_seam.Proposal` may carry ``solution``, a Python program
whose printed output is the answer. It runs in :class:`~frontier_qa.runtime.sandbox.Sandbox`
(no network, no secrets, resource limits), and:

* the program fails (non-zero exit, timeout, killed)     → reference stays **unverified**;
* the case has no reference                              → the output **becomes** the verified reference;
* the output is equivalent to the reference              → the reference is **verified**;
* the output differs                                     → the reference stays **unverified**
  (two derivations disagree: the engine will say ``suspect``, never ``failure``).

The printed answer is read like a target's: the last ``\\boxed{}`` or ``Final answer:``
line when present, else the last non-empty line of standard output.

A case can also arrive with a reference its source vouches for (a benchmark's gold answer,
a suite row written ``reference_verified: true``); :data:`TRUSTED_KEY` in its metadata says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from frontier_qa.errors import SandboxError
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.runtime.sandbox import Sandbox, SandboxResult
from frontier_qa.scoring.answers import extract_answer
from frontier_qa.store._inputs import TAKEN_FROM_SOLUTION
from frontier_qa.target import Case

TRUSTED_KEY = "reference_verified"
"""Case metadata key: ``True`` means the case's source vouches for its reference."""

AGREES = "solution output agrees with the reference"
"""The verification note of a reference the solution printed (kept in the record's metadata)."""

PRINTED_NOTHING = "solution program printed nothing"
"""The verification note of a solution that ran and printed no answer."""

SOLUTION_KEY = "solution"
"""Case metadata key under which the engine keeps the solution program, so an exported
suite carries it and a later run can verify again."""


@dataclass(frozen=True)
class Verification:
    """What checking one proposal's reference found.

    Attributes:
        reference: the reference to score against (the program's answer when the case had none).
        verified: whether that reference may make a ``failure``.
        output: the answer the solution printed, ``None`` when it printed none or did not run.
        reason: one line saying what happened.
    """

    reference: str | None
    verified: bool
    output: str | None
    reason: str


def solution_answer(stdout: str) -> str | None:
    """The answer a solution program printed: boxed / final-answer line, else the last line."""
    found = extract_answer(stdout, "auto")
    if found is not None:
        return found
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1] if lines else None


def _describe_failure(result: SandboxResult) -> str:
    why = result.killed_reason or f"exit status {result.exit_code}"
    tail = result.stderr.strip().splitlines()[-1:] if result.stderr.strip() else []
    return why + (f": {tail[0][:200]}" if tail else "")


def _same(a: str, b: str, answer_format: str) -> bool:
    from frontier_qa.scoring._equivalence import comparator

    # open-ended answers compare as normalised strings: a solution program prints a short fact
    return comparator("string" if answer_format == "text" else "math")(a, b)


COMPUTES_NOTHING = "the solution program prints a constant: it computes nothing, so it verifies nothing"
"""The verification note of a program such as ``print(2500)`` (issue 27: a reference is verified only
when a program *computes* it; a small curriculum model often writes its answer as a literal)."""


def computes_nothing(program: str) -> bool:
    """Whether ``program`` only prints literals: no operator, no call but ``print``, no loop or comprehension.

    A program that does not parse or prints nothing is not judged here (running it says what is wrong).
    """
    import ast

    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return False
    calls = [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if not any(isinstance(f, ast.Name) and f.id == "print" for f in calls):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.For, ast.While, ast.comprehension,
                             ast.Subscript, ast.Attribute, ast.Lambda, ast.IfExp, ast.AugAssign, ast.JoinedStr)):
            if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
                continue  # -5 is a literal
            return False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id == "print"):
            return False
    return True


def trusted(proposal: Proposal) -> bool:
    """Whether the proposal's source vouches for its reference (see :data:`TRUSTED_KEY`)."""
    return proposal.case.reference is not None and proposal.case.metadata.get(TRUSTED_KEY) is True


async def verify_reference(
    proposal: Proposal,
    sandbox: Sandbox,
    *,
    timeout_s: float | None = None,
    same: Callable[[str, str, str], bool] = _same,
) -> Verification:
    """Run the proposal's solution in the sandbox and compare what it prints with the reference.

    Args:
        proposal: the proposal; its ``solution`` is the program, ``case.reference`` the claim.
        sandbox: where to run it.
        timeout_s: wall-clock limit for the program in seconds (default: the sandbox's).
        same: ``(printed, reference, answer_format) -> bool`` equivalence; default: math
            equivalence, or normalised string equality for open-ended (``"text"``) cases.

    Returns:
        A :class:`Verification`; never raises for a failing program or a sandbox that cannot
        start (the reason says so and the reference stays unverified).
    """
    case = proposal.case
    if trusted(proposal):
        return Verification(case.reference, True, None, "reference vouched for by its source")
    if not proposal.solution or not proposal.solution.strip():
        return Verification(case.reference, False, None, "no solution program to verify the reference")
    if computes_nothing(proposal.solution):
        return Verification(case.reference, False, None, COMPUTES_NOTHING)
    try:
        result = await sandbox.arun(proposal.solution, timeout_s=timeout_s)
    except SandboxError as err:
        return Verification(case.reference, False, None, f"sandbox unavailable: {err.message}")
    if not result.ok:
        return Verification(case.reference, False, None, f"solution program failed ({_describe_failure(result)})")
    return await check_printed(case, solution_answer(result.stdout), same=same)


async def check_printed(
    case: Case, printed: str | None, *, same: Callable[[str, str, str], bool] = _same
) -> Verification:
    """What the answer a solution program printed says of the case's reference (the program ran).

    Args:
        case: the case; ``case.reference`` is the claim.
        printed: the answer the program printed (:func:`solution_answer`), ``None`` when none.
        same: as for :func:`verify_reference`.
    """
    if printed is None:
        return Verification(case.reference, False, None, PRINTED_NOTHING)
    if case.reference is None:
        return Verification(printed, True, printed, f"{TAKEN_FROM_SOLUTION} {printed!r}")
    if await asyncio.to_thread(same, printed, case.reference, case.answer_format):
        return Verification(case.reference, True, printed, AGREES)
    return Verification(
        case.reference,
        False,
        printed,
        f"solution printed {printed!r} but the reference says {case.reference!r}; left unverified",
    )


async def verify_references(
    proposals: Sequence[Proposal], sandbox: Sandbox, *, timeout_s: float | None = None
) -> list[Verification]:
    """:func:`verify_reference` for each proposal, concurrently (the sandbox caps parallel runs)."""
    return list(await asyncio.gather(*(verify_reference(p, sandbox, timeout_s=timeout_s) for p in proposals)))


__all__ = [
    "AGREES",
    "COMPUTES_NOTHING",
    "PRINTED_NOTHING",
    "SOLUTION_KEY",
    "TRUSTED_KEY",
    "Verification",
    "check_printed",
    "computes_nothing",
    "solution_answer",
    "trusted",
    "verify_reference",
    "verify_references",
]
