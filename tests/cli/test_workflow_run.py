"""The workflow ``frontier-qa init`` writes, run step by step on a scratch repository.

A scratch git repository holds a small ``python:`` agent (right on arithmetic, a coin flip on
weekdays) and a cases file; ``frontier-qa init`` sets it up, real pytest runs the generated
test file (which probes and writes the committed suite), and then the workflow's jobs run as
GitHub would run them: each job in a fresh clone, its ``run:`` steps in order with ``bash
--noprofile --norc -eo pipefail`` (the workflow's ``defaults.run.shell: bash``), the
workflow's, job's and step's ``env``, a step after a failed one only when it says
``if: always()``, and the job's result the first failing step's exit code.

Not run: the ``uses:`` actions. Only what they provide is emulated: ``actions/checkout`` is
the fresh clone; ``actions/setup-python`` is this interpreter's ``bin`` folder on ``PATH``
(frontier-qa is installed there), with ``pip`` a stand-in that records its arguments instead
of downloading (no network here); ``actions/upload-artifact`` / ``download-artifact`` copy the
named paths to and from a folder per artifact. GitHub's expressions in ``env`` values
(``matrix.shard``, ``github.run_id``, ``secrets.*``) are filled in; an unknown one fails.
Job-level ``if:`` conditions are not evaluated: the test asserts them and picks the jobs.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from frontier_qa.cli.app import main

AGENT = '''
import os

version = "1"


def run(case, sample_index):
    if os.environ.get("AGENT_DOWN"):  # the agent's backend is down: every call fails
        raise ConnectionError("backend unreachable")
    if case.topic == "weekdays":  # guesses: a frontier case
        return "\\\\boxed{%s}" % ("Monday" if sample_index % 3 != 2 else "Friday")
    return "\\\\boxed{%s}" % case.reference
'''
BROKEN = "\n\ndef run(case, sample_index):  # the planted regression: arithmetic off by one\n" \
         "    return \"\\\\boxed{41}\" if case.topic == \"arithmetic\" else _old(case, sample_index)\n"

CASES = "".join(f"{line}\n" for line in [
    '{"id": "add-1", "prompt": "What is 17 + 25?", "reference": "42", "reference_verified": true, "topic": "arithmetic"}',
    '{"id": "add-2", "prompt": "What is 20 + 3?", "reference": "23", "reference_verified": true, "topic": "arithmetic"}',
    '{"id": "wd-1", "prompt": "Which weekday comes 3 days after Friday?", "reference": "Monday", "topic": "weekdays"}',
    '{"id": "wd-2", "prompt": "Which weekday is 4 days before Tuesday?", "reference": "Friday", "topic": "weekdays"}',
])
INSTALL = "git+https://github.com/acme/frontier-qa.git@v0.1.0"
PIP = '#!/bin/sh\necho "$*" >> "$PIP_LOG"\n'  # setup-python's pip, recording instead of downloading


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=qa@example.com", "-c", "user.name=qa", *args], cwd=repo, check=True,
                   capture_output=True)


class Runner:
    """Runs the jobs of one workflow file of ``repo`` the way the module docstring says."""

    def __init__(self, repo: Path, work: Path) -> None:
        self.repo, self.work = repo, work
        self.workflow = yaml.safe_load((repo / ".github" / "workflows" / "frontier-qa.yml").read_text())
        self.artifacts = work / "artifacts"
        shim = work / "bin"
        shim.mkdir(parents=True, exist_ok=True)
        (shim / "pip").write_text(PIP)
        (shim / "pip").chmod(0o755)
        self.pip_log = work / "pip.log"
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("FRONTIER_QA_", "GITHUB_"))}
        self.base_env = {**clean, "CI": "true", "GITHUB_ACTIONS": "true", "PIP_LOG": str(self.pip_log),
                         "PATH": os.pathsep.join([str(shim), str(Path(sys.executable).parent), clean["PATH"]])}
        self.jobs = 0

    def expand(self, value: Any, matrix: dict[str, Any]) -> str:
        known = {"github.run_id": "4242",
                 **{f"matrix.{k}": str(v) for k, v in matrix.items()}}

        def one(m: re.Match[str]) -> str:
            name = m.group(1)
            if name.startswith("secrets."):
                return ""  # no secret in a scratch repository (and none needed by a python: agent)
            assert name in known, f"the emulator does not know ${{{{ {name} }}}}"
            return known[name]
        return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", one, str(value))

    def run_job(self, name: str, matrix: dict[str, Any] | None = None, **env: str) -> tuple[int, Path, str]:
        """Run job ``name``; returns its exit code, its clone and its step summary."""
        matrix = matrix or {}
        job = self.workflow["jobs"][name]
        self.jobs += 1
        clone = self.work / f"job-{self.jobs}-{name}"
        subprocess.run(["git", "clone", "-q", str(self.repo), str(clone)], check=True)  # actions/checkout
        summary = self.work / f"summary-{self.jobs}.md"
        summary.write_text("")
        job_env = {**self.base_env, "GITHUB_STEP_SUMMARY": str(summary),
                   **{k: self.expand(v, matrix) for k, v in {**self.workflow["env"], **job.get("env", {})}.items()},
                   **env}
        rc = 0
        for step in job["steps"]:
            if rc and step.get("if") != "always()":
                continue
            uses = step.get("uses", "")
            if uses.startswith("actions/upload-artifact@"):
                self.upload(clone, self.expand(step["with"]["name"], matrix), step["with"]["path"])
            elif uses.startswith("actions/download-artifact@"):
                self.download(clone / step["with"]["path"], step["with"]["pattern"])
            elif uses:
                assert uses.startswith(("actions/checkout@", "actions/setup-python@")), uses
            else:
                step_env = {**job_env, **{k: self.expand(v, matrix) for k, v in step.get("env", {}).items()}}
                assert "${{" not in step["run"], "expressions in run: scripts are injection-prone; use env"
                script = self.work / "step.sh"
                script.write_text(step["run"])
                done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=clone,
                                      env=step_env, capture_output=True, text=True, check=False)
                (self.work / "log.txt").open("a").write(f"== {name}: {step.get('name')}\n{done.stdout}{done.stderr}")
                # the first failing step's code is the job's result; `if: always()` steps run on
                rc = rc or done.returncode
        return rc, clone, summary.read_text()

    def upload(self, clone: Path, name: str, paths: str) -> None:
        lines = [p.strip() for p in paths.splitlines() if p.strip()]
        skip = {(clone / p[1:]).resolve() for p in lines if p.startswith("!")}
        for path in (clone / p for p in lines if not p.startswith("!")):
            if path.is_dir():
                shutil.copytree(path, self.artifacts / name, dirs_exist_ok=True,
                                ignore=lambda d, names: [n for n in names if (Path(d) / n).resolve() in skip])

    def download(self, into: Path, pattern: str) -> None:
        for artifact in sorted(self.artifacts.iterdir()) if self.artifacts.is_dir() else []:
            if fnmatch.fnmatch(artifact.name, pattern):
                shutil.copytree(artifact, into / artifact.name)


@pytest.fixture
def repo(tmp_path: Path, capsys: pytest.CaptureFixture[str], clean_env: None) -> Path:
    """The scratch repository after `frontier-qa init`, the first pytest run and a commit."""
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "agent.py").write_text(AGENT)
    (root / "tests" / "cases.jsonl").write_text(CASES)
    assert main(["init", "python:agent.py:run", "--curriculum", "tests/cases.jsonl", "--install", INSTALL,
                 "--dir", str(root)]) == 0
    capsys.readouterr()
    first = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                            "tests/test_frontier.py"], cwd=root, capture_output=True, text=True, check=False,
                           env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")})
    assert first.returncode == 0 and "4 passed" in first.stdout, first.stdout + first.stderr
    assert "target python:agent.py:run, mode auto, 4 test(s)" in first.stdout
    assert "frontier 2, pass 2" in first.stdout
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "frontier-qa init and the first suite")
    return root


def test_the_pull_request_job_replays_the_suite_green_then_red_on_a_regression(repo: Path, tmp_path: Path) -> None:
    runner = Runner(repo, tmp_path / "ci")
    jobs = runner.workflow["jobs"]
    assert jobs["replay"]["if"] == "github.event_name == 'pull_request'"
    committed = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.split()
    assert "tests/frontier_suite.yaml" in committed and not any(f.startswith(".frontier-qa") for f in committed)

    rc, clone, summary = runner.run_job("replay")
    assert rc == 0, (tmp_path / "ci" / "log.txt").read_text()
    assert runner.pip_log.read_text().splitlines() == [f"install {INSTALL}"]
    assert "| class | cases | share |" in summary and "same" in summary
    assert (clone / "frontier-qa-report" / "report.md").read_text() in summary
    assert (runner.artifacts / "frontier-qa-replay-report" / "report.html").is_file()

    # a pull request that breaks arithmetic: exit 1, a summary naming the regressions, the report uploaded
    (repo / "agent.py").write_text(AGENT.replace("def run(", "def _old(") + BROKEN)
    git(repo, "commit", "-qam", "a change that breaks arithmetic")
    shutil.rmtree(runner.artifacts)
    rc, clone, summary = runner.run_job("replay")
    assert rc == 1, (tmp_path / "ci" / "log.txt").read_text()
    assert "regression" in summary and "add-1" in summary and "add-2" in summary
    assert (runner.artifacts / "frontier-qa-replay-report" / "report.html").is_file()

    # a configuration error is exit 2, never a green check; the summary says there is no report
    rc, _, summary = runner.run_job("replay", FRONTIER_QA_REGRESSION__ALPHA="2")  # a bad repository variable
    assert rc == 2 and "frontier-qa wrote no report" in summary


def test_the_install_step_fails_until_the_placeholder_is_edited(repo: Path, tmp_path: Path) -> None:
    workflow = repo / ".github" / "workflows" / "frontier-qa.yml"
    workflow.write_text(workflow.read_text().replace(INSTALL, "git+https://github.com/OWNER/frontier-qa.git"))
    git(repo, "commit", "-qam", "the placeholder as init writes it by default")
    runner = Runner(repo, tmp_path / "ci")
    rc, _, summary = runner.run_job("replay")
    assert rc == 2 and not runner.pip_log.exists() and "frontier-qa wrote no report" in summary
    assert "set FRONTIER_QA_INSTALL" in (tmp_path / "ci" / "log.txt").read_text()


def test_the_nightly_jobs_shard_merge_and_gate(repo: Path, tmp_path: Path) -> None:
    runner = Runner(repo, tmp_path / "ci")
    jobs = runner.workflow["jobs"]
    nightly = "github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'"
    assert jobs["probe"]["if"] == nightly and jobs["merge"]["needs"] == "probe"
    assert jobs["merge"]["if"] == f"always() && ({nightly}) && needs.probe.result != 'cancelled'"
    shards = jobs["probe"]["strategy"]["matrix"]["shard"]
    assert shards == [1, 2, 3, 4] and jobs["probe"]["strategy"]["fail-fast"] is False

    def nightly(**env: str) -> tuple[list[int], int, str]:
        if runner.artifacts.exists():
            shutil.rmtree(runner.artifacts)
        shard_results = [runner.run_job("probe", {"shard": s}, **env)[0] for s in shards]
        rc, clone, summary = runner.run_job("merge")
        assert (clone / "frontier-qa-report" / "report.md").read_text() in summary
        assert (runner.artifacts / "frontier-qa-report" / "report.html").is_file()
        return shard_results, rc, (tmp_path / "ci" / "log.txt").read_text()

    # the unchanged agent: green. Two shards get no case of the four (ids hash elsewhere): their
    # exit 3 is excused because the merged run is judged
    shard_results, rc, log = nightly()
    assert (shard_results, rc) == ([0, 0, 0, 0], 0), log
    assert log.count("got no case; the merged run is judged") == 2
    stores = sorted(p.name for p in runner.artifacts.iterdir() if p.name.startswith("frontier-qa-store-"))
    assert stores == [f"frontier-qa-store-{s}" for s in shards]
    assert not any((runner.artifacts / s / "cache").exists() for s in stores)  # the sample cache stays behind
    merged = list((runner.artifacts / "frontier-qa-merged-store" / "runs").glob("nightly-4242*.jsonl"))
    assert merged, "the merged store is uploaded for `frontier-qa export`"

    # the planted failure: verified arithmetic cases answered wrong every time; the shard holding
    # them lets its exit 1 through (its gate sees a quarter of the cases) and the merged gate fails
    (repo / "agent.py").write_text(AGENT.replace("def run(", "def _old(") + BROKEN)
    git(repo, "commit", "-qam", "broken arithmetic")
    shard_results, rc, log = nightly()
    assert (shard_results, rc) == ([0, 0, 0, 0], 1), log
    assert "2 failures (above the limit of 0)" in log

    # a shard that could not judge the agent (every call failed) fails its job with exit 3
    rc, _, _ = runner.run_job("probe", {"shard": 1}, AGENT_DOWN="1", FRONTIER_QA_TARGET__LIMITS__MAX_RETRIES="0")
    assert rc == 3

    # no shard store at all (every shard failed before uploading): exit 3, not an unmatched-glob error
    shutil.rmtree(runner.artifacts)
    rc, _, summary = runner.run_job("merge")
    assert rc == 3 and "frontier-qa wrote no report" in summary
    assert "no shard uploaded a store" in (tmp_path / "ci" / "log.txt").read_text()
