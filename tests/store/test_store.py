"""Case records and the case store: round trips, crash safety, resume, merge, shards, suites."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from frontier_qa.scoring.consistency import Cluster, Consistency
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._lines import TornLineWarning, encode_line
from frontier_qa.store._records import (
    CaseClass,
    CaseRecord,
    Interval,
    Round,
    RunRecord,
    case_record,
    json_schemas,
    run_totals,
    truncate_text,
)
from frontier_qa.store._shards import Shard, shard_of
from frontier_qa.store._store_error import StoreError
from frontier_qa.store._suites import export_suite, import_suite
from frontier_qa.target import Case, ToolCall, Trajectory, Usage, case_seed
from tests.factories import T0, TARGET, probed_record


def make_run(
    run_id: str = "run-1", shard: tuple[int, int] = (1, 1), *, config_hash: str = "cfg"
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        config_hash=config_hash,
        seed=7,
        shard_index=shard[0],
        shard_count=shard[1],
        target_id=TARGET,
        started_at=T0,
        written_at=T0,
    )


# --- records ----------------------------------------------------------------------------


def test_case_record_from_in_memory_values() -> None:
    long_text = "a" * 3000 + "MIDDLE" + "b" * 3000 + "\\boxed{7}"
    trajectories = [
        Trajectory(text="\\boxed{7}", usage=Usage(5, 7), cost_usd=0.25, sample_index=2, cached=True),
        Trajectory(
            text=long_text,
            tool_calls=(ToolCall("python", "1+1", "2"), ToolCall("python", "x", None)),
            usage=Usage(3, 4),
            cost_usd=None,
            sample_index=0,
        ),
        Trajectory(text=None, error="HTTP 500", sample_index=1),
    ]
    consistency = Consistency(
        p_hat=2 / 3,
        majority="7",
        k=3,
        n_unparseable=0,
        n_failed=1,
        clusters=(Cluster("7", (0, 2)),),
        tie=False,
        entropy=0.0,
    )
    case = Case(
        id="c1",
        prompt="p",
        system="s",
        topic="t",
        tools=({"type": "function"},),
        reference="7",
        metadata={"source": "unit"},
        history=({"role": "assistant", "content": "x"},),
    )
    rec = case_record(
        case,
        trajectories,
        ["7", "7", None],
        consistency,
        case_class="frontier",
        run_id="r",
        target_id="x",
        seed=10,
        started_at=T0,
        finished_at=T0,
        max_text_chars=1000,
        rounds=[Round(k=2, p_hat=1.0, interval=(0.4, 1.0)), Round(k=3, p_hat=2 / 3)],
        interval=(0.3, 0.9),  # the sequential sampler's (low, high) tuple
    )
    assert [s.sample_index for s in rec.samples] == [0, 1, 2]
    base = case_seed(10, case)  # the run's seed mixed with the case, as the adapters drew them
    assert [s.seed for s in rec.samples] == [base, base + 1, base + 2]
    assert [s.answer for s in rec.samples] == ["7", None, "7"]
    long = rec.samples[0]
    assert long.text_chars == len(long_text) and long.truncated
    assert len(long.text) <= 1000 and long.text.startswith("aaa") and long.text.endswith("\\boxed{7}")
    assert "MIDDLE" not in long.text and "characters cut" in long.text
    assert long.n_tool_calls == 1  # the second call never ran
    assert rec.samples[1].error == "HTTP 500" and rec.samples[1].text is None
    # calls exclude the cached sample; tokens count all; usd sums the known costs
    assert (rec.cost.calls, rec.cost.cached, rec.cost.tokens, rec.cost.usd) == (2, 1, 19, 0.25)
    assert rec.case_class is CaseClass.FRONTIER and rec.p_hat == pytest.approx(2 / 3)
    assert [(c.answer, c.count) for c in rec.clusters] == [("7", 2)]
    assert rec.case.to_case() == case
    assert (rec.interval.low, rec.interval.high) == (0.3, 0.9) and rec.rounds[0].interval.low == 0.4


def test_truncate_text_keeps_head_and_tail() -> None:
    assert truncate_text("short", 10) == "short"
    cut = truncate_text("H" * 500 + "T" * 500, 100)
    assert len(cut) <= 100 and cut.startswith("H") and cut.endswith("T")


def test_record_json_round_trip_and_schema() -> None:
    rec = probed_record("c1", CaseClass.FRONTIER, interval=(0.3, 0.95))  # an Interval goes through too
    assert rec.interval is not None
    again = CaseRecord.model_validate_json(rec.model_dump_json())
    assert again == rec
    jsonschema = pytest.importorskip("jsonschema")
    schemas = json_schemas()
    assert set(schemas) == {"case", "run", "baseline", "suite_case"}
    jsonschema.validate(json.loads(rec.model_dump_json()), schemas["case"])
    jsonschema.validate(json.loads(make_run().model_dump_json()), schemas["run"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**json.loads(rec.model_dump_json()), "case_class": "great"}, schemas["case"])


def test_records_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="above high"):
        Interval(low=0.8, high=0.2)
    with pytest.raises(ValueError, match="index is above the count"):
        make_run(shard=(3, 2))
    with pytest.raises(ValueError, match="extra"):
        CaseRecord.model_validate({**probed_record("c").model_dump(), "typo_field": 1})


def test_run_totals_hand_counted() -> None:
    recs = [probed_record("a"), probed_record("b", CaseClass.FAILURE), probed_record("c", CaseClass.FAILURE)]
    totals = run_totals(recs)
    assert totals.cases == 3
    assert totals.by_class == {CaseClass.PASS: 1, CaseClass.FAILURE: 2}
    assert totals.cost.calls == 12 and totals.cost.usd == pytest.approx(0.012)


# --- append and load ----------------------------------------------------------------------


def test_append_and_load_round_trip(tmp_path: Path) -> None:
    store = CaseStore(tmp_path / ".frontier-qa")
    run = make_run()
    recs = [probed_record(f"c{i}", at=i) for i in range(3)]
    store.start_run(run)
    for r in recs:
        store.append(r)
    fresh = CaseStore(tmp_path / ".frontier-qa")
    assert list(fresh.lines("run-1")) == [run, *recs]
    assert (tmp_path / ".frontier-qa" / ".gitignore").read_text().splitlines()[-1] == "*"
    raw = (tmp_path / ".frontier-qa" / "runs" / "run-1.jsonl").read_bytes()
    assert raw.count(b"\n") == 4 and raw.endswith(b"\n")


def test_lone_surrogates_round_trip(tmp_path: Path) -> None:
    rec = probed_record("c1", answers=("a\ud800b", "a\ud800b"))
    store = CaseStore(tmp_path)
    store.append(rec)
    (back,) = store.case_records()
    assert back.samples[0].answer == "a\ud800b"
    (tmp_path / "runs" / "run-1.jsonl").read_bytes().decode("utf-8")  # still valid UTF-8


def test_run_id_must_be_a_safe_file_name(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="safe file name"):
        CaseStore(tmp_path).append(probed_record("c", run_id="../escape"))


def test_torn_last_line_is_skipped_and_never_swallows_the_next_record(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    recs = [probed_record(f"c{i}", at=i) for i in range(3)]
    for r in recs:
        store.append(r)
    path = store.run_path("run-1")
    torn = encode_line(probed_record("torn"))[:57]
    with open(path, "ab") as fh:
        fh.write(torn)  # a crash after part of a write
    with pytest.warns(TornLineWarning, match="last line"):
        assert [r.id for r in store.case_records()] == ["c0", "c1", "c2"]
    later = probed_record("c3", at=3)
    store.append(later)  # must first end the torn line, else both lines would be lost
    with pytest.warns(TornLineWarning, match="line 4"):
        assert [r.id for r in store.case_records()] == ["c0", "c1", "c2", "c3"]


def test_torn_multibyte_character_is_skipped(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    store.append(probed_record("c0"))
    line = encode_line(probed_record("c1", prompt="数学题：二加二等于几？"))
    cut = line.index("数".encode()) + 1  # inside a 3-byte character
    with open(store.run_path("run-1"), "ab") as fh:
        fh.write(line[:cut])
    with pytest.warns(TornLineWarning):
        assert [r.id for r in store.case_records()] == ["c0"]


def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    store.append(probed_record("c0"))
    data = json.loads(probed_record("c1").model_dump_json()) | {"schema_version": 99}
    with open(store.run_path("run-1"), "a") as fh:
        fh.write(json.dumps(data) + "\n")
    with pytest.raises(StoreError, match="schema_version 99"):
        store.case_records()


_WRITER = textwrap.dedent(
    """
    import sys
    from datetime import datetime, timezone
    from frontier_qa.store._records import CaseRecord, Case, SampleRecord
    from frontier_qa.store._case_store import CaseStore

    store, tag, count, size = CaseStore(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    now = datetime.now(timezone.utc)
    i = 0
    while count < 0 or i < count:
        text = (tag + str(i) + "|") * (size // (len(tag) + 6))
        rec = CaseRecord(case=Case(id=f"{tag}-{i}", prompt="p"), run_id="shared", target_id="t",
                         samples=[SampleRecord(sample_index=0, text=text, text_chars=len(text))],
                         case_class="pass", started_at=now, finished_at=now)
        store.append(rec)
        print(i, flush=True)
        i += 1
    """
)


def _writer(tmp_path: Path, store: Path, tag: str, count: int, size: int) -> subprocess.Popen[str]:
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    return subprocess.Popen(
        [sys.executable, str(script), str(store), tag, str(count), str(size)],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_sigkill_mid_write_loses_nothing_acknowledged(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    proc = _writer(tmp_path, store_dir, "k", -1, 200_000)  # 200 kB lines: kills often land mid-write
    acknowledged = -1
    deadline = time.monotonic() + 60
    while acknowledged < 15 and time.monotonic() < deadline:
        acknowledged = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)  # a torn last line is allowed, not required
        ids = [r.id for r in CaseStore(store_dir).case_records()]
    # every append that returned is on disk, in order; at most one more finished after the last print
    assert ids[: acknowledged + 1] == [f"k-{i}" for i in range(acknowledged + 1)]
    assert len(ids) in (acknowledged + 1, acknowledged + 2)
    for rec in CaseStore(store_dir).case_records():
        i = rec.id.split("-")[1]
        assert set(rec.samples[0].text.split("|")[:-1]) == {f"k{i}"}


_CRASHER = textwrap.dedent(
    """
    import os, signal, sys
    import frontier_qa.store._case_store as store_module
    from datetime import datetime, timezone
    from frontier_qa.store._records import CaseRecord, Case
    from frontier_qa.store._case_store import CaseStore

    real_write = store_module._write_all
    appended = 0

    def write_then_die(fd, data):
        # the 4th append dies by SIGKILL after half its line reached the file
        if appended == 3:
            os.write(fd, data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        real_write(fd, data)

    store_module._write_all = write_then_die
    store = CaseStore(sys.argv[1])
    now = datetime.now(timezone.utc)
    for i in range(10):
        store.append(CaseRecord(case=Case(id=f"c{i}", prompt="p" * 500), run_id="crash", target_id="t",
                                case_class="pass", started_at=now, finished_at=now))
        appended += 1
    """
)


def test_sigkill_inside_a_write_leaves_a_torn_line_that_load_skips(tmp_path: Path) -> None:
    script = tmp_path / "crasher.py"
    script.write_text(_CRASHER)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "s")], timeout=60)
    assert proc.returncode == -signal.SIGKILL
    store = CaseStore(tmp_path / "s")
    data = store.run_path("crash").read_bytes()
    assert not data.endswith(b"\n")  # the process really died inside a line
    with pytest.warns(TornLineWarning, match="last line"):
        assert [r.id for r in store.case_records()] == ["c0", "c1", "c2"]
    store.append(probed_record("after", run_id="crash"))
    with pytest.warns(TornLineWarning, match="line 4"):
        assert [r.id for r in store.case_records()] == ["c0", "c1", "c2", "after"]


def test_two_processes_appending_never_interleave(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    procs = [_writer(tmp_path, store_dir, tag, 60, 50_000) for tag in ("a", "b")]
    for p in procs:
        p.communicate(timeout=120)
        assert p.returncode == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)  # any torn line here is a bug
        recs = CaseStore(store_dir).case_records()
    assert sorted(r.id for r in recs) == sorted(f"{t}-{i}" for t in "ab" for i in range(60))
    for rec in recs:
        tag, i = rec.id.split("-")
        assert set(rec.samples[0].text.split("|")[:-1]) == {f"{tag}{i}"}


# --- runs, resume, replay -------------------------------------------------------------------


def test_resume_lists_completed_cases_of_an_interrupted_run(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    store.start_run(make_run("r-a", config_hash="cfg-1"))
    for i, cls in enumerate([CaseClass.PASS, CaseClass.FAILURE, CaseClass.FRONTIER]):
        store.append(probed_record(f"c{i}", cls, run_id="r-a", at=i))
    store.start_run(make_run("r-b"))
    store.finish_run("r-b")
    assert [r.run_id for r in store.interrupted_runs()] == ["r-a"]
    state = store.resume("r-a", config_hash="cfg-1")
    assert state.completed == {"c0", "c1", "c2"} and state.run.run_id == "r-a"
    with pytest.raises(StoreError, match="config"):
        store.resume("r-a", config_hash="cfg-2")
    store.append(probed_record("c3", CaseClass.FAILURE, run_id="r-a", at=3))  # the resumed run goes on
    done = store.finish_run("r-a")
    assert done.totals.cases == 4
    assert done.totals.by_class == {CaseClass.PASS: 1, CaseClass.FAILURE: 2, CaseClass.FRONTIER: 1}
    assert store.run("r-a").finished and store.interrupted_runs() == []
    with pytest.raises(StoreError, match="nothing to resume"):
        store.resume("r-a")
    with pytest.raises(StoreError, match="no run 'r-z'"):
        store.resume("r-z")


def test_resume_one_shard_of_a_run_sharing_the_store(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    ids = [f"case-{i}" for i in range(10)]
    for index in (1, 2):
        store.start_run(make_run("ci", (index, 2)))
    for case_id in ids[:6]:
        store.append(probed_record(case_id, run_id="ci"))
    mine = {i for i in ids[:6] if shard_of(i, 2) == 1}
    assert 0 < len(mine) < 6
    assert store.resume("ci", shard_index=1).completed == mine
    assert store.resume("ci", shard_index=2).completed == set(ids[:6]) - mine
    assert store.finish_run("ci", shard_index=2).totals.cases == 6 - len(mine)
    assert [r.shard_index for r in store.interrupted_runs()] == [1]


def test_replay_latest_record_per_case_failures_first(tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    store.append(probed_record("b", CaseClass.PASS, run_id="old", at=0))
    store.append(probed_record("a", CaseClass.FRONTIER, run_id="old", at=0))
    store.append(probed_record("b", CaseClass.FAILURE, run_id="new", at=10))  # later: wins
    store.append(probed_record("a", CaseClass.PASS, run_id="older", at=-10))  # earlier: loses
    store.append(probed_record("z", CaseClass.INVALID, run_id="new", at=10))
    other = probed_record("o", CaseClass.FAILURE, run_id="new").model_copy(update={"target_id": "other"})
    store.append(other)
    replay = store.replay(TARGET)
    assert [(r.id, r.case_class) for r in replay] == [("b", CaseClass.FAILURE), ("a", CaseClass.FRONTIER)]
    assert [r.id for r in store.replay(TARGET, include_invalid=True)] == ["b", "a", "z"]
    assert [r.id for r in store.replay()] == ["b", "o", "a"]
    assert len(store.case_records(target_id=TARGET)) == 5


# --- shards and merge -------------------------------------------------------------------------


def test_shard_of_is_stable_and_balanced() -> None:
    # fixed values (SHA-256, first 8 bytes big-endian, mod n, 1-based): must never change
    for case_id, n in [("case-0001", 4), ("algebra/17", 3), ("数学", 5)]:
        expected = int(hashlib.sha256(case_id.encode()).hexdigest()[:16], 16) % n + 1
        assert shard_of(case_id, n) == expected
    assert [shard_of(f"case-{i}", 4) for i in range(8)] == [shard_of(f"case-{i}", 4) for i in range(8)]
    assert shard_of("anything", 1) == 1
    n, ids = 7, [f"case-{i}" for i in range(14_000)]
    counts = [0] * n
    for case_id in ids:
        counts[shard_of(case_id, n) - 1] += 1
    expected = len(ids) / n
    chi2 = sum((c - expected) ** 2 / expected for c in counts)
    assert chi2 < 22.5, counts  # chi-square, 6 degrees of freedom, p = 0.001
    shards = [Shard(i, 3) for i in (1, 2, 3)]
    assert all(sum(s.contains(case_id) for s in shards) == 1 for case_id in ids[:300])


def test_shard_parse() -> None:
    assert Shard.parse(" 2/4 ") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
    for bad in ("0/4", "5/4", "two/4", "1-4"):
        with pytest.raises(StoreError):
            Shard.parse(bad)
    with pytest.raises(StoreError):
        shard_of("x", 0)


def _shard_store(root: Path, index: int, ids: list[str], at: int) -> CaseStore:
    store = CaseStore(root)
    store.start_run(make_run("ci", (index, 2)))
    for case_id in ids:
        if shard_of(case_id, 2) == index:
            store.append(probed_record(case_id, run_id="ci", at=at))
    store.finish_run("ci", shard_index=index)
    return store


def test_merge_two_shard_stores(tmp_path: Path) -> None:
    ids = [f"case-{i}" for i in range(12)]
    a = _shard_store(tmp_path / "a", 1, ids, at=0)
    b = _shard_store(tmp_path / "b", 2, ids, at=0)
    one = next(i for i in ids if shard_of(i, 2) == 1)
    b.append(probed_record(one, CaseClass.FAILURE, run_id="ci", at=50))  # re-probed later on shard 2: wins
    a.append(probed_record(ids[0] if shard_of(ids[0], 2) == 1 else one, run_id="ci", at=0))  # exact duplicate
    merged = CaseStore(tmp_path / "merged")
    result = merged.merge([a, b])
    latest = merged.latest(run_id="ci")
    assert sorted(latest) == sorted(ids) and result.cases == 12 and result.runs == 1
    assert result.duplicates == 2
    assert latest[one].case_class is CaseClass.FAILURE
    assert sum(isinstance(r, CaseRecord) for r in merged.lines("ci")) == 12  # no duplicate lines
    runs = merged.runs()
    assert [(r.shard_index, r.finished) for r in runs] == [(1, True), (2, True)]
    assert sum(r.totals.cases for r in runs) == 12
    # order of sources does not matter, and merging again changes nothing
    other = CaseStore(tmp_path / "other")
    other.merge([b, str(a.root)])
    data = merged.run_path("ci").read_bytes()
    assert other.run_path("ci").read_bytes() == data
    merged.merge([a, b, merged])
    assert merged.run_path("ci").read_bytes() == data
    with pytest.raises(StoreError, match="no case store"):
        merged.merge([tmp_path / "missing"])


def test_merge_breaks_timestamp_ties_deterministically(tmp_path: Path) -> None:
    x = probed_record("same", CaseClass.PASS, at=5)
    y = probed_record("same", CaseClass.FAILURE, at=5)  # same finished_at, different content
    for order, name in (((x, y), "xy"), ((y, x), "yx")):
        sources = []
        for i, rec in enumerate(order):
            s = CaseStore(tmp_path / f"{name}{i}")
            s.append(rec)
            sources.append(s)
        CaseStore(tmp_path / f"out-{name}").merge(sources)
    first = CaseStore(tmp_path / "out-xy").latest()["same"]
    assert first == CaseStore(tmp_path / "out-yx").latest()["same"]
    assert first == max((x, y), key=lambda r: hashlib.sha256(encode_line(r)).hexdigest())


# --- suites ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["suite.jsonl", "suite.yaml"])
def test_suite_export_import_is_stable(tmp_path: Path, name: str) -> None:
    recs = [
        probed_record("zeta", CaseClass.FRONTIER, answers=("1", "2"), interval=(0.3, 0.95),
                      prompt='line one\nline two: <x> & "q"'),
        probed_record("alpha", CaseClass.FAILURE, at=1, topic="数学"),
        probed_record("alpha", CaseClass.PASS, at=0),  # older record of alpha: dropped
    ]
    path = tmp_path / name
    assert export_suite(recs, path) == 2
    first = path.read_bytes()
    assert export_suite(list(reversed(recs)), path) == 2 and path.read_bytes() == first
    entries = import_suite(path)
    assert [e.case.id for e in entries] == ["alpha", "zeta"]
    assert entries[0].observed.case_class is CaseClass.FAILURE and entries[0].case.topic == "数学"
    assert entries[1].case.to_case().prompt == 'line one\nline two: <x> & "q"'
    assert entries[1].observed.p_hat == 0.5 and entries[1].observed.interval.high == 0.95
    text = first.decode()
    for volatile in ("finished_at", "run_id", "cost", "usd"):
        assert volatile not in text
    if name.endswith(".yaml"):
        assert "prompt: |" in text  # multi-line prompts stay readable in diffs
    export_suite(entries, path)  # import → export gives the same bytes
    assert path.read_bytes() == first
    export_suite(recs, path, volatile=True)
    again = import_suite(path)
    assert again[0].run_id == "run-1" and again[0].cost.calls == 4 and again[0].finished_at is not None


def test_import_suite_errors_name_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    entry = {"case": {"id": "a", "prompt": "p"}}
    path.write_text(json.dumps(entry) + "\n" + json.dumps(entry) + "\n")
    with pytest.raises(StoreError, match=r"s.jsonl:2: case id 'a' appears twice"):
        import_suite(path)
    path.write_text(json.dumps({"case": {"id": "a", "prompt": "p", "topik": "x"}}) + "\n")
    with pytest.raises(StoreError, match=r"s.jsonl:1: case.topik"):
        import_suite(path)
    yml = tmp_path / "s.yaml"
    yml.write_text("case: {id: a}\n")
    with pytest.raises(StoreError, match="YAML list"):
        import_suite(yml)
    with pytest.raises(StoreError, match="format"):
        import_suite(tmp_path / "s.txt")
