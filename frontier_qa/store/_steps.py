"""The steps of one sample as its record keeps them: what a report shows of an agent's trajectory.

An agent's trajectory (:class:`~frontier_qa.target.Trajectory`) holds its tool calls and steps as
messages: ``{"role": "tool", "name", "arguments", "content"[, "error"]}`` for a tool call and
``{"role": "step", "content", "kind"...}`` for a step (a model call, a handoff, an agent started,
a step the agent recorded itself), in the order they happened. A sample record keeps them as a
short list of :class:`Step` values, bounded (:data:`MAX_STEPS` steps, :data:`ARGUMENT_CHARS` of
each argument list) so an agent of a hundred calls cannot bloat the store; the full trajectory
stays in the sample cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from frontier_qa.target import Trajectory

MAX_STEPS = 40
"""Steps kept per sample: the first ones, and the last ones (where the answer came from)."""

ARGUMENT_CHARS = 200
"""Characters kept of a tool call's arguments and of an error."""

NAME_CHARS = 80
"""Characters kept of a step's name (a tool, a model, an agent, a described step)."""


class Step(BaseModel):
    """One step of an agent's trajectory.

    Attributes:
        kind: ``"model"`` (a model call), ``"tool"`` (a tool call), ``"handoff"`` (to another
            agent), ``"agent"`` (an agent started), ``"step"`` (one the agent described itself),
            or ``"cut"`` (``name`` says how many steps were left out here).
        name: the tool, the model, the agent handed to or started, or the step's description.
        arguments: a tool call's arguments (JSON text as the agent sent them), cut.
        error: why the call or step failed, cut.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    name: str = ""
    arguments: str | None = None
    error: str | None = None


def _cut(value: Any, chars: int) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _step(message: Mapping[str, Any]) -> Step | None:
    role = message.get("role")
    if role == "tool" and "name" in message and "arguments" in message:  # a recorded tool call
        return Step(kind="tool", name=_cut(message["name"], NAME_CHARS) or "",
                    arguments=_cut(message["arguments"], ARGUMENT_CHARS),
                    error=_cut(message.get("error"), ARGUMENT_CHARS))
    if role != "step":
        return None
    kind = str(message.get("kind") or "step")
    name = {"model": message.get("model"), "handoff": message.get("target"),
            "agent": message.get("agent")}.get(kind) or message.get("content") or ""
    return Step(kind=kind, name=_cut(name, NAME_CHARS) or "", error=_cut(message.get("error"), ARGUMENT_CHARS))


def steps_of(trajectory: Trajectory) -> tuple[Step, ...]:
    """The steps of a trajectory in order, at most :data:`MAX_STEPS` (a ``"cut"`` step where some
    were left out); its tool calls alone when its messages record none (an agent that returned them).
    """
    steps = [s for s in (_step(m) for m in trajectory.messages if isinstance(m, Mapping)) if s is not None]
    if not steps:
        steps = [Step(kind="tool", name=_cut(c.name, NAME_CHARS) or "", arguments=_cut(c.arguments, ARGUMENT_CHARS),
                      error=_cut(c.error, ARGUMENT_CHARS)) for c in trajectory.tool_calls]
    if len(steps) <= MAX_STEPS:
        return tuple(steps)
    head = MAX_STEPS // 2
    tail = MAX_STEPS - head - 1
    return (*steps[:head], Step(kind="cut", name=str(len(steps) - head - tail)), *steps[-tail:])


__all__ = ["ARGUMENT_CHARS", "MAX_STEPS", "NAME_CHARS", "Step", "steps_of"]
