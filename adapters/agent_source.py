"""A Python agent's identity: a hash of its source, so an edited agent never replays old answers.

The version of a ``python:`` target is ``src.<hash>`` (with the agent's own ``version``
in front when it declares one: ``2+src.3f2a9c1b``). The hash covers:

* the agent's source file; when that file belongs to a package (its folder holds an
  ``__init__.py``), every ``.py`` file of the top-level package instead, so a change to a
  helper module counts too;
* the ``agent_kwargs`` a class was instantiated with (``{"topic": "calendar"}`` is another agent).

Any edit of those files gives a new version, hence new sample-cache keys and a new version in
the records; a declared ``version`` is an *addition* to the key, never a replacement, because a
forgotten bump must not replay stale answers. Not covered: code the agent loads at run time
from outside its package (a sibling file read by path, a model's weights, a remote service);
declare ``version`` (or ``target.version`` in the config) when those change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

HASH_DIGITS = 8
"""Hex digits of the source hash shown in a version (``src.3f2a9c1b``)."""


def package_root(path: Path) -> Path | None:
    """The top-level package folder that holds ``path`` (``None`` for a lone module)."""
    folder = path.parent
    if not (folder / "__init__.py").is_file():
        return None
    while (folder.parent / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def source_files(module: ModuleType) -> list[Path]:
    """The files whose text makes up the agent (module docstring), sorted; empty for built-ins."""
    file = getattr(module, "__file__", None)
    if not file:
        return []
    path = Path(file).resolve()
    root = package_root(path)
    if root is None:
        return [path]
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def fingerprint(files: Iterable[Path], agent_kwargs: Mapping[str, Any] | None = None, base: Path | None = None) -> str:
    """A short hash of the files' paths (relative to ``base``) and bytes, and of ``agent_kwargs``."""
    digest = hashlib.sha256()
    for path in files:
        name = path.relative_to(base).as_posix() if base is not None and path.is_relative_to(base) else path.name
        digest.update(name.encode("utf-8") + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
        digest.update(b"\0")
    if agent_kwargs:
        digest.update(json.dumps(dict(agent_kwargs), sort_keys=True, default=repr).encode("utf-8"))
    return digest.hexdigest()[:HASH_DIGITS]


def agent_version(
    module: ModuleType, declared: str | None, agent_kwargs: Mapping[str, Any] | None = None
) -> str | None:
    """The version of an agent loaded from ``module``: ``[declared+]src.<hash>``.

    Args:
        module: the module the agent was loaded from.
        declared: the agent's own ``version`` (option, attribute or module-level), if any.
        agent_kwargs: the arguments its class was instantiated with.

    Returns:
        The version string; just ``declared`` when the module has no source file.
    """
    files = source_files(module)
    if not files:
        return declared
    root = package_root(files[0]) if len(files) > 1 else None
    digest = fingerprint(files, agent_kwargs, base=None if root is None else root.parent)
    return f"{declared}+src.{digest}" if declared else f"src.{digest}"


__all__ = ["HASH_DIGITS", "agent_version", "fingerprint", "package_root", "source_files"]
