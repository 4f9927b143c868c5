"""A Pydantic AI agent with two tools: a capital lookup and a unit converter.

The model is named the way Pydantic AI names models: ``"openai:<OPENAI_MODEL>"`` (default
``gpt-4o-mini``), whose provider reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` when the agent
first runs (``defer_model_check``: importing this file needs no key), so the same file runs
against OpenAI or any OpenAI-compatible server. ``"openai:"`` speaks the Responses API; write
``"openai-chat:"`` for chat completions.

Use it as a target::

    frontier-qa probe --target 'pydantic-ai:examples/agents/pydantic_ai_agent.py:agent' ...
"""

from __future__ import annotations

import os

from pydantic_ai import Agent

version = "1"  # part of the target's version: bump it when the agent's behaviour changes

_CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima", "canada": "Ottawa"}
_METRES = {"m": 1.0, "km": 1000.0, "mi": 1609.344, "ft": 0.3048, "in": 0.0254}

agent = Agent(
    f"openai:{os.environ.get('OPENAI_MODEL', 'gpt-4o-mini')}",
    defer_model_check=True,
    name="geo",
    instructions="Answer with the tools' results. End with the final answer as \\boxed{...}.",
)


@agent.tool_plain
def capital(country: str) -> str:
    """The capital city of ``country``."""
    return _CAPITALS[country.strip().lower()]


@agent.tool_plain
def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` converted between length units (m, km, mi, ft, in), rounded to 4 decimals."""
    return round(value * _METRES[from_unit] / _METRES[to_unit], 4)
