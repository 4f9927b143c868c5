"""The lazy packages show type checkers what they export (py.typed): each ``__init__`` holds an
``if TYPE_CHECKING:`` import of exactly its ``_BY_MODULE``, in the explicit re-export form.

mypy's own view (no exported name is ``Any`` to a user) is checked by ``.ci/typed_exports.py``,
which .ci/run runs after mypy; this test is the fast, always-on half. `python
.ci/write_typed_exports.py` rewrites the mirrors from ``_BY_MODULE``.
"""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

LAZY_PACKAGES = ["frontier_qa", "frontier_qa.probing", "frontier_qa.runtime", "frontier_qa.curricula",
                 "frontier_qa.train", "frontier_qa.store", "frontier_qa.session"]


def _type_checking_imports(tree: ast.Module) -> tuple[dict[str, str], list[str]]:
    """``name -> module`` imported under ``if TYPE_CHECKING:``, and the names not re-exported as themselves."""
    imported: dict[str, str] = {}
    private: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.dump(stmt)
                for alias in stmt.names:
                    imported[alias.name] = stmt.module
                    if alias.asname != alias.name:
                        private.append(alias.name)
    return imported, private


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_type_checking_imports_match_the_lazy_exports(package: str) -> None:
    module = importlib.import_module(package)
    imported, private = _type_checking_imports(ast.parse(inspect.getsource(module)))
    assert imported == {name: source for source, names in module._BY_MODULE.items() for name in names}
    assert private == []  # `from m import A as A`: public to mypy's no_implicit_reexport and to pyright



BOUND_EAGERLY = {"frontier_qa": ["__version__"], "frontier_qa.runtime": ["redact", "redact_options", "secret_values"]}


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_each_lazy_name_resolves_and_all_and_dir_list_it(package: str) -> None:
    module = importlib.import_module(package)
    lazy = [name for names in module._BY_MODULE.values() for name in names]
    assert module.__all__ == [*lazy, *BOUND_EAGERLY.get(package, [])]
    assert set(module.__all__) <= set(dir(module))
    for source, names in module._BY_MODULE.items():
        for name in names:
            assert getattr(module, name) is getattr(importlib.import_module(source), name), name
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018
