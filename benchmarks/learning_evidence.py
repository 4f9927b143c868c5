"""Benchmark: do the two trainers learn what Agent0 says they learn? Small models on CPU.

Not a test. Run from the repository root::

    python benchmarks/learning_evidence.py                 # both parts, seeds 0 1 2
    python benchmarks/learning_evidence.py --part curriculum --seeds 0

**Curriculum** (GRPO on Agent0's curriculum reward). The target is scripted with a planted weak
topic: it is unsure (p̂ = 0.5, inside Agent0's band 0.3-0.8) on every task about zebras and sure
(p̂ = 1) on anything else. A tiny word-level model is trained against it for ``--curriculum-steps``
steps; then the untrained and the trained model each write 100 proposals from the training
prompt, the target answers each k = 4 times, and the benchmark counts proposals in the band
per 100.

**Executor** (ADPO with sandboxed tool rollouts). A tiny model is imprinted to answer
"What is a + b?" by writing ``print(a + b)`` for a python tool, on a few pairs only, so on new
pairs it copies the numbers right only some of the time. A pool of new pairs is answered
k = 8 times with the tool; the tasks with 0.3 <= p̂ <= 0.8 are labelled with the executor's own
majority answer (no true answers are used) and the executor is trained by ADPO on them. Then
the starting and the trained executor answer held-out pairs (in neither the imprint nor the
pool) and are graded against the true sums. ``--compare-grpo`` also trains plain GRPO on the
same pool (ADPO's s(p̂) = 1 and ε_high = 0.2 for every task: TRL's GRPO exactly).

Prints one line per seed and part, and the ranges; numbers are whole-process on a shared
machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from collections import Counter
from pathlib import Path
from typing import Any

for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "VLLM_NO_USAGE_STATS": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():  # fmt: skip
    os.environ.setdefault(key, value)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests/tiny_models.py builds the small models

from frontier_qa.scoring.answers import extract_answer  # noqa: E402
from frontier_qa.config import parse_set  # noqa: E402
from frontier_qa.target import Case, Sampling  # noqa: E402

FEATURE = "zebra"
PROMPT = "Write one new task."


def unsure_on_zebras(case: Case, index: int) -> str:
    """The scripted target: answers A, B, A, B on tasks about zebras (p̂ = 0.5), A elsewhere."""
    return ("A" if index % 2 == 0 else "B") if FEATURE in case.prompt.split() else "A"


# --- curriculum --------------------------------------------------------------------------------


def in_band_per_100(model: Path, seed: int) -> tuple[int, int]:
    """(proposals in the band, valid proposals) among 100 from the training prompt."""
    from frontier_qa.scoring.bands import AGENT0_BAND
    from frontier_qa.curricula.prompted import derive_seed
    from frontier_qa.scoring.case import score_case
    from frontier_qa.runtime import open_target, run_sync
    from frontier_qa.train.prompts import TaskFormat
    from frontier_qa.testing import ScriptedAdapter, open_scripted

    fmt = TaskFormat("math", "plain", prompt={"user": PROMPT}, seed=seed)
    writer = open_target(f"hf:{model}", cache=False)
    target = open_scripted(ScriptedAdapter(unsure_on_zebras))
    sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=8)

    async def one(i: int) -> tuple[bool, bool]:
        case, _ = fmt.request(i)
        got = await writer.sample(case, 1, replace(sampling, seed=derive_seed(10_000 + seed, 0, i)))
        task = fmt.parse(got[0].text or "")
        if task.case is None:
            return False, False
        scored = await score_case(task.case, await target.sample(task.case, 4, Sampling(seed=0)))
        return True, AGENT0_BAND.contains(scored.p_hat)

    async def all_of_them() -> list[tuple[bool, bool]]:
        try:
            return list(await asyncio.gather(*(one(i) for i in range(100))))
        finally:
            await writer.aclose()

    results = run_sync(all_of_them())
    return sum(band for _, band in results), sum(valid for valid, _ in results)


def curriculum_part(seed: int, steps: int, root: Path) -> dict[str, Any]:
    from frontier_qa.train.config import load_train_config
    from frontier_qa.train.curriculum import train_curriculum
    from frontier_qa.train.tasks import read_tasks, summarize
    from frontier_qa.testing import ScriptedAdapter, open_scripted
    from tests.tiny_models import build_word_model

    model = build_word_model(root / f"words-{seed}", seed=seed)
    sets = [f"model.path={model}", "curriculum.style=plain", f"curriculum.prompt.user={PROMPT}",
            f"training.output_dir={root / f'curriculum-{seed}'}", f"training.max_steps={steps}",
            "training.prompts_per_step=4", "training.num_generations=8", "training.per_device_train_batch_size=32",
            "training.learning_rate=0.02", "training.beta=0.0", "training.max_completion_length=8",
            f"training.save_steps={steps}", "reward.k=4", "target.cache=false", f"training.seed={seed}"]
    started = time.perf_counter()
    result = train_curriculum(load_train_config(None, [parse_set(s) for s in sets]),
                              target=open_scripted(ScriptedAdapter(unsure_on_zebras)), progress=lambda line: None)
    seconds = time.perf_counter() - started
    before, before_valid = in_band_per_100(model, seed)
    after, after_valid = in_band_per_100(result.final_model, seed)
    curve = [round(s.frontier or 0.0, 2) for s in summarize(read_tasks(result.tasks_file))]
    return {"seed": seed, "steps": steps, "train_s": round(seconds, 1), "in_band_per_100_untrained": before,
            "in_band_per_100_trained": after, "valid_untrained": before_valid, "valid_trained": after_valid,
            "in_band_share_per_step": curve}


# --- executor ----------------------------------------------------------------------------------


def _pairs(seed: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    """Disjoint (imprint, pool, held-out) pairs of numbers 1-39."""
    pairs = [(a, b) for a in range(1, 40) for b in range(1, 40)]
    random.Random(seed).shuffle(pairs)
    return pairs[:120], pairs[120:200], pairs[200:260]


def grade(model: Path, pairs: list[tuple[int, int]], k: int, seed: int) -> tuple[float, list[tuple[float, str | None]]]:
    """Accuracy against the true sums over k samples per pair, and each pair's (p̂, majority)."""
    from frontier_qa.runtime import open_target, run_sync

    target = open_target(f"tools+hf:{model}", cache=False,
                         tool_options={"max_tool_turns": 1, "sandbox": {"timeout_s": 10}})

    async def all_of_them() -> list[Any]:
        try:
            return list(await asyncio.gather(*(
                target.sample(Case(id=f"{a}+{b}", prompt=f"What is {a} + {b}?"), k,
                              Sampling(temperature=1.0, top_p=1.0, max_tokens=40, seed=seed)) for a, b in pairs)))
        finally:
            await target.aclose()

    right, votes = 0, []
    for (a, b), samples in zip(pairs, run_sync(all_of_them())):
        answers = [extract_answer(s.text or "", "boxed") for s in samples]
        right += sum(x == str(a + b) for x in answers)
        counts = Counter(x for x in answers if x)
        majority, n = counts.most_common(1)[0] if counts else (None, 0)
        votes.append((n / k, majority))
    return right / (k * len(pairs)), votes


def executor_part(seed: int, steps: int, root: Path, compare_grpo: bool, learning_rate: float) -> dict[str, Any]:
    from frontier_qa.train.adpo import ADPOSchedule
    from frontier_qa.train.config import GenerationSection, ModelSection, SaveSection, TrainingSection
    from frontier_qa.train.executor import ExecutorRow, train_executor
    from frontier_qa.train.tool_rollout import ToolSettings
    from tests.tiny_models import build_tool_user_model

    imprint, pool, heldout = _pairs(seed)
    started = time.perf_counter()
    start = build_tool_user_model(root / f"adder-{seed}", seed=seed, pairs=tuple(imprint), repeat_pairs=(), steps=120)
    _, votes = grade(start, pool, 8, seed)
    rows = [ExecutorRow(task_id=f"{a}+{b}", question=f"What is {a} + {b}?", system=None, pseudo_label=m, p_hat=p)
            for (a, b), (p, m) in zip(pool, votes) if m is not None and 0.3 <= p <= 0.8]
    labels_right = sum(r.pseudo_label == str(sum(map(int, r.task_id.split("+")))) for r in rows)
    before, _ = grade(start, heldout, 8, seed + 1)
    out: dict[str, Any] = {"seed": seed, "pool": len(pool), "in_band": len(rows), "labels_right": labels_right,
                           "heldout_accuracy_start": round(before, 3)}
    if not rows:  # every pool task outside the band: nothing to train on (what co-evolution then does too)
        out["seconds"] = round(time.perf_counter() - started, 1)
        return out
    schedules = {"adpo": ADPOSchedule()}
    if compare_grpo:  # s(p̂) = 1 and ε_high = ε_low = 0.2 for every task: TRL's GRPO
        schedules["grpo"] = ADPOSchedule(scale_base=1.0, scale_gain=0.0, epsilon_high_gain=0.0)
    training = TrainingSection(max_steps=steps, prompts_per_step=4, num_generations=8, per_device_train_batch_size=32,
                               learning_rate=learning_rate, weight_decay=0.0, beta=0.0, temperature=1.0, top_p=1.0,
                               max_completion_length=64, save_steps=10**6, seed=seed, use_cpu=True)
    for name, schedule in schedules.items():
        result = train_executor(rows, model=ModelSection(path=str(start)), training=training, progress=lambda line: None,
                                generation=GenerationSection(backend="transformers"), save=SaveSection(),
                                tools=ToolSettings(max_tool_turns=1, sandbox={"timeout_s": 10}), adpo=schedule,
                                output_dir=root / f"{name}-{seed}")
        after, _ = grade(result.final_model, heldout, 8, seed + 1)
        out[f"heldout_accuracy_{name}"] = round(after, 3)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("both", "curriculum", "executor"), default="both")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--curriculum-steps", type=int, default=30)
    parser.add_argument("--executor-steps", type=int, default=30)
    parser.add_argument("--executor-lr", type=float, default=1e-4, help="ADPO learning rate")
    parser.add_argument("--compare-grpo", action="store_true", help="also train plain GRPO on the same pool")
    parser.add_argument("--out", default=None, help="folder for the runs (default: a temp dir)")
    args = parser.parse_args(argv)
    root = Path(args.out or tempfile.mkdtemp(prefix="frontier-qa-learning-"))
    results: dict[str, list[dict[str, Any]]] = {"curriculum": [], "executor": []}
    for seed in args.seeds:
        if args.part in ("both", "curriculum"):
            row = curriculum_part(seed, args.curriculum_steps, root)
            results["curriculum"].append(row)
            print(f"curriculum seed {seed}: in band per 100 proposals {row['in_band_per_100_untrained']} untrained -> "
                  f"{row['in_band_per_100_trained']} after {row['steps']} steps ({row['train_s']} s); "
                  f"in-band share per step {row['in_band_share_per_step']}", flush=True)
        if args.part in ("both", "executor"):
            row = executor_part(seed, args.executor_steps, root, args.compare_grpo, args.executor_lr)
            results["executor"].append(row)
            grpo = f", plain GRPO {row['heldout_accuracy_grpo']:.3f}" if "heldout_accuracy_grpo" in row else ""
            trained = f"-> ADPO {row['heldout_accuracy_adpo']:.3f}{grpo}" if "heldout_accuracy_adpo" in row else \
                "(no task in the band: not trained)"
            print(f"executor seed {seed}: {row['in_band']} of {row['pool']} pool tasks in the band "
                  f"({row['labels_right']} pseudo-labels right); held-out accuracy {row['heldout_accuracy_start']:.3f} "
                  f"{trained} ({row['seconds']} s)", flush=True)
    (root / "learning_evidence.json").write_text(json.dumps(results, indent=2))
    print(f"results: {root / 'learning_evidence.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
