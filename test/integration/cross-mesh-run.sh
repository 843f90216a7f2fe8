#!/bin/sh
# Cross-mesh moves executed: `parplan reshard -o` plans a tensor's move
# between two meshes of aws-p3-5node (4 devices a host) in every mode,
# and `parplan-run --check` runs it over MPI, every destination device
# comparing its block with the source's values. The meshes of the
# cross-mesh paper's n-to-m suite, (1,4)->(2,4), (2,4)->(2,4) and
# (2,4)->(3,4), with int32 tensors scaled down, and layouts of its specs
# (S0R -> RS0, S0S1 -> S1S0, RR -> S0S1). The balancing turns with the
# layout and the mode, so each mesh pair runs every mode in every
# balancing once.
# Usage: cross-mesh-run.sh BIN-DIR
set -u
bin=$1
. "$(dirname "$0")/mpi-setup.sh"

status=0
balancings="none by-bytes by-order"
for meshes in "1x4@0 2x4@4" "2x4@0 2x4@8" "2x4@0 3x4@8"; do
  set -- $meshes
  from=$1
  to=$2
  turn=0
  for layouts in "[S(0), B]|[B, S(0)]" "[S(0), S(1)]|[S(1), S(0)]" "[B, B]|[S(0), S(1)]"; do
    fromLayout=${layouts%%|*}
    toLayout=${layouts##*|}
    turn=$((turn + 1))
    shift=$turn
    for mode in send-recv send-recv+all-gather broadcast; do
      shift=$((shift + 1))
      balancing=$(echo $balancings | cut -d' ' -f$((shift % 3 + 1)))
      case="$from $fromLayout -> $to $toLayout, $mode ($balancing)"
      if ! "$bin/parplan" reshard --cluster aws-p3-5node --shape 16x8x6 \
        --dtype i32 --from "$from" --to "$to" --from-layout "$fromLayout" \
        --to-layout "$toLayout" --mode "$mode" --balancing "$balancing" \
        -o "$dir/plan" \
        >"$dir/reshard.out" 2>&1; then
        echo "FAIL: $case: parplan reshard:"
        cat "$dir/reshard.out"
        status=1
        continue
      fi
      np=$(sed -n 's/.*mpirun -np \([0-9]*\) .*/\1/p' "$dir/reshard.out")
      timeout 300 mpirun --oversubscribe -np "$np" "$bin/parplan-run" \
        "$dir/plan/plan.pb" --check --steps 1 --backend cpu \
        >"$dir/run.out" 2>&1
      code=$?
      summary=$(grep '^check: [0-9]' "$dir/run.out")
      case $summary in
        "check: 0 of "*" elements differ") ;;
        *) code=1 ;;
      esac
      if [ "$code" != 0 ]; then
        echo "FAIL: $case:"
        cat "$dir/run.out"
        status=1
      else
        echo "ok: $case ($np ranks): ${summary#check: }"
      fi
    done
  done
done

exit $status
