"""The target runtime: one place that retries, rate-limits, budgets and caches every adapter.

``open_target(spec)`` builds an adapter from a spec and wraps it in a :class:`ManagedTarget`
(inspect_ai's "adapters decide, the core retries"). Importing this package loads no
provider SDK (litellm, openai) and no ML library.
"""

from __future__ import annotations

from frontier_qa.runtime.budget import BudgetSnapshot, BudgetTracker
from frontier_qa.runtime.cache import SampleCache
from frontier_qa.runtime.limits import Backoff, Budget, Limits
from frontier_qa.runtime.managed import ManagedTarget, RuntimeStats, run_sync
from frontier_qa.runtime.open import open_target
from frontier_qa.runtime.rate_limit import Pacer, RateLimiter, estimate_tokens
from frontier_qa.runtime.redact import redact, redact_options, secret_values
from frontier_qa.runtime.retry import BackoffWait, classify_status, parse_retry_after

__all__ = [
    "Backoff",
    "BackoffWait",
    "Budget",
    "BudgetSnapshot",
    "BudgetTracker",
    "Limits",
    "ManagedTarget",
    "Pacer",
    "RateLimiter",
    "RuntimeStats",
    "SampleCache",
    "classify_status",
    "estimate_tokens",
    "open_target",
    "parse_retry_after",
    "redact",
    "redact_options",
    "run_sync",
    "secret_values",
]
