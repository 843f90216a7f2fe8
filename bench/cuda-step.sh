#!/usr/bin/env bash
# The CUDA backend's step time on one GPU, against the sum of its kernels
# and against cuBLAS's own matmul throughput, for zoo models: the median of
# several steps per row (the first step, a warm-up, is left out).
#
#   bench/cuda-step.sh            print the table
#   bench/cuda-step.sh --record   also append it to bench/results/cuda.md
#
# Targets (CUDA backend issue), on an H100: matmul-heavy steps reach at least
# 70% of cuBLAS's throughput, and the zoo GPT's step is within 1.3x of the
# sum of its kernels. "kernels ms" is `parplan-run --profile`'s sum over the
# instructions of a step, each timed alone with CUDA events; "step/kernels"
# is the median step (no profiling, streams overlapping) over that sum: the
# launch overhead and host work. "matmul TFLOP/s" is what the plan's matmuls
# achieved under --profile; "cuBLAS TFLOP/s" is the best float32 matmul
# `parplan calibrate` measured (square shapes, so the share is a lower
# bound). Needs a GPU; prints "skipped: ..." and exits 0 without one.
# Environment: RUNS (steps measured, default 10), PARPLAN_BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require parplan-zoo parplan parplan-run
runs=${RUNS:-10}
work=${TMPDIR:-/tmp}/parplan-bench-cuda
mkdir -p "$work"

if ! "$bin/parplan" calibrate --quick -o "$work/cluster.yaml" >"$work/calibrate.log" 2>&1; then
  echo "skipped: $(tail -1 "$work/calibrate.log")"
  exit 0
fi
gpu=$(awk '/^ *- name:/ { sub(/^ *- name: */, ""); gsub(/"/, ""); print; exit }' "$work/cluster.yaml")
cublas=$(awk '/f32:/ { print $2, $3; exit }' "$work/cluster.yaml")

rows=(
  "mlp-4096|mlp --sizes 4096,4096,4096,4096 --batch 4096"
  "gpt-small|gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 --batch 8"
  "gpt-1024|gpt --layers 4 --hidden 1024 --heads 16 --seq 512 --vocab 8192 --batch 8"
)
table="| model | median step ms | kernels ms | step/kernels | matmul TFLOP/s | cuBLAS f32 |
|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
  IFS='|' read -r name zoo <<<"$row"
  frozen=()
  [[ $zoo == gpt* ]] && frozen=(--frozen transformer.causal_mask)
  # shellcheck disable=SC2086
  "$bin/parplan-zoo" $zoo -o "$work/$name.onnx" >/dev/null
  "$bin/parplan" compile "$work/$name.onnx" --train --mesh 1 \
    --cluster "$work/cluster.yaml" "${frozen[@]}" --optimizer adam \
    -o "$work/$name" >/dev/null
  "$bin/parplan-run" "$work/$name/plan.pb" --backend cuda \
    --steps $((runs + 1)) >"$work/$name.log"
  mapfile -t times < <(grep -o '([0-9.]* ms)' "$work/$name.log" | tail -n +2 | tr -d '(ms )')
  summarize "${times[@]}"
  "$bin/parplan-run" "$work/$name/plan.pb" --backend cuda --profile \
    --steps $((runs + 1)) >"$work/$name.profile"
  kernels=$(awk '/^profile total:/ { print $3 }' "$work/$name.profile")
  matmul=$(awk '/^profile nn.matmul:/ { for (i = 1; i <= NF; i++) if ($(i+1) == "GFLOP/s") print $i / 1000 }' "$work/$name.profile")
  ratio=$(awk -v s="$median" -v k="$kernels" 'BEGIN { printf "%.2f", s / k }')
  table+="
| $name | $median | $kernels | $ratio | ${matmul:-–} | $cublas |"
done
echo "$table"
if [[ ${1:-} == --record ]]; then
  record bench/results/cuda.md "$gpu, $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'CUDA'), $runs steps per row" "$table"
fi
