#!/bin/sh
# Compiled plans compute what one device computes: for an MLP and a GPT from
# the zoo and a small CNN (and one with batch norms trained on the batch's
# statistics and dropout, on 2, 4 and 2x2 devices), the training step is laid out on meshes of 2, 4
# and 8 devices, 1-D and 2-D (data, tensor and mixed parallelism, Adam), lowered to
# per-device programs and run by parplan-run under mpirun; every rank count
# must print the losses of the 1-device plan for 5 steps, to 1e-5 relative,
# and the same final weights: per parameter the sum of squares to 1e-5
# relative and the sum to 1e-5 of its scale (sqrt(n * sum of squares)),
# and on the meshes, each parameter gathered whole (--save-weights)
# element by element to 1e-5 (parplan-compare-outputs).
# Two meshes also run with the CUDA backend's kernels compiled for the CPU
# (parplan-run --host-kernels device), to 1e-4. The MLP also runs on two
# pipeline stages (the annotations file's `stages`), one after the other,
# on meshes of 2 and 2x2 devices: the same losses and weights, to 1e-5.
# On a node of A100s and one of V100s, each node's part of the batch by
# its speed gives them too, and so does a plan placed on one node of a
# cluster of two regions.
# Usage: plan-equivalence.sh BIN-DIR SOURCE-DIR
set -u
bin=$1
src=$2
. "$(dirname "$0")/mpi-setup.sh"

. "$(dirname "$0")/training-steps.sh"

devices() { echo "$1" | tr 'x' '\n' | awk 'BEGIN { n = 1 } { n *= $1 } END { print n }'; }

# Compiles $1 (a training step) on mesh $2 with strategy $3 and runs it,
# with the reference kernels or, with $4 = device, the CUDA backend's.
run() {
  out=$(lower_plan "$1" "$2" "$3") &&
    timeout 120 mpirun --oversubscribe -np "$(devices "$2")" \
      "$bin/parplan-run" "$out.pb" --backend cpu --steps 5 --print-weights \
      --host-kernels "${4:-reference}" \
      --save-weights "$out.${4:-reference}.weights" >"$out.${4:-reference}.log" 2>&1 ||
    { echo "FAIL: $1 on $2 ($3):"; cat "$out.${4:-reference}.log" 2>/dev/null; return 1; }
  echo "$out.${4:-reference}.log"
}

# Compiles the MLP with `parplan compile` on the stages of annotations file
# $1 (its first layer, with its backward and updates, on one mesh, the
# second on another: activations and gradients move between them) and
# runs it on $2 ranks; prints the log's path.
run_stages() {
  out=$dir/mlp-$(basename "$1" .yaml)
  "$bin/parplan" compile "$dir/mlp.onnx" --train --optimizer adam --lr 0.01 \
    --annotations "$1" -o "$out" >"$out.compile.log" 2>&1 &&
    timeout 120 mpirun --oversubscribe -np "$2" "$bin/parplan-run" \
      "$out/plan.pb" --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 ||
    { echo "FAIL: mlp on the stages of $1:"; cat "$out.compile.log" "$out.log" 2>/dev/null; return 1; }
  echo "$out.log"
}
# stage_file NAME SHAPE FIRST-DEVICES SECOND-DEVICES: writes the file.
stage_file() {
  printf '%s\n' "stages:" "  - mesh: first" "    shape: $2" "    devices: $3" \
    '    nodes: ["fc1.*", "/fc1/*", "/Relu"]' "  - mesh: second" \
    "    shape: $2" "    devices: $4" '    nodes: ["fc2.*", "/fc2/*"]' \
    >"$dir/$1.yaml"
  echo "$dir/$1.yaml"
}

status=0
for model in mlp gpt cnn cnn-bn; do
  want=$(run "$dir/$model.mlir" 1 auto) || { status=1; continue; }
  # One line for eval: a newline would end its `set --` there.
  configs='"2 data-parallel" "4 auto" "2x2 data-parallel" "1x2 megatron" \
           "2x2 megatron" "2x2 auto" "8 data-parallel" "2x4 megatron"'
  # Batch norm on a split batch: statistics summed across the devices.
  [ "$model" = cnn-bn ] &&
    configs='"2 data-parallel" "4 data-parallel" "4 auto" "2x2 data-parallel" "2x2 auto"'
  eval "set -- $configs"
  for config in "$@"; do
    set -- $config
    got=$(run "$dir/$model.mlir" "$1" "$2") || { status=1; continue; }
    collectives=$(grep -cE 'plan\.(all_|reduce_scatter)' "${got%.reference.log}.plan.mlir")
    # --save-weights gathers each parameter whole, whatever its layout:
    # element by element the 1-device run's.
    if awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$got" &&
       "$bin/parplan-compare-outputs" "${want%.log}.weights" "${got%.log}.weights" \
         1e-5 >"${got%.log}.weights.compare" 2>&1; then
      echo "ok: $model on $1 ($2), $collectives collectives, $(grep -c '^weights' "$got") parameters: $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
    else
      echo "FAIL: $model on $1 ($2) differs from 1 device:"
      paste "$want" "$got"
      cat "${got%.log}.weights.compare" 2>/dev/null
      status=1
    fi
  done
  # Two stages on meshes of 2 and of 2x2 devices, each holding one layer's
  # forward, backward and update, run one after the other.
  if [ "$model" = mlp ]; then
    for config in "2 [2] [0,1] [2,3] 4" "2x2 [2,2] [0,1,2,3] [4,5,6,7] 8" \
                  "reversed [2] [3,2] [1,0] 4"; do
      set -- $config
      got=$(run_stages "$(stage_file "stages-$1" "$2" "$3" "$4")" "$5") ||
        { status=1; continue; }
      if grep -q '^  stages  *first [0-9x]* on devices' "${got%.log}.compile.log" &&
         awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$got"; then
        echo "ok: mlp on two stages of $2 ($3 and $4): $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
      else
        echo "FAIL: mlp on two stages of $2 ($3 and $4) differs from 1 device:"
        cat "${got%.log}.compile.log"
        paste "$want" "$got"
        status=1
      fi
    done
  fi
  # The CUDA backend's kernels, compiled for the CPU, and its memory (the
  # buffers at their arena offsets, sharing bytes as planned) on the sharded
  # programs (local shapes, sharded gathers): float32 arithmetic against the
  # reference's float64, so 1e-4.
  for config in "4 auto" "2x4 megatron"; do
    set -- $config
    got=$(run "$dir/$model.mlir" "$1" "$2" device) || { status=1; continue; }
    if grep -q '^backend: cpu (the CUDA kernels and memory plan, on the host)' "$got" &&
       awk -v tol=1e-4 -v steps=5 -f "$src/compare-runs.awk" "$want" "$got"; then
      echo "ok: $model on $1 ($2) with the CUDA kernels on the host: $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')$(grep '^backend: on the host' "$got")"
    else
      echo "FAIL: $model on $1 ($2) with the CUDA kernels on the host differs from 1 device:"
      paste "$want" "$got"
      status=1
    fi
  done
done

# Micro-batches: the MLP and the GPT with a symbolic batch, compiled by
# `parplan compile --batch B --micro-batches M` (each micro-batch B/M rows,
# its gradients summed before one update), give the losses and weights of
# the whole batch in one: on 1 device, on meshes with data and tensor
# parallelism, on two pipeline stages, and with the CUDA kernels and memory
# plan on the host.
"$bin/parplan-zoo" mlp --sizes 32,64,10 --dynamic-batch -o "$dir/mlp-batch.onnx" >/dev/null &&
  "$bin/parplan-zoo" gpt --layers 2 --hidden 32 --heads 4 --vocab 64 --seq 16 \
    --dynamic-batch -o "$dir/gpt-batch.onnx" >/dev/null || { echo "FAIL: zoo"; exit 1; }
# run_micro MODEL BATCH MESH STRATEGY M [HOST-KERNELS [ANNOTATIONS RANKS]]
# or MODEL BATCH MESH STRATEGY M HOST-KERNELS even STAGES [SCHEDULE]:
# prints the log's path.
run_micro() {
  out=$dir/$1-micro-$3-$4-$5-${6:-reference}${7:+-stages}${9:+-$9}
  if [ "${7:-}" = even ]; then
    layout="--mesh $3 --strategy $4 --stages $8${9:+ --schedule $9}"; ranks=$(devices "$3")
  elif [ -n "${7:-}" ]; then layout="--annotations $7"; ranks=$8
  else layout="--mesh $3 --strategy $4"; ranks=$(devices "$3"); fi
  "$bin/parplan" compile "$dir/$1-batch.onnx" --train --optimizer adam --lr 0.01 \
    --batch "$2" --micro-batches "$5" $layout -o "$out" \
    >"$out.compile.log" 2>&1 &&
    timeout 120 mpirun --oversubscribe -np "$ranks" "$bin/parplan-run" \
      "$out/plan.pb" --backend cpu --steps 5 --print-weights \
      --host-kernels "${6:-reference}" >"$out.log" 2>&1 ||
    { echo "FAIL: $1 on $3 ($4), $5 micro-batches:"; cat "$out.compile.log" "$out.log" 2>/dev/null; return 1; }
  echo "$out.log"
}
for model in mlp gpt; do
  batch=16
  [ "$model" = gpt ] && batch=8
  want=$(run_micro $model $batch 1 auto 1) || { status=1; continue; }
  for config in "1 auto 4" "2x2 auto 2" "2x2 megatron 4" "2 data-parallel 2" \
                "2x2 auto 4 device" "stages auto 2 reference $(stage_file stages-micro [2] [0,1] [2,3]) 4"; do
    set -- $config
    [ "$1" = stages ] && [ "$model" != mlp ] && continue
    got=$(run_micro $model $batch "$@") || { status=1; continue; }
    tol=1e-5
    [ "${4:-}" = device ] && tol=1e-4
    if grep -q "micro-batches" "${got%.log}.compile.log" &&
       awk -v tol=$tol -v steps=5 -f "$src/compare-runs.awk" "$want" "$got"; then
      echo "ok: $model, batch $batch in $3 micro-batches on $1 ($2${4:+, $4}): $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
    else
      echo "FAIL: $model, batch $batch in $3 micro-batches on $1 ($2${4:+, $4}) differs from the whole batch on 1 device:"
      cat "${got%.log}.compile.log"
      paste "$want" "$got"
      status=1
    fi
  done
done

# Mixed device types (docs/slicing.md#weighted-shares): on a node of A100s
# and a node of V100s (Inputs/mixed-2x2.json), `--shares speed` gives each
# node a part of the batch by its devices' speed (the V100s fewer rows):
# programs of other block extents, the loss a mean over the whole batch,
# splits along the nodes' axis gathered as summed zero-padded parts. The
# same losses and weights as the whole batch on 1 device, with and
# without micro-batches, data parallel, with tensor parallelism inside each
# node (megatron) and as the search lays it out, and
# with the CUDA kernels and memory plan on the host (1e-4).
for config in "mlp 16 data-parallel 1" "mlp 16 auto 2" "gpt 8 data-parallel 1" \
              "gpt 8 megatron 1" "gpt 16 auto 2" "gpt 8 data-parallel 1 device"; do
  set -- $config
  model=$1 batch=$2 strategy=$3 micro=$4 kernels=${5:-reference} tol=1e-5
  [ "$kernels" = device ] && tol=1e-4
  want=$(run_micro $model $batch 1 auto 1) || { status=1; continue; }
  out=$dir/$model-shares-$strategy-$micro-$kernels
  if "$bin/parplan" compile "$dir/$model-batch.onnx" --train --optimizer adam --lr 0.01 \
       --batch "$batch" --micro-batches "$micro" --cluster "$src/Inputs/mixed-2x2.json" \
       --stages 1 --strategy "$strategy" --shares speed -o "$out" >"$out.compile.log" 2>&1 &&
     timeout 120 mpirun --oversubscribe -np 4 "$bin/parplan-run" "$out/plan.pb" \
       --backend cpu --steps 5 --print-weights --host-kernels "$kernels" >"$out.log" 2>&1 &&
     grep -q '^  shares           mesh axis 0 splits by device speed: [0-9]* (A100-SXM4-40GB), [0-9]* (V100-SXM2-32GB)' "$out.compile.log" &&
     awk -v tol=$tol -v steps=5 -f "$src/compare-runs.awk" "$want" "$out.log"; then
    echo "ok: $model, batch $batch in $micro micro-batches on mixed-2x2 ($strategy, $kernels kernels), $(sed -n 's/^  shares *//p' "$out.compile.log"): $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
  else
    echo "FAIL: $model, batch $batch in $micro micro-batches on mixed-2x2 ($strategy, $kernels kernels, parts by speed) differs from the whole batch on 1 device:"
    cat "$out.compile.log" "$out.log"
    paste "$want" "$out.log"
    status=1
  fi
done

# Per-device shares whose rows do not divide by the mesh (docs/slicing.md#weighted-shares):
# mixed-2x2 as one axis of 4 devices, its peaks cut a thousandfold so that
# compute outweighs communication and the batch stays split. 10 rows by
# speed are 3, 3, 2, 2: the reshapes carry the split, since each device's
# rows times the sequence are its elements after the reshape too (every
# reshape into the heads keeps the batch split; the MLP's weight gradients
# may gather their tokens to split the hidden width instead).
sed 's|TFLOP/s|GFLOP/s|; s|TOP/s|GOP/s|' "$src/Inputs/mixed-2x2.json" >"$dir/mixed-2x2-slow.json"
want=$(run_micro gpt 10 1 auto 1) || status=1
out=$dir/gpt-shares-rows
if [ -n "$want" ] &&
   "$bin/parplan" compile "$dir/gpt-batch.onnx" --train --optimizer adam --lr 0.01 \
     --batch 10 --cluster "$dir/mixed-2x2-slow.json" --mesh 4 --stages 1 --shares speed \
     --emit sbp >"$out.sbp" 2>"$out.compile.log" &&
   grep -q 'shares = \[\[3, 3, 2, 2\]\]' "$out.sbp" &&
   grep 'nn.reshape' "$out.sbp" | grep -q 'tensor<10x16x32xf32> -> tensor<10x16x4x8xf32>' &&
   ! grep 'nn.reshape' "$out.sbp" | grep 'tensor<10x16x32xf32> -> tensor<10x16x4x8xf32>' |
     grep -vq 'sbp.sharding = #sbp.sharding<@mesh, \[\[#sbp.s<0>\]\] -> \[\[#sbp.s<0>\]\]' &&
   "$bin/parplan" compile "$dir/gpt-batch.onnx" --train --optimizer adam --lr 0.01 \
     --batch 10 --cluster "$dir/mixed-2x2-slow.json" --mesh 4 --stages 1 --shares speed \
     -o "$out" >"$out.compile.log" 2>&1 &&
   timeout 120 mpirun --oversubscribe -np 4 "$bin/parplan-run" "$out/plan.pb" \
     --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 &&
   awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$out.log"; then
  echo "ok: gpt, batch 10 on mixed-2x2 as one axis of 4, rows 3, 3, 2, 2 split through the reshapes: $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
else
  echo "FAIL: gpt, batch 10 by rows 3, 3, 2, 2 on mixed-2x2 as one axis, split through the reshapes, differs from the whole batch on 1 device:"
  cat "$out.compile.log" "$out.log" 2>/dev/null
  status=1
fi

# A mesh regrouped by speed (docs/sbp-assign.md#parts-by-speed): a node of
# 4 A100s and one of 2 V100s, peaks cut a thousandfold, laid out without a
# mesh given. Whole rows per device cannot follow the speeds (8 rows: 2, 2,
# 1, 1 on the A100s), so the 6 devices are a 3x2 mesh of pairs taking 3,
# 3 and 2 rows, each pair splitting its rows (3 as 2 and 1) or a
# product's columns inside it. The same losses and weights as the whole
# batch on 1 device, data parallel, Megatron's and as the search lays it
# out.
sed '0,/"devices": 2/s//"devices": 4/' "$dir/mixed-2x2-slow.json" >"$dir/mixed-4-2-slow.json"
want=$(run_micro gpt 8 1 auto 1) || status=1
for strategy in auto data-parallel megatron; do
  out=$dir/gpt-groups-$strategy
  if [ -n "$want" ] &&
     "$bin/parplan" compile "$dir/gpt-batch.onnx" --train --optimizer adam --lr 0.01 \
       --batch 8 --cluster "$dir/mixed-4-2-slow.json" --stages 1 --strategy "$strategy" \
       -o "$out" >"$out.compile.log" 2>&1 &&
     grep -q "^compiled .* for 6 devices (mesh 3x2, " "$out.compile.log" &&
     grep -q '^  shares           mesh axis 0 splits by device speed: 3 (A100-SXM4-40GB), 3 (A100-SXM4-40GB), 2 (V100-SXM2-32GB) of every 8' "$out.compile.log" &&
     # Megatron's tied embedding, split by rows, is gathered once for the
     # forward's head and kept for the backward's (sbp.kept_for_backward).
     { [ "$strategy" != megatron ] ||
       "$bin/parplan" compile "$dir/gpt-batch.onnx" --train --optimizer adam --lr 0.01 \
         --batch 8 --cluster "$dir/mixed-4-2-slow.json" --stages 1 --strategy "$strategy" \
         --emit sbp -o "$out-sbp" 2>/dev/null |
         grep -q 'nn.param "transformer.wte.weight" {.*sbp.kept_for_backward'; } &&
     timeout 120 mpirun --oversubscribe -np 6 "$bin/parplan-run" "$out/plan.pb" \
       --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 &&
     awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$out.log"; then
    echo "ok: gpt, batch 8 on a node of 4 A100s and one of 2 V100s in pairs (mesh 3x2, rows 3, 3, 2; $strategy): $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
  else
    echo "FAIL: gpt, batch 8 on pairs of mixed devices by speed (mesh 3x2, $strategy) differs from the whole batch on 1 device:"
    cat "$out.compile.log" "$out.log" 2>/dev/null
    status=1
  fi
done

# The largest parameter split (docs/sbp-assign.md#kept-for-the-backward): a
# GPT whose tied embedding (vocabulary 256) is its largest parameter, on
# the pairs above; the start that splits it and its Adam moments by rows
# within each pair wins. The same losses and weights as the whole batch on
# 1 device.
"$bin/parplan-zoo" gpt --layers 2 --hidden 32 --heads 4 --vocab 256 --seq 16 \
  --dynamic-batch -o "$dir/gptv-batch.onnx" >/dev/null || { echo "FAIL: zoo"; exit 1; }
want=$(run_micro gptv 8 1 auto 1) || status=1
out=$dir/gptv-largest-split
if [ -n "$want" ] &&
   "$bin/parplan" compile "$dir/gptv-batch.onnx" --train --optimizer adam --lr 0.01 \
     --batch 8 --cluster "$dir/mixed-4-2-slow.json" --stages 1 -o "$out" >"$out.compile.log" 2>&1 &&
   grep -q '^  starts           replicated (parts by speed in groups of 2, the largest parameter split) .* (chosen)' "$out.compile.log" &&
   grep -q '^  parameters       \[B, S(0)\] transformer.wte.weight' "$out.compile.log" &&
   timeout 120 mpirun --oversubscribe -np 6 "$bin/parplan-run" "$out/plan.pb" \
     --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 &&
   awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$out.log"; then
  echo "ok: gpt (vocabulary 256), batch 8 on mixed pairs, the tied embedding split by rows within each pair: $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
else
  echo "FAIL: gpt (vocabulary 256) on mixed pairs with the largest parameter split differs from the whole batch on 1 device:"
  cat "$out.compile.log" "$out.log" 2>/dev/null
  status=1
fi

# Devices alike whose batch does not divide by them
# (docs/sbp-assign.md#parts-by-speed): the 6 devices above, all A100s on
# nodes of 4 and 2, one mesh of 6, batch 8 in near-even whole rows (2, 2,
# 1, 1, 1, 1). The same losses and weights as the whole batch on 1 device.
sed 's/"device_type": "V100-SXM2-32GB"/"device_type": "A100-SXM4-40GB"/' \
  "$dir/mixed-4-2-slow.json" >"$dir/alike-4-2-slow.json"
want=$(run_micro gpt 8 1 auto 1) || status=1
out=$dir/gpt-near-even-rows
if [ -n "$want" ] &&
   "$bin/parplan" compile "$dir/gpt-batch.onnx" --train --optimizer adam --lr 0.01 \
     --batch 8 --cluster "$dir/alike-4-2-slow.json" --stages 1 --strategy data-parallel \
     --shares speed -o "$out" >"$out.compile.log" 2>&1 &&
   grep -q '^  shares           mesh axis 0 splits in near-even whole rows: 2 (A100-SXM4-40GB), 2 (A100-SXM4-40GB), 1 (A100-SXM4-40GB), 1 (A100-SXM4-40GB), 1 (A100-SXM4-40GB), 1 (A100-SXM4-40GB) of every 8' "$out.compile.log" &&
   timeout 120 mpirun --oversubscribe -np 6 "$bin/parplan-run" "$out/plan.pb" \
     --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 &&
   awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$out.log"; then
  echo "ok: gpt, batch 8 on 6 A100s in near-even whole rows (2, 2, 1, 1, 1, 1): $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
else
  echo "FAIL: gpt, batch 8 on 6 A100s in near-even whole rows differs from the whole batch on 1 device:"
  cat "$out.compile.log" "$out.log" 2>/dev/null
  status=1
fi

# Stages of mixed types ending inside a layer (docs/pipeline.md#mixed-device-types):
# the A100s' stage holds the GPT's first layer and the attention of its
# second, the V100s' the rest; the residual stream and its gradient cross
# there. The same losses and weights as the whole batch on 1 device.
want=$(run_micro gpt 8 1 auto 1) || status=1
out=$dir/gpt-inside-layers
if [ -n "$want" ] &&
   "$bin/parplan" compile "$dir/gpt-batch.onnx" --train --optimizer adam --lr 0.01 \
     --batch 8 --micro-batches 2 --cluster "$src/Inputs/mixed-2x2.json" --stages 2 \
     --stage-cuts inside-layers -o "$out" >"$out.compile.log" 2>&1 &&
   grep -q 'stage0 1x2 on devices 0..1 (A100-SXM4-40GB, 1 of 2 layers and part of transformer.h.1)' "$out.compile.log" &&
   timeout 120 mpirun --oversubscribe -np 4 "$bin/parplan-run" "$out/plan.pb" \
     --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 &&
   awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$out.log"; then
  echo "ok: gpt, batch 8 in 2 micro-batches on mixed-2x2, 2 stages cut inside transformer.h.1: $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
else
  echo "FAIL: gpt on mixed-2x2, 2 stages cut inside a layer, differs from the whole batch on 1 device:"
  cat "$out.compile.log" "$out.log" 2>/dev/null
  status=1
fi

# A data-parallel gradient's hierarchical all-reduce (docs/resharding.md):
# on mixed-2x2, the weights pinned whole and the rows split over both
# axes, each gradient is reduce-scattered within the node, its part
# all-reduced between the nodes and gathered back. The reduce-scatter,
# within the positions of the uneven shares, runs on the communication
# stream; the all-reduce that joins the positions and the gather run on
# the gradients stream (feeds_update), whose buffers plan-memory keeps
# until the update. The same losses and weights as the whole batch on 1
# device.
"$bin/parplan-zoo" mlp --sizes 64,512,512,10 --dynamic-batch -o "$dir/mlp-wide.onnx" >/dev/null
printf 'pins:\n  - node: "fc*"\n    results: ["[B, B]"]\n  - node: "input"\n    results: ["[S(0), S(0)]"]\n' >"$dir/data-parallel-pins.yaml"
out=$dir/mlp-hierarchical
hier="--train --optimizer sgd --lr 0.01 --batch 1024"
if "$bin/parplan" compile "$dir/mlp-wide.onnx" $hier --mesh 1 -o "$out-one" >"$out-one.compile.log" 2>&1 &&
   timeout 300 "$bin/parplan-run" "$out-one/plan.pb" --backend cpu --steps 5 --print-weights >"$out-one.log" 2>&1 &&
   "$bin/parplan" compile "$dir/mlp-wide.onnx" $hier --cluster "$src/Inputs/mixed-2x2.json" \
     --stages 1 --annotations "$dir/data-parallel-pins.yaml" -o "$out" >"$out.compile.log" 2>&1 &&
   "$bin/parplan" compile "$dir/mlp-wide.onnx" $hier --cluster "$src/Inputs/mixed-2x2.json" \
     --stages 1 --annotations "$dir/data-parallel-pins.yaml" --emit plan 2>/dev/null >"$out.mlir" &&
   grep -q 'plan.reduce_scatter .* on @axis1 axis = 0 : memref<512x512xf32>' "$out.mlir" &&
   grep -q 'plan.all_reduce .* on @axis0 {feeds_update} : memref<256x512xf32>' "$out.mlir" &&
   grep -q 'plan.all_gather .* on @axis1 axis = 0 {feeds_update} : memref<256x512xf32> -> memref<512x512xf32>' "$out.mlir" &&
   timeout 300 mpirun --oversubscribe -np 4 "$bin/parplan-run" "$out/plan.pb" \
     --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 &&
   awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$out-one.log" "$out.log"; then
  echo "ok: mlp 64-512-512-10, batch 1024 on mixed-2x2, gradients reduced hierarchically on the gradients stream: $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
else
  echo "FAIL: mlp on mixed-2x2 with hierarchical all-reduces differs from the whole batch on 1 device:"
  cat "$out-one.compile.log" "$out.compile.log" "$out.log" 2>/dev/null | tail -40
  status=1
fi

# Placement (docs/pipeline.md#placement) moves no numbers: the same losses
# and weights as 1 device. run_geo MODEL BATCH WANT NAME RANKS SUMMARY WHAT
# [OPTIONS...] compiles MODEL on Inputs/geo-2-regions.yaml with OPTIONS,
# checks the summary has a line matching SUMMARY, and runs it on RANKS.
run_geo() {
  local model=$1 batch=$2 want=$3 out=$dir/$1-$4 ranks=$5 summary=$6 what=$7
  shift 7
  if "$bin/parplan" compile "$dir/$model-batch.onnx" --train --optimizer adam --lr 0.01 \
       --batch "$batch" --cluster "$src/Inputs/geo-2-regions.yaml" "$@" -o "$out" >"$out.compile.log" 2>&1 &&
     grep -q "$summary" "$out.compile.log" &&
     timeout 120 mpirun --oversubscribe -np "$ranks" "$bin/parplan-run" "$out/plan.pb" \
       --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 &&
     awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$out.log"; then
    echo "ok: $model, batch $batch $what: $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
  else
    echo "FAIL: $model, batch $batch $what differs from the whole batch on 1 device:"
    cat "$out.compile.log" "$out.log"
    paste "$want" "$out.log"
    status=1
  fi
}
for model in mlp gpt; do
  batch=16
  [ "$model" = gpt ] && batch=8
  want=$(run_micro $model $batch 1 auto 1) || { status=1; continue; }
  # On the cluster of two regions the compile keeps the plan on the near
  # node's devices alone, a cluster of its own numbered from 0.
  run_geo $model $batch "$want" placed 2 '^  placement        node near (2 devices) .*(kept' \
    "placed on geo-2-regions' near node"
  # Stages given on both regions: the devices numbered region by region
  # (the near node's faster devices first) or as the file lists them,
  # whichever the compile judges faster.
  run_geo $model $batch "$want" regions 4 '^  placement        .*every node, region by region: oregon, paris' \
    "on 2 stages across geo-2-regions' regions" --mesh 4 --stages 2
done

# Mixed precision: with micro-batches, a weight's bf16 copy is made once
# per step, before them, and every micro-batch's forward and backward read
# it (docs/training.md). The GPT in bf16 with full recomputation, 4
# micro-batches on 1 device, gives the whole batch's losses and weights up
# to bf16's rounding of the gradients, summed per micro-batch in f32
# (1e-2), and so with the gradients summed in bf16 (--gradient-sums low),
# and on two stages, its tied embedding received by the head's stage
# before the micro-batches and the head's part of its gradient summed
# there and moved back once, after them; the MLP in bf16 on two stages of
# 2 devices under 1F1B (data parallelism inside each) gives its 4
# micro-batches on 1 device.
# run_bf16 MODEL BATCH M RANKS LAYOUT...: prints the log's path.
run_bf16() {
  model=$1 batch=$2 micro=$3 ranks=$4
  shift 4
  out=$dir/$model-bf16-$micro-$ranks$(printf '%s' "$*" | tr -c 'a-zA-Z0-9' '_')
  "$bin/parplan" compile "$dir/$model-batch.onnx" --train --optimizer adam --lr 0.01 \
    --batch "$batch" --micro-batches "$micro" --mixed-precision bf16 --recompute full \
    "$@" -o "$out" >"$out.compile.log" 2>&1 &&
    timeout 120 mpirun --oversubscribe -np "$ranks" "$bin/parplan-run" \
      "$out/plan.pb" --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 ||
    { echo "FAIL: $model in bf16, $micro micro-batches on $ranks ranks ($*):"; cat "$out.compile.log" "$out.log" 2>/dev/null; return 1; }
  echo "$out.log"
}
for config in "gpt 8 1e-2 1 --mesh 1" "gpt 8 1e-2 1 --mesh 1 --gradient-sums low" \
              "gpt 8 1e-2 2 --mesh 2 --stages 2" \
              "mlp 16 1e-5 4 --annotations $(stage_file stages-bf16 [2] [0,1] [2,3])"; do
  set -- $config
  model=$1 batch=$2 tol=$3 ranks=$4
  shift 4
  # The GPT against the whole batch; the MLP against its own micro-batches
  # on 1 device.
  if [ "$model" = gpt ]; then
    want=$(run_bf16 $model $batch 1 1 --mesh 1) || { status=1; continue; }
  else
    want=$(run_bf16 $model $batch 4 1 --mesh 1) || { status=1; continue; }
  fi
  got=$(run_bf16 $model $batch 4 "$ranks" "$@") || { status=1; continue; }
  if awk -v tol=$tol -v steps=5 -f "$src/compare-runs.awk" "$want" "$got"; then
    echo "ok: $model in bf16, batch $batch in 4 micro-batches on $ranks ranks ($*): $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
  else
    echo "FAIL: $model in bf16, batch $batch in 4 micro-batches on $ranks ranks ($*) differs:"
    paste "$want" "$got"
    status=1
  fi
done

# A batch fixed in the model (an export without dynamic axes): micro-batches
# without --batch divide the model's own batch (nn-divide-batch). The MLP
# on two pipeline stages of 2 devices and the GPT on a 2x2 mesh, 4
# micro-batches each, give the whole batch's losses and weights on 1 device;
# so does a BERT on two stages.
"$bin/parplan-zoo" mlp --sizes 32,64,10 --batch 16 -o "$dir/mlp-fixed.onnx" >/dev/null &&
  "$bin/parplan-zoo" gpt --layers 2 --hidden 32 --heads 4 --vocab 64 --seq 16 \
    --batch 8 -o "$dir/gpt-fixed.onnx" >/dev/null &&
  "$bin/parplan-zoo" bert --layers 2 --hidden 32 --heads 4 --vocab 64 --seq 16 \
    --batch 8 -o "$dir/bert-fixed.onnx" >/dev/null || { echo "FAIL: zoo"; exit 1; }
# BERT on two even stages of 1x2 (its key and value projections in their
# layer's stage, place-stages), against its own fixed-batch plan on 1
# device.
"$bin/parplan" compile "$dir/bert-fixed.onnx" --train --optimizer adam --lr 0.01 \
  --mesh 1 -o "$dir/bert-fixed-one" >"$dir/bert-fixed-one.compile.log" 2>&1 &&
  timeout 120 mpirun --oversubscribe -np 1 "$bin/parplan-run" "$dir/bert-fixed-one/plan.pb" \
    --backend cpu --steps 5 --print-weights >"$dir/bert-fixed-one.log" 2>&1 ||
  { echo "FAIL: bert on 1 device:"; cat "$dir/bert-fixed-one.compile.log" "$dir/bert-fixed-one.log"; status=1; }
for config in "mlp 16 4 --annotations $(stage_file stages-fixed [2] [0,1] [2,3])" \
              "gpt 8 4 --mesh 2x2 --strategy auto" \
              "bert 8 4 --mesh 2x2 --stages 2"; do
  set -- $config
  model=$1 batch=$2 ranks=$3
  shift 3
  if [ "$model" = bert ]; then
    want=$dir/bert-fixed-one.log
  else
    want=$(run_micro $model $batch 1 auto 1) || { status=1; continue; }
  fi
  out=$dir/$model-fixed-micro
  if "$bin/parplan" compile "$dir/$model-fixed.onnx" --train --optimizer adam \
       --lr 0.01 --micro-batches 4 "$@" -o "$out" >"$out.compile.log" 2>&1 &&
     grep -q "micro-batches    4 of $((batch / 4)) (batch $batch, fixed in the model)" "$out.compile.log" &&
     timeout 120 mpirun --oversubscribe -np "$ranks" "$bin/parplan-run" "$out/plan.pb" \
       --backend cpu --steps 5 --print-weights >"$out.log" 2>&1 &&
     awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$out.log"; then
    echo "ok: $model, batch $batch fixed in the model, in 4 micro-batches ($*): $(grep -o 'loss [0-9.]*' "$out.log" | tr '\n' ' ')"
  else
    echo "FAIL: $model, batch $batch fixed in the model, in 4 micro-batches ($*) differs from the whole batch on 1 device:"
    cat "$out.compile.log" "$out.log" 2>/dev/null
    paste "$want" "$out.log" 2>/dev/null
    status=1
  fi
done

# Schedules: the stages run their micro-batches' forwards and backwards in
# the order of each schedule (parplan-run --schedule; the plan's own is
# 1f1b), with messages between stages that do not wait for their
# receivers: a 4-layer MLP on 4 stages of 2 devices and the MLP on 2
# stages of 2x2 devices (tensor and data parallelism inside stages), 8
# ranks each, 1, 2 and 4 micro-batches, give the whole batch's losses and
# weights on 1 device.
"$bin/parplan-zoo" mlp --sizes 32,64,64,64,10 --dynamic-batch -o "$dir/mlp4-batch.onnx" >/dev/null ||
  { echo "FAIL: zoo"; exit 1; }
four_stages=$dir/stages-four.yaml
{
  echo "stages:"
  for s in 1 2 3 4; do
    relu="\"/Relu_$((s - 1))\""
    [ $s = 1 ] && relu='"/Relu"'
    [ $s = 4 ] && relu=
    printf '%s\n' "  - mesh: stage$s" "    shape: [2]" \
      "    devices: [$((2 * s - 2)),$((2 * s - 1))]" \
      "    nodes: [\"fc$s.*\", \"/fc$s/*\"${relu:+, $relu}]"
  done
} >"$four_stages"
two_stages=$(stage_file stages-schedules [2,2] [0,1,2,3] [4,5,6,7])
for config in "mlp4 $four_stages" "mlp $two_stages"; do
  set -- $config
  model=$1 stages=$2
  want=$(run_micro $model 16 1 auto 1) || { status=1; continue; }
  for m in 1 2 4; do
    compiled=$(run_micro $model 16 "$(basename "$stages" .yaml)" auto $m reference "$stages" 8) ||
      { status=1; continue; }
    # The last: with the CUDA kernels and memory plan on the host (buffers
    # sharing arena bytes), to 1e-4.
    for schedule in gpipe 1f1b eager-1f1b gpipe-device; do
      kernels=reference tol=1e-5
      [ $schedule = gpipe-device ] && { [ $m = 4 ] || continue; kernels=device tol=1e-4; }
      got=${compiled%.log}-$schedule.log
      timeout 120 mpirun --oversubscribe -np 8 "$bin/parplan-run" \
        "${compiled%.log}/plan.pb" --backend cpu --steps 5 --print-weights \
        --schedule ${schedule%-device} --host-kernels $kernels >"$got" 2>&1
      if { [ $m = 1 ] || grep -q "^schedule: ${schedule%-device}, [24] stages, $m micro-batches" "$got"; } &&
         awk -v tol=$tol -v steps=5 -f "$src/compare-runs.awk" "$want" "$got"; then
        echo "ok: $model on $(basename "$stages" .yaml), $m micro-batches, $schedule: $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
      else
        echo "FAIL: $model on $(basename "$stages" .yaml), $m micro-batches, $schedule differs from the whole batch on 1 device:"
        cat "${compiled%.log}.compile.log"
        paste "$want" "$got"
        status=1
      fi
    done
  done
done

# Stages placed by --stages: the mesh's first axis and the layers cut
# evenly, each stage's backward and updates with its forward. The 4-layer
# MLP on 4 stages of 1x2 devices and the GPT (embedding, 2 layers, tied
# head) on 2 stages of 1x2, 8 and 4 ranks, give 1 device's numbers; so
# does Megatron's grid of the MLP (--tensor 2 --pipeline 4: the same mesh
# and stages, the megatron layouts inside them). With --micro-batches auto,
# the count and the schedule the search chose run (the compile says which).
for config in "mlp4 16 4x2 4 4 auto" "gpt 8 2x2 2 2 auto" "mlp4 16 4x2 4 4 megatron" \
              "mlp4 16 4x2 4 auto auto"; do
  set -- $config
  model=$1 batch=$2 mesh=$3 count=$4 m=$5 strategy=$6
  want=$(run_micro $model $batch 1 auto 1) || { status=1; continue; }
  got=$(run_micro $model $batch $mesh $strategy $m reference even $count) || { status=1; continue; }
  chosen=$(grep -o 'micro-batches  *[0-9]* of [0-9]* (batch [0-9]*), gradients summed before one update, stages run them by [a-z0-9-]*' \
    "${got%.log}.compile.log")
  m=$(echo "$chosen" | awk '{print $2}') schedule=$(echo "$chosen" | awk '{print $NF}')
  if [ -n "$chosen" ] && grep -q "^schedule: $schedule, $count stages, $m micro-batches" "$got" &&
     awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$got"; then
    echo "ok: $model on --stages $count of mesh $mesh ($strategy), $m micro-batches, $schedule: $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
  else
    echo "FAIL: $model on --stages $count of mesh $mesh ($strategy), $5 micro-batches differs from the whole batch on 1 device:"
    cat "${got%.log}.compile.log"
    paste "$want" "$got"
    status=1
  fi
done

# Dropout: masks by (seed, step, micro-batch, dropout, logical element
# index), so meshes and pipelines draw what one device draws, micro-batch by
# micro-batch: an MLP with dropout after every ReLU, 4 micro-batches.
"$bin/parplan-zoo" mlp --sizes 32,64,64,10 --dropout 0.2 --dynamic-batch \
  -o "$dir/mlpdrop-batch.onnx" >/dev/null || { echo "FAIL: zoo"; exit 1; }
if want=$(run_micro mlpdrop 16 1 auto 4); then
  for config in "2x2 data-parallel 4" "2x2 megatron 4" \
                "2x2 auto 4 reference even 2 1f1b" "2x2 auto 4 device"; do
    set -- $config
    got=$(run_micro mlpdrop 16 "$@") || { status=1; continue; }
    if awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$got"; then
      echo "ok: mlp with dropout, 4 micro-batches, on $config: $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
    else
      echo "FAIL: mlp with dropout, 4 micro-batches, on $config differs from 1 device:"
      paste "$want" "$got"
      status=1
    fi
  done
else
  status=1
fi

# Interleaved: stages of two model chunks each (--schedule interleaved),
# each micro-batch going round the stages twice, virtual stage c x P + s
# on stage s. The 4-layer MLP on 2 stages of 2x2 devices (tensor and data
# parallelism inside stages) with 2 and 4 micro-batches, and an 8-layer
# MLP on 4 stages of 1x2 with 4 and 8, give 1 device's numbers.
"$bin/parplan-zoo" mlp --sizes 32,64,64,64,64,64,64,64,10 --dynamic-batch \
  -o "$dir/mlp8-batch.onnx" >/dev/null || { echo "FAIL: zoo"; exit 1; }
for config in "mlp4 2 2" "mlp4 2 4" "mlp8 4 4" "mlp8 4 8"; do
  set -- $config
  model=$1 count=$2 m=$3
  want=$(run_micro $model 16 1 auto 1) || { status=1; continue; }
  got=$(run_micro $model 16 4x2 auto $m reference even $count interleaved) || { status=1; continue; }
  if grep -q "stages run them by interleaved" "${got%.log}.compile.log" &&
     grep -q "^schedule: interleaved, $count stages, $m micro-batches" "$got" &&
     awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$want" "$got"; then
    echo "ok: $model on --stages $count of mesh 4x2, 2 chunks each, $m micro-batches, interleaved: $(grep -o 'loss [0-9.]*' "$got" | tr '\n' ' ')"
  else
    echo "FAIL: $model on --stages $count of mesh 4x2, 2 chunks each, $m micro-batches, interleaved differs from the whole batch on 1 device:"
    cat "${got%.log}.compile.log" "$got"
    paste "$want" "$got"
    status=1
  fi
done
# --untie: the zoo GPT's token embedding, tied to its head, becomes two
# parameters that load the same bytes from the model (before a step, their
# sums agree on 2 ranks of tensor parallelism) and then train apart.
"$bin/parplan" compile "$dir/gpt.onnx" --train --optimizer adam --lr 0.01 \
  --untie transformer.wte.weight \
  --mesh 1x2 --strategy megatron -q -o "$dir/untied" >"$dir/untied.log" 2>&1 &&
  timeout 120 mpirun --oversubscribe -np 2 "$bin/parplan-run" "$dir/untied/plan.pb" \
    --backend cpu --steps 0 --print-weights --weights "$dir/gpt.onnx" \
    >"$dir/untied-0.log" 2>&1 &&
  timeout 120 mpirun --oversubscribe -np 2 "$bin/parplan-run" "$dir/untied/plan.pb" \
    --backend cpu --steps 2 --print-weights --weights "$dir/gpt.onnx" \
    >"$dir/untied-2.log" 2>&1 || { echo "FAIL: untied GPT:"; cat "$dir"/untied*.log; exit 1; }
sums() { grep "^weights transformer.wte.weight" "$1" | sed 's/^weights [^:]*: //' | uniq | wc -l; }
if [ "$(grep -c '^weights transformer.wte.weight' "$dir/untied-0.log")" = 2 ] &&
   [ "$(sums "$dir/untied-0.log")" = 1 ] && [ "$(sums "$dir/untied-2.log")" = 2 ]; then
  echo "ok: untied GPT embedding and head start equal and train apart: $(grep '^weights transformer.wte.weight' "$dir/untied-2.log" | tr '\n' ' ')"
else
  echo "FAIL: untied GPT embedding and head:"; cat "$dir/untied-0.log" "$dir/untied-2.log"; status=1
fi
# Weights from another model than the plan's: parameters are read at their
# byte offsets in the plan's model file, so another file is refused in one
# line (its size differs), before anything runs.
if timeout 120 mpirun --oversubscribe -np 2 "$bin/parplan-run" "$dir/untied/plan.pb" \
     --backend cpu --steps 1 --weights "$dir/mlp.onnx" >"$dir/wrong-weights.log" 2>&1; then
  echo "FAIL: the GPT plan ran with the MLP's weights"; status=1
elif [ "$(grep -c "^parplan-run: --weights '$dir/mlp.onnx' has [0-9]* bytes, but the plan was compiled from 'gpt.onnx' of [0-9]* bytes: give the model the plan was compiled from$" "$dir/wrong-weights.log")" != 1 ]; then
  echo "FAIL: expected one line refusing the MLP's weights, got:"; cat "$dir/wrong-weights.log"; status=1
else
  echo "ok: another model's weights are refused: $(grep '^parplan-run:' "$dir/wrong-weights.log")"
fi
# A file of the plan's size with one byte changed (its last, a sample of
# the fingerprint): refused too, not read at the plan's offsets.
cp "$dir/gpt.onnx" "$dir/same-size.onnx"
size=$(stat -c %s "$dir/same-size.onnx")
last=$(od -An -tu1 -j $((size - 1)) -N1 "$dir/same-size.onnx" | tr -d ' ')
printf "\\$(printf %03o $(((last + 1) % 256)))" |
  dd of="$dir/same-size.onnx" bs=1 seek=$((size - 1)) count=1 conv=notrunc 2>/dev/null
if cmp -s "$dir/gpt.onnx" "$dir/same-size.onnx"; then
  echo "FAIL: could not change the copy's last byte"; status=1
elif timeout 120 mpirun --oversubscribe -np 2 "$bin/parplan-run" "$dir/untied/plan.pb" \
     --backend cpu --steps 1 --weights "$dir/same-size.onnx" >"$dir/same-size.log" 2>&1; then
  echo "FAIL: the GPT plan ran with a changed copy of its model"; status=1
elif [ "$(grep -c "^parplan-run: --weights '$dir/same-size.onnx' has the size of 'gpt.onnx', the model the plan was compiled from, but other bytes: give the model the plan was compiled from$" "$dir/same-size.log")" != 1 ]; then
  echo "FAIL: expected one line refusing the changed copy, got:"; cat "$dir/same-size.log"; status=1
else
  echo "ok: a file of the model's size with other bytes is refused: $(grep '^parplan-run:' "$dir/same-size.log")"
fi
# A replicated parameter stepped in halves and gathered back whole, the
# gather writing the parameter itself: the losses and weights of one device
# (the step laid out by hand: the search takes it only on large models).
gathered=$dir/gathered-update
one=$dir/gathered-update-one
if "$bin/parplan-opt" "$src/Inputs/gathered-update.mlir" -attach-cluster -lower-to-plan \
     -plan-memory -o "$gathered.plan.mlir" &&
   grep -q 'plan.all_gather %[0-9]* into %0 ' "$gathered.plan.mlir" &&
   ! grep -q 'plan.update' "$gathered.plan.mlir" &&
   "$bin/parplan-translate" --plan-to-proto "$gathered.plan.mlir" -o "$gathered.pb" &&
   "$bin/parplan-opt" "$src/Inputs/gathered-update-one.mlir" -attach-cluster \
     -sbp-assign="mesh=1" -insert-boxing -expand-boxing -lower-to-plan -plan-memory \
     -o "$one.plan.mlir" &&
   "$bin/parplan-translate" --plan-to-proto "$one.plan.mlir" -o "$one.pb" &&
   "$bin/parplan-run" "$one.pb" --backend cpu --steps 5 --print-weights >"$one.log" 2>&1 &&
   timeout 120 mpirun --oversubscribe -np 2 "$bin/parplan-run" "$gathered.pb" \
     --backend cpu --steps 5 --print-weights >"$gathered.log" 2>&1 &&
   awk -v tol=1e-5 -v steps=5 -f "$src/compare-runs.awk" "$one.log" "$gathered.log"; then
  echo "ok: a parameter stepped in halves and gathered into itself: $(grep -o 'loss [0-9.]*' "$gathered.log" | tr '\n' ' ')"
else
  echo "FAIL: a parameter stepped in halves and gathered into itself differs from 1 device:"
  cat "$gathered.log" "$one.log" 2>/dev/null; status=1
fi
exit $status
