"""ADPO (the executor's objective): the schedule, the reward, the per-task clip inside TRL's loss,
the TRL guard, and observation masking of tool output.

Loss tests build the batch by hand on a tiny random model: the policy's log-probabilities are
computed once, and ``old_per_token_logps`` is set to ``logp − log r`` so every token's ratio
π/π_old is exactly ``r``; the expected loss then follows from the clip bounds by hand.
"""

from __future__ import annotations

import math
import sys

import pytest

from frontier_qa.errors import ConfigError
from frontier_qa.train._rollout import MaskedRollout, Segment, mask_observations, pad_rollouts
from frontier_qa.train.adpo import (
    REFERENCE,
    ADPOSchedule,
    PseudoLabelReward,
    advantage_scale,
    check_p_hat,
    clip_high,
    clip_low,
)

# --- schedule ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p_hat", "scale"),
    # s = 0.6 + 0.4·clamp((p̂ − 0.3)/0.5, 0, 1)
    [(0.0, 0.6), (0.3, 0.6), (0.4, 0.68), (0.55, 0.8), (0.7, 0.92), (0.8, 1.0), (1.0, 1.0)],
)
def test_advantage_scale_reference_values(p_hat: float, scale: float) -> None:
    assert advantage_scale(p_hat) == pytest.approx(scale, abs=1e-12)


@pytest.mark.parametrize(
    ("p_hat", "eps"),
    # ε_high = 0.2 + 0.1·clamp((0.8 − p̂)/0.5, 0, 1)
    [(0.0, 0.3), (0.3, 0.3), (0.4, 0.28), (0.55, 0.25), (0.7, 0.22), (0.8, 0.2), (1.0, 0.2)],
)
def test_clip_high_reference_values(p_hat: float, eps: float) -> None:
    assert clip_high(p_hat) == pytest.approx(eps, abs=1e-12)
    assert clip_low() == 0.2  # ε_low is fixed


def test_custom_schedule() -> None:
    s = ADPOSchedule(scale_base=0.5, scale_gain=0.5, scale_from=0.0, scale_span=1.0,
                     epsilon_low=0.1, epsilon_high_base=0.1, epsilon_high_gain=0.3, clip_until=1.0, clip_span=1.0)
    assert advantage_scale(0.25, s) == pytest.approx(0.625)
    assert clip_high(0.25, s) == pytest.approx(0.1 + 0.3 * 0.75)
    assert clip_low(s) == 0.1


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan"), float("inf"), "0.5", None, True])
def test_p_hat_is_validated(bad: object) -> None:
    with pytest.raises(ConfigError, match="p_hat"):
        advantage_scale(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        clip_high(bad)  # type: ignore[arg-type]


def test_check_p_hat_accepts_ints_and_bounds() -> None:
    assert check_p_hat(0) == 0.0 and check_p_hat(1) == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [{"scale_span": 0}, {"clip_span": -1}, {"epsilon_low": 1.0}, {"scale_base": 0},
     {"epsilon_high_gain": -0.1}, {"scale_from": 1.5}, {"clip_until": float("nan")}, {"epsilon_low": "0.2"}],
)
def test_schedule_is_validated(kwargs: dict) -> None:
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        ADPOSchedule(**kwargs)


def test_pure_modules_do_not_import_torch() -> None:
    import subprocess

    code = ("import sys, frontier_qa.train.adpo, frontier_qa.train._rollout; "
            "print(sorted(m for m in ('torch','trl','transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- reward --------------------------------------------------------------------------------------


def test_pseudo_label_reward() -> None:
    reward = PseudoLabelReward()
    completions = [
        "so x = 1/2, \\boxed{\\frac{1}{2}}",           # ≡ 0.5
        [{"role": "assistant", "content": "\\boxed{0.5}"}],  # conversational
        "first \\boxed{0.5} then \\boxed{3}",           # the last box counts
        "0.5 but no box",
        "\\boxed{0.5",                                   # unclosed box: no answer
        "\\boxed{7}",
    ]
    labels = ["0.5", "0.5", "0.5", "0.5", "0.5", None]
    assert reward([""] * 6, completions, pseudo_label=labels) == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert reward.__name__ == "pseudo_label"


def test_pseudo_label_reward_errors() -> None:
    with pytest.raises(ConfigError, match="'pseudo_label' column"):
        PseudoLabelReward()(["p"], ["\\boxed{1}"], other=["1"])
    with pytest.raises(ConfigError, match="equivalence mode"):
        PseudoLabelReward(mode="fuzzy")
    assert PseudoLabelReward("label", mode="string")(["p"], ["\\boxed{1/2}"], label=["0.5"]) == [0.0]


# --- observation masking -------------------------------------------------------------------------


def test_mask_observations_on_a_constructed_rollout() -> None:
    # model turn (writes code) · tool output · model turn (second call) · tool output · final answer
    rollout = mask_observations([
        ("model", [10, 11, 12]), Segment("tool", (20, 21)), ("model", [13]), ("tool", [22, 23, 24]),
        ("model", [14, 15]),
    ])
    assert rollout.completion_ids == (10, 11, 12, 20, 21, 13, 22, 23, 24, 14, 15)
    assert rollout.tool_mask == (1, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1)
    assert rollout.tool_turns == 2 and rollout.trained_tokens == 6
    with pytest.raises(ConfigError, match="3 tool turns"):
        mask_observations([("tool", [1])] * 3, max_tool_turns=2)
    with pytest.raises(ConfigError, match="kind"):
        mask_observations([("observation", [1])])
    with pytest.raises(ConfigError, match="token id"):
        mask_observations([("model", [-1])])


def test_pad_rollouts() -> None:
    a = MaskedRollout((1, 2, 3), (1, 0, 1), 1)
    b = MaskedRollout((4,), (1,), 0)
    assert pad_rollouts([a, b], pad_token_id=0) == (
        [[1, 2, 3], [4, 0, 0]], [[1, 1, 1], [1, 0, 0]], [[1, 0, 1], [1, 1, 1]])


# --- the trainer ---------------------------------------------------------------------------------

trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")


def _length_reward(completions, **kwargs):
    """Varies across completions, so advantages are not all zero."""
    from frontier_qa.scoring.rewards import completion_text

    return [float(len(completion_text(c))) for c in completions]


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    from datasets import Dataset
    from trl import GRPOConfig

    from frontier_qa.train.adpo_trainer import ADPOTrainer
    from tests.tiny_models import build_tiny_model

    folder = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    rows = [
        {"prompt": [{"role": "user", "content": f"What is {i}+3?"}], "p_hat": p, "pseudo_label": str(i + 3)}
        for i, p in enumerate([0.8, 0.3, 0.55, 0.7])
    ]
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("out")), per_device_train_batch_size=4, num_generations=2,
        max_completion_length=6, max_steps=1, use_cpu=True, bf16=False, gradient_checkpointing=False,
        report_to="none", logging_steps=1, save_strategy="no", seed=0, loss_type="dapo", learning_rate=1e-2,
    )
    return ADPOTrainer(model=str(folder), reward_funcs=[PseudoLabelReward(), _length_reward], args=args,
                       train_dataset=Dataset.from_list(rows), processing_class=None)


def _batch(trainer, completion_mask, ratio, advantages, p_hats):
    """A constructed batch where π/π_old = ``ratio`` (B, T) exactly."""
    model = trainer.model
    torch.manual_seed(1)
    B, T = completion_mask.shape
    prompt_ids = torch.randint(3, 100, (B, 4))
    completion_ids = torch.randint(3, 100, (B, T))
    prompt_mask = torch.ones_like(prompt_ids)
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            model, torch.cat([prompt_ids, completion_ids], 1), torch.cat([prompt_mask, completion_mask], 1), T)
    return {
        "prompt_ids": prompt_ids, "prompt_mask": prompt_mask,
        "completion_ids": completion_ids, "completion_mask": completion_mask,
        "advantages": torch.tensor(advantages), "old_per_token_logps": logps - torch.log(ratio),
        "num_items_in_batch": completion_mask.sum(),
        "adpo_epsilon_low": torch.full((B,), REFERENCE.epsilon_low),
        "adpo_epsilon_high": torch.tensor([clip_high(p) for p in p_hats]),
    }


def test_per_task_upper_clip_is_applied_inside_the_loss(trainer) -> None:
    trainer.model.eval()  # eval: dapo's normaliser is num_items_in_batch alone (no accumulation)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
    ratio = torch.tensor([[1.25] * 4, [1.25] * 4, [0.7] * 4])
    # row 0 confident (p̂ 0.8, ε_high 0.2): 1.25 > 1.2 is clipped → per-token loss −1.2·A
    # row 1 ambiguous (p̂ 0.3, ε_high 0.3): 1.25 < 1.3 is not       → −1.25·A
    # row 2 negative advantage, 0.7 < 1 − ε_low = 0.8 is clipped    → −min(0.7·−0.5, 0.8·−0.5) = 0.4
    inputs = _batch(trainer, mask, ratio, [1.0, 1.0, -0.5], [0.8, 0.3, 0.55])
    loss = trainer._compute_loss(trainer.model, inputs)
    expected = (3 * -1.2 + 2 * -1.25 + 4 * 0.4) / 9  # = −0.5
    assert loss.item() == pytest.approx(expected, abs=1e-5)
    metrics = trainer._metrics["eval"]
    assert metrics["clip_ratio/high_mean"][-1] == pytest.approx(3 / 9)  # only row 0's tokens
    assert metrics["clip_ratio/low_mean"][-1] == pytest.approx(4 / 9)
    # TRL's scalars are back after the batch, and plain GRPO (ε_high 0.2 for all) would differ
    assert trainer.epsilon_high == 0.2 and trainer.epsilon_low == 0.2
    inputs["adpo_epsilon_high"] = torch.full((3,), 0.2)
    assert trainer._compute_loss(trainer.model, inputs).item() == pytest.approx((3 * -1.2 + 2 * -1.2 + 1.6) / 9,
                                                                                  abs=1e-5)


def test_tool_output_is_excluded_from_the_loss(trainer) -> None:
    trainer.model.eval()
    rollout = mask_observations([("model", [1, 2]), ("tool", [3, 4, 5]), ("model", [6])])
    _, attention, tool_mask = pad_rollouts([rollout], pad_token_id=0)
    # ratio 1 on the model's tokens, 5 on the tool's: were tool tokens in the loss, they would add −1.2 each
    ratio = torch.tensor([[1.0, 1.0, 5.0, 5.0, 5.0, 1.0]])
    inputs = _batch(trainer, torch.tensor(attention), ratio, [1.0], [0.8])
    inputs.update(tool_mask=torch.tensor(tool_mask), num_items_in_batch=torch.tensor(rollout.trained_tokens))
    assert trainer._compute_loss(trainer.model, inputs).item() == pytest.approx(-1.0, abs=1e-5)
    del inputs["tool_mask"]
    inputs["num_items_in_batch"] = torch.tensor(6)
    assert trainer._compute_loss(trainer.model, inputs).item() == pytest.approx((3 * -1.0 + 3 * -1.2) / 6, abs=1e-5)


def test_advantages_are_scaled_per_task(trainer) -> None:
    trainer.model.train()
    # one generation batch (4 = 2 tasks × num_generations 2), as TRL's RepeatSampler orders it
    rows = [dict(r) for r in trainer.train_dataset.select([0, 1]) for _ in range(2)]
    assert [r["p_hat"] for r in rows] == [0.8, 0.8, 0.3, 0.3]  # scales 1.0 and 0.6
    out = trainer._generate_and_score_completions(rows)
    raw = torch.tensor(list(trainer._logs["advantages"])[-len(rows):])  # TRL's, before ADPO
    scales = torch.tensor([advantage_scale(r["p_hat"]) for r in rows])
    assert raw.abs().sum() > 0  # the length reward varies, so the check below has teeth
    assert torch.allclose(out["advantages"], raw * scales, atol=1e-6)
    assert out["adpo_epsilon_high"].tolist() == pytest.approx([clip_high(r["p_hat"]) for r in rows])
    assert out["adpo_epsilon_low"].tolist() == pytest.approx([0.2] * len(rows))
    assert "rewards/pseudo_label/mean" in trainer._metrics["train"]


def test_missing_or_bad_p_hat_fails_before_generating(trainer) -> None:
    rows = [{"prompt": [{"role": "user", "content": "hi"}], "pseudo_label": "1"}] * 2
    with pytest.raises(ConfigError, match="'p_hat' column"):
        trainer._generate_and_score_completions(rows)
    with pytest.raises(ConfigError, match=r"p_hat \(row 1\)"):
        trainer._generate_and_score_completions([dict(rows[0], p_hat=0.5), dict(rows[0], p_hat=1.5)])


def test_one_real_training_step_changes_the_model(trainer) -> None:
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.model.train()
    trainer.train()
    changed = sum(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(), strict=True))
    assert changed > 0
    logged = [row for row in trainer.state.log_history if "loss" in row]
    assert logged and math.isfinite(logged[0]["loss"])


def test_loss_types_without_a_ratio_clip_are_refused(tmp_path) -> None:
    from datasets import Dataset
    from trl import GRPOConfig

    from frontier_qa.train.adpo_trainer import ADPOTrainer
    from tests.tiny_models import build_tiny_model

    folder = build_tiny_model(tmp_path / "m")
    args = GRPOConfig(output_dir=str(tmp_path / "o"), per_device_train_batch_size=2, num_generations=2,
                      use_cpu=True, bf16=False, report_to="none", loss_type="sapo")
    data = Dataset.from_list([{"prompt": "x", "p_hat": 0.5, "pseudo_label": "1"}])
    with pytest.raises(ConfigError, match="sapo"):
        ADPOTrainer(model=str(folder), reward_funcs=[_length_reward], args=args, train_dataset=data)


# --- TRL guard -----------------------------------------------------------------------------------


def test_trl_internals_are_the_ones_adpo_was_written_for() -> None:
    from frontier_qa.train import adpo_trainer

    changes = adpo_trainer.trl_changes()
    assert not changes, (
        "ADPOTrainer overrides GRPOTrainer internals that changed in the installed TRL:\n  - "
        + "\n  - ".join(changes)
        + "\nRe-read trl/trainer/grpo_trainer.py (_compute_loss, _generate_and_score_completions), port "
        "frontier_qa/train/adpo_trainer.py, re-run tests/train/test_adpo.py, then update TRL_VERSION, "
        "TRL_SIGNATURES and TRL_FINGERPRINTS."
    )


def test_guard_refuses_a_loss_without_the_relied_on_clip(monkeypatch) -> None:
    from frontier_qa.train import adpo_trainer

    monkeypatch.setattr(adpo_trainer, "_RELIED_ON", ("coef_2 = torch.clamp(coef_1, lo, hi)",))
    with pytest.raises(ConfigError, match="per-task clip bounds"):
        adpo_trainer.check_trl()
    monkeypatch.setattr(adpo_trainer, "TRL_VERSION", "0.0.1")
    monkeypatch.setattr(adpo_trainer, "_RELIED_ON", ())
    with pytest.warns(UserWarning, match="verified on 0.0.1"):
        adpo_trainer.check_trl()
