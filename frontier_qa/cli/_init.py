"""``frontier-qa init TARGET``: set a repository up for frontier-qa, with no prompts.

It writes, into the current folder (or ``--dir``), the repository root:

* ``frontier-qa.yaml``: the target, the curriculum, budgets, gates and the committed suite;
* ``tests/test_frontier.py``: a pytest test with ``@pytest.mark.frontier`` for the target;
* ``.github/workflows/frontier-qa.yml``: replay on pull requests, a sharded probe nightly;
* the ``.gitignore`` lines for the case store and the report folder (appended when missing).

It never overwrites: when one of the files exists it names them and the flag that replaces
them (``--force``), and writes nothing (exit 2). The files are rendered by
:mod:`frontier_qa.cli._init_files`; ``examples/github-actions/frontier-qa.yml`` is its output
for the example target (a test keeps them equal).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import typer

from frontier_qa.cli._init_files import (
    GITIGNORE_LINES,
    INSTALL_PLACEHOLDER,
    Layout,
    config_text,
    is_file_spec,
    workflow_text,
)
from frontier_qa.cli._init_files import test_text as pytest_text
from frontier_qa.curricula._spec import DOMAINS
from frontier_qa.errors import ConfigError
from frontier_qa.exit_codes import EXIT_OK, EXIT_USAGE

_EXAMPLES = "python:agent.py:run, python:my_pkg.agent:run, http://127.0.0.1:9000/agent, litellm:openai/gpt-4o-mini"
_DOMAINS = DOMAINS


def _inside(root: Path, text: str, what: str) -> str:
    """``text`` as a POSIX path relative to ``root``; it must exist there."""
    path = Path(text)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(root.resolve())
        except ValueError:
            raise ConfigError(f"{what} {text} is outside the repository {root}",
                              hint="CI checks out only the repository: keep the file inside it") from None
    if not (root / path).is_file():
        raise ConfigError(f"{what} {text} does not exist in {root}",
                          hint="give its path relative to the repository root (run init there, or pass --dir)")
    return PurePosixPath(path.as_posix()).as_posix()


def check_target(spec: str, root: Path) -> str:
    """The target spec as the repository root sees it; a :class:`ConfigError` when it is no spec."""
    from frontier_qa.adapters import parse_spec, schemes

    if not spec.strip():
        raise ConfigError("TARGET is empty", hint=f"give a target spec, e.g. {_EXAMPLES}")
    scheme, rest = parse_spec(spec)
    if scheme == "tools":
        scheme, rest = parse_spec(rest)
    if scheme not in schemes():
        raise ConfigError(f"unknown target scheme {scheme!r} in {spec!r}",
                          hint=f"use one of: {', '.join(schemes())}; e.g. {_EXAMPLES}")
    if scheme == "python":
        module_ref, colon, attr = rest.rpartition(":")
        if not colon or not module_ref or not attr.isidentifier():
            raise ConfigError(f"python target {spec!r} names no function or class",
                              hint="write python:FILE.py:NAME or python:package.module:NAME, e.g. python:agent.py:run")
        if is_file_spec(spec):
            return f"python:{_inside(root, module_ref, 'the agent file')}:{attr}"
    return spec.strip()


def check_curriculum(text: str, root: Path) -> str:
    """A cases file (relative to the root) or ``prompted:MODEL_SPEC``."""
    if text.startswith("prompted:"):
        model = text.removeprefix("prompted:")
        if ":" not in model:
            raise ConfigError(f"curriculum {text!r} names no model spec",
                              hint="write prompted:MODEL_SPEC, e.g. prompted:litellm:openai/gpt-4o-mini")
        return text
    if not text.endswith((".jsonl", ".json", ".yaml", ".yml")):
        raise ConfigError(f"curriculum {text!r} is neither a cases file nor prompted:MODEL_SPEC",
                          hint="give a *.jsonl / *.yaml cases file in the repository, "
                          "or prompted:litellm:openai/gpt-4o-mini")
    return _inside(root, text, "the cases file")


def _project_files(root: Path) -> tuple[str | None, str | None]:
    requirements = next((n for n in ("requirements.txt", "requirements-dev.txt") if (root / n).is_file()), None)
    project = next((n for n in ("pyproject.toml", "setup.py") if (root / n).is_file()), None)
    return requirements, project


def _gitignore(path: Path) -> tuple[str, list[str]]:
    """The new text of ``.gitignore`` and the lines it gains."""
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    have = {line.strip().rstrip("/") for line in old.splitlines()}
    missing = [line for line in GITIGNORE_LINES if line.rstrip("/") not in have]
    if not missing:
        return old, []
    head = "" if not old else ("\n" if old.endswith("\n") else "\n\n")
    return old + head + "# frontier-qa: the case store (export a suite to commit cases) and reports\n" + \
        "".join(f"{line}\n" for line in missing), missing


def init_command(
    target: str = typer.Argument(..., help=f"The agent under test, e.g. {_EXAMPLES}."),
    directory: Path = typer.Option(Path("."), "--dir", help="The repository root to write into (default: here)."),
    curriculum: str = typer.Option(
        "prompted:litellm:openai/gpt-4o-mini", "--curriculum",
        help="Where cases come from: a cases file in the repository, or prompted:MODEL_SPEC."),
    domain: str = typer.Option("general", "--domain", help="Prompted curriculum: " + ", ".join(_DOMAINS) + "."),
    topic: list[str] = typer.Option([], "--topic", help="Prompted curriculum: a topic to cover (repeatable)."),
    install: str = typer.Option(
        INSTALL_PLACEHOLDER, "--install",
        help="What the workflow pip-installs frontier-qa from (it is not on PyPI): a git URL or a wheel."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
) -> None:
    """Write a config, a pytest test, a GitHub Actions workflow and .gitignore lines for TARGET."""
    root = directory
    if not root.is_dir():
        raise ConfigError(f"--dir {root} is not a folder", hint="create it, or run init in the repository root")
    if domain not in _DOMAINS:
        raise ConfigError(f"unknown domain {domain!r}", hint=f"use one of: {', '.join(_DOMAINS)}")
    requirements, project = _project_files(root)
    layout = Layout(target=check_target(target, root), curriculum=check_curriculum(curriculum, root),
                    domain=domain, topics=tuple(topic), install=install, requirements=requirements, project=project)
    files = {layout.config: config_text(layout), layout.test_file: pytest_text(layout),
             layout.workflow: workflow_text(layout)}
    existing = [name for name in files if (root / name).exists()]
    if existing and not force:
        typer.echo(f"error: {', '.join(existing)} already exist(s) in {root}; nothing was written", err=True)
        typer.echo("  fix: move them aside, or pass --force to overwrite them", err=True)
        raise typer.Exit(EXIT_USAGE)
    ignore_text, ignored = _gitignore(root / ".gitignore")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
        typer.echo(f"wrote {root / name}" + (" (overwritten)" if name in existing else ""))
    if ignored:
        (root / ".gitignore").write_text(ignore_text, encoding="utf-8")
        typer.echo(f"added {', '.join(ignored)} to {root / '.gitignore'}")
    _next_steps(layout)
    raise typer.Exit(EXIT_OK)


def _next_steps(layout: Layout) -> None:
    typer.echo("\nnext:")
    if layout.install == INSTALL_PLACEHOLDER:
        typer.echo(f"  1. edit FRONTIER_QA_INSTALL in {layout.workflow}: where CI installs frontier-qa from")
    else:
        typer.echo(f"  1. check the install step in {layout.workflow}")
    # `python -m`: the pytest of this environment, which has frontier-qa's plugin (a pytest from
    # elsewhere reports "Unknown pytest.mark.frontier" and "fixture 'frontier_case' not found")
    typer.echo(f"  2. python -m pytest {layout.test_file}       # probe, write {layout.suite}")
    typer.echo(f"  3. git add {layout.config} {layout.test_file} {layout.suite} {layout.workflow} .gitignore")
    typer.echo("     (pull requests then replay the suite; nightly runs probe for new cases)")
    typer.echo(f"  later: frontier-qa replay --config {layout.config}   # what a pull request runs")


def register(app: typer.Typer) -> None:
    """Add ``init`` to ``app``."""
    app.command("init")(init_command)


__all__ = ["check_curriculum", "check_target", "init_command", "register"]
