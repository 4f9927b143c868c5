"""One exception hierarchy for frontier-qa.

Every error a user can cause says what was wrong, where, and what to do about it
(``hint``). The CLI prints ``str(err)`` and never a traceback for these.
"""

from __future__ import annotations


class FrontierQAError(Exception):
    """Base of every error frontier-qa raises on purpose."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if not hint else f"{message}\n  fix: {hint}")


class ConfigError(FrontierQAError, ValueError):
    """A configuration value, target spec or argument is invalid."""


class MissingExtraError(FrontierQAError, ImportError):
    """An optional dependency is not installed; names the extra that provides it."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the Python package {package!r}, which is not installed.",
            hint=f"pip install 'frontier-qa[{extra}]'",
        )
        self.package = package
        self.extra = extra


class AnswerError(FrontierQAError, ValueError):
    """An answer format or equivalence request cannot be honoured."""


class TargetError(FrontierQAError):
    """A target failed in a way that retrying will not fix (auth, bad request, bad spec)."""


class TargetUnavailableError(TargetError):
    """A target kept failing: too many consecutive errors, or retries exhausted."""


class BudgetExceededError(FrontierQAError):
    """A calls / tokens / cost / wall-time budget ran out."""


class SandboxError(FrontierQAError):
    """The code sandbox could not be started (not: the sandboxed code failed)."""
