"""StopReason: the run's stop reasons as one enum that still reads and prints as the words."""

from __future__ import annotations

import json

from frontier_qa.probing._engine import STOP_BUDGET, STOP_DONE, STOP_EXHAUSTED, StopReason


def test_members_print_and_compare_as_their_words() -> None:
    assert f"stopped: {StopReason.EXHAUSTED}" == "stopped: curriculum exhausted"
    assert str(StopReason.UNAVAILABLE) == "target unavailable" and f"{StopReason.BUDGET:>8}" == "  budget"
    assert StopReason.BUDGET == "budget" and "done" == StopReason.DONE
    assert json.dumps({"stop": StopReason.SATURATED}) == '{"stop": "saturated"}'
    assert (STOP_BUDGET, STOP_DONE, STOP_EXHAUSTED) == (StopReason.BUDGET, StopReason.DONE, StopReason.EXHAUSTED)


def test_only_budget_interrupt_and_an_unavailable_target_leave_the_run_open() -> None:
    assert {r for r in StopReason if r.leaves_run_open} == {StopReason.BUDGET, StopReason.INTERRUPTED,
                                                            StopReason.UNAVAILABLE}
    # a reason read back from a stored record is a plain string and still matches its member
    assert "target unavailable" in tuple(r for r in StopReason if r.leaves_run_open)
    assert StopReason("max candidates") is StopReason.MAX_CANDIDATES

