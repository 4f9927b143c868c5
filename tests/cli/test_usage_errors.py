"""Every click / typer usage error exits 2 with a message, never a traceback.

The pinned typer raises its own copies of click's exception classes (``typer._click``); other
versions raise click's. The CLI recognises them by class name whichever module they come from.
This runs against the installed (pinned) typer in process, and against the newest typer in a
subprocess when CI provides it: ``.ci/run`` installs it with ``pip install --target DIR typer``
and sets ``FRONTIER_QA_NEWEST_TYPER=DIR`` (skipped, with the reason, when that did not happen,
for example with no package registry in reach).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from frontier_qa.cli import main

INVOCATIONS = [
    pytest.param(["prob"], "No such command 'prob'", id="unknown-command"),
    pytest.param(["probe", "--targt", "x"], "No such option: --targt", id="unknown-option"),
    pytest.param(["probe", "--k", "abc"], "Invalid value for '--k'", id="bad-value"),
    pytest.param([], "Commands", id="no-command"),  # the help, listing the commands
    pytest.param(["replay", "--max-replay"], "requires an argument", id="missing-value"),
    pytest.param(["score"], "Missing argument", id="missing-argument"),
    pytest.param(["accept"], "name the cases to accept, or pass --all", id="accept-without-cases"),
]


@pytest.mark.parametrize(("argv", "says"), INVOCATIONS)
def test_usage_errors_exit_2_without_a_traceback(argv: list[str], says: str, capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert says in text and "Traceback" not in text and len(text.splitlines()) < 40


NEWEST = os.environ.get("FRONTIER_QA_NEWEST_TYPER", "")

RUNNER = """
import contextlib, io, json, sys
import typer
from frontier_qa.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except BaseException as exc:  # anything escaping main is the bug this test looks for
            rc = repr(exc)
    results.append([rc, out.getvalue() + err.getvalue()])
print(json.dumps({"typer": typer.__version__, "typer_file": typer.__file__, "results": results}))
"""


@pytest.mark.skipif(not NEWEST or not Path(NEWEST).is_dir(),
                    reason="the newest typer was not installed (.ci/run sets FRONTIER_QA_NEWEST_TYPER=DIR when the "
                           "package registry is reachable)")
def test_usage_errors_exit_2_with_the_newest_typer(tmp_path: Path) -> None:
    argvs = [p.values[0] for p in INVOCATIONS]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([NEWEST, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(argvs)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True)
    found = json.loads(done.stdout.splitlines()[-1])
    assert Path(found["typer_file"]).resolve().is_relative_to(Path(NEWEST).resolve())  # really the newest one
    for param, (rc, text) in zip(INVOCATIONS, found["results"], strict=True):
        assert rc == 2, f"typer {found['typer']}: {param.values[0]} gave {rc}: {text[-500:]}"
        assert param.values[1] in text and "Traceback" not in text
