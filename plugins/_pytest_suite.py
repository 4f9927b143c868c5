"""The pytest side of a marked test's suite: its items from the store, generated and replayed
through a :class:`~frontier_qa.session.Session` (the same front door as ``frontier-qa probe``).

One :class:`Suite` per ``@pytest.mark.frontier`` (per suite ``name``) and pytest process. Its items
are the suite's cases (:mod:`frontier_qa.store._suites`: findings, guards, a committed ``suite=``
file's entries), each held to its baseline.

**Collection is deterministic** (the same items on every xdist worker). Items come only from the
store, read during collection, before any test runs. Probing for new cases (``generate`` mode, or
``auto`` with nothing stored) happens during collection, because the new cases are test items: it
runs once per session behind an ``flock`` on ``<store>/pytest/<suite>.lock``, as one run
(``pytest-<suite>-<session>-gen``) that replays the stored cases first (Hypothesis: stored examples
first) and then probes the curriculum; every other process finds that run and reads the same records
back. The session id is xdist's ``testrunuid`` (shared by all workers), else a fresh one.

**Replays at test time.** A stored case not replayed during collection is replayed by its own test
item (:class:`~frontier_qa.session._suite_run.Replayer`, run ``pytest-<suite>-<session>-r-<worker>``).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from frontier_qa._expectations import with_expect
from frontier_qa.config import Override, ProbeConfig, load_config
from frontier_qa.config._keywords import SuiteSpec, absolute_target, suite_key, target_label
from frontier_qa.errors import FrontierQAError
from frontier_qa.plugins._pytest_marker import parse_marker
from frontier_qa.plugins.pytest_plugin import (
    CASE_KEY,
    FIXTURE,
    FrontierOptions,
    FrontierUnjudged,
    FrontierUsageError,
    case_test_id,
    replay_command,
)
from frontier_qa.session import Replayer, Session, SuiteCurriculum
from frontier_qa.session._frontier_case import FrontierCase
from frontier_qa.session._suite_run import run_masked as run_sync
from frontier_qa.session._suite_run import tag
from frontier_qa.store._comparison import from_record
from frontier_qa.store._records import Baseline, CaseRecord, SuiteCase
from frontier_qa.store._stop_reason import STOP_UNAVAILABLE
from frontier_qa.store._suites import (
    SuiteView,
    read_suite,
    suite_file_entries,
    suite_lock,
    tagged,
    write_accepted,
    write_suite_file,
)
from frontier_qa.target import Case, Sampling, Trajectory

# --frontier-* option -> config key (store and config are handled apart)
_OPTION_KEYS = {"target": "target.spec", "seed": "probing.seed", "budget_calls": "budget.max_calls",
                "max_cost_usd": "budget.max_cost_usd", "k": "probing.k"}


class Suite:
    """The cases of one marked suite in this process: collected, generated, replayed."""

    def __init__(self, owner: PluginSession, spec: SuiteSpec) -> None:
        self.owner = owner
        self.spec = spec
        self.prefix = f"pytest-{suite_key(spec.name)}-{owner.uid}-"
        self.config = self._load_config()
        self.session = Session(self.config, curriculum=spec.curriculum is None and self._names_curriculum())
        self.store = self.session.store
        self.view: SuiteView | None = None
        self.items: list[tuple[str, str]] | None = None  # (case id, topic), in test order
        self.cases: dict[str, FrontierCase] = {}
        self.generated = False
        self.empty_reason = ""
        self.unjudged = False  # no items because nothing could be judged
        self._earlier: list[CaseRecord] | None = None
        self.removed: frozenset[str] = frozenset()  # stored cases gone from the cases file
        self.reprobe: dict[str, Case] = {}  # stored cases whose task changed in the cases file, as it is now
        self._replayer: Replayer | None = None
        self._accepted: dict[str, Baseline] = {}

    def where(self) -> str:
        return f"@pytest.mark.frontier on {self.spec.where}"

    def tag(self, case: Case) -> Case:
        """A case of this suite: tagged with its name, and given the marker's ``expect=`` when it has none."""
        return with_expect(tag(case, self.spec.name), self.spec.expect, self.spec.base)

    def _names_curriculum(self) -> bool:
        c = self.config.curriculum
        return bool(self.spec.names_curriculum or c.path or c.model or c.type == "generators")

    def _load_config(self) -> ProbeConfig:
        options = self.owner.options
        # later layers win: ini keys < the marker < --frontier-* flags
        layers = [*self.owner.option_layers["ini"], *self.spec.overrides, *self.owner.option_layers["cli"]]
        path: str | Path | None = self.spec.config_path
        if options.sources.get("config") == "cli" or (path is None and "config" in options.values):
            path = self.owner.path(options.values["config"], options.sources["config"])
        try:
            config = load_config(path, layers)
        except FrontierQAError as err:
            raise FrontierUsageError(f"{self.where()}: {err}") from None
        store = Path(config.store).expanduser()
        # a store not named by a flag, ini key or the marker lives at pytest's rootdir, wherever pytest is
        # started; absolute, so that a test changing directory does not move it
        update: dict[str, Any] = {"store": str(store if store.is_absolute() else self.owner.root / store)}
        label = config.target.spec and target_label(config.target.spec, self.owner.root)
        if label != config.target.spec and "id" not in config.target.options:
            # the agent file is found by its absolute path, but named as the user wrote it
            update["target"] = config.target.model_copy(update={"options": {**config.target.options, "id": label}})
        return config.model_copy(update=update)

    def settings(self) -> Any:
        # sharding is xdist's job here, and every item is replayed: no shard, no replay cap
        try:
            return self.session.settings(shard=None, max_replay=None)
        except FrontierQAError as err:
            raise FrontierUsageError(f"{self.where()}: {err}") from None

    # -- collection -------------------------------------------------------------------------------

    def collect(self) -> list[tuple[str, str]]:
        """The suite's test items, ``(case id, topic)``, generating first when the mode says so."""
        if self.items is not None:
            return self.items
        mode = self.owner.options.mode
        stored = self.store.runs_dir.is_dir()
        if not self.owner.config.option.collectonly and (stored or mode != "replay"):
            with suite_lock(self.store, suite_key(self.spec.name)):
                if stored:
                    self._refresh()
                if mode != "replay" and not any(rid.startswith(self.prefix) for rid in self.store.run_ids()):
                    view = self._read()  # nobody of this session generated yet
                    if mode == "generate" or not view.known:
                        self._generate(view)
        self.generated = self.prefix + "gen" in self.store.run_ids()
        self.view = view = self._read()
        records = {**view.stored, **view.found}
        self.items = sorted(((cid, records[cid].case.topic) for cid in view.ids), key=lambda p: (p[1], p[0]))
        if not self.items:
            self.empty_reason = self._empty_reason(view)
        return self.items

    def _refresh(self) -> None:
        """The stored cases brought up to the suite's cases file as it is now (a fixed reference is
        judged again from the stored samples; a changed prompt is probed again; a removed row is no
        item): what changed is said once, by the process that found it.
        """
        if self.spec.curriculum is not None or self.session.cases_file() is None:
            return
        try:
            found = run_sync(self.session.refresh(tag=self.tag))
        except FrontierQAError as err:
            raise FrontierUsageError(f"{self.where()}: {err}") from None
        if found is not None:
            self.removed = frozenset(r.id for r in found.removed)
            self.reprobe = {r.case_id: r.proposal.case for r in found.reprobe if r.proposal is not None}

    def _read(self) -> SuiteView:
        if self._earlier is None:  # earlier sessions' records: read the whole store once
            self._earlier = [r for r in tagged(self.store.case_records(), self.spec.name)
                             if not r.run_id.startswith(self.prefix)]
        now = [r for rid in self.store.run_ids() if rid.startswith(self.prefix)
               for r in tagged(self.store.case_records(run_id=rid), self.spec.name)]
        entries = []
        if self.spec.suite_file is not None and Path(self.spec.suite_file).exists():
            try:
                entries = suite_file_entries(self.spec.suite_file, self.spec.name)
            except FrontierQAError as err:
                raise FrontierUsageError(f"{self.where()}: suite={self.spec.suite_file}: {err}") from None
        count = self.config.replay.guards if self.spec.guards is None else self.spec.guards
        view = read_suite(self.store, self.spec.name, classes=self.spec.classes, guards=count, entries=entries,
                          earlier=self._earlier, now=now, exclude=self.removed, repick=self.owner.options.repick,
                          request=self.owner.uid)
        if self.spec.expect is not None:  # a case stored before the marker had expect= is held to it too
            given = {cid: r.model_copy(update={"case": self.tag(r.case)})
                     for cid, r in view.stored.items() if r.case.expect is None}
            view = replace(view, stored={**view.stored, **given})
        if not self.reprobe:
            return view
        # a case whose prompt changed is asked as it is now, held to no baseline (its old one was for the old task)
        changed = {cid: SuiteCase(case=case) for cid, case in self.reprobe.items()
                   if cid in view.ids and cid not in view.found}
        return replace(view, stored={**view.stored, **changed},
                       baselines={i: b for i, b in view.baselines.items() if i not in changed})

    def _generate(self, view: SuiteView) -> None:
        if not self._names_curriculum():
            raise FrontierUsageError(
                f"{self.where()}: no curriculum to generate cases from (mode {self.owner.options.mode})\n"
                "  fix: add curriculum='cases.jsonl' (or 'prompted:MODEL_SPEC') to the marker, "
                "or run with --frontier-mode=replay")
        try:
            inner = self._curriculum()
        except FrontierQAError as err:
            raise FrontierUsageError(f"{self.where()}: {err}") from None
        known = view.ids - set(self.reprobe)  # a changed prompt is probed again, as a new observation
        curriculum = SuiteCurriculum.of(inner, self.spec.name, known, self.tag)
        olds = [view.stored[i] for i in sorted(known) if i in view.stored]
        try:
            run_sync(self.session.probe(run_id=self.prefix + "gen", curriculum=curriculum,
                                        settings=replace(self.settings(), replay_first=False), replay_cases=olds))
        except FrontierQAError as err:
            raise FrontierUsageError(f"{self.where()}: probing failed: {err}") from None
        finally:
            if self.spec.curriculum is not None:  # the user's own; the session closes the one it opened
                run_sync(curriculum.aclose())
        if self.spec.suite_file:
            write_suite_file(self.spec.suite_file, self._read())

    def _curriculum(self) -> Any:
        made = self.spec.curriculum
        if made is None:
            return self.session.parts.curriculum
        if not hasattr(made, "propose"):
            made = made()  # a factory: called only now, when cases are generated
        if not (hasattr(made, "propose") and hasattr(made, "observe")):
            raise FrontierUsageError(f"{self.where()}: the curriculum factory returned {made!r}, not a Curriculum\n"
                                     "  fix: return an object with async propose(n) and observe(outcomes)")
        return made

    def _empty_reason(self, view: SuiteView) -> str:
        """Why the suite has no items; :attr:`unjudged` says whether that means nothing could be judged."""
        wanted = "/".join(self.spec.classes) + " or guard"
        if self.generated:
            found = self.store.case_records(run_id=self.prefix + "gen")
            self.unjudged = not any(r.case_class.value not in ("invalid", "unresolved") for r in found)
            return f"probing found no {wanted} cases for {self.spec.name!r}"
        if view.known:
            return (f"none of the {view.known} stored case(s) of {self.spec.name!r} is a {wanted} case "
                    "(run pytest --frontier-mode=generate to look for more)")
        self.unjudged = True
        return (f"nothing to replay: no stored case for {self.spec.name!r} in {self.store.root} "
                "(run pytest --frontier-mode=generate to find some, or commit a suite= file)")

    # -- test time ---------------------------------------------------------------------------------

    def frontier_case(self, case_id: str) -> FrontierCase:
        """The item's case: found during collection, or replayed now (once per process)."""
        if case_id in self.cases:
            return self.cases[case_id]
        view = self.view
        assert view is not None and self.items is not None
        base = view.baselines.get(case_id)
        if case_id in view.found:
            new = view.found[case_id]
            comparison = from_record(new, base) if new.verdict is not None else None
        else:
            if self._replayer is None:  # fresh sample indices for every case this process may replay
                lazy = [view.stored[i] for i, _ in self.items if i not in view.found]
                self._replayer = Replayer(self.session, f"{self.prefix}r-{self.owner.worker}", lazy,
                                          size=len(self.items), settings=self.settings())
            record, comparison, stopped = run_sync(self._replayer.replay(case_id, base))
            if record is None or (record.case_class.value == "unresolved" and stopped):
                why = f"frontier-qa stopped before case {case_id} was decided: {stopped or 'no samples'}"
                spent = getattr(self.session.parts.target, "snapshot", None)
                why += f" ({spent().describe()})" if callable(spent) else ""
                if stopped == STOP_UNAVAILABLE:
                    raise FrontierUnjudged(f"{why}: {self._replayer.stop_detail or 'the target stopped answering'}")
                pytest.skip(why)
            new = record
        accepted = None
        if self.owner.options.accept:
            if self._replayer is None:
                self._replayer = Replayer(self.session, f"{self.prefix}r-{self.owner.worker}", [],
                                          size=len(self.items), settings=self.settings())
            accepted = self._accepted[case_id] = run_sync(self._replayer.accept(case_id))
        # the gate the suite is judged by (the probe's when this session probed): its pass^k floor, if set
        gate = self.session.thresholds("probe" if self.generated else "replay")
        case = FrontierCase(self, base, new, comparison, guard=case_id in view.guards, accepted=accepted,
                            min_pass_hat_k=getattr(gate, "min_pass_hat_k", None))
        self.cases[case_id] = case
        return case

    def sample(self, case: Case, n: int, start: int, sampling: Sampling | None) -> list[Trajectory]:
        target = self.session.parts.target
        return run_sync(target.sample(case, n, sampling or self.settings().run_sampling(), start=start))

    def properties(self, target: str | None = None) -> list[tuple[str, Any]]:
        """What the controller needs to judge the suite (it reads the store): every item carries them."""
        shown = target or str(self.config.target.options.get("id") or self.config.target.spec)
        gates = {mode: dataclasses.asdict(self.session.thresholds(mode)) for mode in ("probe", "replay")}
        return [("frontier_suite", self.spec.name), ("frontier_target", shown),
                ("frontier_mode", self.owner.options.mode), ("frontier_store", str(self.store.root)),
                ("frontier_runs", self.prefix), ("frontier_generated", "1" if self.generated else ""),
                ("frontier_items", len(self.items or ())), ("frontier_gate", json.dumps(gates)),
                ("frontier_suite_file", self.spec.suite_file or ""),
                ("frontier_changes", json.dumps(list(self.session.changes)) if self.session.changes else "")]

    def finish(self) -> None:
        """End this process's replay run, write accepted baselines into the suite file, close the models."""
        try:
            if self.spec.suite_file and self._accepted:
                with suite_lock(self.store, suite_key(self.spec.name)):
                    write_accepted(self.spec.suite_file, self._accepted)
            if self._replayer is not None:
                self._replayer.finish()
        finally:
            self.session.close()


@dataclass(frozen=True)
class _Ref:
    """The parameter of one test item: which suite, which case (``None``: no cases)."""

    suite: str
    case_id: str | None


class PluginSession:
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
                node.user_properties.extend([*suite.properties(), ("frontier_unjudged", suite.empty_reason),
                                             ("frontier_unjudged_kind", "run")])
                raise FrontierUnjudged(suite.empty_reason)
            node.user_properties.extend([*suite.properties(), ("frontier_skip", suite.empty_reason)])
            pytest.skip(suite.empty_reason)
        try:
            case = suite.frontier_case(ref.case_id)
        except pytest.skip.Exception as stop:  # sampling stopped (budget) before the case was decided
            node.user_properties.extend([*suite.properties(), ("frontier_case_id", ref.case_id),
                                         ("frontier_unjudged", str(stop.msg)), ("frontier_unjudged_kind", "case")])
            raise
        except FrontierUnjudged as err:
            node.user_properties.extend([*suite.properties(), ("frontier_case_id", ref.case_id),
                                         ("frontier_unjudged", str(err)), ("frontier_unjudged_kind", "run")])
            raise
        case = case.for_item(replay_command(request.config, [node.nodeid]))
        node.user_properties.extend([*suite.properties(case.replayed.target_id), *case.properties()])
        node.stash[CASE_KEY] = case
        return case

    def finish(self) -> None:
        for suite in self.suites.values():
            suite.finish()
