#!/usr/bin/env bash
# Install the carried wheels and lay out frontier_qa for a Python that has neither, without a registry:
#
#   eval "$(bash benchmarks/gpu/install.sh WHEELS DEST)"   # sets PYTHONPATH for this shell
#
# WHEELS/*.whl go into DEST/site with the GPU machine's own install line (--no-index --no-deps
# --target: nothing the machine has is touched, replaced or upgraded), and DEST/layout/frontier_qa is
# the package as it installs (pyproject's package-dir puts adapters/ and plugins/ inside it), made of
# links to this checkout. Prints one line for the caller to eval: PYTHONPATH with DEST/site, then
# DEST/layout, in front. PYTHON picks the interpreter (default python3). run.sh and the Python 3.12
# stand-in of tests/train/test_gpu_carry.py both use it, so the check runs the machine's command.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
wheels=$1
dest=$2
shopt -s nullglob
carried=("$wheels"/*.whl)
if [ "${#carried[@]}" = 0 ]; then
  echo "install.sh: no wheels in $wheels (bash benchmarks/gpu/prepare.sh makes them)" >&2
  exit 2
fi
mkdir -p "$dest"
"$py" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$dest/site" "${carried[@]}" >&2
rm -rf "$dest/layout"
mkdir -p "$dest/layout/frontier_qa"
for entry in "$repo"/frontier_qa/*; do ln -s "$entry" "$dest/layout/frontier_qa/$(basename "$entry")"; done
ln -s "$repo/adapters" "$dest/layout/frontier_qa/adapters"
ln -s "$repo/plugins" "$dest/layout/frontier_qa/plugins"
echo "installed ${#carried[@]} wheel(s) from $wheels into $dest/site; frontier_qa laid out in $dest/layout" >&2
printf 'export PYTHONPATH=%q\n' "$dest/site:$dest/layout${PYTHONPATH:+:$PYTHONPATH}"
