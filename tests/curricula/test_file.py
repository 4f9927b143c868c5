"""The file curriculum: flat JSONL/YAML rows and exported suites, end to end through the engine."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from frontier_qa.curricula import FileCurriculum, StaticCurriculum, read_proposals
from frontier_qa.errors import ConfigError
from frontier_qa.probing._curriculum_seam import Curriculum, Outcome
from frontier_qa.probing._engine import ProbeSettings, case_id_for, probe
from frontier_qa.probing._verify import TRUSTED_KEY
from frontier_qa.store._case_store import CaseStore
from frontier_qa.store._records import CaseClass
from frontier_qa.store._suites import export_suite
from frontier_qa.testing import ScriptedAdapter, always, open_scripted

TOOLS = [{"type": "function", "function": {"name": "book", "parameters": {
    "type": "object", "properties": {"place": {"type": "string"}, "people": {"type": "integer"}},
    "required": ["place", "people"]}}}]  # fmt: skip


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_flat_rows_with_every_field_and_the_aliases(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", [
        {"id": "add", "prompt": "What is 17 + 25?", "reference": 42, "topic": "arithmetic",
         "solution": "print(17 + 25)", "predicted_pass_rate": 0.9, "metadata": {"level": 1}},
        {"question": "Which day follows Friday?", "answer": "Saturday", "reference_verified": True,
         "system": "Answer in one word.", "answer_format": "final_answer"},
        {"prompt": "Book Luigi for 4 people.", "tools": TOOLS, "answer_format": "json:answer",
         "gold_calls": [{"name": "book", "arguments": {"place": "Luigi", "people": 4}}]},
    ])  # fmt: skip
    add, day, book = read_proposals(path)
    assert add.case.id == "add" and add.case.reference == "42" and add.case.topic == "arithmetic"
    assert add.solution == "print(17 + 25)" and add.predicted_pass_rate == 0.9
    assert add.case.metadata == {"level": 1} and add.source == "file:cases.jsonl"
    assert day.case.reference == "Saturday" and day.case.metadata[TRUSTED_KEY] is True
    assert day.case.system == "Answer in one word." and day.case.answer_format == "final_answer"
    assert day.case.id == case_id_for(day.case)  # no id: a stable hash of the task
    assert book.case.tools[0]["function"]["name"] == "book" and book.gold_calls[0]["arguments"]["people"] == 4
    assert book.case.topic == "general" and book.case.answer_format == "json:answer"
    assert json.loads(add.raw or "{}")["id"] == "add"


def test_yaml_rows_read_the_same(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text("- id: a\n  prompt: |\n    What is 2 + 2?\n    Think first.\n  answer: 4\n"
                    "- prompt: Name a prime above 10.\n  topic: primes\n", encoding="utf-8")
    a, b = read_proposals(path)
    assert a.case.prompt == "What is 2 + 2?\nThink first.\n" and a.case.reference == "4"
    assert b.case.topic == "primes" and b.case.reference is None


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"prompt": "x", "colour": "red"}], r"cases.jsonl:1: unknown field\(s\) 'colour'"),
        ([{"prompt": "x"}, {"topic": "t"}], r"cases.jsonl:2: missing 'question'"),
        ([{"prompt": ["x"]}], r"'prompt' must be a string, not list"),
        ([{"prompt": "x", "reference_verified": True}], "there is no reference"),
        ([{"prompt": "x", "predicted_pass_rate": 2}], r"not in \[0, 1\]"),
        ([{"prompt": "x", "tools": {"name": "t"}}], "'tools' must be a list of objects"),
        ([{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}], r"case id 'a' already used at .*cases.jsonl:1"),
        ([{"case": {"prompt": "no id"}}], r"case.id: Field required"),
        (["just text"], "a row must be an object"),
    ],
)
def test_bad_rows_say_file_line_and_fix(tmp_path: Path, rows: list[object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        read_proposals(write_jsonl(tmp_path / "cases.jsonl", rows))
    assert info.value.hint


def test_unreadable_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read cases"):
        read_proposals(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"prompt": "x"}\n{oops\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: not JSON"):
        read_proposals(tmp_path / "bad.jsonl")
    (tmp_path / "cases.csv").write_text("prompt\nx\n")
    with pytest.raises(ConfigError, match="name it"):
        read_proposals(tmp_path / "cases.csv")
    (tmp_path / "map.yaml").write_text("prompt: x\n")
    with pytest.raises(ConfigError, match="must be a YAML list"):
        read_proposals(tmp_path / "map.yaml")


def test_proposes_in_batches_until_exhausted_and_keeps_outcomes(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", [{"id": f"c{i}", "prompt": f"Task number {i}?"} for i in range(5)])
    cur = FileCurriculum(path)
    assert isinstance(cur, Curriculum) and cur.name == "file:cases.jsonl" and len(cur) == 5

    async def drain() -> list[list[str]]:
        out = []
        while batch := await cur.propose(2):
            out.append([p.case.id for p in batch])
        return out

    assert asyncio.run(drain()) == [["c0", "c1"], ["c2", "c3"], ["c4"]]
    cur.observe([Outcome(cur.proposals[0], "frontier", 0.5, "7")])
    assert cur.history.recent("frontier")[0].majority == "7"
    shuffled = [p.case.id for p in FileCurriculum(path, shuffle=True, seed=3).proposals]
    assert sorted(shuffled) == [f"c{i}" for i in range(5)] and shuffled == [
        p.case.id for p in FileCurriculum(path, shuffle=True, seed=3).proposals]
    assert len(StaticCurriculum(cur.proposals, limit=2)) == 2


def test_exported_suite_round_trips_and_keeps_verification(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", [
        {"id": "solved", "prompt": "What is 6 times 7?", "reference": "42", "solution": "print(6 * 7)"},
        {"id": "claimed", "prompt": "What is 5 times 9?", "reference": "45"},
        {"id": "gold", "prompt": "What is 3 times 3?", "reference": "9", "reference_verified": True},
    ])  # fmt: skip
    store = CaseStore(tmp_path / "store")
    target = open_scripted(ScriptedAdapter(always("0")))
    settings = ProbeSettings(replay_first=False)
    first = asyncio.run(probe(target, FileCurriculum(path), settings, store=store))
    classes = {r.id: r.case_class for r in first.records}
    # a stable wrong answer: failure against verified references, suspect against a claim
    assert classes == {"solved": CaseClass.FAILURE, "claimed": CaseClass.SUSPECT, "gold": CaseClass.FAILURE}
    for suffix in ("jsonl", "yaml"):
        suite = tmp_path / f"suite.{suffix}"
        export_suite(first.records, suite)
        back = {p.case.id: p for p in read_proposals(suite)}
        assert back["solved"].solution == "print(6 * 7)" and back["solved"].case.metadata[TRUSTED_KEY] is True
        assert TRUSTED_KEY not in back["claimed"].case.metadata and back["claimed"].case.reference == "45"
        assert back["gold"].case.metadata[TRUSTED_KEY] is True and back["gold"].source == f"file:suite.{suffix}"
        again = asyncio.run(probe(target, FileCurriculum(suite), settings, store=CaseStore(tmp_path / suffix)))
        assert {r.id: r.case_class for r in again.records} == classes
