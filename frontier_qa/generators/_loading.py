"""Generators named in a config: built-in names, your decorated functions, or a YAML declaration.

The entries of ``curriculum.generators``::

    curriculum:
      type: generators
      generators:
        - arithmetic                                  # a registered (built-in) generator
        - {use: dates, knobs: {crosses: [month]}}     # restricted to some of its knob values
        - my_generators.py:invoices                   # @generator-decorated, from a file (or module:name)
        - use: my_generators.py:plain_function        # a plain (rng, **knobs) -> Task function,
          knobs:                                      # its knobs declared here
            items: {range: [1, 12], easy: low}
            currency: {choices: [EUR, USD]}

A knob restriction keeps the knob's order and easy end; a declaration needs ``easy`` for every
ordinal knob. Every error names the entry, the generator and the fix.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from frontier_qa._optional import exec_file_module, import_module_ref
from frontier_qa.generators._core import Generator, GeneratorError, Knob, add, categorical, get, ordinal, validate

Entry = str | Mapping[str, Any]


def _import(ref: str, base: Path | None) -> Any:
    module_ref, sep, attr = ref.rpartition(":")
    if not sep or not module_ref or not attr:
        raise GeneratorError(f"generator {ref!r} is neither a registered name nor FILE.py:NAME / MODULE:NAME",
                             hint="write arithmetic, path/to/generators.py:name or package.module:name")
    if module_ref.endswith(".py") or "/" in module_ref:
        path = Path(module_ref).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        path = path.resolve()
        if not path.is_file():
            raise GeneratorError(f"generator file {path} does not exist", hint=f"check the path in {ref!r}")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        name = f"frontier_qa_generators_{path.stem}_{digest}"
        module = sys.modules.get(name)
        if module is None:
            try:
                module = exec_file_module(name, path)
            except GeneratorError:
                raise
            except (Exception, SystemExit) as err:  # noqa: BLE001 - the user's file failed to import
                raise GeneratorError(f"importing {path} failed: {type(err).__name__}: {err}",
                                     hint=f"run `python {path}` to see the error in full") from None
    else:
        module = import_module_ref(module_ref, "generator", GeneratorError)
    if not hasattr(module, attr):
        raise GeneratorError(f"{module_ref!r} has no {attr!r}", hint="check the name after the last ':'")
    return getattr(module, attr)


def _declared(name: str, spec: Any) -> Knob:
    where = f"knob {name!r}"
    if isinstance(spec, Mapping):
        if "choices" in spec:
            return categorical(name, list(spec["choices"]))
        easy = spec.get("easy")
        if "range" in spec:
            lo_hi = spec["range"]
            if not (isinstance(lo_hi, Sequence) and len(lo_hi) == 2 and all(isinstance(v, int) for v in lo_hi)):
                raise GeneratorError(f"{where}: range must be [low, high] integers", hint="range: [1, 8]")
            return ordinal(name, int(lo_hi[0]), int(lo_hi[1]), easy=easy, step=int(spec.get("step", 1)))
        if "values" in spec:
            return ordinal(name, 0, 0, easy=easy, values=list(spec["values"]))
    raise GeneratorError(f"{where} is declared as {spec!r}",
                         hint="write {range: [1, 8], easy: low}, {values: [1, 7, 30], easy: low} or {choices: [a, b]}")


def _restricted(gen: Generator, knobs: Mapping[str, Any]) -> Generator:
    """``gen`` with some knobs restricted to a subset of their values (order and easy end kept)."""
    new = []
    for knob in gen.knobs:
        if knob.name not in knobs:
            new.append(knob)
            continue
        want = knobs[knob.name]
        if isinstance(want, Mapping) and "range" in want:
            lo, hi = want["range"]
            keep = [v for v in knob.values if lo <= v <= hi]
        elif isinstance(want, Sequence) and not isinstance(want, str):
            bad = [v for v in want if v not in knob.values]
            if bad:
                raise GeneratorError(f"generator {gen.name!r}: knob {knob.name!r} has no value {bad[0]!r}",
                                     hint=f"its values: {', '.join(map(str, knob.values))}")
            keep = [v for v in knob.values if v in want]
        else:
            keep = [want] if want in knob.values else []
        if not keep:
            raise GeneratorError(f"generator {gen.name!r}: knob {knob.name!r} restricted to nothing ({want!r})",
                                 hint=f"its values: {', '.join(map(str, knob.values))}")
        new.append(replace(knob, values=tuple(keep)))
    unknown = sorted(set(knobs) - {k.name for k in gen.knobs})
    if unknown:
        raise GeneratorError(f"generator {gen.name!r} has no knob {unknown[0]!r}",
                             hint=f"its knobs: {', '.join(k.name for k in gen.knobs)}")
    restricted = replace(gen, knobs=tuple(new))
    if any(k.kind == "ordinal" and len(k.values) < 2 for k in restricted.knobs):
        # an ordinal knob held at one value is no axis; the others still are
        if not any(k.kind == "ordinal" and len(k.values) >= 2 for k in restricted.knobs):
            raise GeneratorError(f"generator {gen.name!r}: every ordinal knob is held at one value",
                                 hint="leave at least one ordinal knob two values or more to search")
        return restricted
    return validate(restricted)


def load_generator(entry: Entry, base: Path | None = None) -> Generator:
    """One ``curriculum.generators`` entry as a :class:`Generator` (see the module docstring)."""
    if isinstance(entry, str):
        ref, knobs, name = entry, None, None
    elif isinstance(entry, Mapping):
        unknown = sorted(set(entry) - {"use", "knobs", "name", "description"})
        if unknown or "use" not in entry:
            raise GeneratorError(f"generator entry {dict(entry)!r} is not {{use, knobs, name, description}}",
                                 hint="write {use: arithmetic, knobs: {digits: [1, 2, 3, 4]}}")
        ref, knobs, name = str(entry["use"]), entry.get("knobs"), entry.get("name")
    else:
        raise GeneratorError(f"generator entry {entry!r} is neither a name nor a mapping",
                             hint="write a name (arithmetic) or {use: ..., knobs: ...}")
    if ":" not in ref:
        gen = get(ref)
    else:
        obj = _import(ref, base)
        if isinstance(obj, Generator):
            gen = obj
        elif callable(obj):
            if not isinstance(knobs, Mapping) or not knobs:
                raise GeneratorError(f"{ref!r} is a plain function, so its knobs must be declared",
                                     hint="decorate it with @generator(knobs=[...]), or give knobs: "
                                          "{digits: {range: [1, 8], easy: low}} in the entry")
            try:
                gen = validate(Generator(str(name or getattr(obj, "__name__", ref)), obj,
                                         tuple(_declared(k, v) for k, v in knobs.items()),
                                         str(entry.get("description", "")) if isinstance(entry, Mapping) else ""))
            except GeneratorError as err:  # declared in YAML: the fix is written in YAML too
                raise GeneratorError(err.message, hint="declare each knob in the entry: {range: [1, 8], easy: low}, "
                                     "{values: [1, 7, 30], easy: low} or {choices: [a, b]}") from None
            return add(gen)
        else:
            raise GeneratorError(f"{ref!r} is a {type(obj).__name__}, not a generator",
                                 hint="point at a function decorated with @frontier_qa.generators.generator")
    if knobs:
        if not isinstance(knobs, Mapping):
            raise GeneratorError(f"generator {gen.name!r}: knobs must be a mapping", hint="knobs: {digits: [1, 2, 3]}")
        gen = _restricted(gen, knobs)
    if name:  # registered under its new name too: a stored case's check is found by the name it carries
        gen = add(replace(gen, name=str(name)))
    return gen


def load_generators(entries: Sequence[Entry], base: Path | None = None) -> list[Generator]:
    """Every entry of ``curriculum.generators``, each checked (names must be unique)."""
    out = [load_generator(e, base) for e in entries]
    names = [g.name for g in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise GeneratorError(f"generator {dupes[0]!r} is listed twice",
                             hint="list it once, or give the second a name: {use: ..., name: other}")
    return out
