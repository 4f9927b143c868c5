"""Budgets count what was paid: a request given up at the timeout still counts."""

from __future__ import annotations

import re

import pytest

from tests.faults.conftest import Faults, case_rows
from tests.servers.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.faults


def test_requests_timed_out_before_the_server_answered_are_counted_with_estimated_tokens(
    faults: Faults, report_measurement  # type: ignore[no-untyped-def]
) -> None:
    faults.write_cases(case_rows(2))
    with FakeOpenAIServer(latency_s=0.6) as server:
        rc, out, err = faults.cli(
            "probe", "--target", f"openai:fake-model@{server.base_url}", "--curriculum", "cases.jsonl", "--k", "2",
            "--store", "store", "--progress", "off", "--set", "target.options.api_key=x",
            "--set", "target.limits.timeout_s=0.2", "--set", "target.limits.max_retries=1",
            "--set", "target.limits.backoff.initial_s=0", "--set", "target.limits.backoff.jitter_s=0",
            "--set", "probing.sampling.max_tokens=50")
        served = server.count()
    assert "Traceback" not in err, err
    spent = re.search(r"calls (\d+), tokens (\d+) \((\d+) estimated\)", out)
    assert spent is not None, out + err
    calls, tokens, estimated = map(int, spent.groups())
    report_measurement("timeouts_budget", f"timeout 0.2 s below a 0.6 s server: server saw {served} requests, "
                                          f"budget counted {calls} calls, {estimated} estimated tokens")
    assert calls == served > 0  # every paid request is in the budget
    assert tokens == estimated >= served * 50  # no reply: prompt + n * max_tokens per request, marked estimated
