"""Benchmark: do a probe's labels hold up when every labelled case is sampled again, 30 times?

A probe labels each case from a few samples; this benchmark samples every labelled case
again at k = 30 with fresh seeds (sample indices no probe drew, so nothing comes from the
cache) and asks whether the new samples put the case on the same side of the band.

**Confirmed** means: the k = 30 re-sample's class equals the label's. The re-sample's class is
the most probable of below / in / above under the posterior of p* from those 30 samples alone,
with the uninformed prior (``frontier_qa.probing._posterior``: a Dirichlet-process and scatter
model, so thirty samples spread over many answers are not read as a leader). For an
``unresolved`` case the label is its leaning. The re-sample has sampling error of its own: a
case whose p* lies near a band edge is confirmed only about half the time however right the
label is. The scripted part measures that ceiling (**perfect labels**: every case labelled
with its true class, re-sampled the same way) next to the labels' own confirmation, and also
scores the labels against the exact truth; **contradicted** counts re-samples whose posterior
puts 90 % or more on another class, which sampling error alone rarely does.

Two parts:

* scripted (default): the mixes of ``benchmarks/mixes.py`` (multi-way scatter, ties,
  unparseable answers) probed in-process by the real engine (scripted target in the real
  runtime), with the default policy; also a table of P(in band) at the stop against the
  truth (``--no-scatter`` repeats it with the Dirichlet-process rest model alone);
* ``--smol``: the embedded default (``configs/default.yaml``: SmolLM2 agent), slow on CPU.
  It runs the README's main command into ``--work`` (or takes ``--store`` of a run already
  made), then re-samples each labelled case through the same agent. Resumable: each
  re-sampled case is appended to ``WORK/resample.jsonl`` at once and skipped on the next
  start, and the agent's model calls are cached under ``WORK``.

Run::

    python benchmarks/calibration_bench.py                     # scripted, about a minute
    python benchmarks/calibration_bench.py --smol --work smol-calibration   # ~30-60 min on 2 cores
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from mixes import BAND, MIXES, RIGHT, SimCase, draw, make_cases  # noqa: E402

from frontier_qa.probing import ProbeSettings, probe  # noqa: E402
from frontier_qa.probing._posterior import MajorityPrior, band_posterior  # noqa: E402
from frontier_qa.probing._sequential import DEFAULT_POLICY, policy, tally  # noqa: E402
from frontier_qa.probing._validation import Validator  # noqa: E402
from frontier_qa.store._case_store import CaseStore  # noqa: E402
from frontier_qa.testing import ScriptedAdapter, case, open_scripted, static_curriculum  # noqa: E402

K_CHECK = 30


@dataclass
class Tally:
    n: int = 0
    confirmed: int = 0
    contradicted: int = 0
    true: int = 0

    def add(self, confirmed: bool, contradicted: bool, true: bool | None) -> None:
        self.n += 1
        self.confirmed += confirmed
        self.contradicted += contradicted
        self.true += bool(true)


def label_side(record: dict) -> str:
    """Where a record's label puts the case: below / in / above the band (an unresolved one: its leaning)."""
    verdict = record["case"]["metadata"].get("band_posterior", {}).get("verdict")
    if verdict is None:  # no posterior (no sample answered): scattered, below
        return "below"
    return {"in_band": "in"}.get(verdict, verdict)


def label_name(record: dict) -> str:
    if record["case_class"] != "unresolved":
        return record["case_class"]
    return f"unresolved, leaning {label_side(record)}"


def score_case(tallies: dict[str, Tally], name: str, side: str, labels: list[str | None], truth: str | None) -> dict:
    """Hold a label to the k = 30 re-sample: the re-sample's most probable side confirms it, a
    posterior ≥ 0.9 on another side contradicts it.
    """
    counts, unparseable, _ = tally(labels)
    post = band_posterior(counts, unparseable, band=BAND)
    against = {"below": post.below, "in": post.inside, "above": post.above}
    p, check = max((v, s) for s, v in against.items())
    contradicted = max(v for s, v in against.items() if s != side) >= 0.9
    tallies[name].add(check == side, contradicted, None if truth is None else truth == side)
    return {"check": check, "p_check": round(p, 3), "counts": list(counts), "unparseable": unparseable}


MARKDOWN = False  # --markdown: tables as docs/results.md shows them


def print_table(tallies: dict[str, Tally], *, truth: bool) -> None:
    cols = ["label", "cases", "confirmed at k = 30", "contradicted"] + (["truly so (exact p*)"] if truth else [])
    rows = []
    for name in sorted(tallies, key=lambda n: (n.startswith("unresolved"), n)):
        t = tallies[name]
        rows.append([name, str(t.n), f"{t.confirmed / t.n:.1%}", f"{t.contradicted / t.n:.1%}"]
                    + ([f"{t.true / t.n:.1%}"] if truth else []))
    if MARKDOWN:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [30, 6, 20, 13, 20]

    def line(cells: list[str]) -> str:
        pairs = enumerate(zip(cells, widths[: len(cells)], strict=True))
        return " ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in pairs)

    print(line(cols))
    for row in rows:
        print(line(row))


# --- scripted agents -----------------------------------------------------------------------------


def _sim_case(sim: SimCase):  # noqa: ANN202 - a frontier_qa Case
    return case(sim.id, f"Scripted task {sim.id}: what is the answer?", topic=sim.topic, reference=RIGHT)


async def scripted_run(mix: str, n: int, seed: int, settings: ProbeSettings, store: Path) -> list[dict]:
    sims = {c.id: c for c in make_cases(mix, n, seed)}
    adapter = ScriptedAdapter(lambda c, i: draw(sims[c.id].answers, seed, c.id, i), id=f"sim:{mix}:{seed}")
    result = await probe(open_scripted(adapter), static_curriculum([_sim_case(s) for s in sims.values()]), settings,
                         store=CaseStore(store), validator=Validator(dedupe_threshold=None))
    rows = []
    for record in result.records:
        sim = sims[record.id]
        row = json.loads(record.model_dump_json())
        row["truth"], row["sim"] = sim.truth, sim
        rows.append(row)
    return rows


def scripted(args: argparse.Namespace) -> None:
    chosen = policy(args.policy)
    prior = MajorityPrior.jeffreys(scatter=()) if args.no_scatter else None
    settings = ProbeSettings(k=chosen.k, sequential=chosen.sequential, replay_first=False, verify_references=False,
                             max_candidates=None, prior=prior)
    tallies: dict[str, Tally] = defaultdict(Tally)
    perfect: dict[str, Tally] = defaultdict(Tally)
    stops: list[tuple[float, bool]] = []
    per_run: list[tuple[str, int, dict[str, Tally]]] = []
    calls = cases = 0
    work = Path(args.work)
    for mix in args.mixes:
        for seed in args.seeds:
            rows = asyncio.run(scripted_run(mix, args.cases, seed, settings, work / f"{mix}-{seed}"))
            run_tally: dict[str, Tally] = defaultdict(Tally)
            per_run.append((mix, seed, run_tally))
            for row in rows:
                sim: SimCase = row["sim"]
                fresh = [draw(sim.answers, f"recheck-{seed}", sim.id, i) for i in range(K_CHECK)]
                score_case(tallies, label_name(row), label_side(row), fresh, sim.truth)
                score_case(run_tally, label_name(row), label_side(row), fresh, sim.truth)
                score_case(perfect, f"truly {sim.truth}", sim.truth, fresh, sim.truth)
                cases += 1
                calls += len(row["samples"])
                if row["case_class"] == "frontier" or row["case_class"] == "unresolved":
                    stops.append((row["case"]["metadata"]["band_posterior"]["inside"], sim.truth == "in"))
    rest = "Dirichlet process only" if args.no_scatter else "Dirichlet process + scatter"
    print(f"scripted agents: mixes {', '.join(args.mixes)} x seeds {args.seeds}, {args.cases} cases each; "
          f"policy {args.policy} ({rest}); {cases} cases, {calls / cases:.2f} samples per case")
    print_table(tallies, truth=True)
    for name in ("frontier", "pass", "suspect"):
        shares = [(t[name].confirmed / t[name].n, t[name].true / t[name].n) for _, _, t in per_run if t[name].n]
        if shares:
            print(f"{name} labels over the {len(shares)} (mix, seed) runs: confirmed "
                  f"{min(c for c, _ in shares):.1%}–{max(c for c, _ in shares):.1%}, truly so "
                  f"{min(t for _, t in shares):.1%}–{max(t for _, t in shares):.1%}")
    print("\nperfect labels (each case labelled with its true class), re-sampled the same way:")
    print_table(perfect, truth=False)
    print("\nP(in band) when sampling stopped (frontier and unresolved cases) against the truth:")
    for lo, hi in ((0.0, 0.5), (0.5, 0.8), (0.8, 0.9), (0.9, 0.95), (0.95, 1.01)):
        sel = [t for p, t in stops if lo <= p < hi]
        if sel:
            mean = sum(p for p, _ in stops if lo <= p < hi) / len(sel)
            print(f"  P(in band) in [{lo:.2f}, {min(hi, 1.0):.2f}): {len(sel):5d} cases, mean {mean:.3f}, "
                  f"truly in band {sum(sel) / len(sel):.3f}")


# --- the embedded default ---------------------------------------------------------------------------


def smol(args: argparse.Namespace) -> None:
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FRONTIER_QA_AGENT_CACHE": str(work / "agent-cache")}
    store = Path(args.store).resolve() if args.store else work / "store"
    if not args.store and not (store / "store.json").exists():
        cmd = [sys.executable, "-m", "frontier_qa", "probe", "--config", "configs/default.yaml", "--store", str(store),
               "--out", str(work / "report"), "--progress", "plain", *args.probe_args]
        print("+", " ".join(cmd), flush=True)
        began = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO, env=env)
        print(f"probe finished in {time.perf_counter() - began:.0f} s with exit code {done.returncode}", flush=True)
    os.environ["FRONTIER_QA_AGENT_CACHE"] = env["FRONTIER_QA_AGENT_CACHE"]
    records = CaseStore(store).latest(run_id=CaseStore(store).run_ids()[-1])
    labelled = [json.loads(r.model_dump_json()) for r in records.values() if r.case_class.value != "invalid"]
    out = work / "resample.jsonl"
    done_ids = {json.loads(line)["id"] for line in out.read_text().splitlines()} if out.exists() else set()
    todo = [r for r in labelled if r["case"]["id"] not in done_ids
            and (not args.only or label_name(r).split(",")[0] in args.only)]
    print(f"{len(labelled)} labelled cases, {len(done_ids)} already re-sampled, {len(todo)} to go", flush=True)
    if todo:
        asyncio.run(_resample(todo, out))
    tallies: dict[str, Tally] = defaultdict(Tally)
    by_id = {r["case"]["id"]: r for r in labelled}
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    print(f"\nembedded default (configs/default.yaml), store {store}: "
          f"{len(lines)} labelled cases re-sampled at k = {K_CHECK}")
    for line in lines:
        record = by_id.get(line["id"])
        if record is None:
            continue
        labels = line["answers"]
        info = score_case(tallies, label_name(record), label_side(record), labels, None)
        print(f"  {line['id']}: {label_name(record)}, p̂ {record['p_hat']:.2f} at k = {len(record['samples'])} -> "
              f"k = {K_CHECK}: {info['check']} (P = {info['p_check']:.2f}), clusters {info['counts'][:6]}, "
              f"{info['unparseable']} unparseable")
    print_table(tallies, truth=False)


async def _resample(todo: list[dict], out: Path) -> None:
    from frontier_qa.config import build_settings, load_config
    from frontier_qa.probing._case_prober import answers_of
    from frontier_qa.runtime import Limits, open_target
    from frontier_qa.scoring.consistency import consistency_of
    from frontier_qa.store._records import CaseRecord

    config = load_config(REPO / "configs" / "default.yaml", env={})
    sampling = build_settings(config).run_sampling()
    assert config.target.spec is not None
    target = open_target(config.target.spec, limits=Limits(max_concurrency=32, timeout_s=None),
                         cache=Path(os.environ["FRONTIER_QA_AGENT_CACHE"]) / "resample")
    cwd = os.getcwd()
    os.chdir(REPO)  # the agent's path in the spec is relative to the repository
    try:
        for record in todo:
            c = CaseRecord.model_validate(record).case.to_case()
            began = time.perf_counter()
            got = await target.sample(c, K_CHECK, sampling, start=1000)  # indices no probe drew: fresh seeds
            consistency = consistency_of(got, c.answer_format)
            answers = [None if a is None else _cluster_of(a, consistency) for a in answers_of(c, got)]
            line = {"id": c.id, "answers": answers, "failed": sum(not t.ok for t in got),
                    "seconds": round(time.perf_counter() - began, 1)}
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
            print(f"  re-sampled {c.id} in {line['seconds']} s", flush=True)
    finally:
        os.chdir(cwd)
        await target.aclose()


def _cluster_of(answer: str, consistency) -> str:  # noqa: ANN001 - a Consistency
    """The representative of the cluster an answer fell in (equivalent answers merged)."""
    for cluster in consistency.clusters:
        if answer in (consistency.answers[i] for i in cluster.members):
            return cluster.representative
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smol", action="store_true", help="the embedded default (SmolLM2), not the scripted agents")
    parser.add_argument("--work", default=None,
                        help="working folder (default: a temporary one; --smol: smol-calibration)")
    parser.add_argument("--store", default=None, help="--smol: re-sample this store's latest run instead of probing")
    parser.add_argument("--policy", default=DEFAULT_POLICY)
    parser.add_argument("--only", nargs="+", default=None, metavar="LABEL",
                        help="--smol: re-sample only cases with these labels (frontier, suspect, unresolved, ...)")
    parser.add_argument("--mixes", nargs="+", default=list(MIXES), choices=list(MIXES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--no-scatter", action="store_true", help="scripted: the Dirichlet-process rest model only")
    parser.add_argument("--markdown", action="store_true", help="print the tables as docs/results.md shows them")
    parser.add_argument("probe_args", nargs="*", help="--smol: extra arguments for frontier-qa probe (after --)")
    args = parser.parse_args()
    global MARKDOWN
    MARKDOWN = args.markdown
    began = time.perf_counter()
    if args.smol:
        args.work = args.work or "smol-calibration"
        smol(args)
    else:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="frontier-qa-calib-") as tmp:
            args.work = args.work or tmp
            scripted(args)
    print(f"({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
