"""Why a probe or replay run (or one case's sampling) stopped: one enum instead of loose strings.

The values are the words records, reports and the console show (``stopped: curriculum
exhausted``); a member equals its value as a string, so a reason read back from a stored
record compares with the member, and ``str()``/f-strings print the value on every Python.
"""

from __future__ import annotations

import enum


class StopReason(str, enum.Enum):
    """Why sampling or a run stopped."""

    BUDGET = "budget"  # a budget ran out: the run stays open, resume it with more
    INTERRUPTED = "interrupted"  # Ctrl-C: the run stays open
    UNAVAILABLE = "target unavailable"  # too many failed calls in a row: the run stays open
    SATURATED = "saturated"  # the curriculum stopped finding new frontier cases
    EXHAUSTED = "curriculum exhausted"  # no more proposals
    MAX_CANDIDATES = "max candidates"  # probing.max_candidates proposals considered
    DONE = "done"  # a replay went through its plan
    NO_SAMPLES = "the target returned no samples"  # one case's sampling: an adapter returned nothing

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def leaves_run_open(self) -> bool:
        """Whether the run stays open (resume it to go on) rather than finished."""
        return self in (StopReason.BUDGET, StopReason.INTERRUPTED, StopReason.UNAVAILABLE)


# The names the probe engine has always exported, as aliases of the members (defined here once).
STOP_BUDGET = StopReason.BUDGET
STOP_INTERRUPTED = StopReason.INTERRUPTED
STOP_UNAVAILABLE = StopReason.UNAVAILABLE
STOP_SATURATED = StopReason.SATURATED
STOP_EXHAUSTED = StopReason.EXHAUSTED
STOP_MAX_CANDIDATES = StopReason.MAX_CANDIDATES
STOP_DONE = StopReason.DONE

__all__ = ["STOP_BUDGET", "STOP_DONE", "STOP_EXHAUSTED", "STOP_INTERRUPTED", "STOP_MAX_CANDIDATES", "STOP_SATURATED",
           "STOP_UNAVAILABLE", "StopReason"]
