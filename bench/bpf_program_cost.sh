#!/usr/bin/env bash
# What looptrace's probe program itself costs per hit, apart from the kernel's trap: the
# kernel's own BPF run-time statistics (kernel.bpf_stats_enabled) of `lt_uprobe_multi` while
# the bench target's dispatch function (uprobe + uretprobe, id and name arguments) runs
# millions of times. Several looptrace binaries, or settings, are measured in turn so they
# can be compared in one run:
#
#   bench/bpf_program_cost.sh [-r ROUNDS] [-b LOOPTRACE]... [-- RECORD_ARGS...]
#
#   -b  a looptrace binary (repeatable; default build/looptrace)
#   -r  rounds (default 3): every binary once per round, interleaved
#   RECORD_ARGS go to `looptrace record` (e.g. --no-thread-tracking, --dwarf-unwind)
#
# Root. The statistics add two clock reads per run of their own: compare figures of this
# script with each other, not with the peer benchmark's per-message times.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
target="$here/build/looptrace_bench_target"
binaries=()
rounds=3
while [[ $# -gt 0 ]]; do
  case $1 in
    -b) binaries+=("$2"); shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n 2,16p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bpf_program_cost: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ ${#binaries[@]} -gt 0 ]] || binaries=("$here/build/looptrace")
[[ $(id -u) -eq 0 ]] || { echo "bpf_program_cost: needs root (attaches uprobes)" >&2; exit 2; }
for tool in bpftool python3; do
  command -v "$tool" >/dev/null || { echo "bpf_program_cost: $tool not found (scripts/setup.sh installs it)" >&2; exit 2; }
done
[[ -x $target ]] || { echo "bpf_program_cost: $target not found (build first)" >&2; exit 2; }

work=$(mktemp -d)
previous_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  sysctl -qw kernel.bpf_stats_enabled="$previous_stats"
  jobs -p | xargs -r kill 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1
cat >"$work/bench.profile" <<EOF
profile bench_dispatch
probe dispatch.begin uprobe $target bench_dispatch id=arg1 name=arg2:str
probe dispatch.end uretprobe $target bench_dispatch id=ret
EOF

# run_time_ns and run_cnt of the generic probe program now.
program_stats() {
  bpftool prog show name lt_uprobe_multi -j |
    python3 -c 'import json, sys; p = json.load(sys.stdin); p = p[0] if isinstance(p, list) else p; print(p["run_time_ns"], p["run_cnt"])'
}

measure() {
  local binary=$1; shift
  rm -f "$work/in"; mkfifo "$work/in"
  "$target" --variant dispatch --count 6000000 <"$work/in" >"$work/out" &
  local target_pid=$!
  exec 3>"$work/in"
  "$binary" record -p "$target_pid" --profile "$work/bench.profile" -o "$work/report.txt" "$@" 2>"$work/err" &
  local tracer_pid=$!
  for _ in $(seq 100); do grep -q "tracing pid" "$work/err" && break; sleep 0.1; done
  grep -q "tracing pid" "$work/err" || { echo "bpf_program_cost: looptrace did not attach: $(tail -1 "$work/err")" >&2; exit 1; }
  echo go >&3
  sleep 1  # past the first hits (map entries made, caches filled)
  local first second
  first=$(program_stats)
  sleep 2
  second=$(program_stats)
  wait "$target_pid"; exec 3>&-; wait "$tracer_pid" || true
  python3 -c "a = '$first'.split(); b = '$second'.split(); n = int(b[1]) - int(a[1]); print(f'{(int(b[0]) - int(a[0])) / n:7.1f} ns per run  ({n} runs)')"
}

echo "bpf_program_cost: lt_uprobe_multi run time per probe hit (kernel.bpf_stats_enabled), $rounds rounds" >&2
for round in $(seq "$rounds"); do
  for binary in "${binaries[@]}"; do
    printf 'round %d  %-40s %s\n' "$round" "$binary" "$(measure "$binary" "$@")"
  done
done
