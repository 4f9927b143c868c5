"""``report.json``: the machine-readable report (versioned pydantic schema).

Dashboards and CI read this file; its layout only changes with ``schema_version``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from frontier_qa import __version__
from frontier_qa.redaction import redact_data
from frontier_qa.reports._gate import GateResult
from frontier_qa.reports._report_input import ReportInput, ReportParts
from frontier_qa.reports._summary import Summary, answer_distribution, sample_errors
from frontier_qa.store._comparison import Comparison, Evidence, RegressionVerdict
from frontier_qa.store._records import (
    SCHEMA_VERSION,
    Baseline,
    BoundaryMove,
    BoundaryRecord,
    Candidates,
    CaseClass,
    CaseRecord,
    Cost,
    CrossingRecord,
    Interval,
    KnobValue,
    LevelPoint,
    ModelSpend,
    PassK,
    PathRecord,
    RunRecord,
    ShrunkFailure,
    utc_now,
)

if TYPE_CHECKING:  # typing.Unpack is 3.11+; the package supports 3.10
    from typing_extensions import Unpack


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TopicSummary(_Model):
    """One row of the frontier map: cases per class in a topic."""

    topic: str
    total: int
    counts: dict[CaseClass, int]
    frontier_share: float | None = Field(description="frontier / valid cases in the topic, in [0, 1]")
    path_findings: dict[str, int] = Field(default_factory=dict,
                                          description="the topic's cases by path finding (scatter, wrong, undecided)")


class PHatHistogram(_Model):
    """Equal-width p̂ bins over [0, 1]: bin i holds edges[i] <= p̂ < edges[i+1] (last bin holds 1)."""

    edges: list[float]
    counts: list[int]
    by_class: dict[CaseClass, list[int]]


class PassKReport(_Model):
    """pass^k over the cases that count it: the mean of their per-case pass^k (τ-bench), with pass^1."""

    k: int = Field(description="the k asked for (probing.pass_k.k)")
    cases: int = Field(description="cases with a pass^k value (sampled at least k times)")
    value: float | None = Field(description="mean pass^k over those cases, in [0, 1]; null when none has one")
    pass_1: float | None = Field(description="mean share of passing samples over the same cases (pass^1)")
    short: int = Field(0, description="counted cases whose sampling ended below k samples (no value)")


class AnswerCount(_Model):
    """How many of a case's samples gave one extracted answer."""

    answer: str
    count: int


class ErrorCount(_Model):
    """How many of a case's samples failed with one error (secrets masked, shortened)."""

    error: str
    count: int


class Observation(_Model):
    """One earlier observation of a case (for trend lines)."""

    run_id: str
    at: AwareDatetime
    case_class: CaseClass
    p_hat: float | None
    k: int
    target_version: str | None


class CaseSummary(_Model):
    """One case as the report lists it."""

    id: str
    topic: str
    prompt: str
    case_class: CaseClass
    p_hat: float | None
    interval: Interval | None
    majority: str | None
    reference: str | None
    reference_verified: bool
    k: int
    target_id: str
    target_version: str | None = None
    answers: list[AnswerCount] = Field(description="extracted answers, then '(no answer)' and one 'call failed: "
                                       "ERROR' entry per error, each with its samples")
    errors: list[ErrorCount] = Field(default_factory=list, description="the failed samples' distinct errors, most "
                                     "frequent first (the same as the answers' 'call failed: ERROR' entries)")
    reason: str | None = Field(None, description="why the case has its class; for an invalid case, why validation "
                               "removed it (near-duplicate, identical copy, bad format, critic...)")
    history: list[Observation] = Field(default_factory=list, description="earlier observations, oldest first")
    path: PathRecord | None = Field(None, description="whether the samples took one path (majority, clusters, p̂, "
                                    "band decision) and the path finding: scatter, wrong, undecided, or null for "
                                    "a stable path (and, with expectations, the right one), which the text "
                                    "outputs call 'stable'; path itself is null when the case's paths were not "
                                    "analysed")
    pass_k: PassK | None = Field(None, description="the case's pass^k: k, samples counted, passed, value, the most "
                                 "common misses; null when the case does not count it")


class GateCheckReport(_Model):
    """One check of the CI gate: the measured value, its limit, and whether it passed."""

    name: str
    value: float
    limit: float
    passed: bool
    message: str


class HealthReport(_Model):
    """Why the run could not judge the agent."""

    code: str
    message: str


class GateReport(_Model):
    """The gate's decision: passed, the exit code, and why (health problems first)."""

    passed: bool
    exit_code: int
    could_not_judge: bool
    health: list[HealthReport]
    reasons: list[str]
    checks: list[GateCheckReport]


class VerdictReport(_Model):
    """One replay verdict: baseline against now, and the test that decided."""

    id: str
    verdict: RegressionVerdict
    role: str
    reason: str
    old_class: CaseClass | None
    new_class: CaseClass
    old_p_hat: float | None
    new_p_hat: float | None
    baseline: Baseline | None
    baseline_anchor: Evidence | None
    now_anchor: Evidence | None
    p_value: float | None
    level: float | None
    samples: int


class ReplayReport(_Model):
    """Replay verdicts: counts (all, findings, guards) and every case that did not stay the same."""

    counts: dict[RegressionVerdict, int]
    findings: dict[RegressionVerdict, int]
    guards: dict[RegressionVerdict, int]
    changed: list[VerdictReport]


class BoundaryReport(_Model):
    """Where the agent's ability ends along one knob of one task generator: the run record's
    :class:`~frontier_qa.store._records.BoundaryRecord`, field for field, with its ``axis`` spelled out.
    """

    axis: str = Field(description="what the boundary is about, in a few words: 'arithmetic · digits (op=mul)'")
    generator: str
    description: str = ""
    knob: str = Field(description="the ordinal knob searched")
    easy: str = Field("low", description="which end of the knob is easy")
    context: dict[str, KnobValue] = Field(default_factory=dict, description="the other knobs' values, held fixed")
    levels: list[LevelPoint] = Field(default_factory=list,
                                     description="the measured curve, every knob value from easy to hard "
                                                 "(unmeasured ones without accuracy)")
    crossings: list[CrossingRecord] = Field(default_factory=list, description="one per threshold, high first")
    cases: list[str] = Field(default_factory=list, description="ids of the recorded cases that show the boundary")
    shrunk: list[ShrunkFailure] = Field(default_factory=list,
                                        description="failures shrunk to their minimal knob values")
    calls: int = Field(0, description="target samples the search drew")
    moved: list[BoundaryMove] = Field(default_factory=list,
                                      description="crossings that moved since the latest earlier search of this knob")
    note: str | None = Field(None, description="what the claims rest on besides the curve (unread answers, the fix)")
    problem: str | None = Field(None, description="why this knob could not be judged, with the fix")

    @classmethod
    def of(cls, boundary: BoundaryRecord) -> BoundaryReport:
        """The run record's boundary as the report lists it."""
        return cls(axis=boundary.axis, **dict(boundary))

    def record(self) -> BoundaryRecord:
        """The run record's boundary back (``axis`` is derived from it)."""
        return BoundaryRecord(**{k: v for k, v in dict(self).items() if k != "axis"})


class JsonReport(_Model):
    """Everything in ``report.json``."""

    schema_version: Literal[2] = SCHEMA_VERSION
    kind: Literal["report"] = "report"
    frontier_qa_version: str = __version__
    generated_at: AwareDatetime
    run: RunRecord | None = None
    targets: list[str]
    total: int
    by_class: dict[CaseClass, int]
    frontier_share: float | None = Field(description="frontier / valid (non-invalid) cases, in [0, 1]")
    frontier_precision: float | None = Field(None, description=(
        "the frontier labels' expected precision: the mean of their P(p* in band); null without one"))
    by_topic: list[TopicSummary]
    p_hat_histogram: PHatHistogram
    paths: int = Field(0, description="cases whose paths were analysed (tools called, or expectations)")
    path_findings: dict[str, int] = Field(default_factory=dict,
                                          description="cases by path finding: scatter, wrong, undecided "
                                                      "(zeros included); the analysed cases with none (stable "
                                                      "paths) are paths minus their sum")
    pass_k: PassKReport | None = Field(None, description="pass^k over the cases that count it; null when none does")
    cost: Cost = Field(description="the cases' own samples (calls not served from the cache, tokens, dollars)")
    spend: dict[str, ModelSpend] = Field(
        default_factory=dict, description="what each model of the run spent, by role (target, curriculum, ...)")
    candidates: Candidates | None = Field(None, description="what became of the curriculum's proposals")
    headline: list[str] = Field(default_factory=list,
                                description="the run's numbers as the console, every report and pytest word them")
    gate: GateReport | None = None
    replay: ReplayReport | None = None
    next_steps: list[str] = Field(default_factory=list,
                                  description="commands that keep, replay, accept and inspect the findings")
    changes: list[str] = Field(
        default_factory=list, description="what changed in the cases' source since they were stored, and what was done")
    warnings: list[str] = Field(
        default_factory=list, description="what the run warned of as it started (a k that caps the policy too low)")
    boundaries: list[BoundaryReport] = Field(
        default_factory=list, description="where the agent's ability ends along each knob of the task generators the "
        "run searched, with the measured curves (the run record's boundaries)")
    cases: list[CaseSummary]


def gate_report(gate: GateResult) -> GateReport:
    """The gate result as a record."""
    return GateReport(
        passed=gate.passed,
        exit_code=gate.exit_code,
        could_not_judge=not gate.judged,
        health=[HealthReport(code=p.code, message=p.message) for p in gate.health],
        reasons=list(gate.reasons),
        checks=[GateCheckReport(**vars(c)) for c in gate.checks],
    )


def verdict_report(c: Comparison) -> VerdictReport:
    """One comparison as a record."""
    return VerdictReport(id=c.case_id, verdict=c.verdict, role=c.role, reason=c.reason, old_class=c.old_class,
                         new_class=c.new_class, old_p_hat=c.old_p_hat, new_p_hat=c.new_p_hat, baseline=c.baseline,
                         baseline_anchor=c.old, now_anchor=c.new, p_value=c.p_value, level=c.level,
                         samples=c.samples)


def build_json_report(
    records: ReportInput | Summary | Iterable[CaseRecord],
    run: RunRecord | None = None,
    *,
    generated_at: datetime | None = None,
    **given: Unpack[ReportParts],
) -> JsonReport:
    """Build the report record of a run (``records``, ``run`` and the keywords: as :meth:`ReportInput.of
    <frontier_qa.reports._report_input.ReportInput.of>` takes them).

    ``history`` (every observation of each case, oldest first) fills each case's ``history``;
    its last entry, the case's own record, is left out.
    """
    report = ReportInput.of(records, run, **given)
    s, run, gate, comparisons, history = report.summary, report.run, report.gate, report.comparisons, report.history
    replay = None
    if comparisons:
        replay = ReplayReport(
            counts=report.verdicts(),
            findings=report.verdicts("finding"),
            guards=report.verdicts("guard"),
            changed=[verdict_report(c) for c in comparisons if c.verdict is not RegressionVerdict.SAME],
        )
    return JsonReport(
        generated_at=generated_at or utc_now(),
        run=run,
        targets=list(s.targets),
        total=s.total,
        by_class=s.by_class,
        frontier_share=s.frontier_share,
        frontier_precision=s.frontier_precision,
        by_topic=[
            TopicSummary(topic=t.topic, total=t.total, counts=t.counts, frontier_share=t.frontier_share,
                         path_findings=t.path_findings)
            for t in s.by_topic
        ],
        p_hat_histogram=PHatHistogram(
            edges=list(s.histogram.edges),
            counts=list(s.histogram.counts),
            by_class={c: list(v) for c, v in s.histogram.by_class.items()},
        ),
        paths=s.paths,
        path_findings=s.path_findings,
        pass_k=None if s.pass_k is None else PassKReport(**vars(s.pass_k)),
        cost=s.cost,
        spend=dict(report.spend),
        candidates=report.candidates,
        headline=[f"{label}: {text}" for label, text in report.headline()],
        gate=None if gate is None else gate_report(gate),
        replay=replay,
        next_steps=list(report.next_steps),
        changes=list(report.changes),
        warnings=list(report.warnings),
        boundaries=[BoundaryReport.of(b) for b in report.boundaries],
        cases=[
            CaseSummary(
                id=r.id,
                topic=r.topic,
                prompt=r.case.prompt,
                case_class=r.case_class,
                p_hat=r.p_hat,
                interval=r.interval,
                majority=r.majority,
                reference=r.case.reference,
                reference_verified=r.case.reference_verified,
                k=r.k,
                target_id=r.target_id,
                target_version=r.target_version,
                answers=[AnswerCount(answer=a, count=n) for a, n in answer_distribution(r)],
                errors=[ErrorCount(error=e, count=n) for e, n in sample_errors(r)],
                reason=r.reason,
                history=[Observation(run_id=h.run_id, at=h.finished_at, case_class=h.case_class, p_hat=h.p_hat,
                                     k=h.k, target_version=h.target_version)
                         for h in history.get(r.id, ()) if h.run_id != r.run_id],
                path=r.path,
                pass_k=r.pass_k,
            )
            for r in s.records
        ],
    )


def write_json_report(path: str | os.PathLike[str], report: JsonReport) -> Path:
    """Write ``report`` as indented JSON (UTF-8), secrets masked, and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(redact_data(report.model_dump(mode="json")), indent=2, ensure_ascii=False) + "\n"
    # lone surrogates from model text become \uXXXX escapes: valid JSON, valid UTF-8
    path.write_bytes(text.encode("utf-8", "backslashreplace"))
    return path
