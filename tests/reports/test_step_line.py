"""The one-line step list of an answer cluster (``cases show``, report.html): labels, cuts, clusters."""

from __future__ import annotations

from frontier_qa.reports._html import html_report
from frontier_qa.reports._step_line import cluster_steps, path_line_text, path_lines, step_label, step_line
from frontier_qa.scoring.consistency import self_consistency
from frontier_qa.store._records import CaseClass, CaseRecord, PathCluster, PathRecord, case_record, clusters_of
from frontier_qa.store._steps import MAX_STEPS, Step, steps_of
from frontier_qa.target import Case, ToolCall, Trajectory
from tests.factories import T0


def _tool(name: str, arguments: str, error: str | None = None) -> dict[str, object]:
    event: dict[str, object] = {"role": "tool", "name": name, "arguments": arguments, "content": "r"}
    return event if error is None else {**event, "error": error}


MODEL = {"role": "step", "content": "model call", "kind": "model", "model": "gpt-4o"}


def test_labels_say_what_each_step_was() -> None:
    assert step_label(Step(kind="model", name="gpt-4o")) == "model"
    assert step_label(Step(kind="tool", name="search", arguments='{"query": "paris", "n": 3}')) == \
        'search(query="paris", n=3)'
    assert step_label(Step(kind="tool", name="shell", arguments="ls -la")) == "shell(ls -la)"
    assert step_label(Step(kind="tool", name="fetch", arguments="{}", error="HTTP 500")) == "fetch() ✗"
    assert step_label(Step(kind="handoff", name="Billing")) == "handoff(Billing)"
    assert step_label(Step(kind="step", name="plan the search")) == "plan the search"
    long = step_label(Step(kind="tool", name="search", arguments='{"query": "' + "x" * 500 + '"}'))
    assert len(long) < 80 and long.endswith("…)")


def test_steps_come_from_the_trajectory_bounded() -> None:
    many = Trajectory(text="a", messages=tuple([MODEL, _tool("search", '{"q": 1}')] * 50))
    steps = steps_of(many)
    assert len(steps) == MAX_STEPS and steps[MAX_STEPS // 2] == Step(kind="cut", name=str(100 - MAX_STEPS + 1))
    returned = Trajectory(text="a", tool_calls=(ToolCall("calc", '{"x": 2}', "4"),))  # an agent's own list
    assert steps_of(returned) == (Step(kind="tool", name="calc", arguments='{"x": 2}'),)
    assert steps_of(Trajectory(text="a", messages=({"role": "user", "content": "hi"},))) == ()


def _record(*samples: tuple[str | None, tuple[dict[str, object], ...]]) -> CaseRecord:
    trajectories = [Trajectory(text=a, messages=m, sample_index=i, error=None if a else "RuntimeError: down")
                    for i, (a, m) in enumerate(samples)]
    return case_record(Case(id="c", prompt="Capital of France?", reference="Paris"), trajectories,
                       [a for a, _ in samples], None, case_class=CaseClass.PASS, run_id="r", target_id="t",
                       started_at=T0)


def test_each_answer_cluster_gets_the_line_of_its_first_sample() -> None:
    record = _record(("Paris", (MODEL, _tool("search", '{"query": "paris"}'), MODEL)),
                     ("Lyon", (MODEL, MODEL, MODEL)),
                     ("Paris", (MODEL,)),
                     (None, (MODEL, _tool("search", '{"query": "x"}', error="boom"))),
                     ("Nice", ()))
    lines = cluster_steps(record)
    assert lines == {"Paris": 'model → search(query="paris") → model → answer "Paris"',
                     "Lyon": 'model ×3 → answer "Lyon"',
                     "call failed: RuntimeError: down": 'model → search(query="x") ✗ → failed'}
    page = html_report([record])
    assert page.count('<div class="steps">') == 3


def test_a_long_line_keeps_its_first_steps_and_its_end() -> None:
    tools = tuple(_tool(f"tool{i}", "{}") for i in range(40))
    record = _record(("Paris", (MODEL, *tools, MODEL)))
    line = step_line(record.samples[0], chars=120)
    assert line is not None and len(line) <= 120
    assert line.startswith("model → tool0()") and line.endswith('model → answer "Paris"') and " more → " in line


def _split(record: CaseRecord, paths: list[str], misses: list[tuple[str, ...]]) -> CaseRecord:
    """``record`` with each sample's path and misses, a path record of those paths, and its answers
    clustered as the prober clusters them (``paris.`` joins ``Paris``).
    """
    samples = [s.model_copy(update={"path": p, "misses": m}) for s, p, m in zip(record.samples, paths, misses,
                                                                                 strict=True)]
    counts = {p: paths.count(p) for p in dict.fromkeys(paths)}
    clusters = [PathCluster(path=p, count=n) for p, n in sorted(counts.items(), key=lambda pn: -pn[1])]
    path = PathRecord(granularity="tools", p_hat=clusters[0].count / len(paths), majority=clusters[0].path,
                      clusters=clusters, finding="scatter" if len(clusters) > 1 else None)
    answers = self_consistency([s.answer for s in samples])
    return record.model_copy(update={"samples": samples, "path": path, "clusters": clusters_of(answers)})


CAPITAL = (MODEL, _tool("capital_of", '{"country": "France"}'), MODEL)
CITY = (MODEL, _tool("lookup_city", '{"name": "Paris"}'), MODEL)
FORBID = "called lookup_city, which must not be called"


def test_an_answer_reached_by_several_paths_gets_one_line_per_path() -> None:
    # the second "paris." is the same answer as "Paris" (exact clusters normalize): it counts under it
    record = _split(_record(("Paris", CAPITAL), ("Paris", CITY), ("paris.", CITY), ("Paris", CAPITAL),
                            ("Lyon", CITY)),
                    ["capital_of", "lookup_city", "lookup_city", "capital_of", "lookup_city"],
                    [(), (FORBID,), (FORBID,), (), (FORBID,)])
    split = path_lines(record)
    assert [(line.path, line.count, line.sample.sample_index) for line in split["Paris"]] == \
        [("capital_of", 2, 0), ("lookup_city", 2, 1)]
    assert [path_line_text(line) for line in split["Paris"]] == [
        '2 × steps: model → capital_of(country="France") → model → answer "Paris"',
        '2 × steps: model → lookup_city(name="Paris") → model → answer "Paris"']
    assert [path_line_text(line) for line in split["Lyon"]] == [
        '1 × steps: model → lookup_city(name="Paris") → model → answer "Lyon"']
    page = html_report([record])
    assert ('<div class="steps">2 × steps: model → lookup_city(name=&quot;Paris&quot;) → model → answer '
            f"&quot;Paris&quot; · misses: {FORBID}</div>") in page
    assert "2 × steps: model → capital_of(country=&quot;France&quot;) → model → answer &quot;Paris&quot; · " \
           "misses: met the expectations</div>" in page


def test_one_path_or_none_analysed_keeps_one_line_per_answer() -> None:
    record = _record(("Paris", CAPITAL), ("Paris", CAPITAL))
    assert path_lines(record) == {}  # not analysed
    assert path_lines(_split(record, ["capital_of"] * 2, [(), ()])) == {}
    bare = _split(_record(("Paris", ()), ("Paris", ())), ["capital_of", "lookup_city"], [(), (FORBID,)])
    assert [path_line_text(line) for line in path_lines(bare)["Paris"]] == ["1 × path: capital_of",
                                                                           "1 × path: lookup_city"]
