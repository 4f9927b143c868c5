"""A LangGraph agent with three tools: a capital lookup, a fact search and a unit converter.

The fact search is a plausible alternative to the capital lookup for a capital question (its facts
name the capitals too): ``examples/agents/trajectory_cases.yaml`` says which tool a case expects.

The graph is LangGraph's tool loop built by hand: a model node (``ChatOpenAI`` with the tools
bound) and a ``ToolNode``, joined by ``tools_condition``. The model comes from the environment:
``OPENAI_MODEL`` (default ``gpt-4o-mini``), ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``, so the same
file runs against OpenAI or a local OpenAI-compatible server.

Use it as a target::

    frontier-qa probe --target 'langgraph:examples/agents/langgraph_agent.py:graph' ...
    # or, from Python:
    from frontier_qa.runtime import open_target
    target = open_target("langgraph:examples/agents/langgraph_agent.py:graph")
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima", "canada": "Ottawa"}
FACTS = (*(f"{city} is the capital of {country.title()}." for country, city in CAPITALS.items()),
         "The Seine flows through Paris.", "The Nile flows through Cairo.", "Mount Kenya is in Kenya.")
FACTORS = {("km", "mi"): 0.621371, ("mi", "km"): 1.609344, ("kg", "lb"): 2.204623, ("lb", "kg"): 0.453592}
SYSTEM = "Use the tools when they help. End with the final answer as \\boxed{...}."


@tool
def capital(country: str) -> str:
    """The capital city of a country."""
    return CAPITALS.get(country.strip().lower(), f"no capital known for {country!r}")


@tool
def search_facts(query: str) -> str:
    """The geography facts that share the most words with the query, one per line."""

    def words(text: str) -> set[str]:
        return set(text.lower().replace("?", "").replace(".", "").split())

    shared = {fact: len(words(query) & words(fact)) for fact in FACTS}
    best = max(shared.values())
    return "\n".join(f for f, n in shared.items() if n == best) if best else f"no facts found for {query!r}"


@tool
def convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between km and mi, kg and lb, or C and F."""
    pair = (from_unit.strip().lower(), to_unit.strip().lower())
    if pair == ("c", "f"):
        return f"{value * 9 / 5 + 32:.2f}"
    if pair == ("f", "c"):
        return f"{(value - 32) * 5 / 9:.2f}"
    if pair not in FACTORS:
        return f"cannot convert {from_unit} to {to_unit}"
    return f"{value * FACTORS[pair]:.2f}"


TOOLS = [capital, search_facts, convert]
# ChatOpenAI refuses to be built without a key; the placeholder lets this file import without one
# (a call made with it is refused by the server, which stops the probe with a clear 401)
model = ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), temperature=0,
                   api_key=os.environ.get("OPENAI_API_KEY") or "unset").bind_tools(TOOLS)


async def agent(state: MessagesState) -> dict[str, Any]:
    """The model node: one model turn, which either calls tools or answers."""
    return {"messages": [await model.ainvoke([SystemMessage(SYSTEM), *state["messages"]])]}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode(TOOLS))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition)
builder.add_edge("tools", "agent")
graph = builder.compile()
