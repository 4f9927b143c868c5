"""Files named by target specs in a config file are found next to that file, from any directory."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from frontier_qa.config import load_config
from frontier_qa.runtime import open_target

SCRIPT = "default: $reference\nrules:\n  - topic: weekdays\n    answers: {$reference: 1, Friday: 1}\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / "scripts").mkdir(parents=True)
    (folder / "scripts" / "mock-target.yaml").write_text(SCRIPT, encoding="utf-8")
    (folder / "probe.yaml").write_text(textwrap.dedent("""
        target: mock:scripts/mock-target.yaml
        validation:
          critic: mock:right
    """), encoding="utf-8")
    return folder


def test_a_mock_script_in_a_config_file_is_opened_from_any_directory(project: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_config(project / "probe.yaml")
    assert config.target.spec == f"mock:{(project / 'scripts' / 'mock-target.yaml').resolve()}"
    assert config.target.options == {"id": "mock:scripts/mock-target.yaml"}
    assert config.validation.critic is not None and config.validation.critic.spec == "mock:right"  # a preset: no file
    opened = open_target(config.target.spec, **config.target.options)
    # the id is the spec as written (plus the script's hash), the same from every directory
    monkeypatch.chdir(project)
    from_project = open_target("mock:scripts/mock-target.yaml")
    assert opened.id == from_project.id
    assert opened.id.startswith("mock:scripts/mock-target.yaml@")


def test_a_mock_script_given_by_a_flag_stays_relative_to_the_current_directory(project: Path,
                                                                                 tmp_path: Path) -> None:
    from frontier_qa.config import Override

    config = load_config(project / "probe.yaml",
                         [Override("target.spec", "mock:other.yaml", "--target mock:other.yaml")])
    assert config.target.spec == "mock:other.yaml"
    assert "id" not in config.target.options
    assert os.path.isabs(load_config(project / "probe.yaml").target.spec.removeprefix("mock:"))
