"""``${VAR}`` in option values: secrets come from the environment, never from a config file.

Config files and adapter options may say ``api_key: ${OPENAI_API_KEY}`` or
``Authorization: Bearer ${TOKEN}``; :func:`expand_env` resolves them when the target is
opened, so keys never sit in a committed file, a record or the cache.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from frontier_qa.errors import ConfigError

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``${NAME}`` reference (a shell-style variable name in braces)."""


class UnsetVariableError(ConfigError):
    """A value refers to an environment variable that is not set (``variable`` names it)."""

    def __init__(self, variable: str) -> None:
        self.variable = variable
        super().__init__(f"refers to ${{{variable}}}, which is not set", hint=f"export {variable}=... before running")


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with every ``${NAME}`` replaced by the variable's value.

    Raises:
        UnsetVariableError: the first variable referred to that is not set (nothing replaced).
    """
    env = os.environ if environ is None else environ
    missing = next((m.group(1) for m in ENV_REF.finditer(value) if m.group(1) not in env), None)
    if missing is not None:
        raise UnsetVariableError(missing)
    return ENV_REF.sub(lambda m: env[m.group(1)], value)


__all__ = ["ENV_REF", "UnsetVariableError", "expand_env"]
