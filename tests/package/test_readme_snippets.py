"""README and docs snippets run as written, so they cannot drift from the code.

The blocks are collected from README.md and every page under docs/ (``docs/**/*.md``). A fenced block preceded by an HTML comment ``<!-- run: KEY=VALUE ... -->`` (values as in a
shell: ``then="pytest -q x.py"``) is executed in a temporary folder:

``session=NAME``  blocks of one session share a folder and run in page order (default: a folder
                  of its own); sessions are per page (``docs/how-to/cli.md:cli``), so two pages may
                  use one name; a session first writes all its ``file=`` blocks, then runs
``setup=agent``   the folder starts with a scripted agent, as a user's project would have one:
                  ``agent.py`` (``python:agent.py:run``: right on arithmetic, a coin on weekdays),
                  ``cases.jsonl`` and ``my-probe.yaml`` (a file curriculum, the default policy)
``file=PATH``     write the block to PATH instead of running it
``then=CMD``      after writing ``file=``, run this shell command
``exit=CODES``    the exit status of each command, in order, comma-separated (default 0); ``skip``
                  leaves a command out (it needs a paid model or files the snippet does not show)

``bash`` blocks run one command per line (``\\`` continues a line; ``#`` comments are shell
comments), each through ``bash -c`` with this interpreter's folder first on ``PATH`` (the
``frontier-qa`` of the environment under test); ``python`` blocks run with this interpreter.
The machine is offline: only snippets whose targets are scripted agents (``python:agent.py:run``,
``mock:``) are marked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.factories import REPO

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]
_MARKER = re.compile(r"^<!-- run:(?P<args>.*?)-->\s*\n```(?P<lang>\w*)\n(?P<body>.*?)^```", re.M | re.S)
_KEYS = {"session", "setup", "file", "then", "exit"}

AGENT = '''
version = "1"


def run(case, sample_index):
    if case.topic == "weekdays":  # unsure: a coin between the reference and another day
        return "\\\\boxed{%s}" % (case.reference if sample_index % 2 == 0 else "Friday")
    return "\\\\boxed{%s}" % case.reference
'''
CASES = [
    {"prompt": "What is 17 + 25?", "reference": "42", "reference_verified": True, "topic": "arithmetic"},
    {"prompt": "What is 6 times 7, minus 1?", "reference": "41", "reference_verified": True, "topic": "arithmetic"},
    {"prompt": "Which weekday comes 3 days after Friday?", "reference": "Monday", "topic": "weekdays"},
]
MY_PROBE = "curriculum: {type: file, path: cases.jsonl}\n"  # the default policy: up to 30 samples a case


@dataclass
class Snippet:
    """One marked block: where it is, what it says, how to run it."""

    line: int
    lang: str
    body: str
    options: dict[str, str]
    commands: list[str] = field(default_factory=list)
    page: str = "README.md"

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def session(self) -> str:
        """Its session's key: the page and the name, or the block alone (``page:line``)."""
        return f"{self.page}:{self.options['session']}" if "session" in self.options else self.name

    def exits(self) -> list[str]:
        wanted = self.options.get("exit", "0").split(",")
        runs = self.commands if self.options.get("file") is None else [self.options.get("then", "")]
        if len(wanted) == 1:
            wanted = wanted * len(runs)
        assert len(wanted) == len(runs), f"{self.name}: exit= names {len(wanted)} codes for {len(runs)} commands"
        return wanted


def _commands(body: str) -> list[str]:
    """A bash block's commands: one a line, ``\\`` continuing it; blank and comment lines dropped."""
    out, parts = [], []
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1].strip())
            continue
        command = " ".join([*parts, line.strip()]).strip()
        parts = []
        if command and not command.startswith("#"):
            out.append(command)
    return out


def snippets(text: str, page: str = "README.md") -> list[Snippet]:
    """Every marked block of a Markdown text (``page``: its path from the repository root, for messages)."""
    found = []
    for match in _MARKER.finditer(text):
        options = dict(part.split("=", 1) for part in shlex.split(match["args"]))
        unknown = set(options) - _KEYS
        line = text.count("\n", 0, match.start()) + 1
        assert not unknown, f"{page}:{line}: unknown run option(s) {sorted(unknown)}; known: {sorted(_KEYS)}"
        snippet = Snippet(line, match["lang"], match["body"], options, page=page)
        if snippet.lang == "bash" and "file" not in options:
            snippet.commands = _commands(snippet.body)
        elif "file" not in options:
            assert snippet.lang == "python", f"{snippet.name}: only bash and python blocks run (or give file=)"
            snippet.commands = [f"{shlex.quote(sys.executable)} snippet.py"]
        found.append(snippet)
    return found


def _setup(folder: Path) -> None:
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (folder / "my-probe.yaml").write_text(MY_PROBE)


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_QA_") and k != "CI"}
    bins = [str(Path(sys.executable).parent)]
    # an environment without the script (or without a `python` beside this interpreter, which the
    # README's `python -m pytest` needs): this interpreter, under that name
    shims = {"pytest": f'exec {shlex.quote(sys.executable)} -m pytest "$@"',
             "python": f'exec {shlex.quote(sys.executable)} "$@"'}
    missing = {name: body for name, body in shims.items() if shutil.which(name, path=bins[0]) is None}
    if missing:
        shim = folder.parent / f"{folder.name}-bin"
        shim.mkdir(exist_ok=True)
        for name, body in missing.items():
            (shim / name).write_text(f"#!/bin/sh\n{body}\n")
            (shim / name).chmod(0o755)
        bins.append(str(shim))
    env["PATH"] = os.pathsep.join([*bins, env.get("PATH", "")])
    env["PYTHONPATH"] = ""  # the snippet sees the installed frontier-qa, not this checkout's tests
    return env


def _run(command: str, folder: Path, expected: str, where: str) -> None:
    done = subprocess.run(["bash", "-c", command], cwd=folder, env=_env(folder), capture_output=True, text=True,
                          timeout=300)
    assert str(done.returncode) == expected, (
        f"{where}: `{command}` exited {done.returncode}, the page says {expected}\n"
        f"--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}")


def sessions(found: list[Snippet]) -> dict[str, list[Snippet]]:
    """The marked blocks grouped by session (page and name), in page order (an unnamed block is its own)."""
    out: dict[str, list[Snippet]] = {}
    for s in found:
        out.setdefault(s.session, []).append(s)
    return out


FOUND = [s for page in PAGES for s in snippets(page.read_text(encoding="utf-8"), page.relative_to(REPO).as_posix())]


def test_the_readme_and_the_docs_mark_the_snippets_that_run_offline() -> None:
    names = {s.options.get("session") for s in FOUND}
    assert {"cli", "mock", "pytest", "gen"} <= names, names
    assert any("frontier-qa cases" in c for s in FOUND for c in s.commands)
    assert any(s.page == "README.md" for s in FOUND), "the README's pytest example runs too"


def test_the_docs_pages_are_collected() -> None:
    pages = {p.relative_to(REPO).as_posix() for p in PAGES}
    assert {"README.md", "docs/how-to/cli.md", "docs/how-to/offline.md", "docs/how-to/pytest.md"} <= pages, pages


@pytest.mark.parametrize("session", list(sessions(FOUND)))
def test_a_readme_session_runs_as_written(session: str, tmp_path: Path) -> None:
    blocks = sessions(FOUND)[session]
    if any(b.options.get("setup") == "agent" for b in blocks):
        _setup(tmp_path)
    for block in blocks:  # files first: a snippet may show a file after the command that reads it
        if "file" in block.options:
            path = tmp_path / block.options["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.body)
    for block in blocks:
        if "file" in block.options:
            if "then" in block.options:
                _run(block.options["then"], tmp_path, block.exits()[0], block.name)
            continue
        if block.lang == "python":
            (tmp_path / "snippet.py").write_text(block.body)
        for command, expected in zip(block.commands, block.exits(), strict=True):
            if expected != "skip":
                _run(command, tmp_path, expected, block.name)


def test_the_marker_syntax_is_read_as_documented() -> None:
    text = ('<!-- run: session=s setup=agent exit=0,skip,1 -->\n```bash\nfrontier-qa a \\\n  --b\n# note\n'
            'frontier-qa c  # why\nfrontier-qa d\n```\n\n```bash\nnot marked\n```\n'
            '<!-- run: session=s file=t.py then="pytest -q t.py" exit=1 -->\n```python\nx = 1\n```\n')
    first, second = snippets(text, "docs/x.md")
    assert (first.name, first.session) == ("docs/x.md:1", "docs/x.md:s")
    assert (first.line, first.commands, first.exits()) == (
        1, ["frontier-qa a --b", "frontier-qa c  # why", "frontier-qa d"], ["0", "skip", "1"])
    assert (second.options, second.commands, second.exits()) == (
        {"session": "s", "file": "t.py", "then": "pytest -q t.py", "exit": "1"}, [], ["1"])
    assert list(sessions([first, second])) == ["docs/x.md:s"]
    with pytest.raises(AssertionError, match="docs/y.md:1: unknown run option"):
        snippets("<!-- run: sesion=s -->\n```bash\nx\n```\n", "docs/y.md")
