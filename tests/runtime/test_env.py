"""${VAR} references in option values, resolved from the environment."""

from __future__ import annotations

import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.runtime._env import UnsetVariableError, expand_env


def test_references_are_replaced_and_the_rest_is_kept() -> None:
    env = {"TOKEN": "s3cret", "HOST": "example.org"}
    assert expand_env("Bearer ${TOKEN}", env) == "Bearer s3cret"
    assert expand_env("https://${HOST}/v1?x=${TOKEN}", env) == "https://example.org/v1?x=s3cret"
    assert expand_env("$TOKEN and ${ not a ref } stay", env) == "$TOKEN and ${ not a ref } stay"


def test_an_unset_variable_is_a_config_error_that_names_it() -> None:
    with pytest.raises(UnsetVariableError) as caught:
        expand_env("${SET}-${NOT_SET_ANYWHERE}", {"SET": "1"})
    assert isinstance(caught.value, ConfigError) and caught.value.variable == "NOT_SET_ANYWHERE"
    assert caught.value.message == "refers to ${NOT_SET_ANYWHERE}, which is not set"
    assert caught.value.hint == "export NOT_SET_ANYWHERE=... before running"
