"""``frontier-qa cases show`` on a case whose paths were analysed: the finding, the paths with their
samples, pass^k, and beside each answer's step line (one per path when the samples took several)
what that sample missed (text and ``--json``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from frontier_qa.cli import main
from frontier_qa.reports._path_findings import clusters_text
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CaseRecord
from frontier_qa.store._steps import Step
from tests.reports.path_records import FORBID, SECRET, path_records


def _with_steps(record: CaseRecord) -> CaseRecord:
    """``geo-scatter`` as an agent that recorded its steps: the tool each sample's path names."""
    samples = [s.model_copy(update={"steps": (Step(kind="model", name="gpt"),
                                              Step(kind="tool", name=s.path or "", arguments='{"q": "France"}'))})
               for s in record.samples]
    return record.model_copy(update={"id": "agent-scatter", "samples": samples,
                                     "case": replace(record.case, id="agent-scatter")})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("paths") / "store"
    written = CaseStore(root)
    for record in [*path_records(), _with_steps(path_records()[0])]:
        written.append(record)
    return root


def _show(capsys: pytest.CaptureFixture[str], store: Path, *args: str) -> str:
    capsys.readouterr()
    assert main(["cases", "show", *args, "--store", str(store)]) == 0
    return capsys.readouterr().out


def test_show_prints_the_path_finding_pass_k_and_the_misses(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _show(capsys, store, "geo-scatter")
    scatter = path_records()[0]
    assert scatter.path is not None
    assert f"  path:       scatter · p̂ 0.62 · {clusters_text(scatter.path)} (granularity tools)" in out
    assert "capital_of 5/8 · lookup_city 3/8" in out
    assert "  pass^k:     pass^8 = 0.00 (5 of 8 samples passed)" in out
    assert f"  misses:     {FORBID} (3 of 8)" in out
    # the one answer came by two paths: a line for each, with what its first sample missed
    assert ("      8 × Paris\n"
            "          5 × path: capital_of\n"
            "              misses: met the expectations\n"
            "          3 × path: lookup_city\n"
            f"              misses: {FORBID}\n") in out


def test_show_gives_each_path_its_step_line(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _show(capsys, store, "agent-scatter")
    assert ("      8 × Paris\n"
            '          5 × steps: model → capital_of(q="France") → answer "Paris"\n'
            "              misses: met the expectations\n"
            '          3 × steps: model → lookup_city(q="France") → answer "Paris"\n'
            f"              misses: {FORBID}\n") in out
    answer = json.loads(_show(capsys, store, "agent-scatter", "--json"))["answers"][0]
    assert answer["steps"] == 'model → capital_of(q="France") → answer "Paris"'  # the first sample's, as before
    assert answer["paths"] == [
        {"path": "capital_of", "votes": 5, "steps": 'model → capital_of(q="France") → answer "Paris"', "misses": []},
        {"path": "lookup_city", "votes": 3, "steps": 'model → lookup_city(q="France") → answer "Paris"',
         "misses": [FORBID]}]


def test_show_masks_a_secret_in_a_path(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _show(capsys, store, "geo-wrong")
    assert "wrong path" in out and 'lookup_city(key="***") 8/8' in out and SECRET not in out
    assert f"          misses: {FORBID}; never called capital_of" in out  # one path: one line, as before
    assert " × path:" not in out


def test_show_json_carries_the_path_pass_k_and_each_sample(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(_show(capsys, store, "geo-scatter", "--json"))
    assert data["path"]["finding"] == "scatter" and data["path"]["majority"] == "capital_of"
    assert data["pass_k"] == {"k": 8, "n": 8, "passed": 5, "value": 0.0, "misses": [f"{FORBID} (3 of 8)"]}
    assert data["answers"] == [{"answer": "Paris", "votes": 8, "misses": [],
                                "paths": [{"path": "capital_of", "votes": 5, "misses": []},
                                          {"path": "lookup_city", "votes": 3, "misses": [FORBID]}]}]
    assert [s["path"] for s in data["samples"]] == ["capital_of"] * 5 + ["lookup_city"] * 3
    assert data["samples"][7] == {"index": 7, "path": "lookup_city", "misses": [FORBID]}
    plain = json.loads(_show(capsys, store, "plain", "--json"))
    assert plain["path"] is None and plain["pass_k"] is None and plain["samples"] == []
    assert "misses" not in plain["answers"][0] and "paths" not in plain["answers"][0]
    assert "path:" not in _show(capsys, store, "plain")
