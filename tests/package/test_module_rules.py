"""Modules a newcomer can find their way in (issue 30): one job, one name, public only on purpose.

* No source module over 600 lines unless its docstring says why: a module that really needs the
  length for one job says so on a line starting ``Long by design:``, followed by the reason; every
  other module of ``frontier_qa/``, ``adapters/`` and ``plugins/`` stays within :data:`LIMIT` lines.
* No two modules share a name (``case.py`` three times had three jobs).
* Inside the packages, a module is private (``_name.py``) unless it is in :data:`PUBLIC_MODULES`:
  the packages' ``__init__`` files are the API, plus the entry points and the modules the docs tell
  users to import from. Making another module public is a decision: add it here, with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.factories import REPO

LIMIT = 600
FOLDERS = ("frontier_qa", "adapters", "plugins")
REASON = "Long by design:"
PACKAGES = ("frontier_qa/*/", "adapters/", "plugins/")
PUBLIC_MODULES = {
    "frontier_qa/cli/app.py": "the console script's entry point (pyproject [project.scripts])",
    "plugins/pytest_plugin.py": "the pytest11 entry point",
    "adapters/workflow.py": "agent authors import AgentContext and record_tool",
    "adapters/tool_executor.py": "tool-using agents parse and format code blocks with it",
    "frontier_qa/runtime/sandbox.py": "agents run model-written code in its Sandbox",
    "frontier_qa/scoring/answers.py": "the scoring core (docs/how-to/scoring.md)",
    "frontier_qa/scoring/consistency.py": "the scoring core",
    "frontier_qa/scoring/bands.py": "the scoring core",
    "frontier_qa/scoring/rewards.py": "the scoring core",
    "frontier_qa/train/config.py": "the training config's sections, built in Python (docs/how-to/coevolution.md)",
    "frontier_qa/train/adpo.py": "ADPO's advantage and clip schedule, for users composing TRL",
    "frontier_qa/train/adpo_trainer.py": "ADPOTrainer, a GRPOTrainer subclass",
    "frontier_qa/train/tool_rollout.py": "TRL's rollout_func for multi-turn tool use",
}


def _sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py"))


def _says_why(path: Path) -> bool:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return any(line.startswith(REASON) and len(line) > len(REASON) + 10 for line in doc.splitlines())


def test_no_module_is_over_the_limit_without_a_reason() -> None:
    too_long = []
    for path in _sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT and not _says_why(path):
            too_long.append(f"{path.relative_to(REPO)}: {lines} lines")
    assert too_long == [], f"split these along a real seam, or say why in the docstring ({REASON} ...)"


def _package_modules() -> list[Path]:
    return sorted(p for pattern in PACKAGES for p in REPO.glob(pattern + "*.py") if p.name != "__init__.py")


def test_modules_inside_packages_are_private_unless_listed() -> None:
    public = sorted(str(p.relative_to(REPO)) for p in _package_modules() if not p.name.startswith("_"))
    assert public == sorted(PUBLIC_MODULES), "name a module _x.py, or list it in PUBLIC_MODULES with its reason"


def test_no_two_modules_share_a_name() -> None:
    seen: dict[str, list[str]] = {}
    for path in _sources():
        if path.name != "__init__.py":
            seen.setdefault(path.name.lstrip("_"), []).append(str(path.relative_to(REPO)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_the_check_sees_the_reason_only_in_the_docstring(tmp_path: Path) -> None:
    said = tmp_path / "said.py"
    said.write_text('"""A module.\n\nLong by design: one job that needs the room.\n"""\n')
    unsaid = tmp_path / "unsaid.py"
    unsaid.write_text('"""A module."""\n# Long by design: a comment is not the docstring\n')
    assert _says_why(said) and not _says_why(unsaid)
    assert len(_sources()) > 100  # the folders were found
