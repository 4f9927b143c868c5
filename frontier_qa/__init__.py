"""frontier-qa: find where an AI agent's ability ends.

``import frontier_qa`` is light: it loads no torch, transformers, trl, vllm or
sentence-transformers. Public names are imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# module -> the public names it defines, loaded lazily (PEP 562)
_BY_MODULE: dict[str, tuple[str, ...]] = {
    # errors
    "frontier_qa.errors": ("FrontierQAError", "ConfigError", "MissingExtraError", "TargetError", "BudgetExceededError"),
    # runtime and sandbox
    "frontier_qa.runtime": ("open_target", "Limits", "Budget"),
    "frontier_qa.runtime.sandbox": ("Sandbox", "SandboxResult"),
    # target seam
    "frontier_qa.target": ("Case", "Expectations", "ToolArguments", "Sampling", "Trajectory", "ToolCall", "Target",
                           "Adapter"),
    # the one front door (the CLI and the pytest plugin use it)
    "frontier_qa.session._session": ("Session",),
    "frontier_qa.session._outcome": ("Outcome",),
    # probing
    "frontier_qa.probing._engine": ("probe", "replay", "ProbeResult"),
    "frontier_qa.probing._settings": ("ProbeSettings",),
    "frontier_qa.probing._validation": ("Validator",),
    # scoring core
    "frontier_qa.scoring.answers": ("extract_answer", "extract_boxed", "ANSWER_FORMATS"),
    "frontier_qa.scoring._equivalence": ("equivalent", "normalize", "Comparator"),
    "frontier_qa.scoring.consistency": ("self_consistency", "consistency_of", "Consistency"),
    "frontier_qa.scoring._semantic": ("semantic_consistency", "semantic_consistency_of"),
    "frontier_qa.scoring._embedders": ("get_embedder",),
    "frontier_qa.scoring.rewards": ("uncertainty_reward", "tool_reward", "format_reward", "composite_reward",
                                    "path_reward"),
    "frontier_qa.scoring._paths": ("check_trajectory", "pass_hat_k"),
    "frontier_qa.scoring._repetition": ("repetition_penalty",),
    "frontier_qa.scoring.bands": ("in_band", "soft_band"),
}


def _lazy_exports(package: str, by_module: Mapping[str, Sequence[str]], namespace: MutableMapping[str, Any],
                  also: Sequence[str] = ()) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """A package's ``__getattr__``, ``__dir__`` and ``__all__`` for names imported on first use (PEP 562).

    Keeps ``import package`` light (no torch, TRL...); a name is imported from its module once
    and then cached in ``namespace``. Defined here, in the root every sub-package already loads,
    so that using it imports nothing more (the pytest plugin must stay inert). Every lazy
    package ends the same way::

        if TYPE_CHECKING:  # the typed mirror of _BY_MODULE (.ci/write_typed_exports.py writes it)
            from package.module import Name as Name
        else:
            __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals())

    Args:
        package: the package's ``__name__`` (for the AttributeError).
        by_module: each module → the public names it defines.
        namespace: the package's ``globals()``.
        also: names the package binds itself (not lazily), appended to ``__all__``.
    """
    exports = {name: module for module, names in by_module.items() for name in names}

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return getattr_, dir_, [*exports, *also]


if TYPE_CHECKING:  # what type checkers see (py.typed); at run time each name is imported on first use
    from frontier_qa.errors import BudgetExceededError as BudgetExceededError
    from frontier_qa.errors import ConfigError as ConfigError
    from frontier_qa.errors import FrontierQAError as FrontierQAError
    from frontier_qa.errors import MissingExtraError as MissingExtraError
    from frontier_qa.errors import TargetError as TargetError
    from frontier_qa.probing._engine import ProbeResult as ProbeResult
    from frontier_qa.probing._engine import probe as probe
    from frontier_qa.probing._engine import replay as replay
    from frontier_qa.probing._settings import ProbeSettings as ProbeSettings
    from frontier_qa.probing._validation import Validator as Validator
    from frontier_qa.runtime import Budget as Budget
    from frontier_qa.runtime import Limits as Limits
    from frontier_qa.runtime import open_target as open_target
    from frontier_qa.runtime.sandbox import Sandbox as Sandbox
    from frontier_qa.runtime.sandbox import SandboxResult as SandboxResult
    from frontier_qa.scoring._embedders import get_embedder as get_embedder
    from frontier_qa.scoring._equivalence import Comparator as Comparator
    from frontier_qa.scoring._equivalence import equivalent as equivalent
    from frontier_qa.scoring._equivalence import normalize as normalize
    from frontier_qa.scoring._paths import check_trajectory as check_trajectory
    from frontier_qa.scoring._paths import pass_hat_k as pass_hat_k
    from frontier_qa.scoring._repetition import repetition_penalty as repetition_penalty
    from frontier_qa.scoring._semantic import semantic_consistency as semantic_consistency
    from frontier_qa.scoring._semantic import semantic_consistency_of as semantic_consistency_of
    from frontier_qa.scoring.answers import ANSWER_FORMATS as ANSWER_FORMATS
    from frontier_qa.scoring.answers import extract_answer as extract_answer
    from frontier_qa.scoring.answers import extract_boxed as extract_boxed
    from frontier_qa.scoring.bands import in_band as in_band
    from frontier_qa.scoring.bands import soft_band as soft_band
    from frontier_qa.scoring.consistency import Consistency as Consistency
    from frontier_qa.scoring.consistency import consistency_of as consistency_of
    from frontier_qa.scoring.consistency import self_consistency as self_consistency
    from frontier_qa.scoring.rewards import composite_reward as composite_reward
    from frontier_qa.scoring.rewards import format_reward as format_reward
    from frontier_qa.scoring.rewards import path_reward as path_reward
    from frontier_qa.scoring.rewards import tool_reward as tool_reward
    from frontier_qa.scoring.rewards import uncertainty_reward as uncertainty_reward
    from frontier_qa.session._outcome import Outcome as Outcome
    from frontier_qa.session._session import Session as Session
    from frontier_qa.target import Adapter as Adapter
    from frontier_qa.target import Case as Case
    from frontier_qa.target import Expectations as Expectations
    from frontier_qa.target import Sampling as Sampling
    from frontier_qa.target import Target as Target
    from frontier_qa.target import ToolArguments as ToolArguments
    from frontier_qa.target import ToolCall as ToolCall
    from frontier_qa.target import Trajectory as Trajectory
else:
    __getattr__, __dir__, __all__ = _lazy_exports(__name__, _BY_MODULE, globals(), also=["__version__"])
