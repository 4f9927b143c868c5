"""A small MCP server with two deterministic tools, spoken over stdio (no network).

Give its tools to a framework agent or to the tool-integrated executor::

    target:
      spec: tools+openai:gpt-4o-mini
      tool_options:
        mcp_servers:
          - {name: facts, command: python, args: [examples/agents/mcp_server.py]}

Run it by hand with ``python examples/agents/mcp_server.py`` (it then waits for JSON-RPC on stdin).
"""

from __future__ import annotations

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x calls it FastMCP
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

# ToolError: the client gets the message as an error result (any other exception reads "Error executing tool")
server = MCPServer("facts", log_level="WARNING")

_CAPITALS = {"france": "Paris", "germany": "Berlin", "italy": "Rome", "japan": "Tokyo", "kenya": "Nairobi",
             "peru": "Lima", "spain": "Madrid"}
# Each unit's size in its dimension's base unit (metre, kilogram, second).
_UNITS = {"m": ("length", 1.0), "km": ("length", 1000.0), "mi": ("length", 1609.344), "ft": ("length", 0.3048),
          "kg": ("mass", 1.0), "g": ("mass", 0.001), "lb": ("mass", 0.45359237),
          "s": ("time", 1.0), "min": ("time", 60.0), "h": ("time", 3600.0)}


@server.tool()
def lookup_capital(country: str) -> str:
    """The capital city of a country (a few countries only)."""
    capital = _CAPITALS.get(country.strip().lower())
    if capital is None:
        raise ToolError(f"unknown country {country!r}; known: {', '.join(sorted(_CAPITALS))}")
    return capital


@server.tool()
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit`` (m, km, mi, ft, kg, g, lb, s, min, h)."""
    try:
        (dim_from, size_from), (dim_to, size_to) = _UNITS[from_unit], _UNITS[to_unit]
    except KeyError as exc:
        raise ToolError(f"unknown unit {exc.args[0]!r}; known: {', '.join(_UNITS)}") from None
    if dim_from != dim_to:
        raise ToolError(f"cannot convert {dim_from} ({from_unit}) to {dim_to} ({to_unit})")
    return round(value * size_from / size_to, 6)


if __name__ == "__main__":
    server.run("stdio")
