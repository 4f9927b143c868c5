"""Python agent files through the real CLI: the modules beside them.

A ``python:proj/agent.py:run`` target is imported as ``python proj/agent.py`` runs it (its folder
first on ``sys.path``), and its version covers the modules it imports from that folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from frontier_qa.cli import main

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
        self.capsys.readouterr()
        here = os.getcwd()
        os.chdir(self.root)
        try:
            rc = main(list(args))
        finally:
            os.chdir(here)
        return rc, self.capsys.readouterr().out

    def cli_process(self, *args: str) -> tuple[int, str]:
        """The CLI in a new process: the next command a user runs, with the edited files imported afresh."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_QA_") and k != "CI"}
        done = subprocess.run([sys.executable, "-m", "frontier_qa", *args], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=300)
        return done.returncode, done.stdout + done.stderr

    def report(self, out: str) -> dict:
        return json.loads((self.root / out / "report.json").read_text())


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
            agent_imports: None) -> AgentProject:
    for name in list(os.environ):
        if name.startswith("FRONTIER_QA_") or name == "CI":
            monkeypatch.delenv(name)
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
