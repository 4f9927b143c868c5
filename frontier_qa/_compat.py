"""Old import paths of the modules that moved into layer packages: one release of grace.

Up to 0.1 the modules of ``frontier_qa`` sat side by side (``frontier_qa.answers``,
``frontier_qa.engine``, ``frontier_qa.records`` ...). They now live in packages, one per
layer (``frontier_qa.scoring.answers``, ``frontier_qa.probing.engine``,
``frontier_qa.store.records``; README, "Architecture"). :data:`MOVED` maps every old dotted
name to its new one. ``import frontier_qa`` appends :class:`MovedModuleFinder` to
``sys.meta_path``: it is asked only after every real finder came back empty, and answers an
old name with the new module itself (the very same object, so ``isinstance`` checks and
monkeypatches keep working) after one :class:`DeprecationWarning` that names the new path.

Importing an old name warns once per process; later imports are served from ``sys.modules``.
This module, :data:`MOVED` and the finder are removed in the release after next.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

MOVED: dict[str, str] = {
    # the scoring core
    "frontier_qa.answers": "frontier_qa.scoring.answers",
    "frontier_qa.equivalence": "frontier_qa.scoring.equivalence",
    "frontier_qa.consistency": "frontier_qa.scoring.consistency",
    "frontier_qa.semantic": "frontier_qa.scoring.semantic",
    "frontier_qa.embedders": "frontier_qa.scoring.embedders",
    "frontier_qa.contradiction": "frontier_qa.scoring.contradiction",
    "frontier_qa.bands": "frontier_qa.scoring.bands",
    "frontier_qa.rewards": "frontier_qa.scoring.rewards",
    "frontier_qa.repetition": "frontier_qa.scoring.repetition",
    "frontier_qa.difficulty": "frontier_qa.scoring.difficulty",
    # the runtime
    "frontier_qa.sandbox": "frontier_qa.runtime.sandbox",
    "frontier_qa.local_models": "frontier_qa.runtime.local_models",
    # the curriculum seam
    "frontier_qa.curriculum": "frontier_qa.probing.curriculum",
    "frontier_qa.curricula.base": "frontier_qa.probing.curriculum",
    # the probe engine
    "frontier_qa.engine": "frontier_qa.probing.engine",
    "frontier_qa.probe_run": "frontier_qa.probing.run",
    "frontier_qa.probe_case": "frontier_qa.probing.case",
    "frontier_qa.validation": "frontier_qa.probing.validation",
    "frontier_qa.verify": "frontier_qa.probing.verify",
    "frontier_qa.sequential": "frontier_qa.probing.sequential",
    "frontier_qa.progress": "frontier_qa.probing.progress",
    # the store (frontier_qa.store itself is the package now and still exports CaseStore ...)
    "frontier_qa.records": "frontier_qa.store.records",
    "frontier_qa.reports.compare": "frontier_qa.store.comparison",
    # the command line (frontier_qa.cli is the package now; main() is still there)
    "frontier_qa.cli_probe": "frontier_qa.cli.probe",
    "frontier_qa.cli_score": "frontier_qa.cli.score",
    "frontier_qa.cli_train": "frontier_qa.cli.train",
}


class _AliasLoader:
    """Loads an old name as the module at its new name (``sys.modules`` gets the new module)."""

    def __init__(self, old: str, new: str) -> None:
        self.old = old
        self.new = new

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None  # a placeholder module; exec_module puts the real one in its place

    def exec_module(self, module: ModuleType) -> None:
        # stacklevel 2: the import statement that named the old path (the import
        # machinery's own frames are skipped by the warnings module)
        warnings.warn(
            f"{self.old} moved to {self.new}; import it from there "
            f"(the old path is removed in the release after next)",
            DeprecationWarning,
            stacklevel=2,
        )
        sys.modules[self.old] = importlib.import_module(self.new)


class MovedModuleFinder:
    """A ``sys.meta_path`` finder for the old names in :data:`MOVED` (and nothing else)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(fullname, new))  # type: ignore[arg-type]


def renamed(module: str, names: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves old attribute names for one release of grace.

    ``names`` maps each old name to the new one in ``namespace`` (the module's ``globals()``);
    reading an old name warns (:class:`DeprecationWarning`, naming the new one) and returns
    the very same object.
    """

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} is now {module}.{new} (the old name is removed in the release after next)",
                      DeprecationWarning, stacklevel=2)
        return namespace[new]

    return __getattr__


def install() -> None:
    """Append the finder to ``sys.meta_path`` once (``import frontier_qa`` calls this)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
