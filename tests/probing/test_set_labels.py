"""The set-level label ledger: exact thresholds and charges."""

from __future__ import annotations

import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.probing._set_labels import Labelling, Ledger


def test_case_mode_asks_the_policys_confidence() -> None:
    ledger = Ledger(Labelling(mode="case"))
    assert ledger.threshold(0.9) == 0.9
    assert not ledger.admit(0.89, 0.9)
    assert ledger.admit(0.9, 0.9)


def test_set_mode_lets_sure_labels_pay_for_a_less_sure_one() -> None:
    ledger = Ledger(Labelling(alpha=0.1, floor=0.6))
    assert ledger.threshold(0.9) == pytest.approx(0.9)  # the first label: 1 - alpha
    assert ledger.admit(0.99, 0.9) and ledger.admit(0.99, 0.9)
    # room = 0.1 * 3 - 0.02 = 0.28: a label at 0.72 keeps the set's expected error at 0.1
    assert ledger.threshold(0.9) == pytest.approx(0.72)
    assert not ledger.admit(0.71, 0.9)
    assert ledger.admit(0.72, 0.9)
    assert ledger.expected_precision == pytest.approx(0.9)
    assert ledger.threshold(0.9) == pytest.approx(0.9)  # the budget is spent: back to 1 - alpha


def test_the_floor_holds_however_much_room_is_left() -> None:
    ledger = Ledger(Labelling(alpha=0.3, floor=0.8))
    ledger.restore([1.0] * 10)
    assert ledger.threshold(0.9) == 0.8


@pytest.mark.parametrize("kwargs", [{"mode": "all"}, {"alpha": 0.0}, {"floor": 0.4}])
def test_bad_settings_name_the_problem(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Labelling(**kwargs)  # type: ignore[arg-type]
