#!/usr/bin/env bash
# ONNX import speed and memory: the median of several runs per model.
#
#   bench/import.sh            print the table
#   bench/import.sh --record   also append it to bench/results/import.md
#
# Targets (ONNX import issue): a ~100 MB model imports in under 1 s with peak
# memory under 2x the file size; the GPT-3 175B shape-only zoo model (96
# layers) imports in under 2 s. Environment: RUNS (default 5),
# PARPLAN_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require time parplan-zoo parplan parplan-onnx-conformance parplan-translate
work=${TMPDIR:-/tmp}/parplan-bench-import
mkdir -p "$work"


models=(
  "gpt-2l-1024h|gpt --layers 2 --hidden 1024 --heads 16 --seq 256 --vocab 4096"
  "gpt3-175b-shape-only|gpt --preset gpt3-175b --shape-only"
  "resnet50|resnet50 --batch 8"
)

table="| model | file MB | median s | min s | max s | peak RSS MB | RSS / file |
|---|---|---|---|---|---|---|"
for entry in "${models[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  file=$work/$name.onnx
  [[ -f $file ]] || "$bin/parplan-zoo" $args -o "$file" >/dev/null
  times=()
  peaks=()
  for ((i = 0; i < runs; i++)); do
    # `parplan import --raw`: the importer alone (the file is mapped, and
    # weight bytes are never read), without the canonical-form passes.
    out=$( { /usr/bin/time -f "%e %M" "$bin/parplan" import --raw "$file" -o /dev/null >/dev/null; } 2>&1 | tail -1)
    times+=("${out% *}")
    peaks+=("${out#* }")
  done
  summarize "${times[@]}" "${peaks[@]}"
  bytes=$(stat -c %s "$file")
  row=$(awk -v n="$name" -v b="$bytes" -v m="$median" -v lo="$low" -v hi="$high" -v p="$peak" \
    'BEGIN { printf "| %s | %.1f | %.2f | %.2f | %.2f | %.0f | %.2f |", n, b / 1e6, m, lo, hi, p / 1024, (p * 1024) / b }')
  table+=$'\n'"$row"
done

# What imports: ONNX's own node tests (Debian's libonnx-testdata), and the
# third-party models of test/integration/third-party-models.sh.
if data=$(test/integration/fetch-onnx-testdata.sh 2>/dev/null); then
  report=$("$bin/parplan-onnx-conformance" --floor 0 "$data" 2>&1)
  imported=$(sed -n 's/^imported \([0-9]* of [0-9]*\)$/\1/p' <<<"$report")
  computed=$(sed -n 's/^computed \([0-9]*\) of [0-9]* imported$/\1/p' <<<"$report")
  table+=$'\n\n'"ONNX node tests ($data): $imported import, $computed of them compute their test outputs"
fi
models=$(test/integration/third-party-models.sh "$bin/parplan-translate" 2>&1 | awk '
  /^[a-z0-9-]+: \// { name = $1; sub(/:$/, "", name) }
  /^  imported in / { printf "| %s | imports (%s ms, %s lines) |\n", name, $3, $5 }
  /^  expected failure: / { e = $0; sub(/.*unsupported ops: /, "", e); printf "| %s | not yet: %s |\n", name, e }
  /^  FAIL: / { printf "| %s | FAILS: %s |\n", name, substr($0, 9) }
  /^skipped: / { print "| (offline) | " $0 " |" }')
table+=$'\n\n'"| third-party model | import |"$'\n'"|---|---|"$'\n'"$models"

echo "$table"
if [[ ${1:-} == --record ]]; then
  record bench/results/import.md "median of $runs runs" "$table"
fi
