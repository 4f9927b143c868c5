"""The ``project`` fixture of the CLI tests: a scratch project (agent, cases) with no
``FRONTIER_QA_*`` or ``CI`` variable leaking in from the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.test_probe import Project


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Project:
    for name in list(os.environ):
        if name.startswith("FRONTIER_QA_") or name == "CI":
            monkeypatch.delenv(name)
    return Project(tmp_path, capsys)
