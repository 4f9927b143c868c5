"""How reports show failed samples: their distinct errors with counts, not a bare "(call failed)"."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from frontier_qa.reports import junit_xml
from frontier_qa.reports._explain import votes
from frontier_qa.reports._summary import CALL_FAILED, NO_ERROR, answer_distribution, error_text, sample_errors
from frontier_qa.store._records import CaseClass, CaseRecord
from tests.factories import probed_record

RAISED = "the agent raised RuntimeError: flaky backend (at agent.py:3 in run)"


def with_errors(*errors: str, answers: int = 2, n_failed: int | None = None) -> CaseRecord:
    """A probed record with ``answers`` samples answering 4, then one failed sample per error."""
    record = probed_record("c", "frontier", ["4"] * answers + [None] * len(errors))
    samples = [s if s.answer is not None else s.model_copy(update={"error": errors[s.sample_index - answers]})
               for s in record.samples]
    failed = len(errors) if n_failed is None else n_failed
    return record.model_copy(update={"samples": samples, "n_failed": failed})


def test_error_text_is_one_masked_line_without_the_adapters_words_and_keeps_the_location(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert error_text(RAISED) == "RuntimeError: flaky backend (at agent.py:3 in run)"
    assert error_text("ValueError: line one\n   line two\t(at a.py:1 in f)") == "ValueError: line one line two (at a.py:1 in f)"
    monkeypatch.setenv("FQA_H1_API_KEY", "h1-secret-value-77aa")
    assert error_text("the agent raised KeyError: h1-secret-value-77aa") == "KeyError: ***"
    long = "the agent raised RuntimeError: " + "x" * 300 + " (at agent.py:3 in run)"
    shown = error_text(long, 60)
    assert len(shown) == 60 and shown.startswith("RuntimeError: xxx") and shown.endswith("… (at agent.py:3 in run)")
    # no location at the end: cut at the end
    assert error_text("E: " + "y" * 100, 20) == "E: " + "y" * 16 + "…"


def test_sample_errors_counts_distinct_errors_most_frequent_first() -> None:
    record = with_errors(RAISED, "timeout", RAISED, "TimeoutError: slow (gave up after 4 attempts)", RAISED,
                         "timeout")
    assert sample_errors(record) == [
        ("RuntimeError: flaky backend (at agent.py:3 in run)", 3),
        ("timeout", 2),
        ("TimeoutError: slow (gave up after 4 attempts)", 1),
    ]
    # the answers, then one entry per error
    assert answer_distribution(record) == [
        ("4", 2),
        (CALL_FAILED + "RuntimeError: flaky backend (at agent.py:3 in run)", 3),
        (CALL_FAILED + "timeout", 2),
        (CALL_FAILED + "TimeoutError: slow (gave up after 4 attempts)", 1),
    ]
    assert votes(answer_distribution(record), top=2) == (
        "2 × 4, 3 × call failed: RuntimeError: flaky backend (at agent.py:3 in run), … 3 more")


def test_failed_samples_without_an_error_text_are_counted_apart() -> None:
    # a call that returned no text and no error still failed: n_failed counts it
    record = with_errors(RAISED, n_failed=3)
    assert sample_errors(record) == [("RuntimeError: flaky backend (at agent.py:3 in run)", 1), (NO_ERROR, 2)]
    assert sample_errors(with_errors()) == []


def test_a_long_error_is_not_cut_again_by_the_answer_columns() -> None:
    long = "the agent raised RuntimeError: " + "backend said no " * 20 + "(at agent.py:3 in run)"
    (entry,) = [a for a, _ in answer_distribution(with_errors(long)) if a.startswith(CALL_FAILED)]
    assert entry.endswith("… (at agent.py:3 in run)") and len(entry) == len(CALL_FAILED) + 100
    assert votes([(entry, 1)], chars=80) == f"1 × {entry}"  # answers are cut at 80, an error keeps its location
    assert votes([("z" * 100, 1)], chars=80) == "1 × " + "z" * 79 + "…"


def test_an_unresolved_case_in_junit_says_which_error_its_failed_calls_had() -> None:
    record = with_errors(RAISED, RAISED, "timeout").model_copy(update={"case_class": CaseClass.UNRESOLVED})
    skipped = ET.fromstring(junit_xml([record]).split("\n", 1)[1]).find(".//skipped")
    assert skipped is not None
    assert skipped.get("message") == ("unresolved after k=5 samples: the sampling budget ran out; 3 call(s) failed, "
                                      "most often with RuntimeError: flaky backend (at agent.py:3 in run)")
