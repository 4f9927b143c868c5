"""A sandbox for model-written Python code (Agent0 §3.3: "the code is executed in a sandbox").

Each run gets a fresh temporary directory (deleted afterwards), a Python child process with
an environment built from scratch (no variable of the caller, so no API key, ever reaches
it), resource limits, a wall-clock timeout that kills the whole process group, and output
captured up to a cap. Where the platform allows it the child is also contained by Linux
namespaces; :meth:`Sandbox.capabilities` says which layers are active:

============================  ==================================================================
layer                          how
============================  ==================================================================
no secrets                     env = PATH, LANG, HOME, TMPDIR, PYTHONHASHSEED=0, ... only
CPU / memory / files / fds     ``setrlimit``: RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE
processes                      RLIMIT_NPROC + a PID namespace (all of its processes die with it)
user                           as root: the code runs as an unprivileged uid (65534, ``nobody``),
                               because RLIMIT_NPROC and file permissions do not bind root, in a
                               user namespace of its own per run (so RLIMIT_NPROC counts only that
                               run's processes: a fork bomb cannot starve the runs beside it);
                               as a normal user: a user namespace mapping the user to itself;
                               always ``PR_SET_NO_NEW_PRIVS`` (set-uid programs gain nothing)
network                        a network namespace with no interfaces (``unshare(CLONE_NEWNET)``);
                               fallback: ``socket`` blocked inside Python (best effort only)
filesystem                     a mount namespace: "/" read-only, the run's directory at /tmp/run on a private /tmp,
                               fresh tmpfs on /var/tmp, /dev/shm, /run/lock, a private /proc;
                               the caller's home directory and the caches outside it
                               (FRONTIER_QA_CACHE, HF_HOME, HF_HUB_CACHE, XDG_CACHE_HOME,
                               TORCH_HOME) an empty read-only tmpfs each, with only the
                               interpreter's own folders (venv, prefix) bound back read-only
============================  ==================================================================

A small launcher (the stdlib-only function
:func:`frontier_qa.runtime._sandbox_launcher._launch`, run with ``python -I -S``) sets
the namespaces and limits up and ``exec``s the child; no ``preexec_fn`` is used, so runs
are safe from threaded and asyncio code alike. The child runs ``python -s -B main.py``:
that is isolated mode minus ``-E``, because ``-E``/``-I`` would ignore the
``PYTHONHASHSEED=0`` that keeps printed set/dict order, and so tool outputs and the
per-sample cache, reproducible; the environment is ours entirely, so ``-E`` adds nothing.

:class:`~frontier_qa.errors.SandboxError` is raised only when the sandbox itself cannot
start; the code failing, timing out or being killed is reported in :class:`SandboxResult`.

Long by design: one job, the :class:`Sandbox` class (probe what containment this host allows,
plan the mounts, spawn the launcher, collect output under the limits); its steps share the
instance's configuration and the probe cache, and split apart they would only pass it around.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import glob
import inspect
import json
import logging
import os
import shutil
import signal
import stat
import sys
import tempfile
import textwrap
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from frontier_qa.errors import SandboxError
from frontier_qa.runtime import _cgroups as cgroups
from frontier_qa.runtime import _sandbox_launcher
from frontier_qa.runtime._aio import run_blocking
from frontier_qa.runtime._processes import pid_alive

log = logging.getLogger(__name__)

NOBODY = 65534
_REFUSED = 125  # the launcher's exit status when a containment step failed


@dataclass(frozen=True)
class SandboxResult:
    """What one sandboxed run did.

    Attributes:
        stdout: captured standard output (UTF-8, undecodable bytes replaced), at most the cap.
        stderr: captured standard error, at most the cap.
        exit_code: the child's exit status; negative ``-N`` when killed by signal ``N``;
            ``None`` if it never reported one.
        timed_out: whether the wall-clock timeout fired.
        killed_reason: why the sandbox stopped or limited the code: ``"timeout"``,
            ``"output_limit"``, ``"cpu_limit"``, ``"memory_limit"``, ``"file_size_limit"``,
            ``"process_limit"``, ``"signal:N"``; ``None`` for an ordinary exit.
        truncated: whether output beyond the cap was cut off.
        duration_s: wall-clock seconds from start to exit.
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    killed_reason: str | None
    truncated: bool
    duration_s: float

    @property
    def ok(self) -> bool:
        """Whether the code ran to completion and exited with status 0."""
        return self.exit_code == 0 and not self.timed_out and self.killed_reason is None


@dataclass(frozen=True)
class SandboxCapabilities:
    """Which containment layers are active on this machine (found by a probe run).

    Attributes:
        user_id: the uid the code runs as (outside any user namespace).
        dropped_privileges: whether the caller is root and the code runs as ``user_id`` instead.
        user_namespace: whether the code runs in its own user namespace.
        network: ``"namespace"`` (no interfaces at all), ``"python-socket-block"`` (best
            effort: ``socket`` raises inside Python) or ``"allowed"``.
        pid_namespace: whether every process the code starts dies with it.
        readonly_root: whether "/" is read-only for the code.
        private_tmp: whether /tmp, /var/tmp, /dev/shm, /run/lock are private to the run.
        private_proc: whether /proc shows only the run's own processes.
        limits: the resource limits applied, e.g. ``{"cpu_s": 10, "memory_mb": 2048}``.
        memory_total: how the run's processes are capped *together*: ``"cgroup v1"`` or
            ``"cgroup v2"`` (``max_total_memory_mb``), or ``"per process"`` (``memory_mb``
            each, times ``max_processes``).
        private_home: whether the caller's home directory and the model caches outside it
            (``FRONTIER_QA_CACHE``, ``HF_HOME``, ``XDG_CACHE_HOME``...) are empty for the code,
            but for the interpreter's own folders in them (bound back read-only).
    """

    user_id: int
    dropped_privileges: bool
    user_namespace: bool
    network: str
    pid_namespace: bool
    readonly_root: bool
    private_tmp: bool
    private_proc: bool
    limits: Mapping[str, int]
    memory_total: str = "per process"
    private_home: bool = False

    def describe(self) -> str:
        """One line per layer, for ``frontier-qa doctor`` style reports."""
        who = f"uid {self.user_id}" + (" (dropped from root)" if self.dropped_privileges else "")
        fs = "read-only root" if self.readonly_root else "writable where permissions allow"
        return "\n".join(
            [
                f"user: {who}{', user namespace' if self.user_namespace else ''}",
                f"network: {self.network}",
                f"processes: {'PID namespace + ' if self.pid_namespace else ''}RLIMIT_NPROC",
                f"filesystem: {fs}; private tmp: {self.private_tmp}; private /proc: {self.private_proc}; "
                f"home and caches hidden: {self.private_home}",
                f"memory of the run's processes together: {self.memory_total}",
                "limits: " + ", ".join(f"{k}={v}" for k, v in sorted(self.limits.items())),
            ]
        )


# A probe drops a feature that fails, and with it the features that need it.
_NEEDS = {"home": "tmp", "tmp": "mountns", "readonly_root": "mountns", "proc": "pidns"}
_COVERED = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# Cache folders of frontier-qa and the model libraries, hidden like the home directory when they
# lie outside it (their defaults, ~/.cache/..., are inside).
_CACHE_ENVS = ("FRONTIER_QA_CACHE", "HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "TORCH_HOME")
# Never covered, whatever a home or cache variable says (system accounts have homes like /bin or
# /dev): the code would lose the system's own files.
_SYSTEM = ("/usr", "/etc", "/dev", "/proc", "/sys", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
# where the run's directory appears to the code when /tmp is private (replaced by private mounts, "tmp")
RUN_DIR_INSIDE = "/tmp/run"


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


_SOCKET_BLOCK = """\
import runpy, socket, sys, _socket
class _NoNetwork(socket.socket):
    def __init__(self, *args, **kwargs):
        raise PermissionError(1, "network access is disabled in the frontier-qa sandbox")
socket.socket = _socket.socket = socket.SocketType = _NoNetwork
def _refuse(*args, **kwargs):
    raise PermissionError(1, "network access is disabled in the frontier-qa sandbox")
socket.create_connection = socket.getaddrinfo = socket.socketpair = socket.fromfd = _refuse
del _NoNetwork, _refuse
sys.argv = ["main.py"]
runpy.run_path("main.py", run_name="__main__")
"""

_LIMIT_MARKERS = (  # stderr text -> which limit the code ran into (first match wins)
    ("MemoryError", "memory_limit"),
    ("Cannot allocate memory", "memory_limit"),
    ("File too large", "file_size_limit"),
    ("BlockingIOError", "process_limit"),
    ("Resource temporarily unavailable", "process_limit"),
)
_PROBES: dict[tuple[Any, ...], tuple[frozenset[str], SandboxCapabilities]] = {}
_PROBE_LOCK = threading.Lock()


_swept = False


def _sweep_stale_workdirs() -> None:
    """Once per process: remove ``fqa-sandbox-<pid>-*`` folders whose process is gone (a caller
    killed with -9 never ran its cleanup), and unnamed old-style ones older than a day.
    """
    global _swept
    if _swept:
        return
    _swept = True
    cgroups.sweep()
    root = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(root) if n.startswith("fqa-sandbox-")]
    except OSError:
        return
    for name in names:
        path = os.path.join(root, name)
        pid = name.split("-")[2]
        if pid.isdigit():
            if pid_alive(int(pid)):
                continue  # its process still runs
        else:
            with contextlib.suppress(OSError):
                if time.time() - os.stat(path).st_mtime < 86400:
                    continue
        shutil.rmtree(path, ignore_errors=True)


class Sandbox:
    """Runs untrusted Python code with limits; see the module docstring for the layers.

    Args:
        timeout_s: wall-clock seconds before the whole process group is killed.
        cpu_s: CPU seconds per process (RLIMIT_CPU); defaults to ``timeout_s``.
        memory_mb: address-space limit per process in MiB (RLIMIT_AS).
        max_total_memory_mb: memory of all the run's processes together, in MiB (a memory
            cgroup per run, where this machine allows one; default ``memory_mb``).
        max_processes: processes/threads the sandbox user may have (RLIMIT_NPROC).
        max_file_mb: largest file the code may write, in MiB (RLIMIT_FSIZE); also the size
            of each private tmpfs (/tmp, /var/tmp, /dev/shm).
        max_disk_mb: everything the code may write into its run directory, in MiB (the size
            of the tmpfs it runs in, with a mount namespace; without one only RLIMIT_FSIZE
            per file applies).
        max_open_files: RLIMIT_NOFILE.
        max_output_bytes: bytes kept per stream; the run is stopped once one overflows.
        max_concurrency: runs at once per event loop (:meth:`arun`).
        python: the interpreter to run the code with (default: this one, so numpy/sympy
            installed here are importable).
        user: the uid to run as when started as root (default 65534, ``nobody``); ``None``
            keeps the caller's uid (as root that means no privilege drop: only do this in a
            throwaway container).
        network: ``"deny"`` (default) or ``"allow"``.
        env: extra environment variables for the code (never copied from ``os.environ``).
    """

    def __init__(
        self,
        *,
        timeout_s: float = 10.0,
        cpu_s: int | None = None,
        memory_mb: int = 2048,
        max_total_memory_mb: int | None = None,
        max_processes: int = 64,
        max_file_mb: int = 16,
        max_disk_mb: int = 64,
        max_open_files: int = 256,
        max_output_bytes: int = 256 * 1024,
        max_concurrency: int = 4,
        python: str | None = None,
        user: int | None = NOBODY,
        network: str = "deny",
        env: Mapping[str, str] | None = None,
    ) -> None:
        if network not in ("deny", "allow"):
            raise SandboxError(f"network={network!r} is not a sandbox network mode", hint="use 'deny' or 'allow'")
        if timeout_s <= 0 or memory_mb <= 0 or max_processes <= 0 or max_output_bytes <= 0:
            raise SandboxError("sandbox limits must be positive",
                               hint="check timeout_s, memory_mb, max_processes, max_output_bytes")
        self.timeout_s = float(timeout_s)
        self.cpu_s = int(cpu_s if cpu_s is not None else max(1, round(timeout_s + 0.5)))
        self.memory_mb = int(memory_mb)
        self.max_total_memory_mb = int(max_total_memory_mb if max_total_memory_mb is not None else memory_mb)
        self.max_processes = int(max_processes)
        self.max_file_mb = int(max_file_mb)
        self.max_disk_mb = int(max_disk_mb)
        self.max_open_files = int(max_open_files)
        self.max_output_bytes = int(max_output_bytes)
        self.max_concurrency = int(max_concurrency)
        self.python = python or sys.executable
        self.user = user
        self.network = network
        self.extra_env = dict(env or {})
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return (f"Sandbox(timeout_s={self.timeout_s}, memory_mb={self.memory_mb}, "
                f"max_processes={self.max_processes}, network={self.network!r})")

    # -- public API -----------------------------------------------------------------------

    def run(self, code: str, *, timeout_s: float | None = None) -> SandboxResult:
        """Run ``code`` and wait for it (usable inside and outside an event loop)."""
        return run_blocking(self.arun(code, timeout_s=timeout_s))

    async def arun(self, code: str, *, timeout_s: float | None = None) -> SandboxResult:
        """Run ``code`` without blocking the event loop; at most ``max_concurrency`` at once."""
        features, _ = await self._probe()
        async with self._semaphore():
            return await self._execute(code, features, timeout_s or self.timeout_s)

    def capabilities(self) -> SandboxCapabilities:
        """Which containment layers are active here (probes once per configuration)."""
        return run_blocking(self._probe())[1]

    # -- probing ----------------------------------------------------------------------------

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop not in self._semaphores:
            self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        return self._semaphores[loop]

    def _root(self) -> bool:
        return os.geteuid() == 0

    def _wanted(self) -> set[str]:
        want = {"mountns", "pidns", "home", "tmp", "readonly_root", "proc"}
        if self.network == "deny":
            want.add("netns")
        if self._root():
            if self.user is not None:
                want |= {"drop_uid", "userns"}  # userns: a process count of its own per run
        else:
            want.add("userns")  # unprivileged namespaces need a user namespace first
        if not self._private_folders():
            want.discard("home")
        return want

    async def _probe(self) -> tuple[frozenset[str], SandboxCapabilities]:
        key = (self.python, self.user, self.network, os.geteuid(), self._limits_key(), frozenset(self._wanted()))
        if key in _PROBES:
            return _PROBES[key]
        want = self._wanted()
        errors: list[str] = []
        while True:
            result, failed = await self._spawn('print("ok")', frozenset(want), 10.0, probe=True)
            if failed is None and result.stdout == "ok\n":
                break
            if failed is None:
                raise SandboxError(f"the sandbox probe ran but printed {result.stdout!r} "
                                   f"(stderr: {result.stderr[-500:]!r})")
            feature, message = failed
            errors.append(message)
            if feature not in want or feature in ("drop_uid", "exec", "rlimits", "start", "unshare"):
                raise SandboxError(
                    f"the code sandbox cannot start: {message}",
                    hint="as root the code runs as uid 65534: pass python= an interpreter that uid can "
                    "execute, or user=None to keep root (only in a throwaway container); "
                    f"earlier attempts: {errors[:-1]}",
                )
            log.info("the code sandbox falls back: %s is not available here (%s)", feature, message)
            want.discard(feature)
            if feature == "userns" and not self._root():  # unprivileged namespaces need it
                want -= {"mountns", "pidns", "netns", "home", "tmp", "readonly_root", "proc"}
            while lost := {f for f, need in _NEEDS.items() if f in want and need not in want}:
                want -= lost
        caps = self._describe(frozenset(want))
        with _PROBE_LOCK:
            _PROBES[key] = (frozenset(want), caps)
        return _PROBES[key]

    def _limits_key(self) -> tuple[int, ...]:
        return (self.cpu_s, self.memory_mb, self.max_processes, self.max_file_mb, self.max_open_files)

    def _describe(self, features: frozenset[str]) -> SandboxCapabilities:
        dropped = "drop_uid" in features
        network = "allowed"
        if self.network == "deny":
            network = "namespace" if "netns" in features else "python-socket-block"
        return SandboxCapabilities(
            user_id=self.user if dropped and self.user is not None else os.geteuid(),
            dropped_privileges=dropped,
            user_namespace="userns" in features,
            network=network,
            pid_namespace="pidns" in features,
            readonly_root="readonly_root" in features,
            private_tmp="tmp" in features,
            private_proc="proc" in features,
            private_home="home" in features,
            limits={"cpu_s": self.cpu_s, "memory_mb": self.memory_mb, "max_processes": self.max_processes,
                    "max_file_mb": self.max_file_mb, "max_open_files": self.max_open_files,
                    "max_total_memory_mb": self.max_total_memory_mb, "max_disk_mb": self.max_disk_mb},
            memory_total=f"cgroup {root[1]}" if (root := cgroups.memory_root()) is not None else "per process",
        )

    def _interpreter_dirs(self) -> set[str]:
        """Directories the interpreter needs: its own, its venv, and (for this one) its prefixes."""
        python = os.path.abspath(self.python)
        real_bin = os.path.dirname(os.path.realpath(python))
        dirs = {os.path.dirname(python), real_bin}
        if os.path.basename(real_bin) == "bin":  # its prefix: the standard library lives there
            dirs.add(os.path.dirname(real_bin))
        venv = os.path.dirname(os.path.dirname(python))
        if os.path.exists(os.path.join(venv, "pyvenv.cfg")):
            dirs.add(venv)
            # a venv that reuses another environment's packages names them in a .pth file
            for pth in glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "*.pth")):
                with contextlib.suppress(OSError, UnicodeDecodeError), open(pth, encoding="utf-8") as fh:
                    dirs |= {line.strip() for line in fh if line.strip().endswith(("/site-packages", "/dist-packages"))
                             and os.path.isabs(line.strip()) and os.path.isdir(line.strip())}
        if os.path.realpath(python) == os.path.realpath(sys.executable):
            dirs |= {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
        return dirs | {os.path.realpath(d) for d in dirs}

    def _kept(self, covers: list[str]) -> list[str]:
        """Interpreter directories under the covered folders (a CI venv in ``mktemp -d``, a venv
        or pyenv in the home directory): the launcher binds them back, read-only.
        """
        dirs = {os.path.realpath(d) for d in self._interpreter_dirs()}
        under = sorted(d for d in dirs if any(_within(d, c) for c in covers))
        return [d for d in under if not any(d != o and _within(d, o) for o in under)]

    def _private_folders(self) -> list[str]:
        """Folders the code sees empty: the caller's home directory ($HOME and its passwd entry),
        the cache folders of :data:`_CACHE_ENVS` that exist outside it, and (as root, for the
        dropped uid) folders it cannot enter on the way to the interpreter. Folders under
        /tmp & co. are private already; system folders are never covered.
        """
        found = {os.path.expanduser("~")} | {os.environ.get(name, "") for name in _CACHE_ENVS}
        with contextlib.suppress(KeyError, ImportError):
            import pwd

            found.add(pwd.getpwuid(os.getuid()).pw_dir)
        if self._root() and self.user is not None:
            found |= self._closed_folders()
        real = {os.path.realpath(os.path.expanduser(f)) for f in found if f and os.path.isabs(os.path.expanduser(f))}
        real = {
            f for f in real
            if f not in ("/", "/var", "/run") and os.path.isdir(f)
            and not any(_within(f, c) for c in (*_COVERED, *_SYSTEM))
        }
        return sorted(f for f in real if not any(f != o and _within(f, o) for o in real))

    def _closed_folders(self) -> set[str]:
        """The first folder the dropped uid cannot enter (no o+x) on the way to each interpreter
        directory, e.g. /root (mode 700) holding a pyenv.
        """
        closed: set[str] = set()
        for path in self._interpreter_dirs():
            parts = path.strip("/").split("/")
            for depth in range(len(parts) - 1):
                here = "/" + "/".join(parts[: depth + 1])
                try:
                    mode = os.stat(here).st_mode
                except OSError:
                    break
                if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
                    closed.add(here)
                    break
        return closed

    # -- one run ----------------------------------------------------------------------------

    async def _execute(self, code: str, features: frozenset[str], timeout_s: float) -> SandboxResult:
        result, failed = await self._spawn(code, features, timeout_s)
        if failed is not None and failed[0] == "exec" and "[Errno 11]" in failed[1]:
            # the sandbox uid is at RLIMIT_NPROC (another run's fork bomb, without per-run
            # user namespaces): this run's code could not start, the sandbox itself is fine
            return dataclasses.replace(result, stderr=failed[1], exit_code=None, killed_reason="process_limit")
        if failed is not None:
            raise SandboxError(f"the code sandbox failed to start: {failed[1]}",
                               hint="call Sandbox.capabilities() to see which containment works here")
        return result

    def _env(self, home: str) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "HOME": home,
            "TMPDIR": home,
            "PYTHONHASHSEED": "0",  # reproducible set/dict order in printed output
            "PYTHONIOENCODING": "utf-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "OMP_NUM_THREADS": "1",  # each BLAS thread counts against RLIMIT_NPROC and RLIMIT_AS
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
        }
        env.update(self.extra_env)
        return env

    def _config(self, workdir: str, features: frozenset[str], report_fd: int) -> dict[str, Any]:
        inside = RUN_DIR_INSIDE if "tmp" in features else workdir
        if self.network == "deny" and "netns" not in features:
            argv = [self.python, "-s", "-B", "-c", _SOCKET_BLOCK]
        else:
            argv = [self.python, "-s", "-B", os.path.join(inside, "main.py")]
        fsize = self.max_file_mb * 1024 * 1024
        private = self._private_folders() if "home" in features else []
        return {
            "workdir": workdir,
            "inside": inside,
            "features": sorted(features),
            "report_fd": report_fd,
            "private": private,
            "keep": self._kept([*_COVERED, *private]) if "tmp" in features else [],
            "tmpfs_bytes": fsize,
            "run_bytes": self.max_disk_mb * 1024 * 1024,
            "uid": self.user if self.user is not None else os.getuid(),
            "gid": self.user if self.user is not None else os.getgid(),
            "argv": argv,
            "env": self._env(inside),
            "rlimits": {
                "RLIMIT_CPU": (self.cpu_s, self.cpu_s + 1),  # SIGXCPU, then SIGKILL a second later
                "RLIMIT_AS": (self.memory_mb << 20, self.memory_mb << 20),
                "RLIMIT_NPROC": (self.max_processes, self.max_processes),
                "RLIMIT_FSIZE": (fsize, fsize),
                "RLIMIT_NOFILE": (self.max_open_files, self.max_open_files),
                "RLIMIT_CORE": (0, 0),
            },
        }

    async def _spawn(
        self, code: str, features: frozenset[str], timeout_s: float, *, probe: bool = False
    ) -> tuple[SandboxResult, tuple[str, str] | None]:
        _sweep_stale_workdirs()
        workdir = tempfile.mkdtemp(prefix=f"fqa-sandbox-{os.getpid()}-")
        read_fd, write_fd = os.pipe()
        group = cgroups.create(self.max_total_memory_mb << 20)
        try:
            with open(os.path.join(workdir, "main.py"), "w", encoding="utf-8") as fh:
                fh.write(code)
            if "drop_uid" in features and self.user is not None:
                for path in (workdir, os.path.join(workdir, "main.py")):
                    os.chown(path, self.user, self.user)
            cfg = self._config(workdir, features, write_fd)
            cfg["probe"] = probe
            cfg["cgroup_procs"] = group.procs if group is not None else None
            launcher = _launcher_source()
            start = time.monotonic()
            try:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-I", "-S", "-c", launcher, json.dumps(cfg),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                    cwd=workdir,
                    pass_fds=(write_fd,),
                    start_new_session=True,  # one process group to kill on timeout
                )
            except OSError as exc:
                raise SandboxError(f"cannot start the sandbox launcher {sys.executable}: {exc}") from exc
            finally:
                os.close(write_fd)
            result = await self._collect(proc, start, timeout_s)
            report = _read_report(read_fd)
            if "exit" in report and result.killed_reason not in ("timeout", "output_limit"):
                # the PID namespace's init saw how the code ended (the launcher only saw init)
                exit_code = report["exit"]
                result = dataclasses.replace(result, exit_code=exit_code,
                                             killed_reason=_limit_reason(exit_code, result.stderr))
            if result.exit_code == _REFUSED and "error" in report:
                return result, (report.get("feature", "start"), report["error"])
            if "ok" not in report and not result.timed_out:
                return result, ("start", f"the launcher exited with {result.exit_code}: {result.stderr[-500:]}")
            return result, None
        finally:
            os.close(read_fd)
            if group is not None:
                group.remove()
            shutil.rmtree(workdir, ignore_errors=True)

    async def _collect(self, proc: asyncio.subprocess.Process, start: float, timeout_s: float) -> SandboxResult:
        cap = self.max_output_bytes
        out, err = bytearray(), bytearray()
        stopped: list[str] = []  # our own reason for killing it, if any

        def kill(reason: str) -> None:
            if not stopped:
                stopped.append(reason)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

        async def drain(stream: asyncio.StreamReader, buf: bytearray) -> None:
            while chunk := await stream.read(65536):
                room = cap - len(buf)
                buf += chunk[:room]
                if len(chunk) > room:  # stop reading instead of buffering a gigabyte
                    kill("output_limit")
                    return

        readers = asyncio.gather(drain(proc.stdout, out), drain(proc.stderr, err))  # type: ignore[arg-type]
        try:
            await asyncio.wait_for(asyncio.shield(readers), timeout_s)
            await asyncio.wait_for(proc.wait(), max(0.1, timeout_s - (time.monotonic() - start)))
        except asyncio.TimeoutError:
            kill("timeout")
        except asyncio.CancelledError:
            kill("cancelled")
            raise
        finally:
            if stopped:
                await proc.wait()
                try:  # what was written before the kill; a process that escaped the group may hold the pipe
                    await asyncio.wait_for(asyncio.shield(readers), 2.0)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    readers.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await readers  # cancelled above when a process that escaped the group held a pipe
        exit_code = proc.returncode
        stderr = err.decode("utf-8", "replace")
        reason = stopped[0] if stopped else _limit_reason(exit_code, stderr)
        return SandboxResult(
            stdout=out.decode("utf-8", "replace"),
            stderr=stderr,
            exit_code=exit_code,
            timed_out=reason == "timeout",
            killed_reason=reason,
            truncated="output_limit" in stopped,
            duration_s=time.monotonic() - start,
        )


def _limit_reason(exit_code: int | None, stderr: str) -> str | None:
    if exit_code == 0 or exit_code is None:
        return None
    if exit_code == -signal.SIGXCPU:
        return "cpu_limit"  # RLIMIT_CPU: SIGXCPU at the soft limit (SIGKILL at the hard one)
    if exit_code == -signal.SIGXFSZ:
        return "file_size_limit"
    tail = stderr[-2000:]
    for marker, reason in _LIMIT_MARKERS:
        if marker in tail:
            return reason
    return f"signal:{-exit_code}" if exit_code < 0 else None


@functools.lru_cache(maxsize=1)
def _launcher_source() -> str:
    # The launcher is a normal function (linted, readable) in its own module, shipped to `python -I -S -c`.
    body = textwrap.dedent(inspect.getsource(_sandbox_launcher._launch))
    return f"from __future__ import annotations\n{body}\nimport json, sys\n_launch(json.loads(sys.argv[1]))\n"


def _read_report(fd: int) -> dict[str, Any]:
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    report: dict[str, Any] = {}
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        try:
            report.update(json.loads(line))
        except ValueError:
            continue
    return report


__all__ = ["NOBODY", "Sandbox", "SandboxCapabilities", "SandboxResult"]
