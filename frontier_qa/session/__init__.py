"""The one front door behind the CLI, the pytest plugin and the Python API.

* :mod:`~frontier_qa.session._session`: :class:`Session`, a configuration opened once: probe,
  replay, accept, write the reports;
* :mod:`~frontier_qa.session._outcome`: :class:`Outcome`, what a run did, judged once (health,
  gate, spend, next steps, exit code), and :func:`judge`;
* :mod:`~frontier_qa.session._suite_run`: a named suite's cases, found and replayed one at a time (the
  pytest plugin's items).

Names are imported on first use: ``import frontier_qa.session`` loads no model library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontier_qa import _lazy_exports

_BY_MODULE: dict[str, tuple[str, ...]] = {
    "frontier_qa.session._session": ("CASES_FILE", "Session"),
    "frontier_qa.session._outcome": ("Invocation", "Meter", "Outcome", "combine", "judge"),
    "frontier_qa.session._suite_run": ("Replayer", "SuiteCurriculum"),
}

if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use
    from frontier_qa.session._outcome import Invocation as Invocation
    from frontier_qa.session._outcome import Meter as Meter
    from frontier_qa.session._outcome import Outcome as Outcome
    from frontier_qa.session._outcome import combine as combine
    from frontier_qa.session._outcome import judge as judge
    from frontier_qa.session._session import CASES_FILE as CASES_FILE
    from frontier_qa.session._session import Session as Session
    from frontier_qa.session._suite_run import Replayer as Replayer
    from frontier_qa.session._suite_run import SuiteCurriculum as SuiteCurriculum
else:
    __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals())
