"""The micro-batcher keeps a round of cases together when its callers come back one by one.

The probe scores and decides each case before asking for its next round (milliseconds a case, on
the event loop), so one batch's callers resubmit spread over tens of milliseconds. Taken after
``wait_s`` alone, the first of them would run as a batch of their own and the rest as another: a
whole extra ``generate`` per round, which rounds of 1-2 samples would pay every round.
"""

from __future__ import annotations

import asyncio
import time

from frontier_qa.adapters._batching import MicroBatcher

CASES = 8


def rounds_of(batcher: MicroBatcher[int, int], rounds: int, think_s: float) -> list[int]:
    """``CASES`` callers, each asking, then "scoring" (blocking the loop ``think_s``) and asking again."""
    async def case(i: int) -> None:
        for _ in range(rounds):
            await batcher.submit(i)
            time.sleep(think_s)  # the prober's scoring and decision run on the event loop

    async def all_cases() -> None:
        await asyncio.gather(*(case(i) for i in range(CASES)))

    asyncio.run(all_cases())
    return list(batcher.sizes)


class Recording(MicroBatcher[int, int]):
    """A batcher over a model that takes ``run_s`` a batch, recording each batch's size."""

    def __init__(self, run_s: float, **options: object) -> None:
        self.sizes: list[int] = []

        def run_batch(items: list[int]) -> list[int]:
            self.sizes.append(len(items))
            time.sleep(run_s)
            return items

        super().__init__(run_batch, wait_s=0.005, **options)  # type: ignore[arg-type]


def test_a_round_whose_callers_come_back_one_by_one_stays_one_batch() -> None:
    batcher = Recording(run_s=1.0)
    try:
        sizes = rounds_of(batcher, rounds=3, think_s=0.004)
    finally:
        batcher.close()
    assert sizes == [CASES] * 3


def test_without_regrouping_the_round_splits() -> None:
    batcher = Recording(run_s=0.3)
    batcher.REGROUP_MAX_S = 0.0  # the window of the oldest request alone: what it did before
    try:
        sizes = rounds_of(batcher, rounds=3, think_s=0.004)
    finally:
        batcher.close()
    assert sizes[0] == CASES and len(sizes) > 3 and sum(sizes) == 3 * CASES


def test_callers_that_do_not_come_back_cost_at_most_the_gap() -> None:
    batcher = Recording(run_s=1.0)
    try:
        asyncio.run(_gather(batcher, range(CASES)))  # a full batch: the next one expects as many
        began = time.monotonic()
        asyncio.run(_gather(batcher, [0]))  # one caller returns; the others were decided
        waited = time.monotonic() - began - 1.0
    finally:
        batcher.close()
    assert batcher.sizes == [CASES, 1] and waited < batcher.REGROUP_GAP_S + 0.2


async def _gather(batcher: MicroBatcher[int, int], items: object) -> list[int]:
    return list(await asyncio.gather(*(batcher.submit(i) for i in items)))  # type: ignore[attr-defined]
