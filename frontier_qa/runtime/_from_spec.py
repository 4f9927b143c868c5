"""``open_target``: from a spec string (or an adapter) to a ready :class:`ManagedTarget`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontier_qa.errors import ConfigError
from frontier_qa.redaction import secret_values
from frontier_qa.runtime._budget import BudgetTracker
from frontier_qa.runtime._cache import SampleCache
from frontier_qa.runtime._limits import Budget, Limits
from frontier_qa.runtime._managed import ManagedTarget
from frontier_qa.target import Adapter, Target

CacheOption = SampleCache | str | Path | bool | None


def _cache(option: CacheOption) -> SampleCache | None:
    if option is None or option is True:
        return SampleCache()
    if option is False:
        return None
    if isinstance(option, SampleCache):
        return option
    if isinstance(option, (str, Path)):
        return SampleCache(option)
    raise ConfigError(f"cache={option!r} is not understood",
                      hint="pass a SampleCache, a directory path, True (default location) or False (off)")


def _limits(option: Limits | Mapping[str, Any] | None) -> Limits:
    if option is None:
        return Limits()
    if isinstance(option, Limits):
        return option
    if isinstance(option, Mapping):
        return Limits.from_dict(option)
    raise ConfigError(f"limits={option!r} is not understood", hint="pass a Limits or a mapping of its fields")


def _budget(option: Budget | BudgetTracker | Mapping[str, Any] | None) -> Budget | BudgetTracker | None:
    if option is None or isinstance(option, (Budget, BudgetTracker)):
        return option
    if isinstance(option, Mapping):
        return Budget.from_dict(option)
    raise ConfigError(f"budget={option!r} is not understood",
                      hint="pass a Budget, a shared BudgetTracker or a mapping of Budget fields")


def open_target(
    spec_or_adapter: str | Adapter,
    *,
    limits: Limits | Mapping[str, Any] | None = None,
    budget: Budget | BudgetTracker | Mapping[str, Any] | None = None,
    cache: CacheOption = None,
    tool_options: Mapping[str, Any] | None = None,
    version: str | None = None,
    **adapter_options: Any,
) -> Target:
    """Open a target: build its adapter and wrap it with retries, rate limits, budget and cache.

    Args:
        spec_or_adapter: a spec such as ``"litellm:openai/gpt-4o-mini"``,
            ``"openai:MODEL@http://127.0.0.1:8000/v1"`` or ``"tools+hf:/path"`` (see
            :mod:`frontier_qa.adapters`), or an :class:`Adapter` instance.
        limits: rate limits, concurrency, timeout and retries (default :class:`Limits`).
        budget: a :class:`Budget`, a :class:`BudgetTracker` shared with other targets, or
            ``None`` for unlimited (spending is still tracked).
        cache: ``None``/``True``: cache at ``.frontier-qa/cache/`` under the current directory;
            a path: cache there; a :class:`SampleCache`; ``False``: no cache.
        tool_options: for ``tools+`` specs, keyword arguments of the tool-integrated executor.
        version: the target's version (a model revision, a deployment tag): part of every
            sample's cache key and of every record, in front of the adapter's own version.
        **adapter_options: passed to the adapter factory (``api_key``, ``api_base``,
            ``timeout``...). Secret-named options never reach messages or the cache.

    Returns:
        A :class:`ManagedTarget` (or, for ``tools+`` specs, the tool executor wrapping one).
    """
    limits_value = _limits(limits)
    budget_value = _budget(budget)
    cache_value = _cache(cache)
    secrets = secret_values(adapter_options)
    if isinstance(spec_or_adapter, Adapter):
        if adapter_options:
            raise ConfigError("adapter options were given together with an adapter instance",
                              hint="pass the options to the adapter's constructor instead")
        return ManagedTarget(spec_or_adapter, limits_value, budget_value, cache_value, version=version)
    if not isinstance(spec_or_adapter, str):
        raise ConfigError(f"cannot open a target from {type(spec_or_adapter).__name__}",
                          hint="pass a spec string such as 'litellm:openai/gpt-4o-mini' or an Adapter")

    from frontier_qa.adapters import create_adapter, parse_spec

    scheme, rest = parse_spec(spec_or_adapter)
    if scheme != "tools":
        if tool_options:
            raise ConfigError(f"tool_options were given but {spec_or_adapter!r} is not a tools+ spec",
                              hint="prefix the spec with 'tools+' to use the tool-integrated executor")
        adapter = create_adapter(spec_or_adapter, **adapter_options)
        return ManagedTarget(adapter, limits_value, budget_value, cache_value, secrets=secrets, version=version)

    inner_cache = cache_value if cache_value is not None else False
    inner = open_target(rest, limits=limits_value, budget=budget_value, cache=inner_cache, version=version,
                        **adapter_options)
    try:
        from frontier_qa.adapters.tool_executor import ToolExecutor
    except ImportError as exc:
        raise ConfigError(f"{spec_or_adapter!r} needs the tool-integrated executor, which failed to import: {exc}",
                          hint="reinstall frontier-qa; the module is frontier_qa.adapters.tool_executor") from exc
    return ToolExecutor(inner, **dict(tool_options or {}))


__all__ = ["open_target"]
