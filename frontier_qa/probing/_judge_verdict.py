"""Asking a judge target whether a case's majority answer is right: the question and how its reply is read.

A stable answer without a verified reference is put to the judge target (``--judge``); the case
prober asks with :func:`judge_prompt` and reads the reply with :func:`parse_judge_verdict`.
"""

from __future__ import annotations

import re

from frontier_qa.target import Case

_VERDICT = re.compile(r"verdict\s*[:：]?\s*[*_`\"']*\s*(yes|no|correct|incorrect)\b", re.IGNORECASE)
_LEADING = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def judge_prompt(case: Case, answer: str) -> str:
    """The question put to a judge target about a case's majority answer."""
    return (
        "You are grading an answer to a task.\n\n"
        f"Task:\n{case.prompt.strip()}\n\n"
        f"Proposed answer:\n{answer.strip()}\n\n"
        "Is the proposed answer correct? Reason briefly, then end with exactly one line: "
        '"Verdict: yes" or "Verdict: no".'
    )


def parse_judge_verdict(text: str | None) -> bool | None:
    """The judge's yes/no: the last ``Verdict: yes|no`` line, else a leading yes/no; ``None`` otherwise."""
    if not text:
        return None
    found = _VERDICT.findall(text)
    if found:
        return found[-1].lower() in ("yes", "correct")
    lead = _LEADING.match(text.strip())
    return None if lead is None else lead.group(1).lower() == "yes"


__all__ = ["judge_prompt", "parse_judge_verdict"]
