"""A suite named by keyword arguments, as ``@pytest.mark.frontier(...)`` names it: each checked and
turned into a layer of the probe configuration.

Most keywords are keys of the ``frontier-qa probe`` configuration (:mod:`frontier_qa.config`), so
they are checked by the same code and a bad value is reported with the key, the keyword that set
it and the fix. Relative paths (the ``python:`` agent file of ``target=``, cases files, config,
tools, suite, and ``set=`` keys naming files or the store) are relative to ``base`` (the pytest
plugin passes the folder of the marked test's file, wherever pytest is started from, the way
Python imports resolve against the module); they are made absolute here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_qa._expectations import expectations_from
from frontier_qa.config._layers import Override, python_file
from frontier_qa.curricula._file import find_checks
from frontier_qa.curricula._spec import DOMAINS
from frontier_qa.errors import ConfigError, closest_name
from frontier_qa.scoring.bands import AGENT0_BAND
from frontier_qa.store._records import CLASS_ORDER, CaseClass
from frontier_qa.target import Expectations

DEFAULT_CLASSES = ("failure", "suspect", "frontier")
"""Cases that become test items by default (what ``frontier-qa export`` commits)."""

# marker argument -> what it is (for "did you mean" and the error messages)
KEYWORDS: dict[str, str] = {
    "target": "target spec, e.g. 'python:agent.py:run', 'litellm:openai/gpt-4o-mini', 'hf:smollm2'",
    "target_options": "adapter options, e.g. {'agent_kwargs': {...}, 'id': 'my-agent'}",
    "curriculum": "cases file (*.jsonl / *.yaml), 'prompted:MODEL_SPEC', 'trained:CHECKPOINT', "
                  "a Curriculum object, or a function returning one",
    "generator": "task generator(s) searched for where the agent's ability ends: a name ('arithmetic'), "
                 "'file.py:name', a Generator, a {'use': ..., 'knobs': {...}} entry, or a list of these",
    "domain": "prompted curriculum domain: " + ", ".join(DOMAINS),
    "topics": "topics for a prompted curriculum (a string or a list)",
    "agent_description": "what the agent does (workflow domain)",
    "tools": "JSON/YAML file of OpenAI tool schemas (tools domain)",
    "k": "samples per case: exactly k with sequential=False, else the cap (too low a cap warns)",
    "band": "frontier band: 'agent0', 'tool-r0', 'LOW:HIGH' or (low, high)",
    "seed": "the probe seed",
    "sequential": "stop sampling a case once its band is clear (default True)",
    "budget_calls": "most model calls (per test function and process)",
    "budget_tokens": "most tokens",
    "max_cost_usd": "most US dollars",
    "max_candidates": "most proposals considered when generating",
    "judge": "judge model spec for stable answers without a verified reference",
    "config": "a frontier-qa YAML config file",
    "set": "any other config keys, e.g. {'probing.concurrency': 2}",
    "name": "the suite's name in the store (default: the test's node id)",
    "classes": f"case classes that become test items (default {list(DEFAULT_CLASSES)})",
    "guards": "pass cases kept as guard items, spread over topics (default replay.guards: 10; 0: none)",
    "suite": "a committed suite file (*.yaml / *.jsonl): replayed too, and updated when generating",
    "expect": "trajectory expectations for every case that has none: an Expectations or a dict, e.g. "
              "{'tools_used': ['search'], 'tools_not_used': ['delete_account'], 'max_steps': 6}",
}

# marker arguments that are plain config keys
_KEYS = {
    "target": "target.spec", "target_options": "target.options", "domain": "curriculum.domain",
    "agent_description": "curriculum.agent_description", "k": "probing.k", "seed": "probing.seed",
    "sequential": "probing.sequential", "budget_calls": "budget.max_calls", "budget_tokens": "budget.max_tokens",
    "max_cost_usd": "budget.max_cost_usd", "max_candidates": "probing.max_candidates", "judge": "probing.judge.spec",
}  # fmt: skip
_CASE_FILES = (".jsonl", ".json", ".ndjson", ".yaml", ".yml")
# set= keys that name a file or folder: resolved against the test file's folder like the arguments
_PATH_KEYS = frozenset({"store", "curriculum.path", "curriculum.tools", "replay.suite"})


def absolute_target(spec: str, base: Path) -> str:
    """An agent file spec (``python:path/to/agent.py:attr``, ``openai-agents:path/agent.py:agent``...)
    with its file made absolute against ``base``.

    Other specs (``python:package.module:attr``, ``litellm:...``, ``hf:...``) are returned as
    they are: a module name is found on ``sys.path``, a model name is not a path.
    """
    kind = spec.partition(":")[0]
    agent = python_file(spec)
    if agent is None:
        return spec
    path = Path(agent[0]).expanduser()
    # normalised: "../agent.py" from tests/ is named python:agent.py:run, as the CLI names it
    return spec if path.is_absolute() else f"{kind}:{os.path.normpath(base / path)}:{agent[1]}"


def target_label(spec: str, root: Path) -> str:
    """How an agent file spec (``python:``, a framework's) is named in records and reports: its file relative to the
    rootdir (``python:agent.py:run``), the same on every machine and from every directory.
    """
    kind = spec.partition(":")[0]
    agent = python_file(spec)
    if agent is None or not Path(agent[0]).is_absolute():
        return spec
    module_ref, attr = agent
    try:
        return f"{kind}:{Path(module_ref).relative_to(root).as_posix()}:{attr}"
    except ValueError:
        return spec


@dataclass(frozen=True)
class SuiteSpec:
    """A checked ``@pytest.mark.frontier``.

    Attributes:
        name: the suite's name: cases found for it are tagged with it in the store.
        where: the node id of the marked test function (for messages).
        overrides: the marker's config values, as a config layer.
        config_path: the YAML config named by ``config=``, absolute.
        curriculum: a curriculum object or factory given to the marker (``None`` for a spec).
        names_curriculum: whether the marker names a curriculum at all.
        classes: case classes that become test items.
        guards: pass cases kept as guard items (``None``: the config's ``replay.guards``).
        suite_file: a committed suite file, absolute.
        fingerprint: equal for equal arguments (two tests may share a suite name only then).
        expect: the trajectory expectations given to every case of the suite that has none.
        base: the folder relative paths start from (a relative check file of ``expect``).
    """

    name: str
    where: str
    overrides: tuple[Override, ...]
    config_path: str | None
    curriculum: Any
    names_curriculum: bool
    classes: tuple[str, ...]
    suite_file: str | None
    fingerprint: str
    guards: int | None = None
    expect: Expectations | None = None
    base: str | None = None


def _bad(where: str, message: str, fix: str) -> ConfigError:
    return ConfigError(f"@pytest.mark.frontier on {where}: {message}", hint=fix)


def _path(value: Any, arg: str, where: str, base: Path, suffixes: tuple[str, ...] = ()) -> str:
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise _bad(where, f"{arg}={value!r} is not a path", f"write {arg}='path/to/file'")
    path = Path(value).expanduser()
    if suffixes and path.suffix.lower() not in suffixes:
        raise _bad(where, f"{arg}={str(value)!r} is not a {'/'.join(suffixes)} file",
                   f"name the file *{suffixes[0]} (or {', '.join(suffixes[1:])})")
    return str(path if path.is_absolute() else os.path.normpath(base / path))


def _band(value: Any, where: str) -> Any:
    if value in ("agent0", "tool-r0"):
        return value
    pair: Any = value
    if isinstance(value, str) and ":" in value:
        pair = value.split(":", 1)
    if isinstance(pair, (tuple, list)) and len(pair) == 2:
        try:
            return {"low": float(pair[0]), "high": float(pair[1])}
        except (TypeError, ValueError):
            pass
    lo, hi = AGENT0_BAND.limits
    raise _bad(where, f"band={value!r} is not understood",
               f"write band='agent0', 'tool-r0', '{lo}:{hi}' or ({lo}, {hi})")


def _curriculum(value: Any, label: str, where: str, base: Path) -> tuple[list[Override], Any]:
    """A curriculum spec as config keys (the CLI's ``--curriculum`` forms), or an object."""
    if not isinstance(value, str):
        if hasattr(value, "propose") and hasattr(value, "observe"):
            return [], value
        if callable(value):
            return [], value  # a factory: called only when cases are generated
        raise _bad(where, f"curriculum={value!r} is neither a spec, a Curriculum nor a function returning one",
                   f"pass {KEYWORDS['curriculum']}")
    kind, sep, rest = value.partition(":")
    if sep and kind in ("prompted", "trained") and rest:
        return [Override("curriculum.type", kind, label), Override("curriculum.model.spec", rest, label)], None
    path = rest if sep and kind == "file" and rest else value
    if Path(path).suffix.lower() not in _CASE_FILES:
        raise _bad(where, f"curriculum={value!r} is not understood", f"pass {KEYWORDS['curriculum']}")
    full = _path(path, "curriculum", where, base)
    return [Override("curriculum.type", "file", label), Override("curriculum.path", full, label)], None


def _generators(value: Any, label: str, where: str, base: Path) -> list[Override]:
    """``generator=`` as config keys: ``curriculum.type: generators`` and its entries (a Generator
    object by its registered name, a file made absolute against ``base``).
    """
    from frontier_qa.generators._core import Generator, add

    def entry(one: Any) -> Any:
        if isinstance(one, Generator):
            add(one)  # by name: a case's check is found through the registry
            return one.name
        if isinstance(one, str) and one.strip():
            ref, colon, attr = one.rpartition(":")
            if colon and (ref.endswith(".py") or "/" in ref) and not Path(ref).expanduser().is_absolute():
                return f"{os.path.normpath(base / ref)}:{attr}"
            return one
        if isinstance(one, Mapping) and "use" in one:
            return {**one, "use": entry(one["use"])}
        raise _bad(where, f"generator={one!r} is not understood", f"pass {KEYWORDS['generator']}")

    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise _bad(where, "generator=[] names no generator", "write generator='arithmetic'")
    return [Override("curriculum.type", "generators", label), Override("curriculum.generators",
                                                                       [entry(v) for v in items], label)]


def _fingerprint(kwargs: Mapping[str, Any]) -> str:
    def plain(value: Any) -> str:
        if isinstance(value, (str, int, float, bool, type(None))):
            return repr(value)
        if isinstance(value, Mapping):
            pairs = sorted(value.items(), key=lambda kv: str(kv[0]))
            return "{" + ",".join(f"{k!r}:{plain(v)}" for k, v in pairs) + "}"
        if isinstance(value, (list, tuple)):
            return "[" + ",".join(plain(v) for v in value) + "]"
        return f"<{type(value).__qualname__}@{id(value):x}>"

    return hashlib.sha256(plain(dict(kwargs)).encode()).hexdigest()


def parse_suite(args: tuple[Any, ...], kwargs: Mapping[str, Any], where: str, base: Path) -> SuiteSpec:
    """Check a suite's keyword arguments (a marker's) and turn them into a :class:`SuiteSpec`.

    Args:
        args: the marker's positional arguments (none are allowed).
        kwargs: its keyword arguments (see :data:`KEYWORDS`).
        where: the marked test function's node id.
        base: the directory relative paths are resolved against (the test file's folder).

    Raises:
        ConfigError: an unknown argument, a value of the wrong kind; says which and the fix.
    """
    if args:
        raise _bad(where, f"positional argument(s) {args!r}",
                   "pass keyword arguments, e.g. frontier(target='python:agent.py:run')")
    unknown = sorted(set(kwargs) - set(KEYWORDS))
    if unknown:
        close = closest_name(unknown[0], KEYWORDS)
        fix = f"did you mean {close}=?" if close else f"known arguments: {', '.join(sorted(KEYWORDS))}"
        raise _bad(where, f"unknown argument {unknown[0]}=", fix)
    overrides: list[Override] = []

    def label(arg: str) -> str:
        return f"@pytest.mark.frontier({arg}=...) on {where}"

    for arg, key in _KEYS.items():
        if arg in kwargs:
            value = kwargs[arg]
            if arg in ("target", "judge", "domain", "agent_description") and not isinstance(value, str):
                raise _bad(where, f"{arg}={value!r} must be a string", f"pass {KEYWORDS[arg]}")
            if arg == "target_options" and not isinstance(value, Mapping):
                raise _bad(where, f"target_options={value!r} must be a dict", f"pass {KEYWORDS[arg]}")
            if arg == "target":
                value = absolute_target(value, base)
            overrides.append(Override(key, dict(value) if isinstance(value, Mapping) else value, label(arg)))
    curriculum = None
    if "curriculum" in kwargs:
        more, curriculum = _curriculum(kwargs["curriculum"], label("curriculum"), where, base)
        overrides += more
    if "generator" in kwargs:
        if "curriculum" in kwargs:
            raise _bad(where, "both curriculum= and generator= are given",
                       "pass one: generator= searches task generators, curriculum= probes other cases")
        overrides += _generators(kwargs["generator"], label("generator"), where, base)
    if "topics" in kwargs:
        topics = kwargs["topics"]
        topics = [topics] if isinstance(topics, str) else topics
        if not isinstance(topics, (list, tuple)) or not all(isinstance(t, str) and t for t in topics):
            raise _bad(where, f"topics={kwargs['topics']!r} must be a string or a list of strings",
                       "write topics=['fractions', 'probability']")
        overrides.append(Override("curriculum.topics", list(topics), label("topics")))
    if "tools" in kwargs:
        overrides.append(Override("curriculum.tools", _path(kwargs["tools"], "tools", where, base), label("tools")))
    if "band" in kwargs:
        overrides.append(Override("probing.band", _band(kwargs["band"], where), label("band")))
    sets = kwargs.get("set", {})
    if not isinstance(sets, Mapping) or not all(isinstance(k, str) and k for k in sets):
        raise _bad(where, f"set={sets!r} must be a dict of config keys", "write set={'probing.concurrency': 2}")
    for k, v in sets.items():
        if k in _PATH_KEYS and isinstance(v, (str, Path)) and str(v).strip():
            v = _path(v, f"set[{k!r}]", where, base)
        elif k == "target.spec" and isinstance(v, str):
            v = absolute_target(v, base)
        overrides.append(Override(k, v, f"@pytest.mark.frontier(set={{{k!r}: {v!r}}}) on {where}"))
    name = kwargs.get("name", re.sub(r"\[.*\]$", "", where))
    if not isinstance(name, str) or not name.strip():
        raise _bad(where, f"name={name!r} must be a non-empty string", "write name='my-agent-math'")
    classes = kwargs.get("classes", DEFAULT_CLASSES)
    known = [c.value for c in CaseClass]
    if isinstance(classes, str) or not isinstance(classes, (list, tuple, set, frozenset)) or not classes:
        raise _bad(where, f"classes={classes!r} must be a list of case classes",
                   f"write classes={list(DEFAULT_CLASSES)}")
    for c in classes:
        if c not in known:
            raise _bad(where, f"classes: unknown case class {c!r}", f"use some of {', '.join(known)}")
    guards = kwargs.get("guards")
    if guards is not None and (isinstance(guards, bool) or not isinstance(guards, int) or guards < 0):
        raise _bad(where, f"guards={guards!r} must be a count >= 0", "write guards=10 (0: no guard cases)")
    expect = expectations_from(kwargs.get("expect"), f"@pytest.mark.frontier on {where}")
    if expect is not None:  # an Expectations object and its dict are the same argument
        kwargs = {**kwargs, "expect": dataclasses.asdict(expect)}
        find_checks(expect, str(base), f"@pytest.mark.frontier on {where}")  # a missing check: a usage error now
    config = kwargs.get("config")
    suite = kwargs.get("suite")
    return SuiteSpec(
        name=name.strip(),
        where=where,
        overrides=tuple(overrides),
        config_path=None if config is None else _path(config, "config", where, base, (".yaml", ".yml")),
        curriculum=curriculum,
        names_curriculum="curriculum" in kwargs or "generator" in kwargs,
        classes=tuple(c.value for c in CLASS_ORDER if c.value in {CaseClass(x).value for x in classes}),
        suite_file=None if suite is None else _path(suite, "suite", where, base, (".yaml", ".yml", ".jsonl", ".json")),
        fingerprint=_fingerprint(kwargs),
        guards=guards,
        expect=expect,
        base=str(base),
    )


def suite_key(name: str) -> str:
    """A file-name-safe, stable key for a suite name (run ids, lock files)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")[-40:].strip("-") or "suite"
    return f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


__all__ = ["DEFAULT_CLASSES", "KEYWORDS", "SuiteSpec", "absolute_target", "parse_suite", "suite_key", "target_label"]
