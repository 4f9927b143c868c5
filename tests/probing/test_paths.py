"""Path self-consistency, trajectory expectations and pass^k, probed end to end.

The target is a real Python agent (:class:`~frontier_qa.adapters.workflow.PythonAgentAdapter`)
in the real runtime: it returns tool calls as an agent does, choosing between two tools at random
for one request, always calling a forbidden tool for another, and following one path for a third.
The store is a real :class:`~frontier_qa.store.CaseStore`; refreshes judge its stored samples.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.adapters.workflow import PythonAgentAdapter
from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._engine import ProbeResult, ProbeSettings, probe
from frontier_qa.probing._reconcile import refresh_store
from frontier_qa.probing._refresh import Action
from frontier_qa.probing._sequential import POLICIES, SequentialConfig
from frontier_qa.reports import GateThresholds, evaluate_gate, summarize
from frontier_qa.scoring._paths import PassKSettings, PathSettings
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CaseRecord
from frontier_qa.target import Case, Expectations, ToolArguments
from frontier_qa.testing import case, open_scripted, pick, static_curriculum
from tests.factories import run

PROMPTS = {
    "scatter": "Which city is the seat of the French government?",
    "wrong": "Name the capital of France, please.",
    "stable": "Tell me where the president of France works, as a city.",
    "undecided": "Paris or Lyon: which one is the capital of France today?",
}
EXPECT = Expectations(tools_used=("capital_of",), tools_not_used=("delete_account",))
CALLS: list[tuple[str, int]] = []


def agent(case: Case, sample_index: int) -> dict[str, Any]:
    """Answers Paris; its path depends on the case's ``kind`` (module docstring)."""
    CALLS.append((case.id, sample_index))
    kind = case.metadata.get("kind", "stable")
    tools = {
        "scatter": [pick({"capital_of": 1, "lookup_city": 1}, case.id, sample_index)],
        "wrong": ["delete_account", "capital_of"],
        "undecided": [pick({"capital_of": 3, "lookup_city": 1}, case.id, sample_index)],
        "answers": ["capital_of"],
    }.get(kind, ["capital_of"])
    answer = pick({"Paris": 1, "Lyon": 1}, case.id, sample_index) if kind == "answers" else "Paris"
    return {"answer": f"\\boxed{{{answer}}}",
            "tool_calls": [{"name": t, "arguments": json.dumps({"country": "France"}), "result": "Paris"}
                           for t in tools]}


def target() -> Any:
    return open_scripted(PythonAgentAdapter(agent, id="python:paths"))


def cases(*kinds: str, expect: Expectations | None = EXPECT, **metadata: Any) -> list[Case]:
    return [replace(case(k, PROMPTS.get(k, f"Case {k}: the capital of France?"), reference="Paris", kind=k,
                         **metadata), expect=expect) for k in kinds]


def probed(tmp_path: Path, found: list[Case], settings: ProbeSettings | None = None) -> ProbeResult:
    settings = settings or ProbeSettings(replay_first=False)
    return run(probe(target(), static_curriculum(found), settings, store=CaseStore(tmp_path)))


def by_id(result: ProbeResult) -> dict[str, CaseRecord]:
    return {r.id: r for r in result.records}


def exact_pass_k(record: CaseRecord, k: int) -> float:
    """pass^k recomputed from the stored samples alone: C(passed, k) / C(n, k)."""
    passed = sum(1 for s in record.samples if s.passed)
    return math.comb(passed, k) / math.comb(len(record.samples), k)


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> ProbeResult:
    """The four kinds of path, probed under the default (calibrated) policy and pass^8."""
    return probed(tmp_path_factory.mktemp("four"), cases(*PROMPTS))


def test_scatter_wrong_stable_and_undecided_paths_are_told_apart(four: ProbeResult) -> None:
    got = by_id(four)
    assert {cid: r.path.finding if r.path else "-" for cid, r in got.items()} == {
        "scatter": "scatter", "wrong": "wrong", "stable": None, "undecided": "undecided"}
    # the answers agree everywhere (Paris, the reference): a path finding is not an answer class
    assert {r.case_class.value for r in got.values()} == {"pass"}
    scatter = got["scatter"].path
    assert scatter is not None and scatter.reason.startswith("paths scatter: ")
    top, second = scatter.clusters
    assert f"{top.path} {top.count} of {top.count + second.count}" in scatter.reason
    assert f"path p̂ = {scatter.p_hat:.2f}" in scatter.reason and "P(below, in, above the band" in scatter.reason
    wrong = got["wrong"].path
    assert wrong is not None and wrong.majority == "delete_account → capital_of" and wrong.decision == "above"
    assert wrong.reason.endswith(f"called delete_account, which must not be called ({got['wrong'].k} of "
                                 f"{got['wrong'].k})")
    stable = got["stable"].path
    assert stable is not None and stable.p_hat == 1.0 and stable.reason.startswith("one path: capital_of")
    undecided = got["undecided"].path
    assert undecided is not None and undecided.decision is None
    assert undecided.reason.startswith("path undecided at the sample limit")
    # the path is sampled for with the answers' policy: up to its k_max, never past it
    assert got["undecided"].k == POLICIES["calibrated"].k
    summary = summarize(four.records)
    assert summary.path_findings == {"scatter": 1, "wrong": 1, "undecided": 1} and summary.paths == 4


def test_each_sample_records_its_path_and_misses(four: ProbeResult) -> None:
    wrong = by_id(four)["wrong"]
    assert {s.path for s in wrong.samples} == {"delete_account → capital_of"}
    assert {s.misses for s in wrong.samples} == {("called delete_account, which must not be called",)}
    scatter = by_id(four)["scatter"]
    for sample in scatter.samples:
        assert sample.path in ("capital_of", "lookup_city")
        assert sample.passed is (sample.path == "capital_of")
        assert sample.misses == (() if sample.path == "capital_of" else ("never called capital_of",))
    line = json.loads(wrong.model_dump_json())
    assert line["path"]["finding"] == "wrong" and line["samples"][0]["path"] == "delete_account → capital_of"


def test_pass_hat_k_is_the_exact_count_over_the_stored_samples(four: ProbeResult) -> None:
    for record in four.records:
        assert record.pass_k is not None and record.pass_k.k == 8
        assert record.k >= 8  # every counted case reaches k, whatever the policy would stop at
        assert record.pass_k.n == len(record.samples)
        assert record.pass_k.passed == sum(1 for s in record.samples if s.passed)
        assert record.pass_k.value == pytest.approx(exact_pass_k(record, 8), abs=1e-12)
    got = by_id(four)
    assert got["stable"].pass_k is not None and got["stable"].pass_k.value == 1.0
    assert got["wrong"].pass_k is not None and got["wrong"].pass_k.value == 0.0
    n = got["wrong"].k
    assert got["wrong"].pass_k.misses == [f"called delete_account, which must not be called ({n} of {n})"]
    mean = sum(exact_pass_k(r, 8) for r in four.records) / 4
    summary = summarize(four.records).pass_k
    assert summary is not None and summary.value == pytest.approx(mean) and summary.cases == 4


def test_a_counted_case_reaches_k_past_the_policy_limit_and_others_never_pass_it(tmp_path: Path) -> None:
    economy = POLICIES["economy"]  # k_max 8: a stable case stops far sooner
    settings = ProbeSettings(replay_first=False, k=economy.k, sequential=economy.sequential,
                             pass_k=PassKSettings(k=12), path=PathSettings(sample=False))
    found = cases("stable") + cases("undecided", expect=None)
    got = by_id(probed(tmp_path, found, settings))
    assert got["stable"].k == 12 and got["stable"].pass_k is not None and got["stable"].pass_k.value == 1.0
    plain = got["undecided"]  # no expectations: not counted, and the policy's k_max holds
    assert plain.pass_k is None and plain.k <= economy.k
    assert all(s.misses is None for s in plain.samples) and plain.path is not None


def test_judged_mode_counts_right_answers_and_names_the_wrong_ones(tmp_path: Path) -> None:
    settings = ProbeSettings(replay_first=False, pass_k=PassKSettings(k=4, cases="judged"))
    record = by_id(probed(tmp_path, cases("answers", expect=None), settings))["answers"]
    assert record.pass_k is not None and record.pass_k.k == 4
    wrong = [s for s in record.samples if s.answer == "Lyon"]
    assert wrong and all(s.misses == ("answer 'Lyon' is not the reference 'Paris'",) for s in wrong)
    assert all(s.misses == () for s in record.samples if s.answer == "Paris")
    assert record.pass_k.value == pytest.approx(exact_pass_k(record, 4))
    assert record.path is not None and record.path.finding is None  # one path, no expectations to miss


def test_fixed_k_calls_a_path_below_the_band_high_end_a_scatter(tmp_path: Path) -> None:
    fixed = ProbeSettings(replay_first=False, k=10, sequential=None, pass_k=PassKSettings(cases="off"))
    got = by_id(probed(tmp_path, cases("scatter", "stable"), fixed))
    assert got["scatter"].k == 10 and got["scatter"].path is not None
    assert got["scatter"].path.finding == "scatter" and got["scatter"].path.p_hat < 0.8
    assert got["stable"].path is not None and got["stable"].path.finding is None
    assert got["stable"].pass_k is None and all(s.misses == () for s in got["stable"].samples)


def test_an_argument_check_file_is_found_beside_the_cases_file(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("def is_germany(args):\n    return args.get('country') == 'Germany'\n")
    expect = Expectations(arguments=(ToolArguments(tool="capital_of", check="checks.py:is_germany"),))
    found = cases("stable", expect=expect, expect_base=str(tmp_path))
    record = by_id(probed(tmp_path / "store", found, ProbeSettings(replay_first=False, k=6,
                                                                   sequential=SequentialConfig(k_max=6))))["stable"]
    assert record.path is not None and record.path.finding == "wrong"
    assert record.samples[0].misses == ('capital_of arguments {"country": "France"} fail check checks.py:is_germany',)


def test_an_edited_expectation_is_judged_again_from_the_stored_samples_without_calls(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    settings = ProbeSettings(replay_first=False)
    found = cases("wrong", "stable")
    first = by_id(run(probe(target(), static_curriculum(found), settings, store=store)))
    assert first["wrong"].path is not None and first["wrong"].path.finding == "wrong"
    CALLS.clear()
    # the author allows delete_account after all, and forbids lookup_city instead
    edited = Expectations(tools_used=("capital_of",), tools_not_used=("lookup_city",))
    proposals = [Proposal(replace(c, expect=edited), source="scripted") for c in found]
    done = run(refresh_store(store, proposals, settings))
    assert CALLS == []  # judged from the stored steps: no target call
    assert [r.action for r in done.refreshed] == [Action.REFRESHED, Action.REFRESHED] and not done.reprobe
    assert done.refreshed[0].change == "expect changed"
    # the message says the re-judgement called nothing, and that the path finding and pass^k moved
    assert done.refreshed[0].message == ("expect changed: re-judged from the 8 stored samples without a call "
                                         "(still pass; path: wrong path → stable; pass^8 0.00 → 1.00)")
    assert done.refreshed[1].message == "expect changed: re-judged from the 8 stored samples without a call (still pass)"
    again = {r.id: r for r in done.records}
    assert again["wrong"].path is not None and again["wrong"].path.finding is None
    assert again["wrong"].pass_k is not None and again["wrong"].pass_k.value == 1.0
    assert all(s.misses == () for s in again["wrong"].samples)
    assert [s.path for s in again["wrong"].samples] == [s.path for s in first["wrong"].samples]
    assert again["stable"].pass_k == first["stable"].pass_k and again["stable"].case.expect == edited
    # stored now under the new inputs: a second refresh finds nothing to do
    assert not run(refresh_store(store, proposals, settings)).changed


# --- the gate ----------------------------------------------------------------------------


def test_the_gate_checks_wrong_paths_scatter_and_pass_hat_k(four: ProbeResult) -> None:
    default = {c.name: c for c in evaluate_gate(four.records).checks}
    assert not default["wrong_paths"].passed and "path_scatter" not in default and "pass_hat_k" not in default
    assert default["wrong_paths"].message == "1 case on a wrong path (above the limit of 0)"
    strict = GateThresholds(max_wrong_paths=1, max_path_scatter=0, min_pass_hat_k=0.9)
    checks = {c.name: c for c in evaluate_gate(four.records, strict).checks}
    assert checks["wrong_paths"].passed
    assert not checks["path_scatter"].passed and checks["path_scatter"].message.startswith("1 case whose paths")
    value = summarize(four.records).pass_k
    assert value is not None and value.value is not None
    assert checks["pass_hat_k"].value == value.value and not checks["pass_hat_k"].passed
    assert checks["pass_hat_k"].message == (f"pass^8 {value.value:.2f} over 4 case(s) is below the minimum of 0.90")
    assert evaluate_gate(four.records, GateThresholds(min_pass_hat_k=0.0, max_wrong_paths=None)).passed
    # a run whose cases call no tool has no path to check: its gate reads as before
    plain = [r.model_copy(update={"path": None, "pass_k": None}) for r in four.records]
    assert {c.name for c in evaluate_gate(plain, strict).checks}.isdisjoint({"wrong_paths", "path_scatter",
                                                                            "pass_hat_k"})


def test_the_pytest_plugin_and_the_cli_judge_with_the_same_gate(four: ProbeResult, tmp_path: Path) -> None:
    from frontier_qa.session._outcome import Invocation, judge
    from frontier_qa.session._suite_run import judge_runs

    thresholds = GateThresholds(max_wrong_paths=0, max_path_scatter=1, min_pass_hat_k=0.5)
    # the plugin hands each worker's gate to the controller as JSON (plugins/_pytest_suite.py)
    carried = GateThresholds(**json.loads(json.dumps(dataclasses.asdict(thresholds))))
    assert carried == thresholds
    store = CaseStore(tmp_path)
    from frontier_qa.store._records import RunRecord

    store.start_run(RunRecord(run_id="suite-1", target_id="python:paths"))
    for record in four.records:
        store.append(record.model_copy(update={"run_id": "suite-1"}))
    store.finish_run("suite-1")
    plugin = judge_runs(store, "suite-", carried, generated=True, items=4, title="t", invocation=Invocation())
    cli = judge("probe", four.records, thresholds)
    assert [(c.name, c.value, c.passed, c.message) for c in plugin.gate.checks] == \
        [(c.name, c.value, c.passed, c.message) for c in cli.gate.checks]
    assert not cli.gate.passed and "wrong_paths" in {c.name for c in cli.gate.checks if not c.passed}


# --- config --------------------------------------------------------------------------------


def test_probing_path_and_pass_k_are_config_keys(tmp_path: Path) -> None:
    from frontier_qa.config import load_config
    from frontier_qa.config._build import build_settings

    config = tmp_path / "probe.yaml"
    config.write_text("probing:\n  path: {granularity: arguments, key_arguments: {search: [query]}, sample: false}\n"
                      "  pass_k: {k: 4, cases: judged}\ngate: {min_pass_hat_k: 0.5, max_path_scatter: 2}\n")
    loaded = load_config(config, env={})
    settings = build_settings(loaded)
    assert settings.path == PathSettings(granularity="arguments", key_arguments={"search": ("query",)}, sample=False)
    assert settings.pass_k == PassKSettings(k=4, cases="judged")
    assert loaded.gate.min_pass_hat_k == 0.5 and loaded.gate.max_path_scatter == 2 and loaded.gate.max_wrong_paths == 0
    for bad, key in (("  pass_k: {k: 0}\n", "probing.pass_k.k"), ("  path: {granularity: words}\n",
                                                                   "probing.path.granularity")):
        config.write_text("probing:\n" + bad)
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            build_settings(load_config(config, env={}))
    with pytest.raises(ConfigError, match="PassKSettings.k"):
        PassKSettings(k=0)


def test_the_config_reference_shows_the_new_keys() -> None:
    import importlib.util

    from tests.factories import REPO

    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "_hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    table = hooks.config_reference()
    for key in ("probing.path", "probing.path.granularity", "probing.path.sample", "probing.pass_k.k",
                "probing.pass_k.cases", "gate.min_pass_hat_k", "gate.max_wrong_paths", "gate.max_path_scatter"):
        row = next(line for line in table.splitlines() if line.startswith(f"| `{key}` |"))
        assert row.rstrip(" |").split("|")[-1].strip(), f"{key} has no description"


def test_accepting_a_case_keeps_its_path_finding_in_the_top_up_record(tmp_path: Path) -> None:
    """The samples drawn to strengthen a baseline are the case's latest record: judged like a probe's."""
    from frontier_qa.probing._baseline_accept import accept

    store = CaseStore(tmp_path)
    settings = ProbeSettings(replay_first=False, baseline_samples=40)
    run(probe(target(), static_curriculum(cases("wrong")), settings, store=store))
    (done,) = run(accept(store, ["wrong"], settings, target=target(), run_id="accept-1"))
    assert done.sampled > 0
    latest = max((r for r in store.case_records() if r.id == "wrong"), key=lambda r: r.finished_at)
    assert latest.run_id == "accept-1"
    assert latest.path is not None and latest.path.finding == "wrong"
    assert latest.pass_k is not None and latest.pass_k.n == done.sampled and latest.pass_k.value == 0.0
    assert summarize(store.case_records()).path_findings["wrong"] == 1


def test_a_misspelt_forbidden_tool_is_not_judged_and_the_run_says_so(tmp_path: Path) -> None:
    """``tools_not_used: [delete_acount]`` would never miss: the run could not judge, and names the fix."""
    result = probed(tmp_path, cases("wrong", expect=Expectations(tools_not_used=("delete_acount",))))
    record = by_id(result)["wrong"]
    assert record.path is not None and record.path.finding is None
    assert record.path.unjudged is not None and "'delete_acount' (did you mean 'delete_account'" in record.path.unjudged
    gate = evaluate_gate(summarize(result.records))
    assert gate.exit_code == 3 and any("delete_acount" in reason for reason in gate.reasons)


def test_a_check_that_raises_names_its_own_error_and_a_missing_function_names_the_close_one(tmp_path: Path) -> None:
    from frontier_qa.scoring._paths import resolve_check
    from frontier_qa.target import ToolCall, Trajectory

    (tmp_path / "checks.py").write_text("def is_known(args):\n    return args['acount'] == 'A-1'\n")
    sample = Trajectory(text="done", tool_calls=(ToolCall("lookup", '{"account": "A-1"}', "ok"),))
    expect = Expectations(arguments=(ToolArguments(tool="lookup", check="checks.py:is_known"),))
    from frontier_qa import check_trajectory

    (miss,) = check_trajectory(sample, expect, base=str(tmp_path))
    assert "the check raised KeyError: 'acount'" in miss
    with pytest.raises(ConfigError) as err:
        resolve_check("checks.py:is_knwon", str(tmp_path))
    assert err.value.hint == "did you mean checks.py:is_known?"


def test_a_replay_gate_leaves_a_known_wrong_path_known_as_it_does_a_known_failure(four: ProbeResult) -> None:
    from frontier_qa.config._build import gate_thresholds
    from frontier_qa.config._schema import ProbeConfig

    config = ProbeConfig()
    probe_gate = evaluate_gate(summarize(four.records), gate_thresholds(config.gate))
    replay_gate = evaluate_gate(summarize(four.records), gate_thresholds(config.replay.gate))
    assert [c.name for c in probe_gate.checks if not c.passed] == ["wrong_paths"]
    assert "wrong_paths" not in [c.name for c in replay_gate.checks]
