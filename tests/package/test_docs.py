"""The documentation site builds with warnings as errors, and the README stays a front page.

``mkdocs build --strict`` fails on a broken link or anchor, a page missing from the nav, and a
reference page whose generator (``docs/_hooks.py``) or mkdocstrings block no longer renders, so a
renamed command, config key or exported name breaks this test, not the published site.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import REPO

README_MAX_LINES = 250


def test_the_readme_is_at_most_250_lines() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move sections to docs/"


def test_the_readme_links_every_docs_page_it_names() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in ("docs/tutorials/quickstart.md", "docs/how-to/targets.md", "docs/reference/cli.md", "docs/results.md"):
        assert f"]({page})" in readme, page
        assert (REPO / page).is_file(), page


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (the dev extra)")
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    for page in ("reference/cli", "reference/config", "reference/exit-codes", "reference/api"):
        html = (site / page / "index.html").read_text(encoding="utf-8")
        assert "<!-- generated:" not in html, f"{page}: a marker was left unreplaced"
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "frontier-qa probe" in cli and "--budget-calls" in cli
    assert "budget.max_calls" in (site / "reference" / "config" / "index.html").read_text(encoding="utf-8")
    assert "EXIT_NO_JUDGEMENT" in (site / "reference" / "exit-codes" / "index.html").read_text(encoding="utf-8")
    assert "Session" in (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
