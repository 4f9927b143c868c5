"""How well each validity judge separates well-posed from ill-posed tasks, on tasks it was not tuned on.

The labelled set is ``benchmarks/data/validity/*.jsonl`` (the rule: ``RULE.md`` there): SmolLM2-135M's
own proposals, tasks written for the set, and the ones issue 27 quotes, split into a development
half (the rules were written against it) and a held-out half that no rule or prompt was tuned on.
This prints, per judge, on the held-out half by default:

* **catch rate**: ill-posed tasks the judge rejects (goal for the default judge: >= 80 %);
* **false rejection**: well-posed tasks it rejects (goal: <= 10 %);
* unverifiable tasks it flags (as unverifiable or ill-posed), and the catch rate by kind;
* with ``--topics``: the share of tasks whose topic, assigned from the text, is the reader's.

Judges: ``rules`` (free), ``rules+SPEC`` (rules, then a model judge on what they let through: any
target spec, e.g. ``rules+hf:smollm2`` for the curriculum model of the embedded default, or
``rules+openai:MODEL@URL`` for a stronger model on a server).

    python benchmarks/validity_bench.py                         # rules on the held-out half
    python benchmarks/validity_bench.py --judge rules --judge rules+hf:smollm2
    python benchmarks/validity_bench.py --split dev --show-misses

Intervals are Wilson 95 % intervals over the tasks counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_qa.probing._sequential import wilson_interval

DATA = Path(__file__).resolve().parent / "data" / "validity"


def load(split: str, data: Path = DATA) -> list[dict[str, Any]]:
    """The labelled tasks of a split (``dev``, ``heldout`` or ``all``), in file and line order."""
    rows: list[dict[str, Any]] = []
    for path in sorted(data.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if split == "all" or r["split"] == split]


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of ``k`` out of ``n``."""
    return wilson_interval(k, n, 0.95)


@dataclass
class Score:
    judge: str
    caught: int = 0
    ill: int = 0
    rejected: int = 0
    well: int = 0
    flagged: int = 0
    unverifiable: int = 0
    no_verdict: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        c_lo, c_hi = wilson(self.caught, self.ill)
        r_lo, r_hi = wilson(self.rejected, self.well)
        return (f"{self.judge:<28} catch {self.caught:>3}/{self.ill:<3} = {self.caught / max(self.ill, 1):6.1%} "
                f"[{c_lo:.0%}, {c_hi:.0%}]   false rejection {self.rejected:>2}/{self.well:<3} = "
                f"{self.rejected / max(self.well, 1):6.1%} [{r_lo:.0%}, {r_hi:.0%}]   unverifiable flagged "
                f"{self.flagged}/{self.unverifiable}   {self.seconds:.1f} s")


async def judge_all(spec: str, rows: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """``(verdict, reason)`` per row from the judge ``spec`` (``rules`` or ``rules+TARGET``)."""
    from frontier_qa.probing._validity import ModelJudge, RuleJudge

    rules = RuleJudge()
    model = None
    if spec != "rules":
        if not spec.startswith("rules+"):
            raise SystemExit(f"unknown judge {spec!r}: use rules or rules+TARGET_SPEC")
        from frontier_qa.runtime import open_target

        model = ModelJudge(open_target(spec.removeprefix("rules+")))
    out: list[tuple[str | None, str]] = []
    try:
        pending: list[int] = []
        for i, row in enumerate(rows):
            v = rules.verdict(row["prompt"])
            out.append((v.validity, v.reason))
            if v.passed and model is not None:
                pending.append(i)
        if model is not None:
            got = await asyncio.gather(*(model.verdict(rows[i]["prompt"]) for i in pending))
            for i, v in zip(pending, got, strict=True):
                if v.validity is not None:
                    out[i] = (v.validity, v.reason)
    finally:
        if model is not None:
            await model.model.aclose()
    return out


def score(judge: str, rows: list[dict[str, Any]], verdicts: list[tuple[str | None, str]],
          seconds: float) -> tuple[Score, Counter[str], Counter[str]]:
    s = Score(judge, seconds=seconds)
    by_kind, kinds = Counter[str](), Counter[str]()
    for row, (verdict, _) in zip(rows, verdicts, strict=True):
        if row["label"] == "ill-posed":
            s.ill += 1
            kinds[row["kind"]] += 1
            if verdict == "ill-posed":
                s.caught += 1
                by_kind[row["kind"]] += 1
        elif row["label"] == "well-posed":
            s.well += 1
            s.rejected += verdict == "ill-posed"
        else:
            s.unverifiable += 1
            s.flagged += verdict in ("ill-posed", "unverifiable")
        s.no_verdict += verdict is None
    return s, by_kind, kinds


def topic_agreement(rows: list[dict[str, Any]]) -> str:
    """Share of tasks whose topic assigned from the text is the reader's (the default topics)."""
    from frontier_qa.curricula._topics import TopicAssigner

    topics = ["money", "shopping", "time", "distance", "percentages", "area", "ages", "fractions"]
    assigner = TopicAssigner(topics)
    labelled = [r for r in rows if r["topic"] in topics or r["topic"] == "other"]
    agree = sum(assigner.assign(r["prompt"]) == r["topic"] for r in labelled)
    lo, hi = wilson(agree, len(labelled))
    share = agree / max(len(labelled), 1)
    return (f"topics from the text: {agree}/{len(labelled)} = {share:.1%} [{lo:.0%}, {hi:.0%}] agree with the reader "
            f"({assigner.method})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--judge", action="append", help="rules (default) or rules+TARGET_SPEC; repeatable")
    ap.add_argument("--split", default="heldout", choices=("heldout", "dev", "all"))
    ap.add_argument("--limit", type=int, default=None, help="the first N tasks only (a smoke test)")
    ap.add_argument("--show-misses", action="store_true", help="list the tasks each judge got wrong")
    ap.add_argument("--topics", action="store_true", help="also measure topics assigned from the text")
    args = ap.parse_args(argv)
    rows = load(args.split)[: args.limit]
    labels = Counter(r["label"] for r in rows)
    print(f"{args.split} half: {len(rows)} tasks ({', '.join(f'{n} {k}' for k, n in sorted(labels.items()))}); "
          f"sources {dict(Counter(r['source'] for r in rows))}")
    for spec in args.judge or ["rules"]:
        start = time.perf_counter()
        verdicts = asyncio.run(judge_all(spec, rows))
        s, by_kind, kinds = score(spec, rows, verdicts, time.perf_counter() - start)
        print(s.line())
        print(" " * 28 + " by kind: " + ", ".join(f"{k} {by_kind[k]}/{n}" for k, n in sorted(kinds.items())))
        if args.show_misses:
            for row, (verdict, reason) in zip(rows, verdicts, strict=True):
                wrong = (row["label"] == "ill-posed") != (verdict == "ill-posed")
                if wrong and row["label"] != "unverifiable":
                    shown = row["prompt"][:110]
                    print(f"    {row['label']:<10} judged {verdict or '-':<12} {shown!r}  ({reason[:80]})")
    if args.topics:
        print(topic_agreement(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
