"""The one-command validation (``benchmarks/gpu_validation.py``) runs on CPU with tiny models.

On a GPU the same command measures the real figures; here it must produce every one of them,
from real training steps: curriculum steps split into generation / executor sampling / the
rest, tokens per second, peak memory, clip fractions, R_unc and the in-band share, the same
steps with plain TRL GRPO as a ratio, and the executor's pseudo-label reward over ADPO steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.factories import load_benchmark

pytestmark = [pytest.mark.slow]


def test_tiny_validation_reports_every_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              report_measurement) -> None:  # noqa: ANN001
    bench = load_benchmark("gpu_validation")
    assert bench.main(["--tiny", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "| curriculum | 1 |" in printed and "| plain GRPO | 3 |" in printed and "| executor | 3 |" in printed
    report = json.loads((tmp_path / "validation.json").read_text())

    c = report["curriculum"]["steps"]
    assert [s["step"] for s in c] == [1, 2, 3]  # 2 updates per generation: rounds at steps 1 and 3
    for s in (c[0], c[2]):
        assert s["generation_s"] > 0 and s["sampling_s"] > 0 and s["generated_tokens"] > 0 and s["tokens_per_s"] > 0
        assert 0 <= s["uncertainty"] <= 1 and 0 <= s["in_band"] <= 1
        assert s["wall_s"] >= s["generation_s"] + s["sampling_s"]
    assert c[1]["generation_s"] == 0 and c[1]["sampling_s"] == 0  # the second update reuses the round
    assert c[1]["clip_region"] is not None  # off-policy update: TRL reports its clip fraction
    assert report["curriculum"]["peak_memory_gib"] > 0
    assert report["curriculum"]["gpu_in_use_gib"] is None  # no GPU here: nothing is claimed for one

    plain = report["plain_grpo"]["steps"]
    assert [s["step"] for s in plain] == [1, 2, 3] and plain[0]["generation_s"] > 0
    assert all(s["sampling_s"] == 0 for s in plain)  # its reward is free
    ratio = report["ratio_to_plain_grpo"]
    assert ratio["wall_s"] > 0 and ratio["generation_s"] > 0
    speed = report["speed_vs_plain_grpo"]  # plain's generation + rest over ours, steps after the first
    later = [s["generation_s"] + s["optimizer_s"] for s in c[1:]]
    assert speed["generation_and_rest_s"] == pytest.approx(sum(later))
    assert speed["speed"] == pytest.approx(speed["plain_generation_and_rest_s"] / sum(later))
    assert report["weights"] == "trained" and "note" not in report  # trained tiny models: no random-weights caveat

    e = report["executor"]
    assert e["tasks_in_band"] > 0 and [s["step"] for s in e["steps"]] == [1, 2, 3]
    rewards = [s["pseudo_label_reward"] for s in e["steps"] if s["pseudo_label_reward"] is not None]
    assert rewards and all(0 <= r <= 1 for r in rewards)
    assert e["steps"][0]["tool_rollout_s"] > 0 and e["steps"][0]["tool_calls"] > 0
    report_measurement("validation_tiny", f"tiny validation on CPU: curriculum step {c[0]['wall_s']:.2f} s "
                       f"(generation {c[0]['generation_s']:.2f}, executor sampling {c[0]['sampling_s']:.2f}), "
                       f"{ratio['wall_s']:.1f}× plain GRPO; executor pseudo-label reward {rewards}")
