"""Errors carry the bad key's path and where it was set as data (``ConfigError.key``/``.source``).

The config layer decides which key an error belongs to from these, never from the message
text; these tests pin both the data and the wording the CLI prints.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from frontier_qa.config import (
    Backoff,
    Budget,
    GateThresholds,
    Limits,
    RegressionPolicy,
    Sampling,
    build_probe,
    load_config,
    parse_set,
)
from frontier_qa.errors import ConfigError
from frontier_qa.probing._settings import ProbeSettings
from frontier_qa.train.adpo import ADPOSchedule
from tests.config.test_config import few_shot_project, write, writer_config


@pytest.mark.parametrize(
    ("build", "key", "named"),
    [
        (lambda: Sampling(top_p=0), ("top_p",), "Sampling.top_p = 0"),
        (lambda: Limits(rpm=-1), ("rpm",), "Limits.rpm = -1"),
        (lambda: Limits(backoff={"initial_s": 5, "max_s": 1}), ("backoff", "max_s"), "Limits.backoff.max_s = 1"),
        (lambda: Backoff(jitter_s=-1), ("jitter_s",), "Backoff.jitter_s = -1"),
        (lambda: Budget(max_cost_usd=-0.5), ("max_cost_usd",), "Budget.max_cost_usd = -0.5"),
        (lambda: GateThresholds(max_unresolved_share=2), ("max_unresolved_share",),
         "GateThresholds.max_unresolved_share = 2"),
        (lambda: ADPOSchedule(clip_span=0), ("clip_span",), "ADPOSchedule.clip_span = 0"),
        (lambda: ProbeSettings(saturation_window=0), ("saturation_window",), "ProbeSettings.saturation_window = 0"),
        (lambda: Limits.from_dict({"rmp": 1}), ("rmp",), "unknown key(s) 'rmp' in limits"),
        (lambda: RegressionPolicy(alpha=1.5), ("alpha",), "RegressionPolicy.alpha = 1.5"),
        (lambda: RegressionPolicy(looks=(10, 5)), ("looks",), "RegressionPolicy.looks = (10, 5)"),
    ],
)
def test_values_built_in_python_raise_config_errors_with_the_key_path(build, key, named) -> None:
    with pytest.raises(ConfigError) as info:
        build()
    assert info.value.key == key and info.value.source is None
    assert str(info.value).startswith(named)


def test_the_same_bound_is_reported_from_the_file_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, """
        target:
          spec: mock:echo
          limits:
            backoff: {initial_s: 5, max_s: 1}
        probing:
          sampling: {top_p: 0}
    """)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    text = str(info.value)
    assert f"{path}:4: target.limits.backoff.max_s: should be >= initial_s (5.0) (got 1)" in text
    assert f"{path}:6: probing.sampling.top_p: Input should be greater than 0 (got 0)" in text


def test_the_regression_section_is_the_replays_policy_with_its_errors_located(tmp_path: Path) -> None:
    path = write(tmp_path, """
        target: mock:echo
        regression:
          alpha: 0.05
          looks: [4, 8]
    """)
    config = load_config(path, env={})
    assert config.regression == RegressionPolicy(alpha=0.05, looks=(4, 8))
    assert config.model_dump(mode="json")["regression"] == {"alpha": 0.05, "looks": [4, 8], "same_from": 5,
                                                            "same_every": 2, "min_drop": 0.3,
                                                            "futility": 0.1, "baseline_samples": 40}
    bad = write(tmp_path, """
        target: mock:echo
        regression:
          looks: [10, 5]
    """)
    with pytest.raises(ConfigError) as info:
        load_config(bad, env={})
    assert f"{bad}:3: regression.looks: [10, 5] must be increasing sample counts >= 1" in str(info.value)
    with pytest.raises(ConfigError, match="n_cases is set by the replay"):
        load_config(None, [parse_set("regression.n_cases=3")], env={})


def test_build_errors_are_located_by_key_not_by_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    few_shot_project(tmp_path, monkeypatch)
    path = writer_config(tmp_path, "examples: shots.jsonl")
    with pytest.raises(ConfigError) as info:
        build_probe(load_config(path, env={}))
    assert info.value.key == ("curriculum", "examples") and info.value.source == f"{path}:4"
    assert str(info.value).startswith(f"{path}:4: curriculum.examples: examples are used by style 'few_shot' only")
    unset = write(tmp_path, """
        target:
          spec: python:agent.py:answer
          options: {api_key: "${FQA_TEST_SURELY_UNSET}"}
        curriculum: {type: file, path: cases.jsonl}
    """, name="unset.yaml")
    monkeypatch.delenv("FQA_TEST_SURELY_UNSET", raising=False)
    with pytest.raises(ConfigError) as info:
        parts = build_probe(load_config(unset, env={}), curriculum=False)
        asyncio.run(parts.aclose())
    assert info.value.key == ("target", "options", "api_key") and info.value.source == f"{unset}:3"
