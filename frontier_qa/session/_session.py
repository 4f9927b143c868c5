"""One front door: a probe configuration opened once, behind every way in.

The ``frontier-qa`` commands, the pytest plugin and the Python API all go through a
:class:`Session`. It opens the configuration's target, curriculum, judge and store
(:func:`~frontier_qa.config.build_probe`); probes or replays through the engine
(:mod:`frontier_qa.probing._engine`); accepts baselines; and judges what a run did, once, as an
:class:`Outcome`: the records, the replay verdicts, what each model spent, the run's health and
the gate's decision (:mod:`frontier_qa.reports._gate`, with the thresholds of the mode: ``gate``
for a probe, ``replay.gate`` for a replay), the next steps, and the exit code. The console
summary, ``cases.jsonl``, the reports, JUnit XML and the pytest terminal summary all render that
one outcome, so their numbers agree::

    import asyncio
    from frontier_qa.session import Session

    async def main() -> int:
        async with Session.load("frontier-qa.yaml") as session:
            outcome = await session.probe()
        session.write(outcome)
        print("\\n".join(outcome.lines()))
        return outcome.exit_code

    raise SystemExit(asyncio.run(main()))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from frontier_qa.config import Override, ProbeConfig, ProbeParts, build_probe, gate_thresholds, load_config
from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Curriculum
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.reports import RunFacts, write_reports
from frontier_qa.reports._gate import GateThresholds
from frontier_qa.session._outcome import Invocation, Meter, Outcome, judge
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import Comparison
from frontier_qa.store._lines import encode_line
from frontier_qa.store._records import CaseClass, CaseRecord, RunRecord, SuiteCase
from frontier_qa.store._stop_reason import StopReason
from frontier_qa.target import Case

if TYPE_CHECKING:
    from frontier_qa.probing._reconcile import Reconciliation

CASES_FILE = "cases.jsonl"


# --- the session ---------------------------------------------------------------------------------------


class Session:
    """A configuration opened once: every probe, replay, accept and report of one way in.

    Args:
        config: the resolved configuration (:func:`~frontier_qa.config.load_config`).
        curriculum: also build the config's curriculum (``False`` for replays and accepts).
        invocation: how the user runs frontier-qa, for the next steps (default: the CLI, no flags).

    The models open on first use (:attr:`parts`) and close with :meth:`aclose` (or ``async with``).
    """

    def __init__(self, config: ProbeConfig, *, curriculum: bool = True, invocation: Invocation | None = None) -> None:
        self.config = config
        self.store = CaseStore(config.store)
        self.invocation = invocation or Invocation()
        self._curriculum = curriculum
        self._parts: ProbeParts | None = None
        self.changes: tuple[str, ...] = ()  # what refreshing the stored cases from their file found (once)

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, overrides: Iterable[Override] = (), *,
             env: Mapping[str, str] | None = None, curriculum: bool = True,
             invocation: Invocation | None = None) -> Session:
        """A session of the config at ``path`` with ``overrides`` (flags > file > environment > defaults)."""
        return cls(load_config(path, overrides, env), curriculum=curriculum, invocation=invocation)

    @property
    def parts(self) -> ProbeParts:
        """The target, curriculum, settings, store, validator and judge, opened on first use."""
        if self._parts is None:
            self._parts = build_probe(self.config, curriculum=self._curriculum)
        return self._parts

    @property
    def opened(self) -> bool:
        """Whether the models were opened (:attr:`parts`)."""
        return self._parts is not None

    def settings(self, **changes: Any) -> ProbeSettings:
        """The engine's settings, with ``changes``."""
        return replace(self.parts.settings, **changes) if changes else self.parts.settings

    def meter(self, curriculum: Any = None) -> Meter:
        """A meter of the session's models from now on (``curriculum``: the one a probe asks)."""
        parts = self.parts
        critic = getattr(parts.validator.critic, "model", None)
        return Meter({"target": parts.target, "curriculum": curriculum or parts.curriculum, "judge": parts.judge,
                      "critic": critic, "validity": getattr(parts.validator.critic, "own_model", None)})

    # -- current inputs ------------------------------------------------------------------------------

    def cases_file(self) -> Path | None:
        """The cases file the curriculum reads, if it is one (``curriculum.type: file``)."""
        c = self.config.curriculum
        return Path(c.path) if c.type == "file" and c.path else None

    async def refresh(self, *, tag: Callable[[Case], Case] | None = None) -> Reconciliation | None:
        """Bring the stored cases of the curriculum's cases file up to the file as it is now, before
        anything is replayed (:func:`~frontier_qa.probing._reconcile.refresh_store`): a changed reference
        re-judges the stored samples with no new call, a changed prompt is probed again, a removed row
        is not replayed; what changed is said once (:attr:`changes`). ``None`` without a cases file.

        Args:
            tag: what the caller does to each case before it is stored (the pytest plugin tags its suite).
        """
        from frontier_qa.curricula._file import read_proposals
        from frontier_qa.probing._reconcile import refresh_store

        path = self.cases_file()
        if path is None or not path.is_file():
            return None
        proposals = read_proposals(path)
        if tag is not None:
            proposals = [replace(p, case=tag(p.case)) for p in proposals]
        parts = self.parts
        found = await refresh_store(self.store, proposals, parts.settings, target_id=parts.target.id,
                                    source=f"file:{path.name}")
        self.changes = tuple(found.messages())
        return found

    def _replayable(self, found: Reconciliation) -> list[CaseRecord]:
        """The target's stored cases a probe replays first: every one but those its file dropped or
        changed past re-judging (those are probed again, as new observations).
        """
        from frontier_qa.store._baselines import base_target_id
        from frontier_qa.store._lines import latest_by

        skip = {r.id for r in found.removed} | {r.case_id for r in found.reprobe}
        target = self.parts.target.id
        mine = (r for r in self.store.case_records() if base_target_id(r.target_id, r.target_version) == target)
        return [r for r in latest_by(mine, lambda r: r.id).values()
                if r.id not in skip and r.case_class is not CaseClass.INVALID]

    # -- running -------------------------------------------------------------------------------------

    def resume_id(self, wanted: str | None) -> str:
        """The run to resume: the one named, or this shard's latest interrupted run of the target
        that no live process is still writing.

        Raises:
            ConfigError: there is none.
        """
        if wanted:
            return wanted
        parts = self.parts
        shard = parts.settings.shard
        index = shard.index if shard else 1
        open_runs = [r for r in self.store.interrupted_runs()
                     if r.shard_index == index and r.target_id == parts.target.id]
        idle = [r for r in open_runs if not self.store.is_live(r.run_id, index)]
        if not idle:
            live = f" ({len(open_runs)} still running: {', '.join(r.run_id for r in open_runs)})" if open_runs else ""
            raise ConfigError(f"no interrupted run of target {parts.target.id!r} (shard {index}) in {self.store.root}"
                              f"{live}",
                              hint="start a new run without --resume, or name one: --resume RUN_ID (--wait waits "
                              "for a running one)")
        return idle[-1].run_id

    async def probe(self, *, run_id: str | None = None, resume: bool = False, progress: Any = None,
                    wait: bool | float = False, curriculum: Curriculum | None = None,
                    settings: ProbeSettings | None = None,
                    replay_cases: Sequence[CaseRecord | SuiteCase] | None = None) -> Outcome:
        """Probe the target with the curriculum (stored cases replayed first, as configured); judged.

        Args:
            run_id: the run's id (default: a fresh one); with ``resume`` the run to continue.
            resume: continue an interrupted run.
            progress: the engine's progress callback.
            wait: wait for another process writing the same run (``True``, or seconds).
            curriculum: a curriculum instead of the config's.
            settings: settings instead of the config's (:meth:`settings`).
            replay_cases: replay these stored cases first instead of the store's (a suite's).
        """
        from frontier_qa.probing._engine import probe

        parts = self.parts
        cur = curriculum if curriculum is not None else parts.curriculum
        if cur is None:
            raise ConfigError("no curriculum to probe with", hint="pass --curriculum FILE (or "
                              "'prompted:MODEL_SPEC'), or set 'curriculum:' in the config")
        settings = settings or parts.settings
        if replay_cases is None and curriculum is None and not resume:
            found = await self.refresh()  # the cases file as it is now, before stored cases are replayed
            if found is not None and settings.replay_first:
                replay_cases = self._replayable(found)
        meter = self.meter(cur)
        result = await probe(parts.target, cur, settings, store=self.store, run_id=run_id,
                             resume=resume, validator=parts.validator, judge=parts.judge, progress=progress, wait=wait,
                             meter=meter, replay_cases=replay_cases)
        facts = RunFacts(mode="probe", stop_reason=result.stop_reason, stop_detail=result.stop_detail,
                         stop_source=result.stop_source, candidates=result.candidates, target=parts.target.id)
        title = f"frontier-qa probe: run {result.run_id}, target {self.shown()}, stopped: {result.stop_reason}"
        return self._budgeted(self.judge("probe", result.records, result.comparisons, runs=[result.run], facts=facts,
                                         title=title))

    async def replay(self, *, cases: Sequence[CaseRecord | SuiteCase] | None = None, run_id: str | None = None,
                     progress: Any = None, wait: bool | float = False,
                     settings: ProbeSettings | None = None) -> Outcome:
        """Hold stored cases (or ``cases``: records, a committed suite's entries) to their baselines; judged.

        The stored cases are first brought up to the config's cases file as it is now (:meth:`refresh`):
        a fixed reference is judged again from the stored samples, and a case the file dropped or
        changed past that is not replayed, and said so (:attr:`changes`).
        """
        from frontier_qa.probing._engine import replay

        parts = self.parts
        skip: set[str] = set()
        if cases is None:
            found = await self.refresh()
            if found is not None:
                skip = {r.id for r in found.removed} | {r.case_id for r in found.reprobe}
        result = await replay(parts.target, self.store, settings or parts.settings, run_id=run_id, cases=cases,
                              judge=parts.judge, progress=progress, wait=wait, meter=self.meter(), skip=skip,
                              recheck=self.generators() if cases is None else None)
        stopped = None if result.stop_reason == StopReason.DONE else result.stop_reason
        facts = RunFacts(mode="replay", stop_reason=stopped, stop_detail=result.stop_detail, stop_source="target",
                         planned=result.planned, target=parts.target.id)
        title = f"frontier-qa replay: run {result.run_id}, target {self.shown()}, {len(result.records)} case(s)"
        return self._budgeted(self.judge("replay", result.records, result.comparisons, runs=[result.run], facts=facts,
                                         title=title))

    def generators(self) -> Any:
        """The config's generators curriculum, whose boundaries a replay searches again; ``None`` for
        any other curriculum (a replay builds no curriculum that needs a model).
        """
        if self.config.curriculum.type != "generators":
            return None
        parts = self.parts
        if parts.curriculum is not None:
            return parts.curriculum
        from frontier_qa.config._build import build_generators

        return build_generators(self.config)

    def _budgeted(self, outcome: Outcome) -> Outcome:
        """The outcome with the run's budget line (every model shares one budget)."""
        snapshot = getattr(self.parts.target, "snapshot", None)
        return replace(outcome, budget=snapshot().describe()) if callable(snapshot) else outcome

    def judge(self, mode: str, records: Iterable[CaseRecord], comparisons: Iterable[Comparison] | None = None, *,
              runs: Sequence[RunRecord] = (), facts: RunFacts | None = None, title: str | None = None,
              gate_of: str | None = None) -> Outcome:
        """Judge what one or more runs recorded (:func:`judge`) with this config's gate: ``gate``
        for a probe or a merge, ``replay.gate`` for a replay (``gate_of``: ``"probe"`` or
        ``"replay"`` picks one).
        """
        return judge(mode, records, self.thresholds(gate_of or mode), comparisons=comparisons, runs=runs,
                     facts=facts, title=title, invocation=self.invocation, changes=self.changes)

    def thresholds(self, mode: str) -> GateThresholds:
        """The gate's limits of a mode: ``replay.gate`` for ``replay``, else ``gate``."""
        return gate_thresholds(self.config.replay.gate if mode == "replay" else self.config.gate)

    def shown(self) -> str:
        """The target as the summary names it: its id and version."""
        target = self.parts.target
        version = getattr(target, "version", None)
        found = version() if callable(version) else None
        return f"{target.id} (version {found})" if found else target.id

    # -- what a run leaves behind ---------------------------------------------------------------------

    def out_dir(self) -> Path:
        """``output.dir``, refused before a run starts when it names an existing file."""
        out = Path(self.config.output.dir)
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out {out} is a file; the reports go into a folder",
                              hint="give --out a folder name (it is created), e.g. --out frontier-qa-report")
        return out

    def write(self, outcome: Outcome, out: str | os.PathLike[str] | None = None) -> dict[str, Path]:
        """Write ``cases.jsonl`` and the configured reports of ``outcome`` into ``out`` (default
        ``output.dir``); the paths by format.
        """
        from frontier_qa.store._baselines import history

        folder = Path(out) if out is not None else self.out_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"cannot create the report folder {folder}: {err.strerror}",
                              hint="give --out a writable folder; the run's cases are kept in the store "
                              "(`frontier-qa export` or a replay writes them out again)") from None
        cases = folder / CASES_FILE
        tmp = cases.with_name(f".{CASES_FILE}.{os.getpid()}.tmp")
        tmp.write_bytes(b"".join(encode_line(r) for r in sorted(outcome.records, key=lambda r: r.id)))
        os.replace(tmp, cases)
        past = history(self.store, [r.id for r in outcome.records]) if self.store.runs_dir.is_dir() else None
        from frontier_qa.config import build_settings

        band = build_settings(self.config).band
        output = self.config.output
        written, _ = write_reports(folder, outcome.records, outcome.run, formats=output.formats,
                                   comparisons=outcome.comparisons, frontier_as_failure=output.frontier_as_failure,
                                   band=(band.low, band.high), facts=outcome.facts, history=past, gate=outcome.gate,
                                   spend=outcome.spend, candidates=outcome.candidates, next_steps=outcome.next_steps,
                                   changes=outcome.changes)
        return {"cases": cases, **written}

    # -- baselines -----------------------------------------------------------------------------------

    async def accept(self, case_ids: Sequence[str] | None, *, sample: bool = True,
                     run_id: str | None = None) -> list[Any]:
        """Make what the agent does now the baseline of these cases (``None``: every case of the target).

        With no target configured, only what was observed is pooled
        (:func:`~frontier_qa.probing._baseline_accept.accept`).
        """
        from frontier_qa.probing._baseline_accept import accept
        from frontier_qa.store._case_store import new_run_id

        rid = run_id or f"accept-{new_run_id()}"
        if not self.config.target.spec:
            from frontier_qa.config import build_settings

            return await accept(self.store, case_ids, build_settings(self.config), target=None, sample=False,
                                run_id=rid)
        parts = self.parts
        return await accept(self.store, case_ids, parts.settings, target=parts.target, sample=sample, run_id=rid)

    # -- closing -------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every model the session opened (the target, the curriculum's model, critic, judge)."""
        if self._parts is not None:
            parts, self._parts = self._parts, None
            await parts.aclose()

    def close(self) -> None:
        """:meth:`aclose` where no event loop runs."""
        if self._parts is not None:
            import asyncio

            asyncio.run(self.aclose())

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


__all__ = ["CASES_FILE", "Session"]
