"""Where the agent's ability ends along each difficulty knob, in words every format shares.

A generators curriculum searches each knob of its task generators for the values where
P(correct) falls through the thresholds (:class:`~frontier_qa.store._records.BoundaryRecord`, kept
in the run record). ``report.md``, ``report.html`` and the console show the same cells from here:
the summary row of each boundary (reliable up to, where it falls below each threshold), the
measured curve, and the failures shrunk to their minimal knob values. The strings are plain text:
each format escapes them its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from frontier_qa.store._records import BoundaryRecord, CrossingRecord, KnobValue, LevelPoint, ShrunkFailure

MISSING = "–"
"""What a cell of an unmeasured knob value (or a missing claim) shows."""


def knob_text(value: KnobValue | None) -> str:
    """A knob value as the reports show it (as the axis words it); :data:`MISSING` for none."""
    return MISSING if value is None else str(value)


def knobs_text(knobs: Mapping[str, KnobValue]) -> str:
    """``digits=7, op=mul``."""
    return ", ".join(f"{k}={v}" for k, v in knobs.items())


def threshold_text(threshold: float) -> str:
    """A threshold as the crossings' texts word it (``0.8``)."""
    return f"{threshold:g}"


def high_low(boundary: BoundaryRecord) -> tuple[CrossingRecord | None, CrossingRecord | None]:
    """The crossings of the highest and of the lowest threshold (the band's ends); the low one is
    ``None`` when there is only one threshold, both when there is none.
    """
    if not boundary.crossings:
        return None, None
    ordered = sorted(boundary.crossings, key=lambda c: -c.threshold)
    return ordered[0], (ordered[-1] if len(ordered) > 1 else None)


def _bracket(c: CrossingRecord) -> str:
    """`` (3–5)`` when the claim's interval spans more than one value; `` (3–?)`` when no value is
    confidently below yet.
    """
    if c.low is None or c.low == c.first_below and c.high == c.first_below:
        return ""
    if c.high is None:
        return f" ({knob_text(c.low)}–?)"
    return "" if c.low == c.high else f" ({knob_text(c.low)}–{knob_text(c.high)})"


def falls_below(c: CrossingRecord | None) -> str:
    """Where P(correct) falls below a threshold: ``4 (3–5)``, ``not reached``, ``at the easy end``
    or ``undecided`` (``4 (3–5), undecided`` when the search stopped before the bracket closed).
    """
    if c is None:
        return MISSING
    if c.status in ("not reached", "at the easy end"):
        return c.status
    if c.first_below is None:
        return "undecided"
    where = knob_text(c.first_below) + _bracket(c)
    return where if c.status == "found" else f"{where}, {c.status}"


def reliable_up_to(c: CrossingRecord | None) -> str:
    """How far P(correct) stays at or above the high threshold: the last value above it
    (``9 (hardest searched)`` when it never falls below), ``nowhere`` when even the easy end is below.
    """
    if c is None:
        return MISSING
    if c.status == "not reached":
        return f"{knob_text(c.last_above)} (hardest searched)"
    if c.status == "at the easy end":
        return "nowhere"
    return knob_text(c.last_above)


def summary_header(boundaries: Sequence[BoundaryRecord]) -> list[str]:
    """The summary table's columns; the thresholds named when every boundary has the same ones."""
    high, low = _uniform(boundaries)
    hi = "high threshold" if high is None else threshold_text(high)
    lo = "low threshold" if low is None else threshold_text(low)
    return ["axis", f"reliable (P ≥ {hi}) up to", f"falls below {hi} at", f"falls below {lo} at", "calls"]


def summary_row(boundary: BoundaryRecord, boundaries: Sequence[BoundaryRecord]) -> list[str]:
    """One boundary's summary row (plain text), under :func:`summary_header` of ``boundaries``; each
    cell names its threshold when the boundaries' thresholds differ.
    """
    uniform = _uniform(boundaries) != (None, None)
    high, low = high_low(boundary)

    def named(c: CrossingRecord | None, text: str) -> str:
        return text if uniform or c is None else f"threshold {threshold_text(c.threshold)}: {text}"

    return [boundary.axis, named(high, reliable_up_to(high)), named(high, falls_below(high)),
            named(low, falls_below(low)), str(boundary.calls)]


def _uniform(boundaries: Sequence[BoundaryRecord]) -> tuple[float | None, float | None]:
    """The high and low thresholds every boundary shares, ``(None, None)`` when they differ."""
    pairs = {tuple(None if c is None else c.threshold for c in high_low(b)) for b in boundaries}
    if len(pairs) != 1:
        return None, None
    high, low = next(iter(pairs))
    return high, low


def accuracy_text(level: LevelPoint) -> str:
    """``0.62 [0.41–0.80]``: the mean accuracy with its 90 % interval; :data:`MISSING` when unmeasured."""
    if level.accuracy is None:
        return MISSING
    interval = "" if level.low is None or level.high is None else f" [{level.low:.2f}–{level.high:.2f}]"
    return f"{level.accuracy:.2f}{interval}"


CURVE_HEADER = ("instances", "samples", "accuracy [90 % interval]", "mean p̂")
"""The curve table's columns after the knob's own."""


def curve_row(level: LevelPoint) -> list[str]:
    """One knob value of the measured curve: value, instances, samples, accuracy, mean p̂."""
    measured = level.accuracy is not None
    return [
        knob_text(level.value),
        str(level.instances) if level.instances or measured else MISSING,
        str(level.samples) if measured else MISSING,
        accuracy_text(level),
        MISSING if level.p_hat is None else f"{level.p_hat:.2f}",
    ]


P_HAT_NOTE = ("Mean p̂ is how often an instance's answers agree with each other (the majority's share, "
              "Agent0's self-consistency), right or wrong: a stable wrong answer has p̂ 1.00 and accuracy 0.00.")
"""What the curve's second line is, said wherever the curve is shown."""


def shrunk(s: ShrunkFailure) -> bool:
    """Whether shrinking found a smaller failing case (else the failure was already minimal)."""
    return s.to_case != s.from_case


def shrunk_text(s: ShrunkFailure, text: Callable[[str], str], code: Callable[[str], str]) -> str:
    """``failure at digits=7, op=mul shrunk to digits=5, op=mul (case `id`, 6 candidates probed)``;
    ``text`` renders the words (escaped for the format), ``code`` a case id.
    """
    probed = f"{s.steps} candidate{'' if s.steps == 1 else 's'} probed"
    if not shrunk(s):
        return (f"failure at {text(knobs_text(s.from_knobs))} (case {code(s.from_case)}) already minimal "
                f"({probed})")
    if s.simplest and s.knobs == s.from_knobs:
        return (f"failure at {text(knobs_text(s.from_knobs))} (case {code(s.from_case)}): no smaller knob value "
                f"fails, and the generator's simplest instance there still does (case {code(s.to_case)}, {probed})")
    to = text(knobs_text(s.knobs)) + (", its simplest instance" if s.simplest else "")
    return (f"failure at {text(knobs_text(s.from_knobs))} (case {code(s.from_case)}) shrunk to "
            f"{to} (case {code(s.to_case)}, {probed}, {s.accepted} still failing)")


def shrunk_short(s: ShrunkFailure) -> str:
    """``digits=7, op=mul → digits=5, op=mul (case ID, 6 candidates probed)`` (the console's words)."""
    probed = f"{s.steps} candidate{'' if s.steps == 1 else 's'} probed"
    if not shrunk(s):
        return f"{knobs_text(s.from_knobs)} already minimal (case {s.from_case}, {probed})"
    if s.simplest and s.knobs == s.from_knobs:
        return f"{knobs_text(s.knobs)}: minimal knobs; its simplest instance still fails (case {s.to_case}, {probed})"
    simplest = ", simplest instance" if s.simplest else ""
    return f"{knobs_text(s.from_knobs)} → {knobs_text(s.knobs)}{simplest} (case {s.to_case}, {probed})"


def console_line(boundary: BoundaryRecord) -> str:
    """``arithmetic · digits (op=mul): ≥0.8 up to 3; <0.8 at 4 (3–4); <0.3 at 6 (5–7)``."""
    high, _ = high_low(boundary)
    parts = []
    if high is not None and high.status not in ("at the easy end",) and (
            high.last_above is not None or high.status == "not reached"):
        parts.append(f"≥{threshold_text(high.threshold)} up to {reliable_up_to(high)}")
    for c in sorted(boundary.crossings, key=lambda c: -c.threshold):
        t = threshold_text(c.threshold)
        if c.status == "not reached":
            if high is not None and high.status != "not reached":  # else "≥ high up to the hardest" says it
                parts.append(f"<{t} not reached")
        elif c.status == "at the easy end":
            parts.append(f"<{t} already at {knob_text(c.first_below)} (easiest)")
        else:
            parts.append(f"<{t} at {falls_below(c)}" if c.first_below is not None else f"<{t} undecided")
    return f"{boundary.axis}: " + ("; ".join(parts) or "no crossings measured")


__all__ = [
    "CURVE_HEADER",
    "MISSING",
    "accuracy_text",
    "console_line",
    "curve_row",
    "falls_below",
    "high_low",
    "knob_text",
    "knobs_text",
    "reliable_up_to",
    "shrunk",
    "shrunk_short",
    "shrunk_text",
    "summary_header",
    "summary_row",
    "threshold_text",
]
