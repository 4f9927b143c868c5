"""What ``k`` means: the most samples a case gets, and a warning when it caps a policy too low.

One meaning for every way in (``--k``, ``probing.k``, the pytest marker's ``k`` and
``--frontier-k``, :attr:`ProbeSettings.k <frontier_qa.probing._settings.ProbeSettings.k>`):
under ``fixed`` every case gets exactly ``k`` samples (Agent0's rule); under a sequential policy
``k`` is the sample cap (the policy's own unless set), and a case still undecided there ends
``unresolved``. A cap below what the policy needs leaves many cases unresolved, and above the
gate's limit the run "could not judge" the agent (exit 3). So the run warns as it starts
(:func:`cap_warning`), its record keeps the warning, and the gate names the cap as the cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from frontier_qa.probing._sequential import POLICIES, SequentialConfig
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.store._records import RunWarning

UNRESOLVED_AT_CAP: Final[Mapping[str, tuple[tuple[int, float, float], ...]]] = MappingProxyType({
    "calibrated": ((5, 0.51, 0.88), (8, 0.35, 0.61), (10, 0.26, 0.51), (15, 0.16, 0.37), (20, 0.13, 0.28),
                   (30, 0.08, 0.15)),
    "economy": ((4, 0.54, 0.99), (6, 0.46, 0.79), (8, 0.33, 0.53)),
    "thorough": ((10, 0.49, 0.61), (20, 0.28, 0.40), (30, 0.18, 0.29), (40, 0.14, 0.27)),
})
"""Each sequential policy's unresolved share with ``k`` capping it: ``(cap, lowest, highest)`` over
the fair benchmark mixes (realistic, balanced, frontier-heavy), as ``benchmarks/k_cap_bench.py``
measures them (100 cases x seeds 1-3 per mix)."""

WARN_ABOVE: Final = 0.2
"""A cap warns when its expected unresolved share on the worst mix is above this: the gate's
default ``max_unresolved_share``, past which the run cannot judge the agent ..."""

MARGIN: Final = 0.05
"""... and at least this much above the policy's own cap's share (a cap one below a policy's own
is no different from it)."""


def expected_unresolved(policy: str, k: int) -> tuple[float, float]:
    """The unresolved share (lowest, highest over the mixes) of ``policy`` capped at ``k``: measured
    at the table's caps, straight lines between them, the nearest measured cap outside them.
    """
    rows = UNRESOLVED_AT_CAP[policy]
    if k <= rows[0][0]:
        return rows[0][1], rows[0][2]
    for (k0, lo0, hi0), (k1, lo1, hi1) in zip(rows, rows[1:], strict=False):
        if k <= k1:
            t = (k - k0) / (k1 - k0)
            return lo0 + t * (lo1 - lo0), hi0 + t * (hi1 - hi0)
    return rows[-1][1], rows[-1][2]


def _policy_name(sequential: SequentialConfig) -> str:
    """The named policy ``sequential`` is (its confidences and k_max; rounds barely move the share at
    a cap), else the sequential policy of the nearest k_max.
    """
    named = {n: p.sequential for n, p in POLICIES.items() if p.sequential is not None and n in UNRESOLVED_AT_CAP}
    for name, own in named.items():
        if (own.confidence, own.out_confidence, own.k_max) == (
                sequential.confidence, sequential.out_confidence, sequential.k_max):
            return name
    return min(named, key=lambda n: abs(named[n].k_max - sequential.k_max))


def cap_warning(settings: ProbeSettings) -> RunWarning | None:
    """The warning a run gives as it starts when ``k`` caps its sequential policy below what the
    policy needs to decide most cases (expected unresolved share above :data:`WARN_ABOVE` and
    :data:`MARGIN` above the policy's own); ``None`` with fixed k, with ``k`` at the policy's own
    cap or above, or with a cap that decides about as much.
    """
    sequential = settings.sequential
    if sequential is None or settings.k >= sequential.k_max:
        return None
    name = _policy_name(sequential)
    low, high = expected_unresolved(name, settings.k)
    if high <= WARN_ABOVE or high < expected_unresolved(name, sequential.k_max)[1] + MARGIN:
        return None
    k, needs = settings.k, sequential.k_max
    fix = (f"use --policy fixed --k {k} (probing.policy: fixed) for Agent0's rule (exactly k samples per case), "
           f"or drop --k (probing.k) so the {name} policy samples up to {needs}")
    message = (f"k = {k} caps the {name} policy at {k} samples per case, below the {needs} it needs to decide most "
               f"cases: expect {low * 100:.0f}-{high:.0%} of cases unresolved, and above {WARN_ABOVE:.0%} the run "
               f"cannot judge the agent (exit 3); fix: {fix}")
    return RunWarning(code="k-cap", message=message, cap=k, fix=fix)


__all__ = ["MARGIN", "UNRESOLVED_AT_CAP", "WARN_ABOVE", "cap_warning", "expected_unresolved"]
