"""A suite's guard set is stored and changes only by accept or an explicit re-pick (issue 26).

Real stores in ``tmp_path``, records built the way the probe engine builds them
(:func:`tests.factories.probed_record`), accepts made by the real accept path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from frontier_qa.probing._baseline_accept import accept
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._guards import (
    GUARDS_FILE,
    guards_for,
    pytest_suite_key,
    repick_guards,
    select_guards,
    stored_picks,
)
from frontier_qa.store._records import CaseClass, CaseRecord
from frontier_qa.store._store_error import StoreError
from tests.factories import REPO, probed_record, run

KEY = pytest_suite_key("tests/test_agent.py::test_agent")
RIGHT = ("4", "4", "4", "4")
WRONG = ("5", "5", "5", "5")


def passes(store: CaseStore, ids: list[str], *, run_id: str, at: int, topics: str = "abc") -> None:
    """Append a pass record for each id, topics taken in turn."""
    for i, cid in enumerate(ids):
        store.append(probed_record(cid, CaseClass.PASS, RIGHT, topic=topics[i % len(topics)], run_id=run_id, at=at))


def latest(store: CaseStore) -> list[CaseRecord]:
    return list(store.latest().values())


def findings(store: CaseStore) -> set[str]:
    return {r.id for r in latest(store) if r.case_class is not CaseClass.PASS}


@pytest.fixture
def store(tmp_path: Path) -> CaseStore:
    """A store of one run: 12 pass cases over topics a, b, c and two frontier cases."""
    s = CaseStore(tmp_path / "store")
    passes(s, [f"p{i}" for i in range(12)], run_id="run-1", at=0)
    for cid in ("f0", "f1"):
        s.append(probed_record(cid, CaseClass.FRONTIER, ("4", "5", "4", "5"), topic="a", run_id="run-1", at=0))
    return s


def test_successive_reads_give_the_stored_set_while_new_pass_cases_appear(store: CaseStore) -> None:
    first = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
    assert first.picked and len(first.ids) == 5 and first.pick is not None and first.pick.reason == "first"
    assert [r.topic for r in first.guards] == ["a", "b", "c", "a", "b"]  # picked as select_guards picks
    reads = [first.ids]
    for n, at in ((1, 100), (2, 200)):  # new pass cases (and a new topic) between the reads, no accept
        passes(store, [f"new{n}-{i}" for i in range(30)], run_id=f"run-{n + 1}", at=at, topics="abcd")
        fresh = {r.id for r in select_guards(latest(store), 5)}
        assert fresh != first.ids  # what re-picking on every read (the defect) would have given
        again = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
        assert not again.picked and again.pick == first.pick
        reads.append(again.ids)
    assert reads == [first.ids] * 3
    assert [p.reason for p in stored_picks(store, KEY)] == ["first"]


def test_a_guard_that_broke_stays_a_guard(store: CaseStore) -> None:
    first = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
    broken = first.guards[1].id
    store.append(probed_record(broken, CaseClass.FAILURE, WRONG, topic=first.guards[1].topic, run_id="run-2", at=100))
    # the plugin counts every case with a failure record among its findings: the guard is one too now
    again = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
    assert broken in findings(store) and again.ids == first.ids and not again.picked
    assert again.broken == (broken,)
    held = {r.id: r for r in again.guards}[broken]
    assert held.case_class is CaseClass.FAILURE and held.run_id == "run-2"  # its latest record, to replay
    assert len(stored_picks(store, KEY)) == 1


def test_accept_makes_the_next_read_pick_again_and_says_why(store: CaseStore) -> None:
    first = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
    assert first.pick is not None
    broken = first.guards[0]
    store.append(probed_record(broken.id, CaseClass.FAILURE, WRONG, topic=broken.topic, run_id="run-2", at=100))
    passes(store, [f"late-{i}" for i in range(6)], run_id="run-2", at=100)
    assert guards_for(store, KEY, latest(store), 5, exclude=findings(store)).ids == first.ids
    time.sleep(0.01)  # the accept comes after the pick, on any clock resolution
    done = run(accept(store, [broken.id], ProbeSettings(), target=None, sample=False, run_id="accept-1"))
    assert [a.baseline.majority for a in done] == ["5"]  # the broken behaviour is the new normal
    after = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
    assert after.picked and after.pick is not None and after.pick.reason == "accept"
    assert broken.id not in after.ids and len(after.ids) == 5
    assert after.ids == {r.id for r in select_guards([r for r in latest(store) if r.id not in findings(store)], 5)}
    assert broken.id in after.pick.removed and set(after.pick.added) == after.ids - first.ids
    assert f"1 case(s) accepted since the pick of {first.pick.picked_at:%Y-%m-%d %H:%M:%S}Z, the last {broken.id}" \
        in after.pick.detail
    change = f"(+{len(after.pick.added)} -{len(after.pick.removed)})"
    assert after.describe().startswith(f"re-picked after an accept {change}, 5 guard(s): 1 case(s) accepted")
    # read again: the accept is older than the new pick, nothing changes
    assert not guards_for(store, KEY, latest(store), 5, exclude=findings(store)).picked
    assert [p.reason for p in stored_picks(store, KEY)] == ["first", "accept"]


def test_an_accept_of_another_suites_case_leaves_the_set_alone(store: CaseStore) -> None:
    mine = [r for r in latest(store) if r.id.startswith("p")]
    first = guards_for(store, KEY, mine, 4)
    other = probed_record("elsewhere", CaseClass.PASS, RIGHT, run_id="run-2", at=100)
    store.append(other)
    time.sleep(0.01)
    run(accept(store, ["elsewhere"], ProbeSettings(), target=None, sample=False, run_id="accept-1"))
    assert not guards_for(store, KEY, mine, 4).picked
    assert guards_for(store, pytest_suite_key("other"), [other], 4).ids == {"elsewhere"}  # its own key
    assert guards_for(store, KEY, mine, 4).ids == first.ids


def test_an_explicit_repick_changes_the_set_once_per_request(store: CaseStore) -> None:
    first = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
    passes(store, [f"new-{i}" for i in range(30)], run_id="run-2", at=100, topics="abcd")
    fresh = [r.id for r in select_guards([r for r in latest(store) if r.id not in findings(store)], 5)]
    again = repick_guards(store, KEY, latest(store), 5, exclude=findings(store), detail="pytest --frontier-repick-guards",
                          request="session-1")
    assert again.picked and again.pick is not None and again.pick.reason == "repick"
    assert again.pick.case_ids == fresh and again.ids != first.ids
    assert again.pick.detail == "pytest --frontier-repick-guards" and again.pick.request == "session-1"
    assert set(again.pick.removed) == first.ids - again.ids and set(again.pick.added) == again.ids - first.ids
    # another process of the same session asks too: one pick, not one per worker
    assert not repick_guards(store, KEY, latest(store), 5, exclude=findings(store), request="session-1").picked
    assert repick_guards(store, KEY, latest(store), 5, exclude=findings(store), request="session-2").picked
    assert [p.reason for p in stored_picks(store, KEY)] == ["first", "repick", "repick"]


def test_a_stored_guard_missing_from_the_records_is_left_out_with_the_reason(store: CaseStore) -> None:
    first = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
    assert first.pick is not None
    gone, filtered = first.guards[0].id, first.guards[1].id
    seen = [r for r in latest(store) if r.id != filtered]
    read = guards_for(store, KEY, seen, 5, exclude=findings(store))
    assert read.ids == first.ids - {filtered} and not read.picked  # not replaced by another pass case
    assert [(d.case_id, d.reason) for d in read.dropped] == [
        (filtered, f"no record among the {len(seen)} case(s) read (another run, target or suite)")]
    # the store rebuilt without one: said so, and the stored set is still the same
    path = store.run_path("run-1")
    kept = [line for line in path.read_bytes().splitlines(keepends=True) if f'"id":"{gone}"'.encode() not in line]
    path.write_bytes(b"".join(kept))
    read = guards_for(store, KEY, latest(store), 5, exclude=findings(store))
    assert [(d.case_id, d.reason) for d in read.dropped] == [(gone, f"no record in {store.root} any more")]
    assert stored_picks(store, KEY) == [first.pick]


def test_the_count_takes_a_prefix_or_says_the_set_is_smaller(store: CaseStore) -> None:
    first = guards_for(store, KEY, latest(store), 6, exclude=findings(store))
    order = first.pick.case_ids if first.pick else []
    fewer = guards_for(store, KEY, latest(store), 3, exclude=findings(store))
    assert [r.id for r in fewer.guards] == order[:3] and not fewer.picked and fewer.note == ""
    assert [r.id for r in fewer.guards] == [r.id for r in select_guards(latest(store), 3)]  # still one per topic
    more = guards_for(store, KEY, latest(store), 10, exclude=findings(store))
    assert [r.id for r in more.guards] == order and not more.picked
    assert more.note == "10 guard(s) asked for, the stored set was picked for 6: re-pick it to use the new count"


def test_nothing_is_stored_until_there_is_a_pass_case(tmp_path: Path) -> None:
    absent = CaseStore(tmp_path / "none")
    assert guards_for(absent, KEY, [], 10).pick is None and not absent.root.exists()  # a read creates no store
    store = CaseStore(tmp_path / "store")
    store.append(probed_record("f0", CaseClass.FRONTIER, ("4", "5", "4", "5"), run_id="run-1"))
    empty = guards_for(store, KEY, latest(store), 10, exclude={"f0"})
    assert empty.pick is None and not empty.ids and not (store.root / GUARDS_FILE).exists()
    passes(store, ["p0", "p1"], run_id="run-2", at=100)
    later = guards_for(store, KEY, latest(store), 10, exclude={"f0"})
    assert later.ids == {"p0", "p1"} and later.pick is not None and later.pick.reason == "first"
    assert later.pick.detail == "2 pass case(s) to pick from"


def test_an_unreadable_guard_file_is_an_error_naming_it(store: CaseStore) -> None:
    path = store.root / GUARDS_FILE
    path.write_text("{not json")
    with pytest.raises(StoreError, match=f"{path}: not JSON") as err:
        guards_for(store, KEY, latest(store), 5)
    assert "delete it" in (err.value.hint or "")
    path.write_text(json.dumps({"schema_version": 99, "sets": {}}))
    with pytest.raises(StoreError, match="schema_version 99 is newer"):
        guards_for(store, KEY, latest(store), 5)
    path.write_text(json.dumps({"schema_version": 1, "sets": {KEY: [{"case_ids": ["p0"]}]}}))
    with pytest.raises(StoreError, match=f"{path}: sets.{KEY}.0.count: Field required"):
        stored_picks(store, KEY)


_REPICKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from frontier_qa.store._case_store import CaseStore
    from frontier_qa.store._guards import repick_guards

    store, tag, n, go = CaseStore(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    records = list(store.latest().values())
    Path(f"{go}.{tag}").touch()  # ready
    while not go.exists():
        time.sleep(0.005)
    for i in range(n):
        repick_guards(store, "pytest:shared", records, 4, detail=f"{tag}-{i}")
        repick_guards(store, f"pytest:{tag}", records, 4, detail=f"{tag}-{i}")
    """
)


def test_two_processes_picking_at_once_lose_no_pick(store: CaseStore, tmp_path: Path) -> None:
    script, go = tmp_path / "repicker.py", tmp_path / "go"
    script.write_text(_REPICKER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's frontier_qa
    procs = [subprocess.Popen([sys.executable, str(script), str(store.root), tag, "20", str(go)], env=env)
             for tag in ("a", "b")]
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.{tag}").exists() for tag in ("a", "b")) and time.monotonic() < deadline:
        time.sleep(0.01)  # both at the start line: then they pick at the same time
    go.touch()
    for p in procs:
        assert p.wait(timeout=120) == 0
    shared = stored_picks(store, "pytest:shared")
    # every read-modify-write saw the one before it: 40 picks, none lost, each process's in its order
    assert len(shared) == 40 and [p.reason for p in shared] == ["first"] + ["repick"] * 39
    details = [p.detail for p in shared[1:]]  # the first pick says what it picked from
    for tag in ("a", "b"):
        mine = [d for d in details if d.startswith(f"{tag}-")]
        assert mine == [f"{tag}-{i}" for i in range(20 - len(mine), 20)]
        own = stored_picks(store, f"pytest:{tag}")
        assert len(own) == 20 and own[0].reason == "first"
    assert len(details) == 39
    assert not list(store.root.glob(".guards.json.*.tmp"))  # no temp file left behind
