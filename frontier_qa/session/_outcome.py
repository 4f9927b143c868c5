"""What a run did, judged once: :class:`Outcome`, and the pieces that make one.

:func:`judge` takes a run's records (or several runs': shards, a pytest session's runs), applies
the health checks and the gate (:mod:`frontier_qa.reports._gate`), sums what each model spent
(:class:`Meter` reads it from the models' own counters while a run goes on) and words the next
steps for the way the user runs frontier-qa (:class:`Invocation`). Every output of the run
renders the outcome: the console (:meth:`Outcome.lines`), ``cases.jsonl`` and the reports
(:meth:`Outcome.report`), the pytest terminal summary.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from frontier_qa.reports import RunFacts, evaluate_gate, summarize
from frontier_qa.reports._console import console_lines
from frontier_qa.reports._gate import GateResult, GateThresholds
from frontier_qa.reports._report_input import ReportInput
from frontier_qa.reports._summary import Summary
from frontier_qa.store._comparison import Comparison, RegressionVerdict, from_record
from frontier_qa.store._records import Candidates, CaseClass, CaseRecord, ModelSpend, RunRecord

FINDINGS = (CaseClass.FAILURE, CaseClass.SUSPECT, CaseClass.FRONTIER)
"""The classes a run's findings have (what a suite keeps and the next steps are about)."""


# --- what a run did ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a probe, a replay, a merge or a pytest session did, judged once.

    Attributes:
        mode: ``"probe"``, ``"replay"`` or ``"merge"``; its gate's thresholds are the config's
            ``gate`` for a probe or a merge, ``replay.gate`` for a replay.
        title: the summary's first line (the command, the run, the target, why it stopped).
        records: the latest record of each case the run recorded.
        comparisons: the replay verdicts (cases held to their baselines).
        run: the run record, when the outcome is one run's.
        facts: what the run knows beyond its records (stop reason, proposals, planned replays).
        gate: the gate's decision: the health checks, then the thresholds.
        spend: what each model spent, by role (``target``, ``curriculum``, ``judge``, ``critic``).
        candidates: what became of the curriculum's proposals (probes).
        next_steps: commands that keep, replay, accept and inspect the findings.
        invocation: how the user ran it (the next steps' and hints' flags).
        budget: the run's budget line: every model's calls, tokens, cost and wall time against the
            limits (``calls 11/11, ...``), when the session's models were open.
        changes: what changed in the cases' source since they were stored, and what was done
            (re-judged from stored samples, probed again, no longer replayed): said once.
    """

    mode: str
    title: str
    records: tuple[CaseRecord, ...]
    comparisons: tuple[Comparison, ...]
    run: RunRecord | None
    facts: RunFacts
    gate: GateResult
    spend: Mapping[str, ModelSpend] = field(default_factory=dict)
    candidates: Candidates | None = None
    next_steps: tuple[str, ...] = ()
    invocation: Invocation | None = None
    budget: str | None = None
    changes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """0 the gate passed, 1 it failed (findings), 3 the run could not judge the agent."""
        return self.gate.exit_code

    @property
    def run_id(self) -> str | None:
        return None if self.run is None else self.run.run_id

    @property
    def stop_reason(self) -> str | None:
        return self.facts.stop_reason

    @property
    def summary(self) -> Summary:
        return summarize(self.records)

    def report(self, history: Mapping[str, Sequence[CaseRecord]] | None = None) -> ReportInput:
        """The input every report format and the console render."""
        return ReportInput.of(self.summary, self.run, gate=self.gate, comparisons=self.comparisons, history=history,
                              spend=self.spend, candidates=self.candidates, next_steps=self.next_steps,
                              changes=self.changes, warnings=[w.message for w in self.facts.warnings])

    def lines(self, written: Mapping[str, Path] | None = None, replay: Callable[[str], str] | None = None) -> list[str]:
        """The console summary (:func:`~frontier_qa.reports._console.console_lines`)."""
        store = "" if self.invocation is None else self.invocation.args(store_only=True)
        return console_lines(self.report(), self.title, written=written, replay=replay,
                             removed=f"frontier-qa cases list --class invalid{store}", budget=self.budget)


@dataclass(frozen=True)
class Invocation:
    """How the user runs frontier-qa, so that the next steps are commands to paste as they are.

    Attributes:
        config: the ``--config`` file given, if any.
        target: the ``--target`` given, if any.
        store: the ``--store`` given, if any.
        suite: the committed suite replayed or written, if any.
        pytest: the pytest command that replays the marked tests (the plugin's way in), if any.
    """

    config: str | None = None
    target: str | None = None
    store: str | None = None
    suite: str | None = None
    pytest: str | None = None

    def args(self, *, store_only: bool = False) -> str:
        pairs = [("--store", self.store)] if store_only else [("--config", self.config), ("--target", self.target),
                                                               ("--store", self.store)]
        return "".join(f" {flag} {shlex.quote(str(value))}" for flag, value in pairs if value is not None)

    def steps(self, summary: Summary, comparisons: Sequence[Comparison]) -> tuple[str, ...]:
        """The commands that keep, replay, accept and inspect a run's findings (``what: command``)."""
        findings = sorted((r for r in summary.records if r.case_class in FINDINGS),
                          key=lambda r: (FINDINGS.index(r.case_class), r.id))
        regressed = [c.case_id for c in comparisons if c.verdict is RegressionVerdict.REGRESSION]
        example = regressed[0] if regressed else findings[0].id if findings else None
        args, store = self.args(), self.args(store_only=True)
        steps = []
        if self.pytest is not None:
            if findings and self.suite is None:
                steps.append(f"keep the findings as a committed suite: frontier-qa export --suite "
                             f"tests/frontier_suite.yaml{store}")
            steps.append(f"replay the stored cases: {self.pytest}")
            if example is not None:
                steps.append(f"accept what the agent does now as right: {self.pytest} --frontier-accept")
        else:
            suite = "" if self.suite is None else f" --suite {shlex.quote(self.suite)}"
            if findings and self.suite is None:
                steps.append(f"keep the findings as a committed suite: frontier-qa export --suite "
                             f"tests/frontier_suite.yaml{store}")
            steps.append(f"replay them (CI, pull requests): frontier-qa replay{args}{suite}")
            if regressed:
                one = shlex.quote(regressed[0])
                steps.append(f"replay just one case: frontier-qa replay{args}{suite} --case {one}")
            if example is not None:
                steps.append(f"accept what the agent does now on a case as right: frontier-qa accept "
                             f"{shlex.quote(example)}{args}")
        if example is not None:
            steps.append(f"inspect a case and its history: frontier-qa cases show {shlex.quote(example)}{store}")
        unchecked = summary.by_class.get(CaseClass.UNCHECKED, 0)
        if unchecked:
            steps.append(f"check the {unchecked} task(s) the agent was unsure on before calling them its frontier: "
                         "set validation.validity.model to a judge model (docs/explanation/well-posed.md)")
        return tuple(steps)


# --- the models of a session and what they spent -----------------------------------------------------


def _meterable(part: Any) -> Any:
    """The managed target behind a part (a tools+ executor wraps one; a curriculum holds one)."""
    for candidate in (part, getattr(part, "inner", None), getattr(part, "model", None)):
        if candidate is not None and callable(getattr(candidate, "stats", None)):
            return candidate
    return None


def _spend_of(stats: Any) -> ModelSpend:
    return ModelSpend(calls=stats.calls, cached=stats.cached, failed=stats.failed, tokens=stats.tokens,
                      usd=stats.cost_usd)


def _minus(now: ModelSpend, before: ModelSpend) -> ModelSpend:
    usd = None if now.usd is None else now.usd - (before.usd or 0.0)
    return ModelSpend(calls=now.calls - before.calls, cached=now.cached - before.cached,
                      failed=now.failed - before.failed, tokens=now.tokens - before.tokens, usd=usd)


class Meter:
    """What each model of a session spent since the meter was made (:class:`~frontier_qa.store._records.ModelSpend`
    by role), read from the models' own counters: calls a server saw, samples served from the cache.
    """

    def __init__(self, models: Mapping[str, Any]) -> None:
        self._models = {role: m for role, part in models.items() if (m := _meterable(part)) is not None}
        self._start = {role: _spend_of(m.stats()) for role, m in self._models.items()}

    def __call__(self) -> dict[str, ModelSpend]:
        out = {}
        for role, model in self._models.items():
            spent = _minus(_spend_of(model.stats()), self._start[role])
            if role == "target" or spent.calls or spent.cached:
                out[role] = spent
        return out


def combine(runs: Iterable[RunRecord]) -> tuple[dict[str, ModelSpend], Candidates | None]:
    """The spend and the candidates of several runs (shards, the runs of a pytest session), summed."""
    spend: dict[str, ModelSpend] = {}
    candidates: Candidates | None = None
    for run in runs:
        for role, m in run.totals.spend.items():
            have = spend.get(role)
            spend[role] = m if have is None else ModelSpend(
                calls=have.calls + m.calls, cached=have.cached + m.cached, failed=have.failed + m.failed,
                tokens=have.tokens + m.tokens,
                usd=None if have.usd is None and m.usd is None else (have.usd or 0.0) + (m.usd or 0.0))
        c = run.totals.candidates
        if c is not None:
            candidates = c if candidates is None else Candidates(**{
                name: getattr(candidates, name) + getattr(c, name) for name in Candidates.model_fields})
    return spend, candidates


def judge(mode: str, records: Iterable[CaseRecord], thresholds: GateThresholds, *,
          comparisons: Iterable[Comparison] | None = None, runs: Sequence[RunRecord] = (),
          facts: RunFacts | None = None, title: str | None = None,
          invocation: Invocation | None = None, changes: Sequence[str] = ()) -> Outcome:
    """Judge what one or more runs recorded, once: health, the gate's ``thresholds``, what the runs'
    models spent, the next steps (:meth:`Session.judge` picks the thresholds of its config).

    Args:
        mode: what ran (``probe``, ``replay``, ``merge``).
        records: the runs' case records (the latest per case counts).
        thresholds: the gate's limits.
        comparisons: the replay verdicts (default: those the records carry).
        runs: the runs' records (their spend and candidates are summed).
        facts: what the runs know beyond their records (default: the mode alone).
        title: the summary's first line.
        invocation: how the user runs frontier-qa (for the next steps).
        changes: what refreshing the stored cases from their source found (said once).
    """
    latest = summarize(records).records
    if comparisons is None:
        found = (from_record(r, None) for r in latest if r.verdict is not None)
        comparisons = [c for c in found if c is not None]
    verdicts = tuple(sorted(comparisons, key=lambda c: c.case_id))
    summary = summarize(latest)
    facts = facts or RunFacts(mode=mode)
    if not facts.warnings:  # what the runs warned of as they started (shards of one run warn alike: once)
        facts = replace(facts, warnings=tuple({w.message: w for r in runs for w in r.warnings}.values()))
    gate = evaluate_gate(summary, thresholds, verdicts, facts, boundaries=[b for r in runs for b in r.boundaries])
    spend, candidates = combine(runs)
    return Outcome(mode=mode, title=title or f"frontier-qa {mode}", records=latest, comparisons=verdicts,
                   run=runs[0] if len(runs) == 1 else None, facts=facts, gate=gate, spend=spend,
                   candidates=candidates, next_steps=(invocation or Invocation()).steps(summary, verdicts),
                   invocation=invocation, changes=tuple(changes))


__all__ = ["FINDINGS", "Invocation", "Meter", "Outcome", "combine", "judge"]
