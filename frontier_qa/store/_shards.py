"""CI shards of a probe run: which of ``n`` shards a case belongs to (``--shard i/n``)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from frontier_qa.store._store_error import StoreError


def shard_of(case_id: str, n: int) -> int:
    """The shard (1-based, as in ``--shard i/n``) a case belongs to among ``n`` shards.

    Stable across processes, machines and Python versions (SHA-256 of the id, not
    ``hash()``), and balanced: ids spread uniformly over the shards.
    """
    if n < 1:
        raise StoreError(f"shard count must be at least 1, got {n}", hint="use --shard i/n with n >= 1")
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


@dataclass(frozen=True)
class Shard:
    """One of ``count`` CI shards, ``index`` 1-based (``--shard 2/4``)."""

    index: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise StoreError(
                f"shard {self.index}/{self.count} is out of range",
                hint="write --shard i/n with 1 <= i <= n, e.g. --shard 1/4",
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """Parse ``"i/n"``."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if match is None:
            raise StoreError(f"cannot read shard {text!r}", hint="write it as i/n, e.g. --shard 1/4")
        return cls(int(match.group(1)), int(match.group(2)))

    def contains(self, case_id: str) -> bool:
        """Whether this shard probes the case."""
        return self.count == 1 or shard_of(case_id, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"
