"""The target runtime: one place that retries, rate-limits, budgets and caches every adapter.

``open_target(spec)`` builds an adapter from a spec and wraps it in a :class:`ManagedTarget`
(inspect_ai's "adapters decide, the core retries"). The package also holds what runs next to
the targets: the code :mod:`~frontier_qa.runtime.sandbox` and the local model cache
(:mod:`~frontier_qa.runtime._local_models`).

Names are imported on first use (PEP 562): importing this package, or one of its modules
such as ``frontier_qa.runtime.sandbox``, loads no provider SDK (litellm, openai), no ML
library and no more of the runtime than that module needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontier_qa import _lazy_exports

# The redactor is the whole package's (frontier_qa.redaction, stdlib only: the store and the reports use
# it too); the runtime's names for it stay.
from frontier_qa.redaction import redact as redact
from frontier_qa.redaction import redact_options as redact_options
from frontier_qa.redaction import secret_values as secret_values

_BY_MODULE: dict[str, tuple[str, ...]] = {
    "frontier_qa.runtime._limits": ("Backoff", "Budget", "Limits"),
    "frontier_qa.runtime._retry": ("BackoffWait", "classify_status", "parse_retry_after"),
    "frontier_qa.runtime._budget": ("BudgetSnapshot", "BudgetTracker"),
    "frontier_qa.runtime._managed": ("ManagedTarget", "RuntimeStats"),
    "frontier_qa.runtime._rate_limit": ("Pacer", "RateLimiter", "estimate_tokens"),
    "frontier_qa.runtime._cache": ("SampleCache",),
    "frontier_qa.runtime._from_spec": ("open_target",),
    "frontier_qa.runtime._aio": ("run_sync",),
}


if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use
    from frontier_qa.runtime._aio import run_sync as run_sync
    from frontier_qa.runtime._budget import BudgetSnapshot as BudgetSnapshot
    from frontier_qa.runtime._budget import BudgetTracker as BudgetTracker
    from frontier_qa.runtime._cache import SampleCache as SampleCache
    from frontier_qa.runtime._from_spec import open_target as open_target
    from frontier_qa.runtime._limits import Backoff as Backoff
    from frontier_qa.runtime._limits import Budget as Budget
    from frontier_qa.runtime._limits import Limits as Limits
    from frontier_qa.runtime._managed import ManagedTarget as ManagedTarget
    from frontier_qa.runtime._managed import RuntimeStats as RuntimeStats
    from frontier_qa.runtime._rate_limit import Pacer as Pacer
    from frontier_qa.runtime._rate_limit import RateLimiter as RateLimiter
    from frontier_qa.runtime._rate_limit import estimate_tokens as estimate_tokens
    from frontier_qa.runtime._retry import BackoffWait as BackoffWait
    from frontier_qa.runtime._retry import classify_status as classify_status
    from frontier_qa.runtime._retry import parse_retry_after as parse_retry_after
else:
    __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals(),
                                                  also=["redact", "redact_options", "secret_values"])
