"""Guard cases: stable, correct cases kept next to the findings, so breaking them is caught.

Frontier, failure and suspect cases say where an agent is weak; a suite made of them alone
cannot see the agent start failing what it used to get right. So exported suites and the
pytest plugin's items also carry a budgeted sample of ``pass`` cases (``replay.guards``, 10 by
default), picked evenly across topics: one per topic in turn, topics by name, and within a
topic by a hash of the case id. The pick is deterministic and stable: a new pass case joins
only where its hash ranks it, so a suite does not churn from run to run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from frontier_qa.store.records import CaseClass, CaseRecord


def _rank(case_id: str) -> str:
    return hashlib.sha256(case_id.encode("utf-8")).hexdigest()


def select_guards(records: Iterable[CaseRecord], count: int) -> list[CaseRecord]:
    """Up to ``count`` pass cases, spread evenly over topics (module docstring).

    Args:
        records: candidate records (the latest per case); only ``pass`` ones are picked.
        count: how many guards at most (0: none).

    Returns:
        The picked records, in pick order.
    """
    by_topic: dict[str, list[CaseRecord]] = {}
    for r in records:
        if r.case_class is CaseClass.PASS:
            by_topic.setdefault(r.topic, []).append(r)
    queues = [sorted(rs, key=lambda r: _rank(r.id)) for _, rs in sorted(by_topic.items())]
    picked: list[CaseRecord] = []
    depth = 0
    while len(picked) < count and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(picked) < count:
                picked.append(queue[depth])
        depth += 1
    return picked


__all__ = ["select_guards"]
