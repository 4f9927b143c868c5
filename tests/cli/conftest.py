"""Fixtures of the CLI tests: ``clean_env`` (no ``FRONTIER_QA_*`` or ``CI`` variable leaking in
from the environment) and ``project``, a scratch project (agent, cases) in such an environment.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.test_probe import Project


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unsets every ``FRONTIER_QA_*`` variable and ``CI`` for the test."""
    for name in list(os.environ):
        if name.startswith("FRONTIER_QA_") or name == "CI":
            monkeypatch.delenv(name)


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str], clean_env: None) -> Project:
    return Project(tmp_path, capsys)
