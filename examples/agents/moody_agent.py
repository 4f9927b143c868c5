"""An agent that is reliable everywhere except on one topic, where it guesses.

On cases whose topic is ``"weekdays"`` (or whose task mentions a weekday) it hesitates
between two weekdays (a pair fixed per case) and picks one at random, seeded per sample
(``random.Random(seed)``): its true majority probability is 1/2, well inside the frontier
band. (Version 1 picked any of the seven weekdays: p* = 1/7, below the band, which a probe
of k = 8 could not tell from the band.) On every other task it answers like the calculator
agent (p̂ = 1). Probe tests use it as a target with a known
frontier. It is an object with an async ``arun`` method (the object form of the contract).

Spec: ``python:examples/agents/moody_agent.py:MoodyAgent`` (the class is instantiated,
with ``agent_kwargs`` such as ``{"topic": "calendar"}``).
"""

from __future__ import annotations

import importlib.util
import random
import re
import sys
from pathlib import Path
from typing import Any

from frontier_qa.adapters.workflow import AgentContext
from frontier_qa.target import Case

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _calculator() -> Any:
    """The sibling calculator agent, loaded by path (examples/ is not a package)."""
    name = "frontier_qa_example_calculator_agent"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("calculator_agent.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class MoodyAgent:
    """Consistent on arithmetic, a coin flip over weekdays on ``topic``.

    Args:
        topic: the case topic on which the agent guesses.
        words: more words that make it guess when a task contains one (whole words, any case),
            e.g. ``["dollar", "dollars", "cents"]`` for an agent that is weak on money.
    """

    version = "2"

    def __init__(self, topic: str = "weekdays", words: list[str] | tuple[str, ...] = ()) -> None:
        self.topic = topic
        self.words = {w.lower() for w in words}
        if self.words:  # other answers: other cached samples
            self.version = f"1+words={','.join(sorted(self.words))}"

    def guesses(self, case: Case) -> bool:
        """Whether the agent is unreliable on ``case``."""
        text = case.prompt.lower()
        tokens = set(re.findall(r"[a-z$]+", text))
        return (case.topic == self.topic or any(day.lower() in text for day in WEEKDAYS)
                or bool(self.words & tokens))

    async def arun(self, task: str, case: Case, seed: int | None, ctx: AgentContext) -> dict[str, Any]:
        if self.guesses(case):
            pair = random.Random(case.id).sample(WEEKDAYS, 2)
            rng = random.Random(seed if seed is not None else ctx.sample_index)
            ctx.step("guess a weekday")
            return {"answer": f"\\boxed{{{rng.choice(pair)}}}", "steps": 1}
        return _calculator().solve(task, ctx)
