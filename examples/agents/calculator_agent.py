"""A deterministic multi-step agent with a calculator tool.

It finds the arithmetic expression in the task, evaluates it one operation at a time by
calling its ``calc`` tool (each call is recorded in the trajectory through
:func:`~frontier_qa.adapters.workflow.record_tool`), and answers ``\\boxed{value}``.
A task without arithmetic makes it raise ``ValueError``: that sample fails, the run goes on.

Use it as a target::

    frontier-qa probe --target 'python:examples/agents/calculator_agent.py:solve' ...
    # or, from Python:
    from frontier_qa.runtime import open_target
    target = open_target("python:examples/agents/calculator_agent.py:solve", cache=False)
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any

from frontier_qa.adapters.workflow import AgentContext, record_tool

version = "1"  # part of the target id: bump it when the agent's behaviour changes

_OPS = {ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub), ast.Mult: ("*", operator.mul),
        ast.Div: ("/", operator.truediv), ast.Pow: ("**", operator.pow), ast.Mod: ("%", operator.mod)}
_BY_SYMBOL = {symbol: fn for symbol, fn in _OPS.values()}
_EXPRESSION = re.compile(r"[-+*/%().\d\s]*\d[-+*/%().\d\s]*")


@record_tool
def calc(op: str, a: float, b: float) -> float:
    """The agent's tool: one arithmetic operation."""
    if op == "**" and abs(b) > 64:
        raise OverflowError("exponent too large for the calculator")
    return _BY_SYMBOL[op](a, b)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.10g}"


def _evaluate(node: ast.AST, ctx: AgentContext) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand, ctx)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _evaluate(node.left, ctx), _evaluate(node.right, ctx)
        symbol = _OPS[type(node.op)][0]
        ctx.step(f"compute {_number(left)} {symbol} {_number(right)}")
        return calc(symbol, left, right)
    raise ValueError(f"unsupported expression part: {ast.dump(node)[:60]}")


def find_expression(task: str) -> str:
    """The longest arithmetic expression in ``task`` (digits, operators, parentheses)."""
    candidates = [m.group(0).strip() for m in _EXPRESSION.finditer(task)]
    candidates = [c.rstrip(".").strip() for c in candidates if re.search(r"\d", c)]
    if not candidates:
        raise ValueError("no arithmetic expression in the task")
    return max(candidates, key=len)


def solve(task: str, ctx: AgentContext) -> dict[str, Any]:
    """Answer an arithmetic task step by step; returns the boxed value and the step count."""
    expression = find_expression(task)
    ctx.step(f"parse {expression!r}")
    value = _evaluate(ast.parse(expression, mode="eval").body, ctx)
    return {"answer": f"The value is \\boxed{{{_number(value)}}}.", "steps": len(ctx.events)}
