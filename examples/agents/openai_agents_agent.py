"""A small OpenAI Agents SDK agent: a triage agent with a capital lookup and a fact search,
handing unit questions to a units agent with a converter.

The fact search is a plausible alternative to the capital lookup for a capital question (its facts
name the capitals too): ``examples/agents/trajectory_cases.yaml`` says which tool a case expects.

The model is ``OPENAI_MODEL`` (default ``gpt-4o-mini``), reached the SDK's default way: a model
name, so the SDK's OpenAI provider builds its client at the first call from ``OPENAI_BASE_URL``
and ``OPENAI_API_KEY`` and speaks the Responses API. Importing this file needs no key, so the
same file runs against OpenAI or a local test server.

Use it as a target::

    frontier-qa probe --target openai-agents:examples/agents/openai_agents_agent.py:triage_agent
"""

from __future__ import annotations

import os

from agents import Agent, function_tool

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")

_CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima", "canada": "Ottawa"}
_FACTS = (*(f"{city} is the capital of {country.title()}." for country, city in _CAPITALS.items()),
          "The Seine flows through Paris.", "The Nile flows through Cairo.", "Mount Kenya is in Kenya.")
_TO_METRES = {"m": 1.0, "km": 1000.0, "mi": 1609.344, "ft": 0.3048, "in": 0.0254}


@function_tool
def capital_of(country: str) -> str:
    """The capital city of a country.

    Args:
        country: the country's English name.
    """
    capital = _CAPITALS.get(country.strip().lower())
    if capital is None:
        raise ValueError(f"no capital known for {country!r}; known: {', '.join(sorted(_CAPITALS))}")
    return capital


@function_tool
def search_facts(query: str) -> str:
    """The geography facts that share the most words with the query, one per line.

    Args:
        query: a few words to look for.
    """
    def words(text: str) -> set[str]:
        return set(text.lower().replace("?", "").replace(".", "").split())

    shared = {fact: len(words(query) & words(fact)) for fact in _FACTS}
    best = max(shared.values())
    return "\n".join(f for f, n in shared.items() if n == best) if best else f"no facts found for {query!r}"


@function_tool
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a length between units (m, km, mi, ft, in).

    Args:
        value: the length in ``from_unit``.
        from_unit: the unit it is given in.
        to_unit: the unit wanted.
    """
    return round(value * _TO_METRES[from_unit] / _TO_METRES[to_unit], 6)


units_agent = Agent(
    name="units_agent",
    handoff_description="Converts lengths between units.",
    instructions="Convert lengths with the convert_units tool, then give the result in one sentence.",
    model=MODEL,
    tools=[convert_units],
)

triage_agent = Agent(
    name="triage_agent",
    instructions=(
        "Answer questions about capitals with the capital_of tool and other geography questions with "
        "search_facts. Hand questions about converting lengths to the units agent. Answer in one short sentence."
    ),
    model=MODEL,
    tools=[capital_of, search_facts],
    handoffs=[units_agent],
)


if __name__ == "__main__":  # python examples/agents/openai_agents_agent.py "Convert 5 km to mi."
    import sys

    from agents import Runner

    print(Runner.run_sync(triage_agent, " ".join(sys.argv[1:]) or "What is the capital of Kenya?").final_output)
