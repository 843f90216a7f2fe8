#!/bin/sh
# Inference plans compute what one device computes: the zoo's MLP, GPT,
# BERT (two outputs), ViT and ResNet-50, compiled without --train (the
# forward pass alone) on 2, 4 and 8 devices of a DGX A100 (the automatic
# search, Megatron's tensor parallelism, pipeline stages with
# micro-batches) and run by parplan-run under mpirun with --outputs, must
# write the 1-device plan's outputs for 2 steps, element by element to
# 1e-5 of the element (with the tensor's rms as a floor): parplan-compare-
# outputs. A model whose batch is fixed in the export is micro-batched by
# dividing it.
# Usage: inference-equivalence.sh BIN-DIR
set -u
bin=$1
. "$(dirname "$0")/mpi-setup.sh"

failures=0

# Compiles model $1 as $2 for $3 devices with the compile flags after them
# and runs 2 steps on the model's weights with --outputs into
# $dir/$2.out.
serve() {
  model=$1 name=$2 ranks=$3
  shift 3
  "$bin/parplan" compile "$dir/$model" --cluster dgx-a100 -o "$dir/$name" \
    -q "$@" >"$dir/$name.compile" 2>&1 &&
    timeout 300 mpirun --oversubscribe -np "$ranks" \
      "$bin/parplan-run" "$dir/$name/plan.pb" --backend cpu --steps 2 \
      --weights "$dir/$model" --outputs "$dir/$name.out" \
      </dev/null >"$dir/$name.run" 2>&1 ||
    {
      echo "FAIL: $name ($model on $ranks devices, $*):"
      cat "$dir/$name.compile" "$dir/$name.run" 2>/dev/null | tail -20
      failures=$((failures + 1))
      return 1
    }
  head -1 "$dir/$name.compile"
}

# Compiles and runs $1 on 1 device with the compile flags $2, then each
# case "NAME DEVICES FLAGS..." of the lines on stdin, comparing each one's outputs with the 1-device ones.
against_one() {
  model=$1
  # shellcheck disable=SC2086
  serve "$model" "$model.1" 1 --mesh=1 $2 || return
  while read -r name ranks flags; do
    # shellcheck disable=SC2086
    serve "$model" "$name" "$ranks" $2 $flags || continue
    if "$bin/parplan-compare-outputs" "$dir/$model.1.out" "$dir/$name.out" \
      1e-5 >"$dir/$name.compare"; then
      sed "s/^/  $name: /" "$dir/$name.compare"
    else
      echo "FAIL: $name's outputs differ from 1 device's:"
      cat "$dir/$name.compare"
      failures=$((failures + 1))
    fi
  done
}

zoo() { "$bin/parplan-zoo" "$@" >/dev/null || { echo "FAIL: parplan-zoo $*"; exit 1; }; }
zoo mlp --dynamic-batch -o "$dir/mlp.onnx"
zoo mlp --batch 8 -o "$dir/mlp-fixed.onnx"
zoo gpt --layers 4 --hidden 64 --heads 4 --seq 16 --vocab 128 \
  --dynamic-batch -o "$dir/gpt.onnx"
zoo bert --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 --pooler \
  --dynamic-batch -o "$dir/bert.onnx"
zoo vit_b_16 --layers 2 --hidden 64 --heads 4 --classes 10 \
  --dynamic-batch -o "$dir/vit.onnx"
zoo resnet50 --classes 10 --dynamic-batch -o "$dir/resnet50.onnx"

against_one mlp.onnx --batch=8 <<'EOF'
mlp.2 2 --mesh=2
mlp.2x2 4 --mesh=2x2 --strategy=megatron
mlp.stages 4 --mesh=4 --stages=2 --micro-batches=4 --schedule=gpipe
EOF
against_one mlp-fixed.onnx '' <<'EOF'
mlp-fixed.stages 4 --mesh=4 --stages=2 --micro-batches=2
EOF
against_one gpt.onnx --batch=8 <<'EOF'
gpt.8 8 --mesh=8
gpt.tensor 8 --strategy=megatron --tensor=4 --pipeline=1
gpt.stages 8 --strategy=megatron --tensor=2 --pipeline=2 --micro-batches=4
gpt.interleaved 4 --mesh=4 --stages=2 --micro-batches=4 --schedule=interleaved
EOF
against_one bert.onnx --batch=4 <<'EOF'
bert.tensor 8 --strategy=megatron --tensor=4 --pipeline=1
bert.stages 4 --mesh=4 --stages=2 --micro-batches=2
EOF
against_one vit.onnx --batch=8 <<'EOF'
vit.tensor 8 --strategy=megatron --tensor=2 --pipeline=1
vit.stages 8 --mesh=8 --stages=4 --micro-batches=4
EOF
against_one resnet50.onnx --batch=8 <<'EOF'
resnet50.8 8 --mesh=8
EOF

# --outputs says in one line, before the first step, what it cannot do: a
# training plan has no outputs, and a file is no directory.
expect_error() {
  expected=$1
  shift
  if timeout 60 mpirun --oversubscribe -np 1 "$bin/parplan-run" "$@" \
    </dev/null >"$dir/error.log" 2>&1; then
    echo "FAIL: parplan-run $* succeeded"
    failures=$((failures + 1))
  elif ! grep -qF -- "$expected" "$dir/error.log" ||
    grep -q '^step ' "$dir/error.log"; then
    echo "FAIL: parplan-run $* did not say '$expected' before a step:"
    cat "$dir/error.log"
    failures=$((failures + 1))
  else
    echo "  refused: $expected"
  fi
}
"$bin/parplan" compile "$dir/mlp.onnx" --batch 8 --train --mesh 1 \
  -o "$dir/trained" -q >/dev/null
expect_error "has no outputs (a training plan's step returns its loss" \
  "$dir/trained/plan.pb" --steps 1 --outputs "$dir/trained.out"
touch "$dir/not-a-directory"
expect_error "--outputs: cannot create the directory '$dir/not-a-directory'" \
  "$dir/mlp.onnx.1/plan.pb" --steps 1 --outputs "$dir/not-a-directory"

if [ "$failures" -gt 0 ]; then
  echo "$failures case(s) failed"
  exit 1
fi
echo "inference-equivalence: every plan wrote the 1-device outputs"
