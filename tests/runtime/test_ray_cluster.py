"""Probing on a real Ray cluster: a head and a second raylet on 127.0.0.1 (not local mode), the
project's rate-limited OpenAI-compatible server, workers of uneven capacity.

One cluster serves the module (``cluster``, ~20 s to start on a loaded 2-core machine); the driver is
this process (``ray.init`` once), except where the driver itself is killed (a CLI subprocess).
Checked: the global limiter uses >= 95 % of the configured RPM with no 429 although one worker is far
slower than its RPM/N share; the call budget is never exceeded; a SIGKILLed worker loses no sample
and re-pays at most its calls in flight; the driver owns the cache and its single flight; a driver
killed with ``kill -9`` leaves a run that ``--resume`` finishes; Ctrl-C stops the cluster's calls.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.config import Override, load_config
from frontier_qa.session import Session
from frontier_qa.store._case_store import CaseStore
from frontier_qa.target import Case, Sampling
from tests.factories import REPO
from tests.servers.fake_openai import FakeOpenAIServer

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from tests.servers.ray_cluster import LocalRayCluster  # noqa: E402

# one cluster for the module: under `pytest -n 2 --dist loadgroup` all its tests go to one xdist worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray_cluster")]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    # the second node's workers are slow (its agents' tools wait, below): workers of uneven speed
    with LocalRayCluster(nodes=2, num_cpus=1, env=[{}, {"FQA_TEST_SLOW_TOOL_S": "0.6"}]) as running:
        try:
            yield running
        finally:
            if ray.is_initialized():
                ray.shutdown()


def write_cases(root: Path, n: int) -> Path:
    rows = [{"id": f"c{i}", "topic": "sums", "prompt": f"Case {i}: what is {i} plus {7 * i + 3}?",
             "reference": str(8 * i + 3), "reference_verified": True} for i in range(n)]
    path = root / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def config(root: Path, server: FakeOpenAIServer, cluster: LocalRayCluster, *, k: int = 4,
           limits: Mapping[str, Any] | None = None, ray_keys: Mapping[str, Any] | None = None,
           more: Mapping[str, Any] | None = None) -> Any:
    keys = {
        "target.spec": f"openai:fake-model@{server.base_url}",
        "target.options": {"api_key": "sk-test-ray-0123456789", "max_n": 1},  # one request per sample
        "target.limits": {"max_concurrency": 16, "timeout_s": 30, **(limits or {})},
        "curriculum.type": "file", "curriculum.path": str(root / "cases.jsonl"),
        "probing.policy": "fixed", "probing.k": k, "probing.concurrency": 8, "probing.verify_references": False,
        "store": str(root / "store"),
        "ray.address": cluster.address, "ray.workers": 2, "ray.cpus_per_worker": 0.5, **{f"ray.{k}": v for k, v in (ray_keys or {}).items()}, **(more or {}),
    }
    return load_config(None, [Override(key, value, "test") for key, value in keys.items()])


def share_of_rpm(server: FakeOpenAIServer, rpm: float) -> float:
    """Requests the server accepted over what ``rpm`` allows between the first and the last."""
    at = [r.at for r in server.requests]
    return (len(at) - 1) / ((at[-1] - at[0]) * rpm / 60.0)


def test_uneven_workers_share_one_rpm_limit_without_429(cluster: LocalRayCluster, tmp_path: Path,
                                                        report_measurement: Any) -> None:
    # the slow worker (1 slot, 0.5 s a call) manages 2 calls/s, under its RPM/2 share of 2.5/s: a static
    # split would use at most 4.5 of 5 calls/s (0.90); one limiter lets the fast worker take the rest
    rpm = 300
    write_cases(tmp_path, 20)
    with FakeOpenAIServer(rpm=rpm, rpm_burst=2, latency_s=0.5) as server:
        cfg = config(tmp_path, server, cluster, limits={"rpm": rpm}, ray_keys={"slots": [6, 1]})

        async def main() -> Any:
            async with Session(cfg) as session:
                outcome = await session.probe()
                return outcome, session.parts.target.adapter.workers
        outcome, workers = asyncio.run(main())
        share = share_of_rpm(server, rpm)
        calls = [w.stats["calls"] for w in workers]
        report_measurement("ray_rpm_share", f"Ray, 2 uneven workers (slots 6 and 1), RPM {rpm}: "
                           f"{share:.3f} of the limit used, {server.rate_limited()} 429s, calls by worker {calls}")
        assert server.rate_limited() == 0
        assert share >= 0.95
        assert len(outcome.records) == 20 and all(r.k == 4 and r.n_failed == 0 for r in outcome.records)
        assert server.model_calls() == 80
        assert calls[0] > 2 * calls[1] > 0  # both worked, the fast one most


def probe_on_budget(cluster: LocalRayCluster, tmp_path: Path, budget: Mapping[str, Any]) -> Any:
    """A probe of 20 cases on two workers of 4 slots under ``budget``: its outcome, spending and server."""
    write_cases(tmp_path, 20)
    with FakeOpenAIServer(latency_s=0.2) as server:
        cfg = config(tmp_path, server, cluster, more={f"budget.{k}": v for k, v in budget.items()},
                     ray_keys={"slots": [4, 4]})

        async def main() -> Any:
            async with Session(cfg) as session:
                outcome = await session.probe()
                return outcome, session.parts.target.snapshot()
        outcome, spent = asyncio.run(main())
    return outcome, spent, server


def test_the_call_budget_holds_across_workers(cluster: LocalRayCluster, tmp_path: Path) -> None:
    outcome, spent, server = probe_on_budget(cluster, tmp_path, {"max_calls": 23})
    assert outcome.stop_reason == "budget"
    assert server.model_calls() <= 23  # calls in flight count against max_calls: never over
    assert spent.calls == server.model_calls() and spent.in_flight == 0


def test_the_token_budget_is_overshot_by_at_most_the_calls_in_flight(cluster: LocalRayCluster, tmp_path: Path) -> None:
    outcome, spent, server = probe_on_budget(cluster, tmp_path, {"max_tokens": 300})
    per_call = max(len(json.dumps(r.body["messages"]).split()) for r in server.requests) + 10  # prompt + answer
    assert outcome.stop_reason == "budget" and spent.tokens >= 300
    assert spent.tokens - 300 <= 8 * per_call  # tokens are known when a call ends: the 8 slots in flight at most


def test_a_sigkilled_worker_loses_no_sample_and_repays_at_most_its_calls_in_flight(
        cluster: LocalRayCluster, tmp_path: Path, report_measurement: Any) -> None:
    write_cases(tmp_path, 16)
    with FakeOpenAIServer(latency_s=0.4) as server:
        cfg = config(tmp_path, server, cluster, ray_keys={"slots": [4, 4]})

        async def main() -> Any:
            async with Session(cfg) as session:
                target = session.parts.target
                victim = target.adapter.workers[1]
                run = asyncio.ensure_future(session.probe())
                while server.model_calls() < 16:
                    await asyncio.sleep(0.05)
                os.kill(victim.pid, signal.SIGKILL)
                outcome = await run
                grants = ray.get(target.adapter.governor.open_grants.remote())
                return outcome, target.adapter, grants
        outcome, pool, grants = asyncio.run(main())
    repaid = server.model_calls() - 16 * 4
    report_measurement("ray_sigkill", f"Ray, a worker SIGKILLed mid-run: {len(outcome.records)} of 16 cases, "
                       f"{sum(r.k for r in outcome.records)} of 64 samples, re-paid {repaid} (its slots: 4)")
    assert pool.lost == 1 and not pool.workers[1].alive
    assert len(outcome.records) == 16
    assert all(r.k == 4 and r.n_failed == 0 for r in outcome.records)  # 0 samples lost
    assert 0 <= repaid <= 4  # only requests already sent when it died
    assert grants == 0  # its grants were settled: no slot leaks


def test_the_driver_owns_the_cache_and_its_single_flight(cluster: LocalRayCluster, tmp_path: Path) -> None:
    write_cases(tmp_path, 1)
    with FakeOpenAIServer(latency_s=0.3) as server:
        cfg = config(tmp_path, server, cluster, ray_keys={"slots": [2, 2]})
        case, sampling = Case("c0", "what is 1 plus 1?"), Sampling(seed=3, max_tokens=32)

        async def main() -> Any:
            async with Session(cfg) as session:
                target = session.parts.target
                # two callers ask for the same samples at once: each sample is fetched once, by one worker
                first, second = await asyncio.gather(target.sample(case, 4, sampling), target.sample(case, 4, sampling))
                again = await target.sample(case, 4, sampling)
                return first, second, again, target.stats()
        first, second, again, stats = asyncio.run(main())
    assert server.model_calls() == 4
    assert [t.text for t in first] == [t.text for t in second] == [t.text for t in again]
    assert all(t.cached for t in again) and stats.calls == 4


def _cli(root: Path, cluster: LocalRayCluster, server: FakeOpenAIServer, *args: str) -> subprocess.Popen[str]:
    cfg = root / "probe.yaml"
    cfg.write_text(json.dumps({
        "target": {"spec": f"openai:fake-model@{server.base_url}", "options": {"api_key": "x", "max_n": 1},
                   "limits": {"max_concurrency": 8, "timeout_s": 30}},
        "curriculum": {"type": "file", "path": "cases.jsonl"},
        "probing": {"policy": "fixed", "k": 4, "concurrency": 4, "verify_references": False},
        "ray": {"workers": 2, "slots": [2, 2], "cpus_per_worker": 0.5},
    }))
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.Popen([sys.executable, "-m", "frontier_qa", "probe", "--config", str(cfg), "--ray",
                             cluster.address, "--progress", "plain", *args], cwd=root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def sample_workers() -> int:
    """Ray worker processes running a SampleWorker now (Ray titles each process after its actor)."""
    found = 0
    for entry in Path("/proc").iterdir():
        try:
            found += entry.name.isdigit() and b"SampleWorker" in (entry / "cmdline").read_bytes()
        except OSError:
            continue
    return found


def _wait_for(check: Any, timeout_s: float, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if proc.poll() is not None:
            raise AssertionError(f"the driver exited early ({proc.returncode}):\n{proc.stdout.read() if proc.stdout else ''}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("timed out waiting for the driver")
        time.sleep(0.1)


def test_a_killed_driver_leaves_a_run_that_resume_finishes(cluster: LocalRayCluster, tmp_path: Path) -> None:
    write_cases(tmp_path, 12)
    store = CaseStore(tmp_path / ".frontier-qa")
    with FakeOpenAIServer(latency_s=0.3) as server:
        first = _cli(tmp_path, cluster, server, "--run-id", "r1")
        _wait_for(lambda: store.runs_dir.is_dir() and len(store.latest(run_id="r1")) >= 3, 240, first)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        deadline = time.monotonic() + 30
        while sample_workers() and time.monotonic() < deadline:  # Ray ends a dead driver's actors
            time.sleep(0.2)
        assert sample_workers() == 0
        paid_before = server.model_calls()
        done_before = len(store.latest(run_id="r1"))
        second = _cli(tmp_path, cluster, server, "--resume", "r1")
        out, _ = second.communicate(timeout=240)
    assert second.returncode in (0, 1) and "stopped: curriculum exhausted" in out, out  # 1: the gate (wrong answers)
    assert 3 <= done_before < 12
    records = list(store.latest(run_id="r1").values())
    assert len(records) == 12 and all(r.k == 4 and r.n_failed == 0 for r in records)
    # the resumed run paid only for samples not cached: the dead driver's calls in flight at most again
    assert server.model_calls() <= 12 * 4 + 4, (paid_before, server.model_calls())


def test_ctrl_c_stops_the_cluster_calls(cluster: LocalRayCluster, tmp_path: Path) -> None:
    write_cases(tmp_path, 40)
    with FakeOpenAIServer(latency_s=0.3) as server:
        proc = _cli(tmp_path, cluster, server, "--run-id", "r2")
        _wait_for(lambda: server.model_calls() >= 8, 240, proc)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        stopped_at = server.model_calls()
        time.sleep(1.5)
        after = server.model_calls()
    assert proc.returncode == 130, out
    assert sample_workers() == 0  # the driver ended its workers on the way out
    assert "--resume r2" in out
    assert after == stopped_at < 40 * 4  # no worker started a call once the driver stopped


# --- on demand (-m ray_cluster): a framework agent's model calls, shards sharing one limiter ----------


@pytest.fixture
def on_demand(request: pytest.FixtureRequest) -> None:
    if "ray_cluster" not in (request.config.option.markexpr or ""):
        pytest.skip("on demand: run with -m ray_cluster")


GEO_AGENT = '''
import asyncio, os
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=%r, api_key="sk-test")), name="geo")


@agent.tool_plain
async def double(x: int) -> int:
    """Twice x (slowly on the cluster's slow node)."""
    await asyncio.sleep(float(os.environ.get("FQA_TEST_SLOW_TOOL_S", "0")))
    return 2 * x
'''


def tool_then_answer(body: dict[str, Any], index: int) -> Any:
    """A tool call first, the answer once the tool's result is in: two model calls a sample."""
    if body["messages"][-1].get("role") == "tool":
        return f"\\boxed{{{body['messages'][-1]['content']}}}"
    return {"content": None, "tool_calls": [{"name": "double", "arguments": json.dumps({"x": 21})}]}


@pytest.mark.ray_cluster
def test_a_framework_agents_model_calls_are_admitted_one_by_one(on_demand: None, cluster: LocalRayCluster,
                                                                tmp_path: Path, report_measurement: Any) -> None:
    pytest.importorskip("pydantic_ai")
    rpm = 300
    write_cases(tmp_path, 20)
    with FakeOpenAIServer(answers=tool_then_answer, rpm=rpm, rpm_burst=2, latency_s=0.3) as server:
        (tmp_path / "geo.py").write_text(GEO_AGENT % server.base_url)
        cfg = config(tmp_path, server, cluster, k=3, limits={"rpm": rpm}, ray_keys={"slots": [4, 2]},
                     more={"target.spec": f"pydantic-ai:{tmp_path / 'geo.py'}:agent", "target.options": {}})

        async def main() -> Any:
            async with Session(cfg) as session:
                outcome = await session.probe()
                return outcome, session.parts.target.stats()
        outcome, stats = asyncio.run(main())
        share = share_of_rpm(server, rpm)
    report_measurement("ray_framework_rpm", f"Ray, a pydantic-ai agent on 2 uneven workers, RPM {rpm}: "
                       f"{share:.3f} of the limit, {server.rate_limited()} 429s, {server.model_calls()} model calls")
    assert all(r.k == 3 and r.n_failed == 0 for r in outcome.records) and len(outcome.records) == 20
    assert server.model_calls() == 120 == stats.calls  # two model calls a sample, each admitted
    assert server.rate_limited() == 0 and share >= 0.95


@pytest.mark.ray_cluster
def test_shards_naming_one_limiter_share_its_rpm(on_demand: None, cluster: LocalRayCluster, tmp_path: Path,
                                                 report_measurement: Any) -> None:
    rpm = 240
    write_cases(tmp_path, 24)
    with FakeOpenAIServer(rpm=rpm, rpm_burst=2, latency_s=0.2) as server:
        shards = [_cli(tmp_path, cluster, server, "--shard", f"{i}/2", "--run-id", "n1", "--store", f"s{i}",
                       "--set", f"target.limits.rpm={rpm}", "--set", "ray.workers=0", "--set", "ray.limiter=nightly")
                  for i in (1, 2)]
        outs = [proc.communicate(timeout=240)[0] for proc in shards]
        share = share_of_rpm(server, rpm)
        t0 = server.requests[0].at
        refused = [f"#{i} at {r.at - t0:.2f}s" for i, r in enumerate(server.requests) if r.fault.status == 429]
    report_measurement("ray_shared_limiter", f"2 shards sharing one Ray limiter at RPM {rpm}: {share:.3f} of it "
                       f"together, {server.rate_limited()} 429s {refused} ({server.model_calls()} calls)")
    for proc, out in zip(shards, outs, strict=True):
        assert proc.returncode in (0, 1) and "stopped: curriculum exhausted" in out, out
    assert server.model_calls() == 24 * 4 and server.rate_limited() == 0
    assert share <= 1.05  # together within one limit, not 2 x it
