#!/usr/bin/env bash
# What a session's start costs: `looptrace record -p` on a running target, from the command
# to its start line ("tracing pid ... attached in ..."), wall time and the loader's CPU then
# (user + system: the BPF verifier runs in the loader's own system calls), on
#   python  Debian's python3.11 running an asyncio program (tests/runtimes/python/
#           frames_app.py --scenario forever): profile python-asyncio, Python frames walked
#   app     the C sample app (--scenario messages) with tests/sample_app/profiles/sample.profile
# Interleaved rounds, medians; with -B, a second build (say main's) side by side in the same
# rounds, and the ratios.
#   sudo bench/attach_time.sh [-r ROUNDS] [-b BUILD_DIR] [-B BASELINE_BUILD_DIR]
# Root. Each attach holds /tmp/looptrace-integration.lock (integration tests check that no
# looptrace probe is attached while they run). Per-program verifier figures: -vv on a session.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=5
build="$here/build"
baseline=""
while getopts "r:b:B:h" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    b) build=$OPTARG ;;
    B) baseline=$OPTARG ;;
    *) sed -n 2,13p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "attach_time: needs root" >&2; exit 2; }
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

/usr/bin/python3.11 "$here/tests/runtimes/python/frames_app.py" --scenario forever --truth "$work/truth.jsonl" &
pids+=($!)
python_pid=$!
"$build/looptrace-sample-app" --scenario messages --count 100000000 >/dev/null &
pids+=($!)
app_pid=$!
sleep 2

builds=(new)
declare -A binary=([new]="$build/looptrace")
if [[ -n $baseline ]]; then
  builds=(base new)
  binary[base]="$baseline/looptrace"
fi
declare -A target_args=(
  [python]="-p $python_pid"
  [app]="-p $app_pid --profile $here/tests/sample_app/profiles/sample.profile"
)

# One attach: seconds to the start line and the loader's CPU seconds by then (from /proc).
cat >"$work/attach_once.py" <<'PY'
import os, subprocess, sys, time
ticks = os.sysconf("SC_CLK_TCK")
began = time.monotonic()
p = subprocess.Popen([sys.argv[1], "record", *sys.argv[2:], "-d", "0.3", "-o", "/dev/null"],
                     stderr=subprocess.PIPE, text=True)
wall = cpu = None
for line in p.stderr:
    if "tracing pid" in line:
        wall = time.monotonic() - began
        fields = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        break
for _ in p.stderr:
    pass
p.wait()
print(f"{wall:.3f} {cpu:.2f}" if wall is not None else "fail")
PY

for ((round = 1; round <= rounds; ++round)); do
  for target in python app; do
    for b in "${builds[@]}"; do
      # shellcheck disable=SC2086
      result=$(flock /tmp/looptrace-integration.lock python3 "$work/attach_once.py" "${binary[$b]}" ${target_args[$target]})
      [[ $result == fail ]] && { echo "attach_time: $b on $target failed" >&2; continue; }
      echo "$result" >>"$work/$target.$b"
    done
  done
done

python3 - "$work" "${builds[@]}" <<'PY'
import statistics, sys
work, builds = sys.argv[1], sys.argv[2:]
print(f"{'target':<8} {'build':<6} {'attach s':>9} {'loader CPU s':>13}")
for target in ("python", "app"):
    medians = {}
    for b in builds:
        rows = [tuple(map(float, l.split())) for l in open(f"{work}/{target}.{b}")]
        medians[b] = (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
        print(f"{target:<8} {b:<6} {medians[b][0]:9.3f} {medians[b][1]:13.2f}  ({len(rows)} rounds)")
    if "base" in medians:
        print(f"{target:<8} {'new/base':<6} {medians['new'][0] / medians['base'][0]:9.2f} "
              f"{medians['new'][1] / max(medians['base'][1], 0.01):13.2f}")
PY
