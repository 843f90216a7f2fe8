#!/usr/bin/env bash
# sbp-assign speed and memory on the GPT-3 175B architecture over 1024 GPUs
# (128 DGX H100 nodes, the preset dgx-h100x128, as a 128x8 mesh), at several
# depths, the median of several runs per row.
#
#   bench/sbp-assign.sh            print the table
#   bench/sbp-assign.sh --record   also append it to bench/results/sbp-assign.md
#
# Target (SBP assignment issue): under 10 s on one core with peak memory
# under 2 GB at 96 layers, time at most linear in the number of layers.
# "pass s" is the pass alone (-mlir-timing); "peak RSS" is the whole
# parplan-opt process (parsing the program included). The program is the
# training step nn-autodiff builds (forward, loss, backward, Adam; the
# causal mask frozen), the graph the search plans in `parplan compile`;
# GRAPH=forward plans the forward graph priced as a training step instead
# (the figures recorded before autodiff existed). Environment: RUNS (default 5),
# PARPLAN_BUILD_DIR (default build), BATCH (default 128: one sequence per
# data-parallel rank; a whole GPT-3 batch of 1536 does not fit without
# pipelining and recomputation, which later passes add).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require time parplan-zoo parplan parplan-opt
graph=${GRAPH:-training}
batch=${BATCH:-128}
work=${TMPDIR:-/tmp}/parplan-bench-sbp-assign
cluster=dgx-h100x128
mkdir -p "$work"


rows=(
  "24|true" "48|true" "96|true" "96|false"
)

table="| layers | share-layers | nn ops | search nodes | median pass s | min s | max s | peak RSS MB |
|---|---|---|---|---|---|---|---|"
for entry in "${rows[@]}"; do
  layers=${entry%%|*}
  share=${entry#*|}
  model=$work/gpt3-175b-$layers.onnx
  program=$work/gpt3-175b-$layers.mlir
  # Written afresh: a model or program left by an older build would be
  # another.
  "$bin/parplan-zoo" gpt --preset gpt3-175b --layers "$layers" \
    --batch "$batch" --shape-only -o "$model" >/dev/null
  "$bin/parplan" import "$model" -o "$program" >/dev/null
  if [[ $graph == training ]]; then
    step=$work/gpt3-175b-$layers.step.mlir
    [[ -f $step ]] || "$bin/parplan-opt" "$program" \
      -nn-autodiff -o "$step"
    program=$step
  fi
  ops=$(grep -c ' = nn\.' "$program")
  times=()
  peaks=()
  for ((i = 0; i < runs; i++)); do
    out=$( { /usr/bin/time -f "RSS %M" taskset -c 0 "$bin/parplan-opt" "$program" \
      -sbp-assign="cluster=$cluster mesh=128x8 share-layers=$share" \
      -mlir-timing -o "$work/out.mlir"; } 2>&1)
    times+=("$(echo "$out" | awk '/SbpAssign/ { print $1; exit }')")
    peaks+=("$(echo "$out" | awk '/^RSS/ { print $2 }')")
  done
  nodes=$(grep -o 'search_nodes = [0-9]*' "$work/out.mlir" | awk '{ print $3 }')
  summarize "${times[@]}" "${peaks[@]}"
  row=$(awk -v l="$layers" -v s="$share" -v o="$ops" -v n="$nodes" -v m="$median" \
    -v lo="$low" -v hi="$high" -v p="$peak" \
    'BEGIN { printf "| %s | %s | %s | %s | %.3f | %.3f | %.3f | %.0f |", l, s, o, n, m, lo, hi, p / 1024 }')
  table+=$'\n'"$row"
done

echo "$table"
if [[ ${1:-} == --record ]]; then
  record bench/results/sbp-assign.md "$graph graph, pinned to one core, median of $runs runs, batch $batch, mesh 128x8" "$table"
fi
