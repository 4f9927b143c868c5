#!/usr/bin/env bash
# mypy over the package as it installs: frontier_qa with adapters/ and plugins/ inside it as
# frontier_qa.adapters and frontier_qa.plugins (pyproject's package-dir). mypy cannot read that
# mapping (nor setuptools' editable finder), so this mirrors the installed layout in a tree of
# symlinks under .mypy_cache/ and checks it there; paths in the messages are mapped back.
# Usage: bash .ci/typecheck.sh [mypy args...]   (the settings are in pyproject.toml, [tool.mypy])
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tree=$root/.mypy_cache/installed-layout
rm -rf "$tree" && mkdir -p "$tree/frontier_qa"
for entry in "$root"/frontier_qa/*; do ln -s "$entry" "$tree/frontier_qa/$(basename "$entry")"; done
ln -s "$root/adapters" "$tree/frontier_qa/adapters"
ln -s "$root/plugins" "$tree/frontier_qa/plugins"
cd "$tree"
rc=0
python -m mypy --config-file "$root/pyproject.toml" --cache-dir "$root/.mypy_cache" "$@" frontier_qa \
  | sed -e 's#^frontier_qa/adapters/#adapters/#' -e 's#^frontier_qa/plugins/#plugins/#' || rc=$?
# what users' type checkers see of the lazily exported names (py.typed): none may be Any
python "$root/.ci/typed_exports.py" "$root/pyproject.toml" "$root/.mypy_cache" || rc=1
exit "$rc"
