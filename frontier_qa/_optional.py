"""Import optional dependencies lazily, with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from frontier_qa.errors import MissingExtraError


def require(module: str, *, extra: str, purpose: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``extra``.

    Args:
        module: dotted module name to import.
        extra: the frontier-qa extra that installs it (``embed``, ``train``, ``vllm``...).
        purpose: what needs it, in the user's words ("Open-ended self-consistency").
        package: the pip package name when it differs from the module name.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised through MissingExtraError tests
        root = module.split(".")[0]
        if getattr(exc, "name", None) not in (None, module, root):
            raise  # the module exists but one of *its* imports is broken: show that
        raise MissingExtraError(package or root, extra, purpose) from exc
