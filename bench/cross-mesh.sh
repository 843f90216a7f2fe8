#!/usr/bin/env bash
# Cross-mesh resharding: the planner's predicted time per mode against the
# lower bound, on the microbenchmark suite of "On Optimizing the
# Communication of Model Parallelism" (MLSys 2023; alpa's
# benchmark/alpa/resharding/suite.py), int32 tensors on 5 p3.8xlarge hosts
# (the preset aws-p3-5node: 4 V100 per host, 10 Gbps between hosts).
#
#   bench/cross-mesh.sh            print the tables
#   bench/cross-mesh.sh --record   also append them to bench/results/cross-mesh.md
#
# Goals (cross-mesh issue): balanced broadcast within 1.1x of the lower
# bound on every case, never slower than send/recv; planning a move
# between two 64-device meshes in under 50 ms (the last table: the whole
# `parplan reshard`, nine plans, median of RUNS). The times are the cost
# model's predictions; the last column executes every case, scaled down,
# on CPU ranks over MPI in each mode (`parplan reshard -o`, then
# `parplan-run --check`: every destination element as the source's).
# Environment: RUNS (default 5), PARPLAN_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require time parplan
mode=${1:-}

# The devices of an N-host by G-GPU mesh on hosts FIRST.. of 4 GPUs each.
hosts() {
  local n=$1 g=$2 first=$3 list=""
  for ((h = 0; h < n; h++)); do
    for ((j = 0; j < g; j++)); do
      list+="${list:+,}$(((first + h) * 4 + j))"
    done
  done
  echo "${n}x${g}@$list"
}

# name|from|to|shape|from layout|to layout
cases=(
  "case1|2x4@0|2x4@8|1024x1024x512|[S(0), B]|[S(0), B]"
  "case2|2x4@0|2x4@8|1024x1024x512|[B, B]|[S(0), B]"
  "case3|2x4@0|2x4@8|1024x1024x512|[S(1), B]|[S(0), B]"
  "case4|2x4@0|2x4@8|1024x1024x512|[S(1), S(1)]|[S(0), S(0)]"
  "case5|2x4@0|2x4@8|1024x1024x512|[B, S(0)]|[S(0), B]"
  "case6|2x4@0|3x4@8|3072x1024x170|[S(0), B]|[S(0), B]"
  "case7|1x4@0|2x4@4|1024x1024x512|[B, S(0)]|[B, B]"
  "case9|2x4@0|2x4@8|1024x1024x512|[S(1), B]|[S(2), B]"
)
for ng in "1 1" "1 2" "1 3" "1 4" "2 2" "3 2" "4 2"; do
  set -- $ng
  cases+=("1-to-${1}x${2}|1x1@0|$(hosts "$1" "$2" 1)|268435456|[B, B]|[B, B]")
done

# A suite shape scaled down for CPU ranks: 1024x1024x512 -> 16x16x8,
# 268435456 -> 4096.
scaled() {
  echo "$1" | awk -F x '{
    out = ""
    for (i = 1; i <= NF; i++) {
      d = int($i / (NF == 1 ? 65536 : 64)); if (d < 2) d = 2
      out = out (i > 1 ? "x" : "") d
    }
    print out }'
}

# Every mode of one case executed and checked on CPU ranks: "3 of 3 modes
# exact on N ranks (SHAPE)", or why not.
executed() {
  command -v mpirun >/dev/null 2>&1 || { echo "(no mpirun)"; return; }
  [[ $(id -u) == 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  local shape work exact=0 np=0 mode
  shape=$(scaled "$4")
  work=$(mktemp -d)
  for mode in send-recv send-recv+all-gather broadcast; do
    "$bin/parplan" reshard --cluster aws-p3-5node --dtype i32 --shape "$shape"       --from "$2" --to "$3" --from-layout "$5" --to-layout "$6" --mode "$mode"       -o "$work" >"$work/out" 2>&1 || continue
    np=$(sed -n 's/.*mpirun -np \([0-9]*\) .*/\1/p' "$work/out")
    timeout 300 mpirun --oversubscribe -np "$np" "$bin/parplan-run" "$work/plan.pb" \
      --check --steps 1 --backend cpu >"$work/run" 2>&1 &&
      grep -q '^check: 0 of ' "$work/run" && exact=$((exact + 1))
  done
  rm -rf "$work"
  echo "$exact of 3 modes exact on $np ranks ($shape)"
}

# The time and ratio to the bound of one mode and balancing in OUTPUT.
column() {
  echo "$1" | awk -v mode="$2" -v balancing="$3" \
    '$1 == mode && $2 == balancing { printf "%s %s (%sx)", $3, $4, $5 }'
}

table="| case | from | to | shape | lower bound | send-recv | send-recv + all-gather | broadcast | broadcast by bytes | broadcast by order | executed |
|---|---|---|---|---|---|---|---|---|---|---|"
for entry in "${cases[@]}"; do
  IFS='|' read -r name from to shape fromLayout toLayout <<<"$entry"
  out=$("$bin/parplan" reshard --cluster aws-p3-5node --dtype i32 --shape "$shape" \
    --from "$from" --to "$to" --from-layout "$fromLayout" --to-layout "$toLayout")
  bound=$(echo "$out" | awk '/lower bound/ { print $3, $4 }')
  table+=$'\n'"| $name | ${from%%@*} $fromLayout | ${to%%@*} $toLayout | $shape | $bound | $(column "$out" send-recv none) | $(column "$out" send-recv+all-gather none) | $(column "$out" broadcast none) | $(column "$out" broadcast by-bytes) | $(column "$out" broadcast by-order) | $(executed "$name" "$from" "$to" "$shape" "$fromLayout" "$toLayout") |"
done

# Planning time: two 64-device meshes of dgx-h100x16 (8 nodes each).
times=()
peaks=()
for ((i = 0; i < runs; i++)); do
  out=$( { /usr/bin/time -f "TIME %e RSS %M" "$bin/parplan" reshard --cluster dgx-h100x16 \
    --dtype f32 --shape 8192x8192 --from 8x8@0 --to 8x8@64 \
    --from-layout "[S(0), S(1)]" --to-layout "[S(1), B]" >/dev/null; } 2>&1)
  times+=("$(echo "$out" | awk '/^TIME/ { print $2 }')")
  peaks+=("$(echo "$out" | awk '/^TIME/ { print $4 }')")
done
summarize "${times[@]}" "${peaks[@]}"
planning="| from | to | command (nine plans) median s | min s | max s | peak RSS MB |
|---|---|---|---|---|---|
$(awk -v m="$median" -v lo="$low" -v hi="$high" -v p="$peak" \
  'BEGIN { printf "| 8x8 [S(0), S(1)] on nodes 0-7 | 8x8 [S(1), B] on nodes 8-15 | %.3f | %.3f | %.3f | %.0f |", m, lo, hi, p / 1024 }')"

echo "$table"
echo
echo "$planning"
if [[ $mode == --record ]]; then
  record bench/results/cross-mesh.md "aws-p3-5node, int32, times predicted by the cost model, every case executed scaled down on CPU ranks; planning median of $runs runs" "$table"$'\n\n'"$planning"
fi
