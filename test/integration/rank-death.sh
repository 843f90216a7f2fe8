#!/bin/sh
# A rank that dies stops the others within a bounded time: a 2-rank
# data-parallel plan runs many steps, rank 1 is killed after a second, and
# the job must end with a non-zero status well before the 60 s timeout
# (instead of rank 0 waiting forever in its next collective).
# Usage: rank-death.sh BIN-DIR
set -u
bin=$1
. "$(dirname "$0")/mpi-setup.sh"
"$bin/parplan-zoo" mlp --sizes 32,64,10 --batch 16 -o "$dir/mlp.onnx" >/dev/null &&
  "$bin/parplan" compile "$dir/mlp.onnx" --train --mesh 2 \
    --strategy data-parallel -o "$dir/out" >/dev/null ||
  { echo "FAIL: compile"; exit 1; }
start=$(date +%s)
timeout 60 mpirun --oversubscribe -np 2 sh -c \
  'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep 1; kill -9 $$) & fi
   exec "$0" "$1" --steps 100000000' "$bin/parplan-run" "$dir/out/plan.pb" \
  >"$dir/log" 2>&1
status=$?
elapsed=$(($(date +%s) - start))
if [ "$status" = 0 ] || [ "$status" = 124 ] || [ "$elapsed" -ge 30 ]; then
  echo "FAIL: status $status after $elapsed s"
  tail -5 "$dir/log"
  exit 1
fi
echo "ok: the job stopped with status $status after $elapsed s"
