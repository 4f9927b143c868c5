"""The options of ``probe`` and ``replay``: declared once, with the table that maps them to config keys.

The options both commands have are one group, :class:`RunOptions` (a frozen dataclass whose
fields carry their ``typer.Option``). :func:`with_options` gives a command the group's options
and its own, in the order the command names (its ``--help`` order), and calls it with the
group as one typed value and ``flags``: every argument that the flag table names, by
parameter name, for :func:`frontier_qa.cli._flags.overrides`. A command never lists its
flags a second time.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import typer

from frontier_qa.cli._flags import FlagRule, fixed, to_key
from frontier_qa.config import Override
from frontier_qa.errors import ConfigError
from frontier_qa.probing._sequential import POLICIES
from frontier_qa.scoring.bands import AGENT0_BAND, NAMED_BANDS

# --- flags → config ------------------------------------------------------------------------------


def _curriculum(text: str) -> list[Override]:
    """``--curriculum``: ``FILE``, ``file:PATH``, ``prompted:MODEL_SPEC`` or ``trained:CHECKPOINT``."""
    flag = f"--curriculum {text}"
    kind, sep, rest = text.partition(":")
    if sep and kind in ("prompted", "trained") and rest:
        return [Override("curriculum.type", kind, flag), Override("curriculum.model.spec", rest, flag)]
    if sep and kind == "file" and rest:
        text = rest
    elif Path(text).suffix.lower() not in (".jsonl", ".json", ".ndjson", ".yaml", ".yml"):
        raise ConfigError(f"--curriculum {text!r} is not understood",
                          hint="pass a cases file (*.jsonl, *.yaml), file:PATH, prompted:MODEL_SPEC "
                               "or trained:CHECKPOINT")
    return [Override("curriculum.type", "file", flag), Override("curriculum.path", text, flag)]


def _band(text: str) -> Any:
    if text in NAMED_BANDS:
        return text
    low, sep, high = text.partition(":")
    try:
        if sep:
            return {"low": float(low), "high": float(high)}
    except ValueError:
        pass
    raise ConfigError(f"--band {text!r} is not understood",
                      hint=f"use agent0, tool-r0 or LOW:HIGH, e.g. {AGENT0_BAND.low}:{AGENT0_BAND.high}")


# Every config flag of probe, replay and merge, by parameter name; a command's other
# parameters (--config, --run-id, --progress...) steer the command itself.
FLAGS: dict[str, FlagRule] = {
    "target": to_key("target.spec", "--target"),
    "curriculum": _curriculum,
    "domain": to_key("curriculum.domain", "--domain"),
    "topic": lambda value: [Override("curriculum.topics", list(value), "--topic")],
    "tools": to_key("curriculum.tools", "--tools"),
    "budget_calls": to_key("budget.max_calls", "--budget-calls"),
    "budget_tokens": to_key("budget.max_tokens", "--budget-tokens"),
    "max_cost_usd": to_key("budget.max_cost_usd", "--max-cost-usd"),
    "k": to_key("probing.k", "--k"),
    "policy": to_key("probing.policy", "--policy"),
    "band": lambda value: [Override("probing.band", _band(value), f"--band {value}")],
    "max_candidates": to_key("probing.max_candidates", "--max-candidates"),
    "concurrency": to_key("probing.concurrency", "--concurrency"),
    "seed": to_key("probing.seed", "--seed"),
    "judge": to_key("probing.judge.spec", "--judge"),
    "critic": to_key("validation.critic.spec", "--critic"),
    "scope": to_key("probing.replay_scope", "--scope"),
    "max_replay": to_key("probing.max_replay", "--max-replay"),
    "no_replay": fixed("probing.replay_first", False, "--no-replay"),
    "no_cache": fixed("target.cache", False, "--no-cache"),
    "out": to_key("output.dir", "--out"),
    "store": to_key("store", "--store"),
    "shard": to_key("shard", "--shard"),
    "ray": to_key("ray.address", "--ray"),
    "suite": to_key("replay.suite", "--suite"),
    "formats": lambda value: [Override("output.formats", list(value), "--format")],
    "frontier_as_failure": fixed("output.frontier_as_failure", True, "--frontier-as-failure"),
    "max_failures": to_key("gate.max_failures", "--max-failures"),
    "max_frontier_share": to_key("gate.max_frontier_share", "--max-frontier-share"),
    "max_regressions": to_key("gate.max_regressions", "--max-regressions"),
    "otel_endpoint": to_key("export.otel.endpoint", "--otel-endpoint"),
}
# ``replay`` has a gate of its own (regressions fail it; known failures in a suite do not).
REPLAY_FLAGS: dict[str, FlagRule] = {
    **FLAGS,
    "max_failures": to_key("replay.gate.max_failures", "--max-failures"),
    "max_regressions": to_key("replay.gate.max_regressions", "--max-regressions"),
    "max_flaky": to_key("replay.gate.max_flaky", "--max-flaky"),
    "max_inconclusive": to_key("replay.gate.max_inconclusive", "--max-inconclusive"),
}

# --- the options ---------------------------------------------------------------------------------

# options other commands (accept, cases, export, merge) share too
CONFIG = typer.Option(None, "--config", "-c", help="YAML config (see configs/example.yaml).")
TARGET = typer.Option(None, "--target", help="Target spec: litellm:…, openai:MODEL@URL, hf:…, python:FILE:ATTR, "
                      "openai-agents:FILE:ATTR, langgraph:FILE:ATTR, pydantic-ai:FILE:ATTR, http://…")
NO_CACHE = typer.Option(False, "--no-cache", help="Sample afresh: neither read nor write the sample cache.")
STORE = typer.Option(None, "--store", help="Case store directory (default .frontier-qa).")
SET = typer.Option([], "--set", help="Any config key: --set probing.k=6 (repeatable).")
FORMAT = typer.Option([], "--format", help="Report format: json, junit, md, html (repeatable; default all).")
FRONTIER_FAIL = typer.Option(False, "--frontier-as-failure", help="junit.xml: frontier cases fail.")
MAX_FAILURES = typer.Option(None, "--max-failures", help="Gate: most failures.")
MAX_FRONTIER = typer.Option(None, "--max-frontier-share", help="Gate: most frontier share.")
_POLICY_HELP = "Sampling policy: " + "; ".join(f"{p.name}: {p.summary}" for p in POLICIES.values()) + "."


def _option(declared: Any) -> Any:
    """A :class:`RunOptions` field with its command-line option."""
    return dataclasses.field(metadata={"option": declared})


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The options ``probe`` and ``replay`` share, as the command received them."""

    config: Path | None = _option(CONFIG)
    target: str | None = _option(TARGET)
    budget_calls: int | None = _option(typer.Option(None, "--budget-calls", help="Most model calls of the run."))
    max_cost_usd: float | None = _option(typer.Option(None, "--max-cost-usd", help="Most US dollars of the run."))
    k: int | None = _option(typer.Option(None, "--k", help=(
        "Samples per case: exactly k with --policy fixed, else the cap (default: the policy's own; a cap too low "
        "to decide most cases warns).")))
    policy: str | None = _option(typer.Option(None, "--policy", help=_POLICY_HELP))
    seed: int | None = _option(typer.Option(None, "--seed", help="The run's seed."))
    judge: str | None = _option(typer.Option(None, "--judge", help="Judge model spec for stable answers."))
    out: Path | None = _option(typer.Option(None, "--out", help="Report folder (default frontier-qa-report)."))
    store: Path | None = _option(STORE)
    run_id: str | None = _option(typer.Option(
        None, "--run-id", help="Name of the run (shards of one CI job share it)."))
    wait: bool = _option(typer.Option(
        False, "--wait", help="If another process is writing this run, wait for it instead of exit 2."))
    shard: str | None = _option(typer.Option(None, "--shard", help="Run shard i of n: --shard 2/4."))
    ray: str | None = _option(typer.Option(
        None, "--ray", help="Sample on this Ray cluster (auto, HOST:6379); needs the ray extra."))
    frontier_as_failure: bool = _option(FRONTIER_FAIL)
    max_regressions: int | None = _option(typer.Option(
        None, "--max-regressions", help="Gate: most replay regressions."))
    no_cache: bool = _option(NO_CACHE)
    formats: list[str] = _option(FORMAT)
    sets: list[str] = _option(SET)
    progress: str = _option(typer.Option(
        "auto", "--progress", help="auto | rich | plain | off (auto: a bar on a terminal, lines in CI)."))
    show_config: bool = _option(typer.Option(False, "--show-config", help="Print the resolved configuration and exit."))
    otel_endpoint: str | None = _option(typer.Option(
        None, "--otel-endpoint", help="Send each case's verdict to this OTLP/HTTP endpoint as an OpenTelemetry event "
        "(export.otel; off by default)."))


def with_options(table: Mapping[str, FlagRule], order: Sequence[str]) -> Callable[[Callable[..., Any]], Any]:
    """A command ``f(opts, flags, **own)`` as typer calls it: with :class:`RunOptions`' options and
    its own, in ``order`` (the ``--help`` order).

    ``opts`` gets the group's values, ``flags`` every argument (the group's or the command's
    own) that ``table`` names. Naming a parameter twice, or leaving one out of ``order``, fails
    when the command module is imported.
    """
    group_types = typing.get_type_hints(RunOptions)
    group = {f.name: inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.metadata["option"],
                                       annotation=group_types[f.name])
             for f in dataclasses.fields(RunOptions)}

    def decorate(command: Callable[..., Any]) -> Any:
        own = dict(inspect.signature(command, eval_str=True).parameters)
        if list(own)[:2] != ["opts", "flags"]:
            raise TypeError(f"{command.__name__} takes opts and flags first")
        del own["opts"], own["flags"]
        both = own.keys() & group.keys()
        if both or set(order) != own.keys() | group.keys() or len(order) != len(set(order)):
            raise TypeError(f"{command.__name__}: order must name each of its own and the group's options once"
                            f"{f' (declared twice: {sorted(both)})' if both else ''}")

        @functools.wraps(command)
        def run(**arguments: Any) -> Any:
            opts = RunOptions(**{name: arguments.pop(name) for name in group})
            given = {**vars(opts), **arguments}
            return command(opts, {name: given[name] for name in order if name in table}, **arguments)

        params = [own[name].replace(kind=inspect.Parameter.KEYWORD_ONLY) if name in own else group[name]
                  for name in order]
        run.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        return run

    return decorate


__all__ = ["CONFIG", "FLAGS", "FORMAT", "FRONTIER_FAIL", "MAX_FAILURES", "MAX_FRONTIER", "NO_CACHE", "REPLAY_FLAGS",
           "SET", "STORE", "TARGET", "RunOptions", "with_options"]
