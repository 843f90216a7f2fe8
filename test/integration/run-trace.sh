#!/bin/sh
# parplan-run --trace writes the measured timeline of a run in the format
# and with the names parplan simulate gives (docs/simulate.md): a GPT from
# the zoo on two pipeline stages of a 2x2 mesh, 4 CPU ranks. The trace is
# valid trace-event JSON (every slice named by its op and node, with its
# figures and pass; each arrow's two ends), holds every rank, and names
# every kernel the simulation of the same plan names; parplan simulate
# --merge puts both in one file and sets each measured kernel beside its
# simulated twin. A trace that cannot be written is one line
# from rank 0 and exit 1.
# Usage: run-trace.sh BIN-DIR
set -u
bin=$1
. "$(dirname "$0")/mpi-setup.sh"
if ! command -v python3 >/dev/null 2>&1; then
  echo "skipped: python3 is not installed"
  exit 0
fi
fail() { echo "FAIL: $*"; exit 1; }

"$bin/parplan-zoo" gpt --layers 2 --hidden 32 --heads 2 --seq 8 --vocab 64 \
  --dynamic-batch -o "$dir/gpt.onnx" >/dev/null || fail "parplan-zoo"
"$bin/parplan" compile "$dir/gpt.onnx" --train --batch 8 --mesh 2x2 --stages 2 \
  --micro-batches 2 --schedule 1f1b \
  -o "$dir/plan" >"$dir/compile.log" 2>&1 || { cat "$dir/compile.log"; fail "compile"; }
timeout 120 mpirun --oversubscribe -np 4 "$bin/parplan-run" "$dir/plan/plan.pb" \
  --backend cpu --steps 2 --trace "$dir/measured.json" >"$dir/run.log" 2>&1 ||
  { cat "$dir/run.log"; fail "parplan-run --trace"; }
grep -q "^trace: $dir/measured.json ([0-9]* events of the last step, 4 devices)$" "$dir/run.log" ||
  { cat "$dir/run.log"; fail "no trace line"; }
"$bin/parplan" simulate "$dir/plan/plan.pb" --streams 1 --trace "$dir/simulated.json" \
  >"$dir/simulate.log" 2>&1 || { cat "$dir/simulate.log"; fail "simulate"; }
"$bin/parplan" simulate "$dir/plan/plan.pb" --streams 1 --trace "$dir/merged.json" \
  --merge "$dir/measured.json" >"$dir/merge.log" 2>&1 || { cat "$dir/merge.log"; fail "simulate --merge"; }
# The merge finds every simulated kernel among the measured ones (the same
# plan) and sums both by op; the kernels the devices run for the cross-mesh
# moves (which the simulator times as moves) are the ones left over.
line=$(grep "^  measured         " "$dir/merge.log")
found=$(echo "$line" | sed -n "s/^  measured         \([0-9,]*\) of the simulation's \([0-9,]*\) kernels found in .*/\1 \2/p")
[ -n "$found" ] && [ "${found% *}" = "${found#* }" ] ||
  { cat "$dir/merge.log"; fail "not every simulated kernel was found: $found"; }
echo "$line" | grep -q "on 4 devices: .* measured, .* simulated (.*); by op, the largest differences first:$" ||
  { cat "$dir/merge.log"; fail "no measured line"; }
grep -q "^                   matmul  *[0-9.]* [mu]*s measured, *[0-9.]* [mu]*s simulated (.*), [0-9]* kernels$" "$dir/merge.log" ||
  { cat "$dir/merge.log"; fail "no matmul line"; }

python3 - "$dir/measured.json" "$dir/simulated.json" "$dir/merged.json" <<'EOF' || exit 1
import json, sys

def load(path):
    with open(path) as f:
        trace = json.load(f)
    assert isinstance(trace["traceEvents"], list), path
    return trace

def check(trace, path):
    names, flows, slices = {}, {}, []
    for e in trace["traceEvents"]:
        ph = e["ph"]
        assert isinstance(e["pid"], int) and isinstance(e["name"], str), (path, e)
        if ph == "M":
            if e["name"] == "process_name":
                names[e["pid"]] = e["args"]["name"]
            continue
        assert e["ts"] >= 0, (path, e)
        if ph == "X":
            assert e["dur"] >= 0 and isinstance(e["tid"], int), (path, e)
            a = e["args"]
            for key in ("op", "node", "bytes", "flops", "pass"):
                assert key in a, (path, key, e)
            assert e["name"] == (a["op"] + " " + a["node"] if a["node"] else a["op"]), (path, e)
            assert a["pass"] in ("forward", "backward", "once per step"), (path, e)
            slices.append(e)
        elif ph in ("s", "f"):
            flows.setdefault(e["id"], []).append(ph)
        elif ph == "C":
            assert "bytes" in e["args"], (path, e)
        else:
            raise AssertionError((path, "phase", ph))
    for ends in flows.values():
        assert sorted(ends) == ["f", "s"], (path, ends)
    return names, slices, flows

measured = load(sys.argv[1])
names, slices, flows = check(measured, sys.argv[1])
assert names == {r: "device %d" % r for r in range(4)}, names
assert measured["otherData"]["source"] == "parplan-run", measured["otherData"]
assert flows, "no arrows between the stages"
for r in range(4):
    assert any(e["pid"] == r for e in slices), "no slices of device %d" % r
    assert any(e["pid"] == r and e["args"]["pass"] == "backward" for e in slices), r
simulated = load(sys.argv[2])
_, simulatedSlices, _ = check(simulated, sys.argv[2])
kernels = lambda events: {(e["pid"], e["name"]) for e in events if e["cat"] == "kernel"}
missing = kernels(simulatedSlices) - kernels(slices)
assert not missing, "kernels simulated but not measured: %s" % sorted(missing)[:5]
merged = load(sys.argv[3])
mergedNames, _, _ = check(merged, sys.argv[3])
assert sorted(mergedNames.values()) == sorted(
    ["device %d (simulated)" % r for r in range(4)] +
    ["device %d (measured)" % r for r in range(4)]), mergedNames
print("run-trace: %d measured slices, %d arrows; every simulated kernel measured"
      % (len(slices), len(flows)))
EOF

# A trace that cannot be written: one line, exit 1, said before the first
# step (a long run must not end in a lost trace); a directory likewise.
# The check leaves no file behind: no steps, no trace.
if timeout 120 mpirun --oversubscribe -np 4 "$bin/parplan-run" "$dir/plan/plan.pb" \
    --backend cpu --steps 1 --trace "$dir/missing/x.json" >"$dir/bad.log" 2>&1; then
  fail "an unwritable trace ran"
fi
[ "$(grep -c "^parplan-run: --trace: cannot write trace $dir/missing/x.json: No such file or directory$" "$dir/bad.log")" = 1 ] ||
  { cat "$dir/bad.log"; fail "expected one 'cannot write trace' line"; }
! grep -q "^step " "$dir/bad.log" || { cat "$dir/bad.log"; fail "steps ran before the trace error"; }
if timeout 120 mpirun --oversubscribe -np 4 "$bin/parplan-run" "$dir/plan/plan.pb" \
    --backend cpu --steps 1 --trace "$dir" >"$dir/bad.log" 2>&1; then
  fail "a directory as trace ran"
fi
grep -q "^parplan-run: --trace: cannot write trace $dir: Is a directory$" "$dir/bad.log" ||
  { cat "$dir/bad.log"; fail "expected 'Is a directory'"; }
timeout 120 mpirun --oversubscribe -np 4 "$bin/parplan-run" "$dir/plan/plan.pb" \
  --backend cpu --steps 0 --trace "$dir/none.json" >"$dir/none.log" 2>&1 ||
  { cat "$dir/none.log"; fail "--steps 0 --trace"; }
[ ! -e "$dir/none.json" ] || fail "the check left $dir/none.json behind"
exit 0
