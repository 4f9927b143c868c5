"""The sandbox limits a run, not only a process: disk in total, stale folders swept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from frontier_qa.runtime.sandbox import Sandbox
from tests.factories import REPO, first_closed_folder

pytestmark = pytest.mark.faults

FILL_DISK = """
written = 0
for i in range(40):
    try:
        with open(f"f{i}.bin", "wb") as fh:
            fh.write(b"x" * (15 << 20))
        written += 15 << 20
    except OSError:
        break
print(written >> 20)
"""


def test_the_run_folder_is_capped_in_total_not_per_file() -> None:
    sandbox = Sandbox(timeout_s=30, max_file_mb=16, max_disk_mb=64)
    if not sandbox.capabilities().private_home:
        pytest.skip("no mount namespace here: only RLIMIT_FSIZE per file applies (docs/explanation/reliability.md)")
    result = sandbox.run(FILL_DISK)
    assert result.ok, result.stderr
    assert int(result.stdout) <= 64  # before: 600 MB in 40 files of 15 MB, each under the per-file cap
    leftovers = [p for p in Path(tempfile.gettempdir()).glob(f"fqa-sandbox-{os.getpid()}-*")]
    assert leftovers == []


def test_folders_of_a_killed_caller_are_swept_at_the_next_start(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = Path(tempfile.mkdtemp(prefix=f"fqa-sandbox-{dead.pid}-"))
    (stale / "main.py").write_text("print('left behind by kill -9')")
    done = subprocess.run([sys.executable, "-c", "from frontier_qa.runtime.sandbox import Sandbox; "
                           "print(Sandbox(timeout_s=10).run('print(1)').stdout.strip())"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "1", done.stderr
    assert not stale.exists()


SIX_CHILDREN = r'''
import subprocess, sys
kid = "b = bytearray(400 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('held', flush=True)\nimport time; time.sleep(2)"
procs = [subprocess.Popen([sys.executable, "-c", kid], stdout=subprocess.PIPE, text=True) for _ in range(6)]
print(sum(p.communicate()[0].strip() == "held" for p in procs))
'''


def test_the_processes_of_a_run_share_one_memory_cap() -> None:
    sandbox = Sandbox(timeout_s=60, memory_mb=512)  # max_total_memory_mb defaults to memory_mb
    caps = sandbox.capabilities()
    if caps.memory_total == "per process":
        pytest.skip("no memory cgroup here: memory_mb caps each process only (docs/explanation/reliability.md)")
    result = sandbox.run(SIX_CHILDREN)
    assert result.exit_code == 0, result.stderr
    held = int(result.stdout)
    assert held * 400 <= 512  # before: 6 children held 400 MB each (2.4 GB) under memory_mb=512


READ_SECRETS = """
import sys
for path in {paths!r}:
    try:
        print(open(path).read())
    except OSError as exc:
        print(type(exc).__name__)
print(open({venv_file!r}).read(), sys.prefix)
"""


def _private_folder(name: str, owner: int | None = None, mode: int = 0o755) -> Path:
    """A folder outside /tmp & co. (which are private to each run anyway), like a real home."""
    folder = REPO / ".cache" / f"fqa-{name}-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    if owner is not None:
        os.chown(folder, owner, owner)
    folder.chmod(mode)
    return folder


def test_the_home_directory_and_caches_are_hidden_but_the_interpreter_in_them_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A venv in the home directory still runs; a token beside it and the model caches outside
    it (FRONTIER_QA_CACHE, HF_HOME) are not there for the code. The files are world-readable, as
    in a typical home of mode 755, so file permissions alone would not hide them.
    """
    home, cache, hf = _private_folder("home"), _private_folder("cache"), _private_folder("hf")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home / "venv")], check=True, timeout=120)
        (home / "venv" / "readable.txt").write_text("venv file")
        secrets = [home / ".config" / "token", cache / "models" / "key", hf / "token"]
        for path in secrets:
            path.parent.mkdir(exist_ok=True)
            path.write_text("SECRET")
            path.chmod(0o644)
        for name, folder in (("HOME", home), ("FRONTIER_QA_CACHE", cache), ("HF_HOME", hf)):
            monkeypatch.setenv(name, str(folder))
        sandbox = Sandbox(python=str(home / "venv" / "bin" / "python"), timeout_s=30)
        if not sandbox.capabilities().private_home:
            pytest.skip("no mount namespace here: files under the home directory stay readable "
                        "(docs/explanation/reliability.md)")
        code = READ_SECRETS.format(paths=[str(p) for p in secrets], venv_file=str(home / "venv" / "readable.txt"))
        result = sandbox.run(code)
        assert result.exit_code == 0, result.stderr
        assert result.stdout.splitlines() == ["FileNotFoundError"] * 3 + [f"venv file {home / 'venv'}"]
    finally:
        for folder in (home, cache, hf):
            shutil.rmtree(folder)


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/python3").exists(), reason="needs root to become nobody")
def test_a_non_root_callers_own_private_files_are_hidden() -> None:
    """As a normal user (uid 65534 here) the code runs as that same user, so only the cover,
    not file permissions, keeps its home (mode 700) and cache folder from the code.
    """
    unreadable = first_closed_folder(REPO, 65534)
    if unreadable is not None:
        pytest.skip(f"uid 65534 cannot read the checkout: {unreadable} is closed to it")
    home, cache = _private_folder("home", 65534, 0o700), _private_folder("cache", 65534, 0o700)
    secrets = [home / "token", cache / "key"]
    for path in secrets:
        path.write_text("SECRET")
        os.chown(path, 65534, 65534)
        path.chmod(0o600)
    script = (
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from frontier_qa.runtime.sandbox import Sandbox\n"
        "sb = Sandbox(timeout_s=20)\n"
        "print(sb.capabilities().private_home)\n"
        f"result = sb.run({READ_SECRETS.format(paths=[str(p) for p in secrets], venv_file='/dev/null')!r})\n"
        "print(result.stdout + result.stderr, end='')\n"
    )
    try:
        done = subprocess.run(
            ["/usr/bin/python3", "-c", script], user=65534, group=65534, capture_output=True, text=True,
            timeout=120, cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": str(home), "FRONTIER_QA_CACHE": str(cache)},
        )
    finally:
        for folder in (home, cache):
            shutil.rmtree(folder)
    if "cannot start" in done.stderr or done.stdout.startswith("False"):
        pytest.skip(f"no mount namespace for unprivileged users here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True", "FileNotFoundError", "FileNotFoundError", " /usr"]
