"""What frontier-qa writes to disk about a probed case and a run: versioned pydantic records.

A :class:`CaseRecord` holds everything needed to understand, replay and report one case:
the case itself, the target that answered it, the k samples (answers, truncated raw
text, tool use, errors), the p̂ history round by round (sequential sampling), the final
p̂ with its interval, the majority answer, the class the probe engine gave it, and what
it cost. A :class:`RunRecord` describes one probe run (or one CI shard of it).

A :class:`Baseline` is what a replay holds a case to: an observation a person accepted
(``frontier-qa accept``), or the case's first one until then.

Every record carries ``schema_version``; a change of layout bumps it, and readers refuse
versions newer than they know (:mod:`frontier_qa.store`). Version 2 added baselines and the
suite entry's ``baseline`` and ``role``; version-1 lines (frontier-qa 0.1) still load. In-memory values
(:class:`~frontier_qa.target.Case`, :class:`~frontier_qa.target.Trajectory`,
:class:`~frontier_qa.scoring.consistency.Consistency`) convert with the helpers at the bottom.
Regression and flaky verdicts between two records of a case live in
:mod:`frontier_qa.store._comparison`; the store that writes these is :mod:`frontier_qa.store`.

Long by design: this is the on-disk schema, one versioned unit. The record types nest in
each other and share :data:`SCHEMA_VERSION`, so a layout change (and its version bump, and the
0.1 lines that must still load) is reviewed in one file; the conversions at the bottom are the
only way in-memory values become records.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from frontier_qa import __version__
from frontier_qa.store._steps import Step, steps_of
from frontier_qa.target import Case, Trajectory, case_seed

if TYPE_CHECKING:  # consistency pulls in answer extraction; records only read its fields
    from frontier_qa.scoring.consistency import Consistency

SCHEMA_VERSION: Final = 2
"""Version of every on-disk record this frontier-qa writes (case, run, baseline, suite entry, report)."""

READ_VERSIONS = (1, 2)
"""Record versions this frontier-qa reads (1: frontier-qa 0.1)."""

DEFAULT_MAX_TEXT_CHARS = 4000
"""Raw sample text kept per sample (characters); longer text keeps its head and tail."""

POSTERIOR_KEY: Final = "band_posterior"
"""Case metadata key under which a record keeps where its band decision put p*
(:func:`frontier_qa.probing._classify.posterior_note`)."""


class CaseClass(str, enum.Enum):
    """What the probe engine concluded about a case.

    ``frontier``: p̂ inside the band (the target is unsure: Agent0 §3.3) on a checked task.
    ``unchecked``: p̂ inside the band on a task nobody checked (no verified reference, not judged
    well-posed, not written by a person): the task may be what is unclear, not the agent.
    ``failure``: stable and wrong against a *verified* reference.
    ``suspect``: disagrees with an *unverified* reference (the reference may be wrong).
    ``pass``: stable and right (or stable with no reference to contradict it).
    ``unresolved``: the sampling budget ran out before a decision.
    ``invalid``: the case failed validation and was never scored.
    """

    FRONTIER = "frontier"
    FAILURE = "failure"
    SUSPECT = "suspect"
    PASS = "pass"
    UNRESOLVED = "unresolved"
    INVALID = "invalid"
    UNCHECKED = "unchecked"


CLASS_ORDER: tuple[CaseClass, ...] = (
    CaseClass.FAILURE,
    CaseClass.SUSPECT,
    CaseClass.FRONTIER,
    CaseClass.UNCHECKED,
    CaseClass.UNRESOLVED,
    CaseClass.PASS,
    CaseClass.INVALID,
)
"""Display and replay order: what needs attention first."""

_K = TypeVar("_K", bound=Hashable)


def count_each(keys: Iterable[_K], values: Iterable[_K]) -> dict[_K, int]:
    """How many of ``values`` are each key, in the order of ``keys``, zeros included."""
    counts = dict.fromkeys(keys, 0)
    for value in values:
        counts[value] += 1
    return counts


def utc_now() -> datetime:
    """The current time as a timezone-aware UTC datetime (every record timestamp is aware)."""
    return datetime.now(timezone.utc)


class _Record(BaseModel):
    # extra="forbid": suites are hand-edited, and a typo must not pass silently.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Interval(_Record):
    """A confidence interval for p̂.

    Attributes:
        low: lower bound, in [0, 1].
        high: upper bound, in [low, 1].
        method: how it was computed (``"wilson"``, ``"beta"``...), if known.
        confidence: nominal coverage in (0, 1), e.g. 0.95, if known.
    """

    low: float = Field(ge=0.0, le=1.0)
    high: float = Field(ge=0.0, le=1.0)
    method: str | None = None
    confidence: float | None = Field(default=None, gt=0.0, lt=1.0)

    @model_validator(mode="before")
    @classmethod
    def _from_pair(cls, value: Any) -> Any:
        # the sequential sampler's intervals are (low, high) tuples: accept them as they are
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return {"low": value[0], "high": value[1]}
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Interval:
        if self.low > self.high:
            raise ValueError(f"interval low {self.low} is above high {self.high}")
        return self

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in ``[low, high]`` (both ends inclusive)."""
        return self.low <= value <= self.high


def _stored_id(case: Case) -> Case:
    if not case.id:
        raise ValueError("a stored case needs a non-empty id")
    return case


# The case of a record or suite entry is the engine's Case itself (one definition: same fields,
# same JSON shape and order as the 0.1 CaseSpec); stored, its id must not be empty.
StoredCase = Annotated[Case, AfterValidator(_stored_id)]


class SampleRecord(_Record):
    """One of the k samples of a case.

    Attributes:
        sample_index: 0-based index of the sample for its case (part of the cache key).
        answer: the extracted answer, ``None`` when none could be extracted or the call failed.
        text: the raw final text, head and tail kept when longer than the limit.
        text_chars: length of the full raw text in characters (0 when there was none).
        n_tool_calls: executed tool calls in the trajectory.
        error: why the sample failed, if it did.
        cached: whether it came from the on-disk cache.
        seed: the sampling seed used for this sample, where the backend takes seeds.
        prompt_tokens: prompt tokens of this sample.
        completion_tokens: completion tokens of this sample.
        cost_usd: cost of this sample in US dollars, ``None`` when unknown.
        latency_s: wall-clock seconds the sample took.
        steps: an agent's steps (model calls, tool calls with their arguments, handoffs), in
            order and bounded (:mod:`frontier_qa.store._steps`); left out of the line when empty.
        path: the sample's path at the run's granularity (:func:`frontier_qa.scoring._paths.path_key`);
            ``None`` when paths were not analysed (left out of the line).
        misses: what the sample missed of the case's expectations (and its answer, when pass^k
            counts answers), one line each: ``()`` when it passed, ``None`` when nothing was
            checked (left out of the line).
        span: the OpenTelemetry span the sample ran in, ``"<trace id>-<span id>"`` in hex
            (:attr:`~frontier_qa.target.Trajectory.span`); ``None``: none (left out of the line).
    """

    sample_index: int = Field(ge=0)
    answer: str | None = None
    text: str | None = None
    text_chars: int = Field(default=0, ge=0)
    n_tool_calls: int = Field(default=0, ge=0)
    error: str | None = None
    cached: bool = False
    seed: int | None = None
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = None
    latency_s: float = Field(default=0.0, ge=0.0)
    steps: tuple[Step, ...] = ()
    path: str | None = None
    misses: tuple[str, ...] | None = None
    span: str | None = None

    @property
    def truncated(self) -> bool:
        return self.text is not None and len(self.text) < self.text_chars

    @property
    def passed(self) -> bool | None:
        """Whether the sample met the case's expectations (``None``: nothing was checked)."""
        return None if self.misses is None else not self.misses

    @model_serializer(mode="wrap")
    def _without_empty_steps(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # most targets have no steps, paths or expectations: their lines stay as they were
        data: dict[str, Any] = handler(self)
        if not data.get("steps"):
            data.pop("steps", None)
        for key in ("path", "misses", "span"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


class Round(_Record):
    """p̂ after one round of sequential sampling: ``k`` samples so far."""

    k: int = Field(ge=0)
    p_hat: float = Field(ge=0.0, le=1.0)
    interval: Interval | None = None


class ClusterCount(_Record):
    """One cluster of equivalent answers: its representative and how many samples voted for it."""

    answer: str
    count: int = Field(ge=1)


class Cost(_Record):
    """What probing cost.

    Attributes:
        calls: target calls made (samples not served from the cache).
        cached: samples served from the cache.
        prompt_tokens: prompt tokens over all samples.
        completion_tokens: completion tokens over all samples.
        usd: US dollars over the samples that reported a cost; ``None`` when none did.
    """

    calls: int = Field(default=0, ge=0)
    cached: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    usd: float | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Cost) -> Cost:
        usd = None if self.usd is None and other.usd is None else (self.usd or 0.0) + (other.usd or 0.0)
        return Cost(
            calls=self.calls + other.calls,
            cached=self.cached + other.cached,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            usd=usd,
        )


class Observed(_Record):
    """What a run observed about a case: the part a later replay is compared against."""

    case_class: CaseClass
    p_hat: float | None = Field(default=None, ge=0.0, le=1.0)
    interval: Interval | None = None
    majority: str | None = None
    majority_correct: bool | None = None
    k: int = Field(default=0, ge=0)
    target_id: str
    target_version: str | None = None


class ReplayRecord(_Record):
    """A replay's verdict on a case, recorded with the observation it was made on.

    Attributes:
        verdict: ``regression``, ``improved``, ``same``, ``flaky``, ``inconclusive`` or ``new``
            (see :class:`frontier_qa.store._comparison.RegressionVerdict`).
        reason: why, in words.
        baseline_class: the baseline's class.
        baseline_p_hat: the baseline's p̂.
        baseline_source: how the baseline came to be (``accept``, ``first``, ``suite``).
        anchor: the answer the test counted.
        baseline_successes: anchor answers among the baseline's ``baseline_k`` samples.
        baseline_k: the baseline's samples.
        successes: anchor answers among the ``n`` new samples the test used.
        n: those samples.
        p_value: the deciding one-sided Fisher p-value, when a test decided.
        level: the level it was held to.
    """

    verdict: str
    reason: str
    baseline_class: CaseClass | None = None
    baseline_p_hat: float | None = None
    baseline_source: str | None = None
    anchor: str | None = None
    baseline_successes: int | None = None
    baseline_k: int | None = None
    successes: int | None = None
    n: int | None = None
    p_value: float | None = None
    level: float | None = None


PATH_FINDINGS = ("scatter", "wrong", "undecided")
"""A path's findings: the samples take different paths; they agree on a path that misses the
case's expectations; the path could not be decided at the sample limit."""


class PathCluster(_Record):
    """One path the samples took, and how many took it."""

    path: str
    count: int = Field(ge=1)


class PathRecord(_Record):
    """Path self-consistency of a case: do its samples take the same path, and is it the right one?

    Attributes:
        granularity: what a path was made of (``tools``, ``sequence``, ``arguments``).
        p_hat: the majority path's share of the samples that ran.
        majority: the majority path (``"capital_of → convert_units"``).
        clusters: every path taken, largest first.
        decision: where the band decision put the path's p* (``in_band``, ``below``, ``above``;
            ``None`` when undecided).
        below: P(p* below the band); inside: P(p* in it); above: P(p* above it).
        finding: ``scatter`` (the paths disagree: p* in or below the band), ``wrong`` (they agree
            on a path that misses the expectations), ``undecided``; ``None``: a stable path and,
            where there are expectations, the right one.
        reason: why, in words.
        unjudged: why the expectations could not be judged (a tool name no sample called and the
            case does not offer, close to one that was: most likely a typo), with the fix; the run
            then could not judge the agent.
    """

    granularity: str
    p_hat: float = Field(ge=0.0, le=1.0)
    majority: str
    clusters: list[PathCluster] = Field(default_factory=list)
    decision: str | None = None
    below: float | None = None
    inside: float | None = None
    above: float | None = None
    finding: Literal["scatter", "wrong", "undecided"] | None = None
    reason: str = ""
    unjudged: str | None = None


FINDING_WORDS = {"scatter": "scatter", "wrong": "wrong path", "undecided": "undecided"}
"""A path finding as the text outputs word it."""


def finding_word(path: PathRecord | None) -> str:
    """``wrong path``, ``scatter``, ``undecided``; ``stable`` for an analysed path without a finding
    (``"finding": null`` in JSON); ``not analysed`` without a path record (``"path": null``).
    """
    if path is None:
        return "not analysed"
    return "stable" if path.finding is None else FINDING_WORDS[path.finding]


class PassK(_Record):
    """pass^k of a case (τ-bench): the chance that k of its samples all pass.

    Attributes:
        k: the k asked for (``probing.pass_k.k``).
        n: samples counted (failed calls included: they did not pass).
        passed: samples that met the expectations (and the answer, where counted).
        value: ``C(passed, k) / C(n, k)``; ``None`` when sampling ended below k samples.
        misses: the most common misses, with how many samples had each.
    """

    k: int = Field(ge=1)
    n: int = Field(ge=0)
    passed: int = Field(ge=0)
    value: float | None = Field(default=None, ge=0.0, le=1.0)
    misses: list[str] = Field(default_factory=list)


class CaseRecord(_Record):
    """Everything recorded about one probed case in one run.

    Attributes:
        schema_version: version of this record's layout.
        kind: ``"case"`` (tells case and run lines apart in a store file).
        case: the case as proposed.
        run_id: the run that probed it.
        target_id: the target's stable id; ``target_version`` its version when known.
        seed: the base sampling seed of the run (sample ``i`` of a case used ``Sampling.seed_for(case, i)``).
        samples: the k samples, in sample-index order.
        rounds: p̂ after each round of sequential sampling.
        p_hat: final p̂ in [0, 1] (majority share of all k samples, Agent0 Eq. 6);
            ``None`` for cases never scored (invalid).
        interval: confidence interval of the final p̂.
        majority: the majority answer (pseudo-label), ``None`` when no sample answered.
        majority_correct: whether the majority matched the reference; ``None`` when unknown.
        clusters: the answer distribution, largest cluster first.
        n_unparseable: samples that ran but gave no extractable answer.
        n_failed: samples whose target call failed.
        case_class: the probe engine's conclusion.
        reason: why it was classified so, in words (e.g. the validation error).
        cost: what probing this case cost.
        started_at: when probing the case started (UTC).
        finished_at: when the record was written (UTC); orders records of one case.
        frontier_qa_version: the frontier-qa version that wrote it.
        verdict: the replay's verdict against the case's baseline, when this was a replay.
        path: whether the samples took one path, and the path finding (:class:`PathRecord`);
            ``None`` when paths were not analysed (left out of the line).
        pass_k: the case's pass^k (:class:`PassK`); ``None`` when not counted (left out of the line).
    """

    schema_version: Literal[1, 2] = SCHEMA_VERSION
    kind: Literal["case"] = "case"
    case: StoredCase
    run_id: str = Field(min_length=1)
    target_id: str
    target_version: str | None = None
    seed: int | None = None
    samples: list[SampleRecord] = Field(default_factory=list)
    rounds: list[Round] = Field(default_factory=list)
    p_hat: float | None = Field(default=None, ge=0.0, le=1.0)
    interval: Interval | None = None
    majority: str | None = None
    majority_correct: bool | None = None
    clusters: list[ClusterCount] = Field(default_factory=list)
    n_unparseable: int = Field(default=0, ge=0)
    n_failed: int = Field(default=0, ge=0)
    case_class: CaseClass
    reason: str | None = None
    cost: Cost = Cost()
    started_at: AwareDatetime
    finished_at: AwareDatetime = Field(default_factory=utc_now)
    frontier_qa_version: str = __version__
    verdict: ReplayRecord | None = None
    path: PathRecord | None = None
    pass_k: PassK | None = None

    @model_serializer(mode="wrap")
    def _without_unanalysed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a case without tools or expectations: its line stays as it was
        data: dict[str, Any] = handler(self)
        for key in ("path", "pass_k"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    @property
    def id(self) -> str:
        return self.case.id

    @property
    def topic(self) -> str:
        return self.case.topic

    @property
    def k(self) -> int:
        return len(self.samples)

    @property
    def band_inside(self) -> float | None:
        """P(p* in band) where its band decision stopped (kept under :data:`POSTERIOR_KEY`); ``None`` if not kept."""
        note = self.case.metadata.get(POSTERIOR_KEY)
        inside = note.get("inside") if isinstance(note, Mapping) else None
        return float(inside) if isinstance(inside, (int, float)) else None

    def observed(self) -> Observed:
        """The part of this record that a replay is compared against."""
        return Observed(
            case_class=self.case_class,
            p_hat=self.p_hat,
            interval=self.interval,
            majority=self.majority,
            majority_correct=self.majority_correct,
            k=self.k,
            target_id=self.target_id,
            target_version=self.target_version,
        )


class ModelSpend(_Record):
    """What one model of a run spent (the target, the curriculum's model, the judge, the critic).

    Attributes:
        calls: backend calls made (retries and failed calls included: what a server counts).
        cached: samples served from the sample cache instead of a call.
        failed: calls that failed.
        tokens: prompt and completion tokens reported (estimates for abandoned calls included).
        usd: US dollars of the calls that reported a cost; ``None`` when none did (unknown, not 0).
    """

    calls: int = Field(default=0, ge=0)
    cached: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)
    tokens: int = Field(default=0, ge=0)
    usd: float | None = None


class Candidates(_Record):
    """What became of a probe's proposals: ``proposed = cases + invalid + removed``.

    Attributes:
        proposed: proposals the curriculum made (the candidates).
        cases: proposals probed and recorded as valid cases.
        invalid: proposals validation removed (recorded as ``invalid``, with the reason).
        removed: proposals not recorded by this shard: a repeat of a case this run already has,
            a case of another shard, one predicted too easy or too hard to be worth sampling, or
            one the run stopped before (budget, interruption).
        repeats: of ``removed``, repeats of a case this run already recorded.
        other_shards: of ``removed``, cases another shard probes.
        predicted_skip: of ``removed``, cases skipped by the difficulty predictor.
        not_reached: of ``removed``, cases the run stopped before.
    """

    proposed: int = Field(default=0, ge=0)
    cases: int = Field(default=0, ge=0)
    invalid: int = Field(default=0, ge=0)
    removed: int = Field(default=0, ge=0)
    repeats: int = Field(default=0, ge=0)
    other_shards: int = Field(default=0, ge=0)
    predicted_skip: int = Field(default=0, ge=0)
    not_reached: int = Field(default=0, ge=0)

    def describe(self) -> str:
        """``12 = 10 cases + 1 invalid + 1 removed (1 repeat)``: the one wording every output uses."""
        why = [f"{n} {what}" for n, what in ((self.repeats, "repeat" if self.repeats == 1 else "repeats"),
                                              (self.other_shards, "in other shards"),
                                              (self.predicted_skip, "predicted too easy or too hard"),
                                              (self.not_reached, "not reached before the run stopped")) if n]
        removed = f" + {self.removed} removed ({', '.join(why)})" if self.removed else ""
        return f"{self.proposed} = {self.cases} cases + {self.invalid} invalid{removed}"


class RunTotals(_Record):
    """Totals of a run: counts by class, the cases' summed cost, and (when the run recorded them)
    what each model spent and what became of the curriculum's proposals. Every output of the run
    (console, reports, JUnit, the pytest summary) shows these numbers, from here.

    Attributes:
        cases: cases recorded (invalid ones included).
        by_class: cases per class.
        cost: the cases' own samples (calls not served from the cache, tokens, dollars).
        spend: what each model of the run spent, by role (``target``, ``curriculum``, ``judge``,
            ``critic``); empty for runs written before frontier-qa recorded it.
        candidates: what became of the proposals (probe runs); ``None`` for replays.
    """

    cases: int = Field(default=0, ge=0)
    by_class: dict[CaseClass, int] = Field(default_factory=dict)
    cost: Cost = Cost()
    spend: dict[str, ModelSpend] = Field(default_factory=dict)
    candidates: Candidates | None = None


KnobValue = bool | int | float | str
"""A task generator's knob value as stored (JSON scalars)."""


class LevelPoint(_Record):
    """What the boundary search measured at one knob value.

    Attributes:
        value: the knob value.
        instances: task instances drawn at it; ``samples`` their samples; ``correct`` the right ones.
        accuracy: mean accuracy over the instances (``None``: nothing measured).
        low, high: credible interval (90 %) of the level's mean accuracy.
        p_hat: mean agreement of each instance's answers (self-consistency p̂).
        unread: samples whose answer could not be read (not counted in ``samples``).
        failed: samples whose call failed (not counted in ``samples``).
    """

    value: KnobValue
    instances: int = Field(default=0, ge=0)
    samples: int = Field(default=0, ge=0)
    correct: int = Field(default=0, ge=0)
    accuracy: float | None = Field(default=None, ge=0.0, le=1.0)
    low: float | None = Field(default=None, ge=0.0, le=1.0)
    high: float | None = Field(default=None, ge=0.0, le=1.0)
    p_hat: float | None = Field(default=None, ge=0.0, le=1.0)
    unread: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)


class CrossingRecord(_Record):
    """Where P(correct) falls through one threshold along a knob (a claim with its interval).

    Attributes:
        threshold: the P(correct) level (the band's ends: 0.8 and 0.3 by default).
        status: ``found``, ``not reached`` (above it at every level), ``at the easy end`` (below
            it even there) or ``undecided`` (the budget ran out first).
        first_below: the first knob value (from the easy end) below the threshold, if any.
        last_above: the value before it (reliable up to here), if any.
        low, high: the values the crossing may lie between (the interval of the claim).
        text: the claim in words.
    """

    threshold: float = Field(gt=0.0, lt=1.0)
    status: str
    first_below: KnobValue | None = None
    last_above: KnobValue | None = None
    low: KnobValue | None = None
    high: KnobValue | None = None
    text: str = ""


class ShrunkFailure(_Record):
    """A failure shrunk to the smallest knob values where it still fails.

    Attributes:
        from_case: the failing case found first; ``to_case`` the minimal one (in the store).
        from_knobs, knobs: their knob values.
        steps: candidate cases probed while shrinking; ``accepted`` how many of them still failed.
        simplest: the minimal case is the generator's simplest instance at those knob values.
    """

    from_case: str
    to_case: str
    from_knobs: dict[str, KnobValue] = Field(default_factory=dict)
    knobs: dict[str, KnobValue] = Field(default_factory=dict)
    steps: int = Field(default=0, ge=0)
    accepted: int = Field(default=0, ge=0)
    simplest: bool = False


class BoundaryMove(_Record):
    """A crossing that moved since an earlier run searched the same knob (a finding with its evidence).

    Attributes:
        threshold: the P(correct) level.
        was, now: the first knob value below it then and now (``None``: not reached).
        direction: ``easier`` (it now fails at an easier value: a regression) or ``harder``.
        run_id: the earlier run; ``target_id`` the target it probed.
        text: the move in words.
    """

    threshold: float = Field(gt=0.0, lt=1.0)
    was: KnobValue | None = None
    now: KnobValue | None = None
    direction: Literal["easier", "harder"]
    run_id: str
    target_id: str = ""
    text: str = ""


class BoundaryRecord(_Record):
    """Where the target's ability ends along one knob of one task generator.

    Attributes:
        generator: the generator's name; ``description`` its one line.
        knob: the ordinal knob searched; ``easy`` which end of it is easy.
        context: the other knobs' values, held fixed (ordinal ones at their easy end).
        levels: the measured curve, every knob value from easy to hard (unmeasured ones empty).
        crossings: one per threshold, high first.
        cases: ids of the recorded cases that show the boundary (both sides of each crossing).
        shrunk: failures shrunk to their minimal knob values.
        calls: target samples the search drew (cases recorded afterwards count on their own).
        moved: crossings that moved by more than the search's resolution (one knob step) since the
            latest earlier run that searched this knob (of the same target, or of any with
            ``replay_scope: all``).
        note: what the claims rest on besides the curve, in words (samples whose answers could not
            be read or whose calls failed, one of them quoted, and the fix).
        problem: why the search could not judge this knob (the generator raised, most answers could
            not be read), with the fix; the run is then "could not judge" (exit 3).
    """

    generator: str
    description: str = ""
    knob: str
    easy: str = "low"
    context: dict[str, KnobValue] = Field(default_factory=dict)
    levels: list[LevelPoint] = Field(default_factory=list)
    crossings: list[CrossingRecord] = Field(default_factory=list)
    cases: list[str] = Field(default_factory=list)
    shrunk: list[ShrunkFailure] = Field(default_factory=list)
    calls: int = Field(default=0, ge=0)
    moved: list[BoundaryMove] = Field(default_factory=list)
    note: str | None = None
    problem: str | None = None

    @property
    def key(self) -> tuple[str, str, tuple[tuple[str, KnobValue], ...]]:
        """What identifies the knob searched across runs: generator, knob and the values held."""
        return self.generator, self.knob, tuple(sorted(self.context.items()))

    @property
    def axis(self) -> str:
        """``arithmetic · digits (op=mul)``: what this boundary is about, in a few words."""
        ctx = ", ".join(f"{k}={v}" for k, v in self.context.items())
        return f"{self.generator} · {self.knob}" + (f" ({ctx})" if ctx else "")


PriorVersions = Literal["same", "any", "discount"]
"""How a run's prior counts the store's earlier cases of *other* versions of its target
(``probing.prior_versions``): not at all, like its own version's, or as a start worth
``probing.prior_smoothing`` cases that the run's own cases soon outweigh."""


class PriorSource(_Record):
    """Where a run's population prior started from: the store's earlier cases of its target.

    Attributes:
        target_id: the run's target; ``version`` its version (``None``: unknown).
        versions: how other versions' cases counted (:data:`PriorVersions`).
        same: earlier cases of this version, fitted in full.
        other: earlier cases of other versions; ``other_versions`` those versions.
        smoothing: what a discounted start weighs, in cases.
        topics: topics whose cases start from a prior of their own (fitted on theirs, shrunk
            towards the target's); ``topic_min`` the earlier cases a topic needs for one.
    """

    target_id: str
    version: str | None = None
    versions: PriorVersions = "same"
    same: int = Field(default=0, ge=0)
    other: int = Field(default=0, ge=0)
    other_versions: list[str | None] = Field(default_factory=list)
    smoothing: float = Field(default=10.0, gt=0)
    topics: list[str] = Field(default_factory=list)
    topic_min: int = Field(default=20, ge=1)

    def describe(self) -> str:
        """``fitted on 240 earlier cases of agent version 3; 80 cases of version 2 left out (version
        changed)``: the one wording every output uses.
        """
        target = self.target_id + (f" version {self.version}" if self.version else "")
        olds = ", ".join(v or "unknown" for v in self.other_versions) or "unknown"
        older = f"{self.other} case(s) of version {olds}"
        if self.versions == "any" and self.other:
            line = (f"fitted on {self.same + self.other} earlier case(s) of {self.target_id}, "
                    f"{older} counted alike (probing.prior_versions: any)")
        elif self.same:
            line = f"fitted on {self.same} earlier case(s) of {target}"
        else:
            line = f"no earlier cases of {target}" + ("" if self.other else ": uninformed, learnt from this run")
        if self.other and self.versions == "same":
            line += f"; {older} left out (version changed)"
        elif self.other and self.versions == "discount":
            line += f"; {older} only as a start worth {self.smoothing:g} cases (version changed)"
        if self.topics:
            line += (f"; {len(self.topics)} topic(s) with >= {self.topic_min} earlier cases start from their own: "
                     f"{', '.join(self.topics)}")
        return line
class RunWarning(_Record):
    """What a run warned of as it started, kept so that its reports and its gate say it too.

    Attributes:
        code: what kind of warning (``"k-cap"``: ``probing.k`` caps a sequential policy below what
            it needs to decide most cases).
        message: the warning in one line, with the fix.
        cap: the sample cap it is about (``"k-cap"``), so the gate can tell the cases it cut off.
        fix: what to do about it, for the gate's message when the warning came true.
    """

    code: str
    message: str
    cap: int | None = None
    fix: str = ""


class RunRecord(_Record):
    """One probe run, or one CI shard of it.

    A run writes this record when it starts (``finished_at`` unset) and again when it
    ends; the latest record of a run wins, so a run without a finished record was
    interrupted and can be resumed.

    Attributes:
        run_id: the run's id (shards of one CI job may share it).
        config_hash: hash of the resolved configuration (resume refuses a different one).
        seed: the run's seed, shared by all shards.
        shard_index: which shard this is, 1-based (``--shard 2/4`` → 2).
        shard_count: how many shards the run was split into.
        target_id: the target probed; ``target_version`` its version when known.
        started_at: when the run started (UTC); ``finished_at`` when it ended, if it did.
        totals: counts and cost when it ended.
        boundaries: where the target's ability ends along each knob of the task generators the
            run searched (a generators curriculum), with the measured curves.
        prior: where its population prior started from (``probing.prior_from_store``); ``None``
            when it did not look in the store.
        warnings: what the run warned of as it started (:class:`RunWarning`).
        written_at: when this record was written (UTC); the latest wins.
        frontier_qa_version: the frontier-qa version that wrote it.
    """

    schema_version: Literal[1, 2] = SCHEMA_VERSION
    kind: Literal["run"] = "run"
    run_id: str = Field(min_length=1)
    config_hash: str = ""
    seed: int | None = None
    shard_index: int = Field(default=1, ge=1)
    shard_count: int = Field(default=1, ge=1)
    target_id: str = ""
    target_version: str | None = None
    started_at: AwareDatetime = Field(default_factory=utc_now)
    finished_at: AwareDatetime | None = None
    totals: RunTotals = RunTotals()
    boundaries: list[BoundaryRecord] = Field(default_factory=list)
    prior: PriorSource | None = None
    warnings: list[RunWarning] = Field(default_factory=list)
    written_at: AwareDatetime = Field(default_factory=utc_now)
    frontier_qa_version: str = __version__

    @model_validator(mode="after")
    def _shard_in_range(self) -> RunRecord:
        if self.shard_index > self.shard_count:
            raise ValueError(f"shard {self.shard_index}/{self.shard_count}: index is above the count")
        return self

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


BaselineSource = Literal["accept", "first", "suite"]
"""How a baseline came to be: ``accept`` (a person accepted it), ``first`` (the case's first
observation, until someone accepts one), ``suite`` (read from a version-1 suite's ``observed``)."""


class Baseline(_Record):
    """What a replay holds a case to: the counts of an accepted observation.

    The quantity compared on replay is the share of samples equivalent to the *anchor*: the
    verified reference when the case has one, else the baseline's majority answer. Failed
    calls and unparseable samples count as misses (no anchor answer given).

    Attributes:
        schema_version: version of this record's layout.
        kind: ``"baseline"`` (tells it apart from case and run lines).
        case_id: the case it belongs to.
        case_class: the case's class in the accepted observation.
        k: samples it holds (failed calls included).
        successes: samples equivalent to the anchor, in [0, k].
        anchor: the answer the agent is held to; ``None`` when there is none (scattered
            answers and no verified reference: such a case can only improve).
        anchor_kind: ``"reference"`` (verified reference) or ``"majority"``.
        p_hat: majority share of the k samples (Agent0 Eq. 6).
        interval: confidence interval of ``p_hat``.
        majority: the majority answer.
        majority_correct: whether the majority matched the case's reference, if known.
        clusters: the answer distribution, largest first.
        n_unparseable: samples without an extractable answer.
        n_failed: samples whose call failed.
        target_id: the target observed (without its version).
        target_version: that target's version (a source hash for Python agents).
        run_ids: the runs whose samples it pools, oldest first.
        accepted_at: when it became the baseline (UTC).
        source: how it came to be (:data:`BaselineSource`).
        frontier_qa_version: the frontier-qa version that wrote it.
    """

    schema_version: Literal[2] = 2
    kind: Literal["baseline"] = "baseline"
    case_id: str = Field(min_length=1)
    case_class: CaseClass
    k: int = Field(ge=0)
    successes: int = Field(ge=0)
    anchor: str | None = None
    anchor_kind: Literal["reference", "majority"] | None = None
    p_hat: float | None = Field(default=None, ge=0.0, le=1.0)
    interval: Interval | None = None
    majority: str | None = None
    majority_correct: bool | None = None
    clusters: list[ClusterCount] = Field(default_factory=list)
    n_unparseable: int = Field(default=0, ge=0)
    n_failed: int = Field(default=0, ge=0)
    target_id: str = ""
    target_version: str | None = None
    run_ids: list[str] = Field(default_factory=list)
    accepted_at: AwareDatetime = Field(default_factory=utc_now)
    source: BaselineSource = "accept"
    frontier_qa_version: str = __version__

    @model_validator(mode="after")
    def _counts(self) -> Baseline:
        if self.successes > self.k:
            raise ValueError(f"successes {self.successes} is above k {self.k}")
        if (self.anchor is None) != (self.anchor_kind is None):
            raise ValueError("anchor and anchor_kind are given together or not at all")
        return self

    @property
    def rate(self) -> float | None:
        """Share of samples equivalent to the anchor, ``None`` without an anchor or samples."""
        return None if self.anchor is None or not self.k else self.successes / self.k


class SuiteCase(_Record):
    """One entry of a committable suite: the case, its baseline and what was last observed.

    Attributes:
        case: the case.
        baseline: what a replay holds it to (version-2 suites; a version-1 suite's
            ``observed`` stands in for it, see :mod:`frontier_qa.store._baselines`).
        observed: the last observation when exported (for people reading the file).
        role: ``"finding"`` (a failure, suspect or frontier case) or ``"guard"`` (a stable,
            correct case kept so that breaking it is caught).

    Volatile fields (run id, timestamps, cost) are present only when the export asked for them.
    """

    schema_version: Literal[1, 2] = SCHEMA_VERSION
    case: StoredCase
    baseline: Baseline | None = None
    observed: Observed | None = None
    role: Literal["finding", "guard"] | None = None
    run_id: str | None = None
    finished_at: AwareDatetime | None = None
    cost: Cost | None = None


# --- conversions from in-memory values --------------------------------------------------


def truncate_text(text: str, max_chars: int = DEFAULT_MAX_TEXT_CHARS) -> str:
    """Keep the head and tail of ``text`` (the final answer sits at the end) within ``max_chars``."""
    if len(text) <= max_chars:
        return text
    marker = f"\n…[{len(text) - max_chars} characters cut]…\n"
    keep = max(max_chars - len(marker), 0)
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


def sample_record(
    trajectory: Trajectory,
    answer: str | None,
    *,
    seed: int | None = None,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    path: str | None = None,
    misses: tuple[str, ...] | None = None,
) -> SampleRecord:
    """Record one trajectory with its extracted answer (``None`` when none was extracted), its path
    and its misses of the case's expectations (``None``: not analysed, nothing checked).

    ``seed`` is the case's base seed (:func:`~frontier_qa.target.case_seed`); the sample's own
    seed is that plus its index, as the adapters draw it.
    """
    text = trajectory.text
    return SampleRecord(
        sample_index=trajectory.sample_index,
        answer=answer,
        text=None if text is None else truncate_text(text, max_text_chars),
        text_chars=0 if text is None else len(text),
        n_tool_calls=trajectory.n_tool_calls,
        error=trajectory.error,
        cached=trajectory.cached,
        seed=None if seed is None else seed + trajectory.sample_index,
        prompt_tokens=trajectory.usage.prompt_tokens,
        completion_tokens=trajectory.usage.completion_tokens,
        cost_usd=trajectory.cost_usd,
        latency_s=max(trajectory.latency_s, 0.0),
        steps=steps_of(trajectory),
        path=path,
        misses=misses,
        span=trajectory.span,
    )


def cost_of(samples: Sequence[SampleRecord]) -> Cost:
    """Sum the cost of samples; cached samples count tokens but not calls."""
    known = [s.cost_usd for s in samples if s.cost_usd is not None]
    return Cost(
        calls=sum(1 for s in samples if not s.cached),
        cached=sum(1 for s in samples if s.cached),
        prompt_tokens=sum(s.prompt_tokens for s in samples),
        completion_tokens=sum(s.completion_tokens for s in samples),
        usd=sum(known) if known else None,
    )


def clusters_of(consistency: Consistency) -> list[ClusterCount]:
    """The answer distribution of a :class:`Consistency`, largest cluster first."""
    return [ClusterCount(answer=c.representative, count=c.size) for c in consistency.clusters if c.size > 0]


def case_record(
    case: Case,
    trajectories: Sequence[Trajectory],
    answers: Sequence[str | None],
    consistency: Consistency | None,
    *,
    case_class: CaseClass | str,
    run_id: str,
    target_id: str,
    started_at: datetime,
    target_version: str | None = None,
    seed: int | None = None,
    interval: Interval | tuple[float, float] | None = None,
    rounds: Sequence[Round] = (),
    reference_verified: bool = False,
    majority_correct: bool | None = None,
    reason: str | None = None,
    finished_at: datetime | None = None,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    paths: Sequence[str | None] | None = None,
    misses: Sequence[tuple[str, ...] | None] | None = None,
    path: PathRecord | None = None,
    pass_k: PassK | None = None,
) -> CaseRecord:
    """Build the record of one probed case from the engine's in-memory values.

    Args:
        case: the case probed.
        trajectories: its k samples, any order (stored in sample-index order).
        answers: the extracted answer of each trajectory, aligned with ``trajectories``.
        consistency: the self-consistency of the answers; ``None`` for unscored (invalid) cases.
        case_class: the engine's conclusion.
        run_id: the run that probed it.
        target_id: the target's id.
        started_at: when probing the case started (timezone-aware).
        target_version: the target's version, if known.
        seed: the run's base sampling seed.
        interval: the confidence interval of the final p̂ (an :class:`Interval` or ``(low, high)``).
        rounds: p̂ after each round of sequential sampling.
        reference_verified: whether the case's reference was verified.
        majority_correct: whether the majority matched the reference, if known.
        reason: why the case was classified so.
        finished_at: when probing ended; now when omitted.
        max_text_chars: raw text kept per sample, in characters.
        paths: each sample's path, aligned with ``trajectories`` (``None``: paths not analysed).
        misses: each sample's misses of the expectations, aligned with ``trajectories``.
        path: the case's path self-consistency and finding.
        pass_k: the case's pass^k.
    """
    n = len(trajectories)
    if len(answers) != n:
        raise ValueError(f"{n} trajectories but {len(answers)} answers: pass one answer each")
    if (paths is not None and len(paths) != n) or (misses is not None and len(misses) != n):
        raise ValueError(f"{n} trajectories: pass one path and one set of misses each")
    rows = zip(trajectories, answers, paths or [None] * n, misses or [None] * n, strict=True)
    base = None if seed is None else case_seed(seed, case)  # what the adapters seeded this case's samples from
    samples = [sample_record(t, a, seed=base, max_text_chars=max_text_chars, path=p, misses=m)
               for t, a, p, m in sorted(rows, key=lambda row: row[0].sample_index)]
    return CaseRecord(
        case=replace(case, reference_verified=reference_verified),
        run_id=run_id,
        target_id=target_id,
        target_version=target_version,
        seed=seed,
        samples=samples,
        rounds=list(rounds),
        p_hat=None if consistency is None else consistency.p_hat,
        interval=None if interval is None else Interval.model_validate(interval),
        majority=None if consistency is None else consistency.majority,
        majority_correct=majority_correct,
        clusters=[] if consistency is None else clusters_of(consistency),
        n_unparseable=0 if consistency is None else consistency.n_unparseable,
        n_failed=0 if consistency is None else consistency.n_failed,
        case_class=CaseClass(case_class),
        reason=reason,
        cost=cost_of(samples),
        started_at=started_at,
        finished_at=finished_at or utc_now(),
        path=path,
        pass_k=pass_k,
    )


def run_totals(records: Sequence[CaseRecord], *, spend: Mapping[str, ModelSpend] | None = None,
               candidates: Candidates | None = None) -> RunTotals:
    """Counts by class and summed cost over case records (one per case: pass the latest), with
    what the run's models spent and what became of its proposals when known.
    """
    by_class: dict[CaseClass, int] = {}
    cost = Cost()
    for record in records:
        by_class[record.case_class] = by_class.get(record.case_class, 0) + 1
        cost = cost + record.cost
    return RunTotals(cases=len(records), by_class=by_class, cost=cost, spend=dict(spend or {}),
                     candidates=candidates)


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the on-disk records, by name (for docs and external validators)."""
    return {
        "case": CaseRecord.model_json_schema(),
        "run": RunRecord.model_json_schema(),
        "baseline": Baseline.model_json_schema(),
        "suite_case": SuiteCase.model_json_schema(),
    }


