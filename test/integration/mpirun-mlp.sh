#!/bin/sh
# parplan-run under mpirun: the MLP training plan data parallel on 2 and 3
# ranks must report the losses of the same plan on 1 rank (to 1e-6
# relative), and bad invocations must fail with one line on rank 0. The CPU
# backend throughout: on a machine with one GPU, --backend auto would run 1
# rank on it and 2 on the CPU, which agree to rounding, not to 1e-6.
# Usage: mpirun-mlp.sh PARPLAN-RUN PARPLAN-WRITE-MLP-PLANS
set -u
run=$1
write=$2
. "$(dirname "$0")/mpi-setup.sh"
"$write" "$dir" || { echo "FAIL: could not write the plans"; exit 1; }

mpi() {
  np=$1
  shift
  timeout 120 mpirun --oversubscribe -np "$np" "$run" --backend cpu "$@"
}

status=0
mpi 1 "$dir/mlp-1.pb" --steps 5 >"$dir/out-1" 2>&1 ||
  { echo "FAIL: 1 rank:"; cat "$dir/out-1"; exit 1; }
cat "$dir/out-1"
for np in 2 3; do
  if ! mpi "$np" "$dir/mlp-$np.pb" --steps 5 >"$dir/out-$np" 2>&1; then
    echo "FAIL: $np ranks:"
    cat "$dir/out-$np"
    status=1
    continue
  fi
  if ! awk -v np="$np" '
      FNR == NR && /^step/ { want[$2] = $4; next }
      /^step/ { n++; got = $4; w = want[$2]
                d = got - w; if (d < 0) d = -d
                if (w == "" || d > 1e-6 * (w < 0 ? -w : w) + 1e-12) {
                  print "FAIL: " np " ranks, " $0 " but 1 rank: loss " w; bad = 1 } }
      END { if (n != 5) { print "FAIL: " np " ranks printed " n " steps"; bad = 1 }
            exit bad }' "$dir/out-1" "$dir/out-$np"; then
    cat "$dir/out-$np"
    status=1
  fi
done

# Runs must be reproducible bit for bit (reductions in rank order).
mpi 2 "$dir/mlp-2.pb" --steps 5 >"$dir/again-2" 2>&1
if [ "$(grep -o 'loss [0-9.]*' "$dir/out-2")" != "$(grep -o 'loss [0-9.]*' "$dir/again-2")" ]; then
  echo "FAIL: two runs on 2 ranks differ"
  status=1
fi

# A world of the wrong size: one line from rank 0, non-zero exit.
if mpi 3 "$dir/mlp-2.pb" >"$dir/wrong" 2>&1; then
  echo "FAIL: a 2-device plan ran on 3 ranks"
  status=1
fi
if [ "$(grep -c 'is for 2 devices but runs on 3 rank(s); run it with mpirun -np 2' "$dir/wrong")" != 1 ]; then
  echo "FAIL: expected one error line for the wrong world size, got:"
  cat "$dir/wrong"
  status=1
fi
# Not a plan file.
echo "not a plan" >"$dir/garbage.pb"
if mpi 2 "$dir/garbage.pb" >"$dir/garbage" 2>&1 ||
    [ "$(grep -c 'is not a plan file' "$dir/garbage")" != 1 ]; then
  echo "FAIL: expected one 'not a plan file' error, got:"
  cat "$dir/garbage"
  status=1
fi
# A rank alone that fails part-way (weights that are not the plan's model)
# says so in one line and exits 1, without Open MPI's abort notice.
timeout 60 "$run" "$dir/mlp-1.pb" --backend cpu --weights "$dir/garbage.pb" >"$dir/alone" 2>&1
code=$?
if [ $code != 1 ] || [ "$(wc -l <"$dir/alone")" != 1 ] ||
    ! grep -q "^parplan-run: rank 0: parameter 'w1'" "$dir/alone"; then
  echo "FAIL: expected one error line and exit 1 from a lone rank, got exit $code:"
  cat "$dir/alone"
  status=1
fi
[ "$status" = 0 ] && echo "mpirun: 2 and 3 ranks match 1 rank"
exit "$status"
