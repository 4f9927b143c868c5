"""Shared test settings: everything runs offline, on CPU, with no secrets from the caller."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

# Set before any test module imports litellm / transformers / vllm (docs/environment.md).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

pytest_plugins = ["pytester"]

import pytest  # noqa: E402

_MEASUREMENTS: list[str] = []


@pytest.fixture
def report_measurement(record_property):  # type: ignore[no-untyped-def]
    """Record a measured number: shown in pytest's terminal summary and in --junitxml."""

    def record(name: str, line: str) -> None:
        _MEASUREMENTS.append(line)
        record_property(name, line)

    return record


@pytest.fixture
def cpu_burners() -> Iterator[int]:
    """Two processes spinning on a core each for the test's duration: a loaded 2-core CI machine."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield len(procs)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


@pytest.fixture
def agent_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Agent files loaded in the test leave nothing behind: ``sys.path`` (their folders go first on
    it, as under ``python agent.py``), the loaded agent folders and the modules from ``tmp_path``
    are as they were before, so the next test's ``import helpers`` finds its own ``helpers.py``.
    """
    from frontier_qa.adapters import _python_agent as python_agent

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(python_agent, "_AGENT_FOLDERS", set())
    yield
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if _MEASUREMENTS:
        terminalreporter.section("frontier-qa measurements")
        for line in _MEASUREMENTS:
            terminalreporter.write_line(line)
