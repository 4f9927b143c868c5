"""Benchmark: do the two trainers learn what Agent0 says they learn? Small models on CPU.

Not a test. Run from the repository root::

    python benchmarks/learning_evidence.py                 # both parts, seeds 0 1 2
    python benchmarks/learning_evidence.py --part curriculum --seeds 0
    python benchmarks/learning_evidence.py --part executor --seeds 0 1 --compare-grpo

**Curriculum** (GRPO on Agent0's curriculum reward). The target is scripted with a planted weak
topic: it is unsure (p̂ = 0.5, inside Agent0's band 0.3-0.8) on every task about zebras and sure
(p̂ = 1) on anything else. A tiny word-level model is trained against it for ``--curriculum-steps``
steps; then the untrained and the trained model each write 100 proposals from the training
prompt, the target answers each k = 4 times, and the benchmark counts proposals in the band
per 100.

**Executor** (ADPO with the tool rollouts of co-evolution). Agent0's executor (like TTRL) trains
on its own majority answers; that can only teach it something when the majority is usually right
and the errors share a mode across tasks, so that sharpening towards the majority on some tasks
moves the others too. A tiny model is planted with exactly that: imprinted on 400 of the 650
ordered letter pairs to answer "Which is first: q or k?" with ``\\boxed{q}`` three times in four and
with the second letter (the shared wrong mode) otherwise (``--plant 3 1``); on new pairs it is right
less often, and not equally often on every pair. A pool of 100 new pairs is answered k = 8 times
through the co-evolution pool's own scoring (``tools+hf:``); the tasks with 0.3 <= p̂ <= 0.8 are
labelled with the executor's own majority answer (no true answers are used; the benchmark only
counts how many labels are right) and the executor is trained by ADPO (``train_executor``: tool
rollouts, s(p̂), ε_high(p̂)). Then the starting and the trained executor answer 100 held-out pairs
(in neither the imprint nor the pool) k = 8 times each with the same task seeds, graded against
the first letter; the per-task change gets a 95% CI and an exact sign test across tasks.
``--compare-grpo`` also trains plain GRPO on the same rows, steps and seed (ADPO's s(p̂) = 1 and
ε_high = 0.2 for every task: TRL's GRPO loss). The model never calls the tool here (it has no
code to run); the rollouts still go through the sandboxed tool loop.

Prints a few lines per seed and part and writes them all to learning_evidence.json; times are whole-process on a shared
machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "VLLM_NO_USAGE_STATS": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():  # fmt: skip
    os.environ.setdefault(key, value)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests/tiny_models.py builds the small models

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
    from frontier_qa.curricula._prompted import derive_seed
    from frontier_qa.runtime import open_target, run_sync
    from frontier_qa.scoring._case_scoring import score_case
    from frontier_qa.scoring.bands import AGENT0_BAND
    from frontier_qa.testing import ScriptedAdapter, open_scripted
    from frontier_qa.train._prompts import TaskFormat

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
    from frontier_qa.testing import ScriptedAdapter, open_scripted
    from frontier_qa.train._curriculum import train_curriculum
    from frontier_qa.train._tasks import read_tasks, summarize
    from frontier_qa.train.config import load_train_config
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

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def letter_question(first: str, second: str) -> str:
    """A task of the executor's family; the right answer is ``first``, the planted wrong mode ``second``."""
    return f"Which is first: {first} or {second}?"


def boxed(letter: str) -> str:
    return f"The answer is \\boxed{{{letter}}}."


def letter_tasks(seed: int, imprint: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]:
    """Disjoint (imprint, pool, held-out) ordered letter pairs: ``imprint``, 100 and 100 of the 650."""
    pairs = [(x, y) for x in LETTERS for y in LETTERS if x != y]
    random.Random(seed).shuffle(pairs)
    return pairs[:imprint], pairs[imprint:imprint + 100], pairs[imprint + 100:imprint + 200]


def answer_tasks(model: Path, pairs: list[tuple[str, str]], k: int, seed: int, out: Path) -> list[Any]:
    """Each pair answered k times by ``model`` through the co-evolution pool's own scoring (tools on).

    Returns the :class:`~frontier_qa.train._pool.ScoredTask` of each pair, in order: p̂, the
    majority answer and the k answers, scored as the probe scores them.
    """
    from frontier_qa.runtime import open_target, run_sync
    from frontier_qa.scoring.bands import AGENT0_BAND
    from frontier_qa.train._pool import PoolTask, label_tasks

    target = open_target(f"tools+hf:{model}", cache=False,
                         tool_options={"max_tool_turns": 1, "sandbox": {"timeout_s": 10}})
    tasks = [PoolTask(index=i, task_id=f"{x}{y}", question=letter_question(x, y)) for i, (x, y) in enumerate(pairs)]
    band = (AGENT0_BAND.low, AGENT0_BAND.high)

    # one base seed: the adapters mix each task into it (Sampling.seed_for), so tasks draw independently
    sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=16, seed=seed)

    async def run() -> list[Any]:
        try:
            scored = await asyncio.gather(*(label_tasks(target, [t], k=k, sampling=sampling, out=out, band=band)
                                            for t in tasks))
        finally:
            await target.aclose()
        return [s for one in scored for s in one]

    return run_sync(run())


def right_shares(scored: list[Any], pairs: list[tuple[str, str]]) -> list[float]:
    """Per task, the share of its k answers that are the true answer (the first letter)."""
    return [sum(a == x for a in s.answers) / s.k for s, (x, _) in zip(scored, pairs, strict=True)]


def wrong_mode_share(scored: list[Any], pairs: list[tuple[str, str]]) -> float:
    """Share of all answers that are the planted wrong mode (the second letter)."""
    wrong = sum(sum(a == y for a in s.answers) for s, (_, y) in zip(scored, pairs, strict=True))
    return wrong / sum(s.k for s in scored)


def mean_p_hat(scored: list[Any]) -> float:
    """Mean self-consistency: how sharp the executor is, right or wrong (what majority training raises)."""
    return sum(s.p_hat for s in scored) / len(scored)


def paired_change(before: list[float], after: list[float]) -> dict[str, Any]:
    """Mean per-task change with a 95% normal CI, and an exact two-sided sign test across tasks."""
    diffs = [b - a for a, b in zip(before, after, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    up, down = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    m = up + down
    tail = sum(math.comb(m, i) for i in range(min(up, down) + 1)) / 2**m if m else 1.0
    half = 1.96 * sd / math.sqrt(n)
    return {"mean": round(mean, 3), "ci95": [round(mean - half, 3), round(mean + half, 3)], "tasks_up": up,
            "tasks_down": down, "sign_test_p": float(f"{min(1.0, 2 * tail):.2g}")}


def executor_part(seed: int, steps: int, root: Path, compare_grpo: bool, learning_rate: float,
                  imprint_steps: int, plant: tuple[int, int]) -> dict[str, Any]:
    from frontier_qa.train._executor import ExecutorRow, read_rollouts, train_executor
    from frontier_qa.train._pool import select
    from frontier_qa.train.adpo import ADPOSchedule
    from frontier_qa.train.config import GenerationSection, ModelSection, SaveSection, TrainingSection
    from frontier_qa.train.tool_rollout import ToolSettings
    from tests.tiny_models import build_answerer_model

    imprint, pool, heldout = letter_tasks(seed, 400)
    started = time.perf_counter()
    # on the imprinted pairs: the first letter (right) plant[0] times for plant[1] times the second
    # letter (the shared wrong mode)
    mix = [(letter_question(x, y), boxed(x), plant[0]) for x, y in imprint] + \
          [(letter_question(x, y), boxed(y), plant[1]) for x, y in imprint]
    start = build_answerer_model(root / f"letters-{seed}", mix, seed=seed, steps=imprint_steps, batch_size=64)
    run = root / f"executor-{seed}"
    run.mkdir(parents=True, exist_ok=True)
    scored = answer_tasks(start, pool, 8, seed, run / "pool.jsonl")
    kept = select(scored, None)  # the band filter (0.3 <= p̂ <= 0.8) and a majority answer
    rows = [ExecutorRow(task_id=s.task_id, question=s.question, system=None, pseudo_label=s.majority, p_hat=s.p_hat)
            for s in kept]
    truth = {f"{x}{y}": x for x, y in pool}
    labels_right = sum(r.pseudo_label == truth[r.task_id] for r in rows)
    before_scored = answer_tasks(start, heldout, 8, seed + 1, run / "heldout-start.jsonl")
    before = right_shares(before_scored, heldout)
    out: dict[str, Any] = {"seed": seed, "plant": list(plant), "steps": steps, "learning_rate": learning_rate,
                           "pool": len(pool), "in_band": len(rows), "labels_right": labels_right,
                           "pool_accuracy_start": round(sum(right_shares(scored, pool)) / len(pool), 3),
                           "heldout_tasks": len(heldout), "heldout_accuracy_start": round(sum(before) / len(before), 3),
                           "heldout_wrong_mode_start": round(wrong_mode_share(before_scored, heldout), 3),
                           "heldout_mean_p_hat_start": round(mean_p_hat(before_scored), 3)}
    if not rows:  # every pool task outside the band: nothing to train on (what co-evolution then does too)
        out["seconds"] = round(time.perf_counter() - started, 1)
        return out
    schedules = {"adpo": ADPOSchedule()}
    if compare_grpo:  # s(p̂) = 1 and ε_high = ε_low = 0.2 for every task: TRL's GRPO loss
        schedules["grpo"] = ADPOSchedule(scale_base=1.0, scale_gain=0.0, epsilon_high_gain=0.0)
    training = TrainingSection(max_steps=steps, prompts_per_step=4, num_generations=8, per_device_train_batch_size=32,
                               learning_rate=learning_rate, weight_decay=0.0, beta=0.0, temperature=1.0, top_p=1.0,
                               max_completion_length=16, save_steps=10**6, seed=seed, use_cpu=True)
    for name, schedule in schedules.items():
        result = train_executor(rows, model=ModelSection(path=str(start)), training=training,
                                progress=lambda line: None, generation=GenerationSection(backend="transformers"),
                                save=SaveSection(), tools=ToolSettings(max_tool_turns=1, sandbox={"timeout_s": 10}),
                                adpo=schedule, output_dir=run / name)
        rewards = [r.reward for r in read_rollouts(result.rollouts_file)]
        tenth = max(1, len(rewards) // 10)
        after_scored = answer_tasks(result.final_model, heldout, 8, seed + 1, run / f"heldout-{name}.jsonl")
        after = right_shares(after_scored, heldout)
        out[name] = {"heldout_accuracy": round(sum(after) / len(after), 3),
                     "heldout_wrong_mode": round(wrong_mode_share(after_scored, heldout), 3),
                     "heldout_mean_p_hat": round(mean_p_hat(after_scored), 3),
                     "change": paired_change(before, after),
                     "pseudo_label_reward_first_last_tenth": [round(sum(rewards[:tenth]) / tenth, 3),
                                                              round(sum(rewards[-tenth:]) / tenth, 3)]}
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def describe_executor(row: dict[str, Any]) -> str:
    """The lines one executor seed prints."""
    lines = [f"executor seed {row['seed']}: {row['in_band']} of {row['pool']} pool tasks in the band, "
             f"{row['labels_right']} pseudo-labels right; held-out accuracy {row['heldout_accuracy_start']:.3f} "
             f"(wrong mode {row['heldout_wrong_mode_start']:.3f}, mean p̂ {row['heldout_mean_p_hat_start']:.3f})"]
    for name in ("adpo", "grpo"):
        if name in row:
            r, c = row[name], row[name]["change"]
            first, last = r["pseudo_label_reward_first_last_tenth"]
            lines.append(f"  {name}: held-out accuracy {r['heldout_accuracy']:.3f} (wrong mode "
                         f"{r['heldout_wrong_mode']:.3f}, mean p̂ {r['heldout_mean_p_hat']:.3f}); per-task change "
                         f"{c['mean']:+.3f} [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}], {c['tasks_up']} tasks up, "
                         f"{c['tasks_down']} down, sign test p = {c['sign_test_p']}; pseudo-label reward "
                         f"{first:.2f} -> {last:.2f}")
    if "adpo" not in row:
        lines.append("  no pool task in the band: not trained")
    lines.append(f"  ({row['seconds']} s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("both", "curriculum", "executor"), default="both")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--curriculum-steps", type=int, default=30)
    parser.add_argument("--executor-steps", type=int, default=60)
    parser.add_argument("--executor-lr", type=float, default=2e-4, help="ADPO (and GRPO) learning rate")
    parser.add_argument("--imprint-steps", type=int, default=1500, help="SFT steps that plant the executor")
    parser.add_argument("--plant", type=int, nargs=2, default=[3, 1], metavar=("RIGHT", "WRONG"),
                        help="imprint weights of the right answer and of the wrong mode (default 3 1)")
    parser.add_argument("--compare-grpo", action="store_true", help="also train plain GRPO on the same pool")
    parser.add_argument("--out", default=None, help="folder for the runs (default: a temp dir)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # a shared machine; one thread also makes the imprint the same everywhere
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
            row = executor_part(seed, args.executor_steps, root, args.compare_grpo, args.executor_lr,
                                args.imprint_steps, tuple(args.plant))
            results["executor"].append(row)
            print(describe_executor(row), flush=True)
    (root / "learning_evidence.json").write_text(json.dumps(results, indent=2))
    print(f"results: {root / 'learning_evidence.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
