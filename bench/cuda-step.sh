#!/usr/bin/env bash
# The CUDA backend's step time on one GPU, against the sum of its kernels
# and against cuBLAS's own matmul throughput, for zoo models: the median of
# several steps per row (the first step, a warm-up, is left out).
#
#   bench/cuda-step.sh            print the table
#   bench/cuda-step.sh --record   also append it to bench/results/cuda.md
#
# Targets (CUDA backend issue), on an H100: the plan's matmuls take at most
# 1/0.7 of cuBLAS's time for the same shapes, and the zoo GPT's step is
# within 1.3x of the sum of its kernels. Rows: an MLP and GPTs in f32, with
# TF32 (parplan-run --tf32) and in bf16 (--mixed-precision bf16), and a GPT
# with GPT-2's 50,257-word vocabulary. "kernels ms" is `parplan-run
# --profile`'s sum over the instructions of a step, each timed alone with
# CUDA events; "step/kernels" is the median step (no profiling, streams
# overlapping) over that sum: below 1, overlap; above, launch overhead and
# host work. "matmul TFLOP/s" is what the plan's matmuls achieved under
# --profile, beside the best cuBLAS figure `parplan calibrate` measured for
# the type (square shapes); "cuBLAS same shapes ms" times every matmul
# shape of the step with PyTorch (bench/cublas-shapes.py; "–" without
# PyTorch) and "cuBLAS / matmul" is the share of cuBLAS's speed the plan's
# matmuls reach. The last columns are the per-step times of the row-wise
# kernels (softmax and log_softmax with their gradients, layer_norm and its
# gradient, softmax cross-entropy and its gradient) and of reduce_sum and
# reduce_mean. Needs a GPU; prints "skipped: ..." and exits 0 without one.
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
# peak TYPE: cuBLAS's best TFLOP/s for TYPE as calibrate measured it, from
# "peak_flops: {f64: 51.2 TFLOP/s, f32: ...}".
peak() {
  grep -oE "[{ ,]$1: [0-9.e+]+ [TGP]FLOP/s" "$work/cluster.yaml" | head -1 |
    awk '{ v = $2; if ($3 == "GFLOP/s") v /= 1000; if ($3 == "PFLOP/s") v *= 1000; printf "%.1f\n", v }'
}

# name|parplan-zoo flags|parplan compile flags|parplan-run flags|matmul type
rows=(
  "mlp-4096|mlp --sizes 4096,4096,4096,4096 --batch 4096|||f32"
  "mlp-4096 tf32|mlp --sizes 4096,4096,4096,4096 --batch 4096||--tf32|tf32"
  "mlp-4096 bf16|mlp --sizes 4096,4096,4096,4096 --batch 4096|--mixed-precision bf16||bf16"
  "gpt-small|gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 --batch 8|||f32"
  "gpt-1024|gpt --layers 4 --hidden 1024 --heads 16 --seq 512 --vocab 8192 --batch 8|||f32"
  "gpt-1024 tf32|gpt --layers 4 --hidden 1024 --heads 16 --seq 512 --vocab 8192 --batch 8||--tf32|tf32"
  "gpt-1024 bf16|gpt --layers 4 --hidden 1024 --heads 16 --seq 512 --vocab 8192 --batch 8|--mixed-precision bf16||bf16"
  "gpt2-vocab|gpt --layers 2 --hidden 768 --heads 12 --seq 256 --vocab 50257 --batch 4|||f32"
)
table="| model | median step ms | kernels ms | step/kernels | matmul TFLOP/s | cuBLAS peak TFLOP/s | matmul ms | cuBLAS same shapes ms | cuBLAS / matmul | softmax ms | layer norm ms | cross-entropy ms | reduce ms |
|---|---|---|---|---|---|---|---|---|---|---|---|---|"
# op_ms PROFILE OP...: the summed ms per step of the profile's rows for OPs.
op_ms() {
  local file=$1
  shift
  local pattern
  pattern=$(IFS='|'; echo "$*")
  awk -v p="^profile nn\\.($pattern):" '$0 ~ p { for (i = 1; i <= NF; i++) if ($(i+1) == "ms") s += $i } END { printf "%.3f", s }' "$file"
}
for row in "${rows[@]}"; do
  IFS='|' read -r name zoo compile_flags run_flags type <<<"$row"
  slug=${name// /-}
  # shellcheck disable=SC2086
  "$bin/parplan-zoo" $zoo -o "$work/$slug.onnx" >/dev/null
  # shellcheck disable=SC2086
  "$bin/parplan" compile "$work/$slug.onnx" --train --mesh 1 \
    --cluster "$work/cluster.yaml" --optimizer adam \
    $compile_flags -o "$work/$slug" >/dev/null
  # shellcheck disable=SC2086
  "$bin/parplan-run" "$work/$slug/plan.pb" --backend cuda $run_flags \
    --steps $((runs + 1)) >"$work/$slug.log"
  mapfile -t times < <(grep -o '([0-9.]* ms)' "$work/$slug.log" | tail -n +2 | tr -d '(ms )')
  summarize "${times[@]}"
  # shellcheck disable=SC2086
  "$bin/parplan-run" "$work/$slug/plan.pb" --backend cuda $run_flags --profile \
    --steps $((runs + 1)) >"$work/$slug.profile"
  kernels=$(awk '/^profile total:/ { print $3 }' "$work/$slug.profile")
  matmul=$(awk '/^profile nn.matmul:/ { for (i = 1; i <= NF; i++) if ($(i+1) == "GFLOP/s") print $i / 1000 }' "$work/$slug.profile")
  cublas=$(peak "$type")
  matmul_ms=$(op_ms "$work/$slug.profile" matmul gemm)
  # cuBLAS on the same shapes (bench/cublas-shapes.py, with PyTorch).
  same=–
  share=–
  if shapes=$(python3 bench/cublas-shapes.py "$work/$slug.profile" $run_flags 2>/dev/null); then
    same=$(sed -E 's/cublas_ms=([0-9.]+).*/\1/' <<<"$shapes")
    share=$(awk -v c="$same" -v m="$matmul_ms" 'BEGIN { if (m > 0) printf "%.0f%%", 100 * c / m; else print "–" }')
  fi
  ratio=$(awk -v s="$median" -v k="$kernels" 'BEGIN { printf "%.2f", s / k }')
  table+="
| $name | $median | $kernels | $ratio | ${matmul:-–} | ${cublas:-–} $type | $matmul_ms | $same | $share | $(op_ms "$work/$slug.profile" softmax softmax_grad log_softmax log_softmax_grad) | $(op_ms "$work/$slug.profile" layer_norm layer_norm_grad) | $(op_ms "$work/$slug.profile" softmax_cross_entropy softmax_cross_entropy_grad) | $(op_ms "$work/$slug.profile" reduce_sum reduce_mean) |"
done
echo "$table"
if [[ -n ${KEEP:-} ]]; then mkdir -p "$KEEP"; cp -r "$work/." "$KEEP/"; fi
if [[ ${1:-} == --record ]]; then
  record bench/results/cuda.md "$gpu, $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'CUDA'), $runs steps per row" "$table"
fi
