"""``@pytest.mark.frontier(...)``: its arguments checked as the keywords of a suite
(:mod:`frontier_qa.config._keywords`), a bad one a usage error that names the test and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontier_qa.config._keywords import SuiteSpec, parse_suite
from frontier_qa.errors import ConfigError
from frontier_qa.plugins.pytest_plugin import FrontierUsageError


def parse_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any], where: str, base: Path) -> SuiteSpec:
    """The marked test's suite (its relative paths resolved against ``base``, the test file's folder).

    Raises:
        FrontierUsageError: an unknown argument, a value of the wrong kind; says which and the fix.
    """
    try:
        return parse_suite(args, kwargs, where, base)
    except ConfigError as err:
        raise FrontierUsageError(f"{err.message}\n  fix: {err.hint}") from None
