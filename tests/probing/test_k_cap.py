"""``k`` under a sequential policy is the sample cap; a cap too low to decide most cases warns.

The warning's numbers come from :data:`~frontier_qa.probing._k_cap.UNRESOLVED_AT_CAP`
(``benchmarks/k_cap_bench.py`` measures them); the Python API (:func:`frontier_qa.probe` with
:class:`ProbeSettings`) warns, keeps the warning in the run record and its gate names the cap,
as the CLI does (``tests/cli/test_k_flag.py``) and the pytest plugin (``tests/plugins``).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from frontier_qa.probing._engine import ProbeSettings, probe
from frontier_qa.probing._k_cap import MARGIN, UNRESOLVED_AT_CAP, WARN_ABOVE, cap_warning, expected_unresolved
from frontier_qa.probing._sequential import POLICIES
from frontier_qa.reports import RunFacts, summarize
from frontier_qa.reports._health import assess
from frontier_qa.store._case_store import CaseStore
from frontier_qa.testing import ScriptedAdapter, case, from_distribution, open_scripted, static_curriculum
from tests.factories import run


def settings(policy: str, k: int | None = None) -> ProbeSettings:
    chosen = POLICIES[policy]
    return ProbeSettings(k=chosen.k if k is None else k, sequential=chosen.sequential, replay_first=False)


def test_the_measured_table_falls_as_the_cap_rises_and_ends_at_each_policy_s_own_cap() -> None:
    for name, rows in UNRESOLVED_AT_CAP.items():
        caps = [cap for cap, _, _ in rows]
        assert caps == sorted(caps) and caps[-1] == POLICIES[name].k
        assert all(low <= high for _, low, high in rows)
        assert [high for *_, high in rows] == sorted((high for *_, high in rows), reverse=True)


def test_expected_unresolved_reads_between_and_beyond_the_measured_caps() -> None:
    (k0, lo0, hi0), (k1, lo1, hi1) = UNRESOLVED_AT_CAP["calibrated"][-2:]
    assert expected_unresolved("calibrated", k1) == (lo1, hi1)
    middle = expected_unresolved("calibrated", (k0 + k1) // 2)
    assert lo1 <= middle[0] <= lo0 and hi1 <= middle[1] <= hi0
    assert expected_unresolved("calibrated", 1) == UNRESOLVED_AT_CAP["calibrated"][0][1:]
    assert expected_unresolved("calibrated", 99) == (lo1, hi1)


def test_a_low_cap_warns_with_the_share_and_both_fixes() -> None:
    warning = cap_warning(settings("calibrated", 10))
    assert warning is not None and (warning.code, warning.cap) == ("k-cap", 10)
    low, high = expected_unresolved("calibrated", 10)
    assert warning.message.startswith("k = 10 caps the calibrated policy at 10 samples per case, below the 30 it "
                                      f"needs to decide most cases: expect {low * 100:.0f}-{high:.0%} of cases")
    assert "--policy fixed --k 10" in warning.fix and "drop --k (probing.k)" in warning.fix
    assert warning.fix in warning.message and "\n" not in warning.message


@pytest.mark.parametrize(("policy", "k"), [("fixed", 10), ("fixed", 3), ("calibrated", 30), ("calibrated", 40),
                                           ("calibrated", 29), ("thorough", 40), ("thorough", 38)])
def test_agent0_s_rule_and_a_cap_that_decides_about_as_much_do_not_warn(policy: str, k: int) -> None:
    assert cap_warning(settings(policy, k)) is None
    if policy != "fixed":  # below the gate's limit, or no worse than the policy's own cap
        own = expected_unresolved(policy, POLICIES[policy].k)[1]
        assert expected_unresolved(policy, k)[1] <= max(WARN_ABOVE, own + MARGIN)


def test_a_tuned_policy_is_read_as_the_named_one_nearest_to_it() -> None:
    calibrated = POLICIES["calibrated"].sequential
    assert calibrated is not None
    tuned = ProbeSettings(k=10, sequential=replace(calibrated, rounds=(1,), confidence=0.95))
    warning = cap_warning(tuned)
    assert warning is not None and "the calibrated policy" in warning.message


def test_the_python_api_warns_records_and_its_gate_names_the_cap(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    # right 7 of 10, misses spread: p* = 0.7, in the band; the calibrated policy needs more than 10 samples
    answers = from_distribution({f"c{i}": {str(i): 0.7, "x": 0.1, "y": 0.1, "z": 0.1} for i in range(4)})
    cases = [case(f"c{i}", f"Case {i}?", reference=str(i)) for i in range(4)]
    with caplog.at_level(logging.WARNING, logger="frontier_qa"):
        result = run(probe(open_scripted(ScriptedAdapter(answers)), static_curriculum(cases),
                           settings("calibrated", 10), store=CaseStore(tmp_path)))
    said = [r.getMessage() for r in caplog.records if "caps the calibrated policy" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("warning: k = 10 caps")
    (warning,) = result.run.warnings
    assert CaseStore(tmp_path).run(result.run_id).warnings == [warning]
    (problem,) = assess(summarize(result.records), RunFacts(warnings=tuple(result.run.warnings)))
    assert problem.code == "unresolved-share" and f"k = 10 capped the sampling at 10 samples per case (the run " \
        f"warned as it started); {warning.fix}" in problem.message
    # the same records without the warning: the old advice, no cause named
    (plain,) = assess(summarize(result.records))
    assert "raise the budget or k" in plain.message and "capped" not in plain.message
