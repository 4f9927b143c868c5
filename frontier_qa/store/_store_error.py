"""The store's error, apart so that the case store, its shards and suite files all raise it."""

from __future__ import annotations

from frontier_qa.errors import FrontierQAError


class StoreError(FrontierQAError):
    """The case store or a suite file cannot be read or written as asked."""
