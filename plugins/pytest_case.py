"""``FrontierCase``: what a frontier test receives, one case at a time.

A test marked ``@pytest.mark.frontier`` gets a :class:`FrontierCase` per stored (or newly
found) case. It holds the case, what was stored about it (the baseline), a fresh replay
against the agent made by the engine (:class:`frontier_qa.probing.run.ProbeRun`), the
engine's verdict on the two (:func:`frontier_qa.store.comparison.compare`) and a handle to
sample the agent again::

    def test_agent(frontier_case):
        assert frontier_case.case_class != "failure"        # the replay's class
        frontier_case.assert_no_regression()                # class or p̂ got worse
        texts = [t.text for t in frontier_case.sample(2)]   # two more fresh samples

**Flaky.** A stored failure that the same target (id and version) no longer fails is the
engine's ``flaky`` verdict. The plugin also calls a stored *frontier* or *suspect* case
flaky when the same target now lands in a better class: the same agent cannot have got
better, so the earlier finding did not reproduce (the engine calls that ``improved``,
which is right only for a new target or version). A flaky case is never a silent pass:
the plugin reports it as xfail (or a failure with ``--frontier-flaky=fail``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from frontier_qa.store.comparison import Comparison, Verdict
from frontier_qa.store.records import CaseClass, CaseRecord, Interval, Observed, SuiteCase
from frontier_qa.target import Case, Sampling, Trajectory

if TYPE_CHECKING:
    from frontier_qa.plugins.pytest_suite import Suite

NEW = "new"  # the verdict of a case first found in this session: nothing to compare with


def _observed(baseline: CaseRecord | SuiteCase | None) -> Observed | None:
    if baseline is None:
        return None
    return baseline.observed() if isinstance(baseline, CaseRecord) else baseline.observed


def flaky_reason(comparison: Comparison | None, old: Observed | None, new: CaseRecord | None) -> str | None:
    """Why a replay did not reproduce its stored case, or ``None`` when it did (module docstring).

    Args:
        comparison: the engine's verdict on the stored and replayed records.
        old: what was stored (class, p̂, target id and version).
        new: the replay's record.
    """
    if comparison is None or old is None or new is None:
        return None
    if comparison.verdict is Verdict.FLAKY:
        return comparison.reason
    same_target = (old.target_id, old.target_version) == (new.target_id, new.target_version)
    if (comparison.verdict is Verdict.IMPROVED and same_target and comparison.old_class is not comparison.new_class
            and comparison.old_class in (CaseClass.FRONTIER, CaseClass.SUSPECT)):
        return (f"{comparison.old_class.value} did not reproduce on the same target "
                f"({comparison.old_class.value} → {comparison.new_class.value}, "
                f"p̂ {_p(comparison.old_p_hat)} → {_p(comparison.new_p_hat)})")
    return None


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


class FrontierCase:
    """One frontier case of the agent under test, with its fresh replay.

    Attributes:
        id: the case id (stable across runs; part of the test id).
        case: the case as the target sees it (:class:`frontier_qa.target.Case`).
        stored: the stored record (or committed suite entry) the replay is compared with;
            ``None`` for a case first found in this session.
        replayed: the record of this session's run of the case: a fresh replay, or the
            probe that found it (``verdict == "new"``).
        comparison: the engine's verdict on ``stored`` → ``replayed`` (``None`` when new).
        flaky_reason: why the stored finding did not reproduce, ``None`` when it did.
    """

    def __init__(
        self,
        suite: Suite,
        stored: CaseRecord | SuiteCase | None,
        replayed: CaseRecord,
        comparison: Comparison | None,
    ) -> None:
        self._suite = suite
        self.stored = stored
        self.replayed = replayed
        self.comparison = comparison
        self.case: Case = replayed.case.to_case()
        self.id = self.case.id
        self.flaky_reason = flaky_reason(comparison, _observed(stored), replayed)
        used = [s.sample_index for s in replayed.samples]
        self._next_index = max(used) + 1 if used else 0

    def __repr__(self) -> str:
        return f"<FrontierCase {self.id} {self.case_class.value} p̂={_p(self.p_hat)} {self.verdict}>"

    # -- the case ------------------------------------------------------------------------------

    @property
    def prompt(self) -> str:
        return self.case.prompt

    @property
    def topic(self) -> str:
        return self.case.topic

    @property
    def reference(self) -> str | None:
        return self.case.reference

    # -- what was stored, what the replay found ----------------------------------------------------

    @property
    def stored_class(self) -> CaseClass | None:
        observed = _observed(self.stored)
        return None if observed is None else observed.case_class

    @property
    def stored_p_hat(self) -> float | None:
        observed = _observed(self.stored)
        return None if observed is None else observed.p_hat

    @property
    def case_class(self) -> CaseClass:
        """The replay's class (a ``str`` enum: ``frontier_case.case_class == "failure"`` works)."""
        return self.replayed.case_class

    @property
    def p_hat(self) -> float | None:
        """The replay's p̂: majority share of its k samples, in [0, 1] (Agent0 Eq. 6)."""
        return self.replayed.p_hat

    @property
    def interval(self) -> Interval | None:
        """The replay's confidence interval on p̂ (``.low``, ``.high``, in [0, 1])."""
        return self.replayed.interval

    @property
    def majority(self) -> str | None:
        """The replay's majority answer (pseudo-label)."""
        return self.replayed.majority

    @property
    def verdict(self) -> str:
        """``"new"``, ``"same"``, ``"improved"``, ``"regression"``, ``"flaky"`` or ``"inconclusive"``."""
        if self.comparison is None:
            return NEW
        if self.flaky_reason is not None:
            return Verdict.FLAKY.value
        return self.comparison.verdict.value

    @property
    def flaky(self) -> bool:
        return self.flaky_reason is not None

    def assert_no_regression(self) -> None:
        """Fail the test when the replay is worse than what was stored.

        Raises:
            AssertionError: the verdict is ``regression`` (class got worse, or p̂ left the
                stored interval in the bad direction); the message says how.
        """
        if self.verdict == Verdict.REGRESSION.value:
            assert self.comparison is not None
            raise AssertionError(
                f"frontier case {self.id} ({self.topic}) regressed: {self.comparison.reason}; "
                f"replay majority {self.majority!r}, p̂ {_p(self.p_hat)} over k = {self.replayed.k} "
                f"(run {self.replayed.run_id}, target {self.replayed.target_id})"
            )

    # -- run the agent again ---------------------------------------------------------------------

    def sample(self, n: int = 1, sampling: Sampling | None = None) -> list[Trajectory]:
        """Ask the agent ``n`` more times, with sample indices no earlier sample of this case used.

        Args:
            n: how many samples (each a full run of the agent).
            sampling: sampling parameters (default: the probe's, with its seed).

        Returns:
            The trajectories (``.text``, ``.tool_calls``, ``.error`` ...), in index order.
        """
        if n < 1:
            raise ValueError(f"sample(n={n}): n must be at least 1")
        start, self._next_index = self._next_index, self._next_index + n
        return self._suite.sample(self.case, n, start, sampling)

    def answers(self, n: int = 1, sampling: Sampling | None = None) -> list[str | None]:
        """The extracted answers of ``n`` more samples (``None`` for failed or unparseable ones)."""
        from frontier_qa.probing.case import answers_of

        return answers_of(self.case, self.sample(n, sampling))

    # -- reporting -------------------------------------------------------------------------------

    def properties(self) -> Sequence[tuple[str, Any]]:
        """The ``frontier_*`` user properties of the test item (``--junitxml`` writes them)."""
        interval = self.interval
        props: list[tuple[str, Any]] = [
            ("frontier_case_id", self.id),
            ("frontier_topic", self.topic),
            ("frontier_class", self.case_class.value),
            ("frontier_p_hat", "" if self.p_hat is None else f"{self.p_hat:.4f}"),
            ("frontier_p_low", "" if interval is None else f"{interval.low:.4f}"),
            ("frontier_p_high", "" if interval is None else f"{interval.high:.4f}"),
            ("frontier_k", self.replayed.k),
            ("frontier_majority", self.majority or ""),
            ("frontier_stored_class", "" if self.stored_class is None else self.stored_class.value),
            ("frontier_stored_p_hat", "" if self.stored_p_hat is None else f"{self.stored_p_hat:.4f}"),
            ("frontier_verdict", self.verdict),
            ("frontier_run", self.replayed.run_id),
        ]
        if self.comparison is not None:
            props.append(("frontier_reason", self.comparison.reason))
        if self.flaky_reason:
            props.append(("frontier_flaky", self.flaky_reason))
        return props
