#!/usr/bin/env bash
# The cost model against a real training step on this machine's GPU:
# calibrates the local GPUs (parplan calibrate --quick), compiles a zoo GPT
# for one device on that cluster (--mesh 1 --cluster FILE), runs STEPS steps
# of the plan with parplan-run's CUDA backend, and compares the predicted
# step time (predicted_step_time_s of summary.json) with the median measured
# one (steps 3..STEPS: the first two warm up allocations and cuBLAS), for
# zoo GPTs of three sizes against one calibration.
#
#   bench/calibrate-vs-model.sh   print the rows and append them to
#                                 bench/results/calibration.md
#
# Needs a GPU and a build with CUDA (PARPLAN_HAVE_CUDA); where no GPU is
# visible it prints "skipped: no CUDA device" and exits 0. Environment:
# PARPLAN_BUILD_DIR (default build), STEPS (default 20), GPT_ARGS (the
# parplan-zoo gpt models, separated by ';'; default three sizes from hidden
# 256, where launches take most of the step, to 1024, where kernels do),
# KEEP (a folder that receives the logs and plans' summaries). The
# compiled plans are fp32 (no --mixed-precision): the model prices their
# matmuls at the calibrated f32 peak.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require parplan-zoo parplan parplan-run
steps=${STEPS:-20}
gpt_models=${GPT_ARGS:---layers 2 --hidden 256 --heads 4 --seq 128 --vocab 2048 --batch 8;--layers 4 --hidden 512 --heads 8 --seq 256 --vocab 4096 --batch 8;--layers 8 --hidden 1024 --heads 16 --seq 512 --vocab 8192 --batch 8}
out=${TMPDIR:-/tmp}/parplan-bench-calibrate
rm -rf "$out"
results=bench/results/calibration.md
mkdir -p "$out"

(( steps >= 3 )) || { echo "bench: STEPS must be at least 3" >&2; exit 1; }

# "0: NVIDIA H100 80GB HBM3, 85.03 GB, compute capability 9.0", or
# "no CUDA device: REASON".
devices=$("$bin/parplan" calibrate --list-devices)
if [[ -z $devices || $devices == "no CUDA device"* ]]; then
  echo "skipped: no CUDA device${devices:+ (${devices#no CUDA device: })}"
  exit 0
fi
gpu=$(head -1 <<<"$devices" | sed -E 's/^[0-9]+: (.*), [0-9.e+]+ GB, compute capability .*$/\1/')

"$bin/parplan" calibrate --quick --devices 1 -o "$out/cluster.yaml"
# One rank, no mpirun (an MPI singleton); Open MPI refuses root unless told.
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

rows=()
IFS=';' read -ra models <<<"$gpt_models"
for gpt_args in "${models[@]}"; do
  model=$out/gpt-$((${#rows[@]} + 1))
  mkdir -p "$model"
  # shellcheck disable=SC2086 # gpt_args is a list of flags.
  "$bin/parplan-zoo" gpt $gpt_args -o "$model/gpt.onnx" >/dev/null
  "$bin/parplan" compile "$model/gpt.onnx" --train --mesh 1 \
    --cluster "$out/cluster.yaml" \
    --optimizer adam --lr 0.01 -o "$model" >/dev/null
  predicted=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["predicted_step_time_s"])' \
    "$model/summary.json")
  # "step N: loss X (T ms)" (or "step N: T ms" for a plan without a loss).
  "$bin/parplan-run" "$model/plan.pb" --steps "$steps" --backend cuda >"$model/run.log"
  "$bin/parplan-run" "$model/plan.pb" --steps 4 --backend cuda --profile >"$model/profile.log"
  measured=$(sed -nE 's/^step ([0-9]+):.*[( ]([0-9.]+) ms\)?$/\1 \2/p' "$model/run.log" |
    awk '$1 >= 3 { print $2 / 1000 }' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }') ||
    { echo "bench: no step times in $model/run.log" >&2; exit 1; }
  rows+=("$(awk -v d="$(date -u '+%Y-%m-%d %H:%M')" \
    -v c="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    -v g="$gpu" -v m="gpt $gpt_args" -v p="$predicted" -v s="$measured" \
    'BEGIN { printf "| %s | %s | %s | %s | %.3f | %.3f | %.2f |", d, c, g, m, p * 1000, s * 1000, s / p }')")
  echo "${rows[-1]}"
done
if [[ -n ${KEEP:-} ]]; then
  mkdir -p "$KEEP"
  cp -r "$out/." "$KEEP/"
fi

if [[ ! -f $results ]]; then
  mkdir -p "$(dirname "$results")"
  cat > "$results" <<'HEADER'
# Calibrated cost model against measured steps: results

Produced by `bench/calibrate-vs-model.sh`, which needs a GPU and a build with
CUDA (elsewhere it prints "skipped: no CUDA device" and records nothing).
Each run: `parplan calibrate --quick --devices 1` measures the GPU, zoo GPTs
of three sizes are compiled for it (`parplan compile --train --mesh 1
--cluster` that file, fp32, Adam) and 20 steps of each plan run with
`parplan-run --backend cuda`.

| column | meaning |
|---|---|
| date | when the row was taken, UTC |
| commit | the source tree's commit |
| GPU | the GPU, as CUDA names it |
| model | the `parplan-zoo gpt` flags |
| predicted ms | `predicted_step_time_s` of the plan's `summary.json`: the cost model on the calibrated cluster |
| measured ms | median step time of steps 3..20 as `parplan-run` prints it (rank 0's wall time of a step) |
| measured / predicted | above 1: the model is optimistic; below 1: pessimistic |

| date | commit | GPU | model | predicted ms | measured ms | measured / predicted |
|---|---|---|---|---|---|---|
HEADER
fi
printf '%s\n' "${rows[@]}" >> "$results"
echo "recorded in $results"
