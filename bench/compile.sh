#!/usr/bin/env bash
# `parplan compile` end to end, as a user runs it: ONNX import, training
# step, search, boxing, lowering, memory planning and plan.pb written, on
# zoo models (shape-only ONNX: no weights are read), the median of several
# runs per row.
#
#   bench/compile.sh            print the tables
#   bench/compile.sh --record   also append them to bench/results/compile.md
#
# Target (issue: the search on the user's path): GPT-3 175B at batch 128,
# bf16, recompute full, for 1024 H100s (dgx-h100x128 as 128x8) in under
# 10 s on one core with peak RSS under 2 GB, time at most linear in layers
# (rows at 24, 48 and 96 layers); megatron-7.5b on 1x8 and 16x8 shows how
# the time grows with devices. "wall s" and "peak RSS" are the
# whole process, pinned to one core; the second table splits the last
# run's time by pass and step (--mlir-timing; "export" is the programs to
# plan.proto with its check, "write" the files, "rest" what no pass or
# step names, such as freeing the IR). Environment: RUNS (default 5), PARPLAN_BUILD_DIR
# (default build), CORE (default the last one: core 0 takes the machine's
# interrupts, which on the 2-core development VM costs a third more time).
# Every row is one mesh (--stages 1): bench/pipeline.sh measures stages.
# A row times the compile whether or not its plan fits (--allow-over-memory:
# the 24-layer GPT-3 row's arena needs 82 GB of an H100's 80).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require time parplan-zoo parplan
core=${CORE:-$(($(nproc) - 1))}
work=${TMPDIR:-/tmp}/parplan-bench-compile
mkdir -p "$work"


# preset|batch|cluster|mesh|strategy|layers (empty: the preset's)
rows=(
  "gpt3-175b|128|dgx-h100x128|128x8|auto|24"
  "gpt3-175b|128|dgx-h100x128|128x8|auto|48"
  "gpt3-175b|128|dgx-h100x128|128x8|auto|"
  "megatron-7.5b|16|dgx-h100|1x8|megatron|"
  "megatron-7.5b|16|dgx-h100x16|16x8|megatron|"
)

table="| model | batch | cluster | mesh | strategy | programs | plan.pb MB | median wall s | min s | max s | peak RSS MB |
|---|---|---|---|---|---|---|---|---|---|---|"
passes="| model | mesh | sbp-assign s | lower-to-plan s | plan-memory s | verify s | export s | write s | rest s | total s |
|---|---|---|---|---|---|---|---|---|---|"
for entry in "${rows[@]}"; do
  IFS='|' read -r preset batch cluster mesh strategy layers <<<"$entry"
  model=$work/$preset${layers:+-$layers}-b$batch.onnx
  # Written afresh: a model left by an older build's zoo would be another.
  "$bin/parplan-zoo" gpt --preset "$preset" --batch "$batch" \
    ${layers:+--layers "$layers"} --shape-only -o "$model" >/dev/null
  name=$preset${layers:+ ($layers layers)}
  times=()
  peaks=()
  for ((i = 0; i < runs; i++)); do
    rm -rf "$work/out"
    out=$( { /usr/bin/time -f "TIME %e RSS %M" taskset -c "$core" "$bin/parplan" compile "$model" \
      --train --mixed-precision bf16 --recompute full \
      --cluster "$cluster" --mesh "$mesh" --strategy "$strategy" --stages 1 -q -o "$work/out" \
      --allow-over-memory --mlir-timing >"$work/summary.txt"; } 2>&1)
    times+=("$(echo "$out" | awk '/^TIME/ { print $2 }')")
    peaks+=("$(echo "$out" | awk '/^TIME/ { print $4 }')")
  done
  programs=$(awk '/^compiled/ { gsub(/[()]/, ""); print $(NF-1) }' "$work/summary.txt")
  bytes=$(stat -c %s "$work/out/plan.pb")
  summarize "${times[@]}" "${peaks[@]}"
  table+=$'\n'"$(awk -v m="$name" -v b="$batch" -v c="$cluster" -v me="$mesh" \
    -v s="$strategy" -v p="$programs" -v by="$bytes" -v md="$median" -v lo="$low" \
    -v hi="$high" -v pk="$peak" \
    'BEGIN { printf "| %s | %s | %s | %s | %s | %s | %.1f | %.2f | %.2f | %.2f | %.0f |", m, b, c, me, s, p, by / 1e6, md, lo, hi, pk / 1024 }')"
  pass() { echo "$out" | awk -v name="$1" '$0 ~ "  " name "$" { print $1; exit }'; }
  passes+=$'\n'"| $name | $mesh | $(pass SbpAssign) | $(pass LowerToPlan) | $(pass PlanMemory) | $(pass Verify) | $(pass Export) | $(pass Write) | $(pass Rest) | $(pass Total) |"
done

echo "$table"
echo
echo "$passes"
if [[ ${1:-} == --record ]]; then
  record bench/results/compile.md "parplan compile end to end, bf16, recompute full, pinned to core $core, median of $runs runs" "$table"$'\n\n'"$passes"
fi
