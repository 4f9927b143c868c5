"""One-command validation of co-evolution on one device: speed, memory and whether it learns.

Run from the repository root::

    # on a GPU machine (one GPU), the paper's settings with fewer steps; set the two model paths
    python benchmarks/gpu_validation.py --config configs/coevolve/agent0.yaml \\
        --set curriculum.model.path=Qwen/Qwen3-4B-Base --set executor.model.path=Qwen/Qwen3-4B-Base
    # on CPU with tiny models built on the fly (what CI runs; seconds, not a measurement of anything big)
    python benchmarks/gpu_validation.py --tiny
    # no model on disk, no hub: a randomly initialised Qwen3 of a real size built here (speed and memory only)
    python benchmarks/gpu_validation.py --random qwen3-0.6b --out runs/gpu-validation/qwen3-0.6b

It measures (``frontier_qa/train/_device_validation.py``): curriculum step time split into generation,
executor reward sampling and the rest; generated tokens per second; peak memory; clip
fractions; mean R_unc and the in-band share of the first steps; the executor's pseudo-label
reward over ADPO steps; and the same curriculum steps with plain TRL ``GRPOTrainer`` on the same
model, as ratios. Prints a table and writes ``<out>/validation.json`` (and ``--markdown`` a file
with the table). ``--random NAME`` builds a randomly initialised model of a real size
(``benchmarks/gpu/random_models.py``: Qwen3-0.6B or 1.7B shapes, the real 151,936-token vocabulary)
as both curriculum and executor and sizes the steps to finish in about a minute on one GPU: what
``benchmarks/gpu/run.sh`` runs on a machine that reaches no model hub. Random weights measure speed
and memory, not learning. ``--set`` takes any key
of the co-evolution config (``--set executor.sampler=vllm-server``,
``--set curriculum.training.prompts_per_step=16``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "VLLM_NO_USAGE_STATS": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():  # fmt: skip
    os.environ.setdefault(key, value)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks" / "gpu"))
from random_models import SIZES, build_model  # noqa: E402  (torch loads only when a model is built)

WRITE = "Write one math problem."
SYSTEM = "Solve it with python, then box the answer."


def tiny_settings(folder: Path, heads: int) -> list[str]:
    """Tiny models (tests/tiny_models.py) and settings that run in seconds on CPU."""
    sys.path.insert(0, str(REPO))
    from tests.tiny_models import TOOL_PAIRS, build_question_writer_model, build_tool_user_model, tool_question

    questions = [tool_question(a, b) for a, b in TOOL_PAIRS]
    curriculum = build_question_writer_model(folder / "curriculum", WRITE, questions, seed=1, num_heads=heads)
    executor = build_tool_user_model(folder / "executor", system=SYSTEM, num_heads=heads)
    return [
        f"curriculum.model.path={curriculum}", "curriculum.curriculum.style=plain",
        f"curriculum.curriculum.prompt.user={WRITE}", "curriculum.reward.k=4",
        "curriculum.training.prompts_per_step=4", "curriculum.training.num_generations=4",
        "curriculum.training.per_device_train_batch_size=8", "curriculum.training.updates_per_generation=2",
        "curriculum.training.learning_rate=1e-3", "curriculum.training.beta=0.0",
        "curriculum.training.max_completion_length=16", "curriculum.generation.backend=transformers",
        f"executor.model.path={executor}", f"executor.system={SYSTEM}", "executor.sampling.max_tokens=40",
        "executor.sampling.temperature=1.0", "executor.sampling.top_p=1.0",
        "executor.tools.max_tool_turns=2", "executor.training.prompts_per_step=2",
        "executor.training.num_generations=4", "executor.training.per_device_train_batch_size=8",
        "executor.training.updates_per_generation=2", "executor.training.learning_rate=1e-3",
        "executor.training.beta=0.0", "executor.training.max_completion_length=64", "pool.band=[0.25, 1.0]",
    ]


PLAIN_TASK = "Write one hard math problem. Give only the problem."


def random_settings(model: Path, tiny: bool = False) -> list[str]:
    """Settings for a random-weight model (``benchmarks/gpu/random_models.py``) as curriculum and executor.

    Both agents start from the same model, as in Agent0. The steps are sized so one size runs in
    about a minute on one GPU (``run.sh`` runs two within 5 minutes, so a machine's start and a
    rerun fit in the 15 minutes a lent machine has): 4 prompts × 4 tasks a curriculum update and 2
    updates per round (the second is off-policy, so the PPO clip acts), so a round writes 32 tasks
    and samples the executor k = 4 times on each, 128 rows in one batch; 128 tokens a completion;
    ADPO on 4 tasks × 4 rollouts. The curriculum prompt is ``plain`` (the whole completion is the
    task): random weights never write Agent0's ``<question>`` tags, and a task that fails the
    format gate is never sent to the executor, which would leave executor sampling unmeasured.
    Generation runs on transformers (the machine has no vLLM). ``dtype: auto`` is the saved one:
    bf16 on a GPU, float32 on CPU.

    Args:
        model: the built model folder.
        tiny: the CPU dry run's sizes (2 prompts a step for each agent, 16 tokens).
    """
    tokens, prompts, batch = (16, 2, 8) if tiny else (128, 4, 16)
    return [
        f"curriculum.model.path={model}", "curriculum.model.dtype=auto", "curriculum.curriculum.style=plain",
        f"curriculum.curriculum.prompt.user={PLAIN_TASK}", "curriculum.generation.backend=transformers",
        "curriculum.reward.k=4", f"curriculum.training.prompts_per_step={prompts}",
        "curriculum.training.num_generations=4", f"curriculum.training.per_device_train_batch_size={batch}",
        "curriculum.training.updates_per_generation=2", f"curriculum.training.max_completion_length={tokens}",
        f"executor.model.path={model}", "executor.model.dtype=auto", "executor.sampler=transformers",
        "executor.target_options.max_batch_rows=128", f"executor.sampling.max_tokens={tokens}",
        "executor.tools.max_tool_turns=1", f"executor.training.prompts_per_step={prompts if tiny else 4}",
        "executor.training.num_generations=4", f"executor.training.per_device_train_batch_size={batch}",
        "executor.training.updates_per_generation=2", f"executor.training.max_completion_length={tokens}",
        "executor.generation.backend=transformers",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(REPO / "configs" / "coevolve" / "agent0.yaml"))
    parser.add_argument("--set", dest="sets", action="append", default=[], help="KEY=VALUE, any config key")
    parser.add_argument("--steps", type=int, default=3, help="curriculum (and plain GRPO) optimizer steps")
    parser.add_argument("--executor-steps", type=int, default=3, help="ADPO steps")
    parser.add_argument("--out", default=None, help="folder for the runs and validation.json (default: a temp dir)")
    parser.add_argument("--tiny", action="store_true", help="CPU: tiny models built on the fly (CI)")
    parser.add_argument("--random", choices=sorted(SIZES), default=None,
                        help="a randomly initialised model of this size as both agents (speed and memory only)")
    parser.add_argument("--markdown", default=None, help="also write the table to this file")
    parser.add_argument("--sampler", choices=("transformers", "vllm", "vllm-server"), default=None,
                        help="executor.sampler (default: the config's; --tiny: transformers)")
    args = parser.parse_args(argv)

    from frontier_qa.config import parse_set
    from frontier_qa.errors import FrontierQAError
    from frontier_qa.train._coevolve_config import load_coevolve_config
    from frontier_qa.train._device_validation import markdown, validate

    out = Path(args.out or tempfile.mkdtemp(prefix="frontier-qa-validation-"))
    sets = list(args.sets)
    if args.tiny and args.random:
        parser.error("--tiny and --random are two different model sets: pick one")
    built: dict[str, Any] = {}
    if args.random:
        built = build_model(args.random, out / "models" / args.random)
        sets = random_settings(Path(str(built["folder"])), tiny=SIZES[args.random].hidden < 512) + sets
    if args.tiny:
        sampler = args.sampler or "transformers"
        sets = tiny_settings(out / "models", heads=2 if sampler != "transformers" else 4) + sets
    if args.sampler:
        sets.append(f"executor.sampler={args.sampler}")
    elif args.tiny:
        sets.append("executor.sampler=transformers")
    try:
        config = load_coevolve_config(args.config, [parse_set(s) for s in sets])
        report = validate(config, steps=args.steps, executor_steps=args.executor_steps, out=out,
                          say=lambda line: print(line, file=sys.stderr, flush=True),
                          weights="random" if args.random else "trained", executor_fallback=bool(args.random),
                          model=built or None)
    except FrontierQAError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    table = markdown(report)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n", encoding="utf-8")
    print(f"\nreport: {out / 'validation.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
