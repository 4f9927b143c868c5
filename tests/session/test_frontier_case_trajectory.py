"""``FrontierCase``'s path, pass^k and ``assert_trajectory``: read from the record, never recomputed."""

from __future__ import annotations

from typing import Any

import pytest

from frontier_qa.session._frontier_case import FrontierCase
from frontier_qa.store._records import CaseRecord, PassK, PathCluster, PathRecord
from tests.factories import probed_record

WRONG = PathRecord(granularity="sequence", p_hat=1.0, majority="search → delete_account",
                   clusters=[PathCluster(path="search → delete_account", count=4)], decision="above",
                   finding="wrong", reason="the samples agree on a path that misses the expectations")
SCATTER = WRONG.model_copy(update={"p_hat": 0.5, "finding": "scatter", "majority": "search",
                                   "clusters": [PathCluster(path="search", count=2),
                                                PathCluster(path="lookup", count=2)]})
MISSES = ("called delete_account, which must not be called",)


def record(path: PathRecord | None = None, pass_k: PassK | None = None) -> CaseRecord:
    base = probed_record("c1", prompt="Close my account?", topic="support")
    samples = [s.model_copy(update={"path": "search → delete_account", "misses": MISSES}) for s in base.samples]
    return base.model_copy(update={"path": path, "pass_k": pass_k, "samples": samples})


def frontier_case(replayed: CaseRecord, **kwargs: Any) -> FrontierCase:
    return FrontierCase(None, None, replayed, None, **kwargs).for_item(  # type: ignore[arg-type]
        "pytest test_agent.py::test_agent[support/c1]")


def test_the_path_and_pass_k_are_the_records() -> None:
    case = frontier_case(record(WRONG, PassK(k=4, n=4, passed=0, value=0.0)))
    assert case.path is case.replayed.path and case.path is not None and case.path.finding == "wrong"
    assert case.pass_k is not None and case.pass_k.value == 0.0
    assert frontier_case(record()).path is None and frontier_case(record()).pass_k is None


def test_a_wrong_path_fails_with_the_misses_the_prompt_and_the_replay_command() -> None:
    case = frontier_case(record(WRONG))
    with pytest.raises(AssertionError) as failed:
        case.assert_trajectory()
    assert str(failed.value).splitlines() == [
        "frontier-qa: support/c1: the agent's trajectories fail the case",
        "  wrong path: search → delete_account in 100% of the samples",
        "  missed: called delete_account, which must not be called (4 of 4)",
        "  prompt: Close my account?",
        "  replay: pytest test_agent.py::test_agent[support/c1]",
    ]


def test_pass_k_below_the_gates_floor_fails_and_names_the_counts() -> None:
    low = PassK(k=4, n=8, passed=5, value=0.0714, misses=["never called search (3 of 8)"])
    with pytest.raises(AssertionError, match=r"pass\^4 = 0.07, below gate.min_pass_hat_k 0.5 \(5 of 8 samples "
                                             r"passed\)\n  missed: never called search \(3 of 8\)"):
        frontier_case(record(None, low), min_pass_hat_k=0.5).assert_trajectory()
    frontier_case(record(None, low)).assert_trajectory()  # no floor: pass^k is reported, not held
    frontier_case(record(None, low), min_pass_hat_k=0.05).assert_trajectory()
    short = PassK(k=8, n=4, passed=0, value=None)  # sampling ended below k: nothing to hold
    frontier_case(record(None, short), min_pass_hat_k=0.5).assert_trajectory()


def test_scatter_or_no_path_is_not_a_failure_of_the_trajectory() -> None:
    frontier_case(record(SCATTER)).assert_trajectory()  # a frontier of how the agent works, not a wrong one
    frontier_case(record()).assert_trajectory()
    assert frontier_case(record(SCATTER)).trajectory_problems() == []
