"""ADPO's upper clip ε_high(p̂) on real training steps: inert on-policy, binding per task with two updates.

With one optimizer update per batch of rollouts (``updates_per_generation: 1``, what the
reference's executor training does: train_batch_size = ppo_mini_batch_size = 128), TRL keeps no
old log-probabilities: the ratio π/π_old is exactly 1, no token is ever clipped and ε_high(p̂)
cannot act; only s(p̂) shapes the update. With two updates per batch the second one runs on
rollouts of the previous policy, ratios move off 1 and each task's tokens are clipped at its
own 1 + ε_high(p̂).

The tests run TRL's real loop (generation, old log-probs, two optimizer updates) on a tiny
random model with a high learning rate, and record every loss batch's ratios by recomputing
the policy's log-probabilities next to TRL's loss (the same forward pass TRL makes).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from frontier_qa.train.adpo import REFERENCE, clip_high  # noqa: E402

P_HATS = (0.3, 0.8, 0.3, 0.8)  # ε_high 0.3 (ambiguous) and 0.2 (confident), alternating tasks


def _length_reward(completions, **kwargs):  # noqa: ANN001, ANN201
    """Varies across completions, so advantages are not zero."""
    from frontier_qa.scoring.rewards import completion_text

    return [float(len(completion_text(c))) for c in completions]


def _train(tmp_path, updates: int):  # noqa: ANN001, ANN202
    from datasets import Dataset
    from trl import GRPOConfig

    from frontier_qa.train.adpo_trainer import ADPOTrainer
    from tests.tiny_models import build_tiny_model

    class Recording(ADPOTrainer):
        """Records, for every loss batch, each token's ratio, its task's ε_high, its advantage and mask."""

        batches: list[dict] = []

        def _compute_loss(self, model, inputs):  # noqa: ANN001, ANN202
            loss = super()._compute_loss(model, inputs)
            ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
            attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
            with torch.no_grad():
                logps = self._get_per_token_logps_and_entropies(model, ids, attention,
                                                                inputs["completion_ids"].size(1))[0]
            old = inputs.get("old_per_token_logps")
            self.batches.append({
                "ratio": torch.exp(logps - (logps if old is None else old)),
                "eps_high": inputs["adpo_epsilon_high"].clone(),
                "advantages": inputs["advantages"].clone(),
                "mask": inputs["completion_mask"].bool(),
                "old": old is not None,
            })
            return loss

    folder = build_tiny_model(tmp_path / "model")
    rows = [{"prompt": [{"role": "user", "content": f"Count to {i}."}], "p_hat": p} for i, p in enumerate(P_HATS * 4)]
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_generations=4,
        gradient_accumulation_steps=1, steps_per_generation=updates, max_completion_length=24, max_steps=4,
        learning_rate=0.01, beta=0.0, temperature=1.0, use_cpu=True, bf16=False, gradient_checkpointing=False,
        report_to="none", logging_steps=1, save_strategy="no", seed=0, loss_type="dapo",
    )
    Recording.batches = []
    trainer = Recording(model=str(folder), reward_funcs=[_length_reward], args=args,
                        train_dataset=Dataset.from_list(rows))
    trainer.train()
    logged = [row for row in trainer.state.log_history if "clip_ratio/high_mean" in row]
    return Recording.batches, logged


@pytest.mark.slow
def test_on_policy_the_ratio_is_exactly_one_and_nothing_is_clipped(tmp_path) -> None:  # noqa: ANN001
    batches, logged = _train(tmp_path, updates=1)
    assert len(batches) == 4 and not any(b["old"] for b in batches)  # TRL kept no old log-probs
    assert all(torch.equal(b["ratio"], torch.ones_like(b["ratio"])) for b in batches)
    assert [row["clip_ratio/high_mean"] for row in logged] == [0.0] * 4
    assert [row["clip_ratio/region_mean"] for row in logged] == [0.0] * 4


@pytest.mark.slow
def test_with_two_updates_each_task_is_clipped_at_its_own_bound(tmp_path, report_measurement) -> None:  # noqa: ANN001
    batches, logged = _train(tmp_path, updates=2)
    # generation, update 1 (policy = old policy), update 2 (moved policy), twice
    assert [b["old"] for b in batches] == [True] * 4
    second = [batches[1], batches[3]]
    ratio = torch.cat([b["ratio"][b["mask"]] for b in second])
    assert ratio.min() < 1 - REFERENCE.epsilon_low and ratio.max() > 1 + 0.3  # the policy moved between updates

    def tokens(b, eps):  # noqa: ANN001, ANN202 - (ratio, advantage) of the tokens of tasks with this ε_high
        rows = (b["eps_high"] - eps).abs() < 1e-6
        keep = b["mask"] & rows[:, None]
        return b["ratio"][keep], b["advantages"][:, None].expand_as(b["ratio"])[keep]

    # tokens pushed up (A > 0) with 1.2 < ratio <= 1.3: clipped for a confident task (ε_high 0.2),
    # still inside the trust region of an ambiguous one (ε_high 0.3): the bound is the task's own
    between = {}
    for eps in (clip_high(0.8), clip_high(0.3)):
        pairs = [tokens(b, eps) for b in second]
        r = torch.cat([p[0] for p in pairs])
        a = torch.cat([p[1] for p in pairs])
        between[eps] = int(((r > 1.2) & (r <= 1.3) & (a > 0)).sum())
    assert min(between.values()) > 0, between
    # TRL's clip metric, computed against the per-task bounds, matches a by-hand count with them
    for b, row in zip(batches, logged, strict=True):
        adv = b["advantages"][:, None].expand_as(b["ratio"])
        high = (b["ratio"] > 1 + b["eps_high"][:, None]) & (adv > 0) & b["mask"]
        assert row["clip_ratio/high_mean"] == pytest.approx(float(high.sum() / b["mask"].sum()), abs=1e-6)
    clipped = [row["clip_ratio/region_mean"] for row in logged]
    assert clipped[0] == pytest.approx(0.0, abs=1e-6) and clipped[1] > 0  # update 1 on-policy, update 2 not
    report_measurement("adpo_clip", f"ADPO, 2 updates per generation: ratios {ratio.min():.2f}-{ratio.max():.2f} on "
                       f"the second update, clipped share {clipped[1]:.2f} and {clipped[3]:.2f}; tokens with "
                       f"1.2 < ratio <= 1.3 and A > 0: {between[clip_high(0.8)]} clipped (p̂ 0.8), "
                       f"{between[clip_high(0.3)]} let through (p̂ 0.3)")
