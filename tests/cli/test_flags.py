"""Every config flag of ``probe`` and ``replay`` reaches its config key (read back with --show-config).

The commands pass their flags to :func:`frontier_qa.cli._probe.overrides` by name through one
table (``FLAGS`` / ``REPLAY_FLAGS``); these tests fail when a command forgets a flag, or a
table entry points at the wrong key.
"""

from __future__ import annotations

import pytest
import typer
import yaml
from typer.testing import CliRunner

from frontier_qa.cli import main
from frontier_qa.cli._options import RunOptions, with_options
from frontier_qa.cli._probe import FLAGS, REPLAY_FLAGS
from frontier_qa.cli.app import build_app

# parameter name -> (command-line arguments, config key path, expected value)
PROBE_CASES: dict[str, tuple[list[str], str, object]] = {
    "target": (["--target", "litellm:openai/x"], "target.spec", "litellm:openai/x"),
    "curriculum": (["--curriculum", "prompted:litellm:openai/y"], "curriculum.model.spec", "litellm:openai/y"),
    "domain": (["--domain", "general"], "curriculum.domain", "general"),
    "topic": (["--topic", "a", "--topic", "b"], "curriculum.topics", ["a", "b"]),
    "tools": (["--tools", "tools.json"], "curriculum.tools", "tools.json"),
    "budget_calls": (["--budget-calls", "7"], "budget.max_calls", 7),
    "budget_tokens": (["--budget-tokens", "9"], "budget.max_tokens", 9),
    "max_cost_usd": (["--max-cost-usd", "1.5"], "budget.max_cost_usd", 1.5),
    "k": (["--k", "3"], "probing.k", 3),
    "policy": (["--policy", "economy"], "probing.policy", "economy"),
    "band": (["--band", "0.2:0.7"], "probing.band", {"low": 0.2, "high": 0.7}),
    "max_candidates": (["--max-candidates", "5"], "probing.max_candidates", 5),
    "concurrency": (["--concurrency", "2"], "probing.concurrency", 2),
    "seed": (["--seed", "4"], "probing.seed", 4),
    "no_cache": (["--no-cache"], "target.cache", False),
    "judge": (["--judge", "litellm:openai/j"], "probing.judge.spec", "litellm:openai/j"),
    "critic": (["--critic", "litellm:openai/c"], "validation.critic.spec", "litellm:openai/c"),
    "out": (["--out", "reports"], "output.dir", "reports"),
    "store": (["--store", "cases"], "store", "cases"),
    "shard": (["--shard", "2/4"], "shard", "2/4"),
    "ray": (["--ray", "127.0.0.1:6379"], "ray.address", "127.0.0.1:6379"),
    "no_replay": (["--no-replay"], "probing.replay_first", False),
    "frontier_as_failure": (["--frontier-as-failure"], "output.frontier_as_failure", True),
    "max_failures": (["--max-failures", "3"], "gate.max_failures", 3),
    "max_frontier_share": (["--max-frontier-share", "0.5"], "gate.max_frontier_share", 0.5),
    "max_regressions": (["--max-regressions", "2"], "gate.max_regressions", 2),
    "formats": (["--format", "md", "--format", "json"], "output.formats", ["md", "json"]),
    "otel_endpoint": (["--otel-endpoint", "http://127.0.0.1:4318"], "export.otel.endpoint", "http://127.0.0.1:4318"),
}
REPLAY_CASES: dict[str, tuple[list[str], str, object]] = {
    "suite": (["--suite", "suite.yaml"], "replay.suite", "suite.yaml"),
    "scope": (["--scope", "all"], "probing.replay_scope", "all"),
    "max_replay": (["--max-replay", "3"], "probing.max_replay", 3),
    "max_failures": (["--max-failures", "1"], "replay.gate.max_failures", 1),
    "max_regressions": (["--max-regressions", "4"], "replay.gate.max_regressions", 4),
    "max_flaky": (["--max-flaky", "5"], "replay.gate.max_flaky", 5),
    "max_inconclusive": (["--max-inconclusive", "6"], "replay.gate.max_inconclusive", 6),
}


def _resolved(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    assert main([*args, "--show-config"]) == 0, capsys.readouterr().err
    return yaml.safe_load(capsys.readouterr().out)


def _at(config: dict, path: str) -> object:
    for key in path.split("."):
        config = config[key]
    return config


def test_every_flag_in_the_tables_is_checked_here() -> None:
    assert set(PROBE_CASES) | set(REPLAY_CASES) == set(FLAGS) | set(REPLAY_FLAGS)


@pytest.mark.parametrize("name", sorted(PROBE_CASES))
def test_probe_flag_sets_its_key(name: str, capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    args, key, value = PROBE_CASES[name]
    assert _at(_resolved(capsys, "probe", *args), key) == value


@pytest.mark.parametrize("name", sorted({*REPLAY_CASES, "target", "budget_calls", "k", "policy", "store", "shard", "formats"}))
def test_replay_flag_sets_its_key(name: str, capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    args, key, value = REPLAY_CASES.get(name) or PROBE_CASES[name]
    assert _at(_resolved(capsys, "replay", *args), key) == value


def test_commands_are_registered_explicitly() -> None:
    """Each build gets every command; importing the command modules registered nothing."""
    first, second = typer.main.get_command(build_app()), typer.main.get_command(build_app())
    expected = {"probe", "replay", "accept", "export", "merge", "schema", "score", "train", "init", "cases"}
    assert set(first.commands) == set(second.commands) == expected
    assert set(first.commands["train"].commands) == {"curriculum", "coevolve", "merge", "summary"}
    assert set(first.commands["cases"].commands) == set(second.commands["cases"].commands) == {"list", "show", "diff"}


def test_with_options_passes_the_group_and_every_flag_the_table_names() -> None:
    """A command gets the shared options as one value and its flags by name, in its --help order."""
    seen: list[tuple[RunOptions, dict]] = []

    @with_options(REPLAY_FLAGS, ("max_flaky", *[f for f in RunOptions.__dataclass_fields__]))
    def command(opts: RunOptions, flags: dict, max_flaky: int | None = typer.Option(None, "--max-flaky")) -> None:
        seen.append((opts, dict(flags)))

    app = typer.Typer()
    app.command()(command)
    app.command("other")(lambda: None)  # two commands: typer keeps the command name
    result = CliRunner().invoke(app, ["command", "--k", "3", "--max-flaky", "2", "--run-id", "r1", "--format", "md"])
    assert result.exit_code == 0, result.output
    [(opts, flags)] = seen
    assert (opts.k, opts.run_id, opts.formats, opts.wait) == (3, "r1", ["md"], False)
    assert flags["max_flaky"] == 2 and flags["k"] == 3 and flags["formats"] == ["md"]
    assert "run_id" not in flags and "sets" not in flags  # not config flags: they steer the command
    assert list(flags)[0] == "max_flaky"  # in the order given


def test_with_options_refuses_an_order_that_misses_or_repeats_an_option() -> None:
    every = list(RunOptions.__dataclass_fields__)

    def command(opts: RunOptions, flags: dict, case: list[str] = typer.Option([], "--case")) -> None: ...

    with pytest.raises(TypeError, match="order must name each"):
        with_options(FLAGS, every)(command)  # --case left out
    with pytest.raises(TypeError, match="order must name each"):
        with_options(FLAGS, ["case", *every, "k"])(command)
    with pytest.raises(TypeError, match="declared twice"):
        with_options(FLAGS, ["k", *every])(lambda opts, flags, k=None: None)
    with pytest.raises(TypeError, match="opts and flags first"):
        with_options(FLAGS, every)(lambda flags, opts: None)
