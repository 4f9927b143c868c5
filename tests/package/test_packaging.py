"""The package installs as one distribution, stays light to import, and ships its CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.factories import REPO

HEAVY = ("torch", "transformers", "trl", "vllm", "sentence_transformers", "peft", "litellm")


def _python(code: str, *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("imports", [
    "frontier_qa, frontier_qa.target, frontier_qa.errors, frontier_qa.scoring.consistency, frontier_qa.adapters, "
    "frontier_qa.plugins",
    # the scoring core alone (what a user's own harness imports)
    "frontier_qa.scoring.answers, frontier_qa.scoring._equivalence, frontier_qa.scoring.rewards, "
    "frontier_qa.scoring.bands, frontier_qa.scoring._semantic",
    # the trainer modules and their CLI: the models load only when training starts
    "frontier_qa.train, frontier_qa.train.config, frontier_qa.train._prompts, frontier_qa.train._reward, "
    "frontier_qa.train._tasks, frontier_qa.train._curriculum, frontier_qa.cli._train",
], ids=["package", "scoring-core", "trainers"])
def test_import_is_light(imports: str, tmp_path: Path) -> None:
    out = _python(f"import sys, {imports}; print([m for m in {HEAVY!r} if m in sys.modules])", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_no_generic_top_level_modules(tmp_path: Path) -> None:
    # Run outside the repo so the source folders are not on sys.path.
    out = _python("import adapters", cwd=tmp_path)
    assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr
    out = _python("import plugins", cwd=tmp_path)
    assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr


def test_console_script_version_and_help(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("frontier-qa")
    assert exe.exists(), "frontier-qa console script not installed"
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert version.returncode == 0
    import frontier_qa

    assert version.stdout.strip() == f"frontier-qa {frontier_qa.__version__}"
    helped = subprocess.run([exe, "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert helped.returncode == 0 and "frontier-qa" in helped.stdout


@pytest.mark.slow
def test_built_wheel_imports_subpackages(tmp_path: Path) -> None:
    """Build the real wheel, install it alone into a folder, import from there."""
    # build from a clean copy: an in-tree build reuses build/lib, which keeps modules that
    # pyproject no longer lists, and leaves build/ and *.egg-info in the checkout
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".frontier-qa", ".pytest_cache", "runs",
        ".mypy_cache", ".ruff_cache"))
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    (wheel,) = dist.glob("frontier_qa-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    # every module of the source tree, at its installed path (a package missing from
    # pyproject's list would be left out of the wheel silently)
    sources = {"frontier_qa": REPO / "frontier_qa", "frontier_qa/adapters": REPO / "adapters",
               "frontier_qa/plugins": REPO / "plugins"}
    expected = {f"{prefix}/{path.relative_to(folder).as_posix()}"
                for prefix, folder in sources.items() for path in folder.rglob("*.py")}
    assert expected - set(names) == set()
    assert "frontier_qa/py.typed" in names
    # pytest is a core dependency: the plugin is one of the ways in, `pip install .` included
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(info).decode().splitlines()
                if line.startswith("Requires-Dist: pytest")]
    assert requires[0] == "Requires-Dist: pytest<10,>=8", requires
    tops = {n.split("/")[0] for n in names}
    assert tops <= {"frontier_qa", f"frontier_qa-{wheel.name.split('-')[1]}.dist-info"}, tops

    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = _python(
        "import frontier_qa, frontier_qa.adapters, frontier_qa.plugins;"
        "print(frontier_qa.__file__); print(frontier_qa.adapters.__file__)",
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.split()
    assert first.startswith(str(target)) and second.startswith(str(target)), out.stdout


def test_python_dash_m_runs_the_same_cli(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "frontier_qa", "--help"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr
    for command in ("probe", "replay", "export", "merge", "schema", "score"):
        assert command in out.stdout


MARKED = """import pytest


@pytest.mark.frontier(target="python:agent.py:run", curriculum="cases.jsonl")
def test_agent(frontier_case):
    frontier_case.assert_no_regression()
"""


def test_the_docs_words_for_a_pytest_without_the_plugin_are_what_pytest_prints(tmp_path: Path) -> None:
    """A pytest that is not frontier-qa's environment's runs a marked test without the plugin; the
    docs' pytest page quotes what it prints, so a user who searches for it finds the fix.
    """
    readme = (REPO / "docs" / "how-to" / "pytest.md").read_text()
    (tmp_path / "test_agent.py").write_text(MARKED)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def without_plugin(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:frontier_qa", "-p", "no:cacheprovider",
                               *args, "test_agent.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)

    plain, strict = without_plugin(), without_plugin("--strict-markers")
    assert plain.returncode == 1 and strict.returncode == 2, plain.stdout + strict.stdout
    for line, output in (("PytestUnknownMarkWarning: Unknown pytest.mark.frontier - is this a typo?", plain.stdout),
                         ("E       fixture 'frontier_case' not found", plain.stdout),
                         ("'frontier' not found in `markers` configuration option", strict.stdout)):
        assert line in output, output
        assert line in readme, line
    words = " ".join(readme.split())
    assert "run `python -m pytest` with the `python` of the environment frontier-qa is installed in" in words
