"""Keep secrets (API keys, auth headers) out of messages, reprs, logs and the cache.

Adapters hand the runtime the secret values they hold (``Adapter.secrets``, a tuple of
strings; optional). Every error message, error trajectory and cached record the runtime
produces passes through :func:`redact`, which removes those exact values and anything
shaped like a bearer token or an ``api_key=`` assignment.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"

# option names whose values are secrets (lower-cased, '-' and '_' ignored)
_SECRET_NAMES = {"token", "authorization", "bearer", "proxyauthorization"}
_SECRET_SUFFIXES = ("apikey", "secret", "password", "accesstoken", "authtoken", "sessiontoken",
                    "secretkey", "accesskey", "privatekey")

_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{4,}"),
    re.compile(r"(?i)((?:api[_-]?key|authorization|x-api-key|access[_-]?token)[\"']?\s*[:=]\s*[\"']?)"
               r"[^\s\"',;}]{4,}"),
)


def is_secret_name(name: str) -> bool:
    """Whether an option or header name holds a secret (``api_key``, ``Authorization``...)."""
    flat = name.lower().replace("-", "").replace("_", "")
    return flat in _SECRET_NAMES or flat.endswith(_SECRET_SUFFIXES)


def secret_values(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The string values of secret-named options, nested mappings included (headers)."""
    found: list[str] = []
    for key, value in options.items():
        if isinstance(value, Mapping):
            found.extend(secret_values(value))
        elif is_secret_name(str(key)) and isinstance(value, str) and value:
            found.append(value)
            if value.lower().startswith("bearer "):
                found.append(value[7:].strip())
    return tuple(found)


def redact(text: str, secrets: Iterable[str] = (), *, patterns: bool = True) -> str:
    """``text`` with every known secret and every bearer token / key assignment masked.

    Args:
        text: any message.
        secrets: exact secret values to remove (values shorter than 4 characters are
            ignored: masking "x" everywhere would destroy the message and protect nothing).
        patterns: also mask anything shaped like ``Bearer …`` or ``api_key=…``. Off for
            model output (the cache), where such text may be the legitimate answer.
    """
    for secret in sorted(set(maskable(secrets)), key=len, reverse=True):
        text = text.replace(secret, MASK)
    if patterns:
        for pattern in _PATTERNS:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def mentions(value: Any, secrets: Iterable[str]) -> bool:
    """Whether any secret :func:`redact` would mask occurs in ``value``, a JSON-like structure
    (strings, mappings, lists, tuples, dataclasses; anything else through ``str``). Cheaper than
    serialising ``value`` and redacting the text, which matters on every cached call.
    """
    wanted = maskable(secrets)
    return bool(wanted) and _mentions(value, wanted)


def maskable(secrets: Iterable[str]) -> tuple[str, ...]:
    """The secrets :func:`redact` masks: 4 characters or longer (masking "x" everywhere would
    destroy a message and protect nothing).
    """
    return tuple(s for s in secrets if s and len(s) >= 4)


_PLAIN = frozenset({type(None), bool, int, float})


def _mentions(value: Any, secrets: tuple[str, ...]) -> bool:
    kind = type(value)
    if kind is str:
        for secret in secrets:
            if secret in value:
                return True
        return False
    if kind in _PLAIN:
        return False
    if kind is dict or isinstance(value, Mapping):
        for key, item in value.items():
            if _mentions(key, secrets) or _mentions(item, secrets):
                return True
        return False
    if kind is tuple or kind is list or isinstance(value, (list, tuple)):
        for item in value:
            if _mentions(item, secrets):
                return True
        return False
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = getattr(value, "__dict__", None)  # the fields of a dataclass without slots
        return _mentions(list(fields.values()) if fields is not None else
                         [getattr(value, f.name) for f in dataclasses.fields(value)], secrets)
    return _mentions(str(value), secrets)


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``options`` fit for a repr or a log line (secret-named values masked)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, Mapping):
            out[key] = redact_options(value)
        elif is_secret_name(str(key)) and value is not None:
            out[key] = MASK
        else:
            out[key] = value
    return out


__all__ = ["MASK", "is_secret_name", "maskable", "mentions", "redact", "redact_options", "secret_values"]
