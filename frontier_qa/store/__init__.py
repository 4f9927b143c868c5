"""What a probe run leaves behind: case records, the case store, suites and comparisons.

* :mod:`~frontier_qa.store._records`: the versioned record schema (case and run records,
  suite entries, case classes);
* :mod:`~frontier_qa.store._case_store`: the project-local, append-only :class:`CaseStore`
  (``.frontier-qa/``), resuming and merging; :mod:`~frontier_qa.store._lines` its line encoding
  and :mod:`~frontier_qa.store._shards` its CI shards;
* :mod:`~frontier_qa.store._suites`: a named suite's cases, and committable suite files (export / import);
* :mod:`~frontier_qa.store._baselines` and :mod:`~frontier_qa.store._guards`: what a replay holds each
  case to, and each suite's stored set of guard cases (``guards.json``);
* :mod:`~frontier_qa.store._comparison`: an old record against a new one (``regression``,
  ``improved``, ``same``, ``flaky``), used by replay, the reports and the pytest plugin;
* :mod:`~frontier_qa.store._inputs`: the content hash of a case's inputs each record keeps, so a
  case edited in its source after it was recorded is seen (and its baseline moves with it);
* :mod:`~frontier_qa.store._views`: what ``frontier-qa cases list|show|diff`` reads (a filtered
  list, one case's history and baselines, two runs compared with the replay's test).

The store sits above the scoring core (records carry its :class:`Consistency`) and below
everything that probes or reports. ``from frontier_qa.store import CaseStore`` keeps working:
the case store's names are exported here, imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontier_qa import _lazy_exports

_BY_MODULE: dict[str, tuple[str, ...]] = {
    "frontier_qa.store._case_store": (
        "DEFAULT_DIR", "STORE_FORMAT", "CaseStore", "MergeResult", "ResumeState", "new_run_id",
    ),
    "frontier_qa.store._store_error": ("StoreError",),
    "frontier_qa.store._lines": ("TornLineWarning", "encode_line", "latest_by", "parse_lines"),
    "frontier_qa.store._shards": ("Shard", "shard_of"),
    "frontier_qa.store._suites": ("export_suite", "import_suite", "suite_entries"),
}


if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use
    from frontier_qa.store._case_store import DEFAULT_DIR as DEFAULT_DIR
    from frontier_qa.store._case_store import STORE_FORMAT as STORE_FORMAT
    from frontier_qa.store._case_store import CaseStore as CaseStore
    from frontier_qa.store._case_store import MergeResult as MergeResult
    from frontier_qa.store._case_store import ResumeState as ResumeState
    from frontier_qa.store._case_store import new_run_id as new_run_id
    from frontier_qa.store._lines import TornLineWarning as TornLineWarning
    from frontier_qa.store._lines import encode_line as encode_line
    from frontier_qa.store._lines import latest_by as latest_by
    from frontier_qa.store._lines import parse_lines as parse_lines
    from frontier_qa.store._shards import Shard as Shard
    from frontier_qa.store._shards import shard_of as shard_of
    from frontier_qa.store._store_error import StoreError as StoreError
    from frontier_qa.store._suites import export_suite as export_suite
    from frontier_qa.store._suites import import_suite as import_suite
    from frontier_qa.store._suites import suite_entries as suite_entries
else:
    __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals())
