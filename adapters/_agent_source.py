"""A Python agent's identity: a hash of its source, so an edited agent never replays old answers.

The version of a ``python:`` target is ``src.<hash>`` (with the agent's own ``version``
in front when it declares one: ``2+src.3f2a9c1b``). The hash covers:

* the agent's source file; when that file belongs to a package (its folder holds an
  ``__init__.py``), every ``.py`` file of the top-level package instead, so a change to a
  helper module counts too;
* for a lone agent file, the modules beside it that it imports (``import helpers``, ``from
  tools.search import find``: ``helpers.py``, every file of ``tools/``), anywhere in the file
  (an import inside a function counts) and through one another (what ``helpers.py`` imports
  beside it counts too). ``python agent.py`` finds them there, and so does frontier-qa, which
  puts the file's folder first on ``sys.path``; other files in the folder do not count;
* the ``agent_kwargs`` a class was instantiated with (``{"topic": "calendar"}`` is another agent).

Any edit of those files gives a new version, hence new sample-cache keys and a new version in
the records; a declared ``version`` is an *addition* to the key, never a replacement, because a
forgotten bump must not replay stale answers. Not covered: code the agent loads at run time
by other means (``importlib.import_module(name)`` with a computed name, a file loaded by path, a
model's weights, a remote service, installed packages); declare ``version`` (or
``target.version`` in the config) when those change.
"""

from __future__ import annotations

import ast
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


def _python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.relative_to(folder).parts)


def _imported_names(file: Path) -> set[str]:
    """The top-level names of the absolute imports anywhere in ``file`` (none if it does not parse)."""
    try:
        tree = ast.parse(file.read_bytes(), filename=str(file))
    except (OSError, SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _beside(folder: Path, name: str) -> Path | None:
    """What ``import name`` finds in ``folder``, in the import system's order: a package
    (``name/__init__.py``), a module (``name.py``), a namespace package (a folder with ``.py``
    files); ``None`` when nothing there.
    """
    package = folder / name
    if (package / "__init__.py").is_file():
        return package
    module = folder / f"{name}.py"
    if module.is_file():
        return module
    if package.is_dir() and _python_files(package):
        return package
    return None


def sibling_modules(path: Path) -> dict[str, Path]:
    """The modules beside the agent file ``path`` that it imports, directly or through one another.

    Args:
        path: the agent's file.

    Returns:
        Module name → its file (``helpers.py``) or package folder (``tools/``), by name; the agent
        file itself is never one of them.
    """
    folder = path.parent
    found: dict[str, Path] = {}
    todo = [path]
    while todo:
        file = todo.pop()
        for name in sorted(_imported_names(file) - set(found)):
            where = _beside(folder, name)
            if where is None or where == path:
                continue
            found[name] = where
            todo += _python_files(where) if where.is_dir() else [where]
    return dict(sorted(found.items()))


def source_files(module: ModuleType) -> list[Path]:
    """The files whose text makes up the agent (module docstring), sorted; empty for built-ins."""
    file = getattr(module, "__file__", None)
    if not file:
        return []
    path = Path(file).resolve()
    root = package_root(path)
    if root is not None:
        return _python_files(root)
    files = {path}
    for where in sibling_modules(path).values():
        files.update(_python_files(where) if where.is_dir() else [where])
    return sorted(files)


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
    path = Path(str(module.__file__)).resolve()  # there is one: files is empty without it
    root = package_root(path)
    # names relative to the package's parent, or to the lone file's folder: a lone file alone
    # hashes as before (its name), and helpers/__init__.py is not tools/__init__.py
    base = path.parent if root is None else (root.parent if len(files) > 1 else None)
    digest = fingerprint(files, agent_kwargs, base=base)
    return f"{declared}+src.{digest}" if declared else f"src.{digest}"


__all__ = ["HASH_DIGITS", "agent_version", "fingerprint", "package_root", "sibling_modules", "source_files"]
