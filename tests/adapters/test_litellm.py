"""The litellm adapter and the runtime against a real OpenAI-compatible HTTP server.

litellm talks to :class:`tests.servers.fake_openai.FakeOpenAIServer` as provider
``openai`` with ``api_base`` pointing at it, so its real exception mapping, header
handling and offline cost map are exercised.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path

import pytest

from frontier_qa.adapters import create_adapter
from frontier_qa.errors import ConfigError, TargetError
from frontier_qa.runtime import Backoff, Limits, ManagedTarget, open_target
from frontier_qa.target import Case, Sampling, Usage
from tests.servers.fake_openai import FakeOpenAIServer, served

litellm = pytest.importorskip("litellm")

FAST = Backoff(initial_s=0.01, max_s=0.05, jitter_s=0.01)
SAMPLING = Sampling(seed=0, max_tokens=32)
ANSWERS = {"2+2?": ["\\boxed{4}", "\\boxed{5}", "\\boxed{4}"]}
MODEL = "openai/gpt-4o-mini"  # known to litellm's cost map; served by the fake server


def target_for(server: FakeOpenAIServer, tmp_path: Path | None = None, *, limits: Limits | None = None,
               **options: object) -> ManagedTarget:
    options.setdefault("api_key", "sk-local-placeholder")
    target = open_target(
        f"litellm:{MODEL}",
        limits=limits or Limits(backoff=FAST, timeout_s=10.0),
        cache=tmp_path / "cache" if tmp_path is not None else False,
        api_base=server.base_url,
        **options,
    )
    assert isinstance(target, ManagedTarget)
    return target


def test_n_samples_cost_from_the_offline_cost_map() -> None:
    price = litellm.model_cost["gpt-4o-mini"]
    with FakeOpenAIServer(answers=ANSWERS) as server:
        target = target_for(server)
        assert target.id == f"litellm:{MODEL}@{server.base_url}" and target.max_n > 1
        case = Case("add", "2+2?")
        out = target.sample_sync(case, 3, SAMPLING)
        assert [t.text for t in out] == served(ANSWERS["2+2?"], case, SAMPLING, 3)
        assert server.count() == target.stats().calls == 1
        body = server.requests[0].body
        assert (body["n"], body["seed"], body["max_tokens"]) == (3, SAMPLING.seed_for(case, 0), 32)
        assert server.requests[0].headers["authorization"] == "Bearer sk-local-placeholder"
        usage = sum((t.usage for t in out), Usage())
        assert usage == Usage(1, 3)  # 1 prompt word; 1 word per answer
        expected = usage.prompt_tokens * price["input_cost_per_token"] + usage.completion_tokens * price[
            "output_cost_per_token"]
        assert sum(t.cost_usd or 0 for t in out) == pytest.approx(expected)
        assert target.snapshot().cost_usd == pytest.approx(expected)


def test_tool_calls_are_recorded_not_executed() -> None:
    answer = {"content": None, "tool_calls": [{"name": "python", "arguments": '{"code": "print(6*7)"}'}]}
    tool = {"type": "function", "function": {"name": "python", "parameters": {"type": "object"}}}
    with FakeOpenAIServer(answers={"compute": answer}) as server:
        out = target_for(server).sample_sync(Case("t", "compute", tools=(tool,)), 1, SAMPLING)
        (call,) = out[0].tool_calls
        assert (call.name, call.arguments, call.result) == ("python", '{"code": "print(6*7)"}', None)
        assert out[0].n_tool_calls == 0


def test_retry_after_is_read_from_litellm_headers() -> None:
    with FakeOpenAIServer(script=["429:0.4"]) as server:
        target = target_for(server, limits=Limits(backoff=Backoff(initial_s=20, max_s=20, jitter_s=0)))
        began = time.monotonic()
        assert target.sample_sync(Case("a", "hi"), 1, SAMPLING)[0].ok
        assert 0.35 <= time.monotonic() - began < 10
        assert server.count() == 2 and target.stats().rate_limited == 1


@pytest.mark.parametrize("fault", ["500", "503", "malformed", "html"])
def test_transient_faults_are_retried(fault: str) -> None:
    with FakeOpenAIServer(script=[fault]) as server:
        target = target_for(server)
        assert target.sample_sync(Case("a", "hi"), 1, SAMPLING)[0].text == "The answer is \\boxed{42}."
        assert server.count() == target.stats().calls == 2  # litellm itself did not retry


def test_hang_times_out_and_is_retried() -> None:
    with FakeOpenAIServer(script=["hang"]) as server:
        target = target_for(server, limits=Limits(backoff=FAST, timeout_s=0.5))
        assert target.sample_sync(Case("a", "hi"), 1, SAMPLING)[0].ok
        assert server.count() == 2


def test_unauthorized_is_fatal_sent_once_and_redacted() -> None:
    key = "sk-wrong-abcdef0123456789"
    with FakeOpenAIServer(api_key="sk-right") as server:
        target = target_for(server, api_key=key, limits=Limits(backoff=FAST, max_retries=4))
        with pytest.raises(TargetError, match="HTTP 401") as info:
            target.sample_sync(Case("a", "hi"), 1, SAMPLING)
        assert server.count() == 1
        shown = "".join(traceback.format_exception(info.value)) + repr(target)
        assert key not in shown


def test_missing_credentials_is_fatal_and_says_which_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer() as server:
        target = open_target(f"litellm:{MODEL}", api_base=server.base_url, cache=False,
                             limits=Limits(backoff=FAST, max_retries=3))
        with pytest.raises(TargetError, match="OPENAI_API_KEY") as info:
            target.sample_sync(Case("a", "hi"), 1, SAMPLING)
        assert "no API key" in str(info.value) and target.stats().calls == 1 and target.stats().retries == 0
        assert server.count() == 0  # litellm refused before sending anything


def test_cache_makes_a_rerun_free(tmp_path: Path) -> None:
    with FakeOpenAIServer(answers=ANSWERS) as server:
        first = target_for(server, tmp_path).sample_sync(Case("add", "2+2?"), 3, SAMPLING)
        rerun = target_for(server, tmp_path)
        assert [t.text for t in rerun.sample_sync(Case("add", "2+2?"), 3, SAMPLING)] == [t.text for t in first]
        assert server.count() == 1 and rerun.stats().calls == 0
        stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())
        assert b"sk-local-placeholder" not in stored


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="PROVIDER/MODEL"):
        create_adapter("litellm:surely-not-a-model-name")
    assert create_adapter("litellm:anthropic/claude-3-5-haiku-20241022").max_n == 1  # no n there
