"""The tool-integrated executor (Agent0 §3.3) with a scripted model and the real sandbox.

The inner target is a small scripted :class:`Target` (it answers from the conversation it is
shown, like a model would); the code it writes really runs in the sandbox, so the answers
below can only come out right if the code was executed and its output fed back.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from frontier_qa.adapters.tool_executor import OUTPUT_STOP, ToolExecutor, create, find_code
from frontier_qa.errors import ConfigError, TargetError
from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.target import Adapter, Case, Sampling, Trajectory, Usage

SANDBOX = Sandbox(timeout_s=2)
CASE = Case(id="mul", prompt="What is 17 * 23?")
Script = Callable[[Case, int], str]


class ScriptedModel:
    """A Target whose 'model' is a function of (conversation, sample index)."""

    def __init__(self, script: Script, *, prefill: bool, fail_on_turn: int | None = None) -> None:
        self.id = "scripted-model"
        self.supports_prefill = prefill
        self.script = script
        self.fail_on_turn = fail_on_turn
        self.calls: list[tuple[Case, int, Sampling, int]] = []

    async def sample(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        self.calls.append((case, n, sampling, start))
        if self.fail_on_turn is not None and len(self.calls) == self.fail_on_turn:
            return [Trajectory(text=None, error="transient: 503 (gave up after 3 attempts)", sample_index=start)]
        return [
            Trajectory(text=self.script(case, start + j), usage=Usage(10, 5), cost_usd=0.25, sample_index=start + j)
            for j in range(n)
        ]


def outputs_so_far(case: Case) -> list[str]:
    """Tool outputs the conversation already shows (prefill: in the assistant text; chat: user turns)."""
    shown = "\n".join(str(m.get("content")) for m in case.history)
    return re.findall(r"```output\n(.*?)\n```", shown, re.DOTALL)


def multiply(case: Case, index: int) -> str:
    outputs = outputs_so_far(case)
    if not outputs:
        # a server that ignores stop strings: a made-up output and answer follow the block
        return "Let me compute.\n```python\nprint(17 * 23)\n```\n```output\n999\n```\nSo \\boxed{999}"
    return f"The product is {outputs[-1]}, so \\boxed{{{outputs[-1]}}}."


def chat_model(case: Case) -> str:
    """The same idea as a Python agent, for the ``tools+python:...`` spec test."""
    outputs = outputs_so_far(case)
    return f"\\boxed{{{outputs[-1]}}}" if outputs else "```python\nprint(2 ** 10)\n```"


FIRST_PIECE = "Let me compute.\n```python\nprint(17 * 23)\n```"
FULL_TEXT = FIRST_PIECE + "\n```output\n391\n```\nThe product is 391, so \\boxed{391}."


def run(
    executor: ToolExecutor, case: Case = CASE, n: int = 1, start: int = 0, sampling: Sampling | None = None
) -> list[Trajectory]:
    return asyncio.run(executor.sample(case, n, sampling or Sampling(), start=start))


def test_prefill_mode_executes_code_and_continues_the_assistant_text() -> None:
    model = ScriptedModel(multiply, prefill=True)
    executor = ToolExecutor(model, sandbox=SANDBOX)
    assert executor.mode == "prefill" and executor.id == "tools+scripted-model"
    (trajectory,) = run(executor)
    assert trajectory.ok and trajectory.text == FULL_TEXT
    assert trajectory.n_tool_calls == 1
    call = trajectory.tool_calls[0]
    assert (call.name, call.arguments, call.result, call.error) == ("python", "print(17 * 23)\n", "391", None)
    # turn 2 continued the partial assistant message (output block included)
    first, second = model.calls
    assert first[0].history == ()
    assert second[0].history == ({"role": "assistant", "content": FIRST_PIECE + "\n```output\n391\n```\n"},)
    assert second[0].continues_assistant
    assert all(OUTPUT_STOP in sampling.stop and n == 1 for _, n, sampling, _ in model.calls)
    assert trajectory.messages == (
        {"role": "user", "content": CASE.prompt},
        {"role": "assistant", "content": FULL_TEXT},
    )
    assert trajectory.usage == Usage(20, 10) and trajectory.cost_usd == pytest.approx(0.5)


def test_chat_mode_sends_the_output_as_a_user_message() -> None:
    model = ScriptedModel(multiply, prefill=False)
    executor = ToolExecutor(model, sandbox=SANDBOX)
    assert executor.mode == "chat"
    (trajectory,) = run(executor)
    assert trajectory.text == FULL_TEXT
    second = model.calls[1][0]
    assert not second.continues_assistant
    assert second.history[0] == {"role": "assistant", "content": FIRST_PIECE}
    assert second.history[1]["role"] == "user"
    assert second.history[1]["content"].startswith("```output\n391\n```\nContinue your solution")
    assert second.history[1]["content"].endswith("\\boxed{}.")
    roles = [m["role"] for m in trajectory.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert trajectory.messages[-1]["content"] == "The product is 391, so \\boxed{391}."


def test_sample_i_always_continues_with_inner_sample_i() -> None:
    model = ScriptedModel(multiply, prefill=True)
    trajectories = run(ToolExecutor(model, sandbox=SANDBOX), n=3, start=5)
    assert [t.sample_index for t in trajectories] == [5, 6, 7]
    assert sorted(start for *_, start in model.calls) == [5, 5, 6, 6, 7, 7]
    assert all(t.text == FULL_TEXT for t in trajectories)


def test_the_turn_limit_is_enforced() -> None:
    def keeps_coding(case: Case, index: int) -> str:
        return f"Again.\n```python\nprint({len(outputs_so_far(case))} + 1)\n```\n"

    model = ScriptedModel(keeps_coding, prefill=True)
    (trajectory,) = run(ToolExecutor(model, sandbox=SANDBOX, max_tool_turns=2))
    assert len(model.calls) == 3  # two executed turns, then one that is not executed
    assert trajectory.n_tool_calls == 2
    assert [c.result for c in trajectory.tool_calls] == ["1", "2"]
    assert trajectory.text.endswith("```output\n2\n```\nAgain.\n```python\nprint(2 + 1)\n```\n")
    assert ToolExecutor(model, sandbox=SANDBOX, max_tool_turns=2).id == "tools[max_tool_turns=2]+scripted-model"


def test_an_infinite_loop_is_contained_and_reported_to_the_model() -> None:
    def loops_then_answers(case: Case, index: int) -> str:
        outputs = outputs_so_far(case)
        if not outputs:
            return "```python\nwhile True:\n    pass\n```"
        return f"It timed out: {'TimeoutError' in outputs[-1]}. \\boxed{{0}}"

    model = ScriptedModel(loops_then_answers, prefill=False)
    (trajectory,) = run(ToolExecutor(model, sandbox=Sandbox(timeout_s=1)))
    call = trajectory.tool_calls[0]
    assert "TimeoutError" in call.result and "timeout" in call.error
    assert trajectory.text.endswith("It timed out: True. \\boxed{0}")
    assert trajectory.n_tool_calls == 1


def test_a_failing_block_shows_the_traceback_and_records_the_error() -> None:
    def divides(case: Case, index: int) -> str:
        return "\\boxed{x}" if outputs_so_far(case) else "```python\nprint('before')\n1 / 0\n```"

    (trajectory,) = run(ToolExecutor(ScriptedModel(divides, prefill=True), sandbox=SANDBOX))
    call = trajectory.tool_calls[0]
    # stdout + "\n" + stderr, stripped: the reference's observation
    assert call.result.startswith("before\n\nTraceback (most recent call last):")
    assert call.result.endswith("ZeroDivisionError: division by zero")
    assert call.error is not None and call.error.endswith("ZeroDivisionError: division by zero")


def test_no_code_or_an_early_boxed_answer_ends_the_sample() -> None:
    def answers(case: Case, index: int) -> str:
        return "Easy: \\boxed{391}. Check:\n```python\nprint(17*23)\n```"

    model = ScriptedModel(answers, prefill=True)
    (trajectory,) = run(ToolExecutor(model, sandbox=SANDBOX))
    assert len(model.calls) == 1 and trajectory.n_tool_calls == 0
    assert trajectory.text == answers(CASE, 0)
    assert find_code("```python\nprint(1)\n```\n\\boxed{1}") is not None
    assert find_code("\\boxed{1}\n```python\nprint(1)\n```") is None
    assert find_code("```python\nprint(1)\n") is None  # not closed yet


def test_a_failed_model_turn_fails_the_sample_but_keeps_what_happened() -> None:
    model = ScriptedModel(multiply, prefill=True, fail_on_turn=2)
    (trajectory,) = run(ToolExecutor(model, sandbox=SANDBOX))
    assert not trajectory.ok and trajectory.text is None
    assert trajectory.error == "transient: 503 (gave up after 3 attempts)"
    assert trajectory.n_tool_calls == 1
    assert trajectory.messages[-1]["content"].endswith("```output\n391\n```\n")


def test_prefill_continues_a_partial_assistant_turn_given_by_the_case() -> None:
    model = ScriptedModel(multiply, prefill=True)
    case = replace(CASE, history=({"role": "assistant", "content": "Thinking. "},))
    (trajectory,) = run(ToolExecutor(model, sandbox=SANDBOX), case=case)
    assert model.calls[1][0].history[-1]["content"].startswith("Thinking. " + FIRST_PIECE)
    assert trajectory.text == FULL_TEXT
    assert trajectory.messages[-1]["content"] == "Thinking. " + FULL_TEXT


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="prefill"):
        ToolExecutor(ScriptedModel(multiply, prefill=False), mode="prefill")
    with pytest.raises(ConfigError, match="mode"):
        ToolExecutor(ScriptedModel(multiply, prefill=True), mode="raw")
    executor = create(ScriptedModel(multiply, prefill=True), sandbox={"timeout_s": 3}, mode="chat")
    assert executor.sandbox.timeout_s == 3.0 and executor.mode == "chat"
    assert executor.id == "tools[mode=chat]+scripted-model"


class ScriptedAdapter(Adapter):
    """The same scripted model as an Adapter, so the real runtime (retries, cache) wraps it."""

    id = "scripted-adapter"
    supports_prefill = True

    def __init__(self) -> None:
        self.generated = 0

    async def generate(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
        self.generated += n
        return [Trajectory(text=multiply(case, start + j), usage=Usage(3, 4), sample_index=start + j) for j in range(n)]


def test_through_the_managed_runtime_every_turn_is_cached_per_sample(tmp_path: Path) -> None:
    from frontier_qa.runtime import ManagedTarget, SampleCache

    adapter = ScriptedAdapter()
    cache = SampleCache(tmp_path / "cache")
    executor = ToolExecutor(ManagedTarget(adapter, cache=cache), sandbox=SANDBOX)
    first = run(executor, n=2)
    assert adapter.generated == 4 and [t.text for t in first] == [FULL_TEXT, FULL_TEXT]
    again = run(ToolExecutor(ManagedTarget(adapter, cache=cache), sandbox=SANDBOX), n=2)
    assert adapter.generated == 4  # both turns of both samples came from the cache
    assert [t.text for t in again] == [FULL_TEXT, FULL_TEXT] and all(t.cached for t in again)
    cache.close()


def test_tools_spec_through_open_target() -> None:
    from frontier_qa.runtime import open_target

    executor = open_target(f"tools+python:{Path(__file__).resolve()}:chat_model", cache=False,
                           tool_options={"sandbox": {"timeout_s": 3}, "max_tool_turns": 2})
    assert isinstance(executor, ToolExecutor) and executor.mode == "chat"
    assert executor.sandbox.timeout_s == 3.0
    first, second = asyncio.run(executor.sample(CASE, 2, Sampling(seed=1)))
    assert first.text == second.text == "```python\nprint(2 ** 10)\n```\n```output\n1024\n```\n\\boxed{1024}"
    assert [first.sample_index, second.sample_index] == [0, 1] and first.n_tool_calls == 1


def test_a_fatal_inner_error_cancels_the_other_samples() -> None:
    class Fails:
        id = "fails"
        supports_prefill = False

        def __init__(self) -> None:
            self.finished = 0

        async def sample(self, case: Case, n: int, sampling: Sampling, *, start: int = 0) -> list[Trajectory]:
            if start == 0:
                raise TargetError("target 'fails' failed: 401 bad key")
            await asyncio.sleep(5)
            self.finished += 1
            return [Trajectory(text="late", sample_index=start)]

    inner = Fails()
    with pytest.raises(TargetError, match="401"):
        run(ToolExecutor(inner, sandbox=SANDBOX), n=3)
    assert inner.finished == 0
