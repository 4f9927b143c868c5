"""Write the ``if TYPE_CHECKING:`` mirror of ``_EXPORTS`` into each lazy package's ``__init__.py``.

The lazy packages import their public names on first use (PEP 562), which type checkers cannot
follow; the mirror (``from module import Name as Name`` under ``if TYPE_CHECKING:``, with the
runtime ``__getattr__`` in its ``else:``) is what mypy and pyright read instead. Run this after
changing an ``_EXPORTS`` map, then ``python -m ruff check --fix`` to sort the imports;
tests/package/test_typed_exports.py fails while the two disagree.

Usage: python .ci/write_typed_exports.py [PACKAGE ...]   (default: every lazy package)
"""

from __future__ import annotations

import importlib
import re
import sys

PACKAGES = ["frontier_qa", "frontier_qa.probing", "frontier_qa.runtime", "frontier_qa.curricula",
            "frontier_qa.train", "frontier_qa.store"]
BEGIN = "if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use"
RUNTIME = "__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())"


def block(exports: dict[str, str]) -> list[str]:
    """The ``if TYPE_CHECKING:`` lines for ``exports`` (name -> module), one import per name.

    One ``from module import Name as Name`` line per name (isort's order; pyproject keeps
    ``combine-as-imports`` off so that ruff leaves them so): six packages' mirrors wrapped in
    parentheses were the same column of ``Name as Name,`` lines over and over.
    """
    imports = sorted((module, name) for name, module in exports.items())
    lines = [f"    from {module} import {name} as {name}" for module, name in imports]  # explicit re-exports
    return [BEGIN, *lines, "else:", f"    {RUNTIME}"]


def rewrite(package: str) -> None:
    """Replace (or add) the mirror in ``package``'s ``__init__.py``."""
    module = importlib.import_module(package)
    path = module.__file__
    assert path is not None
    lines = open(path, encoding="utf-8").read().split("\n")
    if BEGIN in lines:  # drop the old mirror, down to and including its `else:` branch
        start = lines.index(BEGIN)
        end = lines.index(f"    {RUNTIME}", start)
        lines[start:end + 1] = [RUNTIME]
    at = lines.index(RUNTIME)
    lines[at:at + 1] = block(module._EXPORTS)
    source = "\n".join(lines)
    if not re.search(r"^from typing import .*\bTYPE_CHECKING\b", source, re.M):
        source = source.replace("from __future__ import annotations\n",
                                "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n", 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)


if __name__ == "__main__":
    for name in sys.argv[1:] or PACKAGES:
        rewrite(name)
