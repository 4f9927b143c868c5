"""``--k`` means one thing, through the real CLI: the sample cap, with a warning when it is too low.

The agent is a real Python agent (``python:agent.py:answer``) that answers right on 7 of every 10
sample indices and spreads its misses over three wrong answers: p* = 0.7, inside the Agent0 band.
The calibrated policy decides such a case within its own 30 samples, but not within 10: ``--k 10``
leaves every case unresolved, which must never be a silent exit 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_qa.store._case_store import CaseStore
from tests.cli.runner import run_cli

AGENT = '''
def answer(case, sample_index):
    if sample_index % 10 in (2, 5, 8):
        return "\\\\boxed{wrong%d}" % (sample_index % 3)
    return "\\\\boxed{%s}" % case.reference
'''

WARNING = ("warning: k = 10 caps the calibrated policy at 10 samples per case, below the 30 it needs to decide "
           "most cases: expect ")
FIX = ("use --policy fixed --k 10 (probing.policy: fixed) for Agent0's rule (exactly k samples per "
       "case), or drop --k "
       "(probing.k) so the calibrated policy samples up to 30")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    rows = [{"id": f"c{i}", "topic": "arithmetic", "reference": str(10 + i), "reference_verified": True,
             "prompt": f"Case {i}: what is {i} + 10?"} for i in range(4)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def probe(folder: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_cli(folder, capsys, ["probe", "--target", "python:agent.py:answer", "--curriculum", "cases.jsonl",
                                    "--progress", "off", "--store", "store", *args])


def test_a_k_below_the_policy_s_need_warns_at_start_and_exit_3_names_it(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = probe(folder, capsys, "--k", "10", "--out", "out")
    assert rc == 3
    assert err.splitlines()[0].startswith(f"frontier-qa: {WARNING}") and err.rstrip().endswith(FIX)
    lines = out.splitlines()
    assert lines[0] == "could not judge the agent (exit 3):"
    assert lines[1] == ("  - 4 of 4 cases (100%) stayed unresolved, above the limit of 20%: "
                        f"k = 10 capped the sampling at 10 samples per case (the run warned as it started); {FIX} "
                        "(gate.max_unresolved_share sets the limit)")
    assert f"  {WARNING}" in out  # the summary says it again, and so does every report
    report = json.loads((folder / "out" / "report.json").read_text())
    assert report["warnings"][0].startswith(WARNING[len("warning: "):])
    assert "## Warnings" in (folder / "out" / "report.md").read_text()
    store = CaseStore(folder / "store")  # the run record keeps the warning: a report written later says it too
    (run,) = {r.run_id: r for rid in store.run_ids() for r in store.run_records(rid)}.values()
    assert [(w.code, w.cap) for w in run.warnings] == [("k-cap", 10)]


def test_agent0_s_rule_and_the_policy_s_own_cap_do_not_warn(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = probe(folder, capsys, "--policy", "fixed", "--k", "10", "--out", "fixed")
    assert rc == 0 and "warning" not in err + out and "cases: 4 (frontier 4)" in out
    rc, out, err = probe(folder, capsys, "--out", "own")  # no --k: up to 30, every case decided
    assert rc == 0 and "warning" not in err + out and "cases: 4 (frontier 4)" in out


def test_probing_k_in_a_config_file_means_the_same(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "probe.yaml").write_text("version: 1\nprobing:\n  k: 10\n")
    rc, out, err = probe(folder, capsys, "--config", "probe.yaml", "--out", "out")
    assert rc == 3 and err.startswith(f"frontier-qa: {WARNING}") and FIX in out.splitlines()[1]
    (folder / "fixed.yaml").write_text("version: 1\nprobing:\n  policy: fixed\n  k: 10\n")
    rc, out, err = probe(folder, capsys, "--config", "fixed.yaml", "--out", "fixed")
    assert rc == 0 and "warning" not in err + out
