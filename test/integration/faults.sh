#!/bin/bash
# Faults that lose nothing (docs/reliability.md#faults): a rank killed in
# the middle of a run, under data parallelism and under each pipeline
# schedule, with --trace or --outputs, and a disk that fills up while
# parplan-run writes its outputs or its trace. Each run ends within 30 s
# with a non-zero exit; every surviving rank says in one line that it
# stopped (mpirun stops the others when one dies); the failing write is
# one line naming the file; and what was there before (a trace from an
# earlier run) is left whole, with no partial file beside it.
# The full disk is a 64 KiB tmpfs, mounted only where the test may mount
# (root in a container that allows it); elsewhere that part is skipped.
# Usage: faults.sh BIN-DIR
set -u
bin=$1
. "$(dirname "$0")/mpi-setup.sh"
fail() { echo "FAIL: $*"; exit 1; }

"$bin/parplan-zoo" gpt --layers 2 --hidden 32 --heads 2 --seq 8 --vocab 64 \
  --dynamic-batch -o "$dir/gpt.onnx" >/dev/null || fail "parplan-zoo"
compile() { # OUT OPTIONS...
  local out=$1
  shift
  "$bin/parplan" compile "$dir/gpt.onnx" --batch 8 "$@" -o "$dir/$out" \
    >"$dir/$out.log" 2>&1 || { cat "$dir/$out.log"; fail "compile $out"; }
}
compile dp --train --mesh 2 --strategy data-parallel
for schedule in gpipe 1f1b eager-1f1b; do
  compile "pp-$schedule" --train --mesh 2x2 --stages 2 --micro-batches 2 \
    --schedule "$schedule"
done
compile inference --mesh 2x2 --stages 2

# kill_one_rank NAME PLAN RANKS VICTIM OPTIONS...: runs PLAN on RANKS ranks
# for ever, kills rank VICTIM once the first step is done, and checks the
# ending.
kill_one_rank() {
  local name=$1 plan=$2 ranks=$3 victim=$4
  shift 4
  local log=$dir/$name.log start pid rank found=
  start=$(date +%s)
  timeout 60 mpirun --oversubscribe -np "$ranks" "$bin/parplan-run" \
    "$dir/$plan/plan.pb" --backend cpu --steps 1000000000 "$@" \
    >"$log" 2>&1 </dev/null &
  local mpirun_pid=$!
  for _ in $(seq 300); do
    grep -q "^step 1:" "$log" && break
    sleep 0.1
  done
  grep -q "^step 1:" "$log" || { cat "$log"; fail "$name: no first step"; }
  for pid in $(pgrep -f "parplan-run $dir/$plan/plan.pb"); do
    rank=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
      sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    if [ "$rank" = "$victim" ]; then
      kill -9 "$pid"
      found=1
    fi
  done
  [ -n "$found" ] || fail "$name: no rank $victim to kill"
  wait "$mpirun_pid"
  local code=$? took=$(($(date +%s) - start))
  [ "$code" -ne 0 ] || { cat "$log"; fail "$name: exit 0 after a rank died"; }
  [ "$code" -ne 124 ] || { cat "$log"; fail "$name: still running after 60 s"; }
  [ "$took" -le 30 ] || fail "$name: took $took s to stop"
  for ((rank = 0; rank < ranks; ++rank)); do
    [ "$rank" = "$victim" ] && continue
    [ "$(grep -c "^parplan-run: rank $rank: stopped by signal 15 in step [0-9]* (another rank failed, or the job was stopped)$" "$log")" = 1 ] ||
      { cat "$log"; fail "$name: rank $rank did not say once that it stopped"; }
  done
  echo "ok: $name: rank $victim killed, the others stopped in $took s"
}

echo "an earlier trace" >"$dir/trace.json"
kill_one_rank data-parallel dp 2 1 --trace "$dir/trace.json"
for schedule in gpipe 1f1b eager-1f1b; do
  kill_one_rank "pipeline-$schedule" "pp-$schedule" 4 3 --trace "$dir/trace.json"
done
mkdir -p "$dir/outputs"
kill_one_rank inference inference 4 0 --outputs "$dir/outputs"
[ "$(cat "$dir/trace.json")" = "an earlier trace" ] ||
  fail "the earlier trace was overwritten by runs that never finished"
leftovers=$(find "$dir/outputs" "$dir" -maxdepth 3 -name '*.tmp*' | head -3)
[ -z "$leftovers" ] || fail "partial files left behind: $leftovers"

# A full disk: a tmpfs of 64 KiB holding an earlier trace.
full=$dir/full
mkdir -p "$full"
if ! mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
  echo "skipped: cannot mount a small tmpfs here (the full-disk part needs root and a container that allows mounts); the killed-rank part passed"
  exit 0
fi
trap 'umount "$full" 2>/dev/null; rm -rf "$dir"' EXIT
head -c 40000 /dev/zero | tr '\0' 'x' >"$full/trace.json"
cp "$full/trace.json" "$dir/earlier-trace.json"
# full_disk NAME PLAN RANKS MESSAGE OPTIONS...: runs PLAN for 3 steps
# writing onto the full disk; checks the exit, the time and the one line
# MESSAGE (an extended regular expression).
full_disk() {
  local name=$1 plan=$2 ranks=$3 message=$4 start code took
  shift 4
  start=$(date +%s)
  timeout 60 mpirun --oversubscribe -np "$ranks" "$bin/parplan-run" \
    "$dir/$plan/plan.pb" --backend cpu --steps 3 "$@" \
    >"$dir/$name.log" 2>&1 </dev/null
  code=$? took=$(($(date +%s) - start))
  [ "$code" -ne 0 ] && [ "$code" -ne 124 ] ||
    { cat "$dir/$name.log"; fail "$name: exit $code on a full disk"; }
  [ "$took" -le 30 ] || fail "$name: took $took s"
  [ "$(grep -cE "$message" "$dir/$name.log")" = 1 ] ||
    { cat "$dir/$name.log"; fail "$name: no one-line error"; }
  echo "ok: $name: a full disk stopped the run in $took s"
}
full_disk trace-on-full-disk pp-1f1b 4 \
  "^parplan-run: trace: cannot write '$full/trace.json': No space left on device$" \
  --trace "$full/trace.json"
cmp -s "$full/trace.json" "$dir/earlier-trace.json" ||
  fail "the earlier trace was lost when the disk filled up"
rm -f "$full/trace.json"
head -c 60000 /dev/zero >"$full/filler"
full_disk outputs-on-full-disk inference 4 \
  "^parplan-run: --outputs: cannot write '$full/outputs/step-[0-9]*/[^']*' \(the disk is full\?\)$" \
  --outputs "$full/outputs"
leftovers=$(find "$full" -name '*.tmp*' | head -3)
[ -z "$leftovers" ] || fail "partial files left on the full disk: $leftovers"
echo "ok: every fault ended within 30 s, nothing lost"
