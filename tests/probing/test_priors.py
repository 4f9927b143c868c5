"""Priors carried across runs (issue 33 item 2): the version guard, topic priors, and where the run says it got them.

End to end: scripted targets through the real runtime (:func:`frontier_qa.testing.open_scripted`),
the real engine and a real :class:`~frontier_qa.store.CaseStore`; the priors are real fits.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from frontier_qa.probing._engine import ProbeResult, ProbeSettings, probe
from frontier_qa.probing._posterior import DEFAULT_PRIOR
from frontier_qa.probing._priors import PriorBook
from frontier_qa.probing._sequential import SequentialConfig
from frontier_qa.reports._markdown import markdown_report
from frontier_qa.reports._report_input import ReportInput
from frontier_qa.runtime import Budget
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CaseClass, PriorSource
from frontier_qa.testing import ScriptedAdapter, always_right, moody, open_scripted, static_curriculum
from tests.factories import arithmetic_cases, run

# rounds of 3 then 2 up to 10: an always-right case takes 5 samples at the uninformed prior, 3 once
# the prior has learnt that this target's cases are easy
QUIET = ProbeSettings(replay_first=False, k=10, sequential=SequentialConfig(k_max=10, rounds=(3, 2)),
                      max_concurrent_cases=1)


def probe_run(store: CaseStore, run_id: str, cases: int, *, start: int = 0, version: str | None = "1",
              settings: ProbeSettings = QUIET, **kw: object) -> ProbeResult:
    target = open_scripted(ScriptedAdapter(always_right, version=version), kw.pop("cache", None),  # type: ignore[arg-type]
                           budget=kw.pop("budget", None))  # type: ignore[arg-type]
    proposals = arithmetic_cases(cases, start=start)
    return run(probe(target, static_curriculum(proposals), settings, store=store, run_id=run_id, **kw))  # type: ignore[arg-type]


def test_a_second_run_of_the_same_version_starts_from_the_first_runs_prior(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    first = probe_run(store, "one", 12)
    assert [r.k for r in first.records][:4] == [5, 5, 5, 5]  # uninformed at first
    assert store.run("one").prior == PriorSource(target_id="scripted:test", version="1")
    second = probe_run(store, "two", 4, start=12)
    assert [r.k for r in second.records] == [3, 3, 3, 3]  # decided as well as the first run's last
    source = store.run("two").prior
    assert source is not None and (source.same, source.other) == (12, 0)
    assert source.describe() == "fitted on 12 earlier case(s) of scripted:test version 1"
    # every output words it the same, from the run record
    report = ReportInput.of(second.records, store.run("two"))
    assert ("prior", source.describe()) in report.headline()
    assert f"prior: {source.describe()}" in markdown_report(second.records, store.run("two"))


@pytest.mark.parametrize(("rule", "ks", "said"), [
    ("same", [5, 5, 5, 5], "no earlier cases of scripted:test version 2; 12 case(s) of version 1 left out "
                           "(version changed)"),
    ("any", [3, 3, 3, 3], "fitted on 12 earlier case(s) of scripted:test, 12 case(s) of version 1 counted alike "
                          "(probing.prior_versions: any)"),
    ("discount", [3, 3, 3, 3], "no earlier cases of scripted:test version 2; 12 case(s) of version 1 only as a "
                               "start worth 10 cases (version changed)"),
])
def test_a_new_version_counts_the_old_versions_cases_as_the_guard_says(
        tmp_path: Path, rule: str, ks: list[int], said: str) -> None:
    store = CaseStore(tmp_path)
    probe_run(store, "old", 12, version="1")
    new = probe_run(store, "new", 4, start=12, version="2", settings=replace(QUIET, prior_versions=rule))
    assert [r.k for r in new.records] == ks
    source = store.run("new").prior
    assert source is not None and source.describe() == said
    assert ("prior", said) in ReportInput.of(new.records, store.run("new")).headline()


def test_a_topic_gets_a_prior_of_its_own_only_with_enough_cases(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    target = open_scripted(ScriptedAdapter(moody("coins")))  # right on sums and pens, a coin flip on coins
    cases = (arithmetic_cases(20, topic="sums") + arithmetic_cases(20, topic="coins", start=20)
             + arithmetic_cases(5, topic="pens", start=40))
    run(probe(target, static_curriculum(cases), QUIET, store=store, run_id="one"))
    probe_run(store, "two", 1, start=45)
    source = store.run("two").prior
    assert source is not None and source.topics == ["coins", "sums"] and source.same == 45  # pens: 5 cases
    assert source.describe().endswith("; 2 topic(s) with >= 20 earlier cases start from their own: coins, sums")
    off = probe_run(store, "three", 1, start=46, settings=replace(QUIET, prior_topic_min=None))
    assert off.records and store.run("three").prior.topics == []  # type: ignore[union-attr]


def test_topic_priors_are_shrunk_towards_the_targets_and_used_only_above_the_threshold() -> None:
    book = PriorBook(DEFAULT_PRIOR, topic_min=20)
    for i in range(20):
        book.observe(f"easy-{i}", ((3,), 0, "easy"))
    for i in range(19):
        book.observe(f"hard-{i}", ((1, 1, 1), 0, "hard"))
    book.refit()
    assert set(book.topics) == {"easy"}
    assert book.prior_for("hard") is book.prior is book.prior_for("never seen")
    # the easy topic's prior says "easy" more firmly than the target's, which has both topics in it
    easy, everyone = (p.table()[-1].sum() for p in (book.prior_for("easy"), book.prior))
    assert easy > everyone
    # topics that say nothing of difficulty (each one a same mix of easy and hard cases) keep the target's
    fair = PriorBook(DEFAULT_PRIOR, topic_min=20)
    fair.observations = {f"{t}-{i}": (((3,), 0, t) if i % 3 else ((1, 1, 1), 0, t))
                         for t in ("dates", "units", "sums") for i in range(30)}
    fair.refit()
    assert fair.topics == {}
    one_topic = PriorBook(DEFAULT_PRIOR, topic_min=5)
    one_topic.observations = {f"c{i}": ((3,), 0, "only") for i in range(30)}
    one_topic.refit()
    assert one_topic.topics == {}  # one topic: its prior is the target's


def test_a_resumed_run_keeps_its_prior_and_where_it_came_from(tmp_path: Path) -> None:
    store, cache = CaseStore(tmp_path / "store"), tmp_path / "cache"
    probe_run(store, "one", 12)
    cut = probe_run(store, "two", 4, start=12, cache=cache, budget=Budget(max_calls=7))
    assert cut.stop_reason == "budget" and [(r.k, r.case_class) for r in cut.records][:2] == [
        (3, CaseClass.PASS), (3, CaseClass.PASS)] and cut.records[-1].case_class is CaseClass.UNRESOLVED
    before = store.run("two").prior
    resumed = probe_run(store, "two", 4, start=12, cache=cache, resume=True)
    assert resumed.run.finished and [r.k for r in resumed.records] == [3, 3, 3, 3]
    assert resumed.run.prior == before and before is not None and before.same == 12
