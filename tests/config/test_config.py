"""The probe config: precedence, the environment mapping, errors by key and line, wiring."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from frontier_qa.config import (
    Override,
    ProbeConfig,
    build_probe,
    build_settings,
    gate_thresholds,
    json_schema,
    load_config,
    parse_set,
)
from frontier_qa.errors import ConfigError
from frontier_qa.scoring.bands import AGENT0_BAND, TOOL_R0_BAND
from frontier_qa.store._shards import Shard
from tests.factories import REPO

AGENT = "def answer(case, sample_index):\n    return '\\\\boxed{%s}' % case.reference\n"
WRITER = (
    "def write(case):\n"
    "    return '<question>Call get_weather for Paris.</question>'\n"
)


def few_shot_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent, a curriculum writer and one few-shot example in ``tmp_path``, the current folder."""
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "writer.py").write_text(WRITER)
    (tmp_path / "shots.jsonl").write_text('{"problem": "How much is 7 * 8?", "answer": "56", "program": "print(56)"}\n')
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, text: str, name: str = "probe.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def writer_config(tmp_path: Path, *curriculum_keys: str, rest: str = "", name: str = "probe.yaml") -> Path:
    """A config naming the project's agent as target and its writer as the prompted curriculum's
    model, with ``curriculum_keys`` (``key: value`` each, from line 4 on) and then ``rest``.
    """
    head = ["target: python:agent.py:answer", "curriculum:", "  model: python:writer.py:write"]
    return write(tmp_path, "\n".join([*head, *(f"  {key}" for key in curriculum_keys)]) + "\n" + textwrap.dedent(rest),
                 name)


def error_of(*args: object, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(*args, **kwargs)  # type: ignore[arg-type]
    return str(info.value)


# --- precedence and the environment ---------------------------------------------------------------


def test_flags_beat_the_file_which_beats_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, """
        target: python:agent.py:answer
        probing:
          k: 5
          seed: 7
    """)
    env = {"FRONTIER_QA_PROBING__K": "4", "FRONTIER_QA_PROBING__BATCH_SIZE": "3", "FRONTIER_QA_TARGET": "http://x"}
    config = load_config(path, [Override("probing.seed", 9, "--seed 9")], env=env)
    assert (config.probing.k, config.probing.seed, config.probing.batch_size) == (5, 9, 3)
    # a python: file in a config file is found next to it, and keeps the id written there
    assert config.target.spec == f"python:{(tmp_path / 'agent.py').resolve()}:answer"
    assert config.target.options["id"] == "python:agent.py:answer"
    assert config.where("probing.k") == f"{path}:3"
    assert config.where("probing.seed") == "--seed 9"
    assert config.where("probing.batch_size") == "environment variable FRONTIER_QA_PROBING__BATCH_SIZE"
    assert config.where("probing.concurrency") == f"{path}:2"  # not set: its section's line
    without_file = load_config(None, env=env)
    assert (without_file.probing.k, without_file.target.spec) == (4, "http://x")
    assert load_config(None, env={}).probing.k is None  # the default: the policy says (30 for calibrated)


@pytest.mark.parametrize("scheme", ["openai-agents", "langgraph", "pydantic-ai"])
def test_a_framework_agent_file_in_a_config_file_is_found_next_to_it_too(tmp_path: Path, scheme: str) -> None:
    config = load_config(write(tmp_path, f"target: {scheme}:agents/agent.py:agent\n"))
    assert config.target.spec == f"{scheme}:{(tmp_path / 'agents' / 'agent.py').resolve()}:agent"
    assert config.target.options["id"] == f"{scheme}:agents/agent.py:agent"


def test_environment_values_are_typed_and_foreign_variables_ignored() -> None:
    env = {
        "FRONTIER_QA_TARGET": "litellm:openai/gpt-4o-mini",
        "FRONTIER_QA_TARGET__OPTIONS__API_BASE": "http://127.0.0.1:8000/v1",
        "FRONTIER_QA_BUDGET__MAX_CALLS": "500",
        "FRONTIER_QA_BUDGET__MAX_COST_USD": "2.5",
        "FRONTIER_QA_PROBING__SEQUENTIAL": "false",
        "FRONTIER_QA_CURRICULUM__TOPICS": "[fractions, primes]",
        "FRONTIER_QA_SHARD": "2/4",
        "FRONTIER_QA_CACHE": "/somewhere",  # local_models' cache folder, not a config key
        "FRONTIER_QA_SMOLLM2_GGUF": "/x.whl",
    }
    config = load_config(None, env=env)
    assert config.target.spec == "litellm:openai/gpt-4o-mini"
    assert config.target.options == {"api_base": "http://127.0.0.1:8000/v1"}
    assert (config.budget.max_calls, config.budget.max_cost_usd) == (500, 2.5)
    assert config.probing.sequential is False
    assert config.curriculum.topics == ["fractions", "primes"]
    assert config.shard == "2/4"


def test_a_bad_key_under_a_written_section_names_the_flag_that_set_it(tmp_path: Path) -> None:
    # the file writes `probing:`; the misspelt key inside it came from --set, not from that line
    path = write(tmp_path, """
        target: mock:right
        probing:
          k: 5
    """)
    message = error_of(path, [parse_set("probing.kk.x=1")])
    assert "--set probing.kk.x=1: probing.kk: unknown key" in message
    assert f"{path}:2: probing.kk" not in message
    # a key the file itself wrote stays the file's
    assert f"{path}:3: probing.k:" in error_of(write(tmp_path, """
        target: mock:right
        probing:
          k: 0
    """))


def test_a_misspelt_environment_key_names_the_variable() -> None:
    message = error_of(None, env={"FRONTIER_QA_BUDGET__MAX_CALS": "5"})
    assert "environment variable FRONTIER_QA_BUDGET__MAX_CALS: budget.max_cals: unknown key" in message
    assert "did you mean 'max_calls'?" in message
    message = error_of(None, env={"FRONTIER_QA_PROBNG__K": "5"})
    assert "environment variable FRONTIER_QA_PROBNG__K: unknown config section 'probng'" in message
    assert "did you mean FRONTIER_QA_PROBING__...?" in message


def test_a_bad_value_in_the_file_is_an_error_even_where_a_flag_overrides_it(tmp_path: Path) -> None:
    # the config is the user's contract: a flag that wins must not hide a value the file gets wrong
    path = write(tmp_path, """
        target: mock:right
        probing:
          k: lots
          seed: 3
    """)
    message = error_of(path, [Override("probing.k", 3, "--k 3")])
    assert f"{path}:3: probing.k: Input should be a valid integer" in message and "(got 'lots')" in message
    assert "is overridden here by --k 3, but every value it sets must be valid" in message
    assert error_of(path).startswith(f"the configuration is invalid: {path}:3: probing.k")  # as without the flag
    # the environment too, where the file or a flag overrides it; the merged value stays the file's
    env = {"FRONTIER_QA_PROBING__SEED": "soon"}
    message = error_of(path, [Override("probing.k", 3, "--k 3")], env=env)
    assert f"{path}:3: probing.k" in message  # every layer's bad values, in one message
    assert "environment variable FRONTIER_QA_PROBING__SEED: probing.seed: Input should be a valid integer" in message
    assert f"the environment is overridden here by {path}:4, but every value it sets must be valid" in message
    good = write(tmp_path, """
        target: mock:right
        probing:
          k: 5
    """, "good.yaml")
    assert load_config(good, [Override("probing.k", 3, "--k 3")], env={}).probing.k == 3  # valid values: the flag wins


def test_the_cli_refuses_an_overridden_bad_value_with_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from frontier_qa.cli.app import main

    monkeypatch.chdir(tmp_path)
    write(tmp_path, """
        target: mock:right
        probing: {k: lots}
    """)
    (tmp_path / "ok.jsonl").write_text('{"prompt": "What is 2 + 2?", "reference": "4"}\n')
    assert main(["probe", "--config", "probe.yaml", "--curriculum", "ok.jsonl", "--k", "3", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert "probe.yaml:2: probing.k" in err and "--k 3" in err
    assert not (tmp_path / "o").exists()  # refused before anything ran


def test_secret_environment_values_stay_strings() -> None:
    config = load_config(None, env={"FRONTIER_QA_TARGET__OPTIONS__API_KEY": "0x12",
                                    "FRONTIER_QA_TARGET__OPTIONS__TIMEOUT": "30"})
    assert config.target.options == {"api_key": "0x12", "timeout": 30}


def test_a_file_string_spec_and_environment_options_merge(tmp_path: Path) -> None:
    path = write(tmp_path, "target: openai:m@http://127.0.0.1:9/v1\n")
    config = load_config(path, env={"FRONTIER_QA_TARGET__LIMITS__RPM": "60"})
    assert config.target.spec == "openai:m@http://127.0.0.1:9/v1" and config.target.limits.rpm == 60


# --- errors by key and line -------------------------------------------------------------------------


def test_errors_name_key_line_and_fix_sorted_by_line(tmp_path: Path) -> None:
    path = write(tmp_path, """
        version: 1
        target:
          spec: python:agent.py:answer
          limits:
            max_concurency: 4
        curriculum:
          type: fille
        probing:
          band: {low: 0.9, high: 0.2}
          explore_rate: 2
    """)
    message = error_of(path, env={})
    lines = [line.strip() for line in message.splitlines()]
    assert lines[0] == "the configuration is invalid:"
    assert lines[1] == f"{path}:5: target.limits.max_concurency: unknown key"
    assert lines[2] == "fix: did you mean 'max_concurrency'?"
    assert lines[3] == f"{path}:7: curriculum.type: 'fille' is not allowed"
    assert lines[4] == "fix: did you mean 'file'? use one of: prompted, file, trained, generators"
    assert lines[5].startswith(f"{path}:9: probing.band: low (0.9) is above high (0.2)")
    assert lines[7] == f"{path}:10: probing.explore_rate: Input should be less than or equal to 1 (got 2)"
    assert lines[8] == "fix: set probing.explore_rate to a number <= 1.0"


def test_band_typo_gets_one_message_with_the_choices(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "probing:\n  band: agnet0\n"), env={})
    assert message.count("probing.band") == 1
    assert "did you mean 'agent0'? use one of: agent0, tool-r0 (or a mapping such as {low: 0.3, high: 0.8})" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("probing:\n  k: 3\n  k: 4\n", "probe.yaml:3: key 'probing.k' is repeated (first at"),
        ("probing:\n  k: [1\n", "probe.yaml:3: not valid YAML"),
        ("- a\n- b\n", "probe.yaml:1: a config is a mapping of sections, not a list"),
        ("version: 2\n", "probe.yaml:1: version 2 is newer than this frontier-qa reads (1)"),
        ("shard: 3/2\n", "probe.yaml:1: shard: shard 3/2 is out of range"),
        ("output:\n  formats: [json, pdf]\n", "probe.yaml:2: output.formats.1: 'pdf' is not allowed"),
        ("probing:\n  k: ten\n", "probing.k: Input should be a valid integer"),
        ("budget: 5\n", "probe.yaml:1: budget: Input should be a valid dictionary"),
    ],
)
def test_file_errors(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in error_of(write(tmp_path, text), env={})


def test_missing_config_file_and_bad_set_flag(tmp_path: Path) -> None:
    assert "cannot read config" in error_of(tmp_path / "absent.yaml", env={})
    with pytest.raises(ConfigError, match="is not KEY=VALUE"):
        parse_set("probing.k")
    assert parse_set("probing.band={low: 0.2, high: 0.7}").value == {"low": 0.2, "high": 0.7}
    assert parse_set("target.spec=python:a.py:f").value == "python:a.py:f"


# --- settings and wiring ------------------------------------------------------------------------------


def test_settings_from_the_probing_section(tmp_path: Path) -> None:
    path = write(tmp_path, """
        probing:
          k: 6
          sequential: off
          band: tool-r0
          concurrency: 3
          sampling: {temperature: 0.7, max_tokens: 64, stop: ["\\n\\n"]}
          max_candidates: null
          replay_scope: all
        shard: 2/3
    """)
    settings = build_settings(load_config(path, env={}))
    assert (settings.k, settings.sequential, settings.band) == (6, None, TOOL_R0_BAND)
    assert (settings.max_concurrent_cases, settings.max_candidates, settings.replay_scope) == (3, None, "all")
    assert (settings.sampling.temperature, settings.sampling.max_tokens, settings.sampling.stop) == (0.7, 64, ("\n\n",))
    assert settings.shard == Shard(2, 3)
    default = build_settings(load_config(None, env={}))
    assert default.band == AGENT0_BAND and default.sequential is not None
    assert default.sequential.confidence == 0.9 and default.k == 30
    custom = build_settings(load_config(None, [Override("probing.band", {"low": 0.2, "high": 0.6}, "--band")], env={}))
    assert (custom.band.low, custom.band.high) == (0.2, 0.6)


def test_gate_sections_default_to_failing_on_failures_for_probe_and_regressions_for_replay() -> None:
    config = load_config(None, [Override("replay.gate.max_flaky", 0, "--max-flaky 0")], env={})
    probe_gate, replay_gate = gate_thresholds(config.gate), gate_thresholds(config.replay.gate)
    assert (probe_gate.max_failures, probe_gate.max_regressions) == (0, 0)
    assert (replay_gate.max_failures, replay_gate.max_regressions, replay_gate.max_flaky) == (None, 0, 0)


def test_build_probe_wires_a_file_curriculum_and_a_python_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "prompt": "1 + 1?", "reference": "2"}) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_VERSION", "7")
    path = write(tmp_path, """
        target:
          spec: python:agent.py:answer
          options: {version: "${AGENT_VERSION}"}
        budget: {max_calls: 40}
        curriculum: {type: file, path: cases.jsonl}
        validation: {dedupe_threshold: null}
        store: st
    """)
    parts = build_probe(load_config(path, env={}))
    target, curriculum, settings, store, validator, judge = parts
    try:
        assert target.id == "python:agent.py:answer" and target.version().startswith("7+src.")  # type: ignore[attr-defined]
        assert target.snapshot().budget.max_calls == 40  # type: ignore[attr-defined]
        assert target.cache.path.resolve() == tmp_path / "st" / "cache" / "samples.sqlite3"  # type: ignore[attr-defined]
        assert curriculum is not None and len(curriculum) == 1  # type: ignore[arg-type]
        assert curriculum.name == "file:cases.jsonl"
        # the default validity judge (rules) is the validator's critic; no SAGE critic, no judge
        from frontier_qa.probing._validity import ValidityJudge

        assert isinstance(validator.critic, ValidityJudge) and validator.critic.name == "rules"
        assert (validator.critic.then, validator.dedupe_threshold, judge) == (None, None, None)
        assert store.root == Path("st") and settings.k == 30
        from frontier_qa.target import Sampling

        got = target.sample_sync(curriculum.proposals[0].case, 2, Sampling())  # type: ignore[attr-defined,union-attr]
        assert [t.text for t in got] == ["\\boxed{2}", "\\boxed{2}"]
    finally:
        import asyncio

        asyncio.run(parts.aclose())


def test_build_probe_errors_name_the_key_and_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)

    def build_error(text: str) -> str:
        with pytest.raises(ConfigError) as info:
            build_probe(load_config(write(tmp_path, text), env={}))
        return str(info.value)

    assert "probe.yaml: target.spec: no target to probe" in build_error("store: st\n")
    message = build_error("target:\n  spec: python:agent.py:answer\n  options: {api_key: '${NOT_SET_ANYWHERE}'}\n")
    assert "probe.yaml:3: target.options.api_key: refers to ${NOT_SET_ANYWHERE}, which is not set" in message
    message = build_error("target: python:agent.py:answer\ncurriculum:\n  type: file\n")
    assert "probe.yaml:3: curriculum.type: a file curriculum needs curriculum.path" in message
    message = build_error("target: python:agent.py:answer\ncurriculum:\n  type: trained\n  model: litellm:gpt-4o\n")
    assert "probe.yaml:4: curriculum.model.spec: 'litellm:gpt-4o' is not a trained checkpoint" in message
    # a bare checkpoint path is read as hf:PATH (the folder check fails before torch is imported)
    message = build_error("target: python:agent.py:answer\ncurriculum:\n  type: trained\n  model: ./ckpt\n")
    assert "probe.yaml:4: curriculum.model.spec: local model './ckpt'" in message
    message = build_error("target: python:nowhere.py:answer\n")
    assert "probe.yaml:1: target.spec: agent file" in message
    message = build_error("target: python:agent.py:answer\ncurriculum:\n  model: python:agent.py:answer\n"
                          "  domain: tools\n")
    assert "probe.yaml:4: curriculum.domain: the tools domain writes tasks for your tools, but none are given" in message
    assert "--tools FILE" in message
    message = build_error("target: python:agent.py:answer\ncurriculum:\n  model: python:agent.py:answer\n"
                          "  domain: tools\n  tools: absent.json\n")
    assert "probe.yaml:5: curriculum.tools: cannot read tools file absent.json" in message


def test_build_probe_wires_a_prompted_tool_curriculum_with_critic_and_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "writer.py").write_text(WRITER)
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    (tmp_path / "tools.yaml").write_text(f"tools:\n  - {json.dumps(tool)}\n")
    monkeypatch.chdir(tmp_path)
    path = writer_config(tmp_path, "domain: tools", "tools: tools.yaml", "topics: [weather]", rest="""\
        validation:
          critic: {spec: python:writer.py:write, threshold: 0.6}
        probing:
          judge: python:writer.py:write
          seed: 3
        store: st
    """)
    parts = build_probe(load_config(path, env={}))
    try:
        from frontier_qa.curricula._critic import SageCritic
        from frontier_qa.curricula._prompted import PromptedCurriculum

        assert isinstance(parts.curriculum, PromptedCurriculum)
        assert parts.curriculum.domain == "tools" and parts.curriculum.seed == 3
        assert [t["function"]["name"] for t in parts.curriculum.tools] == ["get_weather"]
        sage = parts.validator.critic.then  # type: ignore[union-attr]  # asked after the validity rules
        assert isinstance(sage, SageCritic) and sage.threshold == 0.6
        assert parts.judge is not None and parts.judge.id == "python:writer.py:write"
        # every model of the run spends from one budget
        assert parts.judge.budget is parts.target.budget  # type: ignore[attr-defined]
        assert parts.curriculum.model.budget is parts.target.budget  # type: ignore[attr-defined]
    finally:
        import asyncio

        asyncio.run(parts.aclose())


# --- schema and the documented example ------------------------------------------------------------------


def test_committed_schema_is_current_and_the_example_validates() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    committed = json.loads((REPO / "configs" / "probe.schema.json").read_text())
    assert committed == json.loads(json.dumps(json_schema())), "run: frontier-qa schema --out configs/probe.schema.json"
    import yaml

    example = yaml.safe_load((REPO / "configs" / "example.yaml").read_text())
    jsonschema.validate(example, committed)
    config = load_config(REPO / "configs" / "example.yaml", env={})
    assert config.curriculum.model is not None and config.curriculum.model.spec == "litellm:openai/gpt-4o"
    assert config.budget.max_cost_usd == 5.0
    # every key of the config appears in the documented example
    def keys(model: type, prefix: str = "") -> set[str]:
        from pydantic import BaseModel

        from frontier_qa.config._diagnostics import _models_in

        out = set()
        for name, field in model.model_fields.items():
            out.add(prefix + name)
            for sub in _models_in(field.annotation):
                if issubclass(sub, BaseModel) and sub.__name__ not in ("BandRange",):
                    out |= keys(sub, f"{prefix}{name}.")
        return out

    def present(data: object, prefix: str = "") -> set[str]:
        if not isinstance(data, dict):
            return set()
        return {prefix + k for k in data} | {p for k, v in data.items() for p in present(v, f"{prefix}{k}.")}

    documented = present(example)
    missing = {k for k in keys(ProbeConfig) if k not in documented
               and not k.startswith(("curriculum.model.", "validation.critic.", "validation.validity.model.",
                                                 "probing.judge.", "export.otel."))}
    assert not missing, f"configs/example.yaml does not show: {sorted(missing)}"


def test_build_probe_wires_a_few_shot_curriculum_with_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    few_shot_project(tmp_path, monkeypatch)
    path = writer_config(tmp_path, "style: few_shot", "examples: shots.jsonl",
                         rest="validation: {dedupe_threshold: 0.4}\nstore: st\n")
    parts = build_probe(load_config(path, env={}))
    try:
        from frontier_qa.curricula._few_shot import Example
        from frontier_qa.curricula._prompted import PromptedCurriculum

        assert isinstance(parts.curriculum, PromptedCurriculum)
        assert parts.curriculum.style == "few_shot" and parts.curriculum.dedupe_threshold == 0.4
        assert parts.curriculum.examples == (Example("How much is 7 * 8?", "56", "print(56)"),)
    finally:
        import asyncio

        asyncio.run(parts.aclose())
    (tmp_path / "bad.jsonl").write_text('{"answer": "56"}\n')
    bad = writer_config(tmp_path, "style: few_shot", "examples: bad.jsonl", name="bad.yaml")
    with pytest.raises(ConfigError) as info:
        build_probe(load_config(bad, env={}))
    assert "bad.yaml:5: curriculum.examples: bad.jsonl: few-shot example 0 needs a problem and an answer" in str(info.value)
    wrong = writer_config(tmp_path, "style: few_shot", "domain: open_ended", name="wrong.yaml")
    with pytest.raises(ConfigError) as info:
        build_probe(load_config(wrong, env={}))
    assert "wrong.yaml:4: curriculum.style: style 'few_shot' is not available for domain 'open_ended'" in str(info.value)


def test_the_embedded_default_config_validates() -> None:
    config = load_config(REPO / "configs" / "default.yaml", env={})
    assert config.target.spec == f"python:{REPO / 'examples' / 'agents' / 'smol_agent.py'}:solve"
    assert config.target.options["id"] == "python:examples/agents/smol_agent.py:solve"
    # task generators: every failure and frontier case has a computed reference (issue 29)
    assert config.curriculum.type == "generators"
    assert [g["use"] for g in config.curriculum.generators] == ["number_words"]  # type: ignore[index]
    # bounded by the work (the searches, calls), never by the clock: a loaded CI machine made the
    # 900 s wall budget end the README's main command with exit 3
    assert config.budget.max_wall_s is None and config.budget.max_calls is not None


def test_the_agent0_style_smol_curriculum_config_validates() -> None:
    config = load_config(REPO / "configs" / "smol-curriculum.yaml", env={})
    assert config.target.options["id"] == "python:examples/agents/smol_agent.py:solve"
    assert config.curriculum.model is not None and config.curriculum.model.spec == "hf:smollm2"
    assert config.curriculum.style == "few_shot" and config.curriculum.type == "prompted"
    assert config.budget.max_wall_s is None and config.probing.max_candidates is not None


def test_policies_are_chosen_by_name_and_tuned_by_keys(tmp_path: Path) -> None:
    from typing import get_args

    from frontier_qa.config import build_settings
    from frontier_qa.config._schema import ProbingConfig
    from frontier_qa.probing._sequential import POLICIES, MajorityPrior, fit_prior

    assert set(get_args(ProbingConfig.model_fields["policy"].annotation)) == set(POLICIES)
    default = build_settings(load_config(None, env={}))
    assert default.sequential == POLICIES["calibrated"].sequential and default.k == 30
    economy = build_settings(load_config(None, [Override("probing.policy", "economy", "--policy economy")], env={}))
    assert economy.sequential == POLICIES["economy"].sequential and economy.k == POLICIES["economy"].k
    fixed = build_settings(load_config(None, env={"FRONTIER_QA_PROBING__SEQUENTIAL": "false"}))
    assert fixed.sequential is None and fixed.k == 10
    tuned = build_settings(load_config(None, [Override("probing.confidence", 0.95, "--set"),
                                              Override("probing.k", 4, "--k 4")], env={}))
    assert tuned.sequential is not None and tuned.sequential.confidence == 0.95 and tuned.k == 4
    assert tuned.policy() is not None and tuned.policy().k_max == 4
    batched = build_settings(load_config(None, [Override("probing.rounds", [6], "--set")], env={}))
    assert batched.sequential is not None and batched.sequential.rounds == (6,)
    assert batched.sequential.k_min == POLICIES["calibrated"].sequential.k_min  # only the round sizes change
    with pytest.raises(ConfigError, match="probing.rounds"):
        build_settings(load_config(None, [Override("probing.rounds", [0], "--set")], env={}))
    prior = fit_prior([((3,), 0)] * 5)
    path = tmp_path / "prior.json"
    path.write_text(json.dumps(prior.to_json()))
    assert build_settings(load_config(None, [Override("probing.prior", str(path), "--set")], env={})).prior == prior
    path.write_text("{}")
    with pytest.raises(ConfigError, match="probing.prior: .*not a MajorityPrior"):
        build_settings(load_config(None, [Override("probing.prior", str(path), "--set")], env={}))
    assert isinstance(prior, MajorityPrior)
    path.write_bytes(b"\xff{}")  # not UTF-8: a usage error naming the key, never a UnicodeDecodeError
    with pytest.raises(ConfigError, match=r"probing.prior: .*prior\.json:1:1: the prior file is not UTF-8"):
        build_settings(load_config(None, [Override("probing.prior", str(path), "--set")], env={}))
    with pytest.raises(ConfigError, match="probing.prior: cannot read prior file .*missing.json"):
        build_settings(load_config(None, [Override("probing.prior", str(tmp_path / "missing.json"), "--set")], env={}))


def test_the_probing_section_states_no_setting_twice() -> None:
    # ProbeSettings is the one class of the probe settings; probing is its YAML spelling
    import inspect

    from frontier_qa.config._schema import SETTING_KEYS, ProbingConfig
    from frontier_qa.probing._settings import ProbeSettings

    section, settings = ProbingConfig.model_fields, ProbeSettings.__pydantic_fields__  # type: ignore[attr-defined]
    assert SETTING_KEYS["concurrency"] == "max_concurrent_cases"
    for key, name in SETTING_KEYS.items():  # a key with a setting's meaning is that setting
        mine, theirs = section[key], settings[name]
        assert (mine.default, mine.default_factory, mine.description, mine.metadata) == \
            (theirs.default, theirs.default_factory, theirs.description, theirs.metadata), key
    source = inspect.getsource(ProbingConfig)
    for key, name in SETTING_KEYS.items():  # written with setting(), never restated
        assert re.search(rf'^    {key}: [^=]+= setting\("{name}"\)(  #.*)?$', source, re.M), key
    spelt = {"k", "band", "sequential", "prior"}  # the same setting, spelt for the file (the policy's k, a preset ...)
    assert section["k"].description.startswith(settings["k"].description)  # k's own note: null is the policy's
    assert spelt <= set(section) - set(SETTING_KEYS) and spelt <= set(settings)
    own = set(section) - set(SETTING_KEYS) - spelt  # what only the file says: a policy and its numbers, a judge
    assert own == {"policy", "confidence", "confidence_out", "rounds", "judge"}
    elsewhere = {"shard", "regression", "baseline_samples"}  # other sections of the config
    python_only = {"prior_refit_every", "prior_smoothing", "judge_sampling", "seen_window", "max_text_chars",
                   "verdicts"}  # verdicts: export.otel makes one when the models open
    assert set(settings) == set(SETTING_KEYS.values()) | spelt | elsewhere | python_only


def test_the_names_a_config_accepts_are_the_tables_the_code_looks_them_up_in() -> None:
    # a Literal cannot be built from a dict for type checkers: this test keeps the two together
    from typing import get_args

    from frontier_qa.config._schema import ProbingConfig
    from frontier_qa.probing._sequential import DEFAULT_POLICY, POLICIES
    from frontier_qa.scoring.bands import NAMED_BANDS
    from frontier_qa.scoring.rewards import REWARD_PRESETS
    from frontier_qa.train.config import RewardSection

    policy = ProbingConfig.model_fields["policy"]
    assert get_args(policy.annotation) == tuple(POLICIES) and policy.default == DEFAULT_POLICY
    named_band, _custom = get_args(ProbingConfig.model_fields["band"].annotation)
    assert get_args(named_band) == tuple(NAMED_BANDS)
    assert get_args(RewardSection.__pydantic_fields__["preset"].annotation) == tuple(REWARD_PRESETS)
