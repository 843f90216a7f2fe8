#!/usr/bin/env bash
# parplan-run's training step on one GPU against the same model in PyTorch:
# eager (attention op by op, as exported), eager with
# scaled_dot_product_attention, and torch.compile (bench/torch-gpt.py, the
# zoo's GPT in PyTorch). Rows: GPT-2 small's shapes (12 layers, hidden 768,
# 12 heads) in f32, TF32 and bf16, and 24 layers of hidden 1024 (16 heads)
# in bf16; batch 8, sequence 1024, vocabulary 50,257, AdamW. Each figure is
# the median of RUNS steps (default 10) after warm-up. "parplan / eager"
# and the others are parplan-run's median over PyTorch's: the goals (the
# fused-kernels issue) are at most 1.0 against eager (f32, TF32) and
# against SDPA (bf16), at most 1.3 against torch.compile (bf16). The last
# column is `parplan-run --profile`'s five costliest instruction kinds.
#
#   bench/torch-step.sh                  compile, run and print the table
#   bench/torch-step.sh --record         also append it to bench/results/torch-step.md
#   bench/torch-step.sh --prepare DIR    only compile the plans into DIR
#                                        (the build machine; no GPU needed)
#   PLANS=DIR bench/torch-step.sh ...    run plans compiled with --prepare
#                                        (the GPU machine, which has no parplan)
#
# On a GPU machine without the build (docs/cuda.md): scripts/device-bundle.sh,
# then --prepare .device/plans here, and there
# `source .device/env.sh && PLANS=.device/plans bench/torch-step.sh --record`.
# Needs a GPU for the table (prints "skipped: ..." and exits 0 without one)
# and PyTorch for its columns ("–" without it).
# Environment: RUNS, PARPLAN_BUILD_DIR, PLANS, TORCH_MODES (default "eager
# sdpa compile"), ROWS (names to run, default all).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
runs=${RUNS:-10}
work=${TMPDIR:-/tmp}/parplan-bench-torch
mkdir -p "$work"

# name|zoo shape|parplan compile flags|parplan-run flags|torch precision
rows=(
  "gpt2-small f32|--layers 12 --hidden 768 --heads 12|||f32"
  "gpt2-small tf32|--layers 12 --hidden 768 --heads 12||--tf32|tf32"
  "gpt2-small bf16|--layers 12 --hidden 768 --heads 12|--mixed-precision bf16||bf16"
  "gpt-24x1024 bf16|--layers 24 --hidden 1024 --heads 16|--mixed-precision bf16||bf16"
)
common_shape="--seq 1024 --vocab 50257 --batch 8"
slug() { echo "${1// /-}"; }
selected() { [[ -z ${ROWS:-} || " $ROWS " == *" $(slug "$1") "* ]]; }

prepare() {
  local dir=$1 row name shape compile_flags
  require parplan-zoo parplan
  mkdir -p "$dir"
  for row in "${rows[@]}"; do
    IFS='|' read -r name shape compile_flags _ _ <<<"$row"
    selected "$name" || continue
    # shellcheck disable=SC2086
    "$bin/parplan-zoo" gpt $shape $common_shape --shape-only -o "$work/$(slug "$name").onnx" >/dev/null
    # shellcheck disable=SC2086
    "$bin/parplan" compile "$work/$(slug "$name").onnx" --train --mesh 1 \
      --optimizer adamw --cluster one-gpu-per-node $compile_flags \
      -o "$dir/$(slug "$name")" >/dev/null 2>"$work/$(slug "$name").compile.log" ||
      { cat "$work/$(slug "$name").compile.log" >&2; exit 1; }
  done
  echo "prepared $dir"
}

if [[ ${1:-} == --prepare ]]; then
  prepare "${2:?--prepare DIR}"
  exit 0
fi

if [[ -n ${PLANS:-} ]]; then
  plans=$PLANS
  run_bin=$(command -v parplan-run || echo "$bin/parplan-run")
else
  plans=$work/plans
  prepare "$plans" >/dev/null
  run_bin=$bin/parplan-run
fi
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU (nvidia-smi finds none)"
  exit 0
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
torch_version=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "no PyTorch")

# torch_ms ROW_SHAPE PRECISION MODE: PyTorch's median step, or –.
torch_ms() {
  local out
  # shellcheck disable=SC2086
  if out=$(python3 bench/torch-gpt.py $1 $common_shape --precision "$2" --mode "$3" --steps "$runs" 2>"$work/torch.err"); then
    sed -E 's/.*median_ms=([0-9.]+).*/\1/' <<<"$out"
  else
    echo "–"
  fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "–" }'; }

table="| model | precision | parplan-run ms | PyTorch eager ms | eager + SDPA ms | torch.compile ms | parplan / eager | parplan / SDPA | parplan / compile | costliest instructions (--profile, ms per step) |
|---|---|---|---|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
  IFS='|' read -r name shape _ run_flags precision <<<"$row"
  selected "$name" || continue
  s=$(slug "$name")
  ours=– costliest=–
  # shellcheck disable=SC2086
  if "$run_bin" "$plans/$s/plan.pb" --backend cuda $run_flags --steps $((runs + 1)) >"$work/$s.log" 2>&1 &&
    "$run_bin" "$plans/$s/plan.pb" --backend cuda $run_flags --profile --steps 3 >"$work/$s.profile" 2>&1; then
    mapfile -t times < <(grep -o '([0-9.]* ms)' "$work/$s.log" | tail -n +2 | tr -d '(ms )')
    summarize "${times[@]}"
    ours=$median
  else
    echo "$name: parplan-run failed: $(tail -1 "$work/$s.log" "$work/$s.profile" 2>/dev/null | tail -1)" >&2
  fi
  [[ -f $work/$s.profile ]] && costliest=$(awk '$2 != "total:" && /^profile [a-z_.]+:/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ms") { sub(/:$/, "", $2); print $i, $2; break } }' "$work/$s.profile" |
    sort -rn | head -5 | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')
  eager=– sdpa=– compiled=–
  for mode in ${TORCH_MODES:-eager sdpa compile}; do
    # SDPA and torch.compile are the bf16 goals; f32 and TF32 are set against eager.
    [[ $mode != eager && $precision != bf16 ]] && continue
    case $mode in
    eager) eager=$(torch_ms "$shape" "$precision" eager) ;;
    sdpa) sdpa=$(torch_ms "$shape" "$precision" sdpa) ;;
    compile) compiled=$(torch_ms "$shape" "$precision" compile) ;;
    esac
  done
  table+="
| $name | $precision | $ours | $eager | $sdpa | $compiled | $(ratio "$ours" "$eager") | $(ratio "$ours" "$sdpa") | $(ratio "$ours" "$compiled") | $costliest |"
  echo "$name: parplan-run $ours ms, eager $eager, sdpa $sdpa, compile $compiled" >&2
done
echo "$table"
if [[ -n ${KEEP:-} ]]; then mkdir -p "$KEEP"; cp "$work"/*.log "$work"/*.profile "$KEEP/" 2>/dev/null || true; fi
if [[ ${1:-} == --record ]]; then
  record bench/results/torch-step.md "$gpu, PyTorch $torch_version, $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'CUDA'), $runs steps per figure" "$table"
fi
