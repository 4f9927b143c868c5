"""A curriculum read from a file: bring your own cases, or replay a suite the store exported.

Two row shapes, in JSONL (one object per line) or YAML (a list of objects):

**Flat rows** (write them by hand or from a benchmark)::

    {"id": "add-1", "prompt": "What is 17 + 25?", "reference": "42", "topic": "arithmetic"}
    {"prompt": "Which weekday follows Friday?", "answer": "Saturday", "answer_format": "boxed",
     "solution": "print('Saturday')"}
    {"prompt": "Book a table at Luigi for 4 people at 19:00.", "answer_format": "json:answer",
     "tools": [{"type": "function", "function": {"name": "book_table", "parameters": {
         "type": "object", "properties": {"restaurant": {"type": "string"},
         "people": {"type": "integer"}, "time": {"type": "string"}},
         "required": ["restaurant", "people", "time"]}}}],
     "gold_calls": [{"name": "book_table", "arguments": {"restaurant": "Luigi", "people": 4,
                     "time": "19:00"}}]}

========================  ================================================================
field                     meaning
========================  ================================================================
``prompt`` (``question``)  the task (required)
``id``                     stable case id; default: the prompt's slug and a hash
``topic``                  label for the frontier map (default ``general``)
``answer_format``          ``auto`` (default: box, answer line, JSON or short reply), ``boxed``,
                           ``final_answer``, ``json:<field>``, ``text``
``reference`` (``answer``) the expected answer; unverified unless ``reference_verified``
``reference_verified``     ``true``: the source vouches for the reference (benchmark gold)
``solution``               Python program printing the answer; the engine runs it to verify
``system``                 system prompt
``tools``                  OpenAI-style tool schemas offered to the target
``gold_calls``             expected tool calls ``[{"name", "arguments"}]`` (Tool-R0 checks)
``predicted_pass_rate``    your own guess of p̂ in [0, 1] (difficulty prediction)
``metadata``               anything else (JSON object)
``history``                messages after the task (earlier turns)
``expect``                 what every sample's trajectory must do: ``tools_used``,
                           ``tools_not_used``, ``tool_sequence`` with ``order`` (``strict``,
                           ``in_order``, ``any_order``), ``arguments`` (``[{"tool", "arguments",
                           "match": "subset"|"exact", "check": "checks.py:fn"}]``), ``max_steps``
                           (docs/how-to/trajectories.md); a check file is relative to this file
========================  ================================================================

**Suite entries**, as :func:`frontier_qa.store.export_suite` writes them (``{"case": {...},
"observed": {...}}``): the case is taken as recorded, with its verified flag, its expectations
and, when the engine kept one, its solution program (``case.metadata.solution``). A relative
check file is found where the case was first read (``case.metadata.expect_base``, which the suite
keeps relative to itself), else next to the suite file.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from frontier_qa._expectations import EXPECT_BASE_KEY, anchored, expectations_from, rooted
from frontier_qa.errors import ConfigError, check_unicode, read_text
from frontier_qa.probing._curriculum_seam import History, Outcome, Proposal
from frontier_qa.probing._verify import SOLUTION_KEY, TRUSTED_KEY
from frontier_qa.target import Case, Expectations

ROW_FIELDS = frozenset(
    {"id", "prompt", "question", "system", "topic", "answer_format", "reference", "answer",
     "reference_verified", "solution", "tools", "gold_calls", "predicted_pass_rate", "metadata", "history",
     "expect"}
)  # fmt: skip
SUITE_FIELDS = frozenset({"schema_version", "case", "baseline", "observed", "role", "run_id", "finished_at", "cost"})


def _fail(where: str, message: str, hint: str) -> ConfigError:
    return ConfigError(f"{where}: {message}", hint=hint)


def _text(row: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = row.get(key)
    if value is None:
        if required:
            raise _fail(where, f"missing {key!r}", f"give every row a {key!r} string")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key in ("reference", "answer", "id"):
        value = str(value)  # a YAML "answer: 42" is the string 42
    if not isinstance(value, str):
        raise _fail(where, f"{key!r} must be a string, not {type(value).__name__}", f"quote the {key}")
    return value


def _objects(row: Mapping[str, Any], key: str, where: str) -> tuple[Mapping[str, Any], ...]:
    value = row.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise _fail(where, f"{key!r} must be a list of objects", f"write {key} as [{{...}}, ...]")
    return tuple(dict(v) for v in value)


def proposal_from_row(row: Mapping[str, Any], where: str = "row", *, source: str = "file",
                      base: str | os.PathLike[str] | None = None) -> Proposal:
    """One row (flat or suite entry) as a :class:`Proposal`.

    Args:
        row: the row's object.
        where: file and line, for messages.
        source: the proposal's source label.
        base: the folder of the file the row is in: a relative argument-check file
            (``expect.arguments[].check``) is found there (default: the working directory).

    Raises:
        ConfigError: a missing prompt, an unknown field, a field of the wrong type, or an
            expectation that is malformed or names a check that cannot be found; the message
            names ``where`` (file and line).
    """
    if not isinstance(row, Mapping):
        raise _fail(where, f"a row must be an object, not {type(row).__name__}", "one JSON object per line")
    if "case" in row and isinstance(row["case"], Mapping):
        return _checked(_from_suite(row, where, source, base), where)
    unknown = sorted(set(row) - ROW_FIELDS)
    if unknown:
        raise _fail(where, f"unknown field(s) {', '.join(map(repr, unknown))}",
                    f"known fields: {', '.join(sorted(ROW_FIELDS))}; put anything else under 'metadata'")
    prompt = _text(row, "prompt", where) if "prompt" in row else _text(row, "question", where, required=True)
    reference = _text(row, "reference", where) if "reference" in row else _text(row, "answer", where)
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise _fail(where, "'metadata' must be an object", "write metadata as {...}")
    metadata = dict(metadata)
    verified = row.get("reference_verified", False)
    if not isinstance(verified, bool):
        raise _fail(where, "'reference_verified' must be true or false", "write reference_verified: true")
    if verified:
        if reference is None:
            raise _fail(where, "'reference_verified' is true but there is no reference", "add the reference")
        metadata[TRUSTED_KEY] = True
    pass_rate = row.get("predicted_pass_rate")
    if pass_rate is not None and (isinstance(pass_rate, bool) or not isinstance(pass_rate, (int, float))
                                  or not 0.0 <= pass_rate <= 1.0):
        raise _fail(where, f"'predicted_pass_rate' = {pass_rate!r} is not in [0, 1]", "write a share such as 0.5")
    case = Case(
        id=_text(row, "id", where) or "",
        prompt=prompt or "",
        system=_text(row, "system", where),
        topic=_text(row, "topic", where) or "general",
        answer_format=_text(row, "answer_format", where) or "auto",
        tools=_objects(row, "tools", where),
        reference=reference,
        metadata=metadata,
        history=_objects(row, "history", where),
        expect=expectations_from(row.get("expect"), where),
    )
    return _checked(Proposal(
        case=case if base is None else anchored(case, base),
        solution=_text(row, "solution", where),
        gold_calls=_objects(row, "gold_calls", where),
        predicted_pass_rate=None if pass_rate is None else float(pass_rate),
        source=source,
        raw=json.dumps(row, ensure_ascii=False, default=str),
        written=True,
    ), where)


def _checked(proposal: Proposal, where: str) -> Proposal:
    """``proposal``, once every argument check its expectations name is found."""
    base = proposal.case.metadata.get(EXPECT_BASE_KEY)
    find_checks(proposal.case.expect, base if isinstance(base, str) else None, where)
    return proposal


def find_checks(expect: Expectations | None, base: str | None, where: str) -> None:
    """Load every argument check ``expect`` names (a relative file under ``base``), so that a missing
    one is an error naming where it was written, not a crash at the first sample that needs it.

    Raises:
        ConfigError: a check's file, module or function cannot be found; the message starts with ``where``.
    """
    from frontier_qa.scoring._paths import resolve_check

    for i, wanted in enumerate(() if expect is None else expect.arguments):
        if wanted.check is not None:
            try:
                resolve_check(wanted.check, base)
            except ConfigError as err:
                raise _fail(where, f"expect.arguments[{i}].check: {err.message}", err.hint or "fix the check") from None


def _from_suite(row: Mapping[str, Any], where: str, source: str, base: str | os.PathLike[str] | None) -> Proposal:
    from pydantic import TypeAdapter, ValidationError

    from frontier_qa.store._records import StoredCase

    unknown = sorted(set(row) - SUITE_FIELDS)
    if unknown:
        raise _fail(where, f"unknown suite field(s) {', '.join(map(repr, unknown))}",
                    "a suite entry holds 'case' and 'observed' (see frontier_qa.store.export_suite)")
    from frontier_qa.redaction import restore, unresolved

    stored = restore(row["case"])  # a secret in a case's inputs is kept as ${secret:NAME}
    missing = unresolved(stored)
    if missing:
        raise _fail(where, f"the case's inputs hold the secret ${missing[0]}, which is not set here",
                    f"export {missing[0]}=... (the suite keeps a reference to it, never its value)")
    if isinstance(stored, Mapping) and stored.get("expect") is not None:
        expectations_from(stored["expect"], f"{where}: case")  # its own words for a bad key, not pydantic's
    try:
        spec = TypeAdapter(StoredCase).validate_python(stored)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise _fail(where, f"case.{loc}: {first.get('msg')}", "fix that field of the suite entry") from err
    case = spec.to_case() if base is None else rooted(spec.to_case(), base)  # kept relative to the suite file
    metadata = dict(case.metadata)
    kept = metadata.get(EXPECT_BASE_KEY)
    if base is not None and not (isinstance(kept, str) and Path(kept).is_dir()):
        metadata.pop(EXPECT_BASE_KEY, None)  # written on another machine: next to the suite file instead
        case = anchored(replace(case, metadata=metadata), base)
        metadata = dict(case.metadata)
    if spec.reference_verified and spec.reference is not None:
        metadata[TRUSTED_KEY] = True
    solution = metadata.get(SOLUTION_KEY)
    return Proposal(
        case=replace(case, metadata=metadata),
        solution=solution if isinstance(solution, str) else None,
        source=source,
        raw=json.dumps(dict(row), ensure_ascii=False, default=str),
        written=True,
    )


def read_rows(path: str | os.PathLike[str]) -> list[tuple[str, Any]]:
    """``(where, object)`` for every row of a JSONL or YAML file, ``where`` = ``file:line``.

    Raises:
        ConfigError: the file is missing, not JSONL/YAML by suffix, or malformed.
    """
    path = Path(path)
    text = read_text(path, what="cases file")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip() and not line.lstrip().startswith("//"):
                try:
                    row = json.loads(line)
                except ValueError as err:
                    raise ConfigError(f"{path}:{number}: not JSON: {err}", hint="one JSON object per line") from err
                check_unicode(row, f"{path}:{number}")
                rows.append((f"{path}:{number}", row))
        return rows
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            loaded = yaml.safe_load(text) or []
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML: {err}", hint="fix the YAML syntax") from err
        if not isinstance(loaded, list):
            raise ConfigError(f"{path}: the cases must be a YAML list", hint="start each case with '- prompt: ...'")
        rows = [(f"{path} entry {i + 1}", obj) for i, obj in enumerate(loaded)]
        for where, obj in rows:
            check_unicode(obj, where)
        return rows
    raise ConfigError(f"cannot tell the format of {path}", hint="name it *.jsonl or *.yaml")


def read_proposals(path: str | os.PathLike[str]) -> list[Proposal]:
    """Every case of a file as a proposal, in file order (ids default to a hash of the task).

    Raises:
        ConfigError: a malformed row (the message names file and line) or a repeated id.
    """
    from frontier_qa.store._case_ids import case_id_for, legacy_case_id

    source = f"file:{Path(path).name}"
    out: list[Proposal] = []
    seen: dict[str, str] = {}
    for where, row in read_rows(path):
        proposal = proposal_from_row(row, where, source=source, base=Path(path).parent)
        if not proposal.case.id:
            proposal = replace(proposal, case=replace(proposal.case, id=case_id_for(proposal.case)),
                               aliases=(legacy_case_id(proposal.case),))
        cid = proposal.case.id
        if cid in seen:
            raise ConfigError(f"{where}: case id {cid!r} already used at {seen[cid]}",
                              hint="give each case its own id (or drop the repeated task)")
        seen[cid] = where
        out.append(proposal)
    return out


class StaticCurriculum:
    """Proposes a fixed list of proposals in order (optionally shuffled once, by seed).

    It does not adapt; :attr:`history` keeps the outcomes it heard, by class.

    Args:
        proposals: the cases.
        name: the curriculum's name in reports and run config hashes.
        shuffle: shuffle the order once with ``seed``.
        seed: the shuffle seed.
        limit: propose at most this many.
    """

    def __init__(
        self,
        proposals: Iterable[Proposal],
        *,
        name: str = "static",
        shuffle: bool = False,
        seed: int = 0,
        limit: int | None = None,
    ) -> None:
        items = list(proposals)
        if shuffle:
            random.Random(seed).shuffle(items)
        if limit is not None:
            if limit < 0:
                raise ConfigError(f"limit={limit} must be >= 0 or None")
            items = items[:limit]
        self.name = name
        self.proposals: tuple[Proposal, ...] = tuple(items)
        self.history = History()
        self.outcomes: list[Outcome] = []
        self._next = 0

    def __len__(self) -> int:
        return len(self.proposals)

    async def propose(self, n: int) -> Sequence[Proposal]:
        """The next ``n`` proposals; ``[]`` once all were given."""
        batch = self.proposals[self._next : self._next + max(0, n)]
        self._next += len(batch)
        return list(batch)

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        self.outcomes.extend(outcomes)
        self.history.add(outcomes)


class FileCurriculum(StaticCurriculum):
    """Cases from a JSONL or YAML file (flat rows or an exported suite; see the module docstring).

    Args:
        path: the file.
        shuffle: shuffle the order once with ``seed``.
        seed: the shuffle seed.
        limit: propose at most this many.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, shuffle: bool = False, seed: int = 0, limit: int | None = None
    ) -> None:
        self.path = Path(path)
        super().__init__(
            read_proposals(self.path), name=f"file:{self.path.name}", shuffle=shuffle, seed=seed, limit=limit
        )


__all__ = [
    "ROW_FIELDS",
    "FileCurriculum",
    "StaticCurriculum",
    "find_checks",
    "proposal_from_row",
    "read_proposals",
    "read_rows",
]
