#!/bin/sh
# The GNN placer end to end (docs/placement.md#the-gnn-placer), as a user
# trains and uses it: scripts/train-placer.sh places generated clusters by
# the search, trains the `parplan-zoo gnn` model on them with parplan
# compile --train and parplan-run on 2 ranks (the loss falls;
# --save-weights writes every parameter, as 1 rank's training does), then `parplan compile --placer gnn` places clusters it
# never saw: its plan's predicted step within 10% of the search's (issue
# 43's goal), summary and summary.json saying the placer chose.
# Usage: gnn-placer.sh BIN-DIR SOURCE-DIR
set -u
bin=$1
src=$2
. "$(dirname "$0")/mpi-setup.sh"
status=0

"$bin/parplan-zoo" gpt --layers 2 --hidden 256 --heads 4 --seq 64 --vocab 1024 \
  --dynamic-batch --shape-only -o "$dir/gpt.onnx" >/dev/null
if BIN=$bin MODEL=$dir/gpt.onnx BATCH=32 RANKS=2 timeout 600 \
  "$src/scripts/train-placer.sh" "$dir/placer" 16 12 1500 >"$dir/train.out" 2>&1; then
  first=$(sed -n 's/^step 1: loss \([0-9.]*\).*/\1/p' "$dir/train.out")
  last=$(sed -n 's/^step 1500: loss \([0-9.]*\).*/\1/p' "$dir/train.out")
  weights=$(ls "$dir/placer/weights" | grep -c '\.npy$')
  examples=$(($(wc -c <"$dir/placer/data/labels.bin") / 8 / 12))
  if [ -n "$first" ] && [ -n "$last" ] && [ "$weights" = 8 ] && [ "$examples" = 16 ] &&
     awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 2) }'; then
    echo "ok: the placer trained on 16 clusters placed by the search: loss $first -> $last, $weights weights"
  else
    echo "FAIL: the placer's training: loss '$first' -> '$last', $weights weights, $examples examples:"
    cat "$dir/train.out"
    status=1
  fi
else
  echo "FAIL: scripts/train-placer.sh:"
  cat "$dir/train.out"
  exit 1
fi

# Trained on 2 ranks: the weights of the same training on one.
"$bin/parplan" compile "$dir/placer/model.onnx" --train --batch 12 --mesh 1 \
  --optimizer adam --lr 0.003 -o "$dir/train-one" -q >/dev/null &&
  timeout 300 "$bin/parplan-run" "$dir/train-one/plan.pb" --backend cpu --steps 1500 \
    --batches "$dir/placer/data" --save-weights "$dir/weights-one" >"$dir/train-one.log" 2>&1
if "$bin/parplan-compare-outputs" "$dir/weights-one" "$dir/placer/weights" 1e-5 >"$dir/weights.compare" 2>&1; then
  echo "ok: the placer trained on 2 ranks has the weights of 1 rank's training"
else
  echo "FAIL: the placer's weights on 2 ranks differ from 1 rank's:"
  cat "$dir/weights.compare" "$dir/train-one.log" | tail -20
  status=1
fi

# A --save-weights directory that cannot be made stops the run before its
# first step, in one line.
touch "$dir/a-file"
"$bin/parplan-run" "$dir/train-one/plan.pb" --backend cpu --steps 5 \
  --batches "$dir/placer/data" --save-weights "$dir/a-file/weights" >"$dir/unwritable.log" 2>&1
code=$?
if [ "$code" = 1 ] && ! grep -q '^step' "$dir/unwritable.log" &&
   grep -q "^parplan-run: --save-weights: cannot create the directory '$dir/a-file/weights'" "$dir/unwritable.log" &&
   [ "$(wc -l <"$dir/unwritable.log")" -le 2 ]; then
  echo "ok: an unwritable --save-weights stops the run before its first step"
else
  echo "FAIL: an unwritable --save-weights (exit $code):"
  cat "$dir/unwritable.log"
  status=1
fi

# The plan's predicted step in summary.json $1.
step() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["predicted_step_time_s"])' "$1" 2>/dev/null; }

# Held-out clusters: the search and the placer.
for case in "12 9001" "12 9002" "24 9003"; do
  set -- $case
  cluster=$dir/held-$1-$2.yaml
  "$bin/parplan" cluster generate --machines "$1" --seed "$2" -o "$cluster" >/dev/null
  "$bin/parplan" compile "$dir/gpt.onnx" --train --batch 32 --cluster "$cluster" \
    -o "$dir/search-$2" >"$dir/search-$2.log" 2>&1
  "$bin/parplan" compile "$dir/gpt.onnx" --train --batch 32 --cluster "$cluster" \
    --placer gnn --placer-model "$dir/placer" -o "$dir/gnn-$2" >"$dir/gnn-$2.log" 2>&1
  search=$(step "$dir/search-$2/summary.json")
  gnn=$(step "$dir/gnn-$2/summary.json")
  if grep -q '^  placement .*(kept: the GNN placer proposed [0-9]* machine' "$dir/gnn-$2.log" &&
     grep -q '"placer": "gnn"' "$dir/gnn-$2/summary.json" &&
     grep -q '"placer_time_s":' "$dir/gnn-$2/summary.json" &&
     [ -s "$dir/gnn-$2/plan.pb" ] &&
     awk -v s="$search" -v g="$gnn" 'BEGIN { exit !(s > 0 && g > 0 && g <= 1.1 * s) }'; then
    echo "ok: $1 machines (seed $2): the placer's plan $gnn s, the search's $search s"
  else
    echo "FAIL: $1 machines (seed $2): the placer's plan '$gnn' s against the search's '$search' s:"
    grep -E '^  (placement|predicted step)' "$dir/search-$2.log" "$dir/gnn-$2.log"
    tail -3 "$dir/gnn-$2.log"
    status=1
  fi
done
exit $status
