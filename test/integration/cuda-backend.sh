#!/bin/sh
# The CUDA backend computes what the CPU backend computes. Without a GPU
# (CI): `--backend cuda` must fail in one line that says why, with exit 1,
# and `--backend auto` must run on the CPU and say so; then the GPU part is
# skipped. With GPUs: the training steps of an MLP, a GPT and a small CNN
# (float32, Adam), 1 device, run 5 steps on both backends; the CUDA losses
# and final weights must match the CPU's to 1e-4 relative, and a bf16
# mixed-precision GPT's to 2e-2. With 2 GPUs or more, the 2-device
# data-parallel and Megatron plans on CUDA (NCCL) must match the 1-device
# CPU run to 1e-4.
# Usage: cuda-backend.sh BIN-DIR SOURCE-DIR
set -u
bin=$1
src=$2
. "$(dirname "$0")/mpi-setup.sh"

. "$(dirname "$0")/training-steps.sh"
train_step "$dir/gpt.onnx" "$dir/gpt-bf16.mlir" \
  --mixed-precision bf16 || { echo "FAIL: train-step bf16"; exit 1; }
plan() { out=$(lower_plan "$@") && echo "$out.pb"; }
mlp=$(plan "$dir/mlp.mlir" 1 auto) || exit 1

# Without a usable GPU: the errors and the fallback, then skip.
"$bin/parplan-run" "$mlp" --backend cuda --steps 1 >"$dir/cuda.log" 2>&1
code=$?
if [ $code -ne 0 ]; then
  lines=$(wc -l <"$dir/cuda.log")
  if [ $code -ne 1 ] || [ "$lines" -ne 1 ] ||
     ! grep -qE '^parplan-run: --backend cuda: (no CUDA device|this build has no CUDA backend|[0-9]+ ranks on one machine share)' "$dir/cuda.log"; then
    echo "FAIL: --backend cuda without a GPU should fail in one line (exit 1), got exit $code:"
    cat "$dir/cuda.log"
    exit 1
  fi
  "$bin/parplan-run" "$mlp" --backend auto --steps 2 >"$dir/auto.log" 2>&1 &&
    grep -q '^backend: cpu (no usable GPU: ' "$dir/auto.log" &&
    [ "$(grep -c '^step' "$dir/auto.log")" -eq 2 ] ||
    { echo "FAIL: --backend auto without a GPU should run on the CPU:"; cat "$dir/auto.log"; exit 1; }
  echo "ok: without a GPU, --backend cuda says: $(cat "$dir/cuda.log")"
  echo "skipped: the GPU runs ($(sed 's/^parplan-run: --backend cuda: //' "$dir/cuda.log"))"
  exit 0
fi

# With a GPU. Runs plan $1 on $2 ranks with backend $3 into $1.$3-$2.log.
run() {
  log=${1%.pb}.$3-$2.log
  timeout 300 mpirun --oversubscribe -np "$2" "$bin/parplan-run" "$1" \
    --backend "$3" --steps 5 --print-weights >"$log" 2>&1 ||
    { echo "FAIL: $1 on $2 rank(s), $3:" >&2; cat "$log" >&2; return 1; }
  echo "$log"
}
status=0
# Compares log $2 with reference log $1 to relative tolerance $3.
same() {
  if awk -v tol="$3" -v steps=5 -f "$src/compare-runs.awk" "$1" "$2"; then
    echo "ok: $(basename "$2") matches $(basename "$1") to $3: $(grep -o 'loss [0-9.]*' "$2" | tr '\n' ' ')"
    grep '^backend' "$2"
  else
    echo "FAIL: $(basename "$2") differs from $(basename "$1") (tolerance $3):"
    paste "$1" "$2"
    status=1
  fi
}
for model in mlp gpt cnn gpt-bf16; do
  tol=1e-4
  [ $model = gpt-bf16 ] && tol=2e-2
  single=$(plan "$dir/$model.mlir" 1 auto) || exit 1
  want=$(run "$single" 1 cpu) || { status=1; continue; }
  got=$(run "$single" 1 cuda) || { status=1; continue; }
  same "$want" "$got" $tol
  [ $model = gpt-bf16 ] && continue
  for config in "2 data-parallel" "1x2 megatron"; do
    set -- $config
    multi=$(plan "$dir/$model.mlir" "$1" "$2") || exit 1
    if got=$(run "$multi" 2 cuda 2>"$dir/err"); then
      same "$want" "$got" $tol
    elif grep -q 'ranks on one machine share' "$dir/err"; then
      echo "note: $model on $1 ($2) needs 2 GPUs: $(grep -m1 'share' "$dir/err")"
    else
      cat "$dir/err"
      status=1
    fi
  done
done
# A plan larger than the GPU (compiled for a device of 4 TB): one line
# naming the bytes, exit 1, at load (before any weight is made).
cat >"$dir/big.yaml" <<'YAML'
name: big
device_types:
  - {name: g, memory: 4 TB, memory_bandwidth: 3 TB/s, peak_flops: {f32: 60 TFLOP/s}}
nodes:
  - {name: n, device_type: g, devices: 1}
YAML
"$bin/parplan-zoo" mlp --sizes 131072,131072,16 --batch 8 --shape-only -o "$dir/big.onnx" >/dev/null &&
  "$bin/parplan" compile "$dir/big.onnx" --train --mesh 1 --cluster "$dir/big.yaml" \
    --optimizer adam -o "$dir/big" >/dev/null 2>&1 ||
  { echo "FAIL: compiling the plan larger than the GPU"; exit 1; }
timeout 120 "$bin/parplan-run" "$dir/big/plan.pb" --backend cuda --steps 1 >"$dir/big.log" 2>&1
code=$?
if [ $code = 1 ] && [ "$(wc -l <"$dir/big.log")" = 1 ] &&
   grep -q 'bytes of GPU memory' "$dir/big.log"; then
  echo "ok: a plan larger than the GPU: $(cat "$dir/big.log")"
else
  echo "FAIL: a plan larger than the GPU should fail in one line (exit 1), got exit $code:"
  cat "$dir/big.log"
  status=1
fi

# The measured timeline on the GPU (--trace): valid trace-event JSON, one
# slice per instruction of the last step, and the compute stream's kernels
# one after another in program order, within the step.
gpt=$(plan "$dir/gpt.mlir" 1 auto) || exit 1
if timeout 300 "$bin/parplan-run" "$gpt" --backend cuda --steps 2 \
     --trace "$dir/cuda-trace.json" >"$dir/trace.log" 2>&1 &&
   grep -q "^trace: $dir/cuda-trace.json ([0-9]* events of the last step, 1 devices)$" "$dir/trace.log"; then
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$dir/cuda-trace.json" "$(sed -n 's/^step 2: .*(\([0-9.]*\) ms)$/\1/p' "$dir/trace.log")" <<'PY' || status=1
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
step_us = float(sys.argv[2]) * 1e3
compute = sorted((e for e in events if e["ph"] == "X" and e["tid"] == 0),
                 key=lambda e: e["ts"])
assert compute, "no kernels in the trace"
for a, b in zip(compute, compute[1:]):
    assert a["ts"] + a["dur"] <= b["ts"] + 1, ("kernels overlap on one stream", a, b)
span = compute[-1]["ts"] + compute[-1]["dur"] - compute[0]["ts"]
assert 0 < span <= step_us * 1.05, ("kernels span", span, "us of a", step_us, "us step")
print("ok: CUDA trace of %d kernels spanning %.1f us of a %.1f us step"
      % (len(compute), span, step_us))
PY
  fi
else
  echo "FAIL: parplan-run --trace on CUDA:"
  cat "$dir/trace.log"
  status=1
fi
exit $status
