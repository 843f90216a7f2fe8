#!/bin/sh
# The GNN placer against the search (docs/placement.md#the-gnn-placer): on
# held-out generated clusters (seeds the training never saw, sizes beside
# the training's), hulk-geo and world-8x8, the predicted and simulated
# step of the plan each places and the compile's time on one core; then
# the same placer on a larger GPT than it was trained for.
# Trains the placer first (scripts/train-placer.sh) unless PLACER names
# one.
# Usage: bench/gnn-placer.sh [--record]   (BIN: default build/bin; about
# four minutes, the search on 256 machines one of them; SEARCH4096=yes also
# runs the search on 4,096 machines, about 10 minutes more)
set -eu
cd "$(dirname "$0")/.."
bin=${BIN:-build/bin}
record=${1:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
placer=${PLACER:-$work/placer}
[ -n "${PLACER:-}" ] || BIN=$bin scripts/train-placer.sh "$placer" >"$work/train.log"
tail -2 "$work/train.log" 2>/dev/null || true
model=$work/gpt.onnx batch=64
"$bin/parplan-zoo" gpt --layers 8 --hidden 1024 --heads 16 --seq 512 \
  --vocab 32000 --dynamic-batch --shape-only -o "$model" >/dev/null

simulated() { "$bin/parplan" simulate "$1/plan.pb" 2>/dev/null | sed -n 's/^  step *\([0-9.]* m*s\) simulated.*/\1/p' | head -1; }
seconds() { python3 -c 'import sys; print("%.2f" % float(sys.argv[1]))' "$1"; }

# place NAME CLUSTER: a table row, search against GNN.
place() {
  name=$1 cluster=$2
  kinds="search gnn"
  [ "${SEARCH:-yes}" = no ] && { kinds=gnn; search_kept="not run (SEARCH4096=yes runs it: about 10 minutes)"; search_step=; search_sim=; search_time=-; }
  for placer_kind in $kinds; do
    dir=$work/$name-$placer_kind
    start=$(date +%s.%N)
    model_flags=
    [ "$placer_kind" = gnn ] && model_flags="--placer-model $placer"
    # shellcheck disable=SC2086
    taskset -c 0 "$bin/parplan" compile "$model" --train --batch "$batch" \
      --cluster "$cluster" --placer "$placer_kind" $model_flags \
      -o "$dir" >"$dir.log" 2>&1 || { echo "FAIL: $name $placer_kind"; tail -3 "$dir.log"; return 1; }
    end=$(date +%s.%N)
    eval "${placer_kind}_time=\$(seconds \$(echo \"$end - $start\" | bc))"
    eval "${placer_kind}_kept=\$(sed -n 's/^  placement *\([^(]*\)(\([0-9]*\) devices.*/\1(\2 devices)/p' \"$dir.log\" | head -1)"
    eval "${placer_kind}_step=\$(sed -n 's/^  predicted step *\([0-9.]* m*s\).*/\1/p' \"$dir.log\")"
    eval "${placer_kind}_sim=\$(simulated \"$dir\")"
  done
  echo "| $name | $search_kept | $search_step | $search_sim | $search_time s | $gnn_kept | $gnn_step | $gnn_sim | $gnn_time s |"
}

# What the placer was trained on, for the record.
placer_line() {
  if [ -s "$work/train.log" ]; then
    echo "scripts/train-placer.sh's defaults ($(sed -n 's/^train-placer: wrote .*(\(.*\))$/\1/p' "$work/train.log"), loss $(sed -n 's/^step 1: loss \([0-9.]*\).*/\1/p' "$work/train.log") -> $(grep '^step' "$work/train.log" | tail -1 | sed -n 's/.*loss \([0-9.]*\).*/\1/p'))"
  else
    echo "$placer"
  fi
}

rows=$work/rows
{
  for size in 16 24 64; do
    for seed in 1001 1002 1003; do
      "$bin/parplan" cluster generate --machines "$size" --seed "$seed" -o "$work/geo-$size-$seed.yaml" >/dev/null
      place "geo-$size-seed$seed" "$work/geo-$size-$seed.yaml"
    done
  done
  # The search's plan here is the exact best of all 63 sets of machines
  # (bench/results/geo.md).
  "$bin/parplan" cluster generate --machines 6 --regions 3 --seed 5 -o "$work/geo-6x3-5.yaml" >/dev/null
  place geo-6x3-seed5 "$work/geo-6x3-5.yaml"
  place hulk-geo hulk-geo
  place world-8x8 examples/clusters/world-8x8.yaml
  "$bin/parplan" cluster generate --machines 256 --seed 1 -o "$work/geo-256-1.yaml" >/dev/null
  place geo-256-seed1 "$work/geo-256-1.yaml"
  # The search lays out every node, 16,255 devices, for about 10 minutes:
  # run only with SEARCH4096=yes.
  "$bin/parplan" cluster generate --machines 4096 --seed 1 -o "$work/geo-4096-1.yaml" >/dev/null
  SEARCH=${SEARCH4096:-no} place geo-4096-seed1 "$work/geo-4096-1.yaml"
} | tee "$rows"

# Another model than the placer was trained on: a GPT of 24 layers, hidden
# 2048, seq 1024, vocab 50257 at batch 128, on held-out clusters.
"$bin/parplan-zoo" gpt --layers 24 --hidden 2048 --heads 16 --seq 1024 \
  --vocab 50257 --dynamic-batch --shape-only -o "$work/gpt-large.onnx" >/dev/null
model=$work/gpt-large.onnx batch=128
transfer=$work/transfer
for spec in "16 2001" "24 2002" "64 2003" "64 2004"; do
  set -- $spec
  "$bin/parplan" cluster generate --machines "$1" --seed "$2" -o "$work/large-$1-$2.yaml" >/dev/null
  place "geo-$1-seed$2" "$work/large-$1-$2.yaml"
done | tee "$transfer"

if grep -q '^FAIL' "$rows" "$transfer"; then
  echo "gnn-placer: a compile failed; nothing recorded" >&2
  exit 1
fi
if [ "$record" = --record ]; then
  {
    echo
    echo "## $(date -u +%Y-%m-%d) $(git rev-parse --short HEAD)"
    echo
    echo "$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1); gpt 8 layers, hidden 1024, seq 512, vocab 32000, batch 64; compile on one core (taskset -c 0), one run each; placer: $(placer_line)"
    echo
    echo "| cluster | search: kept | predicted | simulated | compile | GNN: kept | predicted | simulated | compile |"
    echo "|---|---|---|---|---|---|---|---|---|"
    cat "$rows"
    echo
    echo "The same placer on another model: gpt 24 layers, hidden 2048, seq 1024, vocab 50257, batch 128"
    echo
    echo "| cluster | search: kept | predicted | simulated | compile | GNN: kept | predicted | simulated | compile |"
    echo "|---|---|---|---|---|---|---|---|---|"
    cat "$transfer"
  } >>bench/results/gnn-placer.md
  echo "recorded in bench/results/gnn-placer.md"
fi
