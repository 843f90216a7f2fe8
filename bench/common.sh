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
