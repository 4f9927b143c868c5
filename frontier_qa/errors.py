"""One exception hierarchy for frontier-qa.

Every error a user can cause says what was wrong, where, and what to do about it
(``hint``). The CLI prints ``str(err)`` and never a traceback for these.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path


class FrontierQAError(Exception):
    """Base of every error frontier-qa raises on purpose."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if not hint else f"{message}\n  fix: {hint}")


class ConfigError(FrontierQAError, ValueError):
    """A configuration value, target spec or argument is invalid.

    ``key`` is the path of the bad key when one is known (pydantic's ``loc``, e.g.
    ``("probing", "k")``, or a constructor argument's name), so callers decide where an error
    belongs without reading its text. ``source`` is where a config key was set
    (``probe.yaml:12``, ``--set probing.k=0``, an environment variable, ``defaults``) once the
    configuration has located it; ``None`` until then.
    """

    def __init__(self, message: str, *, hint: str | None = None, key: tuple[str | int, ...] | None = None,
                 source: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.key = key
        self.source = source


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


class RunInterruptedError(BudgetExceededError):
    """The run was interrupted (Ctrl-C): no new call starts; calls in flight finish and are kept.

    A kind of budget stop, so everything that lets in-flight siblings finish on a budget stop
    (and caches their samples) does the same here.
    """


class SandboxError(FrontierQAError):
    """The code sandbox could not be started (not: the sandboxed code failed)."""


def read_text(path: str | os.PathLike[str], *, what: str = "file", hint: str = "check the path") -> str:
    """A text file's content as UTF-8, or a :class:`ConfigError` naming the file, line and column
    of the first byte that is not UTF-8 (a binary file, another encoding), or the OS error.
    """
    file = Path(path)
    try:
        data = file.read_bytes()
    except IsADirectoryError:
        raise ConfigError(f"{what} {file} is a folder, not a file", hint=hint) from None
    except OSError as err:
        raise ConfigError(f"cannot read {what} {file}: {err.strerror}", hint=hint) from None
    return decode_text(data, str(file), what=what)


def decode_text(data: bytes, where: str, *, what: str = "file") -> str:
    """``data`` decoded as UTF-8; a :class:`ConfigError` at ``where:line:column`` when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ConfigError(
            f"{where}:{line}:{column}: the {what} is not UTF-8 text (byte 0x{data[err.start]:02x}); "
            "is it a binary file?",
            hint=f"give a UTF-8 text {what} (re-save it as UTF-8, or point at the right file)",
        ) from None


def check_unicode(value: object, where: str) -> None:
    """Raise :class:`ConfigError` when strings in ``value`` (nested lists/dicts) hold a lone
    surrogate such as ``\\ud800`` from a JSON escape: not Unicode text, so it cannot be stored.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as err:
                bad = item[err.start]
                raise ConfigError(
                    f"{where}: the text holds a lone surrogate {bad!r} at character {err.start} (from a JSON "
                    "escape such as \\ud800), which is not valid Unicode",
                    hint="write the character itself, or a complete surrogate pair (\\ud83d\\ude00), or remove it",
                ) from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def closest_name(given: str, known: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The known name a misspelt ``given`` most likely means, for "did you mean ...?" (or ``None``).

    A name that ``given`` begins (``budget`` -> ``budget_calls``) beats a merely similar one
    (``budget`` -> ``judge``): a truncated name is the commonest slip, and plain string similarity
    ranks short unrelated names above it. Among several such, the shortest (then the first
    alphabetically) wins.
    """
    names = sorted(set(known))
    word = given.strip().lower()
    if len(word) >= 3:
        started = [n for n in names if n.lower().startswith(word) and n.lower() != word]
        if started:
            return min(started, key=lambda n: (len(n), n))
    close = difflib.get_close_matches(given, names, n=1, cutoff=cutoff)
    return close[0] if close else None


def closest_value(given: str, allowed: Iterable[str], *, cutoff: float = 0.5) -> str | None:
    """The allowed value a wrong ``given`` most likely means, for "did you mean ...?" (or ``None``).

    A value that ``given`` holds (``strict_order`` -> ``strict``, the longest such) beats the rest:
    a word added to the right value is the commonest slip, and string similarity ranks
    ``in_order`` above ``strict`` there. Then :func:`closest_name` (a value ``given`` begins, then
    a merely similar one).
    """
    word = given.strip().lower()
    held = [v for v in sorted(set(allowed)) if len(v) >= 3 and v.lower() in word and v.lower() != word]
    if held:
        return max(held, key=lambda v: (len(v), v))
    return closest_name(given, allowed, cutoff=cutoff)
