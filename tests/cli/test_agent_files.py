"""Python agent files through the real CLI: the modules beside them, and the errors they raise.

A ``python:proj/agent.py:run`` target is imported as ``python proj/agent.py`` runs it (its folder
first on ``sys.path``), its version covers the modules it imports from that folder, and when it
raises, the error itself (a secret in it masked) is what ``cases show``, every report and the
replay explanation show, not a bare count of failed calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from frontier_qa.adapters import create_adapter
from frontier_qa.reports._explain import explain
from frontier_qa.scoring._case_scoring import answers_of
from frontier_qa.scoring.consistency import self_consistency
from frontier_qa.store import CaseStore
from frontier_qa.store._comparison import compare
from frontier_qa.store._records import case_record, utc_now
from frontier_qa.target import Sampling
from tests.cli.runner import run_cli
from tests.factories import run

SECRET = "h1-planted-value-8c2f61d0"  # no credential shape: only its variable's name makes it a secret

AGENT = '''import helpers


def run(prompt, sample_index):
    if sample_index % 4 == 3:
        raise RuntimeError("flaky backend: " + helpers.detail())
    return "\\\\boxed{%s}" % helpers.ANSWER
'''

HELPERS = '''import os

ANSWER = "{answer}"


def detail():
    return "key " + os.environ.get("FQA_H1_API_KEY", "unset")
'''

CASES = [{"id": f"add-{i}", "topic": "arithmetic", "prompt": f"What is {i} + 4?", "reference": str(i + 4),
          "reference_verified": True} for i in range(2)]
SHOWN = "RuntimeError: flaky backend: key *** (at agent.py:6 in run)"  # how the error reads everywhere


class AgentProject:
    """``proj/agent.py`` (importing ``proj/helpers.py``) and ``proj/cases.jsonl``; the CLI runs from
    the folder above, so ``proj/`` is on ``sys.path`` only because frontier-qa puts it there.
    """

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root, self.capsys = root, capsys
        self.proj = root / "proj"
        self.proj.mkdir()
        (self.proj / "agent.py").write_text(AGENT)
        (self.proj / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
        self.answer(4)

    def answer(self, value: int) -> None:
        """What ``helpers.py`` makes the agent answer (4: right for add-0, wrong for add-1)."""
        (self.proj / "helpers.py").write_text(HELPERS.replace("{answer}", str(value)))

    def args(self) -> list[str]:
        return ["--target", "python:proj/agent.py:run", "--k", "8", "--progress", "off", "--store", "store"]

    def cli(self, *args: str) -> tuple[int, str]:
        """The CLI in this process, as a user's shell runs it from the project's parent folder."""
        return run_cli(self.root, self.capsys, args)[:2]

    def cli_process(self, *args: str) -> tuple[int, str]:
        """The CLI in a new process: the next command a user runs, with the edited files imported afresh."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_QA_") and k != "CI"}
        done = subprocess.run([sys.executable, "-m", "frontier_qa", *args], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=300)
        return done.returncode, done.stdout + done.stderr

    def report(self, out: str) -> dict:
        return json.loads((self.root / out / "report.json").read_text())


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str], clean_env: None, agent_imports: None) -> AgentProject:
    return AgentProject(tmp_path, capsys)


def test_an_agent_importing_a_module_beside_it_probes_and_a_changed_helper_is_a_new_version(
        project: AgentProject) -> None:
    (project.proj / "agent.py").write_text(AGENT.replace("if sample_index % 4 == 3", "if False"))  # never raises
    rc, out = project.cli("probe", *project.args(), "--curriculum", "proj/cases.jsonl", "--out", "out")
    assert "failed while importing" not in out
    first = project.report("out")
    # the agent answered through helpers.py: 4 is right for add-0 and wrong for add-1
    assert (rc, first["by_class"]["pass"], first["by_class"]["failure"]) == (1, 1, 1)
    # the same files in a new process: the same version
    rc, _ = project.cli_process("replay", *project.args(), "--out", "same")
    assert rc == 0 and project.report("same")["run"]["target_version"] == first["run"]["target_version"]
    # only the helper changed (now 5: add-1 right, add-0 wrong): a new version (a new sample-cache key),
    # and its answers are the new helper's
    project.answer(5)
    rc, out = project.cli_process("replay", *project.args(), "--out", "after")
    after = project.report("after")
    assert rc == 1, out
    assert after["run"]["target_version"] != first["run"]["target_version"]
    assert {c["id"]: c["majority"] for c in after["cases"]} == {"add-0": "5", "add-1": "5"}
    assert {c["id"]: c["verdict"] for c in after["replay"]["changed"]} == {"add-0": "regression",
                                                                          "add-1": "improved"}


def test_an_agents_own_error_is_shown_masked_in_cases_show_every_report_and_the_explanation(
        project: AgentProject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FQA_H1_API_KEY", SECRET)
    rc, _ = project.cli("probe", *project.args(), "--curriculum", "proj/cases.jsonl", "--out", "out")
    assert rc == 1  # add-1 is answered 4: a failure
    base = CaseStore(project.root / "store").latest()
    k0 = base["add-0"].k
    failed = (k0 + 1) // 4  # samples 3, 7...
    assert [s.error for s in base["add-0"].samples if s.error] == ["the agent raised " + SHOWN] * failed  # masked

    rc, out = project.cli("cases", "show", "add-0", "--store", "store")
    assert rc == 0
    assert f"    {k0 - failed:>3} × 4\n    {failed:>3} × call failed: {SHOWN}\n" in out
    rc, out = project.cli("cases", "show", "add-0", "--store", "store", "--json")
    assert json.loads(out)["errors"] == [{"error": SHOWN, "count": failed}]

    # the helper now answers 5: add-0 regresses, and every output says why its calls failed
    project.answer(5)
    rc, out = project.cli_process("replay", *project.args(), "--out", "after")
    assert rc == 1, out
    folder = project.root / "after"
    report = project.report("after")
    errors = {c["id"]: c["errors"] for c in report["cases"]}
    k = {c["id"]: c["k"] for c in report["cases"]}
    assert errors["add-0"] == [{"error": SHOWN, "count": (k["add-0"] + 1) // 4}]  # samples 3, 7, 11...
    assert {"answer": "call failed: " + SHOWN, "count": (k["add-0"] + 1) // 4} in next(
        c["answers"] for c in report["cases"] if c["id"] == "add-0")
    md = (folder / "report.md").read_text()
    assert "call failed: " + SHOWN.replace("***", "\\*\\*\\*") in md  # the regression's answers, escaped
    html = (folder / "report.html").read_text()
    assert "call failed: " + SHOWN in html
    junit = ET.parse(folder / "junit.xml").getroot()
    failure = next(c for c in junit.iter("testcase") if c.get("name") == "add-0").find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert f"answers now:       {k['add-0'] - (k['add-0'] + 1) // 4} × 5, {(k['add-0'] + 1) // 4} × call failed: " \
           + SHOWN in (failure.text or "")
    for name in ("report.md", "report.html", "report.json", "junit.xml", "cases.jsonl"):
        text = (folder / name).read_text()
        assert SECRET not in text and "***" in text.replace("\\*", "*"), name

    # explain(), as the pytest plugin's failure message uses it, from the agent's raw trajectories
    # (not yet masked by the store: the secret is in them)
    for name in [n for n, m in sys.modules.items() if str(getattr(m, "__file__", "")).startswith(str(project.proj))]:
        del sys.modules[name]  # import the edited helper, as a new process would
    agent = create_adapter(f"python:{project.proj / 'agent.py'}:run")
    case = base["add-0"].case
    trajectories = run(agent.generate(case, 8, Sampling()))
    assert SECRET in (trajectories[3].error or "")
    answers = answers_of(case, trajectories)
    now = case_record(case, trajectories, answers, self_consistency(answers, failed=[not t.ok for t in trajectories]),
                      case_class="failure", run_id="now", target_id=base["add-0"].target_id,
                      target_version=agent.version(), started_at=utc_now())
    lines = explain(compare(base["add-0"], now), now)
    assert "  answers now:       6 × 5, 2 × call failed: " + SHOWN in lines
    assert not any(SECRET in line for line in lines)
