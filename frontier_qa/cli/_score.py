"""``frontier-qa score``: score recorded executor runs with the scoring core.

Each JSONL line is one task and its k executor answers::

    {"id": "t1", "task": "What is 17 + 25?", "answers": ["\\boxed{42}", ...],
     "answer_format": "boxed", "failed": [false, ...], "tool_calls": [0, 1, ...],
     "topic": "arithmetic"}

``answers`` holds the full final texts (``null`` for a failed sample); the answer is
extracted with ``answer_format`` (``boxed``, ``final_answer``, ``json:<field>``, ``auto``,
or ``text`` for open-ended answers, which are clustered by sentence embeddings).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from frontier_qa.errors import ConfigError, check_unicode, read_text
from frontier_qa.redaction import redact_data
from frontier_qa.scoring.bands import AGENT0_BAND


class ScoreRow(BaseModel):
    """One task of a recorded run (a line of the input JSONL)."""

    model_config = ConfigDict(extra="allow")

    id: str
    task: str
    answers: list[str | None] = Field(min_length=1)
    answer_format: str = "auto"
    failed: list[bool] | None = None
    tool_calls: list[int] | None = None
    topic: str = "general"

    @model_validator(mode="after")
    def _lengths(self) -> ScoreRow:
        k = len(self.answers)
        for name in ("failed", "tool_calls"):
            value = getattr(self, name)
            if value is not None and len(value) != k:
                raise ValueError(f"'{name}' has {len(value)} entries but 'answers' has {k}")
        return self


def read_rows(path: str) -> Iterator[tuple[int, ScoreRow]]:
    """Yield ``(line number, row)``; a bad line raises ConfigError naming the line and field."""
    stream = sys.stdin if path == "-" else None
    if stream is None:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"no such file: {path}", hint="pass a JSONL file of recorded runs, or - for stdin")
        stream = io.StringIO(read_text(file, what="runs file", hint="pass a JSONL file of recorded runs"))
    with stream:
        for lineno, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as err:
                raise ConfigError(
                    f"{path}:{lineno}: not valid JSON ({err.msg} at column {err.colno})",
                    hint="each line must be one JSON object",
                ) from None
            check_unicode(data, f"{path}:{lineno}")
            try:
                yield lineno, ScoreRow.model_validate(data)
            except ValidationError as err:
                first = err.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                field = f"field '{where}': " if where else ""
                raise ConfigError(
                    f"{path}:{lineno}: {field}{first['msg']}",
                    hint="see `frontier-qa score --help` for the row format",
                ) from None


def score_rows(
    rows: list[ScoreRow],
    *,
    preset: str = "paper",
    band: str = "agent0",
    embedder: str | None = None,
    threshold: float | None = None,
) -> list[dict[str, Any]]:
    """Score every row: p̂, band membership, and the Agent0 curriculum reward terms.

    The repetition penalty is computed over all tasks of the file as one batch.
    """
    from frontier_qa.scoring.answers import check_answer_format, extract_answer
    from frontier_qa.scoring.bands import NAMED_BANDS as bands
    from frontier_qa.scoring.consistency import self_consistency
    from frontier_qa.scoring.rewards import REWARD_PRESETS as configs
    from frontier_qa.scoring.rewards import score_curriculum_batch

    if preset not in configs:
        raise ConfigError(f"unknown reward preset {preset!r}", hint=f"use one of: {', '.join(configs)}")
    if band not in bands:
        raise ConfigError(f"unknown band {band!r}", hint=f"use one of: {', '.join(bands)}")
    chosen_band = bands[band]

    results: list[dict[str, Any]] = []
    for row in rows:
        fmt = check_answer_format(row.answer_format)
        failed = row.failed or [a is None for a in row.answers]
        extracted = [None if f else extract_answer(a, fmt) for a, f in zip(row.answers, failed, strict=True)]
        if fmt == "text":
            from frontier_qa.scoring._semantic import DEFAULT_THRESHOLD, semantic_consistency

            cons = semantic_consistency(
                extracted,
                failed=failed,
                embedder=embedder,
                threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            )
        else:
            cons = self_consistency(extracted, failed=failed)
        results.append(
            {
                "id": row.id,
                "topic": row.topic,
                "k": cons.k,
                "p_hat": cons.p_hat,
                "majority": cons.majority,
                "clusters": [[c.representative, c.size] for c in cons.clusters],
                "n_unparseable": cons.n_unparseable,
                "n_failed": cons.n_failed,
                "tie": cons.tie,
                "entropy": cons.entropy,
                "in_band": chosen_band.contains(cons.p_hat),
                "band_score": chosen_band.score(cons.p_hat, k=cons.k),
            }
        )

    config = configs[preset]
    scores = score_curriculum_batch(
        [f"<question>{row.task}</question>" for row in rows],
        [r["p_hat"] for r in results],
        [row.tool_calls if row.tool_calls is not None else [0] * len(row.answers) for row in rows],
        config=replace(config),
    )
    for result, score in zip(results, scores, strict=True):
        result.update(
            r_unc=score.uncertainty, r_tool=score.tool, r_rep=score.repetition, reward=score.reward
        )
    return results


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _print_table(results: list[dict[str, Any]], band: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"frontier-qa score ({len(results)} tasks, band: {band})")
    for col in ("id", "topic", "majority"):
        table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=22)
    for col in ("k", "p̂", "unp/fail", "band", "R_unc", "R_tool", "R_rep", "R_C"):
        table.add_column(col, justify="right", no_wrap=True, min_width=max(4, len(col)))
    for r in results:
        majority = r["majority"] if r["majority"] is not None else "-"
        table.add_row(
            r["id"],
            r["topic"],
            majority,
            str(r["k"]),
            f"{r['p_hat']:.2f}",
            f"{r['n_unparseable']}/{r['n_failed']}",
            "yes" if r["in_band"] else "no",
            _fmt(r["r_unc"]),
            _fmt(r["r_tool"]),
            _fmt(r["r_rep"]),
            _fmt(r["reward"]),
        )
    console = Console(width=max(130, Console().width))
    console.print(table)
    frontier = [r["id"] for r in results if r["in_band"]]
    console.print(f"frontier (in band): {len(frontier)}/{len(results)}: {', '.join(frontier) or '-'}")


def score_command(
    path: str = typer.Argument(..., help="JSONL of recorded runs (one task and its k answers per line), or -"),
    preset: str = typer.Option("paper", help="Reward constants: paper | agent0-compat."),
    band: str = typer.Option(
        "agent0", help=f"Frontier band: agent0 ({AGENT0_BAND.low} ≤ p̂ ≤ {AGENT0_BAND.high}) | tool-r0 (soft)."),
    embedder: str | None = typer.Option(
        None, help="Embedding model for open-ended answers: a sentence-transformers name/path or litellm:<model>."
    ),
    threshold: float | None = typer.Option(None, help="Cosine-distance threshold for open-ended clustering."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per task instead of a table."),
    out: Path | None = typer.Option(None, help="Also write the results as JSONL to this file."),
) -> None:
    """Score recorded executor runs: p̂ per task, band membership, and Agent0 reward terms."""
    if out is not None and out.is_dir():  # checked before scoring, which may take long
        raise ConfigError(f"--out {out} is a folder",
                          hint="give a file name for the JSONL results, e.g. --out scores.jsonl")
    rows = [row for _, row in read_rows(path)]
    if not rows:
        raise ConfigError(f"{path} holds no tasks", hint="add one JSON object per line")
    results = score_rows(rows, preset=preset, band=band, embedder=embedder, threshold=threshold)
    lines = [json.dumps(redact_data(r), ensure_ascii=False) for r in results]  # a file this run writes
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"cannot write --out {out}: {err.strerror}", hint="give a writable file path") from None
    if as_json:
        typer.echo("\n".join(lines))
    else:
        _print_table(results, band)


def register(app: typer.Typer) -> None:
    """Add ``score`` to ``app``."""
    app.command("score")(score_command)
