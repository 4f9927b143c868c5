"""The boundary search against a target through the real engine, runtime, store, CLI and reports.

The scripted agent answers the built-in ``arithmetic`` generator from its knobs: right up to a
number of digits, right on even samples only one digit further (p̂ 0.5: a frontier), and stably
wrong (the reference plus one) beyond. So the crossings are known exactly: with ``RIGHT_UP_TO = 3``,
P(correct) ≥ 0.8 up to 3 digits, 0.5 at 4 (below 0.8), 0 from 5 (below 0.3).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.generators._core import GENERATOR_KEY, Task, generator, get, ordinal
from frontier_qa.generators._explore import BOUNDARY_KEY, SHRUNK_KEY, Explorer, ExploreSettings, GeneratorCurriculum
from frontier_qa.generators._loading import load_generator
from frontier_qa.probing import ProbeSettings, SequentialConfig, probe
from frontier_qa.probing._run import ProbeRun
from frontier_qa.runtime._limits import Budget
from frontier_qa.store import CaseStore
from frontier_qa.store._records import CaseClass
from frontier_qa.target import Case
from frontier_qa.testing import ScriptedAdapter, open_scripted


def digits_agent(right_up_to: int, *, op: str = "mul"):
    def answer(case: Case, i: int) -> str:
        knobs = case.metadata[GENERATOR_KEY]["knobs"]
        d = int(knobs["digits"])
        if knobs["op"] != op or d <= right_up_to or (d == right_up_to + 1 and i % 2 == 0):
            return f"\\boxed{{{case.reference}}}"
        return f"\\boxed{{{int(case.reference or 0) + 1}}}"

    return answer


def _probe(store: Path, adapter: ScriptedAdapter, *, knobs: dict[str, Any] | None = None, **settings: Any):
    gen = load_generator({"use": "arithmetic", "knobs": knobs or {"op": ["mul"]}})
    curriculum = GeneratorCurriculum([gen], ExploreSettings(**settings))
    result = asyncio.run(probe(open_scripted(adapter), curriculum, ProbeSettings(), store=CaseStore(store)))
    return result, curriculum


def test_the_boundaries_are_found_shown_by_recorded_cases_and_kept_in_the_run_record(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(digits_agent(3))
    result, _ = _probe(tmp_path / "store", adapter)
    (boundary,) = result.run.boundaries
    assert boundary.axis == "arithmetic · digits (op=mul)"
    high, low = boundary.crossings
    assert (high.threshold, high.first_below, high.last_above, high.status) == (0.8, 4, 3, "found")
    assert (low.threshold, low.first_below, low.last_above, low.status) == (0.3, 5, 4, "found")
    points = {p.value: p for p in boundary.levels}
    assert points[1].accuracy == 1.0 and points[4].accuracy == 0.5 and points[8].accuracy == 0.0
    assert points[4].p_hat == 0.5 and points[1].p_hat == 1.0
    assert boundary.calls == sum(p.samples for p in boundary.levels)
    # each side of each crossing is a recorded case with its calibrated verdict
    records = {r.id: r for r in result.records}
    shown = {records[i].case.metadata[GENERATOR_KEY]["knobs"]["digits"]: records[i].case_class for i in boundary.cases}
    assert shown == {3: CaseClass.PASS, 4: CaseClass.FRONTIER, 5: CaseClass.FAILURE}
    assert all(BOUNDARY_KEY in records[i].case.metadata for i in boundary.cases)
    # the failure at 5 digits has minimal knobs (4 digits is a frontier, not a failure); what shrinks is the
    # instance: the generator's simplest one at 5 digits still fails, and is kept
    (shrunk,) = boundary.shrunk
    assert shrunk.knobs == shrunk.from_knobs == {"digits": 5, "op": "mul"}
    assert shrunk.accepted == 1 and shrunk.to_case != shrunk.from_case
    minimal = CaseStore(tmp_path / "store").latest()[shrunk.to_case]
    assert minimal.case_class is CaseClass.FAILURE and minimal.case.prompt.startswith("What is 1000")
    # kept in the store: the run record read back has the same boundaries
    stored = CaseStore(tmp_path / "store").run(result.run_id)
    assert stored.boundaries == result.run.boundaries
    # every target call is a sample of the search or of a recorded or shrinking case
    assert len(adapter.calls) >= boundary.calls + sum(r.k for r in result.records)


def test_a_failure_is_shrunk_to_the_smallest_knob_values_where_it_still_fails(tmp_path: Path) -> None:
    gen = get("arithmetic")
    adapter = ScriptedAdapter(digits_agent(3))  # mul fails stably from 5 digits; add and sub never fail

    async def go() -> Any:
        run = ProbeRun(open_scripted(adapter), CaseStore(tmp_path), ProbeSettings(), judge=None, sandbox=None,
                       progress=None)
        await run.start(None, False, "test")
        try:
            failed, _ = await run.prober.probe(gen.case(1, {"digits": 8, "op": "mul"}), run.draw,
                                               run_id=run.run_id, verified=True)
            assert failed.case_class is CaseClass.FAILURE
            return await Explorer(run, GeneratorCurriculum([gen])).shrink(gen, failed), run.records()
        finally:
            run.release()

    shrunk, records = asyncio.run(go())
    assert shrunk.from_knobs == {"digits": 8, "op": "mul"}
    assert shrunk.knobs == {"digits": 5, "op": "mul"}  # add at 5 digits passes: the op stays
    assert shrunk.accepted >= 1
    (kept,) = records  # only the minimal failing case is recorded
    assert kept.id == shrunk.to_case and kept.case_class is CaseClass.FAILURE
    assert kept.case.metadata[SHRUNK_KEY]["case"] == shrunk.from_case
    assert kept.case.metadata[GENERATOR_KEY]["knobs"] == {"digits": 5, "op": "mul"}


def test_a_generators_check_decides_answers_written_in_another_form(tmp_path: Path) -> None:
    def long_dates(case: Case, i: int) -> str:  # right, but never in the reference's ISO form
        import datetime as dt

        day = dt.date.fromisoformat(case.reference or "")
        return day.strftime("%B %d, %Y") if case.metadata[GENERATOR_KEY]["knobs"]["days"] < 60 else "2001-01-01"

    gen = load_generator({"use": "dates", "knobs": {"crosses": ["month"]}})
    curriculum = GeneratorCurriculum([gen], ExploreSettings(shrink=False))
    result = asyncio.run(probe(open_scripted(ScriptedAdapter(long_dates)), curriculum, ProbeSettings(),
                               store=CaseStore(tmp_path)))
    (boundary,) = result.run.boundaries
    assert boundary.crossings[0].first_below == 60 and boundary.crossings[0].last_above == 30
    assert {r.case_class for r in result.records} == {CaseClass.PASS, CaseClass.FAILURE}


def test_a_budget_ends_the_search_gracefully_with_what_it_found(tmp_path: Path) -> None:
    gen = load_generator({"use": "arithmetic", "knobs": {"op": ["mul"]}})
    adapter = ScriptedAdapter(digits_agent(3))
    target = open_scripted(adapter, budget=Budget(max_calls=20))
    result = asyncio.run(probe(target, GeneratorCurriculum([gen]), ProbeSettings(), store=CaseStore(tmp_path)))
    assert result.stop_reason == "budget"
    assert len(adapter.calls) <= 20
    (boundary,) = result.run.boundaries
    assert boundary.calls <= 20 and any(c.status == "undecided" for c in boundary.crossings)


def test_the_same_search_again_pays_nothing_twice_from_the_cache(tmp_path: Path) -> None:
    gen = load_generator({"use": "arithmetic", "knobs": {"op": ["mul"]}})
    adapter = ScriptedAdapter(digits_agent(3))

    def once() -> Any:
        target = open_scripted(adapter, tmp_path / "cache")
        try:
            return asyncio.run(probe(target, GeneratorCurriculum([gen], ExploreSettings(evidence=False)),
                                     ProbeSettings(), store=CaseStore(tmp_path / "store")))
        finally:
            target.flush()

    first = once()
    paid = len(adapter.calls)
    second = once()
    assert paid > 0 and len(adapter.calls) == paid
    assert second.run.boundaries[0].crossings == first.run.boundaries[0].crossings


def test_a_boundary_that_moved_toward_the_easy_end_is_a_finding_that_fails_the_gate(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mode.txt").write_text("3")
    (project / "agent.py").write_text(
        "from pathlib import Path\n"
        "def run(case, sample_index):\n"
        "    up_to = int(Path(__file__).with_name('mode.txt').read_text())\n"
        "    d = case.metadata['generator']['knobs']['digits']\n"
        "    right = d <= up_to or (d == up_to + 1 and sample_index % 2 == 0)\n"
        "    return '\\\\boxed{%s}' % (case.reference if right else int(case.reference) + 1)\n")
    (project / "probe.yaml").write_text(
        "target: python:agent.py:run\n"
        "curriculum: {type: generators, generators: [{use: arithmetic, knobs: {op: [mul]}}],"
        " search: {shrink: false}}\n"
        "gate: {max_failures: null}\n")
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "frontier_qa", *args], cwd=project, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "CI": "true"})

    first = cli("probe", "--config", "probe.yaml", "--out", "out1")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "boundary: arithmetic · digits (op=mul): ≥0.8 up to 3; <0.8 at 4" in first.stdout
    assert "boundary  arithmetic · digits (op=mul): P(correct) falls below 0.8 at digits=4" in first.stderr
    report = json.loads((project / "out1" / "report.json").read_text())
    assert report["boundaries"][0]["crossings"][0]["first_below"] == 4
    assert "Where the ability ends" in (project / "out1" / "report.md").read_text()
    assert (project / "out1" / "report.html").read_text().count("<svg") >= 1
    # the agent gets worse: right only up to 1 digit; a replay searches again on fresh instances
    (project / "mode.txt").write_text("1")
    again = cli("replay", "--config", "probe.yaml", "--out", "out2")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "2 boundary crossings moved toward the easy end (above the limit of 0)" in again.stdout
    junit = (project / "out2" / "junit.xml").read_text()
    assert 'classname="boundary" name="arithmetic · digits (op=mul)"' in junit and 'type="boundary-regression"' in junit
    assert "boundaries: 1 knob(s) searched: 2 crossings found, 0 undecided; moved since the last search: 2 toward " \
           "the easy end, 0 toward the hard end" in again.stdout
    moved = json.loads((project / "out2" / "report.json").read_text())["boundaries"][0]["moved"]
    assert {(m["threshold"], m["was"], m["now"], m["direction"]) for m in moved} == {
        (0.8, 4, 2, "easier"), (0.3, 5, 3, "easier")}


def test_random_instances_are_a_verified_task_source() -> None:
    curriculum = GeneratorCurriculum([get("arithmetic"), get("units")], ExploreSettings(seed=3))
    proposals = asyncio.run(curriculum.propose(20))
    assert len(proposals) == 20 and len({p.case.id for p in proposals}) == 20
    assert all(p.case.reference_verified and p.case.reference for p in proposals)
    again = asyncio.run(GeneratorCurriculum([get("arithmetic"), get("units")], ExploreSettings(seed=3)).propose(20))
    assert [p.case.id for p in again] == [p.case.id for p in proposals]


def test_a_generator_raising_mid_search_is_named_and_the_other_knobs_are_still_searched(tmp_path: Path) -> None:
    @generator(knobs=[ordinal("n", 1, 6, easy="low")], name="t_breaks_at_5")
    def breaks(rng: Any, n: int) -> Task:
        if n >= 5:
            raise KeyError("no table for n")
        return Task(f"What is {n} + {n}?", reference=str(2 * n))

    from frontier_qa.reports._gate import GateThresholds, evaluate_gate

    result = asyncio.run(probe(open_scripted(ScriptedAdapter()), GeneratorCurriculum([breaks, get("units")]),
                               ProbeSettings(), store=CaseStore(tmp_path)))
    broken, units = result.run.boundaries
    assert broken.problem is not None and "generator 't_breaks_at_5' at n=5" in broken.problem
    assert "raised KeyError" in broken.problem and "fix:" in broken.problem
    assert units.problem is None and units.crossings[0].status == "not reached"
    gate = evaluate_gate(result.records, GateThresholds(), facts=None, boundaries=result.run.boundaries)
    assert gate.exit_code == 3 and "t_breaks_at_5" in gate.health[0].message


def test_a_check_that_wants_the_order_is_not_fooled_by_answers_equal_as_sets(tmp_path: Path) -> None:
    @generator(knobs=[ordinal("n", 2, 7, easy="low")], name="t_sort")
    def sort_numbers(rng: Any, n: int) -> Task:
        values = rng.sample(range(10, 99), n)
        ref = ", ".join(map(str, sorted(values)))
        return Task(f"Sort ascending: {', '.join(map(str, values))}", reference=ref,
                    check=lambda answer: " ".join(answer.split()) == ref)

    def swaps(case: Case, i: int) -> str:  # right up to 3 numbers; beyond, the first two swapped on odd samples
        ordered = (case.reference or "").split(", ")
        if len(ordered) > 3 and i % 2:
            ordered[0], ordered[1] = ordered[1], ordered[0]
        return "\\boxed{" + ", ".join(ordered) + "}"

    result = asyncio.run(probe(open_scripted(ScriptedAdapter(swaps)), GeneratorCurriculum([sort_numbers]),
                               ProbeSettings(), store=CaseStore(tmp_path)))
    (boundary,) = result.run.boundaries
    points = {p.value: p for p in boundary.levels if p.accuracy is not None}
    assert points[2].accuracy == 1.0 and points[7].accuracy == 0.5  # not 1.0: the order is checked
    assert boundary.crossings[0].first_below == 4 and boundary.crossings[1].status == "not reached"
    shown = [r for r in result.records if r.case.metadata[GENERATOR_KEY]["knobs"]["n"] == 4]
    assert shown and shown[0].case_class is CaseClass.FRONTIER and shown[0].p_hat == 0.5


def test_answers_the_format_cannot_read_count_neither_way_and_are_named_with_the_fix(tmp_path: Path) -> None:
    def rambles(case: Case, i: int) -> str | None:  # right up to 5 digits; beyond, a reply auto cannot read
        d = case.metadata[GENERATOR_KEY]["knobs"]["digits"]
        return None if d >= 6 else case.reference  # the scripted adapter renders None as an unreadable reply

    gen = load_generator({"use": "arithmetic", "knobs": {"op": ["mul"]}})
    result = asyncio.run(probe(open_scripted(ScriptedAdapter(rambles)), GeneratorCurriculum([gen]), ProbeSettings(),
                               store=CaseStore(tmp_path)))
    (boundary,) = result.run.boundaries
    assert all(c.status != "found" or c.first_below is None for c in boundary.crossings)  # no false boundary
    assert {p.value for p in boundary.levels if p.unread} >= {6}
    # a value whose answers cannot be read is given up after min_instances, not sampled to the limit
    assert all(p.instances <= 3 for p in boundary.levels if p.unread and not p.samples)
    assert boundary.note is not None and "answer_format 'auto'" in boundary.note and "Fix:" in boundary.note
    assert "I am not sure" in boundary.note  # one of the agent's own replies
    assert boundary.problem is None  # most answers were read
    from frontier_qa.reports._report_input import boundaries_line

    assert "search samples unread (see each knob's note)" in boundaries_line(result.run.boundaries)
    assert all(r.case.answer_format == "auto" for r in result.records)  # never re-read "by meaning"


def test_an_agent_reliable_across_the_range_passes_with_a_case_at_the_hardest_value(tmp_path: Path) -> None:
    from frontier_qa.reports._gate import GateThresholds, evaluate_gate

    gen = load_generator({"use": "arithmetic", "knobs": {"op": ["add"]}})
    result = asyncio.run(probe(open_scripted(ScriptedAdapter()), GeneratorCurriculum([gen]), ProbeSettings(),
                               store=CaseStore(tmp_path)))
    (boundary,) = result.run.boundaries
    assert [c.status for c in boundary.crossings] == ["not reached", "not reached"]
    (shown,) = result.records
    assert shown.case.metadata[GENERATOR_KEY]["knobs"]["digits"] == 8 and shown.case_class is CaseClass.PASS
    gate = evaluate_gate(result.records, GateThresholds(), boundaries=result.run.boundaries)
    assert gate.exit_code == 0


def test_the_shipped_generators_config_builds_its_four_generators() -> None:
    from frontier_qa.config._build import build_generators
    from frontier_qa.config._layers import Override, load_config
    from tests.factories import REPO

    config = load_config(REPO / "configs" / "generators.yaml", [Override("target.spec", "mock:right", "--target")],
                         env={})
    curriculum = build_generators(config)
    assert [g.name for g in curriculum.generators] == ["arithmetic", "dates", "units", "word_problems"]
    assert curriculum.settings.search.confidence == 0.9 and curriculum.settings.shrink


def test_a_config_naming_no_generator_or_a_missing_one_says_so(tmp_path: Path) -> None:
    from frontier_qa.config._build import build_generators
    from frontier_qa.config._layers import load_config
    from frontier_qa.errors import ConfigError

    (tmp_path / "a.yaml").write_text("curriculum: {type: generators}\n")
    with pytest.raises(ConfigError, match="lists no generators"):
        build_generators(load_config(tmp_path / "a.yaml", env={}))
    (tmp_path / "b.yaml").write_text("curriculum: {type: generators, generators: [arithmatic]}\n")
    with pytest.raises(ConfigError, match="no generator named 'arithmatic'") as err:
        build_generators(load_config(tmp_path / "b.yaml", env={}))
    assert "curriculum.generators" in str(err.value) or err.value.key == ("curriculum", "generators")


def test_the_boundary_benchmark_runs_and_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.factories import load_benchmark

    bench = load_benchmark("boundary_bench")
    assert bench.main(["--quick", "--grid-max", "8"]) == 0
    out = capsys.readouterr().out
    for name in ("monotone", "non-monotone", "noisy"):
        assert f"\n{name} " in out
    assert "shrinking: planted minimal failing knob values returned in" in out


def test_a_run_stopped_by_its_budget_resumes_and_pays_no_sample_twice(tmp_path: Path) -> None:
    gen = load_generator({"use": "arithmetic", "knobs": {"op": ["add", "mul"]}})
    adapter = ScriptedAdapter(digits_agent(3))
    # rounds of 3: a resumed run refits the prior from the restored records at once, not where the
    # uninterrupted run did, so with rounds of 2 then 1 its later decisions differ (141 vs 150 calls;
    # exact with prior_refit_every=0): issue 33, the resumed prior
    settings = ProbeSettings(sequential=SequentialConfig(rounds=(3, 3)))

    def run(budget: int | None, *, resume: str | None = None) -> Any:
        target = open_scripted(adapter, tmp_path / "cache", budget=None if budget is None else Budget(max_calls=budget))
        try:
            return asyncio.run(probe(target, GeneratorCurriculum([gen]), settings, store=CaseStore(tmp_path / "s"),
                                     run_id=resume, resume=resume is not None))
        finally:
            target.flush()

    first = run(70)
    assert first.stop_reason == "budget" and len(adapter.calls) == 70
    done = run(None, resume=first.run_id)
    assert done.stop_reason != "budget" and len(done.run.boundaries) == 2
    fresh = ScriptedAdapter(digits_agent(3))
    target = open_scripted(fresh, tmp_path / "cache-2")
    once = asyncio.run(probe(target, GeneratorCurriculum([gen]), settings, store=CaseStore(tmp_path / "t")))
    assert len(adapter.calls) == len(fresh.calls)  # stopped and resumed: the calls of one uninterrupted run
    assert [b.crossings for b in done.run.boundaries] == [b.crossings for b in once.run.boundaries]


def test_the_agents_own_error_is_shown_redacted_and_no_secret_reaches_a_file(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from frontier_qa.reports import write_reports
    from frontier_qa.runtime import open_target

    secret = "sk-boundary-planted-0123456789abcdef"
    monkeypatch.setenv("MY_SERVICE_API_KEY", secret)
    (tmp_path / "raising_agent.py").write_text(
        "import os\n"
        "def run(case, sample_index):\n"
        "    if case.metadata['generator']['knobs']['digits'] == 4:\n"
        "        raise RuntimeError('upstream refused key ' + os.environ['MY_SERVICE_API_KEY'])\n"
        "    return case.reference\n")
    target = open_target(f"python:{tmp_path / 'raising_agent.py'}:run", cache=tmp_path / "cache")
    gen = load_generator({"use": "arithmetic", "knobs": {"op": ["mul"]}})
    result = asyncio.run(probe(target, GeneratorCurriculum([gen]), ProbeSettings(), store=CaseStore(tmp_path / "store")))
    (boundary,) = result.run.boundaries
    assert boundary.note is not None and "failed (mostly at digits=4)" in boundary.note
    assert "RuntimeError: upstream refused key ***" in boundary.note and secret not in boundary.note
    assert {p.value: p.failed for p in boundary.levels}[4] >= 6
    write_reports(tmp_path / "out", result.records, result.run)
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leaked == []
