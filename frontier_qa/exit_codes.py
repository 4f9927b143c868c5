"""The exit codes of frontier-qa, in one place.

The CLI returns them, the pytest plugin sets the session's exit status to them, and the
reports say which one a run ended with:

===  ======================  ===================================================================
0    ``EXIT_OK``             the gate passed
1    ``EXIT_FINDINGS``       the gate failed: failures, regressions ... over their limits
2    ``EXIT_USAGE``          a usage or configuration error; nothing ran (or nothing was lost)
3    ``EXIT_NO_JUDGEMENT``   the run could not judge the agent: the target was unavailable, every
                             call failed, no valid case was classified, too many stayed
                             unresolved, the curriculum gave nothing, nothing was stored to replay
130  ``EXIT_INTERRUPTED``    interrupted (Ctrl-C); what was classified is kept
===  ======================  ===================================================================

A "could not judge" run is never green: a silent CI job must not look like a healthy agent.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_NO_JUDGEMENT = 3
EXIT_INTERRUPTED = 130

MEANING: dict[int, str] = {
    EXIT_OK: "the gate passed",
    EXIT_FINDINGS: "the gate failed (findings over their limits)",
    EXIT_USAGE: "usage or configuration error",
    EXIT_NO_JUDGEMENT: "the run could not judge the agent",
    EXIT_INTERRUPTED: "interrupted",
}
"""Each exit code in words."""

__all__ = ["EXIT_FINDINGS", "EXIT_INTERRUPTED", "EXIT_NO_JUDGEMENT", "EXIT_OK", "EXIT_USAGE", "MEANING"]
