"""Shared test settings: everything runs offline, on CPU, with no secrets from the caller."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

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


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if _MEASUREMENTS:
        terminalreporter.section("frontier-qa measurements")
        for line in _MEASUREMENTS:
            terminalreporter.write_line(line)
