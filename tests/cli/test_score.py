"""`frontier-qa score` on recorded runs: values, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_qa.cli import main
from tests.factories import REPO

SAMPLE = REPO / "examples" / "data" / "sample_runs.jsonl"


def _score(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> tuple[int, dict[str, dict]]:
    rc = main(["score", str(path), "--json", *extra])
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return rc, {r["id"]: r for r in rows}


def _discrete_rows(tmp_path: Path) -> Path:
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["answer_format"] != "text"))
    return path


def test_scores_sample_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, rows = _score(capsys, _discrete_rows(tmp_path))
    assert rc == 0
    easy = rows["add-easy"]
    assert (easy["p_hat"], easy["majority"], easy["in_band"], easy["reward"]) == (1.0, "42", False, 0.0)
    half = rows["half-forms"]  # 0.5, 1/2, \frac12, \dfrac12, 50% merge: 6 of 10
    assert half["p_hat"] == pytest.approx(0.6) and half["majority"] == "0.5" and half["in_band"]
    assert half["r_unc"] == pytest.approx(0.8)
    primes = rows["sum-of-primes"]  # 4 agree, 2 failed, 2 unparseable: never votes
    assert primes["p_hat"] == pytest.approx(0.4)
    assert (primes["n_failed"], primes["n_unparseable"]) == (2, 2)
    # mean over 10 trajectories of min(N_i, 4) = 6/10, times gamma 0.25
    assert primes["r_tool"] == pytest.approx(0.25 * 0.6)
    pair = rows["ordered-pair"]  # (1,2) and (2,1) are different answers: a 5/5 tie
    assert pair["p_hat"] == pytest.approx(0.5) and pair["tie"] and pair["majority"] == "(1,2)"
    leap = rows["leap-years"]  # "Final answer:" mid-line is read too
    assert (leap["p_hat"], leap["n_unparseable"]) == (0.5, 0)
    # The two ordered-pair tasks are near-duplicates: both share a repetition cluster of 2.
    assert pair["r_rep"] == pytest.approx(rows["ordered-pair-v2"]["r_rep"]) == pytest.approx(2 / 6)
    assert easy["r_rep"] == pytest.approx(1 / 6)


def test_agent0_compat_preset_halves_uncertainty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, rows = _score(capsys, _discrete_rows(tmp_path), "--preset", "agent0-compat")
    assert rc == 0
    assert rows["half-forms"]["r_unc"] == pytest.approx(0.4)  # min(0.6, 0.4)


def test_writes_results_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out" / "scores.jsonl"
    rc, rows = _score(capsys, _discrete_rows(tmp_path), "--out", str(out))
    assert rc == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["id"] for r in written} == set(rows)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "task": "t", "answers": ["1"]}\nnot json\n', "runs.jsonl:2: not valid JSON"),
        ('{"id": "a", "answers": ["1"]}\n', "runs.jsonl:1: field 'task'"),
        ('{"id": "a", "task": "t", "answers": ["1"], "failed": [true, false]}\n', "'failed' has 2 entries"),
        ('{"id": "a", "task": "t", "answers": ["1"], "answer_format": "xml"}\n', "answer format"),
        ("\n", "holds no tasks"),
    ],
)
def test_bad_input_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(content)
    assert main(["score", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_unknown_preset_and_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["score", str(_discrete_rows(tmp_path)), "--preset", "bogus"]) == 2
    assert "unknown reward preset" in capsys.readouterr().err


@pytest.mark.model
def test_open_ended_row_uses_embeddings(capsys: pytest.CaptureFixture[str]) -> None:
    rc, rows = _score(capsys, SAMPLE)
    assert rc == 0
    capital = rows["capital"]
    # Canberra x6, Sydney x3, Melbourne x1: embeddings alone merged all ten (p̂ = 1.0).
    assert capital["k"] == 10 and capital["p_hat"] == pytest.approx(0.6)
    assert "Canberra" in capital["majority"] and capital["in_band"]
    assert sorted(size for _, size in capital["clusters"]) == [1, 3, 6]
