#!/usr/bin/env bash
# The main job on a bundled example: a small GPT from the model zoo is
# compiled for a 2x2 mesh with the default strategy, auto (parplan compile:
# the training step, the sharding search beside each baseline, per-device
# programs) and its plan trained for 10 steps on 4 CPU ranks (mpirun ...
# parplan-run), printing the loss per step.
#   scripts/run-example.sh [OUTPUT-DIR]   (default: build/example)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PARPLAN_BUILD_DIR:-build}/bin
out=${1:-${PARPLAN_BUILD_DIR:-build}/example}
mkdir -p "$out"

"$bin/parplan-zoo" gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 \
  --batch 8 -o "$out/gpt.onnx"
"$bin/parplan" compile "$out/gpt.onnx" --train --mesh 2x2 \
  --optimizer adam --lr 0.01 -o "$out"

# Open MPI refuses root unless told (containers often run as root).
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun --oversubscribe -np 4 "$bin/parplan-run" "$out/plan.pb" --steps 10 \
  --one-batch
