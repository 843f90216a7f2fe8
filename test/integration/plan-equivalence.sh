#!/bin/sh
# Compiled plans compute what one device computes: for an MLP and a GPT from
# the zoo and a small CNN, the training step is laid out on meshes of 2, 4
# and 8 devices, 1-D and 2-D (data, tensor and mixed parallelism, Adam), lowered to
# per-device programs and run by parplan-run under mpirun; every rank count
# must print the losses of the 1-device plan for 5 steps, to 1e-5 relative,
# and the same final weights: per parameter the sum of squares to 1e-5
# relative and the sum to 1e-5 of its scale (sqrt(n * sum of squares)).
# Usage: plan-equivalence.sh BIN-DIR SOURCE-DIR
set -u
bin=$1
src=$2
. "$(dirname "$0")/mpi-setup.sh"

"$bin/parplan-zoo" mlp --sizes 32,64,10 --batch 16 -o "$dir/mlp.onnx" >/dev/null &&
  "$bin/parplan-zoo" gpt --layers 2 --hidden 32 --heads 4 --vocab 64 --seq 16 \
    --batch 8 -o "$dir/gpt.onnx" >/dev/null || { echo "FAIL: zoo"; exit 1; }
"$bin/parplan" train-step "$dir/mlp.onnx" --optimizer adam --lr 0.01 \
  -o "$dir/mlp.mlir" >/dev/null &&
  "$bin/parplan" train-step "$dir/gpt.onnx" --frozen transformer.causal_mask \
    --optimizer adam --lr 0.01 -o "$dir/gpt.mlir" >/dev/null &&
  "$bin/parplan" train-step "$src/Inputs/small-cnn.mlir" --optimizer adam \
    --lr 0.01 -o "$dir/cnn.mlir" >/dev/null || { echo "FAIL: train-step"; exit 1; }

devices() { echo "$1" | tr 'x' '\n' | awk 'BEGIN { n = 1 } { n *= $1 } END { print n }'; }

# Compiles $1 (a training step) on mesh $2 with strategy $3 and runs it.
run() {
  out=$dir/$(basename "$1" .mlir)-$2-$3
  "$bin/parplan-opt" "$1" -sbp-assign="mesh=$2 strategy=$3" -insert-boxing \
    -lower-to-plan -o "$out.plan.mlir" &&
    "$bin/parplan-translate" --plan-to-proto "$out.plan.mlir" -o "$out.pb" &&
    timeout 120 mpirun --oversubscribe -np "$(devices "$2")" \
      "$bin/parplan-run" "$out.pb" --steps 5 --print-weights >"$out.log" 2>&1 ||
    { echo "FAIL: $1 on $2 ($3):"; cat "$out.log" 2>/dev/null; return 1; }
  echo "$out.log"
}

status=0
for model in mlp gpt cnn; do
  want=$(run "$dir/$model.mlir" 1 auto) || { status=1; continue; }
  for config in "2 data-parallel" "4 auto" "2x2 data-parallel" \
                "1x2 megatron" "2x2 megatron" "2x2 auto" "8 data-parallel" \
                "2x4 megatron"; do
    set -- $config
    got=$(run "$dir/$model.mlir" "$1" "$2") || { status=1; continue; }
    collectives=$(grep -cE 'plan\.(all_|reduce_scatter)' "${got%.log}.plan.mlir")
    if awk '
        function abs(x) { return x < 0 ? -x : x }
        FNR == NR && /^step/ { want[$2] = $4; next }
        FNR == NR && /^weights/ { wsum[$2] = $6; wsq[$2] = $10; wn[$2] = $3; next }
        /^step/ { n++; if (abs($4 - want[$2]) > 1e-5 * abs(want[$2]) + 1e-12) bad = 1 }
        /^weights/ { w++; sub(",", "", $6)
                     if (!($2 in wsq)) bad = 1
                     scale = sqrt(wn[$2] * wsq[$2])
                     if (abs($10 - wsq[$2]) > 1e-5 * abs(wsq[$2]) + 1e-12) bad = 1
                     if (abs($6 - wsum[$2]) > 1e-5 * scale + 1e-12) bad = 1 }
        END { exit (bad || n != 5 || w == 0) }' "$want" "$got"; then
      echo "ok: $model on $1 ($2), $collectives collectives, $(grep -c '^weights' "$got") parameters: $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
    else
      echo "FAIL: $model on $1 ($2) differs from 1 device:"
      paste "$want" "$got"
      status=1
    fi
  done
done
exit $status
