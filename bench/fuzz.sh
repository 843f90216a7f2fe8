#!/usr/bin/env bash
# Coverage-guided fuzzing (docs/reliability.md#fuzzing): each libFuzzer
# target of test/fuzz, built with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer in a build of its own, run from a corpus seeded
# with the tests' files of its format, for a time or a number of
# executions; the executions, their rate, the coverage and the findings
# (crashes, hangs, leaks, out-of-memory) of each.
# Goal (the reliability issue): every target at least 1,000,000 executions
# with no finding.
#
#   bench/fuzz.sh [--record] [--time SECONDS] [--runs N] [TARGET...]
#     --time    stop each target after SECONDS (default 60)
#     --runs    stop each target after N executions (default: no limit)
#     --record  append the table to bench/results/fuzz.md
#     TARGET    cluster-file, annotations, plan-file, onnx-import (default all)
#
# A finding stops its target; its input is kept in the findings folder and
# the table names it. Replay it with the target's binary and the file, then
# commit it under test/fuzz/regressions/TARGET/ with the fix (ctest replays
# every file there in every build).
# Environment: PARPLAN_SANITIZE_BUILD_DIR (default build-sanitize, shared
# with scripts/sanitize.sh); PARPLAN_FUZZ_DIR
# (corpora and findings, default ~/.cache/parplan/fuzz; the corpora grow
# from run to run); PARPLAN_BUILD_DIR (default build: its parplan,
# parplan-zoo and parplan-write-mlp-plans write seeds when built).
# The first run installs clang-22 and its runtime libraries and builds the
# targets and their libraries (about 15 minutes on 2 cores, ccache'd).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh

mode= seconds=60 max_runs=0 targets=()
while (($#)); do
  case $1 in
  --record) mode=record ;;
  --time) seconds=$2; shift ;;
  --runs) max_runs=$2; shift ;;
  cluster-file | annotations | plan-file | onnx-import) targets+=("$1") ;;
  *) echo "bench/fuzz.sh: unknown argument '$1' (see the script's header)" >&2; exit 2 ;;
  esac
  shift
done
((${#targets[@]})) || targets=(cluster-file annotations plan-file onnx-import)

fuzz_build=${PARPLAN_SANITIZE_BUILD_DIR:-build-sanitize}
fuzz_dir=${PARPLAN_FUZZ_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/parplan/fuzz}

# The sanitizers' build (clang, ASan, UBSan, coverage), where the targets
# are libFuzzer binaries.
# shellcheck disable=SC2046 # one word per target
PARPLAN_SANITIZE_BUILD_DIR=$fuzz_build scripts/sanitize.sh --build \
  $(printf 'parplan-%s-fuzzer ' "${targets[@]}")

# seed TARGET FILE...: copies each FILE into the target's corpus under a
# name of its content (a file seeded twice is kept once).
seed() {
  local corpus=$fuzz_dir/corpus/$1 file
  shift
  mkdir -p "$corpus"
  for file; do
    [[ -f $file ]] || continue
    cp "$file" "$corpus/seed-$(sha1sum <"$file" | cut -c1-16)"
  done
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for target in "${targets[@]}"; do
  case $target in
  cluster-file)
    seed cluster-file examples/clusters/* test/*/Inputs/*.yaml test/*/Inputs/*.json \
      test/tools/*/Inputs/*.yaml
    if [[ -x $bin/parplan ]]; then
      for preset in $("$bin/parplan" clusters 2>/dev/null | awk 'NR > 1 && NF { print $1 }'); do
        "$bin/parplan" cluster show "$preset" --format yaml >"$work/$preset.yaml" 2>/dev/null &&
          "$bin/parplan" cluster show "$preset" --format json >"$work/$preset.json" 2>/dev/null || true
      done
      seed cluster-file "$work"/*.yaml "$work"/*.json
    fi ;;
  annotations)
    seed annotations test/tools/parplan/Inputs/pin-*.yaml test/tools/parplan/Inputs/mlp-stages.yaml ;;
  onnx-import)
    # ONNX's backend test models (Debian's libonnx-testdata), each case of
    # the importer's lit tests, and small zoo models.
    seed onnx-import /usr/share/libonnx-testdata/data/node/*/model.onnx
    for file in test/Import/ONNX/*.onnxtxt; do
      awk -v out="$work/$(basename "$file" .onnxtxt)" '
        /^# -----/ { ++n; next } /^#/ { next } { print > (out "-" n+0 ".onnxtxt") }' "$file"
    done
    seed onnx-import "$work"/*.onnxtxt
    if [[ -x $bin/parplan-zoo ]]; then
      "$bin/parplan-zoo" mlp --sizes 8,6,4 --batch 2 -o "$work/mlp.onnx" >/dev/null
      "$bin/parplan-zoo" gpt --layers 1 --hidden 16 --heads 2 --seq 8 --vocab 32 \
        --batch 2 -o "$work/gpt.onnx" >/dev/null
      "$bin/parplan-zoo" mlp --sizes 8,6,4 --dynamic-batch --shape-only \
        -o "$work/mlp-dynamic.onnx" >/dev/null
      seed onnx-import "$work"/mlp.onnx "$work"/gpt.onnx "$work"/mlp-dynamic.onnx
    fi ;;
  plan-file)
    # The mpirun test's MLP plans, and compiled ones: data and tensor
    # parallel, stages under a schedule, inference.
    write_plans=${PARPLAN_BUILD_DIR:-build}/test/integration/parplan-write-mlp-plans
    [[ -x $write_plans ]] && "$write_plans" "$work"
    seed plan-file "$work"/mlp-*.pb
    if [[ -x $bin/parplan && -x $bin/parplan-zoo ]]; then
      "$bin/parplan-zoo" mlp --sizes 8,6,4 --batch 4 -o "$work/small.onnx" >/dev/null
      i=0
      for options in "--train --mesh 2 --strategy data-parallel" \
        "--train --mesh 2 --strategy megatron" \
        "--train --mesh 2x2" "--train --mesh 2 --stages 2 --micro-batches 2 --schedule 1f1b" \
        "--mesh 2"; do
        # shellcheck disable=SC2086 # the options are words
        "$bin/parplan" compile "$work/small.onnx" $options -o "$work/plan-$i" \
          >/dev/null 2>&1 && seed plan-file "$work/plan-$i/plan.pb"
        i=$((i + 1))
      done
    fi ;;
  esac
done

# fuzz TARGET: runs it and sets `row`.
fuzz() {
  local target=$1 binary=$fuzz_build/bin/parplan-$1-fuzzer
  local corpus=$fuzz_dir/corpus/$1 findings=$fuzz_dir/findings/$1 log
  mkdir -p "$findings"
  log=$fuzz_dir/$1.log
  # Inputs up to a size that holds the seeds' structure (the largest
  # presets and zoo models are cut): larger ones run slower, not deeper.
  local max_len=8192
  [[ $target == plan-file || $target == onnx-import ]] && max_len=65536
  local limits=(-max_total_time="$seconds" -max_len="$max_len")
  ((max_runs > 0)) && limits+=(-runs="$max_runs")
  echo "fuzz: $target, $(find "$corpus" -type f | wc -l) inputs in the corpus" >&2
  # -timeout: an input that runs 10 s is a hang; -rss_limit_mb: one that
  # grows past 4 GiB is out of memory; leaks are found at each input's end.
  "$binary" "$corpus" "${limits[@]}" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1 || true
  local executions rate cov corpus_size
  executions=$(awk '/stat::number_of_executed_units/ { print $NF }' "$log" | tail -1)
  rate=$(awk '/stat::average_exec_per_sec/ { print $NF }' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{ print $2 }')
  corpus_size=$(find "$corpus" -type f | wc -l)
  local found=() file
  for file in $(find "$findings" -type f -newer "$log.start" 2>/dev/null | sort); do
    found+=("$(basename "$file")")
  done
  local findings_text=none
  ((${#found[@]})) && findings_text="${#found[@]}: ${found[*]} (in $findings)"
  row="| $target | ${executions:-?} | ${rate:-?} | ${cov:-?} | $corpus_size | $findings_text |"
  echo "$row" >&2
}

mkdir -p "$fuzz_dir"
table="| target | executions | executions/s | coverage (edges) | corpus (inputs) | findings |
|---|---|---|---|---|---|"
for target in "${targets[@]}"; do
  touch "$fuzz_dir/$target.log.start"
  fuzz "$target"
  table+=$'\n'"$row"
done
echo
echo "$table"
details="clang $(clang++-22 --version | sed -n 's/.*clang version \([0-9.]*\).*/\1/p'), ASan+UBSan, libFuzzer, one process per target, at most ${seconds} s$( ((max_runs > 0)) && echo " or $max_runs executions") each"
[[ $mode == record ]] && record bench/results/fuzz.md "$details" "$table"
exit 0
