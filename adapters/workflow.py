"""Multi-step agent workflows as targets: Python agents and agents behind an HTTP endpoint.

This module is the public face of both (the names below, and the contract of each);
the Python adapter lives in :mod:`~frontier_qa.adapters._python_agent`, the HTTP one in
:mod:`~frontier_qa.adapters._http_agent`, what they share in :mod:`~frontier_qa.adapters._agents`.

An agent may run many model and tool steps per case; frontier-qa only needs its final
answer, and records its tool calls, steps, messages, usage and cost in the trajectory.

**Python agents** (``python:package.module:attr`` or ``python:path/to/file.py:attr``).
An agent file is imported as ``python path/to/file.py`` runs it: its folder goes first on
``sys.path`` (and stays, for imports at call time), so ``import helpers`` finds ``helpers.py``
beside it. ``attr`` is a sync or async function, an object with an ``arun``/``run``/``__call__``
method (looked up in that order), or a class (instantiated with ``agent_kwargs``).
Arguments are chosen by parameter name:

==================  ===========================================================
``case``            the :class:`~frontier_qa.target.Case`
``ctx``/``context``  the :class:`AgentContext` (records tool calls, steps, usage)
``sample_index``    the sample's index for its case (0-based)
``seed``            ``sampling.seed_for(case, sample_index)`` (``None`` without a seed)
``sampling``        the :class:`~frontier_qa.target.Sampling`
``messages``        ``case.messages`` (system prompt, task, history)
any other           the first other parameter gets the task text (``case.prompt``)
==================  ===========================================================

It returns the answer text, or a mapping/object with ``answer`` (or ``output``,
``final_answer``, ``text``) and optionally ``tool_calls`` (``ToolCall`` or
``{"name", "arguments", "result", "error"}``), ``messages``, ``usage``
(``{"prompt_tokens", "completion_tokens"}``), ``cost_usd``, ``steps`` (a count or a list)
and ``error`` (the agent gave up on this case). Plain agents can instead record as they go:
``current_context().tool_call(...)``, ``ctx.step(...)``, or wrap tools with
:func:`record_tool`. Sync agents run in a daemon thread of their own, so they never block
the event loop, and a hung one never keeps the process from exiting (a thread cannot be
stopped: when a timeout fires or the run is interrupted, it is abandoned).

*Errors.* An exception from the agent fails **that sample only** (``Trajectory.error``
records it) — a ``ValueError`` on one case must not end a run of hundreds. So does a
``SystemExit`` (``sys.exit(3)`` in agent code), and a ``KeyboardInterrupt`` a sync agent raises:
neither ends the probe. Exceptions that
retrying can fix are raised to the runtime instead, which retries them: the ``transient``
types (default ``TimeoutError``, ``ConnectionError``), exceptions whose class name says
timeout / connection / rate limit (``httpx.ConnectTimeout``, ``openai.RateLimitError``...)
and those carrying an HTTP status 429, 408 or 5xx. Exceptions that will fail every case —
the ``fatal`` types, and HTTP 401/403 (a bad API key inside the agent) — stop the run.

**HTTP agents** (``http://host:port/path``, ``https://…``), for agents in any language.
frontier-qa POSTs one JSON object per sample::

    {"case_id": str, "prompt": str, "system": str | null, "messages": [{"role", "content"}],
     "topic": str, "answer_format": str, "tools": [...], "sample_index": int, "n": 1,
     "seed": int | null, "sampling": {"temperature", "top_p", "max_tokens", "stop", "seed"},
     "metadata": {...}}

and expects ``200`` with ``{"answer": str, "tool_calls": [...], "messages": [...],
"usage": {...}, "cost_usd": float, "steps": ..., "error": str | null}`` (only ``answer``
is required; ``"error"`` marks this sample failed). With ``batch=True`` one request asks for
``n`` samples starting at ``sample_index`` and the reply is ``{"samples": [<reply>, ...]}``.
Status 429 (``Retry-After`` honoured) is rate limited; 408, 409, 425, 5xx, timeouts,
dropped connections and malformed JSON are retried; other 4xx stop the run. Header values
may be written ``${ENV_VAR}``; they never appear in errors, reprs or the cache.
"""

from __future__ import annotations

from frontier_qa.adapters._agents import AgentContext, current_context, record_tool, to_trajectory
from frontier_qa.adapters._http_agent import AgentHTTPError, HttpAgentAdapter, MalformedReplyError, create_http
from frontier_qa.adapters._python_agent import AgentExitError as AgentExitError
from frontier_qa.adapters._python_agent import PythonAgentAdapter, create_python
from frontier_qa.adapters._python_agent import in_daemon_thread as in_daemon_thread

__all__ = [
    "AgentContext",
    "AgentHTTPError",
    "HttpAgentAdapter",
    "MalformedReplyError",
    "PythonAgentAdapter",
    "create_http",
    "create_python",
    "current_context",
    "record_tool",
    "to_trajectory",
]
