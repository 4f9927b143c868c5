"""``frontier-qa cases list|show|diff``: look at the case store without opening its JSON.

``list`` prints the latest record of each stored case (filters ``--class``, ``--topic``,
``--run``, ``--target``), failures first, then suspects, frontier, unresolved, pass and invalid
cases; ``show CASE`` one case's prompt, reference, answers with their votes (failed samples by
their error: ``3 × call failed: RuntimeError: flaky backend (at agent.py:3 in run)``) and, for an
agent, the steps that led to each (``steps: model → search(query="paris") → model → answer
"Paris"``) and what that sample missed of the case's expectations (``misses: never called
convert``) — one such line per path when the samples took several (``4 × steps: capital_of(…) →
…`` and ``4 × steps: lookup_city(…) → …`` under ``8 × Paris``), the path finding with the paths
the samples took and pass^k (``path: scatter · p̂ 0.62 · capital_of 5/8 · lookup_city 3/8``),
every observation (runs, agent versions, replay verdicts) and its baselines; ``diff [RUN_A RUN_B]`` two runs (the
last two by default): class changes, p̂ changes beyond the noise (the replay's own test, run A
as the baseline), new and vanished cases. A case is named by its id, by ``topic/id`` as pytest
and the reports print it, or by a unique prefix of either; a run by its id or a unique prefix.

``--json`` prints one JSON object with a stable shape (``"kind"`` and ``"version": 1``; fields
are only ever added). A case row (``list``'s ``cases``, ``diff``'s ``new`` and ``vanished``)::

    {"id", "topic", "case_class", "p_hat", "interval": {"low", "high"} | null, "k", "prompt",
     "reference", "reference_verified", "target_id", "target_version", "run_id", "finished_at"}

* ``cases.list``: ``store``, ``filters`` {``classes``, ``topics``, ``run``, ``target``},
  ``cases`` [case rows], ``counts`` {class: cases}, ``total``;
* ``cases.show``: ``store``, ``case`` (the case as recorded: prompt, system, reference, tools,
  metadata...), ``latest`` (a case row plus ``reason``), ``answers`` [{``answer``, ``votes``, and for an
  agent ``steps`` (its steps to that answer on one line, from one sample that gave it) and, where the
  expectations were checked, that sample's ``misses`` [str]; when the case's samples took more
  than one path, ``paths`` (the answer's samples split by path) [{``path``, ``votes`` (the
  answer's samples that took it), ``steps`` and ``misses`` of the first of them}]}],
  ``errors`` [{``error``, ``count``}] (the failed samples' errors, most frequent first), ``path`` (the
  path record: ``granularity``, ``p_hat``, ``majority``, ``clusters`` [{``path``, ``count``}],
  ``decision``, ``below``, ``inside``, ``above``, ``finding``, ``reason``; or null), ``pass_k``
  ({``k``, ``n``, ``passed``, ``value``, ``misses``} or null), ``samples`` [{``index``, ``path``,
  ``misses``}] (the samples whose path or expectations were recorded), ``history``
  [case rows plus ``verdict`` (the replay's verdict record or null)], ``baseline`` (the baseline
  record or null), ``accepted`` [baseline records, oldest first];
* ``cases.diff``: ``store``, ``run_a`` and ``run_b`` {``run_id``, ``started_at``, ``target_id``,
  ``target_version``, ``cases``}, ``changed`` [{``id``, ``topic``, ``class_a``, ``class_b``,
  ``p_hat_a``, ``p_hat_b``, ``k_a``, ``k_b``, ``verdict`` (null where the test cannot judge),
  ``reason``, ``p_value``, ``level``}], ``new`` and ``vanished`` [case rows], ``unchanged``,
  ``verdicts`` {verdict: cases}.

Exit codes: 0; 2 for an unknown case, run or class (the message names what exists and how to
list it) or a missing store; ``diff --exit-code`` exits 1 when something changed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from frontier_qa.cli._options import CONFIG, STORE
from frontier_qa.cli._probe import overrides
from frontier_qa.cli.app import command_group
from frontier_qa.config import load_config, regression_policy
from frontier_qa.errors import ConfigError
from frontier_qa.exit_codes import EXIT_FINDINGS, EXIT_OK
from frontier_qa.reports._explain import answer_label, side
from frontier_qa.reports._path_findings import case_misses, clusters_text, finding_word, pass_k_text, sample_misses
from frontier_qa.reports._step_line import PathLine, cluster_samples, cluster_steps, path_line_text, path_lines
from frontier_qa.reports._summary import answer_distribution, sample_errors
from frontier_qa.reports._text import fmt_p, shorten
from frontier_qa.store import _views as views
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CLASS_ORDER, CaseClass, CaseRecord, Interval, RunRecord, SampleRecord

JSON_VERSION = 1
_JSON = typer.Option(False, "--json", help='One JSON object: "kind", "version": 1, fields only ever added '
                                           "(shapes in frontier_qa/cli/_cases.py).")

def _store(config: Path | None, store: Path | None) -> tuple[CaseStore, Any]:
    cfg = load_config(config, overrides({"store": store}, []))
    found = CaseStore(cfg.store)
    views.require_store(found)
    return found, cfg


def _emit(data: dict[str, Any]) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _interval(interval: Interval | None) -> dict[str, float] | None:
    return None if interval is None else {"low": interval.low, "high": interval.high}


def case_row(r: CaseRecord) -> dict[str, Any]:
    """A case record as the JSON row of ``list``, ``show`` and ``diff`` (module docstring)."""
    return {"id": r.id, "topic": r.topic, "case_class": r.case_class.value, "p_hat": r.p_hat,
            "interval": _interval(r.interval), "k": r.k, "prompt": r.case.prompt, "reference": r.case.reference,
            "reference_verified": r.case.reference_verified, "target_id": r.target_id,
            "target_version": r.target_version, "run_id": r.run_id, "finished_at": r.finished_at.isoformat()}


def _p_cell(r: CaseRecord) -> str:
    if r.p_hat is None:
        return "—"
    return fmt_p(r.p_hat) + ("" if r.interval is None else f" [{r.interval.low:.2f}, {r.interval.high:.2f}]")


def _one_line(text: str, chars: int) -> str:
    return shorten(" ".join(text.split()), max(chars, 8))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], last_flexible: bool = True) -> list[str]:
    """Left-aligned columns; the last one (a prompt) is cut to the terminal's width."""
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]
    fixed = sum(widths[:-1]) + 2 * (len(headers) - 1)
    room = max(shutil.get_terminal_size((120, 24)).columns - fixed, 24)

    def line(cells: Sequence[str]) -> str:
        last = _one_line(cells[-1], room) if last_flexible else cells[-1]
        return "  ".join([*(c.ljust(w) for c, w in zip(cells[:-1], widths[:-1], strict=True)), last]).rstrip()

    return [line(headers), *(line(row) for row in rows)]


def _counts_text(counts: dict[CaseClass, int]) -> str:
    return ", ".join(f"{c.value} {n}" for c, n in counts.items()) or "none"


def _classes(values: Sequence[str]) -> list[CaseClass]:
    known = [c.value for c in CLASS_ORDER]
    bad = [v for v in values if v not in known]
    if bad:
        raise ConfigError(f"unknown case class {bad[0]!r}", hint=f"use one of: {', '.join(known)}")
    return [CaseClass(v) for v in values]


# --- list ------------------------------------------------------------------------------------------


def list_command(
    classes: list[str] = typer.Option([], "--class", help="Only cases of this class (repeatable)."),
    topics: list[str] = typer.Option([], "--topic", help="Only cases of this topic (repeatable)."),
    run: str | None = typer.Option(None, "--run", help="Only this run's cases (an id or a unique prefix)."),
    target: str | None = typer.Option(None, "--target", help="Only cases recorded for this target id."),
    limit: int | None = typer.Option(None, "--limit", help="Show at most this many rows (counts cover all)."),
    as_json: bool = _JSON,
    config: Path | None = CONFIG,
    store: Path | None = STORE,
) -> None:
    """List stored cases (latest observation of each), failures first, with counts at the end."""
    source, _ = _store(config, store)
    wanted = _classes(classes)
    run_id = None if run is None else views.find_run(source, run)
    rows = views.list_cases(source, classes=wanted, topics=topics, run_id=run_id, target=target)
    counts = views.count_classes(rows)
    if as_json:
        _emit({"kind": "cases.list", "version": JSON_VERSION, "store": str(source.root),
               "filters": {"classes": [c.value for c in wanted], "topics": list(topics), "run": run_id,
                           "target": target},
               "cases": [case_row(r) for r in rows], "counts": {c.value: n for c, n in counts.items()},
               "total": len(rows)})
        raise typer.Exit(EXIT_OK)
    if not rows:
        typer.echo(_nothing_listed(source))
        raise typer.Exit(EXIT_OK)
    shown = rows if limit is None else rows[:max(limit, 0)]
    table = [[r.id, r.case_class.value, _p_cell(r), str(r.k), r.topic, r.case.prompt] for r in shown]
    for text in _table(["ID", "CLASS", "P̂ [INTERVAL]", "K", "TOPIC", "PROMPT"], table):
        typer.echo(text)
    more = f" (showing {len(shown)})" if len(shown) < len(rows) else ""
    runs = len(source.run_ids())
    typer.echo(f"{len(rows)} case(s){more}: {_counts_text(counts)} · latest observation each · "
               f"store {source.root} ({runs} run(s))")
    raise typer.Exit(EXIT_OK)


def _nothing_listed(source: CaseStore) -> str:
    """Why a list is empty: an empty store, or filters that match nothing (with what exists)."""
    everything = views.list_cases(source)
    if not everything:
        return (f"the store {source.root} holds no cases yet: probe first "
                "(frontier-qa probe --target SPEC --curriculum cases.jsonl)")
    targets = sorted({r.target_id for r in everything})
    topics = sorted({r.topic for r in everything})
    return (f"no case matches these filters ({len(everything)} case(s) in {source.root}; "
            f"targets: {', '.join(targets)}; topics: {', '.join(topics)})")


# --- show ------------------------------------------------------------------------------------------


def _agent(r: CaseRecord | Any) -> str:
    return shorten(r.target_version or r.target_id or "—", 28)


def show_command(
    case: str = typer.Argument(..., help="Case id, topic/id (as pytest and report.md name it) or a unique prefix."),
    as_json: bool = _JSON,
    config: Path | None = CONFIG,
    store: Path | None = STORE,
) -> None:
    """Show one case: prompt, reference, answers with votes, every observation and its baselines."""
    source, _ = _store(config, store)
    view = views.case_view(source, views.find_case(source, case))
    last = view.latest
    steps, shown, split = cluster_steps(last), cluster_samples(last), path_lines(last)
    if as_json:
        _emit({"kind": "cases.show", "version": JSON_VERSION, "store": str(source.root),
               "case": last.model_dump(mode="json", include={"case"})["case"],
               "latest": {**case_row(last), "reason": last.reason},
               "answers": [{"answer": a, "votes": n, **({"steps": steps[a]} if a in steps else {}),
                            **_misses_of(shown.get(a)), **_paths_of(split.get(a))}
                           for a, n in answer_distribution(last)],
               "errors": [{"error": e, "count": n} for e, n in sample_errors(last)],
               "path": None if last.path is None else last.path.model_dump(mode="json"),
               "pass_k": None if last.pass_k is None else last.pass_k.model_dump(mode="json"),
               "samples": [{"index": s.sample_index, "path": s.path, "misses": None if s.misses is None
                            else list(s.misses)} for s in last.samples if s.path is not None or s.misses is not None],
               "history": [{**case_row(r), "verdict": None if r.verdict is None else r.verdict.model_dump(mode="json")}
                           for r in view.history],
               "baseline": None if view.baseline is None else view.baseline.model_dump(mode="json"),
               "accepted": [b.model_dump(mode="json") for b in view.accepted]})
        raise typer.Exit(EXIT_OK)
    for text in _show_lines(view):
        typer.echo(text)
    raise typer.Exit(EXIT_OK)


def _misses_of(sample: SampleRecord | None) -> dict[str, list[str]]:
    """``{"misses": [...]}`` of the sample an answer's line shows, when its expectations were checked."""
    return {} if sample is None or sample.misses is None else {"misses": list(sample.misses)}


def _paths_of(lines: Sequence[PathLine] | None) -> dict[str, list[dict[str, Any]]]:
    """``{"paths": [...]}`` of an answer whose samples took more than one path (module docstring)."""
    if lines is None:
        return {}
    return {"paths": [{"path": line.path, "votes": line.count, **({} if line.steps is None else {"steps": line.steps}),
                       **_misses_of(line.sample)} for line in lines]}


def _answer_lines(r: CaseRecord) -> list[str]:
    """Each answer with its votes, and under it how the agent got there: one step line (and its
    misses) per path its samples took when the case's samples took more than one, else the line
    of its first sample.
    """
    lines = []
    steps, shown, split = cluster_steps(r), cluster_samples(r), path_lines(r)
    for a, n in answer_distribution(r):
        lines.append(f"    {n:>3} × {answer_label(a, 100)}")
        if a in split:
            for line in split[a]:
                lines.append(f"          {path_line_text(line)}")
                if (said := sample_misses(line.sample)) is not None:
                    lines.append(f"              misses: {said}")
            continue
        if a in steps:
            lines.append(f"          steps: {steps[a]}")
        said = None if a not in shown else sample_misses(shown[a])
        if said is not None:  # what the same sample missed of the expectations
            lines.append(f"          misses: {said}")
    return lines


def _path_lines(r: CaseRecord) -> list[str]:
    """The case's paths (finding, clusters, why) and its pass^k with the most common misses."""
    lines = []
    if r.path is not None:
        lines.append(f"  path:       {finding_word(r.path)} · p̂ {fmt_p(r.path.p_hat)} · {clusters_text(r.path)} "
                     f"(granularity {r.path.granularity})")
        if r.path.reason:
            lines.append(f"              {_one_line(r.path.reason, 300)}")
    if r.pass_k is not None:
        lines.append(f"  pass^k:     {pass_k_text(r.pass_k)}")
    misses = case_misses(r)
    if misses:
        lines.append(f"  misses:     {'; '.join(misses)}")
    return lines


def _show_lines(view: views.CaseView) -> list[str]:
    last = view.latest
    spec = last.case
    lines = [f"case {last.id} · topic {last.topic}", f"  prompt:     {spec.prompt}"]
    if spec.system:
        lines.append(f"  system:     {_one_line(spec.system, 200)}")
    if spec.reference is None:
        lines.append("  reference:  none")
    else:
        lines.append(f"  reference:  {spec.reference} ({'verified' if spec.reference_verified else 'unverified'})")
    lines.append("  latest:     " + side(last.case_class.value, last.p_hat, last.interval, last.k, last.target_version,
                                         f"run {last.run_id}, {last.finished_at:%Y-%m-%d %H:%M}"))
    if last.reason:
        lines.append(f"  why:        {_one_line(last.reason, 300)}")
    lines += _path_lines(last)
    answers = answer_distribution(last)
    lines.append(f"  answers ({last.k} samples, latest run):" if answers else "  answers:    none (never sampled)")
    lines += _answer_lines(last)
    lines.append(f"  history ({len(view.history)} observation(s), oldest first):")
    rows = [[f"{r.finished_at:%Y-%m-%d %H:%M}", r.run_id, r.case_class.value, _p_cell(r), f"k={r.k}",
             f"agent {_agent(r)}", "" if r.verdict is None else f"replay: {r.verdict.verdict}"] for r in view.history]
    lines += ["    " + t for t in _table(["WHEN", "RUN", "CLASS", "P̂", "K", "AGENT", "VERDICT"], rows,
                                        last_flexible=False)[1:]]
    b = view.baseline
    if b is None:
        lines.append("  baseline:   none yet (no observation that was neither invalid nor unresolved)")
    else:
        how = {"accept": "accepted", "first": "first observation", "suite": "from a suite"}[b.source]
        lines.append("  baseline:   " + side(b.case_class.value, b.p_hat, b.interval, b.k, b.target_version,
                                             f"{b.accepted_at:%Y-%m-%d} ({how})"))
        anchor = ("no anchor: scattered answers, no verified reference" if b.anchor is None
                  else f"{b.successes}/{b.k} gave {b.anchor!r} (the {b.anchor_kind})")
        lines.append(f"              {anchor}")
    if view.accepted:
        lines.append(f"  accepted baselines ({len(view.accepted)}, oldest first):")
        lines += [f"    {a.accepted_at:%Y-%m-%d %H:%M}  {a.case_class.value}, p̂ {fmt_p(a.p_hat)}, k={a.k}, "
                  f"agent {shorten(a.target_version or a.target_id or '—', 28)}, runs {', '.join(a.run_ids) or '—'}"
                  for a in view.accepted]
    verdicts = [r for r in view.history if r.verdict is not None]
    if verdicts:
        lines.append("  replay verdicts:")
        lines += [f"    {r.run_id}: {r.verdict.verdict}: {_one_line(r.verdict.reason, 240)}"  # type: ignore[union-attr]
                  for r in verdicts]
    return lines


# --- diff ------------------------------------------------------------------------------------------


def _run_json(run_id: str, run: RunRecord | None, cases: int) -> dict[str, Any]:
    return {"run_id": run_id, "started_at": None if run is None else run.started_at.isoformat(),
            "target_id": None if run is None else run.target_id,
            "target_version": None if run is None else run.target_version, "cases": cases}


def _changes(diff: views.RunDiff) -> list[dict[str, Any]]:
    rows = [{"id": c.case_id, "topic": diff.b_cases[c.case_id].topic,
             "class_a": diff.a_cases[c.case_id].case_class.value, "class_b": c.new_class.value,
             "p_hat_a": c.old_p_hat, "p_hat_b": c.new_p_hat,
             "k_a": diff.a_cases[c.case_id].k, "k_b": c.samples, "verdict": c.verdict.value, "reason": c.reason,
             "p_value": c.p_value, "level": c.level} for c in diff.changed]
    rows += [{"id": b.id, "topic": b.topic, "class_a": a.case_class.value, "class_b": b.case_class.value,
              "p_hat_a": a.p_hat, "p_hat_b": b.p_hat, "k_a": a.k, "k_b": b.k, "verdict": None,
              "reason": "the test cannot compare a case without samples on both sides (invalid or never sampled)",
              "p_value": None, "level": None}
             for a, b in diff.unjudged if a.case_class is not b.case_class]
    return sorted(rows, key=lambda row: row["id"])


def diff_command(
    run_a: str | None = typer.Argument(None, help="The earlier run (default: the second-to-last run)."),
    run_b: str | None = typer.Argument(None, help="The later run (default: the last run)."),
    exit_code: bool = typer.Option(False, "--exit-code", help="Exit 1 when a case changed, appeared or vanished."),
    as_json: bool = _JSON,
    config: Path | None = CONFIG,
    store: Path | None = STORE,
) -> None:
    """Compare two runs (the last two by default): class changes, p̂ changes beyond noise, new and vanished cases."""
    source, cfg = _store(config, store)
    if run_a is None:
        a_id, b_id = views.default_runs(source)
    elif run_b is None:
        a_id, b_id = views.find_run(source, run_a), views.run_ids_by_time(source)[-1]
    else:
        a_id, b_id = views.find_run(source, run_a), views.find_run(source, run_b)
    if a_id == b_id:
        raise ConfigError(f"cases diff got run {a_id} twice", hint="name two different runs: cases diff RUN_A RUN_B")
    diff = views.run_diff(source, a_id, b_id, policy=regression_policy(cfg))
    changes = _changes(diff)
    verdicts: dict[str, int] = {}
    for c in diff.comparisons:
        verdicts[c.verdict.value] = verdicts.get(c.verdict.value, 0) + 1
    if as_json:
        _emit({"kind": "cases.diff", "version": JSON_VERSION, "store": str(source.root),
               "run_a": _run_json(a_id, diff.run_a, len(diff.a_cases)),
               "run_b": _run_json(b_id, diff.run_b, len(diff.b_cases)), "changed": changes,
               "new": [case_row(r) for r in diff.new], "vanished": [case_row(r) for r in diff.vanished],
               "unchanged": diff.unchanged, "verdicts": verdicts})
    else:
        for text in _diff_lines(diff, changes, verdicts):
            typer.echo(text)
    different = bool(changes or diff.new or diff.vanished)
    raise typer.Exit(EXIT_FINDINGS if exit_code and different else EXIT_OK)


def _run_title(run_id: str, run: RunRecord | None, cases: int) -> str:
    if run is None:
        return f"{run_id} ({cases} cases)"
    agent = run.target_id + (f" {run.target_version}" if run.target_version else "")
    return f"{run_id} ({run.started_at:%Y-%m-%d %H:%M}, {agent}, {cases} cases)"


def _diff_lines(diff: views.RunDiff, changes: list[dict[str, Any]], verdicts: dict[str, int]) -> list[str]:
    lines = [f"cases diff  A: {_run_title(diff.a_id, diff.run_a, len(diff.a_cases))}",
             f"            B: {_run_title(diff.b_id, diff.run_b, len(diff.b_cases))}"]
    if changes:
        lines.append(f"changed ({len(changes)}):")
        rows = [[c["id"], c["topic"], f"{c['class_a']} → {c['class_b']}",
                 f"p̂ {fmt_p(c['p_hat_a'])} → {fmt_p(c['p_hat_b'])}", c["verdict"] or "not judged",
                 c["reason"]] for c in changes]
        lines += ["  " + t for t in _table(["ID", "TOPIC", "CLASS", "P̂", "VERDICT", "WHY"], rows)[1:]]
    for title, records in (("new in B", diff.new), ("vanished from B", diff.vanished)):
        if records:
            lines.append(f"{title} ({len(records)}):")
            rows = [[r.id, r.topic, r.case_class.value, _p_cell(r), r.case.prompt] for r in records]
            lines += ["  " + t for t in _table(["ID", "TOPIC", "CLASS", "P̂", "PROMPT"], rows)[1:]]
    judged = ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())) or "none"
    lines.append(f"{len(changes)} changed, {len(diff.new)} new, {len(diff.vanished)} vanished, "
                 f"{diff.unchanged} unchanged · p̂ judged by the replay test (A as baseline): {judged}")
    return lines


def register(app: typer.Typer) -> None:
    """Add ``cases list``, ``cases show`` and ``cases diff`` to ``app``."""
    cases_app = command_group("cases", "Look at the case store: list cases, show one, diff two runs (--json for each).")
    cases_app.command("list")(list_command)
    cases_app.command("show")(show_command)
    cases_app.command("diff")(diff_command)
    app.add_typer(cases_app, name="cases")


__all__ = ["JSON_VERSION", "case_row", "register"]
