"""The co-evolution run's report: ``report.json`` (every number) and ``report.md`` (the tables).

Rewritten after every iteration from ``state.json``'s records: held-out accuracy per
iteration, pool sizes and the p̂ histogram, Agent0's Table 5, and the training rewards.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frontier_qa.redaction import redact, redact_data

REPORT_JSON, REPORT_MD = "report.json", "report.md"


def pct(x: float | None) -> str:
    """A share in [0, 1] as a percentage with one decimal, ``-`` when unknown."""
    return "-" if x is None else f"{100 * x:.1f}%"


def fmt(x: float | None) -> str:
    """A number with two decimals, ``-`` when unknown."""
    return "-" if x is None else f"{x:.2f}"


def write_report(config: Any, state: Any) -> Path:
    """``report.json`` (every number) and ``report.md`` (the tables) for the iterations done so far."""
    run = config.run_path
    done = [(int(t), s) for t, s in sorted(state.iterations.items(), key=lambda kv: int(kv[0]))
            if "evaluate" in s.done]
    data = {"baseline": state.baseline, "base_executor": state.base_executor,
            "iterations": [{"iteration": t, **s.record} for t, s in done]}
    (run / REPORT_JSON).write_text(json.dumps(redact_data(json.loads(json.dumps(data, default=str))), indent=2),
                                   encoding="utf-8")
    lines = [f"# Co-evolution report: {run}", "",
             f"{len(done)} of {config.iterations} iteration(s) done. Band {list(config.pool.band)}, "
             f"k = {config.pool.k}, pool {config.pool.size} tasks per iteration.", "",
             "## Held-out accuracy", "", "| executor | accuracy | tool calls per answer |", "|---|---|---|"]
    base = state.baseline or {}
    lines.append(f"| starting model | {pct(base.get('rate'))} | {fmt(base.get('tool_calls_per_task'))} |")
    for t, s in done:
        h = s.record.get("heldout", {})
        lines.append(f"| after iteration {t} | {pct(h.get('rate'))} | {fmt(h.get('tool_calls_per_task'))} |")
    lines += ["", "## Pools", "",
              "| iteration | written | valid | distinct | in band | mean p̂ | tool calls / sample "
              "| p̂ histogram (0-1, 10 bins) |",
              "|---|---|---|---|---|---|---|---|"]
    for t, s in done:
        p = s.record.get("pool", {})
        lines.append(f"| {t} | {p.get('written')} | {p.get('valid')} | {p.get('distinct')} | {p.get('kept')} | "
                     f"{fmt(p.get('mean_p_hat'))} | {fmt(p.get('tool_calls_per_sample'))} | "
                     f"{' '.join(map(str, p.get('p_hat_histogram', [])))} |")
    lines += ["", "## Task difficulty and tool use (Agent0 Table 5)", "",
              "Pass rate of the iteration-1 executor on each iteration's tasks (graded against that iteration's "
              "pseudo-labels), and its tool calls per task.", "",
              "| tasks | pass rate | tool calls per task |", "|---|---|---|"]
    for t, s in done:
        r = s.record.get("table5")
        if r:
            lines.append(f"| D_iter{t} | {pct(r.get('rate'))} | {fmt(r.get('tool_calls_per_task'))} |")
    lines += ["", "## Training", "", "| iteration | curriculum steps | curriculum reward (last step) | "
              "executor | ADPO steps | executor reward | tool calls / rollout |", "|---|---|---|---|---|---|---|"]
    for t, s in done:
        c, e = s.record.get("curriculum", {}), s.record.get("executor", {})
        last = (c.get("per_step") or [{}])[-1]
        lines.append(f"| {t} | {c.get('steps')} | {fmt(last.get('reward'))} | "
                     f"{'trained' if e.get('trained') else e.get('reason', '-')} | {e.get('steps', '-')} | "
                     f"{fmt(e.get('reward_mean'))} | {fmt(e.get('tool_calls_per_rollout'))} |")
    lines += ["", "Models: " + ", ".join(f"iteration {t}: curriculum `{s.curriculum_model}`, executor "
                                           f"`{s.executor_model}`" for t, s in done), ""]
    (run / REPORT_MD).write_text(redact("\n".join(lines)), encoding="utf-8")
    return run / REPORT_MD


__all__ = ["REPORT_JSON", "REPORT_MD", "fmt", "pct", "write_report"]
