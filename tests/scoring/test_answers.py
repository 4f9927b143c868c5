"""Answer extraction: every format, the edge cases, and never a placeholder that could vote."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier_qa.errors import AnswerError
from frontier_qa.scoring.answers import (
    ANSWER_FORMATS,
    answer_form,
    check_answer_format,
    extract_answer,
    extract_boxed,
    extract_final_answer,
    extract_json_field,
    extract_plain,
)

# ------------------------------------------------------------------------------- boxed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so the answer is $\\boxed{42}$.", "42"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{\\frac{\\sqrt{2}}{2^{3}}}", "\\frac{\\sqrt{2}}{2^{3}}"),
        ("first \\boxed{1}, then \\boxed{2}", "2"),
        ("\\boxed {x+1}", "x+1"),
        ("\\fbox{7}", "7"),
        ("\\boxed{ 5 }", "5"),
        ("\\boxed{\\{1,2\\}}", "\\{1,2\\}"),  # escaped braces do not nest
        ("\\boxed{\\boxed{3}}", "3"),  # a box directly around a box is unwrapped
        ("\\boxed{\\text{yes}} and later \\fbox{no}", "no"),
        ("\\boxed{a \\boxed{b} c}", "a \\boxed{b} c"),  # not a plain double box: kept
    ],
)
def test_extract_boxed(text: str, expected: str) -> None:
    assert extract_boxed(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "no box at all",
        "\\boxed{}",  # empty: no answer
        "\\boxed{   }",
        "\\boxed{1} then the truncated \\boxed{2",  # last box unbalanced: not the earlier one
        "\\boxed{\\frac{1}{2}",
        "\\boxed 5",  # brace-less form is not supported
        "boxed{5}",  # not the command
    ],
)
def test_extract_boxed_none(text: str) -> None:
    assert extract_boxed(text) is None


# ------------------------------------------------------------------------ final answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Work...\nFinal answer: 42", "42"),
        ("final ANSWER:   -3.5  ", "-3.5"),
        ("**Final answer:** 42", "42"),
        ("**Final Answer**: 42", "42"),
        ("### Final Answer: x = 2", "x = 2"),
        ("Final answer: **17**", "17"),
        ("Answer: 7", "7"),
        ("Answer: 7\nthinking again\nFinal answer: 8", "8"),  # last one wins
        ("Final answer: 8\nAnswer: 9", "9"),
        ("Final answer:\n\n  1/2\n", "1/2"),  # value on the next line
        ("**Final Answer**\n\n12", "12"),  # heading, value below
        ("Final answer: $\\boxed{5}$", "5"),
        ("Natalia sold 48 clips.\n#### 72", "72"),
        ("#### 1,000", "1,000"),
        ("Answer: 3\n#### 4", "4"),  # GSM8K line after the label line
        ("#### 5\nFinal answer: 6", "6"),
        ("#### Step 2\nFinal answer: 6", "6"),
        ("> Final answer: B", "B"),
    ],
)
def test_extract_final_answer(text: str, expected: str) -> None:
    assert extract_final_answer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The answer: 5",  # label must open the line
        "#### Step 2: multiply",  # a markdown heading, not GSM8K
        "Final answer:",  # nothing after it
        "Final answer: ** **",
        "",
    ],
)
def test_extract_final_answer_none(text: str) -> None:
    assert extract_final_answer(text) is None


# -------------------------------------------------------------------------------- json


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ('{"answer": "Paris"}', "answer", "Paris"),
        ('  {"answer": 42}  ', "answer", "42"),
        ('{"answer": 0.5}', "answer", "0.5"),
        ('{"answer": true}', "answer", "true"),
        ('{"answer": [1, 2]}', "answer", "[1, 2]"),
        ('{"answer": {"b": 1, "a": 2}}', "answer", '{"a": 2, "b": 1}'),
        ('{"result": {"value": " 7 "}}', "result.value", "7"),
        ('{"items": [{"v": 1}, {"v": 2}]}', "items.1.v", "2"),
        ('[{"answer": 3}]', "0.answer", "3"),
        ('Here:\n```json\n{"answer": 1}\n```\nand\n```json\n{"answer": 2}\n```', "answer", "2"),
        ('```json\n{"answer": 1}\n```\n```json\n{"other": 2}\n```', "answer", "1"),
        ('I called {"tool": "x"} then decided {"answer": "B"} ok', "answer", "B"),
        ('{"answer": "A"} and then {"answer": "C", "why": {"x": 1}}', "answer", "C"),
        ('{"answer": "A"} then {"note": "no answer here"}', "answer", "A"),
    ],
)
def test_extract_json_field(text: str, field: str, expected: str) -> None:
    assert extract_json_field(text, field) == expected


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"answer": null}', "answer"),
        ('{"answer": ""}', "answer"),
        ('{"other": 1}', "answer"),
        ('{"answer": 1}', "answer.deeper"),
        ('{"items": [1]}', "items.3"),
        ("42", "answer"),  # valid JSON, but not an object with the field
        ("not json {at all", "answer"),
        ('{"answer": 1,}', "answer"),  # invalid JSON
    ],
)
def test_extract_json_field_none(text: str, field: str) -> None:
    assert extract_json_field(text, field) is None


# ---------------------------------------------------------------- formats and dispatch


def test_extract_answer_dispatch() -> None:
    text = 'Final answer: 3\n\\boxed{4}\n{"answer": 5, "result": {"value": 6}}'
    assert extract_answer(text, "boxed") == "4"
    assert extract_answer(text, "final_answer") == "3"
    assert extract_answer(text, "json:answer") == "5"
    assert extract_answer(text, "json:result.value") == "6"
    assert extract_answer(text, " json: result.value ") == "6"
    assert extract_answer(text, "text") == text.strip()
    assert extract_answer(text, "auto") == "4"  # boxed first


def test_auto_precedence() -> None:
    assert extract_answer("Final answer: 3\n{\"answer\": 5}", "auto") == "3"
    assert extract_answer('{"answer": 5}', "auto") == "5"
    assert extract_answer("a reply that is prose, no answer marked in it, and longer than eight words", "auto") is None
    assert extract_answer("\\boxed{1} then \\boxed{2", "auto") is None
    # an unbalanced last box is no box; auto then looks for the other forms
    assert extract_answer("\\boxed{1} then \\boxed{2\nFinal answer: 9", "auto") == "9"


def test_text_format() -> None:
    assert extract_answer("  Paris is the capital.\n", "text") == "Paris is the capital."
    assert extract_answer("   \n ", "text") is None


def test_failed_sample_has_no_answer() -> None:
    for fmt in ("auto", "boxed", "final_answer", "json:answer", "text"):
        assert extract_answer(None, fmt) is None


@pytest.mark.parametrize("fmt", ["latex", "json", "json:", "json:a..b", "BOXED", ""])
def test_unknown_format_names_valid_ones(fmt: str) -> None:
    with pytest.raises(AnswerError) as err:
        extract_answer("\\boxed{1}", fmt)
    assert "json:" in str(err.value)
    if fmt in ("latex", "BOXED", ""):
        assert all(name in str(err.value) for name in ANSWER_FORMATS)


def test_check_answer_format() -> None:
    assert check_answer_format(" boxed ") == "boxed"
    assert check_answer_format("json: a.b ") == "json:a.b"


def test_non_string_text_is_an_error() -> None:
    with pytest.raises(AnswerError, match="int"):
        extract_answer(42, "boxed")  # type: ignore[arg-type]


# ------------------------------------------------------------------------- properties

# Text that holds no answer in any form: no backslash (no box), no '#', no '{' (no JSON),
# no colon (no "Answer:" label).
_NO_ANSWER_TEXT = st.text(
    alphabet=st.characters(blacklist_characters="\\#{:", blacklist_categories=("Cs",)), max_size=200
)


@settings(max_examples=200, deadline=None)
@given(_NO_ANSWER_TEXT)
def test_no_answer_is_none_never_a_placeholder(text: str) -> None:
    for fmt in ("boxed", "final_answer", "json:answer"):
        assert extract_answer(text, fmt) is None
    assert extract_answer(text, "auto") == extract_plain(text)  # a short reply is its own answer


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_extraction_is_none_or_a_stripped_nonempty_string(text: str) -> None:
    for fmt in ("auto", "boxed", "final_answer", "json:answer", "text"):
        found = extract_answer(text, fmt)
        assert found is None or (found == found.strip() and found != "")


_BALANCED = st.recursive(
    st.text(alphabet="ab12+-x ", max_size=5),
    lambda inner: st.lists(inner, max_size=3).map(lambda parts: "{" + "".join(parts) + "}"),
    max_leaves=8,
)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="xyz ,.", max_size=20), st.lists(_BALANCED, min_size=1, max_size=3))
def test_boxed_round_trip(prefix: str, parts: list[str]) -> None:
    content = "".join(parts)
    expected = content.strip()
    got = extract_boxed(f"{prefix} \\boxed{{{content}}} done")
    assert got == (expected or None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Counting: 1904..2096 gives 49. Final answer: 49", "49"),
        ("so the final answer is 42.", "42"),
        ("My final answer is 5", "5"),
        ("The Final Answer is \\boxed{7}.", "7"),
        ("Final answer: 3\nwait, the final answer: 4", "4"),
        ("the answer is 5", None),  # a bare "answer is" is reasoning, not a label
    ],
)
def test_final_answer_inside_a_sentence(text: str, expected: str | None) -> None:
    assert extract_answer(text, "final_answer") == expected


@pytest.mark.parametrize(("text", "answer"), [
    ("42", "42"), ("  42\n", "42"), ("Saturday", "Saturday"), ("**$1.50**", "$1.50"), ("3.", "3"),
    ("The answer is 7.", "7"), ("answer: Paris", "Paris"), ("New York City", "New York City"),
    ("-0.25", "-0.25"), ("x = 4", "x = 4"),
])
def test_auto_reads_a_reply_that_is_only_its_answer(text: str, answer: str) -> None:
    assert extract_answer(text, "auto") == answer


@pytest.mark.parametrize("text", [
    "First I add 2 and 2.\nSo it is 4",  # two lines: reasoning, not a bare answer
    "one two three four five six seven eight nine",  # more than eight words
    "\\boxed{1} then \\boxed{2",  # a box cut off: no answer, never the raw text
    '{"result": 5}',  # JSON without `answer`
    "```python\nprint(4)```",
    "",
])
def test_auto_never_takes_reasoning_or_markup_for_a_plain_answer(text: str) -> None:
    assert extract_answer(text, "auto") is None


def test_answer_form_names_what_auto_read_and_nothing_it_did_not() -> None:
    assert [answer_form(t, "auto") for t in ("\\boxed{3}", "Final answer: 4", '{"answer": 5}', "42")] == [
        "boxed", "answer line", "JSON", "plain reply"]
    assert answer_form("a reply of prose with no answer marked in it, and far too long", "auto") is None
    assert answer_form("\\boxed{3}", "boxed") == "boxed" and answer_form("42", "boxed") is None
    assert answer_form(None, "auto") is None
    for text in ("\\boxed{3}", "Final answer: 4", '{"answer": 5}', "42", "Final answer: \\boxed{6}"):
        assert (answer_form(text, "auto") is None) == (extract_answer(text, "auto") is None)
