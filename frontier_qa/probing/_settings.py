"""How a probe run samples, classifies and stops: :class:`ProbeSettings`.

Its own module, below the run loop (:mod:`~frontier_qa.probing._run`), the per-case work
(:mod:`~frontier_qa.probing._case_prober`) and the public entry points
(:mod:`~frontier_qa.probing._engine`), so each of them imports it without importing the others.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import Field, InstanceOf

from frontier_qa._frozen import frozen_value
from frontier_qa.probing._sequential import MajorityPrior, SequentialConfig
from frontier_qa.probing._set_labels import Labelling
from frontier_qa.scoring._paths import PassKSettings, PathSettings
from frontier_qa.scoring.bands import AGENT0_BAND, Band
from frontier_qa.store._comparison import RegressionPolicy
from frontier_qa.store._records import PriorVersions
from frontier_qa.store._shards import Shard
from frontier_qa.target import Sampling


@frozen_value
class ProbeSettings:
    """How a probe run samples, classifies and stops.

    The one class of the probe settings: each field's type, bounds, default and description are
    stated here once. The config file's ``probing`` section is its YAML spelling
    (:class:`~frontier_qa.config.ProbingConfig`): a key with a setting's meaning is that field
    (``sampling``, ``batch_size``, ``concurrency`` for ``max_concurrent_cases`` ...), the others spell
    values in the file (a named ``policy`` tuned by ``k``/``confidence``/``rounds``, a band preset,
    a prior file) and ``ProbingConfig.to_settings`` turns the section into this class.

    Attributes:
        band: the frontier band on p̂ (Agent0: 0.3 ≤ p̂ ≤ 0.8, inclusive).
        k: samples per case: exactly ``k`` with fixed k; the cap (k_max) of a sequential policy, and a cap
            too low to decide most cases warns as the run starts (:mod:`~frontier_qa.probing._k_cap`).
        sequential: the sequential policy (its band and k_max are replaced by ``band`` and
            ``k``); ``None`` samples every case exactly ``k`` times.
        labels: which stopped cases are frontier (:class:`~frontier_qa.probing._set_labels.Labelling`):
            ``"set"``, the run's frontier set keeps its expected share of wrong labels ≤ alpha; ``"case"``,
            each case reaches the policy's confidence on its own (sequential policies only).
        sampling: target sampling; its ``seed`` defaults to ``seed`` (sample i of a case uses
            ``Sampling.seed_for(case, i)``).
        batch_size: proposals asked of the curriculum per round.
        max_candidates: proposals considered in total, all shards' included (``None``: no cap).
        saturation_window: candidates (of this shard) over which saturation is measured.
        saturation_min_new: stop once fewer new frontier cases than this came in the last
            ``saturation_window`` candidates ("new": never recorded by an earlier run).
        max_concurrent_cases: cases sampled at once.
        explore_rate: share of cases predicted trivially easy / hopeless that are probed anyway.
        predict_difficulty: skip cases a :class:`~frontier_qa.scoring._difficulty.DifficultyPredictor`
            fitted online to this run's results (or the curriculum's own estimate) calls trivial.
        seed: the run's seed (sampling, exploration draws).
        shard: probe only the cases with ``shard_of(id, n) == i`` (CI sharding).
        replay_first: replay the store's cases for this target before generating new ones.
        verify_references: run each proposal's solution program in the sandbox.
        prior_refit_every: refit the population prior (empirical Bayes) every this many new
            cases (0: never).
        prior_smoothing: pseudo-cases of the starting prior in each refit (how slowly the
            prior leaves it).
        prior: the starting population prior (``None``: the policy's, uninformed).
        prior_from_store: start from the store's earlier cases of this target (their latest
            records): a second run of a target decides its first cases as well as its last.
        prior_versions: what the store's cases of *other* versions of the target count for:
            ``same`` (default): nothing; ``any``: as much as this version's; ``discount``: their
            fitted prior is the start, worth ``prior_smoothing`` cases. After a changed version both
            cost the realistic mix its 0.9 precision (``benchmarks/prior_carry_bench.py``).
        prior_topic_min: cases a topic needs for a prior of its own, shrunk towards the
            target's (``None``: one prior for every topic).
        replay_scope: ``"target"``: replay cases recorded for this target id; ``"all"``: for
            any target (a new agent version usually has a new id).
        max_replay: replay at most this many cases (failures first); ``None``: all.
        judge_sampling: sampling of the judge target (one sample per question).
        embedder: embedder for open-ended (``answer_format="text"``) answers; ``None``: the
            bundled all-MiniLM-L6-v2 (needs ``frontier-qa[embed]``).
        seen_window: recent prompts kept for near-duplicate checks.
        max_text_chars: raw sample text kept per sample in records.
        regression: how replays decide regressions (alpha over the suite, looks, the drop
            that matters); see :mod:`frontier_qa.store._comparison`.
        baseline_samples: samples an accepted baseline holds (``frontier-qa accept`` samples
            more when the observations it pools have fewer).
        path: how a sample's path (its tool calls) is read, and whether sampling goes on until
            the path is decided too (:class:`~frontier_qa.scoring._paths.PathSettings`).
        pass_k: which cases count pass^k and its k; every counted case is sampled at least k
            times (:class:`~frontier_qa.scoring._paths.PassKSettings`).
        verdicts: where the run's case verdicts go as it ends, besides the store: an object with
            ``send(records, band)`` that never raises (config ``export.otel`` makes a
            :class:`~frontier_qa.reports._otel_export.OtelVerdicts`); ``None``: nowhere else.
    """

    band: InstanceOf[Band] = AGENT0_BAND
    k: Annotated[int, Field(ge=1, description="samples per case: exactly k (fixed) or the cap "
                                              "(sequential; a cap too low to decide most cases warns)")] = 30
    sequential: InstanceOf[SequentialConfig] | None = Field(default_factory=SequentialConfig)
    labels: Labelling = Field(default_factory=Labelling, description=(
        "frontier labels: set (the run's frontier set keeps its expected wrong labels <= alpha) or case"))
    sampling: Sampling = Field(default_factory=Sampling)  # T = 1, 512 tokens
    batch_size: Annotated[int, Field(ge=1, description="proposals asked per round")] = 8
    max_candidates: Annotated[int | None, Field(
        ge=0, description="proposals considered in total; null: no cap")] = 200
    saturation_window: Annotated[int, Field(ge=1)] = 100
    saturation_min_new: Annotated[int, Field(ge=0)] = 1
    max_concurrent_cases: Annotated[int, Field(ge=1, description="cases sampled at once")] = 8
    explore_rate: Annotated[float, Field(ge=0, le=1)] = 0.1
    predict_difficulty: bool = False
    seed: int = 0
    shard: InstanceOf[Shard] | None = None
    replay_first: Annotated[bool, Field(description="replay stored cases before generating new ones")] = True
    verify_references: bool = True
    prior_refit_every: Annotated[int, Field(ge=0, description="0: never refit")] = 10
    prior_smoothing: Annotated[float, Field(
        gt=0, description="pseudo-cases of the starting prior in each refit")] = 10.0
    prior: InstanceOf[MajorityPrior] | None = None
    prior_from_store: Annotated[bool, Field(
        description="start the prior from the store's earlier cases of this target")] = True
    prior_versions: Annotated[PriorVersions, Field(description=(
        "earlier cases of other versions of the target: same (left out), any (counted alike), discount (a start "
        "worth prior_smoothing cases)"))] = "same"
    prior_topic_min: Annotated[int | None, Field(ge=1, description=(
        "cases a topic needs for a prior of its own, shrunk towards the target's; null: one prior for all"))] = 20
    replay_scope: Literal["target", "all"] = "target"
    max_replay: Annotated[int | None, Field(ge=0)] = None
    judge_sampling: Sampling = Sampling(temperature=0.0, max_tokens=512)
    embedder: Annotated[Any, Field(
        description="open-ended answers: embedding model (null: bundled MiniLM)")] = None
    seen_window: Annotated[int, Field(ge=0)] = 200
    max_text_chars: int = 4000
    regression: InstanceOf[RegressionPolicy] = RegressionPolicy()
    baseline_samples: Annotated[int, Field(ge=1, description="samples an accepted baseline holds "
                                                               "(accept samples more)")] = 40
    path: PathSettings = Field(default_factory=PathSettings, description=(
        "path self-consistency: how a sample's tool calls make its path, and whether cases are sampled "
        "until the path is decided too"))
    pass_k: PassKSettings = Field(default_factory=PassKSettings, description=(
        "pass^k: which cases count it and its k (every counted case is sampled at least k times)"))
    verdicts: Annotated[Any, Field(description="where the run's verdicts go as it ends (send(records, band))")] = None

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
