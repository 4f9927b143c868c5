"""``CurriculumTrainer``: TRL's ``GRPOTrainer`` with the target reward wired in.

GRPO itself is TRL's (group-normalised advantages, KL to the reference model, clipping,
vLLM or transformers generation, DeepSpeed / FSDP through ``accelerate launch``). What changes
for Agent0's curriculum agent (§3.2) is small, so the subclass overrides little:

* ``__init__`` binds the :class:`~frontier_qa.train._reward.TargetReward` to the run: with
  several processes it gathers every process's tasks so the repetition penalty runs over the
  global batch (Agent0 Eq. 4's B), and each process logs its tasks to its own file;
* ``log`` also appends every logged row (loss, KL, each reward term) to
  ``<output_dir>/metrics.jsonl`` on the main process, so no tracker is needed to read a run;
* a callback ends training after the step in which the target budget ran out, with a
  checkpoint, instead of failing in the middle of one.

This module imports TRL at import time; import it only after checking the ``train`` extra.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import PrinterCallback, ProgressCallback, TrainerCallback
from trl import GRPOTrainer

from frontier_qa.train._reward import TargetReward
from frontier_qa.train._tasks import TaskLog, task_log_path

METRICS_FILE = "metrics.jsonl"


class BudgetStop(TrainerCallback):
    """Stops training (and saves) after the step in which the reward's target budget ran out."""

    def __init__(self, reward: TargetReward) -> None:
        self.reward = reward
        self.stopped: str | None = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.reward.budget_exhausted is not None and self.stopped is None:
            self.stopped = self.reward.budget_exhausted
            control.should_training_stop = True
            control.should_save = True
        return control


class CardWriter(TrainerCallback):
    """Writes the curriculum card (:mod:`frontier_qa.train._card_writer`) into every checkpoint, so each
    ``checkpoint-N`` is a curriculum the probe asks the way it was trained.
    """

    def __init__(self, card: Any) -> None:
        self.card = card

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        from frontier_qa.train._card_writer import write_card

        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():
            write_card(folder, self.card)
        return control


class CurriculumTrainer(GRPOTrainer):
    """GRPO on the curriculum model with Agent0's composite reward from a real target.

    Args:
        model: the curriculum model (a local folder path, loaded with ``args.model_init_kwargs``).
        reward: the target reward (its log, gather and rank are set here).
        args: TRL ``GRPOConfig``.
        train_dataset: the prompt rows (:meth:`frontier_qa.train._prompts.TaskFormat.rows`).
        processing_class: the tokenizer (saved into every checkpoint, so each one loads alone).
        peft_config: a ``peft.LoraConfig`` for LoRA, ``None`` for full fine-tuning.
        log_tasks: write ``tasks.jsonl`` under ``args.output_dir``.
        on_log: called with every logged row on the main process (progress output).
        card: a :class:`~frontier_qa.train._card_writer.CurriculumCard` written into every checkpoint.

    Attributes:
        budget_stop: the callback that ended training early, if the budget did.
        metrics_path: ``<output_dir>/metrics.jsonl``.
    """

    def __init__(self, model: Any, reward: TargetReward, args: Any, train_dataset: Any, processing_class: Any,
                 peft_config: Any = None, *, log_tasks: bool = True,
                 on_log: Callable[[dict[str, Any]], None] | None = None, card: Any = None) -> None:
        # TRL awaits async reward functions (trl.trainer.utils.is_async_callable); its annotation lists sync ones
        super().__init__(model=model, reward_funcs=[reward],  # type: ignore[list-item]
                         args=args, train_dataset=train_dataset,
                         processing_class=processing_class, peft_config=peft_config)
        self.reward = reward
        rank = self.accelerator.process_index
        reward.rank = rank
        if log_tasks:
            reward.log = TaskLog(task_log_path(args.output_dir, rank))
        if self.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            # TRL calls the reward on every process with the same batch size, in step: the
            # gather below is a collective that every rank reaches together.
            reward.gather = lambda items: list(gather_object(list(items)))
        self.budget_stop = BudgetStop(reward)
        self.add_callback(self.budget_stop)
        if card is not None:
            self.add_callback(CardWriter(card))
        self.metrics_path = Path(args.output_dir) / METRICS_FILE
        self.on_log = on_log
        if on_log is not None:  # one line per step instead of a bar and a printed dict
            self.remove_callback(ProgressCallback)
            self.remove_callback(PrinterCallback)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        super().log(logs, start_time)
        if self.accelerator.is_main_process and self.state.log_history:
            row = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                   for k, v in self.state.log_history[-1].items()}
            self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
            with self.metrics_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row, sort_keys=True) + "\n")
            if self.on_log is not None:
                self.on_log(row)


__all__ = ["METRICS_FILE", "BudgetStop", "CardWriter", "CurriculumTrainer"]
