"""One-command validation of co-evolution on one device: speed, memory and whether it learns.

Run from the repository root::

    # on a GPU machine (one GPU), the paper's settings with fewer steps; set the two model paths
    python benchmarks/gpu_validation.py --config configs/coevolve/agent0.yaml \\
        --set curriculum.model.path=Qwen/Qwen3-4B-Base --set executor.model.path=Qwen/Qwen3-4B-Base
    # on CPU with tiny models built on the fly (what CI runs; seconds, not a measurement of anything big)
    python benchmarks/gpu_validation.py --tiny

It measures (``frontier_qa/train/validate.py``): curriculum step time split into generation,
executor reward sampling and the rest; generated tokens per second; peak memory; clip
fractions; mean R_unc and the in-band share of the first steps; the executor's pseudo-label
reward over ADPO steps; and the same curriculum steps with plain TRL ``GRPOTrainer`` on the same
model, as a ratio. Prints a table and writes ``<out>/validation.json``. ``--set`` takes any key
of the co-evolution config (``--set executor.sampler=vllm-server``,
``--set curriculum.training.prompts_per_step=16``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "VLLM_NO_USAGE_STATS": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():  # fmt: skip
    os.environ.setdefault(key, value)

REPO = Path(__file__).resolve().parents[1]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(REPO / "configs" / "coevolve" / "agent0.yaml"))
    parser.add_argument("--set", dest="sets", action="append", default=[], help="KEY=VALUE, any config key")
    parser.add_argument("--steps", type=int, default=3, help="curriculum (and plain GRPO) optimizer steps")
    parser.add_argument("--executor-steps", type=int, default=3, help="ADPO steps")
    parser.add_argument("--out", default=None, help="folder for the runs and validation.json (default: a temp dir)")
    parser.add_argument("--tiny", action="store_true", help="CPU: tiny models built on the fly (CI)")
    parser.add_argument("--sampler", choices=("transformers", "vllm", "vllm-server"), default=None,
                        help="executor.sampler (default: the config's; --tiny: transformers)")
    args = parser.parse_args(argv)

    from frontier_qa.config import parse_set
    from frontier_qa.errors import FrontierQAError
    from frontier_qa.train.coevolve_config import load_coevolve_config
    from frontier_qa.train.validate import markdown, validate

    out = Path(args.out or tempfile.mkdtemp(prefix="frontier-qa-validation-"))
    sets = list(args.sets)
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
                          say=lambda line: print(line, file=sys.stderr, flush=True))
    except FrontierQAError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(markdown(report))
    print(f"\nreport: {out / 'validation.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
