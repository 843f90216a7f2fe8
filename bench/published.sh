#!/usr/bin/env bash
# The cost model against published multi-node GPU runs (docs/cost-model.md,
# the cost-model issue): each configuration compiled as published (the
# model, the GPUs, `--strategy megatron --tensor T --pipeline P`, one
# sequence per micro-batch, full recomputation, mixed precision) on a
# cluster of the published hardware, its predicted step beside the
# published one. Goal: predicted throughput within 15% of the published.
#
# Sources (each row names its own):
#   [N21] "Efficient Large-Scale Language Model Training
#         on GPU Clusters Using Megatron-LM", SC 2021, Table 1: GPT models of
#         1.7B to 1T parameters on DGX A100 80GB nodes (Selene: NVSwitch,
#         8 x 200 Gb/s HDR InfiniBand per node), achieved teraFLOP/s per GPU.
#         The published step is the paper's FLOPs per iteration (its
#         equation 3, which counts the recomputed forward) over that rate
#         and the GPUs.
#   [S22] "Using DeepSpeed and Megatron to Train
#         Megatron-Turing NLG 530B", arXiv:2201.11990, 2022: the 530B model
#         (vocabulary 50,272) on 280, 350 and 420 DGX A100 nodes, tensor 8 x
#         pipeline 35, batch 1920: iteration times 60.1, 50.2 and 44.4 s.
#
# Cluster: dgx-a100xN (the dgx-a100 preset, docs/cluster.md). Precision:
# fp16 mixed precision (the A100's fp16 and bf16 peaks are the same), the
# gradients summed over the micro-batches and all-reduced in fp16
# (--gradient-sums low), as Megatron-LM did by default before
# --accumulate-allreduce-grads-in-fp32 and as DeepSpeed's pipeline engine
# does.
# Schedule: 1F1B (--schedule, the default for stages).
#
#   bench/published.sh            print the table
#   bench/published.sh --record   also append it to bench/results/published.md
#
# Auto against the published configurations (the issue's goal that the
# automatic compile fits wherever a published configuration fits and
# predicts a step at most as long): each [N21] model also
# compiled with parplan's defaults (`--strategy auto`, stages, micro-batches
# and recomputation its own) at the same batch, precision and GPUs, to a
# plan (memory planned; its summary's predicted step), with the memory the
# search estimated per device beside what memory planning laid out on the
# fullest device (its arena and the other micro-batches' activations its
# schedule holds in flight): goal within 10%. AUTO=0 leaves it out.
#
# Environment: ROWS (a regular expression on the model column: the rows to
# compile), AUTO (default 1), PARPLAN_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
require parplan parplan-zoo
mode=${1:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=${ROWS:-.}

# source|preset|layers|hidden|vocabulary|GPUs|tensor|pipeline|batch|published TFLOP/s per GPU|published step s
# (sequences of 2048 tokens; the presets' shapes, docs/zoo.md)
configs=(
  "N21|megatron-1.7b|24|2304|51200|32|1|1|512|137|"
  "N21|megatron-3.6b|30|3072|51200|64|2|1|512|138|"
  "N21|megatron-7.5b|36|4096|51200|128|4|1|512|142|"
  "N21|megatron-18b|40|6144|51200|256|8|1|1024|135|"
  "N21|megatron-39b|48|8192|51200|512|8|2|1536|138|"
  "N21|megatron-76b|60|10240|51200|1024|8|4|1792|140|"
  "N21|megatron-145b|80|12288|51200|1536|8|8|2304|148|"
  "N21|megatron-310b|96|16384|51200|1920|8|16|2160|155|"
  "N21|megatron-530b|105|20480|51200|2520|8|35|2520|163|"
  "N21|megatron-1t|128|25600|51200|3072|8|64|3072|163|"
  "S22|megatron-530b|105|20480|50272|2240|8|35|1920|126|60.1"
  "S22|megatron-530b|105|20480|50272|2800|8|35|1920|121|50.2"
  "S22|megatron-530b|105|20480|50272|3360|8|35|1920|113|44.4"
)
seq=2048

# The FLOPs of one iteration by [N21]'s equation 3 (with recomputation):
# 96 B s l h^2 (1 + s / 6h + V / 16 l h).
flops() { # BATCH LAYERS HIDDEN VOCAB
  awk -v b="$1" -v s="$seq" -v l="$2" -v h="$3" -v v="$4" \
    'BEGIN { printf "%.6e", 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)) }'
}
fmt() { awk -v x="$1" -v f="$2" 'BEGIN { printf f, x }'; }

table="| source | model | GPUs | tensor x pipeline x data | micro-batches | published step | predicted step | published TFLOP/s per GPU | predicted TFLOP/s per GPU | predicted / published |
|---|---|---|---|---|---|---|---|---|---|"
worst=0
autotable="" autolonger="" worstMemory=0
for config in "${configs[@]}"; do
  IFS='|' read -r source preset layers hidden vocab gpus tensor pipeline batch tflops published <<<"$config"
  [[ $preset =~ $rows ]] || continue
  model="$work/$preset-$vocab.onnx"
  [[ -f $model ]] ||
    "$bin/parplan-zoo" gpt --preset "$preset" --vocab "$vocab" --dynamic-batch --shape-only -o "$model" >/dev/null
  data=$((gpus / tensor / pipeline))
  micro=$((batch / data))
  work_flops=$(flops "$batch" "$layers" "$hidden" "$vocab")
  # The published step: given, or the FLOPs over the published rate.
  [[ -n $published ]] ||
    published=$(awk -v f="$work_flops" -v t="$tflops" -v n="$gpus" 'BEGIN { printf "%.2f", f / (t * 1e12 * n) }')
  "$bin/parplan" compile "$model" --train --batch "$batch" --mixed-precision fp16 --gradient-sums low \
    --recompute full --cluster "dgx-a100x$((gpus / 8))" --strategy megatron \
    --tensor "$tensor" --pipeline "$pipeline" --micro-batches "$micro" \
    --emit sbp >"$work/laid-out.mlir" 2>"$work/compile.err" || true
  step=$(sed -n 's/.*sbp.plan = #sbp.layout_plan<.* step_time = \([0-9.eE+-]*\),.*/\1/p' "$work/laid-out.mlir" | head -1)
  if [[ -z $step ]]; then
    table+="
| $source | $preset | $gpus | $tensor x $pipeline x $data | $micro | $published s | no plan: $(grep -m1 "error" "$work/compile.err" || head -1 "$work/compile.err") | $tflops | | |"
    continue
  fi
  predicted=$(awk -v f="$work_flops" -v s="$step" -v n="$gpus" 'BEGIN { printf "%.1f", f / (s * 1e12 * n) }')
  ratio=$(awk -v p="$published" -v s="$step" 'BEGIN { printf "%.2f", p / s }')
  # Per source: MT-NLG's rows time the same work as Megatron-LM's on the
  # same machines 20 to 28% slower (docs/cost-model.md#against-published-runs).
  if [[ $source == N21 ]]; then
    worst=$(awk -v w="$worst" -v r="$ratio" 'BEGIN { d = r > 1 ? r - 1 : 1 - r; print (d > w ? d : w) }')
  else
    worstOther=$(awk -v w="${worstOther:-0}" -v r="$ratio" 'BEGIN { d = r > 1 ? r - 1 : 1 - r; print (d > w ? d : w) }')
  fi
  table+="
| $source | $preset$([[ $vocab != 51200 ]] && echo ", vocabulary $vocab") | $gpus | $tensor x $pipeline x $data | $micro | $published s | $(fmt "$step" "%.2f") s | $tflops | $predicted | $ratio |"
  [[ $source == N21 && ${AUTO:-1} == 1 ]] || continue
  auto="$work/$preset-auto"
  if "$bin/parplan" compile "$model" --train --batch "$batch" --mixed-precision fp16 \
       --gradient-sums low --cluster "dgx-a100x$((gpus / 8))" -o "$auto" -q \
       >"$work/auto.out" 2>"$work/auto.err"; then
    read -r autostep estimated planned memoryDifference plan < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
stages = s.get("stages") or []
mesh = s.get("mesh")
shape = "x".join(str(d) for d in mesh) if isinstance(mesh, list) else str(mesh)
where = f"{len(stages)} stages" if len(stages) > 1 else f"mesh {shape}"
step, micro, recompute = s["predicted_step_time_s"], s["micro_batches"], s.get("recompute", "none")
plural = "" if micro == 1 else "es"
estimated = s["estimated_memory_bytes_per_device"]
planned = max(p["peak_memory_bytes"] + p.get("in_flight_activation_bytes", 0) for p in s["programs"])
print(f"{step:.6g} {estimated / 1e9:.2f} {planned / 1e9:.2f} {100 * (planned / estimated - 1):+.1f}%",
      f"{where}, {micro} micro-batch{plural}, recompute {recompute}")
' "$auto/summary.json")
    versus=$(awk -v a="$autostep" -v s="$step" 'BEGIN { printf "%+.1f%%", 100 * (a / s - 1) }')
    autotable+="
| $preset | $gpus | $(fmt "$step" "%.2f") s | $plan | $(fmt "$autostep" "%.2f") s | $versus | $estimated GB | $planned GB | $memoryDifference |"
    worstMemory=$(awk -v w="$worstMemory" -v d="${memoryDifference%\%}" 'BEGIN { d = d < 0 ? -d : d; print (d > w ? d : w) }')
    if awk -v a="$autostep" -v s="$step" 'BEGIN { exit !(a > s * 1.0005) }'; then
      autolonger+=" $preset"
    fi
  else
    autotable+="
| $preset | $gpus | $(fmt "$step" "%.2f") s | no plan: $(grep -m1 "error" "$work/auto.err" || head -1 "$work/auto.err") | | | | | |"
    autolonger+=" $preset"
  fi
done
echo "$table"
misses="largest miss: $(awk -v w="$worst" 'BEGIN { printf "%.0f%%", 100 * w }') of the published throughput on Megatron-LM's rows (N21; goal: 15%)"
[[ -z ${worstOther:-} ]] ||
  misses+="; $(awk -v w="$worstOther" 'BEGIN { printf "%.0f%%", 100 * w }') on MT-NLG's (S22), whose DeepSpeed pipeline took 20 to 28% longer than Megatron-LM for the same micro-batch on the same machines (docs/cost-model.md#against-published-runs)"
echo "$misses"
autoverdict=""
if [[ -n $autotable ]]; then
  autotable="| model | GPUs | published configuration, predicted | auto plan | auto, predicted | auto against the configuration | auto, memory estimated | planned (arena + other micro-batches in flight) | difference |
|---|---|---|---|---|---|---|---|---|$autotable"
  autoverdict="auto at most the published configuration: ${autolonger:+not on}${autolonger:-every model}; largest memory difference ${worstMemory}% (goal: 10%)"
  echo
  echo "$autotable"
  echo "$autoverdict"
fi
if [[ $mode == --record ]]; then
  record bench/results/published.md "predicted by \`parplan compile --emit sbp\` (sbp.plan's step_time); auto by \`parplan compile\` (summary.json's predicted_step_time_s)" "$table

${misses^}.${autotable:+

$autotable

$autoverdict.}"
fi
