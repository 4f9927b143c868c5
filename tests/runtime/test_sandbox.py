"""The code sandbox contains hostile code: every test runs the real thing in a real subprocess.

Each hostile test is bounded by the sandbox's own timeout (a few seconds). Tests that need a
containment layer the machine lacks are skipped with the layer named (see
``Sandbox.capabilities()``); on the CI machines (root in a container) every layer is active.
"""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from frontier_qa.errors import SandboxError
from frontier_qa.runtime.sandbox import Sandbox, SandboxCapabilities, SandboxResult
from tests.factories import REPO, first_closed_folder


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(timeout_s=5, max_output_bytes=64 * 1024)


@pytest.fixture(scope="module")
def caps(sandbox: Sandbox) -> SandboxCapabilities:
    return sandbox.capabilities()


def _marked_processes(mark: str) -> list[int]:
    """PIDs whose environment carries ``mark`` (readable here as root or as the same user)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if mark.encode() in Path(f"/proc/{entry}/environ").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_plain_code_runs_and_prints(sandbox: Sandbox) -> None:
    result = sandbox.run("print(sum(i * i for i in range(10)))\nprint({'b', 'a'} == {'a', 'b'})")
    assert isinstance(result, SandboxResult)
    assert result.stdout == "285\nTrue\n"
    assert (result.exit_code, result.timed_out, result.killed_reason, result.truncated) == (0, False, None, False)
    assert result.ok and result.duration_s > 0


def test_errors_and_exit_codes_are_reported(sandbox: Sandbox) -> None:
    crashed = sandbox.run("1 / 0")
    assert crashed.exit_code == 1 and not crashed.ok
    assert crashed.stderr.rstrip().endswith("ZeroDivisionError: division by zero")
    assert crashed.killed_reason is None
    assert sandbox.run("raise SystemExit(3)").exit_code == 3


def test_sympy_is_importable_when_installed(sandbox: Sandbox) -> None:
    pytest.importorskip("sympy")
    result = sandbox.run("import sympy\nprint(sympy.factorint(360))")
    assert result.stdout == "{2: 3, 3: 2, 5: 1}\n", result.stderr


def test_environment_has_no_secrets(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-4f2a")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_4f2a")
    code = """
import os
print(sorted(os.environ))
leaks = [k for k, v in os.environ.items() if "secret" in v]
for pid in [p for p in os.listdir("/proc") if p.isdigit()] + [str(os.getppid())]:
    for name in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{name}", "rb").read()
            if b"secret_4f2a" in data or b"sk-secret" in data:
                leaks.append(f"{pid}/{name}")
        except OSError:
            pass
print("leaks", leaks)
"""
    result = sandbox.run(code)
    assert "secret" not in result.stdout.replace("leaks", "")
    names, leaks = result.stdout.splitlines()
    assert leaks == "leaks []"
    assert eval(names) == sorted(  # noqa: S307 - our own printed list literal
        ["HOME", "LANG", "LC_ALL", "MKL_NUM_THREADS", "MPLBACKEND", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
         "PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONNOUSERSITE", "TMPDIR"]
    )


def test_infinite_loop_is_killed_at_the_wall_timeout(sandbox: Sandbox) -> None:
    result = sandbox.run("while True:\n    pass", timeout_s=1.0)
    assert result.timed_out and result.killed_reason == "timeout"
    assert result.exit_code == -9
    assert 1.0 <= result.duration_s < 4.0


def test_cpu_limit_stops_a_busy_process() -> None:
    result = Sandbox(timeout_s=8, cpu_s=1).run("while True:\n    pass")
    assert (result.killed_reason, result.timed_out, result.exit_code) == ("cpu_limit", False, -24)


def test_a_gigabyte_of_output_is_capped_and_stopped(sandbox: Sandbox) -> None:
    code = "import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * (1 << 20))\nprint('finished')"
    result = sandbox.run(code)
    assert result.truncated and result.killed_reason == "output_limit"
    assert result.stdout == "x" * (64 * 1024)
    assert result.duration_s < 5.0


def test_memory_limit_raises_memory_error() -> None:
    result = Sandbox(timeout_s=5, memory_mb=512).run("x = bytearray(1 << 30)\nprint('allocated')")
    assert result.stdout == "" and result.killed_reason == "memory_limit"
    assert "MemoryError" in result.stderr


def test_file_size_limit(sandbox: Sandbox) -> None:
    result = Sandbox(timeout_s=5, max_file_mb=1).run("open('big.bin', 'wb').write(b'x' * (4 << 20))")
    assert result.killed_reason == "file_size_limit" and "File too large" in result.stderr


def test_fork_bomb_is_contained(sandbox: Sandbox, caps: SandboxCapabilities) -> None:
    result = sandbox.run("import os\nwhile True:\n    os.fork()")
    assert result.killed_reason in ("process_limit", "timeout")
    assert result.exit_code != 0 and result.duration_s < 8.0
    assert subprocess.run(["true"], timeout=10).returncode == 0  # the machine can still start processes


def test_escaping_fork_bomb_leaves_no_process_behind(caps: SandboxCapabilities) -> None:
    if not caps.pid_namespace:
        pytest.skip("needs a PID namespace to kill processes that leave the process group")
    mark = f"fqa-test-{uuid.uuid4().hex}"
    bomb = Sandbox(timeout_s=2, max_processes=16, env={"FQA_MARK": mark})
    code = (
        "import os\n"
        "while True:\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            os.setsid()  # leave the process group: only the PID namespace can catch it\n"
        "    except OSError:\n"
        "        pass\n"
    )
    result = bomb.run(code)
    assert result.timed_out and result.killed_reason == "timeout"
    assert _marked_processes(mark) == []


def test_a_fork_bomb_does_not_starve_the_run_beside_it(caps: SandboxCapabilities) -> None:
    """Each run has its own user namespace, so RLIMIT_NPROC counts only its own processes."""
    if not caps.user_namespace:
        pytest.skip("runs share one uid's process count without a user namespace per run")
    bomb_box = Sandbox(timeout_s=3, max_processes=16)
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    neighbour = "import subprocess\nprint(subprocess.run(['/bin/echo', 'alive'], capture_output=True).stdout)"

    async def main() -> tuple[SandboxResult, SandboxResult]:
        bomb = asyncio.ensure_future(bomb_box.arun(code))
        await asyncio.sleep(1.0)  # let the bomb fill its process count
        beside = await Sandbox(timeout_s=5, max_processes=16).arun(neighbour)
        return await bomb, beside

    bomb, beside = asyncio.run(main())
    assert bomb.timed_out
    assert beside.stdout == "b'alive\\n'\n", beside.stderr


def test_writes_outside_the_run_directory_do_not_land(
    sandbox: Sandbox, caps: SandboxCapabilities, tmp_path: Path
) -> None:
    if not (caps.dropped_privileges or caps.user_namespace or os.geteuid() != 0):
        pytest.skip("runs as root without a user namespace: file permissions cannot contain it")
    tag = uuid.uuid4().hex[:8]
    world_writable = tmp_path / "open"
    world_writable.mkdir()
    world_writable.chmod(0o777)
    targets = [REPO / f"pwned-{tag}", Path(tempfile.gettempdir()) / f"pwned-{tag}", world_writable / f"pwned-{tag}"]
    if caps.private_tmp:
        targets += [Path("/var/tmp") / f"pwned-{tag}", Path("/dev/shm") / f"pwned-{tag}"]
    code = (
        f"targets = {[str(t) for t in targets]!r}\n"
        "for t in targets:\n"
        "    try:\n"
        "        open(t, 'w').write('pwned')\n"
        "    except OSError as exc:\n"
        "        print('denied', exc.errno)\n"
        "open('inside.txt', 'w').write('fine')\nprint(open('inside.txt').read())"
    )
    try:
        result = sandbox.run(code)
        assert result.exit_code == 0, result.stderr
        assert result.stdout.endswith("fine\n")
        assert [t for t in targets if t.exists()] == []
    finally:
        for t in targets:
            t.unlink(missing_ok=True)


def test_no_network_to_a_local_listener(sandbox: Sandbox, caps: SandboxCapabilities) -> None:
    assert caps.network in ("namespace", "python-socket-block")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    code = (
        "import socket\n"
        "try:\n"
        f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    s.sendall(b'leak')\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('blocked')\n"
    )
    try:
        result = sandbox.run(code)
        assert result.stdout == "blocked\n", result.stderr
        ready, _, _ = select.select([listener], [], [], 0.2)
        assert ready == []  # no connection ever reached the listener
    finally:
        listener.close()


def test_socket_block_fallback_when_no_network_namespace() -> None:
    class NoNetNamespace(Sandbox):  # forces the fallback layer that machines without namespaces get
        def _wanted(self) -> set[str]:
            return super()._wanted() - {"netns"}

    fallback = NoNetNamespace(timeout_s=5)
    assert fallback.capabilities().network == "python-socket-block"
    code = "import socket\ntry:\n    socket.socket()\nexcept PermissionError:\n    print('refused')\nprint(__name__)"
    result = fallback.run(code)
    assert result.stdout == "refused\n__main__\n"


def test_run_directory_is_deleted(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = Path(tempfile.mkdtemp(prefix="fqa-test-runs-"))
    parent.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(parent))  # where mkdtemp puts run directories
    try:
        result = sandbox.run("open('junk.txt', 'w').write('x' * 1000)\nimport os\nprint(sorted(os.listdir('.')))")
        assert result.stdout == "['junk.txt', 'main.py']\n"
        assert list(parent.iterdir()) == []
    finally:
        shutil.rmtree(parent)


def test_async_runs_are_bounded_by_the_semaphore() -> None:
    one_at_a_time = Sandbox(timeout_s=5, max_concurrency=1)
    code = "import time\nstart = time.time()\ntime.sleep(0.3)\nprint(start, time.time())"

    async def main() -> list[SandboxResult]:
        return await asyncio.gather(*(one_at_a_time.arun(code) for _ in range(2)))

    first, second = [tuple(map(float, r.stdout.split())) for r in asyncio.run(main())]
    assert first[1] <= second[0] or second[1] <= first[0]  # the two runs did not overlap


def test_sync_run_works_inside_an_event_loop(sandbox: Sandbox) -> None:
    async def main() -> SandboxResult:
        return sandbox.run("print(6 * 7)")

    assert asyncio.run(main()).stdout == "42\n"


def test_sandbox_error_only_when_the_sandbox_cannot_start() -> None:
    with pytest.raises(SandboxError, match="cannot start"):
        Sandbox(python="/nonexistent/python3").run("print(1)")
    with pytest.raises(SandboxError, match="network"):
        Sandbox(network="sometimes")


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/python3").exists(), reason="needs root to become nobody")
def test_unprivileged_user_gets_a_user_namespace() -> None:
    """As a normal user the sandbox uses a user namespace (checked here as uid 65534)."""
    unreadable = first_closed_folder(REPO, 65534)
    if unreadable is not None:  # e.g. a checkout under /root or a home directory of mode 700
        pytest.skip(f"uid 65534 cannot read the checkout: {unreadable} is closed to it")
    folder = Path(tempfile.mkdtemp(prefix="fqa-test-"))
    folder.chmod(0o755)
    script = folder / "as_user.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from frontier_qa.runtime.sandbox import Sandbox\n"
        "sb = Sandbox(timeout_s=5)\n"
        "caps = sb.capabilities()\n"
        "print(caps.user_namespace, caps.network, caps.pid_namespace)\n"
        "print(sb.run('import os\\nprint(os.getuid())').stdout.strip())\n"
    )
    script.chmod(0o644)
    try:
        done = subprocess.run(
            ["/usr/bin/python3", str(script)], user=65534, group=65534, capture_output=True, text=True,
            timeout=60, cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        )
    finally:
        shutil.rmtree(folder)
    if "cannot start" in done.stderr:
        pytest.skip(f"no sandbox for unprivileged users here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    layers, uid = done.stdout.splitlines()
    assert uid == "65534"
    if layers.startswith("True"):
        assert layers == "True namespace True"
    else:
        assert layers == "False python-socket-block False"


def test_an_interpreter_in_a_private_temp_folder_still_runs() -> None:
    """CI builds its venv in ``mktemp -d`` (mode 700, under /tmp, which the sandbox replaces)."""
    folder = Path(tempfile.mkdtemp(prefix="fqa-venv-"))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True, timeout=60)
        python = folder / "venv" / "bin" / "python"
        code = (
            "import sys\nprint(sys.prefix)\n"
            "try:\n    open(sys.prefix + '/pwned', 'w')\nexcept OSError:\n    print('read-only')"
        )
        result = Sandbox(python=str(python), timeout_s=5).run(code)
        assert result.stdout == f"{folder / 'venv'}\nread-only\n", result.stderr
        assert not (folder / "venv" / "pwned").exists()
    finally:
        shutil.rmtree(folder)


def test_capabilities_describe_every_layer(caps: SandboxCapabilities) -> None:
    text = caps.describe()
    for word in ("user:", "network:", "processes:", "filesystem:", "limits:"):
        assert word in text
    assert caps.limits["memory_mb"] == 2048 and caps.limits["max_processes"] == 64
    if sys.platform.startswith("linux") and os.geteuid() == 0:
        assert caps.dropped_privileges and caps.user_id == 65534
