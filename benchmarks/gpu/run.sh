#!/usr/bin/env bash
# The GPU validation in one command, on a machine that reaches no package registry and no model hub.
#
#   bash benchmarks/gpu/prepare.sh                      # here, once: the carry set into .whl/ (needs a registry)
#   OUT=runs/gpu-validation bash benchmarks/gpu/run.sh  # there: one GPU; OUT defaults to runs/gpu-validation
#   bash benchmarks/gpu/run.sh --dry                    # CPU: everything but the GPU, tiny model (the tests)
#
# Steps; every log line starts with the clock time and the seconds since the start, so a run cut
# off by a timeout shows where it was:
#  1. the machine's `pip freeze` -> $OUT/pip-freeze.txt (makes the next carry set exact)
#  2. the carried wheels installed into a folder of their own (--no-deps --target: nothing of the
#     machine's is replaced) and frontier_qa laid out as installed (a tree of links), both put first
#     on PYTHONPATH
#  3. the carried packages' declared requirements checked against what is installed there
#     (carry.py verify; reported, never fatal) and the GPU smoke (smoke.py: CUDA visible, bf16
#     matmul rate) -> $OUT/device.json
#  4. benchmarks/gpu_validation.py --random SIZE for qwen3-0.6b then qwen3-1.7b (randomly
#     initialised, real shapes and vocabulary: speed and memory, not learning), each within what is
#     left of FQA_BUDGET_S (default 290 s from the start) -> $OUT/validation-SIZE.json and one
#     Markdown file of every table, $OUT/validation.md, rewritten after each size
# $OUT then holds 6 files (run.log too); the device tool returns at most 8.
#
# Environment: OUT, PYTHON (default python3), FQA_WHEELS (default .whl; --dry: .cache/gpu-host-wheels,
# from `prepare.sh --host`; `none` on your own machine, where `pip install -e ".[train]"` brought
# everything), FQA_SIZES (default "qwen3-0.6b qwen3-1.7b"; --dry: tiny), FQA_BUDGET_S.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
dry=0
if [ "${1:-}" = --dry ]; then dry=1; shift; fi
py=${PYTHON:-python3}
OUT=${OUT:-$repo/runs/gpu-validation}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ "$dry" = 1 ]; then
  wheels=${FQA_WHEELS:-$repo/.cache/gpu-host-wheels}
  sizes=${FQA_SIZES:-tiny}
  budget=${FQA_BUDGET_S:-900}
  export OMP_NUM_THREADS=1  # measures nothing on CPU; one thread keeps shared cores from stalling it
else
  wheels=${FQA_WHEELS:-$repo/.whl}
  sizes=${FQA_SIZES:-qwen3-0.6b qwen3-1.7b}
  budget=${FQA_BUDGET_S:-290}
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fqa-gpu.XXXXXX")  # models, runs, the installed wheels: not for $OUT
trap 'rm -rf "$work"' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True TOKENIZERS_PARALLELISM=false \
       VLLM_NO_USAGE_STATS=1 PYTHONUNBUFFERED=1 HF_HUB_DISABLE_PROGRESS_BARS=1 TQDM_DISABLE=1 \
       PYTHONDONTWRITEBYTECODE=1
exec > >(tee -a "$OUT/run.log") 2>&1
stamp() { while IFS= read -r line; do printf '[%s +%ss] %s\n' "$(date +%H:%M:%S)" "$SECONDS" "$line"; done; }
log() { echo "$*" | stamp; }
log "run.sh: repo $repo, OUT $OUT, sizes: $sizes, budget ${budget} s, dry run: $dry, python: $("$py" -V 2>&1)"

log "1/4 pip freeze -> pip-freeze.txt"
"$py" -m pip freeze --all >"$OUT/pip-freeze.txt" 2>&1 || log "pip freeze failed (see pip-freeze.txt)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | stamp || true
fi

if [ "$wheels" = none ]; then
  log "2/4 no carried wheels (FQA_WHEELS=none): this environment's packages and frontier_qa as installed"
else
  log "2/4 carried wheels from $wheels"
  setup=$(PYTHON="$py" bash benchmarks/gpu/install.sh "$wheels" "$work" 2> >(stamp >&2)) || {
    log "installing the carried wheels failed$([ "$dry" = 1 ] && echo " (prepare them: bash benchmarks/gpu/prepare.sh --host $wheels)")"
    exit 2
  }
  eval "$setup"
  log "PYTHONPATH=$PYTHONPATH"
fi

log "3/4 GPU smoke$([ "$wheels" != none ] && echo ", and the carried packages' requirements (carry.py verify)")"
if [ "$wheels" != none ]; then "$py" benchmarks/gpu/carry.py verify --json "$work/carry.json" 2>&1 | stamp; fi
smoke_args=()
if [ "$dry" = 1 ]; then smoke_args=(--cpu-ok); fi
smoke_rc=0
"$py" benchmarks/gpu/smoke.py --json "$work/smoke.json" "${smoke_args[@]}" 2>&1 | stamp || smoke_rc=$?
"$py" - "$work" "$OUT/device.json" <<'EOF'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
report = {name: json.loads((work / f"{name}.json").read_text()) if (work / f"{name}.json").is_file() else None
          for name in ("smoke", "carry")}
Path(sys.argv[2]).write_text(json.dumps(report, indent=2))
EOF
if [ "$smoke_rc" != 0 ]; then log "the GPU smoke failed (exit $smoke_rc): no validation"; exit "$smoke_rc"; fi

launcher=()
if [ "$dry" = 1 ]; then launcher=(benchmarks/gpu/device_sim.py --record "$OUT/imports.json"); fi
failed=0
summary() {  # every table so far, one Markdown file
  {
    echo "# GPU validation ($(date -u +%Y-%m-%d), benchmarks/gpu/run.sh)"
    echo
    "$py" -c 'import json, sys; s = json.load(open(sys.argv[1]))["smoke"] or {}; print("device: " + ", ".join(
        f"{k} {v}" for k, v in s.items()))' "$OUT/device.json" || echo "device: (no smoke report)"
    for size in $sizes; do
      echo
      echo "## $size"
      echo
      if [ -s "$work/$size.md" ]; then cat "$work/$size.md"; else echo "(not finished: see run.log)"; fi
    done
  } >"$OUT/validation.md"
}
log "4/4 validation, sizes: $sizes"
for size in $sizes; do
  left=$(( budget - SECONDS ))
  if [ "$left" -lt 30 ]; then log "$size: skipped, ${left} s of the ${budget} s budget left"; failed=1; continue; fi
  log "$size: starting, up to ${left} s"
  rc=0
  timeout -k 10 "$left" "$py" "${launcher[@]}" benchmarks/gpu_validation.py --random "$size" --out "$work/$size" \
    --markdown "$work/$size.md" 2>&1 | stamp || rc=$?
  if [ -f "$work/$size/validation.json" ]; then cp "$work/$size/validation.json" "$OUT/validation-$size.json"; fi
  if [ "$rc" = 0 ]; then log "$size: done"; else log "$size: FAILED (exit $rc; 124: out of time)"; failed=1; fi
  summary
done
summary
log "run.sh: finished in ${SECONDS} s; files in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
exit "$failed"
