"""Running the CLI in this process from a scratch folder, as a user's shell runs it there."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from frontier_qa.cli import main


def run_cli(root: Path, capsys: pytest.CaptureFixture[str], args: Iterable[str]) -> tuple[int, str, str]:
    """``main(args)`` run with ``root`` as the working folder: (exit code, stdout, stderr) of that run alone."""
    capsys.readouterr()
    here = os.getcwd()
    os.chdir(root)
    try:
        rc = main(list(args))
    finally:
        os.chdir(here)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err
