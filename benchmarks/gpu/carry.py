"""The carry set: the wheels the GPU machine needs, checked here before any device time is spent.

The machine lent for GPU work reaches no package registry and lacks some of what the validation
imports (``device-packages.txt`` lists what it has; ``carry.txt`` pins what is carried). Three
checks, each a subcommand:

``check DIR`` (here, by ``prepare.sh``): the downloaded wheels are exactly the pins, one wheel
each, installable on CPython 3.12 manylinux x86_64, none shadows a package of the machine, their
total is at most 60 MiB, and every requirement each one declares (markers evaluated for the
machine's Python) is met by another carried wheel or by the machine's package list. A requirement
on a machine package whose version was never recorded is reported as *assumed*, not verified.

``verify`` (there, by ``run.sh``, after the wheels are installed): the same requirement check
against the installed distributions' real metadata; it reports and never stops the run.

``pins`` / ``standins``: the pins, and the machine's own versions of the packages the CPU dry run
swaps in (``prepare.sh --host``), one per line for ``pip download``.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from dataclasses import dataclass, field
from email.parser import Parser
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

HERE = Path(__file__).resolve().parent
CARRY = HERE / "carry.txt"
DEVICE = HERE / "device-packages.txt"
DEVICE_PYTHON = "3.12.3"
"""The machine's ``python3`` (/opt/torch/.venv/bin/python3)."""
LIMIT_MIB = 60
"""The carry set's limit: the working tree that travels is at most 64 MiB, the repository included."""
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
"""The platform tags ``prepare.sh`` asks for (several packages ship only one of them)."""
TOLERATED = {("datasets", "fsspec"): "datasets pins fsspec from above in its metadata only; the CPU dry run "
                                      "(run.sh --dry) loads and uses datasets 5.0.1 with a newer fsspec"}
"""(carried distribution, requirement) pairs whose version range may be missed: reported, not failed."""
STANDINS = ("transformers", "tokenizers", "accelerate", "huggingface-hub", "safetensors")
"""Machine packages the CPU dry run installs at the machine's versions (pure Python or abi3
wheels); torch, compiled per Python and 20× larger, stays the host's."""


def read_list(path: Path) -> dict[str, str | None]:
    """``name==version`` or ``name`` lines (``#`` comments) → {canonical name: version or None}."""
    out: dict[str, str | None] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        out[canonicalize_name(name.strip())] = version.strip() or None
    return out


@dataclass(frozen=True)
class Dist:
    """A distribution's name, version and what it declares it needs."""

    name: str
    version: str
    requires: tuple[str, ...] = ()
    requires_python: str | None = None
    size: int = 0
    filename: str = ""


def read_wheel(path: Path) -> Dist:
    """A wheel's METADATA: name, version, Requires-Dist, Requires-Python."""
    with zipfile.ZipFile(path) as archive:
        member = next(n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(archive.read(member).decode("utf-8"))
    return Dist(canonicalize_name(meta["Name"]), meta["Version"], tuple(meta.get_all("Requires-Dist") or ()),
                meta.get("Requires-Python"), path.stat().st_size, path.name)


def machine_tags(python: str = DEVICE_PYTHON) -> set[Tag]:
    """Every wheel tag the machine's CPython installs, for the platform tags asked for."""
    version = tuple(int(p) for p in python.split(".")[:2])
    return set(cpython_tags(version, platforms=PLATFORMS)) | set(
        compatible_tags(version, f"cp{version[0]}{version[1]}", platforms=PLATFORMS))


def marker_environment(python: str = DEVICE_PYTHON) -> dict[str, str]:
    """The machine's values of the PEP 508 markers (Linux, x86_64, CPython ``python``)."""
    return {"python_version": ".".join(python.split(".")[:2]), "python_full_version": python,
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "os_name": "posix", "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "implementation_version": python, "platform_release": "", "platform_version": "", "extra": ""}


@dataclass
class Findings:
    """What a requirement check found; ``problems`` fail it, ``assumed`` are said, not failed."""

    problems: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)
    tolerated: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": not self.problems, "problems": self.problems, "assumed": self.assumed,
                "tolerated": self.tolerated, "verified": self.verified}


def check_requirements(carried: list[Dist], available: dict[str, str | None],
                       python: str = DEVICE_PYTHON) -> Findings:
    """Each carried distribution's requirements against the carried set plus ``available``.

    Args:
        carried: the carried distributions (their declared requirements are checked).
        available: what the machine has: canonical name → version, ``None`` where unrecorded.
        python: the machine's Python, for markers and ``Requires-Python``.

    Returns:
        problems (a requirement nobody meets, a version outside its range, a wheel for another
        Python), assumed (met by a machine package of unrecorded version), tolerated (outside its
        range, a :data:`TOLERATED` pair) and verified lines.
    """
    env = marker_environment(python)
    have = {**available, **{d.name: d.version for d in carried}}
    found = Findings()
    for dist in carried:
        if dist.requires_python and Version(python) not in SpecifierSet(dist.requires_python):
            found.problems.append(f"{dist.name} {dist.version} needs Python {dist.requires_python}, not {python}")
        for line in dist.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement as err:
                found.problems.append(f"{dist.name} {dist.version}: unreadable requirement {line!r} ({err})")
                continue
            if req.marker is not None and not req.marker.evaluate(env):
                continue  # another platform's, or an extra's: not installed by a plain install
            name = canonicalize_name(req.name)
            where = f"{dist.name} {dist.version} needs {req}"
            if name not in have:
                found.problems.append(f"{where}: neither carried nor on the machine")
            elif have[name] is None:
                found.assumed.append(f"{where}: the machine has {name}, version unrecorded")
            elif not req.specifier.contains(have[name] or "", prereleases=True):
                why = TOLERATED.get((dist.name, name))
                (found.tolerated if why else found.problems).append(
                    f"{where}: {name} is {have[name]}" + (f" (tolerated: {why})" if why else ""))
            else:
                found.verified.append(f"{where}: {name} {have[name]}")
    return found


def check_folder(folder: Path, pins: dict[str, str | None] | None = None,
                 device: dict[str, str | None] | None = None, limit_mib: float = LIMIT_MIB) -> dict[str, Any]:
    """Everything ``check`` checks about a folder of wheels (see the module docstring).

    Returns:
        ``{"ok", "problems", "assumed", "verified", "wheels": [{file, name, version, mib}], "total_mib"}``.
    """
    pins = read_list(CARRY) if pins is None else pins
    device = read_list(DEVICE) if device is None else device
    wheels = sorted(folder.glob("*.whl"))
    dists = [read_wheel(w) for w in wheels]
    problems: list[str] = []
    tags = machine_tags()
    by_name: dict[str, list[Dist]] = {}
    for d in dists:
        by_name.setdefault(d.name, []).append(d)
        if not set(parse_wheel_filename(d.filename)[3]) & tags:
            problems.append(f"{d.filename}: no tag CPython {DEVICE_PYTHON} on manylinux x86_64 installs")
        if d.name in device:
            problems.append(f"{d.filename}: the machine has {d.name} already; a carried copy would shadow it")
    for name, version in pins.items():
        got = by_name.get(name, [])
        if not got:
            problems.append(f"{name}=={version} is pinned but no wheel of it is in {folder}")
        elif len(got) > 1:
            problems.append(f"{name}: {len(got)} wheels ({', '.join(d.filename for d in got)}); keep one")
        elif version is not None and got[0].version != version:
            problems.append(f"{got[0].filename}: pinned {name}=={version}")
    for name in sorted(set(by_name) - set(pins)):
        problems.append(f"{', '.join(d.filename for d in by_name[name])}: not pinned in carry.txt")
    total = sum(d.size for d in dists) / 2**20
    if total > limit_mib:
        problems.append(f"the wheels total {total:.1f} MiB, over the {limit_mib} MiB limit")
    found = check_requirements(dists, device)
    result = found.as_dict()
    result["problems"] = problems + found.problems
    result["ok"] = not result["problems"]
    result["wheels"] = [{"file": d.filename, "name": d.name, "version": d.version, "mib": round(d.size / 2**20, 2)}
                        for d in dists]
    result["total_mib"] = round(total, 2)
    return result


def verify_installed(pins: dict[str, str | None] | None = None) -> dict[str, Any]:
    """The carried distributions as installed in this interpreter, their requirements checked
    against what is installed here (the machine's packages and the carried ones).
    """
    pins = read_list(CARRY) if pins is None else pins
    python = ".".join(map(str, sys.version_info[:3]))
    installed: dict[str, str | None] = {}
    for dist in metadata.distributions():
        installed.setdefault(canonicalize_name(dist.metadata["Name"] or ""), dist.version)
    carried, problems, where = [], [], {}
    for name, version in pins.items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name} is not installed")
            continue
        if version is not None and dist.version != version:
            problems.append(f"{name} is {dist.version}, pinned {version}")
        where[name] = str(dist.locate_file(""))
        carried.append(Dist(name, dist.version, tuple(dist.requires or ()), dist.metadata["Requires-Python"]))
    found = check_requirements(carried, {k: v for k, v in installed.items() if k not in pins}, python)
    result = found.as_dict()
    result["problems"] = problems + found.problems
    result["ok"] = not result["problems"]
    result.update(python=python, locations=where,
                  machine_versions={n: installed.get(n) for n in ("torch", "transformers", "accelerate", "peft",
                                                                  "pyarrow", "pandas", "typing-extensions")})
    return result


def _print(result: dict[str, Any], title: str) -> None:
    for w in result.get("wheels", []):
        print(f"  {w['file']}  {w['mib']:.2f} MiB")
    if "total_mib" in result:
        print(f"  total {result['total_mib']:.2f} MiB (limit {LIMIT_MIB} MiB)")
    print(f"{title}: {len(result['verified'])} requirement(s) verified, {len(result['assumed'])} assumed "
          f"(machine package of unrecorded version), {len(result['tolerated'])} tolerated, "
          f"{len(result['problems'])} problem(s)")
    for line in result["assumed"]:
        print(f"  assumed: {line}")
    for line in result["tolerated"]:
        print(f"  tolerated: {line}")
    for line in result["problems"]:
        print(f"  PROBLEM: {line}")


def main(argv: list[str] | None = None) -> int:
    """``carry.py check DIR | verify [--json FILE] | pins | standins``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="the downloaded wheels against the pins and the machine's packages")
    check.add_argument("folder", type=Path)
    check.add_argument("--json", type=Path, default=None, help="also write the findings here")
    verify = sub.add_parser("verify", help="the installed carried distributions' requirements, in this Python")
    verify.add_argument("--json", type=Path, default=None, help="also write the findings here")
    sub.add_parser("pins", help="carry.txt's pins, one per line")
    sub.add_parser("standins", help="the machine's versions of the packages the CPU dry run swaps in")
    args = parser.parse_args(argv)
    if args.command == "pins":
        print("\n".join(f"{n}=={v}" if v else n for n, v in read_list(CARRY).items()))
        return 0
    if args.command == "standins":
        device = read_list(DEVICE)
        print("\n".join(f"{n}=={device[n]}" for n in STANDINS if device.get(n)))
        return 0
    result = check_folder(args.folder) if args.command == "check" else verify_installed()
    _print(result, f"carry set {args.command}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0 if result["ok"] or args.command == "verify" else 1


if __name__ == "__main__":
    sys.exit(main())
