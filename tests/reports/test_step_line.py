"""The one-line step list of an answer cluster (``cases show``, report.html): labels, cuts, clusters."""

from __future__ import annotations

from frontier_qa.reports._html import html_report
from frontier_qa.reports._step_line import cluster_steps, step_label, step_line
from frontier_qa.store._records import CaseClass, CaseRecord, case_record
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
