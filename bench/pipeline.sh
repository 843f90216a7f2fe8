#!/usr/bin/env bash
# Pipeline schedules in the cost model (docs/pipeline.md), measured with
# `parplan pipeline` on equal stages (forward 1, backward 2, in stage-time
# units):
#
#   1. the bubble over the work of 1F1B against (P - 1) / M, and of
#      interleaved (2 chunks) against (P - 1) / 2M, as M grows;
#   2. 1F1B against eager-1F1B when a send between stages takes a
#      fraction of a forward (a boundary across hosts or regions): the time
#      and the first stage's activations held;
#   3. the command's own time on the largest shape the pipeline issue
#      names (128 stages, 1536 micro-batches), median of RUNS;
#   4. `parplan compile` of GPT-3 175B (shape only), global batch 1536,
#      bf16, on 1,024 H100s (dgx-h100x128) in --stages 16 of 8x8 devices
#      and 192 micro-batches, with the schedule searched (the default) and
#      given (1f1b), and with nothing given (--strategy auto searches the
#      stages, micro-batches and schedule): wall time and peak memory
#      (median of COMPILE_RUNS, default RUNS), the shape, the programs and
#      the plan file's size, whether it fits in 80 GB, and the predicted
#      step. About 2 s, 2 s and 9 to 10 s per run. The last row is the
#      same with the batch fixed in the model (1536, as an export without
#      dynamic axes writes it) and no --batch: micro-batches divide it;
#   5. auto against Megatron's grid under the same cost model, on 8 of
#      GPT-3 175B's layers (batch 1536, bf16, 192 micro-batches) on 128
#      H100s (dgx-h100x16): every --strategy megatron --tensor T
#      --pipeline P with T and P in 1, 2, 4, 8, and --stages auto, each
#      the search's predicted step (no fit: none). About 2 minutes.
#
#   bench/pipeline.sh            print the tables
#   bench/pipeline.sh --record   also append them to bench/results/pipeline.md
#
# Goals (pipeline issue): the bubble shrinks as (P - 1) / M; eager-1F1B
# beats 1F1B when sends are slow; GPT-3 175B on 1,024 GPUs fits in 80 GB
# and compiles in under 10 s (with the stages and micro-batches given;
# 9 to 10 s with everything searched, on a machine whose speed drifts).
# Environment: RUNS (default 5), COMPILE_RUNS (default RUNS),
# PARPLAN_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require time parplan parplan-zoo
mode=${1:-}

# The bubble over the work ("bubble X of it") of one run.
bubble() {
  "$bin/parplan" pipeline "$@" | sed -n 's/.*bubble \([0-9.]*\) of it.*/\1/p'
}
# The time, and the first stage's activations held.
timeAndHeld() {
  local out
  out=$("$bin/parplan" pipeline "$@")
  echo "$(echo "$out" | sed -n 's/^time \([0-9.]*\) .*/\1/p') $(echo "$out" | awk '$1 == "0" { print $4 }')"
}

bubbles="| stages | micro-batches | 1f1b bubble | (P - 1) / M | interleaved (2 chunks) bubble | (P - 1) / 2M |
|---|---|---|---|---|---|"
for p in 4 8; do
  for m in 8 16 32 64; do
    bubbles+=$'\n'"| $p | $m | $(bubble --stages $p --micro-batches $m) | $(awk -v p=$p -v m=$m 'BEGIN { printf "%.3f", (p - 1) / m }') | $(bubble --stages $p --micro-batches $m --schedule interleaved) | $(awk -v p=$p -v m=$m 'BEGIN { printf "%.3f", (p - 1) / (2 * m) }') |"
  done
done

sends="| stages | micro-batches | send / forward | 1f1b time | eager-1f1b time | eager / 1f1b | activations held on stage 0 (1f1b, eager) |
|---|---|---|---|---|---|---|"
for p in 4 8; do
  for send in 0 0.25 0.5 1 2; do
    read -r one oneHeld <<<"$(timeAndHeld --stages $p --micro-batches 32 --send $send)"
    read -r eager eagerHeld <<<"$(timeAndHeld --stages $p --micro-batches 32 --send $send --schedule eager-1f1b)"
    sends+=$'\n'"| $p | 32 | $send | $one | $eager | $(awk -v a=$eager -v b=$one 'BEGIN { printf "%.3f", a / b }') | $oneHeld, $eagerHeld |"
  done
done

times=()
peaks=()
for ((i = 0; i < runs; i++)); do
  out=$( { /usr/bin/time -f "TIME %e RSS %M" "$bin/parplan" pipeline --stages 128 \
    --micro-batches 1536 --schedule interleaved --chunks 4 --send 0.5 >/dev/null; } 2>&1)
  times+=("$(echo "$out" | awk '/^TIME/ { print $2 }')")
  peaks+=("$(echo "$out" | awk '/^TIME/ { print $4 }')")
done
summarize "${times[@]}" "${peaks[@]}"
command="| command | median s | min s | max s | peak RSS MB |
|---|---|---|---|---|
$(awk -v m="$median" -v lo="$low" -v hi="$high" -v p="$peak" \
  'BEGIN { printf "| parplan pipeline --stages 128 --micro-batches 1536 --schedule interleaved --chunks 4 --send 0.5 | %.3f | %.3f | %.3f | %.0f |", m, lo, hi, p / 1024 }')"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/parplan-zoo" gpt --preset gpt3-175b --shape-only --dynamic-batch -o "$work/gpt3-175b.onnx" >/dev/null
"$bin/parplan-zoo" gpt --preset gpt3-175b --shape-only --batch 1536 -o "$work/gpt3-175b-b1536.onnx" >/dev/null
compileRuns=${COMPILE_RUNS:-$runs}
gpt3="| command | stages | micro-batches | schedule | median s | min s | max s | peak RSS MB | programs | plan MB | estimated GB per device (fullest stage) | fits 80 GB | predicted step |
|---|---|---|---|---|---|---|---|---|---|---|---|---|"
# The shape given (the schedule searched, then given), then nothing given:
# --strategy auto pipelines the mesh over 128 nodes by itself. A plan over
# memory is written all the same (--allow-over-memory): the table says
# whether it fits.
for row in "symbolic|--stages 16 --micro-batches 192" "symbolic|--stages 16 --micro-batches 192 --schedule 1f1b" "symbolic|" "fixed|"; do
  given=${row#*|}
  if [[ ${row%%|*} == fixed ]]; then
    model=gpt3-175b-b1536.onnx batch=""
  else
    model=gpt3-175b.onnx batch="--batch 1536"
  fi
  times=()
  peaks=()
  for ((i = 0; i < compileRuns; i++)); do
    # shellcheck disable=SC2086 # the flags split into words
    out=$( { /usr/bin/time -f "TIME %e RSS %M" "$bin/parplan" compile "$work/$model" \
      --train $batch --mixed-precision bf16 --cluster dgx-h100x128 $given \
      --allow-over-memory -q -o "$work/out"; } 2>&1)
    times+=("$(echo "$out" | awk '/^TIME/ { print $2 }')")
    peaks+=("$(echo "$out" | awk '/^TIME/ { print $4 }')")
  done
  runs=$compileRuns summarize "${times[@]}" "${peaks[@]}"
  step=$(echo "$out" | sed -n 's/^  predicted step *\([0-9.]* [a-z]*\).*/\1/p')
  stages=$(echo "$out" | sed -n 's/.*(\([0-9]* stages of mesh [0-9x]*\),.*/\1/p')
  micro=$(echo "$out" | sed -n 's/^  micro-batches *\([0-9]*\) of.*/\1/p')
  chosen=$(echo "$out" | sed -n 's/.*stages run them by \([a-z0-9-]*\).*/\1/p')
  programs=$(echo "$out" | sed -n 's/.*plan.pb (\([0-9]*\) programs).*/\1/p')
  bytes=$(stat -c %s "$work/out/plan.pb")
  # The plan's figure is its fullest stage's.
  estimated=$(sed -n 's/^  "estimated_memory_bytes_per_device": \([0-9]*\),*$/\1/p' "$work/out/summary.json")
  gpt3+=$'\n'"$(awk -v m="$median" -v lo="$low" -v hi="$high" -v p="$peak" -v e="$estimated" -v s="$step" \
    -v given="$given" -v st="$stages" -v mb="$micro" -v c="$chosen" -v n="$programs" -v b="$bytes" \
    -v model="$model" -v batch="$batch" \
    'BEGIN { printf "| `parplan compile %s --train%s --mixed-precision bf16 --cluster dgx-h100x128%s` | %s | %s | %s | %.1f | %.1f | %.1f | %.0f | %d | %.1f | %.2f | %s | %s |", model, batch == "" ? "" : " " batch, given == "" ? "" : " " given, st, mb, c, m, lo, hi, p / 1024, n, b / 1e6, e / 1e9, e <= 80e9 ? "yes" : "no", s }')"
done

# Auto against the grid: the predicted step of each plan (sbp.plan's
# step_time), or "no fit".
"$bin/parplan-zoo" gpt --preset gpt3-175b --layers 8 --shape-only --dynamic-batch -o "$work/gpt3-8.onnx" >/dev/null
predicted() {
  "$bin/parplan" compile "$work/gpt3-8.onnx" --train --batch 1536 --mixed-precision bf16 \
    --cluster dgx-h100x16 --micro-batches 192 --emit sbp "$@" 2>/dev/null |
    sed -n 's/.*step_time = \([0-9.eE+-]*\).*/\1/p' | head -1 || true
}
grid="| tensor \\ pipeline | 1 | 2 | 4 | 8 |
|---|---|---|---|---|"
best=""
for tensor in 1 2 4 8; do
  row="| $tensor |"
  for stages in 1 2 4 8; do
    step=$(predicted --strategy megatron --tensor "$tensor" --pipeline "$stages")
    if [[ -z $step ]]; then
      row+=" no fit |"
      continue
    fi
    row+=$(awk -v s="$step" 'BEGIN { printf " %.2f s |", s }')
    if improves "$step" "$best"; then
      best=$step
      bestPoint="tensor $tensor, pipeline $stages"
    fi
  done
  grid+=$'\n'"$row"
done
autoStep=$(predicted --stages auto)
autoStages=$("$bin/parplan" compile "$work/gpt3-8.onnx" --train --batch 1536 --mixed-precision bf16 \
  --cluster dgx-h100x16 --micro-batches 192 --stages auto -o "$work/auto" |
  sed -n 's/^  stage counts *//p')
versus="| plan | predicted step |
|---|---|
$(awk -v s="$best" -v p="$bestPoint" 'BEGIN { printf "| best Megatron grid point (%s) | %.2f s |", p, s }')
$(awk -v s="$autoStep" 'BEGIN { printf "| auto (--stages auto) | %.2f s |", s }')
| auto's stage counts | $autoStages |"

echo "$bubbles"
echo
echo "$sends"
echo
echo "$command"
echo
echo "$gpt3"
echo
echo "$grid"
echo
echo "$versus"
if [[ $mode == --record ]]; then
  record bench/results/pipeline.md "equal stages, forward 1 and backward 2 units, predicted by the pipeline timeline (not executed); command median of $runs runs; GPT-3 compile median of $compileRuns runs; grid: 8 GPT-3 175B layers, batch 1536, bf16, 192 micro-batches on dgx-h100x16, predicted steps" "$bubbles"$'\n\n'"$sends"$'\n\n'"$command"$'\n\n'"$gpt3"$'\n\n'"$grid"$'\n\n'"$versus"
fi
