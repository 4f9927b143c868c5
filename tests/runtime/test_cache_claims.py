"""Claims in the sample cache (``frontier_qa/runtime/_claims.py``): who fetches which sample.

A claim is a record lock held by the claiming process plus an entry in a process-wide table.
The tests use two cache objects in one process (two tasks or targets on one file) and a real
second process holding claims, killed with SIGKILL to check that its claims are free at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from frontier_qa.runtime import SampleCache
from frontier_qa.target import Trajectory
from tests.factories import REPO

HOLDER = """
import sys
from frontier_qa.runtime import SampleCache
from frontier_qa.target import Trajectory

cache = SampleCache(sys.argv[1], flush_interval_s=3600)
for line in sys.stdin:
    verb, key = line.split()
    if verb == "acquire":
        hits, mine, theirs = cache.acquire([key])
        print(sorted(hits), mine, theirs, flush=True)
    elif verb == "put":
        cache.put(key, "t", Trajectory(text="from the holder"))
        print("queued", flush=True)
    elif verb == "flush":
        print("committed", cache.flush(), flush=True)
"""


def _sample(text: str = "42") -> Trajectory:
    return Trajectory(text=text)


def test_a_key_claimed_by_one_cache_is_theirs_for_another_until_committed(tmp_path: Path) -> None:
    a, b = SampleCache(tmp_path, flush_interval_s=3600), SampleCache(tmp_path, flush_interval_s=3600)
    assert a.acquire(["k1", "k2"]) == ({}, ["k1", "k2"], [])
    assert a.acquire(["k1"]) == ({}, [], ["k1"])  # a second task of the same cache waits too
    assert b.acquire(["k1", "k2", "k3"]) == ({}, ["k3"], ["k1", "k2"])
    assert b.pending(["k1", "k2", "k3"]) == {"k1", "k2", "k3"}  # k3 is b's own, still being fetched
    a.put("k1", "t", _sample())
    a.release(["k1", "k2"])  # the call is over: k2 failed and is free, k1 is queued and keeps its claim
    assert a.pending(["k1", "k2"]) == {"k1"}
    assert a.flush() == 1 and a.pending(["k1"]) == set()  # committed, then let go
    hits, mine, theirs = b.acquire(["k1", "k2"])
    assert hits["k1"].text == "42" and mine == ["k2"] and theirs == []
    assert a.pending(["k1"]) == set()  # a key read is not left claimed
    b.close()  # drops b's claims (k2, k3)
    assert a.acquire(["k2", "k3"]) == ({}, ["k2", "k3"], [])
    a.close()


def test_after_mostly_hits_the_keys_are_read_first_and_only_the_misses_claimed(tmp_path: Path) -> None:
    a, b = SampleCache(tmp_path), SampleCache(tmp_path)
    for key in ("a", "b", "c"):
        a.put(key, "t", _sample(key))
    assert a.flush() == 3
    assert sorted(b.acquire(["a", "b", "c"])[0]) == ["a", "b", "c"]  # a re-run: b now reads first
    assert a.acquire(["d"])[1] == ["d"]
    hits, mine, theirs = b.acquire(["a", "d", "e"])
    assert sorted(hits) == ["a"] and mine == ["e"] and theirs == ["d"]
    assert a.pending(["a", "e"]) == {"e"}
    a.put("d", "t", _sample("d"))
    hits, mine, theirs = b.acquire(["d", "f"])  # the miss branch again: claim, then read
    assert hits["d"].text == "d" and mine == ["f"] and theirs == []
    a.close()
    b.close()


def test_a_queued_sample_of_a_sibling_is_read_not_claimed(tmp_path: Path) -> None:
    a, b = SampleCache(tmp_path, flush_interval_s=3600), SampleCache(tmp_path, flush_interval_s=3600)
    assert a.acquire(["k"])[1] == ["k"]
    a.put("k", "t", _sample("queued"))
    hits, mine, theirs = b.acquire(["k"])  # the read commits the sibling's queue
    assert hits["k"].text == "queued" and mine == [] and theirs == []
    a.close()
    b.close()


def test_another_process_claims_hold_until_it_commits_or_dies(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
    assert holder.stdin is not None and holder.stdout is not None

    def ask(line: str) -> str:
        holder.stdin.write(line + "\n")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        return holder.stdout.readline().strip()  # type: ignore[union-attr]

    here = SampleCache(tmp_path)
    try:
        assert ask("acquire a") == "[] ['a'] []"
        assert ask("acquire b") == "[] ['b'] []"
        assert here.acquire(["a", "b", "c"]) == ({}, ["c"], ["a", "b"])
        assert here.pending(["a", "b"]) == {"a", "b"}
        assert ask("acquire c") == "[] [] ['c']"  # the other way round too
        assert ask("put a") == "queued"
        assert here.pending(["a"]) == {"a"}  # queued there, not on disk: still claimed
        assert ask("flush a") == "committed 1"
        assert here.pending(["a"]) == set()
        hits, mine, theirs = here.acquire(["a"])
        assert hits["a"].text == "from the holder" and mine == theirs == []
        os.killpg(holder.pid, signal.SIGKILL)  # no atexit, no finally: only the kernel lets go
        holder.wait()
        assert here.pending(["b"]) == set()
        assert here.acquire(["b"]) == ({}, ["b"], [])
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait()
        here.close()


def test_closed_caches_leave_no_lock_file_open(tmp_path: Path) -> None:
    fds = Path("/proc/self/fd")
    before = len(list(fds.iterdir()))
    for i in range(20):
        cache = SampleCache(tmp_path / f"c{i}")
        assert cache.acquire(["k"])[1] == ["k"]
        cache.close()
    assert len(list(fds.iterdir())) <= before + 1
    again = SampleCache(tmp_path / "c0")  # a reopened cache claims again
    assert again.acquire(["k"]) == ({}, ["k"], [])
    again.close()


def test_a_forked_child_finds_its_parents_claims_held_by_another_process(tmp_path: Path) -> None:
    cache = SampleCache(tmp_path)
    assert cache.acquire(["a"])[1] == ["a"]
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a new process, holding none of the parent's locks
        try:
            hits, mine, theirs = cache.acquire(["a", "b"])
            os.write(from_child, f"{mine} {theirs}".encode())
            os.read(to_child, 1)  # the parent has let "a" go
            os.write(from_child, f" {sorted(cache.pending(['a']))}".encode())
        finally:
            os._exit(0)
    answer = os.read(to_parent, 200).decode()
    cache.release(["a"])
    os.write(from_parent, b"x")
    answer += os.read(to_parent, 200).decode()
    os.waitpid(pid, 0)
    for fd in (to_child, from_parent, to_parent, from_child):
        os.close(fd)
    assert answer == "['b'] ['a'] []"  # "a" was the parent's while it held it, then free
    cache.close()
