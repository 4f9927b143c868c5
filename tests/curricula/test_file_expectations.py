"""Trajectory expectations written in a cases file (JSONL, YAML, an exported suite): read, checked, kept."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from frontier_qa._expectations import EXPECT_BASE_KEY, expectations_from
from frontier_qa.curricula import FileCurriculum, read_proposals
from frontier_qa.errors import ConfigError
from frontier_qa.probing._engine import ProbeSettings, probe
from frontier_qa.scoring._paths import PathView, ToolUse, expectation_misses
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._inputs import recorded_hash
from frontier_qa.store._suites import export_suite, import_suite
from frontier_qa.target import Expectations, ToolArguments
from frontier_qa.testing import ScriptedAdapter, always, open_scripted

CHECKS = "def is_city(arguments):\n    return str(arguments.get('city', '')).istitle()\n"
EXPECT = {
    "tools_used": ["weather"], "tools_not_used": ["delete_account"], "tool_sequence": ["geocode", "weather"],
    "order": "strict", "max_steps": 4,
    "arguments": [{"tool": "weather", "arguments": {"units": "metric"}},
                  {"tool": "geocode", "arguments": {"city": "Paris"}, "match": "exact"},
                  {"tool": "geocode", "check": "checks.py:is_city"}],
}  # fmt: skip


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def cases_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "checks.py").write_text(CHECKS, encoding="utf-8")
    return folder


def test_every_key_is_read_from_jsonl_and_yaml_alike(tmp_path: Path) -> None:
    folder = cases_dir(tmp_path)
    jsonl = write_jsonl(folder / "cases.jsonl", [{"id": "w", "prompt": "Weather in Paris?", "expect": EXPECT}])
    yaml_file = folder / "cases.yaml"
    yaml_file.write_text(
        "- id: w\n  prompt: Weather in Paris?\n  expect:\n    tools_used: weather\n"  # a lone name: a list of one
        "    tools_not_used: [delete_account]\n    tool_sequence: [geocode, weather]\n    order: strict\n"
        "    max_steps: 4\n    arguments:\n      - {tool: weather, arguments: {units: metric}}\n"
        "      - {tool: geocode, arguments: {city: Paris}, match: exact}\n"
        "      - {tool: geocode, check: 'checks.py:is_city'}\n", encoding="utf-8")
    (a,), (b,) = read_proposals(jsonl), read_proposals(yaml_file)
    assert a.case.expect == b.case.expect == Expectations(
        tools_used=("weather",), tools_not_used=("delete_account",), tool_sequence=("geocode", "weather"),
        order="strict", max_steps=4,
        arguments=(ToolArguments(tool="weather", arguments={"units": "metric"}),
                   ToolArguments(tool="geocode", arguments={"city": "Paris"}, match="exact"),
                   ToolArguments(tool="geocode", check="checks.py:is_city")))
    # the relative check file is found next to the cases file, wherever the probe runs from
    assert a.case.metadata == b.case.metadata == {EXPECT_BASE_KEY: str(folder)}
    base = a.case.metadata[EXPECT_BASE_KEY]
    right = PathView((ToolUse("geocode", '{"city": "Paris"}'), ToolUse("weather", '{"units": "metric", "d": 1}')), 3)
    assert expectation_misses(right, a.case.expect, base=base) == ()
    lower = PathView((ToolUse("geocode", '{"city": "paris"}'), ToolUse("weather", '{"units": "metric"}')), 2)
    assert expectation_misses(lower, a.case.expect, base=base) == (  # the check file was found and ran
        'geocode arguments {"city": "paris"} fail exact of {"city": "Paris"}',
        'geocode arguments {"city": "paris"} fail check checks.py:is_city')


def test_a_case_without_a_relative_check_file_carries_no_base(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", [
        {"id": "a", "prompt": "x", "expect": {"tools_used": ["search"], "arguments": [
            {"tool": "search", "check": "json:loads"}]}},  # a module on the Python path: no file to find
        {"id": "b", "prompt": "y", "expect": {}},  # expects nothing: no expectations at all
        {"id": "c", "prompt": "z"},
    ])  # fmt: skip
    a, b, c = read_proposals(path)
    assert a.case.expect is not None and a.case.metadata == {}
    assert b.case.expect is None and c.case.expect is None


@pytest.mark.parametrize(
    ("expect", "message", "fix"),
    [
        ({"tool_used": ["search"]}, r"cases.jsonl:2: expect.tool_used: unknown key", "did you mean 'tools_used'?"),
        ({"order": "inorder", "tool_sequence": ["a"]}, r"cases.jsonl:2: expect.order = 'inorder' is not allowed",
         "did you mean 'in_order'?"),
        ({"arguments": [{"tool": "a", "mach": "exact"}]}, r"expect.arguments\[0\].mach: unknown key",
         "did you mean 'match'?"),
        ({"arguments": [{"tool": "a", "match": "exakt"}]}, r"expect.arguments\[0\].match = 'exakt'",
         "did you mean 'exact'?"),
        ({"arguments": {"search": {"q": "x"}}}, r"expect.arguments: Input should be a list", "arguments: \\[\\{tool"),
        ({"max_steps": 0}, r"expect.max_steps = 0", "whole number >= 1"),
        (["search"], "expect must be a mapping", "tools_used: \\[search\\]"),
        ({"arguments": [{"tool": "a", "check": "no_function_here"}]}, r"check = 'no_function_here' is not",
         "checks.py:is_city"),
        ({"arguments": [{"tool": "a", "check": "missing.py:fn"}]}, r"cases.jsonl:2: expect.arguments\[0\].check: "
         r"argument check 'missing.py:fn': no file .*missing.py", "relative to the cases file"),
    ],
)
def test_a_bad_expectation_names_the_row_the_key_and_the_fix(tmp_path: Path, expect: object, message: str,
                                                            fix: str) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", [{"prompt": "fine"}, {"prompt": "x", "expect": expect}])
    with pytest.raises(ConfigError, match=message) as info:
        read_proposals(path)
    assert info.value.hint is not None
    assert __import__("re").search(fix, info.value.hint), info.value.hint


def test_the_same_reader_serves_every_way_in() -> None:
    given = Expectations(tools_used=("a",))
    assert expectations_from(given, "x") is given and expectations_from(None, "x") is None
    assert expectations_from({"tools_used": "a"}, "x") == given
    assert expectations_from(Expectations(), "x") is None  # nothing expected: no expectations


def test_moving_the_cases_file_changes_no_case(tmp_path: Path) -> None:
    folder = cases_dir(tmp_path)
    row = {"id": "w", "prompt": "Weather?", "expect": {"arguments": [{"tool": "g", "check": "checks.py:is_city"}]}}
    (here,) = read_proposals(write_jsonl(folder / "cases.jsonl", [row]))
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    (there,) = read_proposals(moved / "cases.jsonl")
    assert here.case.metadata[EXPECT_BASE_KEY] != there.case.metadata[EXPECT_BASE_KEY]
    assert recorded_hash(here.case) == recorded_hash(there.case)


def test_an_exported_suite_keeps_the_expectations_and_finds_their_check(tmp_path: Path) -> None:
    folder = cases_dir(tmp_path)
    cases = write_jsonl(folder / "cases.jsonl", [
        {"id": "w", "prompt": "Weather in Paris?", "reference": "sunny", "expect": EXPECT},
        {"id": "plain", "prompt": "What is 2 + 2?", "reference": "4"},
    ])  # fmt: skip
    target = open_scripted(ScriptedAdapter(always("sunny")))
    settings = ProbeSettings(replay_first=False, k=4)
    first = asyncio.run(probe(target, FileCurriculum(cases), settings, store=CaseStore(tmp_path / "store")))
    recorded = {r.id: r.case for r in first.records}
    assert recorded["w"].expect == read_proposals(cases)[0].case.expect and recorded["plain"].expect is None
    for suffix in ("jsonl", "yaml"):
        suite = tmp_path / "exported" / f"suite.{suffix}"
        export_suite(first.records, suite)
        back = {p.case.id: p.case for p in read_proposals(suite)}
        assert back["w"].expect == recorded["w"].expect and back["plain"].expect is None
        assert back["w"].metadata[EXPECT_BASE_KEY] == str(folder)  # the check is still where it was written
        again = asyncio.run(probe(target, FileCurriculum(suite), settings, store=CaseStore(tmp_path / suffix)))
        assert {r.id: r.case.expect for r in again.records} == {"w": recorded["w"].expect, "plain": None}
    # the committed file says where the check is relative to itself: a checkout elsewhere finds it there
    suite = tmp_path / "exported" / "suite.jsonl"
    assert {e["case"]["metadata"].get(EXPECT_BASE_KEY) for e in map(json.loads, suite.read_text().splitlines())} == {
        "../suite", None}
    assert {e.case.id: e.case.metadata.get(EXPECT_BASE_KEY) for e in import_suite(suite)} == {
        "w": str(folder), "plain": None}
    clone = tmp_path / "clone"
    shutil.copytree(tmp_path / "exported", clone / "exported")
    shutil.copytree(folder, clone / "suite")
    (w,) = [p.case for p in read_proposals(clone / "exported" / "suite.jsonl") if p.case.id == "w"]
    assert w.metadata[EXPECT_BASE_KEY] == str(clone / "suite")
    # a suite whose check folder is gone: the check is looked for next to the suite file
    shutil.move(str(clone / "suite" / "checks.py"), clone / "exported" / "checks.py")
    shutil.rmtree(clone / "suite")
    (w,) = [p.case for p in read_proposals(clone / "exported" / "suite.jsonl") if p.case.id == "w"]
    assert w.metadata[EXPECT_BASE_KEY] == str(clone / "exported")
