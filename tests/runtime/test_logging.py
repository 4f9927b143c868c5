"""What the runtime logs: retries, give-ups, rate-limit waits, sandbox fallbacks; never a secret.

Records are read with pytest's ``caplog`` on the modules' own loggers (``__name__``, under
``frontier_qa``); the command line's ``-v``/``-vv`` are checked on a real CLI run in
``tests/cli/test_verbose.py``.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from frontier_qa.runtime.sandbox import Sandbox
from frontier_qa.target import ErrorClass, ErrorKind, Sampling
from tests.runtime.test_managed import CASE, Limited, ScriptedAdapter, Transient, managed

SAMPLING = Sampling(temperature=1.0, max_tokens=16, seed=0)
MANAGED = "frontier_qa.runtime._managed"


def _records(caplog: pytest.LogCaptureFixture, name: str) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == name]


def test_a_retry_is_logged_at_info_and_a_give_up_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="frontier_qa")
    ok = asyncio.run(managed(ScriptedAdapter([Transient("connection reset")], max_n=1)).sample(CASE, 1, SAMPLING))
    assert ok[0].ok
    (retry,) = _records(caplog, MANAGED)
    assert retry[0] == logging.INFO
    assert retry[1].startswith("retrying a call to scripted:test in ")
    assert retry[1].endswith("(attempt 1 of 6: transient: transient: connection reset)")
    caplog.clear()
    failed = asyncio.run(managed(ScriptedAdapter([Transient("down")] * 3, max_n=1), max_retries=2)
                         .sample(CASE, 1, SAMPLING))
    assert not failed[0].ok
    levels = [level for level, _ in _records(caplog, MANAGED)]
    assert levels == [logging.INFO, logging.INFO, logging.WARNING]
    assert _records(caplog, MANAGED)[-1][1] == (
        "gave up on 1 sample(s) of case 'c' from scripted:test: transient: transient: down (gave up after 3 attempts)")


def test_a_rate_limit_wait_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="frontier_qa")
    out = asyncio.run(managed(ScriptedAdapter([Limited(0.01)], max_n=1)).sample(CASE, 1, SAMPLING))
    assert out[0].ok
    waits = _records(caplog, "frontier_qa.runtime._rate_limit")
    assert (logging.INFO, "rate limited: no new request starts for 0.01 s (the server's Retry-After)") in waits


def test_an_api_key_in_an_error_never_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    key = "sk-test-SECRET-0123456789"

    class Leaky(ScriptedAdapter):
        def classify(self, exc: BaseException) -> ErrorClass:  # echoes the request, key and all
            return ErrorClass(ErrorKind.TRANSIENT, f"503 for Authorization: Bearer {key} (api_key={key})")

    adapter = Leaky([Transient("x")] * 3, max_n=1)
    adapter.secrets = (key,)  # type: ignore[attr-defined]
    caplog.set_level(logging.DEBUG, logger="frontier_qa")
    asyncio.run(managed(adapter, max_retries=1).sample(CASE, 1, SAMPLING))
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) >= 2 and all(key not in text for text in logged)
    assert any("503 for Authorization: Bearer *** (api_key=***" in text for text in logged)


def test_a_sandbox_fallback_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    class NoNetNamespace(Sandbox):
        """What a machine without network namespaces reports when the sandbox probes it."""

        async def _spawn(self, code, features, timeout_s, *, probe=False):  # noqa: ANN001, ANN202
            if probe and "netns" in features:
                return None, ("netns", "unshare(netns) is not permitted here")
            return await super()._spawn(code, features, timeout_s, probe=probe)

    caplog.set_level(logging.INFO, logger="frontier_qa")
    sandbox = NoNetNamespace(timeout_s=5, max_open_files=251)  # a configuration no other test probed
    assert sandbox.capabilities().network == "python-socket-block"
    assert (logging.INFO, "the code sandbox falls back: netns is not available here "
            "(unshare(netns) is not permitted here)") in _records(caplog, "frontier_qa.runtime.sandbox")
