"""Task generators with difficulty knobs, the boundary search along them, and shrinking.

* :mod:`~frontier_qa.generators._core`: :func:`generator`, :func:`ordinal`, :func:`categorical`,
  :class:`Task`, :class:`Generator` and the registry;
* :mod:`~frontier_qa.generators._library`: built-in generators (multi-digit arithmetic, date
  arithmetic, unit conversion chains, multi-step word problems);
* :mod:`~frontier_qa.generators._search`: the adaptive boundary search (pure);
* :mod:`~frontier_qa.generators._explore`: the search and shrinking run against a target.

Names are imported on first use (PEP 562), so ``import frontier_qa.generators`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontier_qa import _lazy_exports

_BY_MODULE: dict[str, tuple[str, ...]] = {
    "frontier_qa.generators._core": ("Generator", "GeneratorError", "Knob", "Task", "categorical", "generator",
                                    "ordinal", "registered", "get"),
}

if TYPE_CHECKING:
    from frontier_qa.generators._core import Generator as Generator
    from frontier_qa.generators._core import GeneratorError as GeneratorError
    from frontier_qa.generators._core import Knob as Knob
    from frontier_qa.generators._core import Task as Task
    from frontier_qa.generators._core import categorical as categorical
    from frontier_qa.generators._core import generator as generator
    from frontier_qa.generators._core import get as get
    from frontier_qa.generators._core import ordinal as ordinal
    from frontier_qa.generators._core import registered as registered
else:
    __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals())
