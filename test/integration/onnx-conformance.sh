#!/usr/bin/env bash
# The onnx-conformance test: fetches ONNX's backend test data, then imports
# every model in it with parplan-onnx-conformance and runs each imported one
# on its test data with the reference interpreter.
#   onnx-conformance.sh PARPLAN-ONNX-CONFORMANCE FLOOR [OPTION...]
# OPTIONs go to the program: --compute-floor N, --jobs N, --timeout SECONDS,
# --max-input-mb MB, --list-imported (see its --help).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
program=$1
floor=$2
shift 2

status=0
data=$("$here/fetch-onnx-testdata.sh") || status=$?
if ((status == 77)); then
  echo "skipped: libonnx-testdata unavailable (offline?)"
  exit 0
elif ((status != 0)); then
  echo "error: fetch-onnx-testdata.sh failed with status $status" >&2
  exit "$status"
fi
echo "data: $data"
exec "$program" --floor "$floor" "$@" "$data"
