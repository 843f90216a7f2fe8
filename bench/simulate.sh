#!/usr/bin/env bash
# `parplan simulate` (docs/simulate.md):
#
#   1. the command's time and peak memory on GPT-3 175B's plan for 1,024
#      H100s (dgx-h100x128; 16 stages of 8x8, 192 micro-batches, 1F1B,
#      bf16, batch 1536), median of RUNS, with the step it simulates beside
#      the prediction. Goal (the timeline issue): under 2 s;
#   2. simulated against measured on CPU ranks: the README's GPT (2
#      layers, hidden 64) compiled for a cluster file that describes this
#      machine, run by `mpirun parplan-run --trace` (the measured step: the
#      median of the steps after the first) and simulated with one stream
#      per device (the CPU backend runs every instruction in turn). The
#      cluster file is fitted here from a first measured run: a rank's f32
#      peak from its matmuls' FLOPs over their measured time, its memory
#      bandwidth from the other kernels' bytes over theirs (the plan's own
#      figures, in the trace's args), and MPI within one host at 5 GB/s and
#      20 us. Rows for the README's 2x2 mesh (4 ranks; on a machine of
#      fewer cores they take turns, which the simulation does not know) and
#      for 1x2 (2 ranks).
#   3. simulated against measured on a GPU, where one is visible: the same
#      GPT compiled for mesh 1 on the cluster file `parplan calibrate
#      --quick --devices 1` writes, run by `parplan-run --backend cuda
#      --trace` and simulated with the GPU's two streams.
#
#   bench/simulate.sh            print the tables
#   bench/simulate.sh --record   also append them to bench/results/simulate.md
#
# Environment: RUNS (default 5), PARPLAN_BUILD_DIR (default build), KEEP
# (a directory to keep the GPU part's cluster file, summary and traces in).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require time parplan parplan-zoo parplan-run
command -v mpirun >/dev/null || { echo "bench: mpirun is missing" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }
mode=${1:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# 1. GPT-3 175B on 1,024 H100s.
"$bin/parplan-zoo" gpt --preset gpt3-175b --shape-only --dynamic-batch -o "$work/gpt3.onnx" >/dev/null
"$bin/parplan" compile "$work/gpt3.onnx" --train --batch 1536 --mixed-precision bf16 \
  --cluster dgx-h100x128 --stages 16 --micro-batches 192 --schedule 1f1b -o "$work/gpt3" >/dev/null
times=()
peaks=()
for ((i = 0; i < runs; i++)); do
  out=$( { /usr/bin/time -f "TIME %e RSS %M" "$bin/parplan" simulate "$work/gpt3/plan.pb" >"$work/gpt3.txt"; } 2>&1)
  times+=("$(echo "$out" | awk '/^TIME/ { print $2 }')")
  peaks+=("$(echo "$out" | awk '/^TIME/ { print $4 }')")
done
summarize "${times[@]}" "${peaks[@]}"
steps=$(sed -n 's/^  step *\([0-9.]* [a-z]*\) simulated; the cost model predicted \([0-9.]* [a-z]*\) (\(.*\) simulated)$/\1 | \2 | \3/p' "$work/gpt3.txt")
overlap=$(sed -n 's/.*the communication stream overlaps \([0-9.]* [a-z]*\) with compute/\1/p' "$work/gpt3.txt")
gpt3="| command | median s | min s | max s | peak RSS MB | simulated step | predicted step | difference | overlap of the two streams |
|---|---|---|---|---|---|---|---|---|
| \`parplan simulate\` GPT-3 175B, 1,024 H100s (16 stages of 8x8, 192 micro-batches, 1F1B) | $median | $low | $high | $(awk -v p="$peak" 'BEGIN { printf "%.0f", p / 1024 }') | $steps | $overlap |"

# 2. Simulated against measured on CPU ranks.
"$bin/parplan-zoo" gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 \
  --batch 8 -o "$work/gpt.onnx" >/dev/null
measure() { # MESH RANKS PLAN-DIR TRACE: the steps' times on stdout
  mpirun --oversubscribe -np "$2" "$bin/parplan-run" "$3/plan.pb" --steps "$runs" \
    --one-batch --backend cpu --trace "$4" | sed -n 's/^step [0-9]*: loss [0-9.]* (\([0-9.]*\) ms)$/\1/p'
}
cpu="| mesh | CPU ranks | measured step ms (median after the first) | simulated step ms (one stream) | simulated / measured | fitted f32 peak GFLOP/s | fitted memory GB/s |
|---|---|---|---|---|---|---|"
for shape in 2x2 1x2; do
  ranks=$(( ${shape%x*} * ${shape#*x} ))
  compile() {
    "$bin/parplan" compile "$work/gpt.onnx" --train --mesh "$shape" \
      --optimizer adam --lr 0.01 "$@" >/dev/null
  }
  compile --cluster dgx-h100 -o "$work/first-$shape"
  measure "$shape" "$ranks" "$work/first-$shape" "$work/first-$shape.json" >/dev/null
  fitted=$(python3 - "$work/first-$shape.json" "$ranks" "$work/machine-$shape.yaml" <<'EOF'
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
flops = seconds = bytes_ = memory = 0.0
for e in events:
    a = e["args"]
    if e["cat"] != "kernel":
        continue
    if a["op"] == "matmul" and a["flops"] > 0:
        flops += a["flops"]; seconds += e["dur"] * 1e-6
    elif a["flops"] <= a["bytes"]:
        bytes_ += a["bytes"]; memory += e["dur"] * 1e-6
peak = flops / seconds / 1e9
bandwidth = bytes_ / memory / 1e9
open(sys.argv[3], "w").write(f"""# This machine's CPU ranks, fitted from a measured parplan-run trace
# (bench/simulate.sh): a rank's matmul throughput and the memory
# bandwidth of its other kernels; MPI within the host assumed.
name: this-machine
device_types:
  - name: cpu-rank
    memory: 4 GB
    memory_bandwidth: {bandwidth:.4f} GB/s
    peak_flops: {{f32: {peak / 1000:.6f} TFLOP/s}}
    compute_efficiency: 1
nodes:
  - {{name: host, device_type: cpu-rank, devices: {sys.argv[2]}}}
links:
  intra_node: {{bandwidth: 5 GB/s, latency: 20 us}}
  inter_node: {{bandwidth: 5 GB/s, latency: 20 us}}
""")
print(f"{peak:.2f} {bandwidth:.2f}")
EOF
)
  read -r fittedPeak fittedBandwidth <<<"$fitted"
  compile --cluster "$work/machine-$shape.yaml" -o "$work/machine-$shape"
  measured=$(measure "$shape" "$ranks" "$work/machine-$shape" "$work/measured-$shape.json" | tail -n +2 | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  simulated=$("$bin/parplan" simulate "$work/machine-$shape/plan.pb" --streams 1 \
    --trace "$work/side-by-side-$shape.json" --merge "$work/measured-$shape.json" |
    sed -n 's/^  step *\([0-9.]*\) \([a-z]*\) simulated.*/\1 \2/p' |
    awk '{ print ($2 == "us") ? $1 / 1000 : ($2 == "s") ? $1 * 1000 : $1 }')
  cpu+=$'\n'"| $shape | $ranks | $measured | $simulated | $(awk -v s="$simulated" -v m="$measured" 'BEGIN { printf "%.2f", s / m }') | $fittedPeak | $fittedBandwidth |"
done

# 3. Simulated against measured on a GPU.
gpu=""
devices=$("$bin/parplan" calibrate --list-devices)
if [[ -n $devices && $devices != "no CUDA device"* ]]; then
  name=$(head -1 <<<"$devices" | sed -E 's/^[0-9]+: (.*), [0-9.e+]+ GB, compute capability .*$/\1/')
  "$bin/parplan" calibrate --quick --devices 1 -o "$work/gpu.yaml" >/dev/null 2>&1
  "$bin/parplan" compile "$work/gpt.onnx" --train --mesh 1 --cluster "$work/gpu.yaml" \
    --optimizer adam --lr 0.01 -o "$work/gpu" >/dev/null
  predicted=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["predicted_step_time_s"] * 1000)' "$work/gpu/summary.json")
  steps=$((runs > 10 ? runs : 10))
  measured=$("$bin/parplan-run" "$work/gpu/plan.pb" --steps "$steps" --one-batch --backend cuda \
    --trace "$work/gpu-measured.json" |
    sed -n 's/^step [0-9]*: loss [0-9.]* (\([0-9.]*\) ms)$/\1/p' | tail -n +3 | sort -g |
    awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  simulated=$("$bin/parplan" simulate "$work/gpu/plan.pb" \
    --trace "$work/gpu-side-by-side.json" --merge "$work/gpu-measured.json" |
    sed -n 's/^  step *\([0-9.]*\) \([a-z]*\) simulated.*/\1 \2/p' |
    awk '{ print ($2 == "us") ? $1 / 1000 : ($2 == "s") ? $1 * 1000 : $1 }')
  gpu="| GPU | measured step ms (median after the first two) | simulated step ms | predicted step ms | simulated / measured |
|---|---|---|---|---|
| $name | $measured | $simulated | $(awk -v p="$predicted" 'BEGIN { printf "%.3f", p }') | $(awk -v s="$simulated" -v m="$measured" 'BEGIN { printf "%.2f", s / m }') |"
  if [[ -n ${KEEP:-} ]]; then
    mkdir -p "$KEEP"
    cp "$work/gpu.yaml" "$work/gpu/summary.json" "$work/gpu-measured.json" "$work/gpu-side-by-side.json" "$KEEP/"
  fi
fi

echo "$gpt3"
echo
echo "$cpu"
[[ -z $gpu ]] || printf '\n%s\n' "$gpu"
if [[ $mode == --record ]]; then
  record bench/results/simulate.md "median of $runs runs; GPT-3 plan compiled by this commit; CPU ranks: mpirun --oversubscribe on this machine, the last of $runs steps traced${gpu:+; GPU: the README GPT on the calibrated cluster, $steps steps}" "$gpt3"$'\n\n'"$cpu${gpu:+$'\n\n'$gpu}"
fi
