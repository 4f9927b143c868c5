"""The layer rule: every import in frontier_qa points down the table below (AST check, no dependency).

Each module belongs to the layer of its longest matching prefix. A module may import its
own layer, the base, and the layers its row allows. Every import counts: module level, inside
functions (lazy imports are dependencies too) and under ``TYPE_CHECKING``. Not seen: names
loaded from strings (the lazy ``_BY_MODULE`` tables of package ``__init__`` files, the adapter registry's
``"module:function"`` references, entry points); those are facades and plugin lookups. The same
facades' ``if TYPE_CHECKING:`` mirror of ``_BY_MODULE`` (what users' type checkers read, kept equal to
it by tests/package/test_typed_exports.py) is skipped with them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.factories import REPO

SOURCES = {"frontier_qa": REPO / "frontier_qa", "frontier_qa.adapters": REPO / "adapters",
           "frontier_qa.plugins": REPO / "plugins"}

BASE = "base"
# module prefix -> layer (longest prefix wins; the base is the root package and its seam modules)
LAYER_OF = {
    "frontier_qa": BASE, "frontier_qa.errors": BASE, "frontier_qa._optional": BASE, "frontier_qa.target": BASE,
    "frontier_qa.redaction": BASE,
    "frontier_qa.scoring": "scoring",
    "frontier_qa.runtime": "runtime",
    "frontier_qa.adapters": "adapters",
    "frontier_qa.store": "store",
    # task generators: declarations, the built-in library and the search are values and pure logic
    # (the probe engine reads a generator's check); running the search against a target sits above
    "frontier_qa.generators._core": "generators.core", "frontier_qa.generators._library": "generators.core",
    "frontier_qa.generators._search": "generators.core", "frontier_qa.generators._loading": "generators.core",
    "frontier_qa.generators": "generators",
    "frontier_qa.probing": "probing",
    "frontier_qa.curricula": "curricula",
    "frontier_qa.reports": "reports",
    "frontier_qa.testing": "testing",
    "frontier_qa.config": "config",
    "frontier_qa.session": "session",
    "frontier_qa.train": "train",
    "frontier_qa.plugins": "plugins",
    "frontier_qa.cli": "cli",
    "frontier_qa.__main__": "__main__",
}

# THE TABLE: layer -> the layers it may import (besides itself and the base), lowest first.
ALLOWED: dict[str, set[str]] = {
    BASE: set(),
    "scoring": set(),
    # the runtime wraps adapters and open_target() looks them up by spec scheme; adapters use the
    # runtime's retry classification, redaction, sandbox and local model cache: one layer in two packages
    "runtime": {"adapters"},
    "adapters": {"runtime"},
    "store": {"scoring"},
    "generators.core": set(),
    "probing": {"scoring", "runtime", "store", "generators.core"},
    "generators": {"scoring", "runtime", "store", "probing", "generators.core"},
    # curricula implement the seam and reuse the engine's validation, verification and case ids
    "curricula": {"scoring", "runtime", "store", "probing"},
    "reports": {"scoring", "store"},
    "testing": {"scoring", "runtime", "adapters", "store", "probing", "curricula", "generators.core"},
    "config": {"scoring", "runtime", "store", "probing", "curricula", "reports", "generators.core", "generators"},
    # the one front door: a config opened, runs judged and reported (behind the CLI, the plugin, the API)
    "session": {"scoring", "runtime", "store", "probing", "curricula", "reports", "config", "generators.core", "generators"},
    "train": {"scoring", "runtime", "adapters", "store", "probing", "curricula", "config", "generators.core", "generators"},
    "plugins": {"scoring", "runtime", "store", "probing", "curricula", "reports", "config",
                "session", "generators.core", "generators"},
    "cli": {"scoring", "runtime", "adapters", "store", "probing", "curricula", "reports",
            "config", "train", "session", "generators.core", "generators"},
    "__main__": {"cli"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def layer_of(module: str) -> str:
    prefix = max((p for p in LAYER_OF if module == p or module.startswith(p + ".")), key=len)
    return LAYER_OF[prefix]


def imports_of(module: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """Every frontier_qa module ``module`` imports, with its line (``from pkg import submodule`` resolved)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if is_package and any(isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == "_BY_MODULE"
                          for n in tree.body):  # a lazy facade: its typed mirror of _BY_MODULE is not a dependency
        tree.body = [n for n in tree.body if not (isinstance(n, ast.If) and isinstance(n.test, ast.Name)
                                                  and n.test.id == "TYPE_CHECKING")]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if sub in known else base))
    return [(line, name) for line, name in found if name == "frontier_qa" or name.startswith("frontier_qa.")]


def violations() -> list[str]:
    modules = _modules()
    bad = []
    for module, path in sorted(modules.items()):
        mine = layer_of(module)
        for line, target in sorted(set(imports_of(module, path, set(modules)))):
            theirs = layer_of(target)
            if theirs not in (mine, BASE) and theirs not in ALLOWED[mine]:
                bad.append(f"{path.relative_to(REPO)}:{line}: {mine} imports {target} ({theirs})")
    return bad


def test_imports_follow_the_layer_table() -> None:
    assert violations() == []


def test_every_module_has_a_layer_and_the_table_is_acyclic() -> None:
    modules = _modules()
    assert {layer_of(m) for m in modules} <= set(ALLOWED)
    # only the runtime/adapters pair may use each other; everything else points one way
    for layer, allowed in ALLOWED.items():
        for other in allowed:
            if layer in ALLOWED[other]:
                assert {layer, other} == {"runtime", "adapters"}, (layer, other)


def test_the_rules_the_architecture_promises() -> None:
    assert ALLOWED["scoring"] == set()
    assert not ALLOWED["runtime"] & {"probing", "store", "reports", "config", "cli", "train"}
    assert not any("cli" in allowed for layer, allowed in ALLOWED.items() if layer != "__main__")
    assert {layer for layer, allowed in ALLOWED.items() if "config" in allowed} == {"cli", "plugins", "train", "session"}


def test_the_check_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """A scoring module importing the engine inside a function, or for typing only, is caught."""
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from frontier_qa.store._records import CaseRecord\n"
              "def f():\n    from frontier_qa.probing import _engine\n    return _engine\n")
    path = tmp_path / "fake.py"
    path.write_text(source)
    known = set(_modules())
    found = imports_of("frontier_qa.scoring.fake", path, known)
    assert [(line, target) for line, target in found] == [(3, "frontier_qa.store._records"),
                                                          (5, "frontier_qa.probing._engine")]
    assert {layer_of(t) for _, t in found} - ALLOWED["scoring"] == {"store", "probing"}


def test_no_layer_is_carved_out_of_a_package() -> None:
    """The curricula/probing cycle is broken: the seam moved into the engine, no exception entry is left.

    ``frontier_qa.curricula.base`` used to be a layer of its own ("curricula.base") that the engine
    and the generators could import while the rest of ``curricula`` sat above the engine. Only the
    task generators' pure core still splits a package (it is values and logic below the engine).
    """
    assert "frontier_qa.curricula.base" not in LAYER_OF and "curricula.base" not in ALLOWED
    carved = {prefix for prefix in LAYER_OF if prefix.count(".") > 1 and LAYER_OF[prefix] != BASE}
    assert {LAYER_OF[p] for p in carved} <= {"generators.core"}, carved
    assert not any(prefix.startswith("frontier_qa.curricula.") for prefix in LAYER_OF)
    assert "curricula" not in ALLOWED["probing"] and "curricula" not in ALLOWED["generators"]
