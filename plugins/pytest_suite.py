"""Where a frontier test's cases come from, and how each is replayed (the plugin's engine side).

One :class:`Suite` per ``@pytest.mark.frontier`` (per suite ``name``) and pytest process.

**Which cases.** Every case a suite finds is tagged with the suite's name in its case
metadata (``pytest_suite``), so one store holds many suites (and the CLI's runs) apart. A
suite's test items are the cases with any tagged record in one of its ``classes`` (failure,
suspect, frontier by default), a topic-stratified sample of its ``pass`` cases as *guards*
(``guards=``, ``replay.guards``: 10), plus the entries of its committed ``suite=`` file. A
case never drops out because a replay found it better: a flaky finding stays visible.

**Baselines.** Each item is held to its baseline (:mod:`frontier_qa.store.baselines`): the
latest one accepted in the store, a committed suite entry's own, else the case's first
observation. Replays never change one; ``--frontier-accept`` does, for every case replayed,
and writes them into the ``suite=`` file too. The regression test's suite size (Bonferroni)
is the number of items, known at collection, so each item decides alone.

**Collection is deterministic** (the same items on every xdist worker). Items come only from
the store, read during collection, before any test of the session runs (xdist starts tests
only once every worker has collected). Probing for new cases (``generate`` mode, or ``auto``
with nothing stored) happens during collection too, because the new cases are test items:
it runs once per session behind an ``flock`` on ``<store>/pytest/<suite>.lock``. The first
process to take the lock replays the stored cases (Hypothesis: stored examples first, so the
budget is spent on known cases before new ones), then probes the curriculum, under run ids
``pytest-<suite>-<session>-replay`` / ``-gen``; every other process finds those runs, skips,
and reads the same records back. The session id is xdist's ``testrunuid`` (shared by all
workers), else a fresh one.

**Replays at test time.** A stored case not replayed during collection is replayed by its
own test item: one engine run per suite and process (``pytest-<suite>-<session>-r-<worker>``,
:class:`frontier_qa.probing.run.ProbeRun`) with fresh sample indices, so deselected tests cost
nothing and xdist spreads the sampling over workers.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.config import Override, ProbeConfig, ProbeParts, build_probe, load_config
from frontier_qa.curricula.base import Outcome, Proposal
from frontier_qa.errors import FrontierQAError
from frontier_qa.plugins.pytest_case import FrontierCase
from frontier_qa.plugins.pytest_marker import SuiteSpec, absolute_target, parse_marker, suite_key, target_label
from frontier_qa.plugins.pytest_plugin import (
    CASE_KEY,
    FIXTURE,
    FrontierOptions,
    FrontierUnjudged,
    FrontierUsageError,
    case_test_id,
    replay_command,
)
from frontier_qa.probing.run import ProbeRun, ReplayItem
from frontier_qa.redaction import redacted_output
from frontier_qa.runtime import run_sync as _run_sync
from frontier_qa.store import baselines
from frontier_qa.store.case_ids import case_id_for, legacy_case_id
from frontier_qa.store.case_store import CaseStore, export_suite, import_suite, latest_by, suite_entries
from frontier_qa.store.comparison import from_record
from frontier_qa.store.guards import select_guards
from frontier_qa.store.records import CLASS_ORDER, Baseline, CaseClass, CaseRecord, SuiteCase
from frontier_qa.store.stop_reason import STOP_BUDGET, STOP_UNAVAILABLE
from frontier_qa.target import Case, Sampling, Trajectory

SUITE_KEY = "pytest_suite"
"""Case metadata key naming the suite that found (or replayed) a case."""

SHOWN_REMOVED = 5  # cases validation removed, named in the terminal summary (report.md lists them all)
MAX_KNOWN_ROUNDS = 50  # proposal batches of only known cases in a row before the curriculum counts as exhausted

# --frontier-* option -> config key (store and config are handled apart)
_OPTION_KEYS = {"target": "target.spec", "seed": "probing.seed", "budget_calls": "budget.max_calls",
                "max_cost_usd": "budget.max_cost_usd", "k": "probing.k"}


def run_sync(coro: Any) -> Any:
    """Run the engine's coroutine to its end; what the agent and its libraries print meanwhile
    reaches pytest's capture (or the terminal) with every secret masked.
    """
    with redacted_output():
        return _run_sync(coro)


def _tagged(case: Case, suite: str) -> Case:
    return replace(case, metadata={**case.metadata, SUITE_KEY: suite})


class SuiteCurriculum:
    """The user's curriculum, with each proposal tagged with the suite and known cases skipped.

    Known cases (already test items) are replayed, not probed again as new.

    Args:
        inner: the curriculum.
        suite: the suite name written into each case's metadata.
        known: case ids to skip.
    """

    def __init__(self, inner: Any, suite: str, known: frozenset[str]) -> None:
        self.inner = inner
        self.suite = suite
        self.known = known
        self.name = getattr(inner, "name", type(inner).__name__)
        self.skipped = 0

    async def propose(self, n: int) -> Sequence[Proposal]:
        for _ in range(MAX_KNOWN_ROUNDS):
            batch = list(await self.inner.propose(n))
            if not batch:
                return []
            fresh = []
            for p in batch:
                if not p.case.id:
                    p = replace(p, case=replace(p.case, id=case_id_for(p.case)), aliases=(legacy_case_id(p.case),))
                if p.case.id in self.known or any(a in self.known for a in p.aliases):
                    self.skipped += 1
                else:
                    fresh.append(replace(p, case=_tagged(p.case, self.suite)))
            if fresh:
                return fresh
        return []

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        self.inner.observe(outcomes)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


@dataclass(frozen=True)
class _View:
    """A suite's cases as the store holds them at collection time."""

    ids: frozenset[str]  # the test items
    stored: dict[str, CaseRecord | SuiteCase]  # each item's case as known before this session
    baselines: dict[str, Baseline]  # what each item is held to
    found: dict[str, CaseRecord]  # records of this session's collection-time runs (replay first, generation)
    guards: frozenset[str]  # the items that are guards (stable, correct cases)
    known: int  # cases the suite has any record of (items or not) from before this session


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no cross-process lock
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class Suite:
    """The cases of one marked suite in this process: collected, generated, replayed."""

    def __init__(self, session: Session, spec: SuiteSpec) -> None:
        self.session = session
        self.spec = spec
        self.key = suite_key(spec.name)
        self.prefix = f"pytest-{self.key}-{session.uid}-"
        self.config = self._load_config()
        self.store = CaseStore(self.config.store)
        self._parts: ProbeParts | None = None
        self._run: ProbeRun | None = None
        self._plan: dict[str, ReplayItem] | None = None
        self._before: list[CaseRecord] | None = None  # the suite's records from earlier sessions
        self.items: list[tuple[str, str]] | None = None  # (case id, topic), in test order
        self.view: _View | None = None
        self.cases: dict[str, FrontierCase] = {}
        self.generation = ""
        self.removed = ""  # JSON: the cases validation removed while generating, with the reasons
        self.empty_reason = ""
        self.unjudged = False  # the suite has no items because nothing could be judged
        self._accepted: dict[str, Baseline] = {}

    def where(self) -> str:
        return f"@pytest.mark.frontier on {self.spec.where}"

    # -- configuration ---------------------------------------------------------------------------

    def _load_config(self) -> ProbeConfig:
        options = self.session.options
        # later layers win: ini keys < the marker < --frontier-* flags
        layers = [*self.session.option_layers["ini"], *self.spec.overrides, *self.session.option_layers["cli"]]
        path: str | Path | None = self.spec.config_path
        if options.sources.get("config") == "cli" or (path is None and "config" in options.values):
            path = self.session.path(options.values["config"], options.sources["config"])
        try:
            config = load_config(path, layers)
        except FrontierQAError as err:
            raise FrontierUsageError(f"{self.where()}: {err}") from None
        store = Path(config.store).expanduser()
        # a store not named by a flag, ini key or the marker (the default .frontier-qa, a YAML
        # config's, FRONTIER_QA_STORE) lives at pytest's rootdir, wherever pytest is started;
        # absolute, so that a test changing directory does not move it
        update: dict[str, Any] = {"store": str(store if store.is_absolute() else self.session.root / store)}
        label = config.target.spec and target_label(config.target.spec, self.session.root)
        if label != config.target.spec and "id" not in config.target.options:
            # the agent file is found by its absolute path, but named as the user wrote it
            update["target"] = config.target.model_copy(update={"options": {**config.target.options, "id": label}})
        return config.model_copy(update=update)

    def parts(self, *, curriculum: bool = False) -> ProbeParts:
        """The target (and curriculum) opened from the config; built once per process."""
        if self._parts is None:
            try:
                self._parts = build_probe(self.config, curriculum=curriculum)
            except FrontierQAError as err:
                raise FrontierUsageError(f"{self.where()}: {err}") from None
        return self._parts

    def settings(self) -> Any:
        # sharding is xdist's job here, and every item is replayed: no shard, no replay cap
        return replace(self.parts().settings, shard=None, max_replay=None)

    # -- collection -------------------------------------------------------------------------------

    def collect(self) -> list[tuple[str, str]]:
        """The suite's test items, ``(case id, topic)``, generating first when the mode says so."""
        if self.items is not None:
            return self.items
        mode = self.session.options.mode
        if mode != "replay" and not self.session.config.option.collectonly:
            with _flock(self.store.root / "pytest" / f"{self.key}.lock"):
                ran = any(rid.startswith(self.prefix) for rid in self.store.run_ids())
                if not ran:  # no other process of this session generated yet
                    view = self._read()
                    if mode == "generate" or not view.known:
                        self._generate(view)
        self.view = self._read()
        records = {**self.view.stored, **self.view.found}
        self.items = sorted(((cid, records[cid].case.topic) for cid in self.view.ids), key=lambda p: (p[1], p[0]))
        self.generation = self._generation_line()
        self.removed = self._removed_property()
        if not self.items:
            self.empty_reason = self._empty_reason()
        return self.items

    def _suite_entries(self) -> list[SuiteCase]:
        path = self.spec.suite_file
        if path is None or not Path(path).exists():
            return []
        try:
            entries = import_suite(path)
        except FrontierQAError as err:
            raise FrontierUsageError(f"{self.where()}: suite={path}: {err}") from None
        blind = [e.case.id for e in entries if e.observed is None]
        if blind:
            raise FrontierUsageError(f"{self.where()}: suite {path}: case {blind[0]!r} has no observed result\n"
                                     "  fix: write the suite with `frontier-qa export` or --frontier-mode=generate")
        # tag them, so their replays belong to this suite in the store
        return [e.model_copy(update={"case": replace(
            e.case, metadata={**e.case.metadata, SUITE_KEY: self.spec.name})}) for e in entries]

    def _tagged(self, records: list[CaseRecord]) -> list[CaseRecord]:
        return [r for r in records if r.case.metadata.get(SUITE_KEY) == self.spec.name]

    def _read(self) -> _View:
        if self._before is None:  # earlier sessions' records: read the whole store once
            self._before = [r for r in self._tagged(self.store.case_records()) if not r.run_id.startswith(self.prefix)]
        now = [r for rid in self.store.run_ids() if rid.startswith(self.prefix)
               for r in self._tagged(self.store.case_records(run_id=rid))]
        rows = self._before + now
        entries = {e.case.id: e for e in self._suite_entries()}
        stored: dict[str, CaseRecord | SuiteCase] = dict(entries)
        stored.update(latest_by(self._before, lambda r: r.id))  # the store is newer than a committed suite
        ids = {r.id for r in rows if r.case_class.value in self.spec.classes} | set(entries)
        latest = latest_by(rows, lambda r: r.id)
        count = self.config.replay.guards if self.spec.guards is None else self.spec.guards
        guards = {r.id for r in select_guards([r for cid, r in latest.items() if cid not in ids], count)}
        ids |= guards
        held = baselines.resolve(self.store, self._before)  # accepted, else the first observation
        accepted = self.store.accepted()
        for cid, entry in entries.items():  # a committed suite's own, unless the store accepted a newer one
            own = baselines.of_entry(entry)
            if own is not None and (cid not in accepted or accepted[cid].accepted_at < own.accepted_at):
                held[cid] = own
        found: dict[str, CaseRecord] = latest_by(now, lambda r: r.id)
        return _View(frozenset(ids), stored={i: stored[i] for i in ids if i in stored},
                     baselines={i: held[i] for i in ids if i in held}, found={i: found[i] for i in ids if i in found},
                     guards=frozenset(guards), known=len(stored))

    def _curriculum(self, parts: ProbeParts) -> Any:
        if self.spec.curriculum is not None:
            made = self.spec.curriculum
            if not hasattr(made, "propose"):
                made = made()  # a factory: called only now, when cases are generated
            if not (hasattr(made, "propose") and hasattr(made, "observe")):
                raise FrontierUsageError(f"{self.where()}: the curriculum factory returned {made!r}, not a Curriculum\n"
                                         "  fix: return an object with async propose(n) and observe(outcomes)")
            return made
        return parts.curriculum

    def _generate(self, view: _View) -> None:
        from frontier_qa.probing.engine import probe, replay

        c = self.config.curriculum
        if not (self.spec.names_curriculum or c.path or c.model):
            raise FrontierUsageError(
                f"{self.where()}: no curriculum to generate cases from (mode {self.session.options.mode})\n"
                "  fix: add curriculum='cases.jsonl' (or 'prompted:MODEL_SPEC') to the marker, "
                "or run with --frontier-mode=replay")
        parts = self.parts(curriculum=self.spec.curriculum is None)
        curriculum = SuiteCurriculum(self._curriculum(parts), self.spec.name, view.ids)
        settings = self.settings()
        try:
            stop = None
            olds = [view.stored[i] for i in sorted(view.ids) if i in view.stored]
            if olds:  # stored cases first: the budget goes to known cases before new ones
                done = run_sync(replay(parts.target, self.store, settings, run_id=self.prefix + "replay", cases=olds,
                                       judge=parts.judge))
                stop = done.stop_reason
            if stop not in (STOP_BUDGET, STOP_UNAVAILABLE):
                run_sync(probe(parts.target, curriculum, replace(settings, replay_first=False), store=self.store,
                               run_id=self.prefix + "gen", validator=parts.validator, judge=parts.judge))
        except FrontierQAError as err:
            raise FrontierUsageError(f"{self.where()}: probing failed: {err}") from None
        finally:
            run_sync(curriculum.aclose())
            self._parts = parts._replace(curriculum=None)  # closed: the parts must not close it again
        if self.spec.suite_file:
            self._export()

    def _export(self) -> None:
        """Write the suite's items, with their baselines, to its committed suite file."""
        view = self._read()
        records = {**{i: r for i, r in view.stored.items() if isinstance(r, CaseRecord)}, **view.found}
        held = dict(view.baselines)
        for cid, record in view.found.items():  # a case found now is born with its baseline
            held.setdefault(cid, baselines.from_record(record))
        entries = suite_entries(records.values(), baselines=held)
        entries += [e for i, e in view.stored.items() if isinstance(e, SuiteCase) and i not in records]
        export_suite(entries, self.spec.suite_file or "")

    def _write_accepted(self, accepted: dict[str, Baseline]) -> None:
        """Put accepted baselines into the committed suite file (under the suite's lock: xdist workers)."""
        if not self.spec.suite_file or not accepted:
            return
        with _flock(self.store.root / "pytest" / f"{self.key}.lock"):
            path = Path(self.spec.suite_file)
            entries = import_suite(path) if path.exists() else []
            entries = [e.model_copy(update={"baseline": accepted[e.case.id]}) if e.case.id in accepted else e
                       for e in entries]
            export_suite(entries, path)

    def _generation_line(self) -> str:
        runs = [rid for rid in self.store.run_ids() if rid.startswith(self.prefix)]
        parts = []
        if self.prefix + "replay" in runs:
            parts.append(f"replayed {len(self.store.latest(run_id=self.prefix + 'replay'))} stored case(s) first")
        if self.prefix + "gen" in runs:
            latest = self.store.latest(run_id=self.prefix + "gen").values()
            counts = {c.value: sum(r.case_class is c for r in latest) for c in CLASS_ORDER}
            found = ", ".join(f"{k} {n}" for k, n in counts.items() if n) or "nothing"
            open_run = not self.store.run(self.prefix + "gen").finished
            early = " (stopped early)" if open_run else ""
            parts.append(f"probed {sum(counts.values())} new case(s): {found}{early}")
        return "; ".join(parts)

    def _removed_property(self) -> str:
        """The cases validation removed in this session's generation run, as the terminal summary
        names them (``{"count": N, "store": DIR, "cases": [[id, prompt, reason], ...]}``, at most
        :data:`SHOWN_REMOVED` cases); empty when none was removed.
        """
        import json

        from frontier_qa.reports.explain import removal
        from frontier_qa.reports.summary import invalid_cases

        if self.prefix + "gen" not in self.store.run_ids():
            return ""
        removed = invalid_cases(self.store.latest(run_id=self.prefix + "gen").values())
        if not removed:
            return ""
        return json.dumps({"count": len(removed), "store": str(self.store.root),
                           "cases": [list(removal(r)) for r in removed[:SHOWN_REMOVED]]}, ensure_ascii=False)

    def _empty_reason(self) -> str:
        """Why the suite has no items; :attr:`unjudged` says whether that means nothing could be judged."""
        wanted = "/".join(self.spec.classes) + " or guard"
        if self.generation:
            found = [r for rid in self.store.run_ids() if rid.startswith(self.prefix)
                     for r in self.store.case_records(run_id=rid)]
            judged = [r for r in found if r.case_class not in (CaseClass.INVALID, CaseClass.UNRESOLVED)]
            self.unjudged = not judged  # an empty curriculum, every case invalid, or the target down
            return f"probing found no {wanted} cases for {self.spec.name!r} ({self.generation})"
        known = self.view.known if self.view is not None else 0
        if known:
            return (f"none of the {known} stored case(s) of {self.spec.name!r} is a {wanted} case "
                    "(run pytest --frontier-mode=generate to look for more)")
        self.unjudged = True
        return (f"nothing to replay: no stored case for {self.spec.name!r} in {self.store.root} "
                "(run pytest --frontier-mode=generate to find some, or commit a suite= file)")

    # -- test time ---------------------------------------------------------------------------------

    def frontier_case(self, case_id: str) -> FrontierCase:
        """The item's case: found during collection, or replayed now (once per process)."""
        if case_id in self.cases:
            return self.cases[case_id]
        assert self.view is not None
        base = self.view.baselines.get(case_id)
        if case_id in self.view.found:
            new = self.view.found[case_id]
            comparison = from_record(new, base) if new.verdict is not None else None
        else:
            assert case_id in self.view.stored
            new, comparison = self._replay(case_id)
        accepted = None
        if self.session.options.accept:
            accepted = self._accept(case_id)
        case = FrontierCase(self, base, new, comparison, guard=case_id in self.view.guards, accepted=accepted)
        self.cases[case_id] = case
        return case

    def _accept(self, case_id: str) -> Baseline:
        from frontier_qa.probing.accept import accept_case

        parts = self.parts()
        run = self._replay_run()
        done = run_sync(accept_case(self.store, case_id, run.prober, self.settings(), target=parts.target,
                                    run_id=f"{self.prefix}accept-{self.session.worker}"))
        self.store.append_baselines([done.baseline])
        self._accepted[case_id] = done.baseline
        return done.baseline

    def _replay_run(self) -> ProbeRun:
        if self._run is None:
            parts = self.parts()
            self._run = ProbeRun(parts.target, self.store, self.settings(), judge=parts.judge, sandbox=None,
                                 progress=None)
            run_sync(self._run.start(f"{self.prefix}r-{self.session.worker}", False, "replay"))
        return self._run

    def _replay(self, case_id: str) -> tuple[CaseRecord, Any]:
        assert self.view is not None and self.items is not None
        run = self._replay_run()
        if self._plan is None:  # fresh sample indices for every case this process may replay
            lazy = [self.view.stored[i] for i, _ in self.items if i not in self.view.found]
            self._plan = {item.case.id: item for item in run.replay_plan(lazy, False)}
            run.replay_size = len(self.items)  # the suite's size, known at collection: each item decides alone
        item = self._plan[case_id]
        if case_id in self.view.baselines:  # the suite's baselines (a committed suite's, or accepted ones)
            item = replace(item, baseline=self.view.baselines[case_id])
        run_sync(run.replay([item]))
        record = run.recorded.get(case_id)
        stopped = run.stop_reason
        if record is None or (record.case_class is CaseClass.UNRESOLVED and stopped):
            why = f"frontier-qa stopped before case {case_id} was decided: {stopped or 'no samples'}"
            spent = getattr(self.parts().target, "snapshot", None)
            why += f" ({spent().describe()})" if callable(spent) else ""
            if stopped == STOP_UNAVAILABLE:
                raise FrontierUnjudged(f"{why}: {run.stop_detail or 'the target stopped answering'}")
            pytest.skip(why)
        comparison = next(c for c in reversed(run.comparisons) if c.case_id == case_id)
        return record, comparison

    def sample(self, case: Case, n: int, start: int, sampling: Sampling | None) -> list[Trajectory]:
        parts = self.parts()
        return run_sync(parts.target.sample(case, n, sampling or self.settings().run_sampling(), start=start))

    def finish(self) -> None:
        """End this process's replay run, write accepted baselines into the suite file, close the models."""
        try:
            self._write_accepted(self._accepted)
            if self._run is not None:
                self._run.finish()
                self._run.release()
        finally:
            if self._parts is not None:
                run_sync(self._parts.aclose())


@dataclass(frozen=True)
class _Ref:
    """The parameter of one test item: which suite, which case (``None``: no cases)."""

    suite: str
    case_id: str | None


class Session:
    """The plugin's state in one pytest process (the controller, a worker, or a plain run).

    Args:
        config: the pytest config.
        options: the checked ``--frontier-*`` options.
    """

    def __init__(self, config: pytest.Config, options: FrontierOptions) -> None:
        self.config = config
        self.options = options
        workerinput = getattr(config, "workerinput", None)
        self.uid = str(workerinput["testrunuid"] if workerinput else uuid.uuid4().hex)[:12]
        self.worker = str(workerinput["workerid"]) if workerinput else "main"
        self.root = Path(config.rootpath)
        self.suites: dict[str, Suite] = {}
        # config layers from the options: {"ini": [...], "cli": [...]}
        self.option_layers: dict[str, list[Override]] = {"ini": [], "cli": []}
        for name, key in (*_OPTION_KEYS.items(), ("store", "store")):
            if name in options.values:
                value, source = options.values[name], options.sources[name]
                if name == "store":
                    value = str(self.path(value, source))
                elif name == "target":
                    value = absolute_target(value, self.base(source))
                self.option_layers[source].append(Override(key, value, options.labels[name]))

    def base(self, source: str) -> Path:
        """The folder an option's relative paths start from: the invocation directory for a
        ``--frontier-*`` flag (as any command line), pytest's rootdir for an ini key (as the ini
        file's other paths), so the same ini works wherever pytest is started.
        """
        return Path(self.config.invocation_params.dir) if source == "cli" else self.root

    def path(self, value: str, source: str) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.base(source) / path

    def suite(self, spec: SuiteSpec) -> Suite:
        known = self.suites.get(spec.name)
        if known is None:
            known = self.suites[spec.name] = Suite(self, spec)
        elif known.spec.fingerprint != spec.fingerprint:
            raise FrontierUsageError(
                f"@pytest.mark.frontier on {spec.where}: the suite name {spec.name!r} is already used by "
                f"{known.spec.where} with other arguments\n"
                "  fix: give one of them another name=, or the same arguments")
        return known

    def parametrize(self, metafunc: pytest.Metafunc, marker: pytest.Mark) -> None:
        """Turn the marked test into one item per case of its suite."""
        where = metafunc.definition.nodeid
        if FIXTURE not in metafunc.fixturenames:
            raise FrontierUsageError(f"@pytest.mark.frontier on {where}: the test does not take the {FIXTURE!r} "
                                     f"fixture\n  fix: add a {FIXTURE} parameter to the test function")
        # the marker's relative paths start at its test file's folder
        base = Path(metafunc.definition.path).parent
        suite = self.suite(parse_marker(marker.args, marker.kwargs, where, base))
        items = suite.collect()
        if not items:
            marks = () if suite.unjudged else (pytest.mark.skip(reason=suite.empty_reason),)
            metafunc.parametrize(FIXTURE, [pytest.param(_Ref(suite.spec.name, None), id="no-cases", marks=marks)],
                                 indirect=True)
            return
        metafunc.parametrize(FIXTURE, [_Ref(suite.spec.name, cid) for cid, _ in items],
                             ids=[case_test_id(topic, cid) for cid, topic in items], indirect=True)

    def _properties(self, suite: Suite, target: str | None = None) -> list[tuple[str, Any]]:
        limit = suite.config.gate.max_unresolved_share
        shown = target or str(suite.config.target.options.get("id") or suite.config.target.spec)
        props = [("frontier_suite", suite.spec.name), ("frontier_target", shown),
                 ("frontier_mode", self.options.mode), ("frontier_unresolved_limit", "" if limit is None else limit)]
        if suite.generation:
            props.append(("frontier_generation", suite.generation))
        if suite.removed:
            props.append(("frontier_removed", suite.removed))
        return props

    def case_for(self, request: pytest.FixtureRequest) -> FrontierCase:
        """The ``frontier_case`` fixture's value for a test item."""
        ref = getattr(request, "param", None)
        if not isinstance(ref, _Ref):
            raise FrontierUsageError(f"{request.node.nodeid}: {FIXTURE!r} is only given to tests marked "
                                     "@pytest.mark.frontier(...)\n  fix: add the marker")
        suite = self.suites[ref.suite]
        node = request.node
        if ref.case_id is None:
            if suite.unjudged:  # an error, not a skip: nothing was judged, the session must not pass
                node.user_properties.extend([*self._properties(suite), ("frontier_unjudged", suite.empty_reason),
                                             ("frontier_unjudged_kind", "run")])
                raise FrontierUnjudged(suite.empty_reason)
            node.user_properties.extend([*self._properties(suite), ("frontier_skip", suite.empty_reason)])
            pytest.skip(suite.empty_reason)
        try:
            case = suite.frontier_case(ref.case_id)
        except pytest.skip.Exception as stop:  # sampling stopped (budget) before the case was decided
            node.user_properties.extend([*self._properties(suite), ("frontier_case_id", ref.case_id),
                                         ("frontier_unjudged", str(stop.msg)), ("frontier_unjudged_kind", "case")])
            raise
        except FrontierUnjudged as err:
            node.user_properties.extend([*self._properties(suite), ("frontier_case_id", ref.case_id),
                                         ("frontier_unjudged", str(err)), ("frontier_unjudged_kind", "run")])
            raise
        case = case.for_item(replay_command(request.config, [node.nodeid]))
        node.user_properties.extend([*self._properties(suite, case.replayed.target_id), *case.properties()])
        node.stash[CASE_KEY] = case
        return case

    def finish(self) -> None:
        for suite in self.suites.values():
            suite.finish()
