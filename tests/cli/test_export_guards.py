"""`frontier-qa export` writes the store's guard set; `accept` and `--repick-guards` change it (issue 26).

A store of records built as the probe engine builds them (:func:`tests.factories.probed_record`),
exported and accepted through the real CLI, in process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._guards import export_key, select_guards, stored_picks
from frontier_qa.store._records import CaseClass, SuiteCase
from frontier_qa.store._suites import import_suite
from tests.cli.runner import run_cli
from tests.factories import TARGET, probed_record


class Workdir:
    """A folder with a case store (``store/``); runs the CLI inside it."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self.capsys = capsys
        self.err = ""
        self.store = CaseStore(root / "store")
        self.passes([f"p{i}" for i in range(12)], "run-1", 0)
        for i in range(3):
            self.store.append(probed_record(f"f{i}", CaseClass.FRONTIER, ("4", "5", "4", "5"), run_id="run-1"))

    def passes(self, ids: list[str], run_id: str, at: int, topics: str = "abc") -> None:
        for i, cid in enumerate(ids):
            self.store.append(probed_record(cid, CaseClass.PASS, ("4",) * 4, topic=topics[i % len(topics)],
                                            run_id=run_id, at=at))

    def cli(self, *args: str) -> tuple[int, str]:
        rc, out, self.err = run_cli(self.root, self.capsys, args)
        return rc, out

    def export(self, *more: str) -> tuple[str, list[SuiteCase]]:
        rc, out = self.cli("export", "--store", "store", "--suite", "suite.yaml", "--guards", "4", *more)
        assert rc == 0, out
        return out, import_suite(self.root / "suite.yaml")


def guards(entries: list[SuiteCase]) -> list[str]:
    return sorted(e.case.id for e in entries if e.role == "guard")


@pytest.fixture
def work(tmp_path: Path, capsys: pytest.CaptureFixture[str], clean_env: None) -> Workdir:
    return Workdir(tmp_path, capsys)


def test_exports_keep_their_guards_until_an_accept(work: Workdir) -> None:
    out, first = work.export()
    assert "exported 7 case(s) to suite.yaml: 3 finding(s) (frontier, failure, suspect), 4 guard(s)" in out
    assert "guards picked, 4 guard(s): 12 pass case(s) to pick from; kept in store/guards.json" in out
    written = (work.root / "suite.yaml").read_bytes()
    work.passes([f"new-{i}" for i in range(20)], "run-2", 100, topics="abcd")  # a later probe found more
    grown = {r.id for r in select_guards(work.store.latest().values(), 4)}
    assert grown != set(guards(first))  # a fresh pick (the defect) would have changed the suite
    out, again = work.export()
    assert (work.root / "suite.yaml").read_bytes() == written and "guards " not in out  # the same file, no news

    # a guard breaks: it stays a guard (held to its passing baseline), not swapped for another pass case
    broken = guards(first)[0]
    work.store.append(probed_record(broken, CaseClass.FAILURE, ("5",) * 4, run_id="run-3", at=200))
    out, entries = work.export()
    assert guards(entries) == guards(first) and "3 finding(s)" in out
    assert f"guards that no longer pass, still exported as guards: {broken}" in out
    entry = next(e for e in entries if e.case.id == broken)
    assert entry.observed is not None and entry.observed.case_class is CaseClass.FAILURE
    assert entry.baseline is not None and entry.baseline.case_class is CaseClass.PASS

    rc, out = work.cli("accept", broken, "--store", "store", "--no-sample")
    assert rc == 0 and "guards: the stored sets of the suites with these cases (export) are picked again " \
                       "at their next export or pytest session" in out
    out, after = work.export()
    assert "guards re-picked after an accept" in out and f"the last {broken} at" in out
    assert broken not in guards(after) and len(guards(after)) == 4
    assert next(e for e in after if e.case.id == broken).role == "finding"  # the accepted failure is a finding now
    assert [p.reason for p in stored_picks(work.store, export_key())] == ["first", "accept"]
    assert work.export()[1] == after  # and stays put


def test_repick_guards_picks_from_the_cases_stored_now(work: Workdir) -> None:
    _, first = work.export()
    work.passes([f"new-{i}" for i in range(20)], "run-2", 100, topics="abcd")
    out, again = work.export("--repick-guards")
    fresh = sorted(r.id for r in select_guards(work.store.latest().values(), 4))
    assert guards(again) == fresh != guards(first)
    assert "guards re-picked as asked (+" in out and ": frontier-qa export --repick-guards; kept in" in out
    pick = stored_picks(work.store, export_key())[-1]
    assert (pick.reason, pick.detail, sorted(pick.case_ids)) == ("repick", "frontier-qa export --repick-guards", fresh)
    # a target of its own keeps a set of its own; the store-wide set is untouched by it
    work.export("--target-id", TARGET)
    assert [p.reason for p in stored_picks(work.store, export_key(TARGET))] == ["first"]
    assert len(stored_picks(work.store, export_key())) == 2


def test_an_unreadable_guard_file_fails_export_but_not_an_accept(work: Workdir) -> None:
    path = work.root / "store" / "guards.json"
    path.write_text("{cut")
    rc, out = work.cli("export", "--store", "store", "--suite", "suite.yaml")
    assert rc == 2 and not (work.root / "suite.yaml").exists()
    rc, out = work.cli("accept", "p0", "--store", "store", "--no-sample")
    assert rc == 0 and "1 baseline(s) accepted into store" in out and work.store.accepted().keys() == {"p0"}
    assert "guards: store/guards.json: not JSON" in work.err and "fix: restore it, or delete it" in work.err
