"""A case's first round reaches ``k_min`` in one go: no case stops before it, so a smaller first round
is a round trip for nothing (rounds of 1 with k_min 3 waited three times for what one batch gives).
"""

from __future__ import annotations

from frontier_qa.probing._case_prober import CaseProber
from frontier_qa.probing._sequential import SequentialConfig, checkpoint_after, run_sequential
from frontier_qa.probing._settings import ProbeSettings


def test_checkpoints_never_end_below_k_min() -> None:
    assert [checkpoint_after(k, (1,), 30, 3) for k in (0, 1, 2, 3, 4)] == [3, 3, 3, 4, 5]
    assert checkpoint_after(0, (2, 1), 8, 3) == 3 and checkpoint_after(3, (2, 1), 8, 3) == 4
    assert [checkpoint_after(k, (3,), 30, 3) for k in (0, 3)] == [3, 6]  # rounds of k_min: as they were
    assert checkpoint_after(0, (1,), 2, 3) == 2  # k_max still caps


def test_rounds_of_one_ask_k_min_first_then_one_at_a_time() -> None:
    asked: list[int] = []

    def sample(n: int) -> list[str]:
        asked.append(n)
        return ["a"] * n  # always the same answer: above the band, stops as soon as it may

    config = SequentialConfig(k_min=3, rounds=(1,))
    decision, labels = run_sequential(sample, config)
    assert asked[0] == 3 and set(asked[1:]) <= {1} and len(labels) == decision.k
    prober = CaseProber(ProbeSettings(sequential=config), target_id="t")
    assert prober.first_round(None) == 3 and prober.first_round(0.5) == 4  # near the band: one look later
