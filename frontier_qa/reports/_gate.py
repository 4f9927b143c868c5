"""The CI gate: run health, then thresholds on failures, frontier share and replay verdicts.

:attr:`GateResult.exit_code` is what the CLI and the pytest plugin end with
(:mod:`frontier_qa.exit_codes`): 3 when the run could not judge the agent
(:mod:`~frontier_qa.reports._health`), else 1 when a check failed, else 0. Every failed check
says what was measured and which limit it broke.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from frontier_qa._frozen import frozen_value
from frontier_qa.exit_codes import EXIT_FINDINGS, EXIT_NO_JUDGEMENT, EXIT_OK
from frontier_qa.reports._health import HealthProblem, RunFacts, assess
from frontier_qa.reports._summary import Summary, summarize
from frontier_qa.store._comparison import Comparison, RegressionVerdict, count_verdicts
from frontier_qa.store._records import BoundaryRecord, CaseClass, CaseRecord

Count = Annotated["int | None", Field(ge=0)]
Share = Annotated["float | None", Field(ge=0, le=1)]


@frozen_value
class GateThresholds:
    """Limits the gate checks; ``None`` turns a check off (config: the ``gate`` section).

    Attributes:
        max_failures: most ``failure`` cases allowed (wrong against a verified reference).
        max_suspects: most ``suspect`` cases allowed (wrong against an unverified reference).
        max_frontier_share: most frontier cases allowed, as a share of valid cases in [0, 1].
        max_unchecked: most ``unchecked`` cases allowed (uncertain on a task nobody checked; off by
            default: such a case says nothing certain about the agent).
        max_unresolved_share: most unresolved cases, as a share of valid cases in [0, 1]; above
            it the run could not judge the agent (exit 3, a health problem, not a finding).
        max_regressions: most replay regressions allowed.
        max_flaky: most flaky failures allowed on replay.
        max_inconclusive: most replay verdicts left undecided at the sample cap (off by default:
            "could not tell yet" is not a finding).
        max_boundary_regressions: most crossings (task generators) that moved toward the easy end
            of their knob since the latest earlier run searched it: the agent now fails easier tasks.
        min_pass_hat_k: least mean pass^k over the cases that count it (``probing.pass_k``); off by
            default. No case with a pass^k value: nothing to check.
        max_wrong_paths: most cases whose samples agree on a path that misses their expectations
            (this and max_path_scatter are checked when the run analysed a path).
        max_path_scatter: most cases whose samples scatter over different paths (off by default).
    """

    max_failures: Count = 0
    max_suspects: Count = None
    max_frontier_share: Share = None
    max_unchecked: Annotated[Count, Field(
        description="most cases uncertain on an unchecked task (no verified reference, not judged well-posed)")] = None
    max_unresolved_share: Annotated[Share, Field(
        description="above it the run could not judge the agent: exit 3, not a finding")] = 0.2
    max_regressions: Count = 0
    max_flaky: Count = None
    max_inconclusive: Annotated[Count, Field(description="replay verdicts left undecided at the cap")] = None
    max_boundary_regressions: Annotated[Count, Field(
        description="most boundaries that moved toward the easy end since the last search of the same knob")] = 0
    min_pass_hat_k: Annotated[Share, Field(
        description="least mean pass^k over the cases that count it (probing.pass_k); null: no check")] = None
    max_wrong_paths: Annotated[Count, Field(
        description="most cases whose samples agree on a path that misses their expectations")] = 0
    max_path_scatter: Annotated[Count, Field(description="most cases whose samples scatter over paths")] = None


@dataclass(frozen=True)
class GateCheck:
    """One check: what was measured, its limit, and whether it held."""

    name: str
    value: float
    limit: float
    passed: bool
    message: str


@dataclass(frozen=True)
class GateResult:
    """The gate's decision.

    Attributes:
        passed: the run was healthy and every check held.
        checks: every check that ran, in a fixed order.
        health: why the run could not judge the agent (empty when it could).
        reasons: the health problems' and failed checks' messages (empty when passed).
    """

    passed: bool
    checks: tuple[GateCheck, ...]
    health: tuple[HealthProblem, ...] = ()

    @property
    def judged(self) -> bool:
        """Whether the run could judge the agent (no health problem)."""
        return not self.health

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(p.message for p in self.health) + tuple(c.message for c in self.checks if not c.passed)

    @property
    def exit_code(self) -> int:
        """3 when the run could not judge the agent, else 1 when a check failed, else 0."""
        if self.health:
            return EXIT_NO_JUDGEMENT
        return EXIT_OK if self.passed else EXIT_FINDINGS


COUNTED: dict[str, tuple[str, str]] = {
    "failures": ("failure", "failures"),
    "suspects": ("suspect case", "suspect cases"),
    "unchecked": ("case uncertain on an unchecked task", "cases uncertain on unchecked tasks"),
    "regressions": ("replay regression", "replay regressions"),
    "flaky": ("flaky failure", "flaky failures"),
    "inconclusive": ("inconclusive replay", "inconclusive replays"),
    "boundary_regressions": ("boundary crossing moved toward the easy end",
                             "boundary crossings moved toward the easy end"),
    "wrong_paths": ("case on a wrong path", "cases on a wrong path"),
    "path_scatter": ("case whose paths scatter", "cases whose paths scatter"),
}
"""What each counted check counts, in the singular and the plural."""


def _count(name: str, value: int, limit: int) -> GateCheck:
    ok = value <= limit
    one, many = COUNTED[name]
    where = "within" if ok else "above"
    return GateCheck(name, value, limit, ok, f"{value} {one if value == 1 else many} ({where} the limit of {limit})")


def _share(name: str, what: str, part: int, whole: int, limit: float) -> GateCheck:
    value = part / whole if whole else 0.0
    ok = value <= limit + 1e-12
    verdict = "within" if ok else "above"
    return GateCheck(
        name,
        value,
        limit,
        ok,
        f"{what} share {value:.1%} ({part}/{whole}) is {verdict} the limit of {limit:.1%}",
    )


def _path_checks(summary: Summary, t: GateThresholds) -> list[GateCheck]:
    """The path findings and pass^k against their limits (the numbers are the summary's, as every report's);
    a run that analysed no path has no path check, as one without generators has no boundary check.
    """
    checks: list[GateCheck] = []
    found = summary.path_findings if summary.paths else {}
    if t.max_wrong_paths is not None and summary.paths:
        checks.append(_count("wrong_paths", found.get("wrong", 0), t.max_wrong_paths))
    if t.max_path_scatter is not None and summary.paths:
        checks.append(_count("path_scatter", found.get("scatter", 0),
                             t.max_path_scatter))
    pass_k = summary.pass_k
    if t.min_pass_hat_k is not None and pass_k is not None and pass_k.value is not None:
        ok = pass_k.value >= t.min_pass_hat_k - 1e-12
        checks.append(GateCheck(
            "pass_hat_k", pass_k.value, t.min_pass_hat_k, ok,
            f"pass^{pass_k.k} {pass_k.value:.2f} over {pass_k.cases} case(s) is {'at or above' if ok else 'below'} "
            f"the minimum of {t.min_pass_hat_k:.2f}"))
    return checks


def evaluate_gate(
    records: Iterable[CaseRecord] | Summary,
    thresholds: GateThresholds = GateThresholds(),
    comparisons: Sequence[Comparison] = (),
    facts: RunFacts | None = None,
    boundaries: Sequence[BoundaryRecord] = (),
) -> GateResult:
    """Decide pass or fail, or that the run could not judge the agent.

    Args:
        records: the run's case records (latest per case), or their :class:`Summary`.
        thresholds: the limits; the default fails on any failure or regression.
        comparisons: replay verdicts (:func:`~frontier_qa.store._comparison.compare_all`).
        facts: what the run knows beyond its records (stop reason, proposals, planned
            replays), for the health checks; ``None`` checks the records alone.
        boundaries: the task generators' boundaries the run found (their moves are counted).
    """
    summary = records if isinstance(records, Summary) else summarize(records)
    t, counts = thresholds, summary.by_class
    valid = summary.total - counts[CaseClass.INVALID]
    verdicts = count_verdicts(comparisons)
    checks: list[GateCheck] = []
    if t.max_failures is not None:
        checks.append(_count("failures", counts[CaseClass.FAILURE], t.max_failures))
    if t.max_suspects is not None:
        checks.append(_count("suspects", counts[CaseClass.SUSPECT], t.max_suspects))
    if t.max_frontier_share is not None:
        checks.append(
            _share("frontier_share", "frontier", counts[CaseClass.FRONTIER], valid, t.max_frontier_share)
        )
    if t.max_unchecked is not None:
        checks.append(_count("unchecked", counts[CaseClass.UNCHECKED],
                             t.max_unchecked))
    if t.max_regressions is not None:
        checks.append(
            _count("regressions", verdicts[RegressionVerdict.REGRESSION], t.max_regressions)
        )
    if t.max_flaky is not None:
        checks.append(_count("flaky", verdicts[RegressionVerdict.FLAKY], t.max_flaky))
    if t.max_inconclusive is not None:
        checks.append(_count("inconclusive", verdicts[RegressionVerdict.INCONCLUSIVE],
                             t.max_inconclusive))
    if t.max_boundary_regressions is not None and boundaries:
        moved = sum(1 for b in boundaries for m in b.moved if m.direction == "easier")
        checks.append(_count("boundary_regressions", moved,
                             t.max_boundary_regressions))
    checks += _path_checks(summary, t)
    health = assess(summary, facts or RunFacts(mode="unknown"), max_unresolved_share=t.max_unresolved_share,
                    boundaries=boundaries)
    return GateResult(passed=not health and all(c.passed for c in checks), checks=tuple(checks), health=health)
