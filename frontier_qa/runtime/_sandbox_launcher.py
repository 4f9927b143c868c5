"""The sandbox launcher: the code that sets containment up inside the child, then execs the user's code.

Not an API. :class:`frontier_qa.runtime.sandbox.Sandbox` ships the source of :func:`_launch`
(``inspect.getsource``) to ``python -I -S -c`` with the run's configuration as ``argv[1]``, so
the function must stay self-contained: standard library only, imported inside its body, and no
name from this module or any other (the launcher runs isolated, without site-packages).
"""

from __future__ import annotations

from typing import Any


def _launch(cfg: dict[str, Any]) -> None:  # pragma: no cover - runs in the launcher process
    """Set containment up and exec the child. Runs as ``python -I -S -c`` with stdlib only.

    Writes JSON lines to ``cfg["report_fd"]``: ``{"ok": true}`` just before ``exec``, or
    ``{"error": ..., "feature": ...}`` and exit 125 when a step fails (the probe then drops
    that feature and tries again); with a PID namespace its init adds ``{"exit": status}``.
    """
    import ctypes
    import json
    import os
    import resource
    import signal

    newns, newuser, newpid, newnet = 0x00020000, 0x10000000, 0x20000000, 0x40000000
    rdonly, nosuid, nodev, noexec, remount, bind, rec, private = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
    report, want = cfg["report_fd"], set(cfg["features"])
    os.set_inheritable(report, False)  # the user's code must never hold the report pipe
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    libc.unshare.argtypes = [ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

    def check(rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
        enc = [s.encode() if s is not None else None for s in (src, dst, fstype, data)]
        check(libc.mount(enc[0], enc[1], enc[2], flags, enc[3]), f"mount {dst}")

    def readonly(path: str) -> None:
        st = os.statvfs(path)  # a bind remount must repeat the locked flags (atime, nosuid...)
        keep = st.f_flag & (nosuid | nodev | noexec | 1024 | 2048)  # + noatime, nodiratime
        keep |= (1 << 21) if st.f_flag & 4096 else 0  # ST_RELATIME -> MS_RELATIME
        mount(None, path, None, remount | bind | rdonly | keep)

    def die_with_parent() -> None:  # PR_SET_PDEATHSIG: a crashed caller leaves nothing running
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)

    def mirror(status: int) -> None:  # end the way the child ended
        if os.WIFSIGNALED(status):
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
            os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)

    def map_ids_from_outside() -> None:
        """Root: a helper that stays outside writes the new user namespace's id maps (only a
        process with CAP_SETUID in the *parent* namespace may map ids other than its own).
        Root maps to itself so set-up can still reach root-owned files; the code then runs as
        cfg["uid"] with a process count (RLIMIT_NPROC) of its own namespace, so one run's
        fork bomb cannot starve the runs beside it.
        """
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        child = os.fork()
        if child == 0:
            die_with_parent()
            os.close(ready_r)
            os.close(go_w)
            check(libc.unshare(flags), "unshare")
            os.write(ready_w, b"1")
            if os.read(go_r, 1) != b"1":
                os._exit(125)  # the helper failed and reported why
            return
        os.close(ready_w)
        os.close(go_r)
        try:
            if os.read(ready_r, 1) != b"1":
                mirror(os.waitpid(child, 0)[1])
            for name, first in (("uid_map", cfg["uid"]), ("gid_map", cfg["gid"])):
                with open(f"/proc/{child}/{name}", "w") as fh:
                    fh.write(f"0 0 1\n{first} {first} 1\n")
            os.write(go_w, b"1")
        except OSError as exc:
            os.kill(child, signal.SIGKILL)
            raise OSError(exc.errno, f"cannot map ids of the user namespace: {exc}") from exc
        os.close(report)
        mirror(os.waitpid(child, 0)[1])

    feature = "start"
    try:
        if cfg.get("cgroup_procs"):  # first, as the caller's user: every process of the run inherits it
            try:
                with open(cfg["cgroup_procs"], "w") as fh:
                    fh.write(str(os.getpid()))
            except OSError:
                pass  # the run is capped per process only, as where no cgroup can be made
        die_with_parent()
        os.umask(0o022)  # directories made below must be enterable by the sandbox user
        os.chdir(cfg["workdir"])
        uid, gid = os.getuid(), os.getgid()
        user = newuser if "userns" in want else 0
        flags = 0
        namespaces = (("userns", newuser), ("mountns", newns), ("pidns", newpid), ("netns", newnet))
        for feature, flag in namespaces:
            if feature not in want:
                continue
            flags |= flag
            if cfg.get("probe"):  # try each alone in a throwaway child so the report names the culprit
                pid = os.fork()
                if pid == 0:
                    os._exit(0 if libc.unshare(flag | user) == 0 else 1)
                if os.waitpid(pid, 0)[1] != 0:
                    raise OSError(1, f"unshare({feature}) is not permitted here")
        feature = "unshare"
        if "userns" in want and uid == 0:
            feature = "userns"
            map_ids_from_outside()
        elif flags:
            check(libc.unshare(flags), "unshare")
        if "userns" in want and uid != 0:
            feature = "userns"
            maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
            for name, text in maps:  # map the user to itself: no privilege inside after exec
                with open(f"/proc/self/{name}", "w") as fh:
                    fh.write(text)
        if "mountns" in want:
            feature = "mountns"
            mount(None, "/", None, rec | private)  # nothing we mount propagates to the host
        if "tmp" in want:
            feature = "tmp"
            # Open what the covers below will hide first: the run's directory (itself under the
            # host's /tmp) and interpreter folders under a cover, e.g. a CI venv made by
            # `mktemp -d`, or a venv / pyenv under the home directory.
            run_fd = os.open(cfg["workdir"], os.O_PATH)
            main_fd = os.open("main.py", os.O_RDONLY, dir_fd=run_fd)
            main = b""
            while chunk := os.read(main_fd, 1 << 20):
                main += chunk
            os.close(main_fd)
            kept = {path: os.open(path, os.O_PATH) for path in cfg["keep"]}
            for path in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
                if os.path.isdir(path) and not os.path.islink(path):
                    mount("tmpfs", path, "tmpfs", nosuid | nodev, f"mode=1777,size={cfg['tmpfs_bytes']}")
            if "home" in want:
                # The caller's home directory, the model caches and (as root) folders the code's
                # uid cannot enter on the way to the interpreter: an empty tmpfs each, read-only
                # once the interpreter's folders below them are bound back.
                feature = "home"
                for path in cfg["private"]:
                    mount("tmpfs", path, "tmpfs", nosuid | nodev, "mode=0755,size=64k")
            feature = "tmp"
            # The run's directory sits beside, not above, the bound-back interpreter folders, so
            # their mount points never show up in (or get created in) the directory the code sees.
            # The run's directory is a tmpfs of its own: everything the code writes there (and
            # in /tmp) is capped in total, not per file, and vanishes with the namespace.
            os.makedirs(cfg["inside"], mode=0o755)
            mount("tmpfs", cfg["inside"], "tmpfs", nosuid | nodev, f"mode=1777,size={cfg['run_bytes']}")
            with open(os.path.join(cfg["inside"], "main.py"), "wb") as main_file:
                main_file.write(main)
            os.close(run_fd)
            for path, fd in kept.items():  # bound back, read-only
                os.makedirs(path, mode=0o755, exist_ok=True)
                mount(f"/proc/self/fd/{fd}", path, None, bind | rec)
                readonly(path)
                os.close(fd)
            if "home" in want:
                feature = "home"
                for path in cfg["private"]:
                    readonly(path)
            os.chdir(cfg["inside"])
        if "readonly_root" in want:
            feature = "readonly_root"
            readonly("/")
        if "pidns" in want:
            init = os.fork()
            if init:
                # Outside the PID namespace: its init (below) reports the code's exit status.
                os.close(report)
                mirror(os.waitpid(init, 0)[1])
            die_with_parent()  # fork clears it
        if "proc" in want:
            feature = "proc"
            mount("proc", "/proc", "proc", nosuid | nodev | noexec)
        if "pidns" in want:
            # We are pid 1 of the namespace. The code runs as pid 2 so that signals it gets
            # (SIGXCPU from RLIMIT_CPU, SIGTERM...) act normally: the kernel ignores default-
            # action signals sent to a namespace's init. When pid 2 ends, we end, and the
            # kernel kills everything left in the namespace (escaped fork bombs included).
            code_pid = os.fork()
            if code_pid:
                while True:
                    pid, status = os.waitpid(-1, 0)  # reap orphans until the code itself ends
                    if pid == code_pid:
                        line = json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n"
                        os.write(report, line.encode())
                        os._exit(0)
            die_with_parent()
        feature = "rlimits"
        for name, (soft, hard) in cfg["rlimits"].items():
            which = getattr(resource, name)
            current = resource.getrlimit(which)[1]
            if current != resource.RLIM_INFINITY:  # an unprivileged process cannot raise a hard limit
                hard = min(hard, current)
            resource.setrlimit(which, (min(soft, hard), hard))
        if "drop_uid" in want:
            feature = "drop_uid"
            os.setgroups([])
            os.setgid(cfg["gid"])
            os.setuid(cfg["uid"])
            die_with_parent()  # cleared by the credential change
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: set-uid programs cannot raise privileges
        feature = "exec"
        argv = cfg["argv"]
        if not os.access(argv[0], os.X_OK):
            raise OSError(13, f"{argv[0]} is not executable by uid {os.getuid()}")
        os.write(report, b'{"ok": true}\n')
        os.execve(argv[0], argv, cfg["env"])
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the report pipe
        line = json.dumps({"error": f"{type(exc).__name__}: {exc}", "feature": feature}) + "\n"
        os.write(report, line.encode())
        os._exit(125)
