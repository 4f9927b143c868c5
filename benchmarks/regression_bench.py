"""Benchmark: can replay verdicts be trusted? False alarms on an unchanged agent, detection of
planted changes, and the target calls spent, through the real engine.

A scripted agent (:mod:`frontier_qa.testing`) answers each case of a 30-case suite from a fixed
answer distribution, drawing every sample at random (seeded per replay, so replays are
independent): 8 frontier coin flips (the right answer or one wrong one, 50/50), 4 three-way
scatters, 12 stable right (right 90 %, two wrong answers 5 % each) and 6 stable wrong (one wrong
answer 95 %). Half of each kind has a verified reference, half is judged on its baseline's
majority. The suite is probed once, its baselines accepted (``accept``: 40 samples each), then:

* ``unchanged``: the same agent is replayed 4·R times; a replay *fails* when the gate fails
  (any regression). Goal: at most 2 % of replays fail. Printed with the exact (Clopper-Pearson)
  95 % upper bound of the rate, since 0 of 200 is not 0.
* three planted changes, R replays each, each replay changing one eligible case picked at
  random: a stable-right case turned stably wrong, a frontier case turned stably wrong, a
  stable-right case whose correctness drops from 0.9 to 0.4. *Detected* when that case's
  verdict is ``regression``. Goal: at least 95 % each (printed with the 95 % lower bound).

Printed next to the default (sequential looks, baselines of 40): the same with the baselines
left at the first observation (no ``accept``: at most k = 10 samples), and the rule replays
used before (class change or p̂ outside the last interval, k = 10, the baseline overwritten by
every replay), with the target calls per replay and their ratio to fixed k = 10 (300).

**The floor** (printed first, exact binomial sums): the fewest new samples per case with which
*any* one-sided test at the suite's per-case level (alpha / 30) detects each planted change in
at least 95 % of suites. The most powerful test there is the Neyman-Pearson test for the known
before and after rates (randomised at the boundary), i.e. the baseline's rate taken as known, the
most generous assumption: a test that only has the accepted 40 samples can do no better. Every
stored case stays in every replay, so the suite's floor is the sum over cases of the most any
change that case can undergo needs (a stable-right case: 0.9 → 0 and 0.9 → 0.4; a frontier case:
0.5 → 0); a case no planted change can hit counts 1 sample, the least a replay that keeps the
case can draw (any more would only flatter the ratio). Also printed: the same with the Fisher
test on the accepted 40 samples (fixed n), and Wald's bound on the expected samples of any
*sequential* test on an unchanged case (the floor a sequential replay could approach).

Run: ``python benchmarks/regression_bench.py [--replays R] [--seed S]`` (R = 50: about 3 minutes
on 2 cores; ``--skip-old`` leaves out the old rule).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from frontier_qa.probing._baseline_accept import accept
from frontier_qa.probing._curriculum_seam import Proposal
from frontier_qa.probing._engine import ProbeSettings, probe, replay
from frontier_qa.probing._validation import Validator
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._comparison import RegressionPolicy, RegressionVerdict
from frontier_qa.store._records import CaseClass, CaseRecord
from frontier_qa.target import Case
from frontier_qa.testing import ScriptedAdapter, case, open_scripted, static_curriculum

FIXED_K = 10
RIGHT = "7"
NO_DEDUPE = Validator(dedupe_threshold=None)  # the suite's prompts share a template on purpose


@dataclass
class Agent:
    """Answer distributions per case id; every sample a fresh random draw (seeded per epoch)."""

    table: dict[str, dict[str, float]]
    seed: int = 0
    epoch: int = 0

    def __call__(self, c: Case, index: int) -> str:
        rng = random.Random(f"{self.seed}:{self.epoch}:{c.id}:{index}")
        dist = self.table[c.id]
        u, acc = rng.random(), 0.0
        for answer, weight in dist.items():
            acc += weight
            if u < acc:
                return answer
        return next(reversed(dist))


def suite() -> tuple[list[Proposal], dict[str, dict[str, float]], dict[str, list[str]]]:
    """The 30 cases, their answer distributions, and the case ids of each kind."""
    kinds = {"frontier": (8, {RIGHT: 0.5, "11": 0.5}), "scatter": (4, {RIGHT: 1 / 3, "11": 1 / 3, "13": 1 / 3}),
             "right": (12, {RIGHT: 0.9, "11": 0.05, "13": 0.05}), "wrong": (6, {"11": 0.95, RIGHT: 0.05})}
    proposals, table, ids = [], {}, {}
    for kind, (n, dist) in kinds.items():
        for i in range(n):
            cid = f"{kind}-{i}"
            verified = i % 2 == 0
            c = case(cid, f"Task {cid}: how many days are there in {i + 2} weeks minus {2 * (i + 1)} days?",
                     topic=kind, reference=RIGHT if verified else None, reference_verified=verified)
            proposals.append(Proposal(c, source="benchmark"))
            table[cid] = dict(dist)
            ids.setdefault(kind, []).append(cid)
    return proposals, table, ids


PLANTS = {
    "right → stably wrong": ("right", {"29": 1.0}),
    "frontier → stably wrong": ("frontier", {"29": 1.0}),
    "correctness 0.9 → 0.4": ("right", {RIGHT: 0.4, "11": 0.3, "13": 0.3}),
}


RATES = {"frontier": 0.5, "scatter": 1 / 3, "right": 0.9, "wrong": 0.95}
"""The anchor's share of each kind (wrong: its majority; the verified half's right share is 0.05)."""
CHANGES = {"right": ((0.9, 0.0), (0.9, 0.4)), "frontier": ((0.5, 0.0),)}
"""The planted changes each kind can undergo, as (before, after) anchor shares."""
POWER = 0.95


def _binom(n: int, k: int, p: float) -> float:
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


def np_power(n: int, before: float, after: float, level: float) -> float:
    """Power of the most powerful level-``level`` test of ``before`` against a lower ``after`` with
    n samples: reject for few anchor answers, randomised at the boundary (Neyman-Pearson).
    """
    size = power = 0.0
    for k in range(n + 1):
        p0, p1 = _binom(n, k, before), _binom(n, k, after)
        if size + p0 > level:
            return power + (p1 * (level - size) / p0 if p0 else p1)
        size, power = size + p0, power + p1
    return power


def fisher_power(n: int, before: float, after: float, level: float, k: int = 40) -> float:
    """Power of the one-sided Fisher test at ``level`` with n new samples against a baseline of k."""
    from frontier_qa.scoring._two_sample import fisher_less

    return sum(_binom(k, sb, before) * _binom(n, s, after) for sb in range(k + 1) for s in range(n + 1)
               if fisher_less(sb, k, s, n) <= level)


def fewest(power: Callable[[int, float, float, float], float], before: float, after: float, level: float) -> int:
    """The fewest new samples with which ``power`` reaches :data:`POWER`."""
    return next(n for n in range(1, 1000) if power(n, before, after, level) >= POWER)


def wald(before: float, after: float, miss: float = 1 - POWER) -> float:
    """Wald's bound on the expected samples any sequential test needs on an unchanged case (rate
    ``before``) to miss a change to ``after`` at most ``miss`` of the time (false alarms ~ 0).
    """
    kl = before * math.log(before / after) + (1 - before) * math.log((1 - before) / (1 - after)) if after else math.inf
    return math.log(1 / miss) / kl


def floor(counts: dict[str, int], level: float) -> dict[str, float]:
    """The suite's floor, summed over cases: NP (known rates), Fisher on 40, Wald (sequential)."""
    out = {"np": 0.0, "fisher": 0.0, "wald": 0.0}
    for kind, n in counts.items():
        changes = CHANGES.get(kind, ())
        out["np"] += n * max((fewest(np_power, b, a, level) for b, a in changes), default=1)
        out["fisher"] += n * max((fewest(fisher_power, b, a, level) for b, a in changes), default=1)
        out["wald"] += n * max((1.0, *(wald(b, a) for b, a in changes)))
    return out


def show_floor(counts: dict[str, int], level: float) -> dict[str, float]:
    out = floor(counts, level)
    print(f"floor at the per-case level alpha/N = {level:.2g}, power >= {POWER:.0%} per planted change:")
    for kind in counts:
        for b, a in CHANGES.get(kind, ()):
            print(f"  {kind} {b:.1f} -> {a:.1f}: {fewest(np_power, b, a, level)} samples (known rates, NP), "
                  f"{fewest(fisher_power, b, a, level)} (Fisher on the 40-sample baseline), "
                  f"{wald(b, a):.1f} expected (Wald, sequential)")
    print(f"  suite floor: {out['np']:.0f} calls (known rates; 1 per case no planted change hits), "
          f"{out['fisher']:.0f} (Fisher, fixed n), {out['wald']:.0f} (Wald's sequential bound)")
    return out


def old_regression(old: CaseRecord, new: CaseRecord) -> bool:
    """The rule replays used in frontier-qa 0.1: a worse class, or p̂ outside the old interval
    in the bad direction (verbatim from frontier-qa 0.1's store.comparison).
    """
    severity = {CaseClass.PASS: 0, CaseClass.FRONTIER: 1, CaseClass.SUSPECT: 2, CaseClass.FAILURE: 3}
    if old.case_class not in severity or new.case_class not in severity:
        return False
    if severity[new.case_class] != severity[old.case_class]:
        return severity[new.case_class] > severity[old.case_class]
    if old.interval is None or new.p_hat is None or old.interval.contains(new.p_hat):
        return False
    wrong = new.majority_correct is False or (
        new.majority_correct is None and new.case_class in (CaseClass.FAILURE, CaseClass.SUSPECT))
    return (new.p_hat > old.interval.high) == wrong


@dataclass
class Tally:
    replays: int = 0
    failed: int = 0
    detected: int = 0
    calls: int = 0
    inconclusive: int = 0


async def setup(root: Path, agent: Agent, proposals: list[Proposal], *, accept_baselines: bool) -> tuple[Path, int]:
    """Probe the suite once (and accept its baselines); the store to copy for each replay, and the calls."""
    store = CaseStore(root / "seed")
    target = open_scripted(ScriptedAdapter(agent, id="bench-agent", version="1"))
    first = await probe(target, static_curriculum(proposals), ProbeSettings(replay_first=False, seed=0), store=store,
                        run_id="probe", validator=NO_DEDUPE)
    assert len(first.records) == 30 and all(r.case_class is not CaseClass.INVALID for r in first.records)
    calls = first.run.totals.cost.calls
    if accept_baselines:
        done = await accept(store, None, ProbeSettings(), target=target, run_id="accept")
        calls += sum(a.sampled for a in done)
    return store.root, calls


async def replay_once(seed_store: Path, work: Path, agent: Agent,
                      r: int) -> tuple[bool, dict[str, RegressionVerdict], int]:
    """One replay of the suite against the agent as it is; (gate failed, verdict by case, calls)."""
    dest = work / f"r{r}"
    shutil.copytree(seed_store, dest)
    target = open_scripted(ScriptedAdapter(agent, id="bench-agent", version="1"))
    result = await replay(target, CaseStore(dest), ProbeSettings(seed=r), run_id=f"replay-{r}")
    shutil.rmtree(dest)
    verdicts = {c.case_id: c.verdict for c in result.comparisons}
    return RegressionVerdict.REGRESSION in verdicts.values(), verdicts, result.run.totals.cost.calls


def clopper_pearson(hits: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact two-sided interval of a binomial rate (each side at (1 - confidence) / 2)."""
    from scipy.stats import beta

    tail = (1 - confidence) / 2
    low = 0.0 if hits == 0 else float(beta.ppf(tail, hits, n - hits + 1))
    high = 1.0 if hits == n else float(beta.ppf(1 - tail, hits + 1, n - hits))
    return low, high


async def new_rule(work: Path, replays: int, seed: int, *, accept_baselines: bool) -> tuple[dict[str, Tally], int]:
    proposals, table, ids = suite()
    agent = Agent({k: dict(v) for k, v in table.items()}, seed=seed)
    seed_store, setup_calls = await setup(work / ("a" if accept_baselines else "f"), agent, proposals,
                                          accept_baselines=accept_baselines)
    rng = random.Random(seed)
    out: dict[str, Tally] = {}
    for name in ("unchanged", *PLANTS):
        t = out[name] = Tally()
        for r in range(4 * replays if name == "unchanged" else replays):
            agent.epoch = 1000 * (len(out)) + r + 1
            planted = None
            if name != "unchanged":
                kind, dist = PLANTS[name]
                planted = rng.choice(ids[kind])
                agent.table[planted] = dict(dist)
            failed, verdicts, calls = await replay_once(seed_store, work, agent, r)
            if planted is not None:
                agent.table[planted] = dict(table[planted])
                t.detected += verdicts.get(planted) is RegressionVerdict.REGRESSION
            t.replays += 1
            t.failed += failed
            t.calls += calls
            t.inconclusive += sum(v is RegressionVerdict.INCONCLUSIVE for v in verdicts.values())
    return out, setup_calls


async def old_rule(work: Path, replays: int, seed: int) -> dict[str, Tally]:
    """Fixed k = 10 probes, each compared with the one before (the old replay overwrote its baseline)."""
    proposals, table, ids = suite()
    agent = Agent({k: dict(v) for k, v in table.items()}, seed=seed + 1)
    rng = random.Random(seed)
    settings = ProbeSettings(sequential=None, k=FIXED_K, replay_first=False)

    async def run_once(r: int) -> dict[str, CaseRecord]:
        store = CaseStore(work / f"old{r}")
        target = open_scripted(ScriptedAdapter(agent, id="bench-agent", version="1"))
        result = await probe(target, static_curriculum(proposals), settings, store=store, run_id="old",
                             validator=NO_DEDUPE)
        shutil.rmtree(store.root)
        return {rec.id: rec for rec in result.records}

    out: dict[str, Tally] = {}
    for name in ("unchanged", *PLANTS):
        t = out[name] = Tally()
        agent.epoch = 5000 + 1000 * len(out)
        before = await run_once(0)
        for r in range(replays):
            agent.epoch += 1
            planted = None
            if name != "unchanged":
                kind, dist = PLANTS[name]
                planted = rng.choice(ids[kind])
                agent.table[planted] = dict(dist)
            now = await run_once(r + 1)
            flagged = {cid for cid in now if old_regression(before[cid], now[cid])}
            if planted is not None:
                agent.table[planted] = dict(table[planted])
                t.detected += planted in flagged
            t.replays += 1
            t.failed += bool(flagged)
            t.calls += sum(rec.cost.calls for rec in now.values())
            before = now  # the old replay overwrote the stored record
    return out


def show(title: str, tallies: dict[str, Tally], setup_calls: int | None = None, *, accepted: bool = False,
         floors: dict[str, float] | None = None) -> None:
    fixed = 30 * FIXED_K

    def ratio(per: float) -> str:
        if floors is None:
            return ""
        return (f"; {per / floors['np']:.2f} x the floor (goal <= 1.2), {per / floors['wald']:.1f} x Wald's "
                f"sequential bound")

    print(f"\n{title}")
    u = tallies["unchanged"]
    per = u.calls / u.replays
    high = clopper_pearson(u.failed, u.replays)[1]
    print(f"  unchanged agent: {u.failed}/{u.replays} replays fail ({u.failed / u.replays:.1%}, 95% upper bound "
          f"{high:.1%}; goal <= 2%); {per:.0f} target calls per replay = {per / fixed:.2f} x fixed k = {FIXED_K} "
          f"({fixed}){ratio(per)}; {u.inconclusive / u.replays:.1f} inconclusive cases per replay")
    for name in PLANTS:
        t = tallies[name]
        per = t.calls / t.replays
        low = clopper_pearson(t.detected, t.replays)[0]
        print(f"  {name:<24s} detected {t.detected}/{t.replays} ({t.detected / t.replays:.0%}, 95% lower bound "
              f"{low:.0%}; goal >= 95%); suite fails {t.failed / t.replays:.0%}; {per:.0f} calls per replay "
              f"({per / fixed:.2f} x fixed k{ratio(per)})")
    if setup_calls is not None:
        what = "probing the suite and accepting its baselines" if accepted else "probing the suite"
        print(f"  one-time: {what} cost {setup_calls} target calls")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replays", type=int, default=50, help="replays per scenario (default 50)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-old", action="store_true", help="leave out the old rule's runs")
    args = parser.parse_args()
    started = time.perf_counter()
    _, _, ids = suite()
    policy = RegressionPolicy().for_cases(sum(len(v) for v in ids.values()))
    floors = show_floor({kind: len(v) for kind, v in ids.items()}, policy.alpha / policy.n_cases)
    with tempfile.TemporaryDirectory(prefix="regression-bench-") as tmp:
        work = Path(tmp)
        new, setup_calls = asyncio.run(new_rule(work, args.replays, args.seed, accept_baselines=True))
        show(f"default: Fisher looks {policy.looks}, 'same' checked every {policy.same_every} samples from "
             f"{policy.same_from}, alpha {policy.alpha} over the suite, baselines of 40 (accept)",
             new, setup_calls, accepted=True, floors=floors)
        weak, weak_setup = asyncio.run(new_rule(work, args.replays, args.seed, accept_baselines=False))
        show("the same test, baselines left at the first observation (no accept: k <= 10)", weak, weak_setup)
        if not args.skip_old:
            show("before: class change or p̂ outside the last interval, fixed k = 10, baseline overwritten by each "
                 "replay", asyncio.run(old_rule(work, args.replays, args.seed)))
    print(f"\n{4 * args.replays} replays of the unchanged agent and {args.replays} per planted change, "
          f"seed {args.seed}, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
