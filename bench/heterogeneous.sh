#!/usr/bin/env bash
# Mixed clusters (docs/pipeline.md#mixed-device-types): for each mixed
# cluster and model, the automatic plan, the uniform plan on all its
# devices (--even-shares on the default mesh: the layers cut by work
# alone, as if the devices were alike) and the best automatic plan on each one-type part of the
# cluster alone (a cluster file of that type's nodes), each compiled and
# timed by `parplan simulate`; the efficiency (the mixed plan's throughput
# over the sum of the parts' throughputs), again with the mixed plan at
# the parts' batches summed (each part trains its own batch: weak
# scaling) and at twice those batches, and the compile time of the automatic plan (median of RUNS).
# Goals (the heterogeneous-cluster issue): on whale-v100-p100 at least 1.2x
# the uniform plan and never slower than a one-type part; efficiency at
# least 0.95 on every row; the predicted step within 5% of the simulated;
# compile under 5 s for 64 mixed devices on one core.
#
#   bench/heterogeneous.sh            print the table
#   bench/heterogeneous.sh --record   also append it to
#                                     bench/results/heterogeneous.md
#
# About a minute on the development VM. Environment: PARPLAN_BUILD_DIR
# (default build), RUNS (compile runs, default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
source bench/common.sh
require parplan parplan-zoo
mode=${1:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name|zoo options|batch|clusters
models=(
  "gpt 8 layers, hidden 1024, seq 512, vocab 32000, fp32|--layers 8 --hidden 1024 --heads 16 --seq 512 --vocab 32000|64|whale-v100-p100 mixed-a100-v100 mixed-t4-a100 $work/whale-v100-p100-x2.json examples/clusters/three-types.yaml"
)


# compile_and_simulate OUT CLUSTER MODEL BATCH [OPTIONS...]: compiles, then
# sets `plan`, `predicted` and `simulated` (ms) and `difference`.
compile_and_simulate() {
  local out=$1 cluster=$2 model=$3 batch=$4
  shift 4
  "$bin/parplan" compile "$model" --train --batch "$batch" --cluster "$cluster" "$@" -o "$out" -q >"$out.txt" 2>/dev/null
  "$bin/parplan" simulate "$out/plan.pb" >"$out.sim"
  plan=$(sed -n 's/^compiled .* for \([0-9]* devices (.*)\) in .*/\1/p' "$out.txt" | sed 's/, [^,]*, auto)/)/')
  local layers
  layers=$(sed -n 's/.*on devices [0-9.]* (\([^)]*\)).*/\1/p' "$out.txt" | tr '\n' ';' | sed 's/;$//; s/;/; /g')
  [[ -n $layers ]] && plan+=": $layers"
  read -r predicted simulated difference < <(simulated_figures "$out.sim" 1000)
}

# 64 mixed devices (the compile-time goal's): whale-v100-p100's nodes
# twice over, each type's together.
"$bin/parplan" cluster show whale-v100-p100 --format json | python3 -c '
import json, sys
cluster = json.load(sys.stdin)
cluster["name"] = "whale-v100-p100-x2"
nodes = []
for kind in cluster["device_types"]:
    of = [n for n in cluster["nodes"] if n["device_type"] == kind["name"]]
    for copy in range(2):
        for n in of:
            nodes.append(dict(n, name=n["name"] + "-" + str(copy)))
names = {n["name"] for n in nodes}
cluster["nodes"] = nodes
links = []
for link in cluster.get("node_links", []):
    for copy in range(2):
        links.append(dict(link, nodes=[x + "-" + str(copy) for x in link["nodes"]]))
if links:
    cluster["node_links"] = links
json.dump(cluster, open(sys.argv[1], "w"), indent=2)
' "$work/whale-v100-p100-x2.json"

table="| model | cluster | plan | predicted | simulated | difference | uniform plan on every device (--even-shares), simulated | speed-up over uniform | one-type parts alone, simulated | efficiency | at the parts' batches summed, simulated | each part at twice its batch, summed, simulated | compile (median of $RUNS) |
|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for entry in "${models[@]}"; do
  IFS='|' read -r name zoo batch clusters <<<"$entry"
  model="$work/model.onnx"
  # shellcheck disable=SC2086
  "$bin/parplan-zoo" gpt $zoo --dynamic-batch --shape-only -o "$model" >/dev/null
  for cluster in $clusters; do
    compile_and_simulate "$work/auto" "$cluster" "$model" "$batch"
    autoPlan=$plan autoPredicted=$predicted autoSimulated=$simulated autoDifference=$difference
    # On every device (the default mesh given, which the compile keeps
    # whole), the layers cut by work alone.
    everyDevice=$("$bin/parplan" cluster show "$cluster" | sed -n 's/^mesh \([0-9x]*\) .*/\1/p')
    compile_and_simulate "$work/uniform" "$cluster" "$model" "$batch" --even-shares --mesh "$everyDevice"
    uniformPlan=$plan uniformSimulated=$simulated
    # Each device type's nodes alone; the sum of their throughputs.
    parts="" throughput=0 fastestPart="" throughputTwice=0
    for kind in $("$bin/parplan" cluster show "$cluster" --format json | python3 -c '
import json, sys
print(" ".join(t["name"] for t in json.load(sys.stdin)["device_types"]))'); do
      cluster_part "$cluster" device_type "$kind" "$work/$kind.json"
      compile_and_simulate "$work/part" "$work/$kind.json" "$model" "$batch"
      parts+="${parts:+; }$kind: $plan, $simulated ms"
      throughput=$(awk -v t="$throughput" -v s="$simulated" 'BEGIN { print t + 1 / s }')
      compile_and_simulate "$work/part-twice" "$work/$kind.json" "$model" "$((batch * 2))"
      throughputTwice=$(awk -v t="$throughputTwice" -v s="$simulated" 'BEGIN { print t + 1 / s }')
      if [[ -z $fastestPart ]] || awk -v s="$simulated" -v f="$fastestPart" 'BEGIN { exit !(s < f) }'; then
        fastestPart=$simulated
      fi
    done
    efficiency=$(awk -v t="$throughput" -v s="$autoSimulated" 'BEGIN { printf "%.2f", (1 / s) / t }')
    # The parts together train their batches at once: the mixed plan at the
    # batches' sum, against the parts' summed throughput (weak scaling;
    # at the same batch each device has fewer rows than in its part).
    partCount=$("$bin/parplan" cluster show "$cluster" --format json | python3 -c '
import json, sys
print(len(json.load(sys.stdin)["device_types"]))')
    compile_and_simulate "$work/summed" "$cluster" "$model" "$((batch * partCount))"
    summedEfficiency=$(awk -v t="$throughput" -v s="$simulated" -v n="$partCount" 'BEGIN { printf "%.2f", (n / s) / t }')
    summed="batch $((batch * partCount)): $simulated ms, efficiency $summedEfficiency"
    # Again with each part at twice its batch: the rows per device that
    # whole rows by speed need.
    compile_and_simulate "$work/summed-twice" "$cluster" "$model" "$((batch * 2 * partCount))"
    twiceEfficiency=$(awk -v t="$throughputTwice" -v s="$simulated" -v n="$partCount" 'BEGIN { printf "%.2f", (n / s) / t }')
    twice="batch $((batch * 2 * partCount)): $simulated ms, efficiency $twiceEfficiency"
    speedup=$(awk -v u="$uniformSimulated" -v s="$autoSimulated" 'BEGIN { printf "%.2fx", u / s }')
    slower=$(awk -v f="$fastestPart" -v s="$autoSimulated" 'BEGIN { if (s > f) printf " (slower than the fastest part, %.2f ms)", f }')
    time_on_one_core "$bin/parplan" compile "$model" --train --batch "$batch" --cluster "$cluster" -o "$work/timed" -q
    table+="
| $name, batch $batch | $(basename "$(basename "$cluster" .json)" .yaml) | $autoPlan | $autoPredicted ms | $autoSimulated ms | $autoDifference | $uniformPlan: $uniformSimulated ms | $speedup | $parts | $efficiency$slower | $summed | $twice | $median s |"
  done
done
echo "$table"
if [[ $mode == --record ]]; then
  record bench/results/heterogeneous.md "each plan compiled and simulated once (both deterministic); compile time of the automatic plan on one core (taskset -c 0), median of $RUNS" "$table"
fi
