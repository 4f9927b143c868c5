"""Run a Python script as if on the GPU machine: only its packages and the carried ones import.

``python benchmarks/gpu/device_sim.py --record imports.json SCRIPT [ARGS...]`` hides every installed
distribution that is neither in ``device-packages.txt`` nor in ``carry.txt`` (its top-level modules
become unimportable, as ``sys.modules[name] = None`` makes them; ``importlib.util.find_spec`` then
answers ``None``, so optional integrations such as TRL's vLLM or accelerate's boto3 see them
missing, as on the machine), runs SCRIPT, and writes which modules it imported and the
distributions that own them. The CPU dry run of ``run.sh --dry`` uses it: an import the machine
could not satisfy fails here, not there.

What it cannot show: versions (the host's torch and Python are what they are; ``prepare.sh --host``
swaps in the machine's transformers and the carried pins), and CUDA-only code paths.
"""

from __future__ import annotations

import atexit
import json
import runpy
import sys
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from carry import CARRY, DEVICE, read_list  # noqa: E402

OWN = {"frontier-qa"}
"""This repository's own distribution (installed editable here; a path on the machine)."""


def allowed() -> set[str]:
    """Distributions the machine would have: its own packages, the carried ones, this repository."""
    return set(read_list(DEVICE)) | set(read_list(CARRY)) | OWN


def hidden_modules(keep: set[str]) -> dict[str, list[str]]:
    """Top-level modules installed here whose every distribution is outside ``keep``."""
    from packaging.utils import canonicalize_name

    out = {}
    for module, dists in metadata.packages_distributions().items():
        names = {canonicalize_name(d) for d in dists}
        if module in sys.stdlib_module_names or module.startswith("__editable__") or names & keep:
            continue
        out[module] = sorted(names)
    return out


def imported_modules() -> dict[str, list[str]]:
    """Top-level modules imported so far → the distributions that install each one.

    The standard library and this repository's own files (no distribution owns them) are left out.
    """
    from packaging.utils import canonicalize_name

    owners = metadata.packages_distributions()
    loaded = [name for name, module in sorted(sys.modules.items()) if module is not None and "." not in name]
    return {name: sorted({canonicalize_name(d) for d in owners[name]}) for name in loaded if name in owners}


def by_distribution(modules: dict[str, list[str]]) -> dict[str, list[str]]:
    """The same, distribution → its imported top-level modules."""
    out: dict[str, list[str]] = {}
    for module, dists in modules.items():
        for dist in dists:
            out.setdefault(dist, []).append(module)
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    """``device_sim.py [--record FILE] SCRIPT [ARGS...]``."""
    record = None
    if argv[:1] == ["--record"]:
        record, argv = Path(argv[1]), argv[2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    keep = allowed()
    hidden = hidden_modules(keep)
    for module in hidden:
        sys.modules[module] = None  # type: ignore[assignment]  # import fails, find_spec says None

    def write() -> None:
        if record is not None:
            modules = imported_modules()
            record.write_text(json.dumps({"imported": by_distribution(modules), "modules": modules,
                                          "hidden": hidden, "allowed": sorted(keep)}, indent=2), encoding="utf-8")

    atexit.register(write)
    print(f"device_sim: {len(hidden)} module(s) of distributions the machine lacks are hidden", file=sys.stderr)
    sys.argv = argv
    sys.path[0] = str(Path(argv[0]).resolve().parent)
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
