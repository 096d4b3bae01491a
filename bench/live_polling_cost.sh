#!/usr/bin/env bash
# Cost of serving a background session (issue 14): the daemon's CPU per /metrics scrape and
# per `looptrace status`, measured side by side in one run on the sample target (root):
# phase A leaves the session alone, phase B scrapes and asks for status RATE times a second;
# the difference in the daemon's CPU time, divided by the calls, is the cost per call. Both
# answers are computed on the daemon's loop, not in the target: the target pays nothing but
# the CPU the daemon takes from a shared machine. Also prints the daemon's RSS at the start
# and the end (a session's memory over time).
# Usage: bench/live_polling_cost.sh [BUILD_DIR] [SECONDS_PER_PHASE] [RATE]
set -euo pipefail
BUILD=${1:-build}
SECONDS_PER_PHASE=${2:-10}
RATE=${3:-10}
PORT=${PORT:-19464}
[[ $(id -u) -eq 0 ]] || { echo "live_polling_cost: needs root (BPF)" >&2; exit 1; }
RUN=$(mktemp -d /tmp/looptrace-bench-XXXXXX)
export LOOPTRACE_RUN_DIR=$RUN
cleanup() { "$BUILD/looptrace" detach -p "$APP" >/dev/null 2>&1 || true; kill "$APP" 2>/dev/null || true; rm -rf "$RUN"; }
# About 12 messages a second for long enough: the figures keep changing while polled.
"$BUILD/looptrace-sample-app" --scenario messages --count 100000 --start-delay-ms 300 &
APP=$!
trap cleanup EXIT
"$BUILD/looptrace" attach -q -p "$APP" --profile "$(dirname "$0")/../tests/sample_app/profiles/sample.profile" \
  --metrics "127.0.0.1:$PORT"
DAEMON=$("$BUILD/looptrace" status -p "$APP" -f json | python3 -c 'import json,sys; print(json.load(sys.stdin)["session"]["daemon_pid"])')
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
HZ=$(getconf CLK_TCK)
RSS0=$(rss_kb "$DAEMON")

a0=$(cpu_ticks "$DAEMON"); sleep "$SECONDS_PER_PHASE"; a1=$(cpu_ticks "$DAEMON")
calls=0
b0=$(cpu_ticks "$DAEMON")
end=$((SECONDS + SECONDS_PER_PHASE))
while ((SECONDS < end)); do
  python3 - "$PORT" <<'PY' >/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read()
PY
  "$BUILD/looptrace" status -p "$APP" >/dev/null
  calls=$((calls + 1))
  sleep "$(python3 -c "print(1/$RATE)")"
done
b1=$(cpu_ticks "$DAEMON")
RSS1=$(rss_kb "$DAEMON")
python3 - "$a0" "$a1" "$b0" "$b1" "$calls" "$SECONDS_PER_PHASE" "$HZ" "$RSS0" "$RSS1" <<'PY'
import sys
a0, a1, b0, b1, calls, secs, hz, rss0, rss1 = map(float, sys.argv[1:])
idle = (a1 - a0) / hz / secs           # daemon CPU s per s, left alone
polled = (b1 - b0) / hz / secs         # ... while polled
per_pair = max(0.0, (b1 - b0) - (a1 - a0)) / hz / max(calls, 1)
print(f"daemon CPU left alone: {idle * 100:.2f}% of a core; polled ({calls:.0f} scrape+status pairs in {secs:.0f} s): {polled * 100:.2f}%")
print(f"cost of one /metrics scrape + one status: {per_pair * 1e3:.2f} ms of daemon CPU")
print(f"at one pair per second: {per_pair * 100:.3f}% of a core, ratio polled/alone of the daemon's CPU {((idle + per_pair) / idle) if idle else float('nan'):.3f}")
print(f"daemon RSS: {rss0:.0f} kB at start, {rss1:.0f} kB after {2 * secs:.0f} s")
PY
