#!/bin/sh
# torchvision models train and serve as PyTorch computes them: resnet18 and
# mobilenet_v2 (10 classes, 32x32 images, batch 8, dropout 0), exported by
# torch.onnx and compiled by parplan for 1, 4 and 2x2 devices, run by
# parplan-run under mpirun on the exported weights and the same batches,
# against PyTorch's float64 figures (torch_reference.py):
# - training: 3 steps of SGD with momentum 0.9, lr 0.01: each loss to 1e-4
#   (mobilenet_v2's second to 2e-4 and third to 5e-4: docs/testing-models.md
#   says why), and every parameter's and running statistic's sum and sum of
#   squares after one step of SGD at lr 1e3 (the gradients) to 1e-3
#   (PyTorch's own float32 step is 5e-3 off);
# - inference: the logits of 2 batches to 1e-5 (parplan-compare-outputs);
# the same training checks for two recurrent classifiers exported by
# torch.onnx (a 2-layer LSTM, a bidirectional GRU, over the images' rows),
# which parplan imports unrolled;
# and the zoo's GPT, BERT (both outputs), ViT and ResNet-50, on their own
# weights, write the outputs of the same models written in PyTorch to 1e-5.
# Needs Debian's python3-torch and python3-torchvision (scripts/setup.sh
# installs them); without them prints "skipped: ...".
# Usage: torch-reference.sh BIN-DIR
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
python=
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c 'import torch, torchvision' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: PyTorch and torchvision are not installed (apt install python3-torch python3-torchvision)"
  exit 0
fi
. "$here/mpi-setup.sh"
reference="$python $here/torch_reference.py"

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The devices of mesh $1 (N or AxB).
ranks() {
  case $1 in
  *x*) echo $((${1%%x*} * ${1#*x})) ;;
  *) echo "$1" ;;
  esac
}

# Runs plan $1 on $2 ranks with the parplan-run flags after them; the
# output goes to $1.run.
run() {
  plan=$1 ranks=$2
  shift 2
  timeout 300 mpirun --oversubscribe -np "$ranks" "$bin/parplan-run" \
    "$plan/plan.pb" --backend cpu "$@" </dev/null >"$plan.run" 2>&1 ||
    { fail "parplan-run $plan on $ranks ranks:"; tail -5 "$plan.run"; return 1; }
}

# Compiles $1 into $2 with the flags after them.
compile() {
  model=$1 plan=$2
  shift 2
  "$bin/parplan" compile "$model" --cluster dgx-a100 -q -o "$plan" "$@" \
    >"$plan.compile" 2>&1 ||
    { fail "parplan compile $plan:"; tail -5 "$plan.compile"; return 1; }
}

# Compares parplan-run's log $2 with PyTorch's $1 (compare-runs.awk, the
# awk variables after them), printing the losses and the largest weight
# difference; fails with message $3.
compare() {
  want=$1 got=$2 what=$3
  shift 3
  if awk -v report=1 "$@" -f "$here/compare-runs.awk" "$want" "$got" \
    >"$got.compare"; then
    sed "s/^/  $what: /" "$got.compare"
  else
    fail "$what differs from PyTorch's:"
    cat "$got.compare"
  fi
}

# train ARCH STEP-TOLERANCES: the losses of 3 steps on each mesh to the
# tolerances, and the weights after one step of SGD at lr 1e3 on one
# device.
train() {
  arch=$1 tolerances=$2
  work=$dir/$arch-train
  $reference train "$arch" "$work" >"$work.log" 2>&1 ||
    { fail "torch_reference.py train $arch:"; tail -5 "$work.log"; return; }
  echo "$arch: PyTorch float64 $(tr '\n' ' ' <"$work/momentum.log")"
  echo "$arch: PyTorch float32 $(tr '\n' ' ' <"$work/momentum-f32.log")"
  for mesh in 1 4 2x2; do
    plan=$work/momentum-$mesh
    compile "$work/$arch.onnx" "$plan" --train --optimizer momentum \
      --lr 0.01 --mesh "$mesh" || continue
    run "$plan" "$(ranks "$mesh")" --steps 3 \
      --weights "$work/$arch.onnx" --batches "$work/batches" || continue
    compare "$work/momentum.log" "$plan.run" "$arch on mesh $mesh" \
      -v steps=3 -v weights=0 -v steptols="$tolerances"
  done
  plan=$work/sgd
  compile "$work/$arch.onnx" "$plan" --train --optimizer sgd --lr 1000 \
    --mesh 1 || return
  run "$plan" 1 --steps 1 --weights "$work/$arch.onnx" \
    --batches "$work/batches" --print-weights || return
  compare "$work/sgd.log" "$plan.run" "$arch's gradients" -v steps=1 \
    -v tol=1e-3 -v floor=1e-2
}

# serve ARCH: the logits of 2 batches on each mesh.
serve() {
  arch=$1
  work=$dir/$arch-serve
  $reference serve "$arch" "$work" >"$work.log" 2>&1 ||
    { fail "torch_reference.py serve $arch:"; tail -5 "$work.log"; return; }
  for mesh in 1 4 2x2; do
    plan=$work/serve-$mesh
    compile "$work/$arch.onnx" "$plan" --mesh "$mesh" || continue
    run "$plan" "$(ranks "$mesh")" --steps 2 \
      --weights "$work/$arch.onnx" --batches "$work/batches" \
      --outputs "$plan.out" || continue
    if "$bin/parplan-compare-outputs" "$work/expected" "$plan.out" 1e-5 \
      >"$plan.compare"; then
      sed "s/^/  $arch serving on mesh $mesh: /" "$plan.compare"
    else
      fail "$arch serving on mesh $mesh: logits differ from PyTorch's:"
      cat "$plan.compare"
    fi
  done
}

# zoo KIND HEADS ZOO-FLAGS...: a parplan-zoo model's outputs of 2 batches
# of 2 on one device (the zoo's own N-device runs are inference-
# equivalence's), against the model written in PyTorch on its weights.
zoo() {
  kind=$1 heads=$2
  shift 2
  work=$dir/zoo-$kind
  "$bin/parplan-zoo" "$kind" "$@" --dynamic-batch -o "$work.onnx" >/dev/null &&
    "$bin/parplan" import "$work.onnx" --dim batch=2 >"$work.mlir" ||
    { fail "parplan-zoo $kind $*"; return; }
  $reference zoo "$kind" "$work.onnx" "$work.mlir" "$heads" "$work" \
    >"$work.log" 2>&1 ||
    { fail "torch_reference.py zoo $kind:"; tail -5 "$work.log"; return; }
  compile "$work.onnx" "$work.plan" --batch 2 --mesh 1 || return
  run "$work.plan" 1 --steps 2 --weights "$work.onnx" \
    --batches "$work/batches" --outputs "$work.out" || return
  if "$bin/parplan-compare-outputs" "$work/expected" "$work.out" 1e-5 \
    >"$work.compare"; then
    sed "s/^/  zoo $kind: /" "$work.compare"
  else
    fail "zoo $kind: outputs differ from PyTorch's:"
    cat "$work.compare"
  fi
}

train resnet18 1e-4
train mobilenet_v2 "1e-4 2e-4 5e-4"
train lstm 1e-4
train gru 1e-4
serve resnet18
serve mobilenet_v2
zoo gpt 4 --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128
zoo bert 4 --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 --pooler
zoo vit_b_16 4 --layers 2 --hidden 64 --heads 4 --classes 10
zoo resnet50 0 --classes 10

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "torchvision and recurrent models train, torchvision models and the zoo's serve, as PyTorch computes them"
