"""A named suite's cases through a session: found by a probe, replayed one at a time.

The pytest plugin's test items are a suite's cases (:mod:`frontier_qa.store._suites`). New ones
come from the user's curriculum, tagged with the suite's name and without the cases the suite
already has (:class:`SuiteCurriculum`); stored ones are replayed by their own test item, when it
runs, in one run per process (:class:`Replayer`): deselected items cost nothing, and xdist spreads
the sampling over its workers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Coroutine, Sequence
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from frontier_qa.probing._curriculum_seam import DrivesRun, Proposal
from frontier_qa.probing._curriculum_seam import Outcome as ProposalOutcome
from frontier_qa.probing._run import ProbeRun, ReplayItem
from frontier_qa.redaction import redacted_output
from frontier_qa.reports._gate import GateThresholds
from frontier_qa.runtime._aio import run_sync
from frontier_qa.session._outcome import Invocation, Meter, judge
from frontier_qa.session._outcome import Outcome as SessionOutcome
from frontier_qa.store._case_ids import case_id_for, legacy_case_id
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import Comparison
from frontier_qa.store._records import Baseline, CaseRecord, RunRecord, SuiteCase
from frontier_qa.store._suites import SUITE_KEY
from frontier_qa.target import Case, Sampling, Trajectory

T = TypeVar("T")
MAX_KNOWN_ROUNDS = 50  # proposal batches of only known cases in a row before the curriculum counts as exhausted


class Sampler(Protocol):
    """What samples the agent again for a :class:`~frontier_qa.session._frontier_case.FrontierCase`."""

    def sample(self, case: Case, n: int, start: int, sampling: Sampling | None) -> list[Trajectory]: ...


def run_masked(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine of the session to its end from synchronous code (a pytest hook); what the agent
    and its libraries print meanwhile reaches pytest's capture (or the terminal) with every secret masked.
    """
    with redacted_output():
        return run_sync(coro)


def tag(case: Case, suite: str) -> Case:
    """The case, tagged as one of suite ``suite``'s."""
    return replace(case, metadata={**case.metadata, SUITE_KEY: suite})


class SuiteCurriculum:
    """A curriculum whose proposals are tagged with the suite's name, the suite's known cases skipped
    (they are replayed, not probed again as new).

    Args:
        inner: the user's curriculum.
        suite: the suite's name.
        known: case ids to skip.
        tagger: what is done to each case (default: :func:`tag` with the suite's name; the pytest
            plugin also gives the marker's expectations to cases without their own).
    """

    def __init__(self, inner: Any, suite: str, known: frozenset[str],
                 tagger: Callable[[Case], Case] | None = None) -> None:
        self.inner = inner
        self.suite = suite
        self.known = known
        self.tag: Callable[[Case], Case] = tagger or (lambda case: tag(case, suite))
        self.name = getattr(inner, "name", type(inner).__name__)
        self.model = getattr(inner, "model", None)  # what the session's meter reads
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
                    fresh.append(replace(p, case=self.tag(p.case)))
            if fresh:
                return fresh
        return []

    def observe(self, outcomes: Sequence[ProposalOutcome]) -> None:
        self.inner.observe(outcomes)

    @classmethod
    def of(cls, inner: Any, suite: str, known: frozenset[str],
           tagger: Callable[[Case], Case] | None = None) -> SuiteCurriculum:
        """The suite's curriculum around ``inner``; one that drives the run (task generators) stays one."""
        return (SuiteGenerators if isinstance(inner, DrivesRun) else cls)(inner, suite, known, tagger)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


class SuiteGenerators(SuiteCurriculum):
    """A suite's task generators: the boundary search drives the run, and every case it records (the
    cases that show a boundary, the minimal failures) is tagged with the suite's name.
    """

    async def drive(self, run: Any) -> Sequence[Any]:
        self.inner.tag = self.tag
        return list(await self.inner.drive(run))


class Replayer:
    """Stored cases replayed one at a time, in one run: each held to its baseline when asked.

    Args:
        session: the session (its target, judge, store, settings).
        run_id: the run's id.
        cases: every case this replayer may be asked for: they share fresh sample indices (after
            every index the target ever drew for the case), planned once.
        size: the suite's size, for the regression test's false-alarm correction (every case
            decides alone, whichever are asked).
        settings: the engine's settings (default: the session's).
    """

    def __init__(self, session: Any, run_id: str, cases: Sequence[CaseRecord | SuiteCase], *, size: int,
                 settings: Any = None) -> None:
        self.session = session
        self.run_id = run_id
        self.cases = list(cases)
        self.size = size
        self._settings = settings
        self._run: ProbeRun | None = None
        self._plan: dict[str, ReplayItem] = {}
        self._meter: Meter | None = None

    async def _started(self) -> ProbeRun:
        if self._run is None:
            parts = self.session.parts
            run = ProbeRun(parts.target, self.session.store, self._settings or parts.settings, judge=parts.judge,
                           sandbox=None, progress=None)
            self._meter = self.session.meter()
            await run.start(self.run_id, False, "replay")
            self._plan = {item.case.id: item for item in run.replay_plan(self.cases, False)}
            run.replay_size = self.size
            self._run = run
        return self._run

    async def replay(self, case_id: str, baseline: Baseline | None = None) -> tuple[CaseRecord | None,
                                                                                   Comparison | None, str | None]:
        """Replay one case against ``baseline`` (default: its own, as planned): its new record,
        the verdict, and why the run stopped before deciding it (budget, target unavailable), if so.
        """
        run = await self._started()
        item = self._plan[case_id]
        if baseline is not None:
            item = replace(item, baseline=baseline)
        await run.replay([item])
        record = run.recorded.get(case_id)
        verdict = next((c for c in reversed(run.comparisons) if c.case_id == case_id), None)
        return record, verdict, run.stop_reason

    @property
    def stop_detail(self) -> str | None:
        return None if self._run is None else self._run.stop_detail

    async def accept(self, case_id: str) -> Baseline:
        """Make what the agent does now on a case its baseline (topped up to ``baseline_samples``)."""
        from frontier_qa.probing._baseline_accept import accept_case

        run = await self._started()
        parts = self.session.parts
        done = await accept_case(self.session.store, case_id, run.prober, self._settings or parts.settings,
                                 target=parts.target, run_id=f"{self.run_id}-accept")
        self.session.store.append_baselines([done.baseline])
        return done.baseline

    def finish(self) -> RunRecord | None:
        """End the run (with what the models spent) and give up its lease; ``None`` if never started."""
        if self._run is None:
            return None
        try:
            return self._run.finish(None if self._meter is None else self._meter())
        finally:
            self._run.release()


def judge_runs(store: CaseStore, prefix: str, thresholds: GateThresholds, *, generated: bool, items: int,
               undecided: Collection[str] = (), unavailable: str | None = None, accepted: Collection[str] = (),
               target: str = "", title: str, invocation: Invocation,
               changes: Sequence[str] = ()) -> SessionOutcome:
    """A suite's outcome in one pytest session: its runs (ids starting with ``prefix``), read back from
    the store, judged once (:func:`~frontier_qa.session._outcome.judge`): ``thresholds`` are the probe's
    gate when the session probed for new cases (``generated``), else the replay gate.

    Args:
        store: the suite's store.
        prefix: the run ids of the session's runs start with it.
        thresholds: the gate's limits.
        generated: whether the session probed for new cases.
        items: the suite's test items (none and not generated: nothing to replay).
        undecided: cases whose replay the run stopped before deciding (counted as unresolved).
        unavailable: why the target stopped answering, if it did.
        accepted: cases accepted now: held to what they do now, their verdict against the old
            baseline is history.
        target: the target, for messages.
        title: the summary's first line.
        invocation: how the user runs it (the next steps).
        changes: what refreshing the stored cases from their file found.
    """
    from frontier_qa.reports import RunFacts
    from frontier_qa.store._comparison import from_record
    from frontier_qa.store._lines import latest_by
    from frontier_qa.store._stop_reason import StopReason

    run_ids = [rid for rid in store.run_ids() if rid.startswith(prefix)] if store.runs_dir.is_dir() else []
    runs = [run for rid in run_ids for run in store.run_records(rid)]  # an accept's top-up has none
    latest = list(latest_by((r for rid in run_ids for r in store.case_records(run_id=rid)), lambda r: r.id).values())
    recorded = {r.id for r in latest}  # a case cut off mid-sampling is recorded unresolved: counted there
    proposed = sum(r.totals.candidates.proposed for r in runs if r.totals.candidates is not None)
    mode = "probe" if generated else "replay"
    facts = RunFacts(mode=mode, stop_reason=StopReason.UNAVAILABLE if unavailable else None, stop_detail=unavailable,
                     stop_source="target", candidates=proposed if generated else None, planned=items, target=target,
                     undecided=len(set(undecided) - recorded))
    found = (from_record(r, None) for r in latest if r.verdict is not None and r.id not in accepted)
    return judge(mode, latest, thresholds, comparisons=[c for c in found if c is not None], runs=runs, facts=facts,
                 title=title, invocation=invocation, changes=changes)


__all__ = ["MAX_KNOWN_ROUNDS", "Replayer", "Sampler", "SuiteCurriculum", "SuiteGenerators", "judge_runs",
           "run_masked", "tag"]
