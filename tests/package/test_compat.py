"""The module paths of 0.1 still import, for one release, each with exactly one DeprecationWarning."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from frontier_qa._compat import MOVED

# Every import the README of 0.1 documented, by old module path (names as listed there).
README_01 = {
    "frontier_qa.answers": ["extract_answer", "extract_boxed", "extract_final_answer", "extract_json_field"],
    "frontier_qa.equivalence": ["equivalent", "normalize", "Comparator"],
    "frontier_qa.consistency": ["self_consistency", "consistency_of"],
    "frontier_qa.semantic": ["semantic_consistency"],
    "frontier_qa.embedders": ["get_embedder"],
    "frontier_qa.contradiction": [],
    "frontier_qa.rewards": ["uncertainty_reward", "tool_reward", "tool_demand", "format_reward",
                            "parse_curriculum_output", "composite_reward", "score_curriculum_batch",
                            "curriculum_reward_func", "PAPER", "AGENT0_COMPAT"],
    "frontier_qa.repetition": ["repetition_penalty"],
    "frontier_qa.bands": ["in_band", "soft_band", "AGENT0_BAND", "TOOL_R0_BAND"],
    "frontier_qa.sandbox": ["Sandbox"],
    "frontier_qa.engine": ["ProbeSettings", "probe", "replay"],
    "frontier_qa.sequential": [],
}
# Paths that are packages now and keep their documented names without a warning.
STILL_VALID = {
    "frontier_qa.store": ["CaseStore", "import_suite", "export_suite"],
    "frontier_qa.runtime": ["open_target", "Limits", "Budget"],
    "frontier_qa.target": ["Case", "Sampling"],
    "frontier_qa.curricula": ["FileCurriculum"],
    "frontier_qa.curricula.prompted": ["PromptedCurriculum", "from_spec"],
    "frontier_qa.reports": ["write_reports", "GateThresholds"],
}

_PROBE = r"""
import importlib, json, sys, warnings
old_paths, valid = json.loads(sys.argv[1]), json.loads(sys.argv[2])
warnings.simplefilter("always")
out = {}
for old, names in {**old_paths, **valid}.items():
    with warnings.catch_warnings(record=True) as first:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
        values = [getattr(module, n) for n in names]
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        importlib.import_module(old)
        exec(f"from {old} import *" if not names else f"from {old} import {', '.join(names)}", {})
    out[old] = {
        "module": module.__name__,
        "same": all(v is getattr(sys.modules[module.__name__], n) for n, v in zip(names, values)),
        # only the finder's warnings: a dependency may warn about itself on first import
        "first": [(w.category.__name__, str(w.message)) for w in first if " moved to " in str(w.message)],
        "again": len([w for w in again if " moved to " in str(w.message)]),
    }
print(json.dumps(out))
"""


def _run(old_paths: dict[str, list[str]], valid: dict[str, list[str]]) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(old_paths), json.dumps(valid)],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_old_paths_import_the_new_modules_with_one_warning_each() -> None:
    old_paths = {old: README_01.get(old, []) for old in MOVED}
    assert set(README_01) <= set(old_paths), "every path the README of 0.1 documented has a mapping"
    result = _run(old_paths, STILL_VALID)
    for old, new in MOVED.items():
        seen = result[old]
        assert seen["module"] == new, (old, seen)
        assert seen["same"], old
        assert seen["first"] == [["DeprecationWarning", seen["first"][0][1]]], (old, seen["first"])
        assert f"{old} moved to {new}" in seen["first"][0][1]
        assert seen["again"] == 0, f"{old} warned again on a second import"
    for path in STILL_VALID:
        assert result[path]["first"] == [] and result[path]["module"] == path, (path, result[path])


def test_the_mapping_points_from_nothing_to_something() -> None:
    """An old name is no real module any more (the finder is asked last), and each new one exists."""
    for old, new in MOVED.items():
        assert importlib.util.find_spec(new) is not None, new
        parent, _, leaf = old.rpartition(".")
        package = sys.modules.get(parent) or importlib.import_module(parent)
        assert not any((Path(p) / f"{leaf}.py").exists() or (Path(p) / leaf).is_dir() for p in package.__path__), old


def test_renamed_names_warn_and_are_the_same_object() -> None:
    """The replay verdict was ``Verdict`` like the band verdict; the old names still work, with a warning."""
    import frontier_qa.reports as reports
    from frontier_qa.probing import sequential
    from frontier_qa.store import comparison
    from frontier_qa.train import pool

    for module, old, new in ((comparison, "Verdict", "RegressionVerdict"), (reports, "Verdict", "RegressionVerdict"),
                             (sequential, "Verdict", "BandVerdict"), (sequential, "AGENT0_BAND", "AGENT0_LIMITS"),
                             (pool, "in_band", "keep_task")):
        with pytest.warns(DeprecationWarning, match=f"{old} is now .*{new}"):
            assert getattr(module, old) is getattr(module, new)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        comparison.Nope  # noqa: B018
    from frontier_qa.scoring.bands import AGENT0_BAND

    assert sequential.AGENT0_LIMITS == (AGENT0_BAND.low, AGENT0_BAND.high) == (0.3, 0.8)
