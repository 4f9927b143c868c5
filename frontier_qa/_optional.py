"""Import optional dependencies lazily, with an error that names the extra to install; import the
user's own modules (a ``FILE.py:NAME`` or ``MODULE:NAME`` reference) with an error that says what to fix.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from frontier_qa.errors import ConfigError, MissingExtraError


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


# How model libraries say that a package is missing, when they say it in a message rather than
# with ``ImportError.name`` (transformers checks most optional backends itself, e.g.
# "accelerate is required when loading a GGUF file `pip install accelerate`" as a ValueError, or
# "X requires the protobuf library but it was not found in your environment").
_NAME = r"([A-Za-z][A-Za-z0-9_.\-]*)"
_MISSING_PATTERNS = (
    re.compile(r"^\W*" + _NAME + r" is required\b", re.IGNORECASE),  # "accelerate is required when ..."
    re.compile(r"requires the " + _NAME + r" library", re.IGNORECASE),  # requires_backends(...)
    re.compile(r"requires (?:both \w+ and )?" + _NAME + r"\s*>=", re.IGNORECASE),  # "PyTorch and GGUF>=0.10.0"
    re.compile(r"`pip install ['\"]?" + _NAME),  # "... `pip install 'accelerate>=0.26.0'`"
)
_MISSING_WORDS = ("is required", "requires", "not installed", "not found in your environment", "pip install")


def missing_package(exc: BaseException) -> str | None:
    """The pip package an exception says is missing, or ``None`` when it says no such thing.

    Reads ``ImportError.name`` (``No module named 'gguf'``) and the messages model libraries use
    for their optional backends (``... `pip install accelerate` ``, ``requires the protobuf
    library``). Only ``ImportError`` and ``ValueError`` are read: other errors are never taken for
    a missing package.
    """
    if not isinstance(exc, ImportError | ValueError):
        return None
    name = getattr(exc, "name", None)
    if isinstance(exc, ImportError) and name:
        return str(name).split(".")[0]
    text = str(exc)
    if not any(word in text for word in _MISSING_WORDS):
        return None
    for pattern in _MISSING_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(1).lower()
    return None


@contextlib.contextmanager
def missing_extras(extra: str, purpose: str) -> Iterator[None]:
    """Turn "package X is missing" errors raised inside the block into :class:`MissingExtraError`.

    Model loading (transformers' ``from_pretrained``, GGUF conversion, vLLM engines) checks some
    optional packages only when a file needs them; without this the user sees a raw traceback
    instead of the extra to install.

    Args:
        extra: the frontier-qa extra that installs every package the block may need.
        purpose: what the block does, in the user's words.
    """
    try:
        yield
    except MissingExtraError:
        raise
    except (ImportError, ValueError) as exc:
        package = missing_package(exc)
        if package is None:
            raise
        raise MissingExtraError(package, extra, purpose) from exc


__all__ = ["missing_extras", "missing_package", "require"]


def import_module_ref(module_ref: str, what: str, error: type[ConfigError] = ConfigError) -> ModuleType:
    """Import the module of a ``MODULE:NAME`` reference, or raise ``error`` when it cannot be found.

    Args:
        module_ref: the dotted module name.
        what: what the module holds, in the user's words (``"agent"``, ``"generator"``).
        error: the :class:`ConfigError` class to raise.
    """
    try:
        return importlib.import_module(module_ref)
    except ImportError as exc:
        raise error(f"cannot import {what} module {module_ref!r}: {exc}",
                    hint="install the package or run from the folder that contains it") from exc


def exec_file_module(name: str, path: Path) -> ModuleType:
    """Run the Python file ``path`` as the module ``name``, registered in :data:`sys.modules` (dataclasses
    and pickling look modules up by name) and taken out again when the file raises.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
