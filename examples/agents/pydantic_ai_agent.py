"""A Pydantic AI agent with three tools: a capital lookup, a fact search and a unit converter.

The fact search is a plausible alternative to the capital lookup for a capital question (its facts
name the capitals too): ``examples/agents/trajectory_cases.yaml`` says which tool a case expects.

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

version = "2"  # part of the target's version: bump it when the agent's behaviour changes

_CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima", "canada": "Ottawa"}
_FACTS = (*(f"{city} is the capital of {country.title()}." for country, city in _CAPITALS.items()),
          "The Seine flows through Paris.", "The Nile flows through Cairo.", "Mount Kenya is in Kenya.")
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
def search_facts(query: str) -> str:
    """The geography facts that share the most words with ``query``, one per line."""

    def words(text: str) -> set[str]:
        return set(text.lower().replace("?", "").replace(".", "").split())

    shared = {fact: len(words(query) & words(fact)) for fact in _FACTS}
    best = max(shared.values())
    return "\n".join(f for f, n in shared.items() if n == best) if best else f"no facts found for {query!r}"


@agent.tool_plain
def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` converted between length units (m, km, mi, ft, in), rounded to 4 decimals."""
    return round(value * _METRES[from_unit] / _METRES[to_unit], 4)
