"""``frontier-qa init``: the files it writes load with the real loaders, and it never overwrites.

The workflow it writes is checked against GitHub's workflow schema with ``check-jsonschema
--builtin-schema vendor.github-workflows`` (the schema ships inside the package: offline);
``tests/cli/test_workflow_run.py`` runs its shell steps.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from frontier_qa.cli._init_files import INSTALL_PLACEHOLDER
from frontier_qa.cli.app import main
from frontier_qa.config import load_config
from tests.factories import REPO

EXAMPLE = REPO / "examples" / "github-actions" / "frontier-qa.yml"
EXAMPLE_ARGS = ["python:agent.py:run"]
"""The command that wrote the example workflow (in a folder holding only agent.py)."""

WRITTEN = ["frontier-qa.yaml", "tests/test_frontier.py", ".github/workflows/frontier-qa.yml"]


def init(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["init", *args, "--dir", str(root)])
    out, err = capsys.readouterr()
    return rc, out, err


def schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(path)], capture_output=True, text=True, check=False)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [n for n in __import__("os").environ if n.startswith("FRONTIER_QA_")]:
        monkeypatch.delenv(name)
    (tmp_path / "agent.py").write_text("def run(case, i):\n    return case.reference\n")
    return tmp_path


def test_init_writes_a_config_the_loader_accepts_a_test_file_and_a_valid_workflow(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out, err = init(repo, capsys, *EXAMPLE_ARGS)
    assert (rc, err) == (0, "")
    for name in WRITTEN:
        assert f"wrote {repo / name}" in out
    assert "edit FRONTIER_QA_INSTALL" in out and "2. python -m pytest tests/test_frontier.py " in out
    monkeypatch.chdir(repo)  # store and suite paths are relative to where frontier-qa runs
    cfg = load_config("frontier-qa.yaml", env={})
    # the agent file is found next to the config; the target keeps the id written there
    assert cfg.target.spec == f"python:{(repo / 'agent.py').resolve()}:run"
    assert cfg.target.options["id"] == "python:agent.py:run"
    assert (cfg.curriculum.type, cfg.curriculum.model.spec, cfg.curriculum.domain) == (
        "prompted", "litellm:openai/gpt-4o-mini", "general")
    assert (cfg.replay.suite, cfg.store, cfg.gate.max_failures, cfg.replay.gate.max_regressions) == (
        "tests/frontier_suite.yaml", ".frontier-qa", 0, 0)
    test_file = (repo / "tests" / "test_frontier.py").read_text()
    marker = next(n for n in ast.walk(ast.parse(test_file)) if isinstance(n, ast.Call)
                  and getattr(n.func, "attr", "") == "frontier")
    assert {k.arg: ast.literal_eval(k.value) for k in marker.keywords} == {
        "target": "python:../agent.py:run", "config": "../frontier-qa.yaml", "suite": "frontier_suite.yaml"}
    assert (repo / ".gitignore").read_text().splitlines()[-2:] == [".frontier-qa/", "frontier-qa-report/"]
    check = schema_check(repo / ".github" / "workflows" / "frontier-qa.yml")
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_committed_example_is_what_init_writes_for_the_example_target(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert init(repo, capsys, *EXAMPLE_ARGS)[0] == 0
    assert (repo / ".github" / "workflows" / "frontier-qa.yml").read_text() == EXAMPLE.read_text(), (
        "examples/github-actions/frontier-qa.yml is stale: regenerate it with "
        f"`frontier-qa init {' '.join(EXAMPLE_ARGS)}` in a folder holding only agent.py")
    assert schema_check(EXAMPLE).returncode == 0


def test_the_schema_check_rejects_a_broken_workflow(tmp_path: Path) -> None:
    """The check can fail: a job without runs-on and a step with neither run nor uses."""
    bad = yaml.safe_load(EXAMPLE.read_text())
    del bad["jobs"]["replay"]["runs-on"]
    (tmp_path / "bad.yml").write_text(yaml.safe_dump(bad))
    check = schema_check(tmp_path / "bad.yml")
    assert check.returncode == 1 and "runs-on" in check.stdout


def test_a_repository_with_a_package_gets_pip_install_e_and_a_pip_cache(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "pyproject.toml").write_text("[project]\nname = 'my-agent'\n")
    (repo / "requirements.txt").write_text("httpx\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "cases.jsonl").write_text('{"id": "a", "prompt": "1 + 1?", "reference": "2"}\n')
    rc, _, _ = init(repo, capsys, "python:agent.py:run", "--curriculum", "tests/cases.jsonl",
                    "--install", "git+https://github.com/acme/frontier-qa.git@v0.1.0")
    assert rc == 0
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "frontier-qa.yml").read_text())
    setup = workflow["jobs"]["replay"]["steps"][1]["with"]
    assert (setup["cache"], setup["cache-dependency-path"]) == ("pip", "requirements.txt")
    install = workflow["jobs"]["replay"]["steps"][2]["run"]
    assert "pip install -r requirements.txt" in install and "pip install -e ." in install
    assert workflow["env"]["FRONTIER_QA_INSTALL"] == "git+https://github.com/acme/frontier-qa.git@v0.1.0"
    assert "env" not in workflow["jobs"]["probe"]  # a cases file and a python: agent need no API key
    assert 'curriculum="cases.jsonl"' in (repo / "tests" / "test_frontier.py").read_text()
    # the example (no package, no requirements) has no pip cache: setup-python would fail without the file
    example = yaml.safe_load(EXAMPLE.read_text())
    assert "cache" not in example["jobs"]["replay"]["steps"][1]["with"]
    assert example["env"]["FRONTIER_QA_INSTALL"] == INSTALL_PLACEHOLDER
    assert example["jobs"]["probe"]["env"] == {"OPENAI_API_KEY": "${{ secrets.OPENAI_API_KEY }}"}


def test_init_refuses_to_overwrite_and_writes_nothing(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "frontier-qa.yaml").write_text("mine\n")
    (repo / ".gitignore").write_text("build/\n")
    rc, out, err = init(repo, capsys, "python:agent.py:run")
    assert rc == 2 and out == ""
    assert "frontier-qa.yaml already exist" in err and "nothing was written" in err and "--force" in err
    assert (repo / "frontier-qa.yaml").read_text() == "mine\n"
    assert not (repo / "tests").exists() and not (repo / ".github").exists()
    assert (repo / ".gitignore").read_text() == "build/\n"
    rc, out, _ = init(repo, capsys, "python:agent.py:run", "--force")
    assert rc == 0 and f"wrote {repo / 'frontier-qa.yaml'} (overwritten)" in out
    assert (repo / "frontier-qa.yaml").read_text().startswith("# frontier-qa configuration")


def test_gitignore_lines_are_appended_once(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".gitignore").write_text("build/\n.frontier-qa\n")  # the store already ignored, without the slash
    assert init(repo, capsys, "python:agent.py:run")[0] == 0
    text = (repo / ".gitignore").read_text()
    assert text.startswith("build/\n.frontier-qa\n\n# frontier-qa") and text.endswith("\nfrontier-qa-report/\n")
    rc, out, _ = init(repo, capsys, "python:agent.py:run", "--force")
    assert rc == 0 and "added " not in out and (repo / ".gitignore").read_text() == text


@pytest.mark.parametrize(("target", "message"), [
    ("agent.py", "has no scheme"),
    ("pythn:agent.py:run", "unknown target scheme 'pythn'"),
    ("python:agent.py", "names no function or class"),
    ("python:missing.py:run", "the agent file missing.py does not exist"),
    ("python:/elsewhere/agent.py:run", "outside the repository"),
])
def test_a_bad_target_is_a_usage_error_that_writes_nothing(
        repo: Path, capsys: pytest.CaptureFixture[str], target: str, message: str) -> None:
    rc, out, err = init(repo, capsys, target)
    assert rc == 2 and message in err and "Traceback" not in err
    assert sorted(p.name for p in repo.iterdir()) == ["agent.py"]


def test_bad_curriculum_domain_and_dir_are_usage_errors(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "neither a cases file nor prompted" in init(repo, capsys, "python:agent.py:run", "--curriculum", "gpt")[2]
    assert "cases file nope.jsonl does not exist" in init(
        repo, capsys, "python:agent.py:run", "--curriculum", "nope.jsonl")[2]
    assert "unknown domain 'maths'" in init(repo, capsys, "python:agent.py:run", "--domain", "maths")[2]
    capsys.readouterr()
    assert main(["init", "python:agent.py:run", "--dir", str(repo / "nowhere")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert sorted(p.name for p in repo.iterdir()) == ["agent.py"]
