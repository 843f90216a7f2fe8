# Sourced by the plan tests after mpi-setup.sh ($bin, $src and $dir set):
# writes the training steps they run, an MLP and a GPT from the zoo and the
# small CNNs of Inputs/ (Adam), as $dir/{mlp,gpt,cnn,cnn-bn}.mlir, and defines
# lower_plan. Extra `parplan train-step` runs can use train_step.
"$bin/parplan-zoo" mlp --sizes 32,64,10 --batch 16 -o "$dir/mlp.onnx" >/dev/null &&
  "$bin/parplan-zoo" gpt --layers 2 --hidden 32 --heads 4 --vocab 64 --seq 16 \
    --batch 8 -o "$dir/gpt.onnx" >/dev/null || { echo "FAIL: zoo"; exit 1; }

# train_step MODEL OUT.mlir [OPTIONS...]: Adam at 0.01.
train_step() {
  model=$1 out=$2
  shift 2
  "$bin/parplan" train-step "$model" --optimizer adam --lr 0.01 "$@" \
    -o "$out" >/dev/null
}
train_step "$dir/mlp.onnx" "$dir/mlp.mlir" &&
  train_step "$dir/gpt.onnx" "$dir/gpt.mlir" &&
  train_step "$src/Inputs/small-cnn.mlir" "$dir/cnn.mlir" &&
  train_step "$src/Inputs/small-cnn-bn.mlir" "$dir/cnn-bn.mlir" ||
  { echo "FAIL: train-step"; exit 1; }

# lower_plan STEP.mlir MESH STRATEGY: lays the step out, lowers it to
# per-device programs, plans their memory (plan-memory: arena offsets, which
# the CUDA backend and --host-kernels device use) and writes the plan file;
# prints its path without
# the .pb (the plan's IR is beside it as .plan.mlir).
lower_plan() {
  out=$dir/$(basename "$1" .mlir)-$2-$3
  "$bin/parplan-opt" "$1" -attach-cluster -sbp-assign="mesh=$2 strategy=$3" -insert-boxing \
    -expand-boxing -lower-to-plan -plan-memory -o "$out.plan.mlir" &&
    "$bin/parplan-translate" --plan-to-proto "$out.plan.mlir" -o "$out.pb" ||
    { echo "FAIL: lowering $1 on $2 ($3)" >&2; return 1; }
  echo "$out"
}
