#!/usr/bin/env bash
# Auto against Megatron-LM's grid at full size, under one cost model: the
# pipeline issue's goal that auto's predicted step is at most the best grid
# point's. Models (shape only, global batch 1536, bf16):
#
#   gpt3-175b   (96 layers) on 1,024 H100s (dgx-h100x128)
#   megatron-39b (48 layers) on 512 H100s (dgx-h100x64)
#
# Grid: every `--strategy megatron --tensor T --pipeline P`, T in 1, 2, 4,
# 8 and P a power of two up to the layers and the mesh's rows, data
# parallel over the rest (D = devices / T / P), with Megatron's micro-batch
# of one sequence per data-parallel rank: M = 1536 / D micro-batches (a
# point whose D does not divide the batch is left out, as Megatron refuses
# it). Each is the search's predicted step after the compile's own
# recomputation fallback (`--emit sbp`: nothing is lowered); "no fit" when
# even full recomputation does not fit. Each point's schedule is searched
# (1F1B, eager-1F1B, GPipe, interleaved), as a user of Megatron-LM picks
# 1F1B or interleaved. Auto is `--stages auto` at the micro-batch counts
# in AUTO_MICRO_BATCHES (default "192 auto": auto searches the count too),
# each its predicted step; the least is auto's.
#
#   bench/megatron-grid.sh            print the tables
#   bench/megatron-grid.sh --record   also append them to
#                                     bench/results/megatron-grid.md
#
# About 1.5 to 2 minutes per model on one core of the development VM (3 to
# 4 min in all, 2026-11-27).
# Environment: MODELS (default "gpt3-175b megatron-39b"),
# AUTO_MICRO_BATCHES, PARPLAN_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require parplan parplan-zoo
mode=${1:-}
work=${TMPDIR:-/tmp}/parplan-bench-megatron-grid
# Models are written afresh by this build's parplan-zoo: one left from an
# older build would be another model.
rm -rf "$work"
mkdir -p "$work"
batch=1536

declare -A clusterOf=([gpt3-175b]=dgx-h100x128 [megatron-39b]=dgx-h100x64)
declare -A devicesOf=([gpt3-175b]=1024 [megatron-39b]=512)
declare -A layersOf=([gpt3-175b]=96 [megatron-39b]=48)

# Sets `step`, the search's predicted step of one compile (sbp.plan's
# step_time; empty when no plan fits), and `stages`, the meshes it laid the
# model out on.
predicted() {
  "$bin/parplan" compile "$model" --train --batch "$batch" --mixed-precision bf16 \
    --cluster "$cluster" --emit sbp "$@" >"$work/laid-out.mlir" 2>/dev/null || true
  stages=$(grep -c "^  sbp.mesh @" "$work/laid-out.mlir" || true)
  step=$(sed -n 's/.*step_time = \([0-9.eE+-]*\).*/\1/p' "$work/laid-out.mlir" | head -1)
}
# "12.34 s", or "no fit" for nothing.
seconds() {
  if [[ -n $1 ]]; then awk -v s="$1" 'BEGIN { printf "%.2f s", s }'; else echo "no fit"; fi
}

tables=""
for preset in ${MODELS:-gpt3-175b megatron-39b}; do
  cluster=${clusterOf[$preset]}
  devices=${devicesOf[$preset]}
  layers=${layersOf[$preset]}
  model=$work/$preset.onnx
  "$bin/parplan-zoo" gpt --preset "$preset" --shape-only --dynamic-batch \
    -o "$model" >/dev/null
  pipelines=()
  for ((p = 1; p <= layers && p <= devices; p *= 2)); do pipelines+=("$p"); done
  header="| tensor \\ pipeline |"
  rule="|---|"
  for p in "${pipelines[@]}"; do header+=" $p |"; rule+="---|"; done
  grid="$header"$'\n'"$rule"
  best=""
  bestPoint=""
  for tensor in 1 2 4 8; do
    row="| $tensor |"
    for p in "${pipelines[@]}"; do
      data=$((devices / tensor / p))
      if ((devices / tensor % p != 0 || data == 0 || batch % data != 0)); then
        row+=" - |"
        continue
      fi
      micro=$((batch / data))
      predicted --strategy megatron --tensor "$tensor" --pipeline "$p" \
        --micro-batches "$micro"
      if [[ -z $step ]]; then
        row+=" no fit |"
        continue
      fi
      row+=$(awk -v s="$step" -v m="$micro" 'BEGIN { printf " %.2f s (M %d) |", s, m }')
      if improves "$step" "$best"; then
        best=$step
        bestPoint="tensor $tensor, pipeline $p, data $data, M $micro"
      fi
    done
    grid+=$'\n'"$row"
  done
  autoRows=""
  autoBest=""
  for micro in ${AUTO_MICRO_BATCHES:-192 auto}; do
    predicted --stages auto --micro-batches "$micro"
    autoRows+=$'\n'"| auto (--stages auto, M $micro: $stages stages) | $(seconds "$step") |"
    if [[ -n $step ]] && improves "$step" "$autoBest"; then
      autoBest=$step
    fi
  done
  verdict="none fits"
  if [[ -n $best && -n $autoBest ]]; then
    verdict=$(awk -v a="$autoBest" -v b="$best" 'BEGIN { printf "%s (%+.1f%%)", a <= b ? "auto at most the grid" : "the grid is faster", (a / b - 1) * 100 }')
  fi
  tables+="### $preset, batch $batch, bf16, on $devices H100s ($cluster)"$'\n\n'"$grid"$'\n\n'"| plan | predicted step |
|---|---|
| best Megatron grid point (${bestPoint:-none}) | $(seconds "$best") |$autoRows
| verdict | $verdict |"$'\n\n'
done

echo "$tables"
if [[ $mode == --record ]]; then
  record bench/results/megatron-grid.md "predicted steps under the cost model (nothing executed); grid at Megatron's micro-batch of one sequence per data-parallel rank" "$tables"
fi
