"""Case records with paths and pass^k, built directly (as the prober writes them), for the sinks' tests.

Three analysed cases and one plain one, k = 8:

* ``geo-scatter`` (topic ``geo``): the samples split 5:3 between ``capital_of`` and ``lookup_city``
  (scatter); 5 of 8 meet the expectations;
* ``geo-wrong`` (topic ``geo``): all 8 call ``lookup_city``, which the case forbids (wrong path);
* ``units-stable`` (topic ``units``): all 8 call ``convert`` (no finding); all pass;
* ``plain`` (topic ``units``): a model without tools (not analysed).
"""

from __future__ import annotations

from collections.abc import Sequence

from frontier_qa.scoring._paths import pass_hat_k, top_misses
from frontier_qa.store._records import CaseClass, CaseRecord, PassK, PathCluster, PathRecord
from tests.factories import probed_record

K = 8
SECRET = "sk-proj-" + "A1b2C3d4" * 5
"""A key a tool argument carried into a path: no output may show it."""

FORBID = "called lookup_city, which must not be called"


def with_paths(record: CaseRecord, paths: Sequence[str], misses: Sequence[tuple[str, ...]], *,
               finding: str | None, reason: str = "") -> CaseRecord:
    """``record`` with one path and one set of misses per sample, its path record and its pass^k."""
    samples = [s.model_copy(update={"path": p, "misses": m})
               for s, p, m in zip(record.samples, paths, misses, strict=True)]
    counts: dict[str, int] = {}
    for p in paths:
        counts[p] = counts.get(p, 0) + 1
    clusters = [PathCluster(path=p, count=n) for p, n in sorted(counts.items(), key=lambda pn: (-pn[1], pn[0]))]
    passed = sum(1 for m in misses if not m)
    path = PathRecord(granularity="tools", p_hat=clusters[0].count / len(paths), majority=clusters[0].path,
                      clusters=clusters, decision="above" if finding != "scatter" else "in_band",
                      finding=finding, reason=reason)  # type: ignore[arg-type]
    pass_k = PassK(k=K, n=len(paths), passed=passed, value=pass_hat_k(len(paths), passed, K),
                   misses=top_misses(misses))
    return record.model_copy(update={"samples": samples, "path": path, "pass_k": pass_k})


def path_records() -> list[CaseRecord]:
    """The four records of the module docstring."""
    right = ("Paris",) * K
    scatter = with_paths(
        probed_record("geo-scatter", CaseClass.PASS, right, topic="geo", reference="Paris"),
        ["capital_of"] * 5 + ["lookup_city"] * 3, [()] * 5 + [(FORBID,)] * 3, finding="scatter",
        reason="the majority path capital_of holds 5 of 8 samples: p* is in the band")
    wrong = with_paths(
        probed_record("geo-wrong", CaseClass.PASS, right, topic="geo", reference="Paris"),
        [f'lookup_city(key="{SECRET}")'] * K, [(FORBID, "never called capital_of")] * K, finding="wrong",
        reason="the samples agree on lookup_city, which misses the expectations")
    stable = with_paths(
        probed_record("units-stable", CaseClass.PASS, ("12",) * K, topic="units", reference="12"),
        ["convert"] * K, [()] * K, finding=None)
    plain = probed_record("plain", CaseClass.PASS, ("4",) * K, topic="units")
    return [scatter, wrong, stable, plain]


__all__ = ["FORBID", "K", "SECRET", "path_records", "with_paths"]
