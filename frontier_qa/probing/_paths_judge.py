"""A case's paths, expectations and pass^k, judged from its samples: what the prober and a refresh share.

The rules are the pure functions of :mod:`frontier_qa.scoring._paths`; this module applies them
to one case: whether its path is analysed and counted, how many more samples its path and its
pass^k want (:func:`path_need`, :func:`pass_k_need`), and, once sampling ended, each sample's path
and misses, the case's :class:`~frontier_qa.store._records.PathRecord` and
:class:`~frontier_qa.store._records.PassK` (:func:`judge_paths`). A probe reads the live
trajectories (:func:`~frontier_qa.scoring._paths.view_of`), a refresh the stored steps
(:func:`~frontier_qa.scoring._paths.view_of_steps`): both judge the same way.

The path's band decision is the answers' sequential rule (:func:`~frontier_qa.probing._sequential.decide`)
on the path clusters, with the run's policy and the uninformed prior (the answers' fitted prior
describes answers, not paths); with fixed k a path is stable when its p̂ reaches the band's high end.
A stable path is *wrong* when most of the samples that took it miss the case's expectations (at
``sequence`` granularity they may differ in arguments), whatever the answers say.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from frontier_qa._expectations import EXPECT_BASE_KEY
from frontier_qa.generators._core import check_for
from frontier_qa.probing._sequential import (
    DEFAULT_PRIOR,
    BandDecision,
    BandPosterior,
    SequentialConfig,
    band_posterior,
    decide,
)
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.probing._validation import tool_menu
from frontier_qa.scoring._paths import (
    PathView,
    expectation_misses,
    pass_hat_k,
    path_counts,
    path_key,
    top_misses,
)
from frontier_qa.store._records import PassK, PathCluster, PathRecord
from frontier_qa.target import Case, Expectations

SHOWN_PATHS = 3
"""Paths a reason names before it says how many more there were."""

ANSWER_CHARS = 60
"""Most characters of an answer a miss quotes."""

JudgeAnswer = Callable[[Case, str], Awaitable["bool | None"]]
"""``judge(case, answer)``: whether an answer is right (``None``: nothing to judge it by)."""


def expectations(case: Case) -> Expectations | None:
    """The case's expectations; ``None`` when it has none (an empty ``expect`` is none)."""
    return None if case.expect is None or case.expect.empty else case.expect


def analysed(case: Case, views: Sequence[PathView], settings: ProbeSettings) -> bool:
    """Whether the case's path is analysed: paths are on and the case has expectations or tools, or a
    sample called a tool.
    """
    return settings.path.enabled and (expectations(case) is not None or bool(case.tools)
                                      or any(v.tools for v in views))


def counted(case: Case, settings: ProbeSettings) -> bool:
    """Whether the case counts pass^k (``probing.pass_k.cases``)."""
    mode = settings.pass_k.cases
    if mode == "off":
        return False
    if expectations(case) is not None:
        return True
    return mode == "judged" and _answer_judged(case)


def _answer_judged(case: Case) -> bool:
    return case.reference is not None or check_for(case) is not None


@dataclass(frozen=True)
class PathDecision:
    """Where the path's p* lies relative to the band: the verdict (``CONTINUE``: not yet), whether it
    was forced (the sample limit), the posterior, and the samples a policy still wants.
    """

    verdict: BandDecision
    forced: bool
    posterior: BandPosterior
    next_n: int = 0


def decide_path(sizes: Sequence[int], n_failed: int, settings: ProbeSettings,
                policy: SequentialConfig | None) -> PathDecision:
    """The band decision on the path clusters' sizes (the answers' rule; fixed k: p̂ against the high end)."""
    if policy is not None:
        d = decide(sizes, 0, n_failed, replace(policy, prior=DEFAULT_PRIOR))
        return PathDecision(d.verdict, d.forced, d.posterior, d.next_n)
    low, high = settings.band.low, settings.band.high
    ran = sum(sizes)
    p = max(sizes) / ran if ran else 0.0
    verdict = BandDecision.ABOVE if p >= high else BandDecision.IN_BAND if p >= low else BandDecision.BELOW
    return PathDecision(verdict, False, band_posterior(sizes, 0, band=(low, high), prior=DEFAULT_PRIOR))


def path_need(case: Case, views: Sequence[PathView], settings: ProbeSettings,
              policy: SequentialConfig | None) -> int:
    """Samples the path's decision still wants (0 when paths are not sampled for, or it is decided)."""
    if policy is None or not settings.path.sample or not views or not analysed(case, views, settings):
        return 0
    paths = [path_key(v, settings.path) for v in views]
    sizes = [n for _, n in path_counts(paths)]
    decision = decide_path(sizes, sum(1 for p in paths if p is None), settings, policy)
    return decision.next_n if decision.verdict is BandDecision.CONTINUE else 0


def pass_k_need(case: Case, n: int, settings: ProbeSettings) -> int:
    """Samples a counted case still needs to reach pass^k's k (failed samples count: they did not pass)."""
    return max(settings.pass_k.k - n, 0) if counted(case, settings) else 0


@dataclass(frozen=True)
class CasePaths:
    """What :func:`judge_paths` found.

    Attributes:
        paths: each sample's path (``None``: failed, or paths not analysed), aligned with the samples.
        misses: each sample's misses (``None``: nothing checked), aligned with the samples.
        path: the case's path record; ``None`` when not analysed (or no sample ran).
        pass_k: the case's pass^k; ``None`` when it does not count.
    """

    paths: tuple[str | None, ...]
    misses: tuple[tuple[str, ...] | None, ...]
    path: PathRecord | None = None
    pass_k: PassK | None = None


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ANSWER_CHARS else text[: ANSWER_CHARS - 1] + "…"


async def _answer_misses(case: Case, answers: Sequence[str | None], views: Sequence[PathView],
                         judge: JudgeAnswer) -> list[tuple[str, ...]]:
    """Per sample, the answer's miss: none, no answer, or not the reference (each answer judged once)."""
    verdicts: dict[str, bool | None] = {}
    out: list[tuple[str, ...]] = []
    for answer, view in zip(answers, views, strict=True):
        if view.failed:
            out.append(())
        elif answer is None:
            out.append(("gave no answer",))
        else:
            if answer not in verdicts:
                verdicts[answer] = await judge(case, answer)
            if verdicts[answer] is not False:
                out.append(())
            elif case.reference is not None:
                out.append((f"answer {_cut(answer)!r} is not the reference {_cut(case.reference)!r}",))
            else:
                out.append((f"answer {_cut(answer)!r} fails the case's check",))
    return out


def _base(case: Case) -> str | None:
    base = case.metadata.get(EXPECT_BASE_KEY)
    return base if isinstance(base, str) else None


async def judge_paths(case: Case, views: Sequence[PathView], answers: Sequence[str | None],
                      settings: ProbeSettings, policy: SequentialConfig | None, judge: JudgeAnswer) -> CasePaths:
    """Each sample's path and misses, the case's path record and pass^k (module docstring).

    Args:
        case: the case as classified (its reference the one the answers were judged against).
        views: the samples' path views, in sample order.
        answers: the samples' extracted answers, aligned with ``views``.
        settings: the run's settings (``path``, ``pass_k``, the band).
        policy: the run's sequential policy (``None``: fixed k).
        judge: whether an answer is right (:meth:`CaseProber.judge_answer`).
    """
    expect = expectations(case)
    count = counted(case, settings)
    path_on = analysed(case, views, settings)
    paths = tuple(path_key(v, settings.path) if path_on else None for v in views)
    expected = [expectation_misses(v, expect, base=_base(case)) if expect is not None else () for v in views]
    if not (expect is not None or count):
        return CasePaths(paths, (None,) * len(views), _path_record(paths, expected, expect, settings, policy)
                         if path_on else None)
    rows = expected
    if _answer_judged(case):
        rows = [e + a for e, a in zip(expected, await _answer_misses(case, answers, views, judge), strict=True)]
    rows = [("the sample failed",) if v.failed else r for v, r in zip(views, rows, strict=True)]
    pass_k = None
    if count:
        k, n, passed = settings.pass_k.k, len(rows), sum(1 for r in rows if not r)
        pass_k = PassK(k=k, n=n, passed=passed, value=pass_hat_k(n, passed, k), misses=top_misses(rows))
    record = _path_record(paths, expected, expect, settings, policy) if path_on else None
    unjudged = None if expect is None else unknown_names(expect, views, set(tool_menu(case.tools)))
    if record is not None and unjudged is not None:
        finding = None if record.finding == "wrong" else record.finding  # a verdict on a misspelt rule is none
        record = record.model_copy(update={"unjudged": unjudged, "finding": finding,
                                           "reason": f"{unjudged}; {record.reason}"})
    return CasePaths(paths, tuple(rows), record, pass_k)


def _listed(clusters: Sequence[tuple[str, int]], ran: int) -> str:
    shown = ", ".join(f"{path} {n} of {ran}" for path, n in clusters[:SHOWN_PATHS])
    more = len(clusters) - SHOWN_PATHS
    return shown + (f" and {more} more path{'s' if more > 1 else ''}" if more > 0 else "")


def unknown_names(expect: Expectations, views: Sequence[PathView], offered: set[str]) -> str | None:
    """Why ``expect`` cannot be judged on these samples, with the fix; ``None`` when it can.

    A forbidden tool (``tools_not_used``) that no sample called, that the case does not offer, and whose
    name is close to a tool that was called is most likely misspelt: ``tools_not_used: [delete_acount]``
    never misses, whatever the agent does. Such a case is not judged on its expectations: the run says
    "could not judge" and names the fix, rather than passing a forbidden call. (A misspelt tool in the
    other keys is never silent: every sample misses it.)
    """
    called = Counter(name for v in views for name in dict.fromkeys(c.name for c in v.tools))
    named = dict.fromkeys(expect.tools_not_used)
    known = set(called) | offered
    found = []
    for name in named:
        if name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        if close:
            said = f"called by {called[close[0]]} of {len(views)} samples" if close[0] in called else "offered"
            found.append(f"{name!r} (did you mean {close[0]!r}, {said}?)")
    if not found:
        return None
    return (f"could not judge the expectations: they name {', '.join(found)}, a tool no sample called; fix the "
            "name in the case's expect")


def _path_record(paths: Sequence[str | None], expected: Sequence[tuple[str, ...]], expect: Expectations | None,
                 settings: ProbeSettings, policy: SequentialConfig | None) -> PathRecord | None:
    """The path's band decision and finding, with the reason in words."""
    clusters = path_counts(paths)
    if not clusters:
        return None
    majority, top = clusters[0]
    ran = sum(n for _, n in clusters)
    n_failed = sum(1 for p in paths if p is None)
    decision = decide_path([n for _, n in clusters], n_failed, settings, policy)
    verdict, post = decision.verdict, decision.posterior
    band = (settings.band.low, settings.band.high)
    p_hat = top / ran
    evidence = f"path p̂ = {p_hat:.2f} at k = {ran}; {post.describe(band)}"
    decided = verdict is not BandDecision.CONTINUE and not decision.forced
    missed = [e for p, e in zip(paths, expected, strict=True) if p == majority and e]
    finding: str | None = None
    if not decided:
        finding = "undecided"
        why = "at the sample limit" if decision.forced else "when sampling ended"
        reason = f"path undecided {why}: {_listed(clusters, ran)} ({evidence})"
    elif verdict is not BandDecision.ABOVE:
        finding = "scatter"
        reason = f"paths scatter: {_listed(clusters, ran)} ({evidence})"
    elif expect is not None and 2 * len(missed) > top:
        finding = "wrong"
        reason = (f"the samples agree on a wrong path: {majority} {top} of {ran} ({evidence}); it misses the "
                  f"expectations: {'; '.join(top_misses(missed + [()] * (top - len(missed))))}")
    else:
        meets = "" if expect is None else "; it meets the expectations"
        reason = f"one path: {majority} {top} of {ran} ({evidence}){meets}"
    return PathRecord(
        granularity=settings.path.granularity, p_hat=p_hat, majority=majority,
        clusters=[PathCluster(path=p, count=n) for p, n in clusters],
        decision=verdict.value if decided else None,
        below=post.below, inside=post.inside, above=post.above, finding=finding, reason=reason)


__all__ = [
    "EXPECT_BASE_KEY",
    "CasePaths",
    "JudgeAnswer",
    "PathDecision",
    "analysed",
    "counted",
    "decide_path",
    "expectations",
    "judge_paths",
    "pass_k_need",
    "path_need",
]
