#!/usr/bin/env bash
# Replays plan files through the plan fuzz target: the MLP plans the mpirun
# test runs (written afresh, so that they follow the current format) and
# the committed regression inputs.
#   replay-plans.sh FUZZER WRITE_MLP_PLANS [REGRESSION...]
set -euo pipefail
fuzzer=$1 write_plans=$2
shift 2
plans=$(mktemp -d)
trap 'rm -rf "$plans"' EXIT
"$write_plans" "$plans"
"$fuzzer" "$plans"/*.pb "$@"
