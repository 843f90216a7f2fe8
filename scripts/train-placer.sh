#!/bin/sh
# Trains the GNN placer (docs/placement.md#the-gnn-placer) with parplan
# itself: generated geo-distributed clusters of MACHINES machines, each
# placed by the search (`parplan compile --placer-dataset`: the cluster's
# graph and the machines the search kept, as training batches), a
# `parplan-zoo gnn` model compiled with `parplan compile --train` and
# trained by `parplan-run --batches ... --save-weights`. Writes OUT/model.onnx
# and OUT/weights/, what `parplan compile --placer gnn --placer-model OUT`
# reads.
#
# Usage: scripts/train-placer.sh [OUT [CLUSTERS [MACHINES [STEPS]]]]
#   OUT defaults to $PARPLAN_CACHE_DIR/placer ($HOME/.cache/parplan/placer),
#   where `parplan compile --placer gnn` looks without --placer-model;
#   defaults 48 clusters of 24 machines (seeds 1 to 48), 3000 steps; the
#   model placed is MODEL (default: the issue's GPT of 8 layers, hidden
#   1024, seq 512, vocab 32000, shape only) at batch BATCH (default 64);
#   the binaries are in BIN (default build/bin). CPU only: on RANKS ranks
#   (default 1; more under mpirun: data parallelism over the machines,
#   the numbers of one rank).
set -eu
out=${1:-${PARPLAN_CACHE_DIR:-${HOME:-/tmp}/.cache/parplan}/placer}
clusters=${2:-48}
machines=${3:-24}
steps=${4:-3000}
bin=${BIN:-build/bin}
batch=${BATCH:-64}
ranks=${RANKS:-1}
mkdir -p "$out/clusters" "$out/placed"
rm -rf "$out/data" "$out/weights"

model=${MODEL:-}
if [ -z "$model" ]; then
  model=$out/gpt.onnx
  "$bin/parplan-zoo" gpt --layers 8 --hidden 1024 --heads 16 --seq 512 \
    --vocab 32000 --dynamic-batch --shape-only -o "$model" >/dev/null
fi

# The search's placements, one training batch per cluster.
seed=1
while [ "$seed" -le "$clusters" ]; do
  cluster=$out/clusters/geo-$machines-seed$seed.yaml
  "$bin/parplan" cluster generate --machines "$machines" --seed "$seed" \
    -o "$cluster" >/dev/null
  "$bin/parplan" compile "$model" --train --batch "$batch" \
    --cluster "$cluster" --placer-dataset "$out/data" \
    -o "$out/placed/seed$seed" -q >"$out/placed/seed$seed.log" 2>&1 || {
    echo "train-placer: the search on $cluster failed:" >&2
    cat "$out/placed/seed$seed.log" >&2
    exit 1
  }
  seed=$((seed + 1))
done

# The graph network, trained on them: a batch is one cluster's machines.
"$bin/parplan-zoo" gnn --features 12 --hidden 32 --layers 2 --classes 2 \
  --dynamic-batch -o "$out/model.onnx" >/dev/null
# On several ranks each takes its share of the machines (their rows of
# the features and the adjacency), the gradients all-reduced.
launch= strategy=auto
[ "$ranks" -gt 1 ] && launch="mpirun --oversubscribe -np $ranks" strategy=data-parallel
"$bin/parplan" compile "$out/model.onnx" --train --batch "$machines" \
  --mesh "$ranks" --strategy "$strategy" --optimizer adam --lr 0.003 \
  -o "$out/train" -q >/dev/null
$launch "$bin/parplan-run" "$out/train/plan.pb" --backend cpu --steps "$steps" \
  --batches "$out/data" --save-weights "$out/weights" >"$out/train.log"
grep '^step' "$out/train.log" | sed -n '1p;$p'
echo "train-placer: wrote $out/model.onnx and $out/weights/ ($clusters clusters of $machines machines, $steps steps on $ranks rank$([ "$ranks" -gt 1 ] && echo s))"
