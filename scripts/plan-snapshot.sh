#!/usr/bin/env bash
# Compiles a fixed set of plans and writes each plan.pb under OUT-DIR, so
# that a refactoring can show it changes no plan: run it before and after,
# then `scripts/plan-snapshot.sh --compare BEFORE AFTER` (cmp of every
# plan). The set: the README example, the zoo's models on 8, 2x4 and 4x8
# devices, GPT-3 175B on dgx-h100x128 with the pipeline searched, and
# megatron-39b with --strategy megatron on dgx-h100x64.
#   scripts/plan-snapshot.sh OUT-DIR
#   scripts/plan-snapshot.sh --compare BEFORE-DIR AFTER-DIR
# Environment: PARPLAN_BUILD_DIR (default build), SNAPSHOT_LARGE=0 leaves
# out the two large models (about 30 s of the run).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == --compare ]]; then
  before=$2 after=$3
  status=0
  count=0
  for plan in "$before"/*/plan.pb; do
    name=$(basename "$(dirname "$plan")")
    count=$((count + 1))
    if [[ ! -f $after/$name/plan.pb ]]; then
      echo "$name: no plan in $after"
      status=1
    elif ! cmp -s "$plan" "$after/$name/plan.pb"; then
      echo "$name: plans differ"
      status=1
    fi
  done
  ((status == 0)) && echo "$count plans byte-identical"
  exit $status
fi

out=${1:?usage: scripts/plan-snapshot.sh OUT-DIR}
bin=${PARPLAN_BUILD_DIR:-build}/bin
models=$out/models
mkdir -p "$models"

zoo() { "$bin/parplan-zoo" "$@" >/dev/null; }
zoo gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 --batch 8 -o "$models/readme-gpt.onnx"
zoo mlp --sizes 64,128,128,10 --batch 32 -o "$models/mlp.onnx"
zoo gpt --layers 4 --hidden 256 --heads 8 --seq 64 --vocab 512 --batch 16 --shape-only -o "$models/gpt.onnx"
zoo bert --layers 4 --hidden 256 --heads 8 --seq 64 --vocab 512 --batch 16 --shape-only -o "$models/bert.onnx"
zoo vgg16 --batch 16 --shape-only -o "$models/vgg16.onnx"
zoo resnet50 --batch 16 --shape-only -o "$models/resnet50.onnx"
zoo vit_b_16 --layers 2 --batch 16 --shape-only -o "$models/vit.onnx"
zoo gpt --layers 4 --hidden 256 --heads 8 --seq 64 --vocab 512 --dynamic-batch --shape-only -o "$models/gpt-dynamic.onnx"

compile() {
  local name=$1
  shift
  local status=0
  "$bin/parplan" compile "$@" -q -o "$out/$name" >"$out/$name.log" 2>&1 || status=$?
  if ((status != 0)); then
    echo "$name: compile failed (exit $status), see $out/$name.log"
  fi
}

compile readme "$models/readme-gpt.onnx" --train --mesh 2x2 --optimizer adam --lr 0.01
for model in mlp gpt bert vgg16 resnet50 vit; do
  compile "$model-8" "$models/$model.onnx" --train --cluster dgx-h100 --mesh 8
  compile "$model-2x4" "$models/$model.onnx" --train --cluster dgx-h100 --mesh 2x4
  compile "$model-4x8" "$models/$model.onnx" --train --cluster dgx-h100x4 --mesh 4x8
done
compile gpt-stages "$models/gpt-dynamic.onnx" --train --batch 16 --cluster dgx-h100x4 \
  --mesh 4x8 --stages 2 --micro-batches 4
compile gpt-search "$models/gpt-dynamic.onnx" --train --batch 16 --cluster dgx-h100x4
if [[ ${SNAPSHOT_LARGE:-1} != 0 ]]; then
  zoo gpt --preset gpt3-175b --shape-only --dynamic-batch -o "$models/gpt3-175b.onnx"
  zoo gpt --preset megatron-39b --shape-only --dynamic-batch -o "$models/megatron-39b.onnx"
  compile gpt3-auto "$models/gpt3-175b.onnx" --train --batch 1536 \
    --mixed-precision bf16 --cluster dgx-h100x128
  compile megatron-39b "$models/megatron-39b.onnx" --train --batch 1536 \
    --mixed-precision bf16 --cluster dgx-h100x64 --strategy megatron --tensor 8 \
    --pipeline 8 --micro-batches 64
fi
echo "plans in $out: $(ls "$out"/*/plan.pb | wc -l)"
