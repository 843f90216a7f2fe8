# Shared by the benchmark scripts: sourced, not run.

# The binaries (PARPLAN_BUILD_DIR, default build) and the runs each figure
# is the median of (RUNS, default 5).
bin=${PARPLAN_BUILD_DIR:-build}/bin
runs=${RUNS:-5}

# require TOOL...: stops unless each of the binaries $bin/TOOL exists, and
# /usr/bin/time (the peak-memory figures) for a TOOL named `time`.
require() {
  local tool
  for tool; do
    if [[ $tool == time ]]; then
      [[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
    else
      [[ -x $bin/$tool ]] || { echo "bench: $bin/$tool is missing; run scripts/setup.sh" >&2; exit 1; }
    fi
  done
}

# summarize TIMES... PEAKS...: sets `median`, `low`, `high` of the first
# `runs` values and `peak`, the largest of the rest.
summarize() {
  local sorted
  sorted=$(printf '%s\n' "${@:1:runs}" | sort -g)
  median=$(echo "$sorted" | awk -v n="$runs" 'NR == int((n + 1) / 2)')
  low=$(echo "$sorted" | head -1)
  high=$(echo "$sorted" | tail -1)
  peak=$(printf '%s\n' "${@:runs+1}" | sort -g | tail -1)
}

# improves STEP BEST: whether STEP (seconds) is below BEST, or BEST is
# empty (nothing yet).
improves() {
  [[ -z $2 ]] || awk -v s="$1" -v b="$2" 'BEGIN { exit !(s < b) }'
}

# record FILE DETAILS TABLE: appends the table under a dated heading with the
# commit, the machine and DETAILS.
record() {
  mkdir -p "$(dirname "$1")"
  {
    echo
    echo "## $(date -u +%Y-%m-%d) $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo
    echo "$(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $2"
    echo
    echo "$3"
  } >> "$1"
  echo "recorded in $1"
}

# simulated_figures SIM SCALE [FORMAT]: "PREDICTED SIMULATED DIFFERENCE"
# from a `parplan simulate` output SIM, the steps in seconds times SCALE
# (1000: milliseconds) printed by FORMAT (default %.2f), the difference as
# it prints it (+1.5%).
simulated_figures() {
  awk -v scale="$2" -v format="${3:-%.2f}" '
    / simulated; the cost model predicted/ {
      s = $2 * ($3 == "ms" ? 0.001 : $3 == "us" ? 1e-6 : 1) * scale
      p = $(NF-3) * ($(NF-2) == "ms" ? 0.001 : $(NF-2) == "us" ? 1e-6 : 1) * scale
      d = $(NF-1); gsub(/[(%]/, "", d)
      printf format " " format " %s%%\n", p, s, d
    }' "$1"
}

# cluster_part CLUSTER FIELD VALUE FILE: writes to FILE the cluster of
# CLUSTER's nodes whose FIELD (device_type, region) is VALUE alone, with
# the links among them.
cluster_part() {
  "$bin/parplan" cluster show "$1" --format json | python3 -c '
import json, sys
cluster = json.load(sys.stdin)
field, value = sys.argv[1], sys.argv[2]
cluster["name"] += " (" + value + " alone)"
cluster["nodes"] = [n for n in cluster["nodes"] if n.get(field, "") == value]
types = {n["device_type"] for n in cluster["nodes"]}
cluster["device_types"] = [t for t in cluster["device_types"] if t["name"] in types]
names = {n["name"] for n in cluster["nodes"]}
if "node_links" in cluster:
    cluster["node_links"] = [l for l in cluster["node_links"] if all(x in names for x in l["nodes"])]
    if not cluster["node_links"]:
        del cluster["node_links"]
regions = {n.get("region", "") for n in cluster["nodes"]}
if "region_links" in cluster:
    cluster["region_links"] = [l for l in cluster["region_links"] if all(x in regions for x in l["regions"])]
    if not cluster["region_links"]:
        del cluster["region_links"]
cluster.pop("device_links", None)
if len(regions) == 1:
    cluster["links"].pop("inter_region", None)
if len(cluster["nodes"]) == 1:
    cluster["links"].pop("inter_node", None)
json.dump(cluster, open(sys.argv[3], "w"), indent=2)
' "$2" "$3" "$4"
}

# time_on_one_core COMMAND...: runs COMMAND `runs` times on core 0 (its
# output dropped) and sets `median`, `low` and `high` of its wall seconds.
time_on_one_core() {
  local times=() start run
  for ((run = 0; run < runs; ++run)); do
    start=$(date +%s.%N)
    taskset -c 0 "$@" >/dev/null 2>&1
    times+=("$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')")
  done
  summarize "${times[@]}"
}
