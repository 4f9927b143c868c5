"""``FrontierCase``: what a frontier test receives, one case at a time.

A test marked ``@pytest.mark.frontier`` gets a :class:`FrontierCase` per stored (or newly
found) case. It holds the case, the baseline it is held to, a fresh replay against the agent
made by the engine (:class:`frontier_qa.probing._run.ProbeRun`: sampled in looks until the
regression test decides), the verdict (:mod:`frontier_qa.store._comparison`) and a handle to
sample the agent again::

    def test_agent(frontier_case):
        frontier_case.assert_no_regression()                # held to its baseline, statistically
        frontier_case.assert_trajectory()                   # the right path, pass^k above the gate's
        assert frontier_case.case_class != "failure"        # the replay's class
        texts = [t.text for t in frontier_case.sample(2)]   # two more fresh samples

**Flaky.** A finding (a failure, suspect or frontier case) that the same agent (target id and
version) now gets significantly better at did not reproduce: the engine says ``flaky``. A flaky
case is never a silent pass: the plugin reports it as xfail (or a failure with
``--frontier-flaky=fail``).

**Failure messages** show the prompt, the reference, baseline against now (class, p̂ with its
interval, k, agent version), the top answers with their votes, the test that decided, and the
command that replays just this item (:mod:`frontier_qa.reports._explain`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar, cast, overload

from frontier_qa.store._comparison import Comparison, RegressionVerdict
from frontier_qa.store._records import Baseline, CaseClass, CaseRecord, Interval, PassK, PathRecord
from frontier_qa.target import Case, Sampling, Trajectory

if TYPE_CHECKING:
    from frontier_qa.session._suite_run import Sampler

NEW = "new"  # the verdict of a case first found in this session: nothing to compare with


_T = TypeVar("_T")


class _Part(Generic[_T]):
    """A read-only attribute that reads the same-named attribute of one of the case's parts.

    ``prompt = _Part[str]("case", doc)`` reads ``self.case.prompt``.
    """

    def __init__(self, part: str, doc: str) -> None:
        self.part = part
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Part[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> _Part[_T] | _T:
        if obj is None:
            return self
        return cast("_T", getattr(getattr(obj, self.part), self.name))

    def __set__(self, obj: object, value: object) -> NoReturn:
        raise AttributeError(f"{type(obj).__name__}.{self.name} is read-only")


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


@dataclass(eq=False, repr=False)  # compared by identity; its own one-line repr
class FrontierCase:
    """One case of the agent under test, with its fresh replay and verdict.

    Attributes:
        id: the case id (stable across runs; part of the test id).
        case: the case as the target sees it (:class:`frontier_qa.target.Case`).
        baseline: what the case is held to (accepted by a person, else its first
            observation); ``None`` for a case first found in this session.
        replayed: the record of this session's run of the case: a fresh replay, or the
            probe that found it (``verdict == "new"``).
        comparison: the verdict on ``baseline`` → ``replayed`` (``None`` when new).
        guard: whether the case is a guard (a stable, correct case kept to catch breakage).
        accepted: the baseline ``--frontier-accept`` recorded for it in this session, if any.
        flaky_reason: why the finding did not reproduce, ``None`` when it did.
        command: the pytest command that replays just this item.
        min_pass_hat_k: the suite gate's ``gate.min_pass_hat_k`` (``None``: off), which
            :meth:`assert_trajectory` holds the case's pass^k to.
    """

    _suite: Sampler
    baseline: Baseline | None
    replayed: CaseRecord
    comparison: Comparison | None
    _: KW_ONLY
    guard: bool = False
    accepted: Baseline | None = None
    min_pass_hat_k: float | None = None
    case: Case = field(init=False)
    id: str = field(init=False)
    command: str = field(default="", init=False)
    flaky_reason: str | None = field(init=False)
    _next_index: int = field(init=False)

    def __post_init__(self) -> None:
        self.case = self.replayed.case.to_case()
        self.id = self.case.id
        flaky = self.comparison is not None and self.comparison.verdict is RegressionVerdict.FLAKY
        self.flaky_reason = self.comparison.reason if flaky and self.comparison is not None else None
        used = [s.sample_index for s in self.replayed.samples]
        self._next_index = max(used) + 1 if used else 0

    def __repr__(self) -> str:
        return f"<FrontierCase {self.id} {self.case_class.value} p̂={_p(self.p_hat)} {self.verdict}>"

    def for_item(self, command: str) -> FrontierCase:
        """This case as one test item sees it (its own replay command); samples stay shared."""
        view = copy.copy(self)
        view.command = command
        return view

    # -- the case, the baseline, what the replay found -----------------------------------------------

    prompt = _Part[str]("case", "The case's prompt.")
    topic = _Part[str]("case", "The case's topic.")
    reference = _Part[str | None]("case", "The case's reference answer (``None`` when it has none).")
    case_class = _Part[CaseClass](
        "replayed", 'The replay\'s class (a ``str`` enum: ``frontier_case.case_class == "failure"`` works).')
    p_hat = _Part[float | None](
        "replayed", "The replay's p̂: majority share of its k samples, in [0, 1] (Agent0 Eq. 6).")
    interval = _Part[Interval | None](
        "replayed", "The replay's confidence interval on p̂ (``.low``, ``.high``, in [0, 1]).")
    majority = _Part[str | None]("replayed", "The replay's majority answer (pseudo-label).")
    path = _Part[PathRecord | None](
        "replayed", "Whether the replay's samples took one path, and its finding (``scatter``, ``wrong``, "
                    "``undecided``); ``None`` when paths were not analysed.")
    pass_k = _Part[PassK | None](
        "replayed", "The replay's pass^k (``.k``, ``.value``, ``.misses``); ``None`` when the case is not counted.")

    @property
    def stored_class(self) -> CaseClass | None:
        """The baseline's class (``None`` for a new case)."""
        return None if self.baseline is None else self.baseline.case_class

    @property
    def stored_p_hat(self) -> float | None:
        """The baseline's p̂."""
        return None if self.baseline is None else self.baseline.p_hat

    @property
    def verdict(self) -> str:
        """``"new"``, ``"same"``, ``"improved"``, ``"regression"``, ``"flaky"`` or ``"inconclusive"``."""
        return NEW if self.comparison is None else self.comparison.verdict.value

    @property
    def flaky(self) -> bool:
        return self.flaky_reason is not None

    def explanation(self) -> list[str]:
        """The lines that explain the verdict (prompt, reference, baseline vs now, answers, command)."""
        from frontier_qa.reports._explain import explain

        if self.comparison is None:
            return [f"new: {self.topic}/{self.id} (no baseline yet)"]
        return explain(self.comparison, self.replayed, replay=self.command or None)

    def assert_no_regression(self) -> None:
        """Fail the test when the replay regressed against the baseline (never under ``--frontier-accept``).

        Raises:
            AssertionError: the verdict is ``regression``: a one-sided test at the suite's
                false-alarm level says the share of right (or baseline) answers dropped; the
                message shows baseline against now and the command that replays the item.
        """
        __tracebackhide__ = True
        if self.verdict == RegressionVerdict.REGRESSION.value and self.accepted is None:
            raise AssertionError("frontier-qa: " + "\n".join(self.explanation()))

    def trajectory_problems(self) -> list[str]:
        """Why the replay's trajectories fail the case: a ``wrong`` path (the samples agree on a path that
        misses the expectations), pass^k below :attr:`min_pass_hat_k`; ``[]`` when neither.
        """
        path, pass_k, out = self.path, self.pass_k, []
        if path is not None and path.finding == "wrong":
            out.append(f"wrong path: {path.majority} in {path.p_hat:.0%} of the samples")
        floor = self.min_pass_hat_k
        if pass_k is not None and pass_k.value is not None and floor is not None and pass_k.value < floor:
            out.append(f"pass^{pass_k.k} = {pass_k.value:.2f}, below gate.min_pass_hat_k {floor:g} "
                       f"({pass_k.passed} of {pass_k.n} samples passed)")
        return out

    def misses(self) -> list[str]:
        """The replay's most common misses of the expectations, with how many samples had each."""
        from frontier_qa.scoring._paths import top_misses

        if self.pass_k is not None and self.pass_k.misses:
            return list(self.pass_k.misses)
        return top_misses(s.misses for s in self.replayed.samples if s.misses is not None)

    def assert_trajectory(self) -> None:
        """Fail the test when the agent takes the wrong path on this case, or its pass^k is below the
        gate's ``min_pass_hat_k``.

        Raises:
            AssertionError: the message names each problem, the samples' most common misses of the
                case's expectations, the prompt and the command that replays the item.
        """
        __tracebackhide__ = True
        problems = self.trajectory_problems()
        if problems:
            lines = [f"frontier-qa: {self.topic}/{self.id}: the agent's trajectories fail the case",
                     *(f"  {p}" for p in problems), *(f"  missed: {m}" for m in self.misses()),
                     f"  prompt: {self.prompt}"]
            if self.command:
                lines.append(f"  replay: {self.command}")
            raise AssertionError("\n".join(lines))

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
        from frontier_qa.scoring._case_scoring import answers_of

        return answers_of(self.case, self.sample(n, sampling))

    # -- reporting -------------------------------------------------------------------------------

    def properties(self) -> Sequence[tuple[str, Any]]:
        """The ``frontier_*`` user properties of the test item (``--junitxml`` writes them)."""
        interval = self.interval
        props: list[tuple[str, Any]] = [
            ("frontier_case_id", self.id),
            ("frontier_topic", self.topic),
            ("frontier_role", "guard" if self.guard else "finding"),
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
            if self.comparison.p_value is not None:
                props.append(("frontier_p_value", f"{self.comparison.p_value:.3g}"))
        if self.flaky_reason:
            props.append(("frontier_flaky", self.flaky_reason))
        if self.accepted is not None:
            props.append(("frontier_accepted", "1"))
        return props
