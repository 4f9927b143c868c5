"""Write the ``if TYPE_CHECKING:`` mirror of ``_BY_MODULE`` into each lazy package's ``__init__.py``.

The lazy packages import their public names on first use (PEP 562), which type checkers cannot
follow; the mirror (``from module import Name as Name`` under ``if TYPE_CHECKING:``, with the
runtime ``__getattr__, __dir__, __all__ = _lazy_exports(...)`` in its ``else:``) is what mypy and
pyright read instead. Run this after changing a ``_BY_MODULE`` table, then ``python -m ruff check
--fix`` to sort the imports; tests/package/test_typed_exports.py fails while the two disagree.

Usage: python .ci/write_typed_exports.py [PACKAGE ...]   (default: every lazy package)
"""

from __future__ import annotations

import ast
import importlib
import re
import sys

PACKAGES = ["frontier_qa", "frontier_qa.probing", "frontier_qa.runtime", "frontier_qa.curricula",
            "frontier_qa.train", "frontier_qa.store", "frontier_qa.session"]
BEGIN = "if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use"


def block(by_module: dict[str, tuple[str, ...]]) -> list[str]:
    """The ``if TYPE_CHECKING:`` lines for ``by_module`` (module -> names), one import per name.

    One ``from module import Name as Name`` line per name (isort's order; pyproject keeps
    ``combine-as-imports`` off so that ruff leaves them so): six packages' mirrors wrapped in
    parentheses were the same column of ``Name as Name,`` lines over and over.
    """
    imports = sorted((module, name) for module, names in by_module.items() for name in names)
    lines = [f"    from {module} import {name} as {name}" for module, name in imports]  # explicit re-exports
    return [BEGIN, *lines, "else:"]


def _is_lazy_exports(node: ast.stmt) -> bool:
    """``__getattr__, __dir__, __all__ = _lazy_exports(...)``: the package's run-time branch."""
    return (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "_lazy_exports")


def rewrite(package: str) -> None:
    """Replace (or add) the mirror in ``package``'s ``__init__.py``, keeping its ``else:`` branch as it is."""
    module = importlib.import_module(package)
    path = module.__file__
    assert path is not None
    source = open(path, encoding="utf-8").read()
    lines = source.split("\n")
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and any(_is_lazy_exports(n) for n in node.orelse):
            runtime = lines[node.orelse[0].lineno - 1:node.end_lineno]  # the old mirror's `else:` branch, kept
            break
        if _is_lazy_exports(node):  # no mirror yet: the call moves into the `else:` branch
            runtime = ["    " + line for line in lines[node.lineno - 1:node.end_lineno]]
            break
    else:
        raise SystemExit(f"{path}: no `__getattr__, __dir__, __all__ = _lazy_exports(...)` found")
    lines[node.lineno - 1:node.end_lineno] = [*block(module._BY_MODULE), *runtime]
    source = "\n".join(lines)
    if not re.search(r"^from typing import .*\bTYPE_CHECKING\b", source, re.M):
        source = source.replace("from __future__ import annotations\n",
                                "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n", 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)


if __name__ == "__main__":
    for name in sys.argv[1:] or PACKAGES:
        rewrite(name)
