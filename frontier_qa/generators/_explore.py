"""The boundary search and shrinking, run against a target inside a probe run.

:class:`GeneratorCurriculum` is what ``curriculum: {type: generators}`` builds. A probe run
hands it the run (:meth:`GeneratorCurriculum.drive`) instead of asking it for proposals, and it:

1. **searches** every axis: each ordinal knob of each generator, the other ordinal knobs at their
   easy end, once per combination of categorical values (:class:`~frontier_qa.generators._search.AxisSearch`).
   Each batch is a few fresh instances at one knob value, sampled through the run's target (so the
   rate limits, retries, cache and budget hold); the samples are scored as every case's are, and
   a generator's ``check`` decides answers that are not one value;
2. **shows** each crossing with recorded cases: an instance at the last value above the threshold
   and one at the first value below, each probed to a calibrated verdict (pass / frontier /
   failure) and stored like any case (so suites, replays and the gate see them);
3. **shrinks** each failure: the ordinal knobs are lowered towards their easy end (bisection), the
   categorical ones tried at their simpler choices, then the generator's simplest instance, keeping
   every step at which a fresh instance still fails at the configured confidence; the minimal failing
   case is recorded (Hypothesis keeps the minimal example too).

The boundaries go into the run record (:class:`~frontier_qa.store._records.BoundaryRecord`), and from
there into every report. A resumed run searches again; the cache returns the samples it paid for.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from frontier_qa.errors import BudgetExceededError, TargetUnavailableError
from frontier_qa.generators._core import GENERATOR_KEY, Generator, GeneratorError, Knob, check_for, instance_seed
from frontier_qa.generators._search import AxisSearch, Crossing, GridSearch, InstanceResult, SearchSettings
from frontier_qa.probing._curriculum_seam import Outcome, Proposal
from frontier_qa.redaction import redact
from frontier_qa.runtime._aio import gather_or_cancel
from frontier_qa.store._records import (
    BoundaryMove,
    BoundaryRecord,
    CaseClass,
    CaseRecord,
    CrossingRecord,
    KnobValue,
    LevelPoint,
    ShrunkFailure,
)
from frontier_qa.store._stop_reason import StopReason
from frontier_qa.target import Case

if TYPE_CHECKING:
    from frontier_qa.probing._run import ProbeRun

log = logging.getLogger(__name__)

BOUNDARY_KEY = "boundary"
"""Case metadata of a case recorded to show a boundary: which axis, threshold and side."""

SHRUNK_KEY = "shrunk_from"
"""Case metadata of a minimal failing case: the case it was shrunk from and its knobs."""


@dataclass(frozen=True)
class ExploreSettings:
    """How a generators curriculum searches and shrinks.

    Attributes:
        search: how the boundary search spends samples (its thresholds are the band's ends).
        evidence: record cases on both sides of each crossing (probed to a calibrated verdict).
        shrink: shrink each failure to its minimal knob values.
        shrink_tries: fresh instances tried at each candidate knob value while shrinking (the
            candidate is kept when any of them still fails).
        seed: the base of every instance seed (the run's seed).
    """

    search: SearchSettings = field(default_factory=SearchSettings)
    evidence: bool = True
    shrink: bool = True
    shrink_tries: int = 2
    seed: int = 0


@dataclass(frozen=True)
class Axis:
    """One boundary search: ``knob`` of ``generator``, the other knobs at ``context``."""

    generator: Generator
    knob: Knob
    context: Mapping[str, Any]

    def knobs(self, value: Any) -> dict[str, Any]:
        out = self.generator.easy_knobs()
        out.update(self.context)
        out[self.knob.name] = value
        return out

    @property
    def label(self) -> str:
        ctx = ", ".join(f"{k}={v}" for k, v in self.context.items())
        return f"{self.generator.name} · {self.knob.name}" + (f" ({ctx})" if ctx else "")


def axes_of(generators: Sequence[Generator]) -> list[Axis]:
    """Every axis to search: each ordinal knob of each generator, per categorical combination."""
    out = []
    for gen in generators:
        for context in gen.contexts():
            for knob in gen.ordinal:
                if len(knob.values) >= 2:  # a knob restricted to one value is held, not searched
                    out.append(Axis(gen, knob, context))
    return out


def _stored(value: Any) -> KnobValue:
    return value if isinstance(value, (bool, int, float, str)) else str(value)


def crossing_record(axis: Axis, crossing: Crossing) -> CrossingRecord:
    """A :class:`Crossing` in knob values, with the claim in words."""
    levels = axis.knob.levels
    name = axis.knob.name
    t = crossing.threshold

    def at(i: int | None) -> KnobValue | None:
        return None if i is None or i >= len(levels) else _stored(levels[i])

    first = at(crossing.index)
    last = at(crossing.index - 1) if crossing.index is not None and crossing.index > 0 else None
    if crossing.status == "not reached":
        last = _stored(levels[-1])
        text = f"P(correct) ≥ {t:g} up to {name}={last}, the hardest value searched"
    elif crossing.status == "at the easy end":
        text = f"P(correct) < {t:g} already at {name}={first}, the easiest value"
    elif crossing.index is None:
        text = f"undecided: the search stopped before finding where P(correct) falls below {t:g}"
    else:
        step = "" if crossing.status == "found" else " (undecided: the search stopped before the bracket closed)"
        span = ""
        low, high = at(crossing.low), at(crossing.high)
        if low is not None and high is not None and low != high:
            span = f"; between {name}={low} and {name}={high}"
        elif high is None:
            span = f"; no value up to {name}={_stored(levels[-1])} is confidently below"
        text = f"P(correct) falls below {t:g} at {name}={first} (≥ {t:g} up to {name}={last}){span}{step}"
        if last is None:
            text = f"P(correct) falls below {t:g} at {name}={first}{span}{step}"
    return CrossingRecord(threshold=t, status=crossing.status, first_below=first, last_above=last,
                          low=at(crossing.low), high=at(crossing.high), text=text)


class GeneratorCurriculum:
    """Task generators as a curriculum: the boundary search when a probe run drives it, random
    instances when asked for proposals (a verified-reference task source, e.g. for training).

    Args:
        generators: the generators to search.
        settings: how to search and shrink.
    """

    name = "generators"

    def __init__(self, generators: Sequence[Generator], settings: ExploreSettings | None = None) -> None:
        if not generators:
            from frontier_qa.generators._core import GeneratorError

            raise GeneratorError("a generators curriculum needs at least one generator",
                                 hint="curriculum: {type: generators, generators: [arithmetic]}")
        self.generators = list(generators)
        self.settings = settings or ExploreSettings()
        self._rng = random.Random(self.settings.seed)
        self._drawn = 0
        self.boundaries: list[BoundaryRecord] = []
        self.searches: list[AxisSearch | GridSearch] = []  # the last drive's searches, level by level
        self.tag: Callable[[Case], Case] | None = None  # applied to every case recorded (a pytest suite's name)

    # -- the curriculum seam: random instances ------------------------------------------------------

    async def propose(self, n: int) -> Sequence[Proposal]:
        """``n`` instances at random knob values (every knob uniformly over its values)."""
        out = []
        for _ in range(n):
            gen = self._rng.choice(self.generators)
            knobs = {k.name: self._rng.choice(k.values) for k in gen.knobs}
            seed = instance_seed(self.settings.seed, gen.name, knobs, self._drawn)
            self._drawn += 1
            out.append(Proposal(gen.case(seed, knobs), source=f"generator:{gen.name}"))
        return out

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        return None

    # -- the run drives it ---------------------------------------------------------------------------

    async def drive(self, run: ProbeRun) -> list[BoundaryRecord]:
        """Search every axis, record the cases that show each boundary, shrink the failures."""
        # a replay (the run generated nothing) searches fresh task instances and shows, not shrinks
        fresh = not getattr(run, "generated", True)
        explorer = Explorer(run, self, fresh=fresh)
        self.boundaries = await explorer.explore()
        self.searches = explorer.searches
        return self.boundaries


class Explorer:
    """One generators curriculum's work inside one probe run."""

    def __init__(self, run: ProbeRun, curriculum: GeneratorCurriculum, *, fresh: bool = False) -> None:
        self.run = run
        self.curriculum = curriculum
        settings = curriculum.settings
        if fresh:  # instances no earlier run drew (fresh means fresh), seeded by the run so a resume redraws them
            settings = replace(settings, seed=instance_seed(settings.seed, "fresh", {}, run.run_id), shrink=False)
        self.settings = settings
        band = run.settings.band
        self.search_settings = replace(curriculum.settings.search, thresholds=(band.high, band.low))
        self.calls = 0
        self.searches: list[AxisSearch | GridSearch] = []
        self.unread_example: str | None = None
        self.error_example: str | None = None
        self.seeds: dict[str, int] = {}  # the instance seed of every case the search drew, by case id

    def _stopped(self) -> bool:
        return self.run.stop_reason is not None

    def _earlier(self) -> dict[Any, tuple[Any, BoundaryRecord]]:
        """The latest earlier boundary of each knob searched (its run and record), by key."""
        scope_all = self.run.settings.replay_scope == "all"
        found: dict[Any, tuple[Any, BoundaryRecord]] = {}
        try:
            runs = self.run.store.runs()
        except Exception:  # noqa: BLE001 - an unreadable history compares nothing; the run goes on
            log.warning("could not read earlier runs to compare boundaries with", exc_info=True)
            return found
        for run in sorted(runs, key=lambda r: r.written_at):
            if run.run_id == self.run.run_id or not run.boundaries:
                continue
            if not scope_all and run.target_id != self.run.target.id:
                continue
            for b in run.boundaries:
                found[b.key] = (run, b)
        return found

    def _moves(self, axis: Axis, record: BoundaryRecord, earlier: tuple[Any, BoundaryRecord] | None
               ) -> list[BoundaryMove]:
        """Crossings that moved by two knob steps or more (the search claims one step) since ``earlier``."""
        if earlier is None:
            return []
        run, old = earlier
        levels = [_stored(v) for v in axis.knob.levels]
        n = len(levels)

        def at(c: CrossingRecord) -> int | None:
            if c.status == "not reached":
                return n
            if c.status == "undecided" or c.first_below not in levels:
                return None
            return levels.index(c.first_below)

        before = {c.threshold: c for c in old.crossings}
        out = []
        for c in record.crossings:
            prior = before.get(c.threshold)
            if prior is None:
                continue
            was, now = at(prior), at(c)
            if was is None or now is None or abs(was - now) < 2:
                continue
            direction: Literal["easier", "harder"] = "easier" if now < was else "harder"
            text = (f"P(correct) < {c.threshold:g} now from {_at(axis.knob.name, c.first_below)}, "
                    f"was from {_at(axis.knob.name, prior.first_below)} (run {run.run_id}): "
                    + ("it fails at easier tasks than before" if direction == "easier"
                       else "it holds up to harder tasks than before"))
            out.append(BoundaryMove(threshold=c.threshold, was=prior.first_below, now=c.first_below,
                                    direction=direction, run_id=run.run_id, target_id=run.target_id, text=text))
        return out

    async def explore(self) -> list[BoundaryRecord]:
        earlier = self._earlier()
        out = []
        axes = axes_of(self.curriculum.generators)
        for n, axis in enumerate(axes, 1):
            if self._stopped():
                break
            self.run.emit("axis", message=f"searching {axis.label} ({n}/{len(axes)})")
            boundary = await self._axis(axis)
            key = (axis.generator.name, axis.knob.name, tuple(sorted((k, _stored(v)) for k, v in axis.context.items())))
            moved = self._moves(axis, boundary, earlier.get(key))
            if moved:
                boundary = boundary.model_copy(update={"moved": moved})
                for move in moved:
                    self.run.emit("boundary", message=f"{boundary.axis}: MOVED: {move.text}")
            out.append(boundary)
            self.run.boundaries = [*out]
            self.run.emit("boundary", message=f"{boundary.axis}: " + "; ".join(c.text for c in boundary.crossings))
        return out

    # -- measuring -----------------------------------------------------------------------------------

    async def _instance(self, case: Case) -> InstanceResult:
        """Draw the search's samples of one instance and score them: each answer judged by the
        generator's check when it has one, else by equivalence to the reference; an answer the
        format cannot read is counted apart (``unread``), never as wrong.
        """
        s = self.search_settings.samples
        trajectories = await self.run.draw(case, s, 0)
        self.calls += len(trajectories)
        if not trajectories:
            return InstanceResult(case.id, 0, 0, None)
        prober = self.run.prober
        consistency = await prober.score(case, trajectories)
        check = check_for(case)
        correct = 0
        if check is not None:
            for answer in consistency.answers:
                correct += answer is not None and bool(await prober.judge_answer(case, answer))
        else:
            for cluster in consistency.clusters:
                if await prober.judge_answer(case, cluster.representative):
                    correct += cluster.size
        counted = consistency.n_answered
        agreement = consistency.p_hat * consistency.k / counted if counted else None
        if consistency.n_unparseable and self.unread_example is None:
            self.unread_example = next((t.text for t, a in zip(trajectories, consistency.answers, strict=False)
                                        if t.ok and a is None and t.text), None)
        if consistency.n_failed and self.error_example is None:  # the agent's own error, shown (redacted)
            self.error_example = next((t.error for t in trajectories if t.error), None)
        return InstanceResult(case.id, correct, counted, agreement, consistency.n_unparseable,
                              consistency.n_failed)

    async def _measure(self, axis: Axis, search: AxisSearch | GridSearch, index: int, n: int) -> list[InstanceResult]:
        value = axis.knob.levels[index]
        knobs = axis.knobs(value)
        have = len(search.evidence[index].instances)
        seeds = [instance_seed(self.settings.seed, axis.generator.name, knobs, have + j) for j in range(n)]
        cases = [axis.generator.case(seed, knobs) for seed in seeds]
        self.seeds.update((c.id, seed) for c, seed in zip(cases, seeds, strict=True))
        return list(await gather_or_cancel([self._instance(c) for c in cases]))

    async def _axis(self, axis: Axis) -> BoundaryRecord:
        s = self.search_settings
        search: AxisSearch | GridSearch = (AxisSearch(axis.knob.levels, s) if s.grid is None
                                           else GridSearch(axis.knob.levels, s, s.grid))
        self.searches.append(search)
        calls_before = self.calls
        problem: str | None = None
        self.unread_example = self.error_example = None
        while not self._stopped():
            batch = search.next_batch()
            if not batch:
                break
            try:
                results = await gather_or_cancel([self._measure(axis, search, i, n) for i, n in batch])
            except BudgetExceededError as err:
                self.run.stop(StopReason.BUDGET, err.message, "target")
                break
            except TargetUnavailableError as err:
                self.run.stop(StopReason.UNAVAILABLE, err.message, "target")
                break
            except GeneratorError as err:  # the user's generator: this knob is not judged, the others go on
                problem = f"{err.message} (fix: {err.hint})" if err.hint else err.message
                self.run.emit("boundary", message=f"{axis.label}: could not judge: {problem}")
                break
            for (i, _), got in zip(batch, results, strict=True):
                search.add(i, got)
            self.run.emit("measured", message=self._progress_line(axis, search))
        note, unread_problem = self._unread(axis, search)
        problem = problem or unread_problem
        crossings = [search.crossing(t) for t in self.search_settings.thresholds]
        record = BoundaryRecord(
            generator=axis.generator.name,
            description=axis.generator.description,
            knob=axis.knob.name,
            easy=axis.knob.easy or "low",
            context={k: _stored(v) for k, v in axis.context.items()},
            levels=[self._point(search, i) for i in range(len(axis.knob.levels))],
            crossings=[crossing_record(axis, c) for c in crossings],
            calls=self.calls - calls_before,
            note=note,
            problem=problem,
        )
        if self.settings.evidence and not self._stopped() and problem is None:
            record = await self._show(axis, search, crossings, record)
        return record

    def _unread(self, axis: Axis, search: AxisSearch | GridSearch) -> tuple[str | None, str | None]:
        """A note on samples that judged nothing (unreadable answers, failed calls), with one of them
        quoted and the fix; a problem too when they outnumber the samples that were read.
        """
        unread = sum(ev.unread for ev in search.evidence)
        failed = sum(ev.failed for ev in search.evidence)
        if not unread and not failed:
            return None, None
        read = sum(ev.n for ev in search.evidence)
        total = unread + failed + read
        parts = []
        if failed:
            where = [str(ev.value) for ev in search.evidence if ev.failed > ev.n]
            example = f": {redact(self.error_example)[:200]!r}" if self.error_example else ""
            parts.append(f"{failed} of {total} samples failed"
                         + (f" (mostly at {axis.knob.name}={', '.join(where)})" if where else "") + example
                         + "; fix the agent's error, or raise the target's retries if it is transient")
        if unread:
            where = [str(ev.value) for ev in search.evidence if ev.unread > ev.n]
            fmt = axis.generator.case(0, axis.knobs(axis.knob.easiest)).answer_format
            example = f"; one of them: {redact(self.unread_example)[:120]!r}" if self.unread_example else ""
            parts.append(f"{unread} of {total} samples gave no answer that answer_format {fmt!r} reads"
                         + (f" (mostly at {axis.knob.name}={', '.join(where)})" if where else "") + example
                         + "; they count neither as right nor as wrong. Fix: give the generator's Task an "
                         "answer_format that reads them (json:<field>, final_answer, boxed) or ask for a shorter "
                         "answer in its prompt")
        text = "; ".join(parts)
        return text, (text if unread + failed > read else None)

    def _progress_line(self, axis: Axis, search: AxisSearch | GridSearch) -> str:
        shown = []
        for ev in search.evidence:
            if ev.accuracy is not None:
                shown.append(f"{ev.value}:{ev.accuracy:.2f}")
        marks = []
        for t in self.search_settings.thresholds:
            c = search.crossing(t)
            where = "none yet" if c.index is None else str(axis.knob.levels[c.index])
            marks.append(f"<{t:g} at {where}")
        tasks = sum(len(ev.instances) for ev in search.evidence)
        return f"{axis.label}: {tasks} tasks sampled, accuracy {' '.join(shown)}; " + ", ".join(marks)

    def _point(self, search: AxisSearch | GridSearch, i: int) -> LevelPoint:
        ev = search.evidence[i]
        if not ev.measured:
            return LevelPoint(value=_stored(ev.value), instances=len(ev.instances), unread=ev.unread, failed=ev.failed)
        low, high = ev.interval(0.9)
        return LevelPoint(value=_stored(ev.value), instances=len(ev.instances), samples=ev.n, correct=ev.correct,
                          accuracy=ev.accuracy, low=low, high=high, p_hat=ev.p_hat, unread=ev.unread,
                          failed=ev.failed)

    # -- the cases that show it ---------------------------------------------------------------------

    async def _show(self, axis: Axis, search: AxisSearch | GridSearch, crossings: Sequence[Crossing],
                    record: BoundaryRecord) -> BoundaryRecord:
        """Record an instance on each side of each crossing, then shrink the failures among them."""
        picks: dict[int, str] = {}
        for c in crossings:
            if c.index is None:
                if c.status == "not reached":  # reliable across the range: the hardest value shows it
                    hardest = max((ev.index for ev in search.evidence if ev.measured), default=None)
                    if hardest is not None:
                        picks.setdefault(hardest, f"hardest value searched, still at or above {c.threshold:g}")
                continue
            picks.setdefault(c.index, f"first value below {c.threshold:g}")
            if c.index > 0:
                picks.setdefault(c.index - 1, f"last value at or above {c.threshold:g}")
        shown: list[CaseRecord] = []
        for index, side in sorted(picks.items()):
            if self._stopped():
                break
            ev = search.evidence[index]
            # the instances that show the side best first: least right below a crossing, most right above it
            below = side.startswith("first")
            if not ev.measured:
                continue
            ranked = sorted(ev.measured, key=lambda r: (r.correct / r.counted) * (1 if below else -1))
            knobs = axis.knobs(ev.value)
            for best in ranked[: self.settings.shrink_tries]:
                case = axis.generator.case(self.seeds[best.case_id], knobs)
                meta = dict(case.metadata)
                meta[BOUNDARY_KEY] = {"axis": axis.label, "knob": axis.knob.name, "side": side}
                probed = await self._probe(replace(case, metadata=meta))
                if probed is None:
                    break
                # a case near a threshold may stay undecided at the sample limit: it shows nothing and
                # is no test, so the next instance of the level is tried (its samples are counted)
                if probed.case_class is not CaseClass.UNRESOLVED:
                    self._keep(probed)
                    shown.append(probed)
                    break
        shrunk = []
        if self.settings.shrink:
            for failed in [r for r in shown if r.case_class is CaseClass.FAILURE]:
                if self._stopped():
                    break
                done = await self.shrink(axis.generator, failed)
                if done is not None:
                    shrunk.append(done)
        return record.model_copy(update={"cases": [r.id for r in shown], "shrunk": shrunk})

    async def _probe(self, case: Case) -> CaseRecord | None:
        """One case probed to a calibrated verdict (not yet stored); ``None`` when the run stopped."""
        if self.curriculum.tag is not None:
            case = self.curriculum.tag(case)
        async with self.run.gate:
            if self._stopped():
                return None
            # per-case labels: the boundary bench's figures are per-case (issue 33 item 8)
            record, stop = await self.run.prober.probe(case, self.run.draw, run_id=self.run.run_id,
                                                       verified=case.reference_verified, per_case=True)
        if stop is not None:
            self.run.stop(stop, self.run.prober.stop_detail, "target")
            return None
        return record

    def _keep(self, record: CaseRecord) -> None:
        """Store a case that shows a boundary (or a minimal failure): it counts as a proposal and a case."""
        self.run.candidates += 1
        self.run.fate["cases"] += 1
        self.run.keep(record)

    # -- shrinking -----------------------------------------------------------------------------------

    async def _fails(self, gen: Generator, knobs: Mapping[str, Any], salt: str,
                     simplest: bool = False) -> CaseRecord | None:
        """A fresh instance at ``knobs`` that still fails at the configured confidence, else ``None``."""
        tries = 1 if simplest else self.settings.shrink_tries
        for j in range(tries):
            if self._stopped():
                return None
            seed = instance_seed(self.settings.seed, gen.name, knobs, f"shrink:{salt}:{j}")
            record = await self._probe(gen.case(seed, knobs, simplest=simplest))
            self.steps += 1
            if record is None:
                return None
            if record.case_class is CaseClass.FAILURE:
                return record
        return None

    async def shrink(self, gen: Generator, failed: CaseRecord) -> ShrunkFailure | None:
        """Shrink a failing generator case to the smallest knob values where it still fails.

        Ordinal knobs are bisected towards their easy end one after the other (the failing value
        is the upper end of the bracket, the easy end the lower), categorical knobs tried at each
        simpler choice, then the generator's simplest instance. A step is kept only when a fresh
        instance still fails (a calibrated ``failure``), so the result is a failure in its own right.
        """
        info = failed.case.metadata.get(GENERATOR_KEY)
        if not isinstance(info, Mapping):
            return None
        start = dict(info.get("knobs") or {})
        knobs = gen.check_knobs(start)
        best: CaseRecord = failed
        self.steps = accepted = 0
        for knob in gen.ordinal:
            levels = knob.levels
            hi = levels.index(knobs[knob.name])
            lo = -1  # bisection on (lo, hi]: hi fails, everything at or below lo is not known to
            while hi - lo > 1 and not self._stopped():
                mid = (lo + hi) // 2
                trial = {**knobs, knob.name: levels[mid]}
                got = await self._fails(gen, trial, f"{failed.id}:{knob.name}:{mid}")
                if got is not None:
                    hi, best, knobs, accepted = mid, got, trial, accepted + 1
                else:
                    lo = mid
        for knob in gen.categorical:
            for choice in knob.values[: knob.values.index(knobs[knob.name])]:
                if self._stopped():
                    break
                trial = {**knobs, knob.name: choice}
                got = await self._fails(gen, trial, f"{failed.id}:{knob.name}:{choice}")
                if got is not None:
                    best, knobs, accepted = got, trial, accepted + 1
                    break
        simplest = False
        if gen.shrink is not None and not self._stopped():
            got = await self._fails(gen, knobs, f"{failed.id}:simplest", simplest=True)
            if got is not None:
                best, accepted, simplest = got, accepted + 1, True
        if best is failed:
            return ShrunkFailure(from_case=failed.id, to_case=failed.id, from_knobs=_plain(start),
                                 knobs=_plain(knobs), steps=self.steps, accepted=0)
        meta = dict(best.case.metadata)
        meta[SHRUNK_KEY] = {"case": failed.id, "knobs": _plain(start), "steps": self.steps}
        kept = best.model_copy(update={"case": replace(best.case, metadata=meta)})
        self._keep(kept)
        return ShrunkFailure(from_case=failed.id, to_case=kept.id, from_knobs=_plain(start), knobs=_plain(knobs),
                             steps=self.steps, accepted=accepted, simplest=simplest)


def _at(name: str, value: KnobValue | None) -> str:
    return "not reached" if value is None else f"{name}={value}"


def _plain(knobs: Mapping[str, Any]) -> dict[str, KnobValue]:
    return {k: _stored(v) for k, v in knobs.items()}
