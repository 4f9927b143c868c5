"""The store's line encoding: one record a JSON line, parsed back with torn lines skipped.

Every store file is JSON lines (``runs/*.jsonl``, ``baselines.jsonl``, committed ``*.jsonl``
suites). :func:`encode_line` writes one record (secrets redacted, sorted keys), :func:`parse_lines`
reads them back and skips a line a crash cut (:class:`TornLineWarning`), and :func:`latest_by`
keeps the latest record per key (``finished_at``, ties broken by the content hash).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from frontier_qa.redaction import protect, redact_data, restore
from frontier_qa.store._records import SCHEMA_VERSION, Baseline, CaseRecord, RunRecord
from frontier_qa.store._store_error import StoreError

Line = CaseRecord | RunRecord
_LINE = TypeAdapter(Annotated[Line, Field(discriminator="kind")])


class TornLineWarning(UserWarning):
    """A store line was cut by a crash mid-write (or is not a record) and was skipped."""


def encode_line(record: Line | Any) -> bytes:
    """One record as one JSON line (UTF-8, ending in ``\\n``), as every file of records is
    written (the store, suites, ``cases.jsonl``, training runs): no secret in it
    (:func:`stored_form`).

    Lone surrogates (from a model's malformed output) are written as JSON ``\\uXXXX``
    escapes, so the file stays valid UTF-8 and the text round-trips unchanged.
    """
    return _json_line(stored_form(record.model_dump(mode="json") if hasattr(record, "model_dump") else record))


def _json_line(data: Any) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8", "backslashreplace") + b"\n"


def stored_form(data: Any) -> Any:
    """A record's JSON data as a file of records keeps it: every secret masked
    (:func:`~frontier_qa.redaction.redact_data`), except in the case's inputs (``"case"``), which a
    replay must send unchanged: there each known secret is a ``${secret:NAME}`` reference to the
    environment variable holding it (:func:`~frontier_qa.redaction.protect`), put back on reading.
    """
    if not isinstance(data, dict):
        return redact_data(data)
    return {key: protect(value) if key == "case" else redact_data(value) for key, value in data.items()}


def _digest(record: Line | Baseline) -> str:
    # the record's own content, not its stored form: ordering needs no redaction (and reads stay fast)
    return hashlib.sha256(_json_line(record.model_dump(mode="json"))).hexdigest()


def _order_key(record: Line | Baseline) -> tuple[Any, str]:
    """Latest wins: by timestamp, ties by content hash (independent of file or source order)."""
    if isinstance(record, Baseline):
        stamp = record.accepted_at
    else:
        stamp = record.finished_at if isinstance(record, CaseRecord) else record.written_at
    return (stamp, _digest(record))


_BASELINE = TypeAdapter(Baseline)


def parse_lines(data: bytes, source: str, adapter: TypeAdapter[Any] = _LINE) -> Iterator[Any]:
    """Parse a store file's bytes, skipping torn or foreign lines with a :class:`TornLineWarning`.

    Args:
        data: the file's bytes.
        source: the file's name, for messages.
        adapter: what each line is (case and run records by default; baselines for
            ``baselines.jsonl``).

    Raises:
        StoreError: a record has a newer ``schema_version`` than this frontier-qa knows.
    """
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        last = number == len(lines)  # no newline after it: the write may have been cut
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            where = "its last line" if last else f"line {number}"
            warnings.warn(
                f"{source}: skipped {where}, cut by an interrupted write ({len(raw)} bytes); "
                "every other record was kept",
                TornLineWarning,
                stacklevel=3,
            )
            continue
        version = obj.get("schema_version") if isinstance(obj, dict) else None
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise StoreError(
                f"{source}:{number}: record schema_version {version} is newer than this "
                f"frontier-qa reads ({SCHEMA_VERSION})",
                hint="upgrade frontier-qa: reinstall it from its repository "
                     "(git pull, then pip install -e . in the checkout)",
            )
        if isinstance(obj, dict) and isinstance(obj.get("case"), dict):
            obj["case"] = restore(obj["case"])  # ${secret:NAME} in a case's inputs: its value again
        try:
            yield adapter.validate_python(obj)
        except ValidationError as err:
            warnings.warn(
                f"{source}:{number}: skipped a line that is not a valid record: "
                f"{err.errors()[0].get('msg')} at {err.errors()[0].get('loc')}",
                TornLineWarning,
                stacklevel=3,
            )


def latest_by(records: Iterable[Any], key: Any) -> dict[Any, Any]:
    """Keep the latest record for each ``key(record)`` (see :func:`_order_key`)."""
    best: dict[Any, tuple[tuple[Any, str], Line]] = {}
    for record in records:
        k = key(record)
        order = _order_key(record)
        if k not in best or order > best[k][0]:
            best[k] = (order, record)
    return {k: v[1] for k, v in best.items()}
