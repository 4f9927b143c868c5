"""A real local Ray cluster on 127.0.0.1 for tests and benchmarks: a head and more raylets joined to it.

Not Ray's local mode: each node is a ``ray start --block`` process (GCS, raylet, object store), the
head with ``--head``, the others with ``--address`` of the head, so actors are spread over separate
raylets and a worker can be killed like a lost node's. Every node runs in a process group of its
own; :meth:`LocalRayCluster.stop` ends each group (``ray start --block`` stops its node's processes
on SIGTERM; SIGKILL follows for anything left), so no raylet outlives the ``with`` block, and no
other Ray on the machine is touched (``ray stop`` would stop every one).

Nodes are small (``num_cpus``, a 80 MB object store): the tests share a 2-core machine.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).parent / "ray")
OBJECT_STORE_BYTES = 80 * 1024 * 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalRayCluster:
    """``nodes`` raylets on 127.0.0.1 (the first is the head), each with ``num_cpus`` CPUs.

    Args:
        nodes: raylets in all, the head included.
        num_cpus: CPUs each node offers (fractional worker CPUs fit several workers on one).
        env: extra environment for the nodes' processes (workers inherit it), one dict per node.
    """

    def __init__(self, nodes: int = 2, num_cpus: int = 1, env: list[dict[str, str]] | None = None) -> None:
        self.nodes = nodes
        self.num_cpus = num_cpus
        self.env = env or [{} for _ in range(nodes)]
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp_dir = tempfile.mkdtemp(prefix="rq", dir="/tmp")  # short: Ray's socket paths have a limit
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[Path] = []

    def _start(self, index: int, args: list[str]) -> None:
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **self.env[index]}
        log = Path(self.temp_dir) / f"node{index}.log"
        self._logs.append(log)
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [RAY, "start", "--block", "--disable-usage-stats", f"--num-cpus={self.num_cpus}",
                 f"--object-store-memory={OBJECT_STORE_BYTES}", "--node-ip-address=127.0.0.1", *args],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._procs.append(proc)

    def start(self, timeout_s: float = 120.0) -> LocalRayCluster:
        """Start the head, then the other raylets; return once every node is alive."""
        try:
            self._start(0, ["--head", f"--port={self.port}", "--include-dashboard=false",
                            f"--temp-dir={self.temp_dir}"])
            self._wait_nodes(1, timeout_s)
            for i in range(1, self.nodes):
                self._start(i, [f"--address={self.address}"])
            self._wait_nodes(self.nodes, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_nodes(self, count: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for proc, log in zip(self._procs, self._logs, strict=True):
                if proc.poll() is not None:
                    raise RuntimeError(f"a Ray node exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            if self.alive_nodes() >= count:
                return
            time.sleep(1.0)
        raise TimeoutError(f"{count} Ray node(s) did not come up in {timeout_s:g} s")

    def alive_nodes(self) -> int:
        """Nodes the head reports alive (0 while it is not up)."""
        code = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
                "print(sum(n['Alive'] for n in ray.nodes()))")
        try:
            out = subprocess.run([sys.executable, "-c", code, self.address], capture_output=True, text=True,
                                 timeout=60, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
        except subprocess.TimeoutExpired:
            return 0
        lines = out.stdout.strip().splitlines()
        return int(lines[-1]) if out.returncode == 0 and lines and lines[-1].isdigit() else 0

    def stop(self) -> None:
        """End every node's process group: SIGTERM (``ray start --block`` stops its node), then SIGKILL;
        then any worker of this cluster still running (workers start sessions of their own).
        """
        workers = self._session_pids()
        for proc in reversed(self._procs):
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(proc, signal.SIGKILL)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._procs.clear()
        for pid in workers | self._session_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _session_pids(self) -> set[int]:
        """Processes whose command line names this cluster's temp folder (its workers and daemons)."""
        found = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if self.temp_dir.encode() in (entry / "cmdline").read_bytes():
                    found.add(int(entry.name))
            except OSError:
                continue
        return found

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session: the group id is the leader's pid
    except ProcessLookupError:
        pass
