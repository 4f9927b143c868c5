"""Agent0's settings: one table (``frontier_qa/train/_agent0_settings.py``) against the configs, the code and the docs.

Every constant frontier-qa attributes to Agent0 must agree with the table:

* each key the table names holds the table's value (``configs/train/curriculum-agent0.yaml``,
  ``configs/coevolve/agent0.yaml``, constants in the code);
* every ``# Agent0: value`` (or "Agent0's value") comment in ``configs/`` states the table's value
  for the key on its line;
* the docs print the table itself (docs/how-to/coevolution.md), between its ``paper-settings`` markers.
"""

from __future__ import annotations

import importlib
import math
import re
from pathlib import Path
from typing import Any

import pytest

from frontier_qa.train import _agent0_settings as paper
from frontier_qa.train._coevolve_config import load_coevolve_config
from frontier_qa.train.config import load_train_config

REPO = Path(__file__).resolve().parents[2]
FILES = {"train": REPO / "configs/train/curriculum-agent0.yaml", "coevolve": REPO / "configs/coevolve/agent0.yaml"}
# which namespace of the table a config file's keys belong to
NAMESPACE = {"configs/train/curriculum-agent0.yaml": "train", "configs/train/curriculum-cpu.yaml": "train",
             "configs/coevolve/agent0.yaml": "coevolve", "configs/coevolve/cpu.yaml": "coevolve"}
CLAIM = re.compile(r"Agent0(?:'s)?:?\s+(\[[^\]]*\]|-?\d[\d.]*(?:e-?\d+)?)")


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
    return obj


@pytest.fixture(scope="module")
def configs() -> dict[str, dict]:
    return {"train": load_train_config(FILES["train"]).model_dump(),
            "coevolve": load_coevolve_config(FILES["coevolve"]).model_dump()}


def _value(key: str, configs: dict[str, dict]) -> Any:
    space, _, rest = key.partition(":")
    if space == "python":
        module, _, name = rest.partition(":")
        return _get(importlib.import_module(module), name)
    if "/" in rest:
        top, bottom = rest.split("/")
        prefix = top.rsplit(".", 2)[0] + "." if top.startswith("curriculum.") and not bottom.startswith("curriculum.") \
            else ""
        return _get(configs[space], top) / _get(configs[space], prefix + bottom)
    return _get(configs[space], rest)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return math.isclose(float(a), float(b), rel_tol=1e-9)


@pytest.mark.parametrize("setting", paper.SETTINGS, ids=lambda s: f"{s.agent}: {s.what}")
def test_every_key_holds_the_tables_value(setting: paper.Setting, configs: dict[str, dict]) -> None:
    for key in setting.keys:
        assert _same(_value(key, configs), setting.value), f"{key} = {_value(key, configs)!r}, table: {setting.value!r}"


def _claims(path: Path) -> list[tuple[int, str, str]]:
    """``(line, dotted key, claimed value)`` for every Agent0 value stated in a YAML comment."""
    stack: list[tuple[int, str]] = []
    out = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = re.match(r"^(\s*)([A-Za-z_][\w]*):", line)
        if match:
            indent = len(match.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, match.group(2)))
        comment = line.partition("#")[2]
        claim = CLAIM.search(comment)
        if match and claim:
            out.append((number, ".".join(k for _, k in stack), claim.group(1)))
    return out


@pytest.mark.parametrize("relative", sorted(NAMESPACE))
def test_every_agent0_value_in_a_config_comment_is_the_tables(relative: str) -> None:
    claims = _claims(REPO / relative)
    assert claims  # the parser finds them
    for number, key, claimed in claims:
        setting = paper.for_key(f"{NAMESPACE[relative]}:{key}")
        assert setting is not None, f"{relative}:{number}: {key} claims Agent0 {claimed}, the table has no such key"
        value = [float(x) for x in claimed.strip("[]").split(",")] if claimed.startswith("[") else float(claimed)
        assert _same(value, setting.value), f"{relative}:{number}: {key} claims {claimed}, table {setting.value}"


def test_the_docs_print_the_table() -> None:
    readme = (REPO / "docs" / "how-to" / "coevolution.md").read_text()
    block = re.search(r"<!-- paper-settings -->\n(.*?)\n<!-- /paper-settings -->", readme, re.DOTALL)
    assert block, "docs/how-to/coevolution.md needs the table between <!-- paper-settings --> markers"
    assert block.group(1).strip() == paper.markdown(), "regenerate it: python -c 'from frontier_qa.train._agent0_settings " \
                                                        "import markdown; print(markdown())'"


def test_the_comment_parser_reads_keys_and_values(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a:\n  b:\n    c: 2   # Agent0: 40\n  d: 1e-4  # Agent0's 1e-6 is for full fine-tuning\n"
                    "e: [1, 2]  # Agent0: [0.3, 0.8]\nf: 3  # Agent0 Table 7\n")
    assert _claims(path) == [(3, "a.b.c", "40"), (4, "a.d", "1e-6"), (5, "e", "[0.3, 0.8]")]
