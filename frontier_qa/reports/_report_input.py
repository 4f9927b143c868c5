"""What every report format is built from, once: :class:`ReportInput`.

``report.json``, ``report.md`` and ``report.html`` show the same run: its summary, the run
record, the gate, the replay verdicts and each case's earlier observations. A caller builds
that once (:meth:`ReportInput.of`) and hands it to each builder; the builders still take the
records and these parts as keywords (:class:`ReportParts`), and make the input themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from frontier_qa.reports._gate import GateResult
from frontier_qa.reports._path_findings import headline_lines
from frontier_qa.reports._summary import (
    Summary,
    answers_line,
    class_counts,
    precision_line,
    spend_line,
    summarize,
    top_cases,
)
from frontier_qa.store._comparison import Comparison, RegressionVerdict, count_verdicts
from frontier_qa.store._records import BoundaryRecord, Candidates, CaseClass, CaseRecord, ModelSpend, RunRecord

if TYPE_CHECKING:  # typing.Unpack is 3.11+; the package supports 3.10
    from typing_extensions import Unpack


TOP_SECTIONS = (
    (CaseClass.FRONTIER, "Top frontier cases"),
    (CaseClass.FAILURE, "Top failures"),
    (CaseClass.SUSPECT, "Top suspect cases"),
    (CaseClass.UNCHECKED, "Uncertain on unchecked tasks (the task may be what is unclear)"),
)
"""The classes whose cases the reports show in detail, in order, with the section titles."""


def boundaries_line(boundaries: Sequence[BoundaryRecord]) -> str:
    """``2 knob(s) searched: 4 crossings found, 0 undecided; 12 of 60 search samples unread; moved since
    the last search: 1 toward the easy end, 0 toward the hard end`` (the parts after the first when they apply).
    """
    crossings = [c for b in boundaries for c in b.crossings]
    undecided = sum(1 for c in crossings if c.status == "undecided")
    easier = sum(1 for b in boundaries for m in b.moved if m.direction == "easier")
    harder = sum(1 for b in boundaries for m in b.moved if m.direction == "harder")
    line = f"{len(boundaries)} knob(s) searched: {len(crossings) - undecided} crossings found, {undecided} undecided"
    unread = sum(level.unread for b in boundaries for level in b.levels)
    if unread:
        read = sum(level.samples for b in boundaries for level in b.levels)
        line += f"; {unread} of {unread + read} search samples unread (see each knob's note)"
    if easier or harder:
        line += f"; moved since the last search: {easier} toward the easy end, {harder} toward the hard end"
    return line


class ReportParts(TypedDict, total=False):
    """The keywords every report builder takes besides the records and the run (see :class:`ReportInput`)."""

    gate: GateResult | None
    comparisons: Sequence[Comparison]
    history: Mapping[str, Sequence[CaseRecord]] | None
    spend: Mapping[str, ModelSpend] | None
    candidates: Candidates | None
    next_steps: Sequence[str]
    changes: Sequence[str]
    warnings: Sequence[str]


@dataclass(frozen=True)
class ReportInput:
    """One run as every report format shows it.

    Attributes:
        summary: the cases (latest record per case) and their counts.
        run: the run, for the header; ``None`` when the cases come from several runs.
        gate: the gate result to show, if evaluated.
        comparisons: replay verdicts, if any.
        history: every observation of each case, oldest first (trend lines), by case id.
        spend: what each model of the run spent, by role (``target``, ``curriculum``...); when not
            given, the run record's (``run.totals.spend``).
        candidates: what became of the curriculum's proposals; when not given, the run record's.
        next_steps: the commands that keep, replay, accept and inspect the run's findings.
        changes: what changed in the cases' source since they were stored, and what was done.
        warnings: what the run warned of as it started (a ``k`` that caps the policy too low); when
            not given, the run record's.
    """

    summary: Summary
    run: RunRecord | None = None
    gate: GateResult | None = None
    comparisons: Sequence[Comparison] = ()
    history: Mapping[str, Sequence[CaseRecord]] = field(default_factory=dict)
    spend: Mapping[str, ModelSpend] = field(default_factory=dict)
    candidates: Candidates | None = None
    next_steps: Sequence[str] = ()
    changes: Sequence[str] = ()
    warnings: Sequence[str] = ()

    @classmethod
    def of(cls, records: ReportInput | Summary | Iterable[CaseRecord], run: RunRecord | None = None,
           **parts: Unpack[ReportParts]) -> ReportInput:
        """The input from case records (or their summary) and the parts; an input as it is.

        Raises:
            TypeError: an unknown keyword, or an input given together with a run or parts (they
                would be ignored).
        """
        unknown = sorted(parts.keys() - ReportParts.__annotations__.keys())
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r}: a report takes "
                            f"{', '.join(ReportParts.__annotations__)}")
        if isinstance(records, ReportInput):
            if run is not None or parts:
                raise TypeError("pass the run, gate, comparisons and history in the ReportInput, not beside it")
            return records
        summary = records if isinstance(records, Summary) else summarize(records)
        spend = parts.get("spend")
        candidates = parts.get("candidates")
        warnings = parts.get("warnings")
        if run is not None:  # the run record keeps them: a report written later shows the same numbers
            spend = run.totals.spend if spend is None else spend
            candidates = run.totals.candidates if candidates is None else candidates
            warnings = [w.message for w in run.warnings] if warnings is None else warnings
        return cls(summary, run, parts.get("gate"), parts.get("comparisons", ()), parts.get("history") or {},
                   spend or {}, candidates, tuple(parts.get("next_steps", ())), tuple(parts.get("changes", ())),
                   tuple(warnings or ()))

    @property
    def boundaries(self) -> tuple[BoundaryRecord, ...]:
        """Where the agent's ability ends along each knob the run searched (its run record's
        boundaries: a generators curriculum's findings); ``()`` without a run.
        """
        return () if self.run is None else tuple(self.run.boundaries)

    def headline(self) -> list[tuple[str, str]]:
        """The run's numbers as every output words them, ``(label, text)`` in order: the cases by
        class, the frontier labels' expected precision, how the answers were read, the paths and
        pass^k (when analysed), what became of the proposals, what each model spent, where the
        population prior came from, the replay verdicts. The console, report.md/.html/.json,
        junit.xml and the pytest summary all show these lines.
        """
        s = self.summary
        lines = [("cases", class_counts(s))]
        precision = precision_line(s)
        if precision is not None:
            lines.append(("frontier precision", precision))
        read = answers_line(s)
        if read is not None:
            lines.append(("answers", read))
        lines += headline_lines(s)  # paths and pass^k, when the run analysed any
        if self.candidates is not None:
            lines.append(("candidates", self.candidates.describe()))
        lines.append(("spent", spend_line(self.spend, s.cost)))
        if self.run is not None and self.run.prior is not None:
            lines.append(("prior", self.run.prior.describe()))
        if self.boundaries:
            lines.append(("boundaries", boundaries_line(self.boundaries)))
        if self.comparisons:
            guards = sum(1 for c in self.comparisons if c.role == "guard")
            verdicts = ", ".join(f"{v.value} {n}" for v, n in self.verdicts().items() if n) or "nothing"
            lines.append(("replay", verdicts + (f" ({guards} guard case(s) among them)" if guards else "")))
        return lines

    def verdicts(self, role: str | None = None) -> dict[RegressionVerdict, int]:
        """How many replay comparisons got each verdict: all, or one role's (``"finding"``, ``"guard"``)."""
        return count_verdicts(c for c in self.comparisons if role is None or c.role == role)

    def top_sections(self, top: int) -> list[tuple[CaseClass, str, list[CaseRecord]]]:
        """The detailed sections: (class, title, its ``top`` most telling cases) by :data:`TOP_SECTIONS`,
        the empty ones left out.
        """
        found = ((cls, title, top_cases(self.summary.records, cls, top)) for cls, title in TOP_SECTIONS)
        return [(cls, title, chosen) for cls, title, chosen in found if chosen]

    def run_header(self, name: Callable[[str], str], *, seed: bool = True) -> list[str]:
        """The run's header items (version, run id, shard, start, seed); ``name`` renders the
        version and the run id for the format (escaped, quoted as code). None without a run.
        """
        run = self.run
        if run is None:
            return []
        items = [f"version {name(run.target_version)}"] if run.target_version else []
        items.append(f"run {name(run.run_id)}")
        if run.shard_count > 1:
            items.append(f"shard {run.shard_index}/{run.shard_count}")
        items.append(f"started {run.started_at:%Y-%m-%d %H:%M} UTC")
        if seed and run.seed is not None:
            items.append(f"seed {run.seed}")
        return items


__all__ = ["TOP_SECTIONS", "ReportInput", "ReportParts"]
