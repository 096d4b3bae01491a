#!/usr/bin/env bash
# What the stacks of a Python program cost looptrace's scheduler programs, per looptrace
# binary or option set, side by side: /usr/bin/python3.11 running bench/servers/deep_asyncio.py
# (callbacks 30 Python calls deep that sleep and spin: a switch-out stack and cpu-clock samples
# inside every message) under `looptrace run` in the default mode. Interleaved rounds; per
# setup the medians of the report's cost figures: the scheduler programs' mean run (ns), the
# session's total cost (% of one CPU), the loader's CPU, the switch-outs stacked, and the walks
# cut at the interpreter.
#   sudo bench/python_walk_cost.sh [-r ROUNDS] [-s SECONDS] SETUP...
# A SETUP is a looptrace binary, optionally with options after a colon:
#   build/looptrace  build/looptrace:--native-frames  /tmp/old/looptrace:--fp-unwind
# Root. Each run holds /tmp/looptrace-integration.lock (integration tests check that no
# looptrace probe is attached while they run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=5
seconds=4
while getopts "r:s:h" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    s) seconds=$OPTARG ;;
    *) sed -n 2,14p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -gt 0 ]] || set -- "$here/../build/looptrace"
[[ $(id -u) -eq 0 ]] || { echo "python_walk_cost: needs root" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_once() {  # SETUP INDEX: appends one line of figures to $work/INDEX
  local binary=${1%%:*} options=""
  [[ $1 == *:* ]] && options=${1#*:}
  # shellcheck disable=SC2086
  flock /tmp/looptrace-integration.lock "$binary" -q run -f json -o "$work/out.json" $options -- \
    /usr/bin/python3.11 "$here/servers/deep_asyncio.py" "$seconds" >/dev/null 2>"$work/err" || {
    echo "python_walk_cost: $1 failed: $(tail -1 "$work/err")" >&2
    return
  }
  python3 - "$work/out.json" >>"$work/$2" <<'PY'
import json, sys
stats, session = {}, {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "stats":
        stats = r["counters"]
    elif r.get("type") == "session":
        session = r
c = lambda k: stats.get(k, 0)
total = c("cost_loader_cpu_ns") + c("cost_probe_hits") * c("cost_uprobe_hit_ns") + c("cost_probe_bpf_ns") + c("cost_sched_bpf_ns")
print(c("cost_sched_bpf_ns") / max(1, c("cost_sched_runs")), 100.0 * total / max(1, session.get("duration_ns", 1)),
      100.0 * c("cost_sched_bpf_ns") / max(1, session.get("duration_ns", 1)), c("cost_loader_cpu_ns") / 1e6,
      c("cost_switch_stacks"), c("stack_walks_cut_at_interpreter"), c("cost_sched_runs"))
PY
}

for ((round = 1; round <= rounds; ++round)); do
  i=0
  for setup in "$@"; do
    run_once "$setup" "$i"
    i=$((i + 1))
  done
done

printf '%-60s %10s %10s %10s %10s %10s %10s\n' setup sched_ns total_% sched_% loader_ms stacked cut
i=0
for setup in "$@"; do
  python3 - "$work/$i" "$setup" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
m = lambda k: statistics.median(r[k] for r in rows) if rows else float("nan")
print(f"{sys.argv[2][-60:]:<60} {m(0):10.0f} {m(1):10.2f} {m(2):10.2f} {m(3):10.0f} {m(4):10.0f} {m(5):10.0f}"
      f"  ({len(rows)} runs)")
PY
  i=$((i + 1))
done
