#!/usr/bin/env bash
# Soak test (root, not in CI): the sample target's `storm` scenario makes RATE short
# messages per second, each with two method beats, for MINUTES under `looptrace run -f json
# -o`. Prints looptrace's RSS (VmRSS, and without the BPF rings' mappings: its own memory)
# every 10 s, then checks that every message is accounted for: made by the target (its truth
# file) == reported (completed + unfinished) + messages lost to counted losses, and that RSS
# is flat and its own memory under 100 MB. Prints PASS/FAIL with the figures.
# Usage: sudo scripts/soak.sh [MINUTES=10] [RATE=100000]     (BUILD_DIR=build by default)
# Holds /tmp/looptrace-integration.lock for the whole run: other BPF tests wait.
set -euo pipefail
MINUTES=${1:-10}
RATE=${2:-100000}
BUILD=${BUILD_DIR:-build}
LOCK=/tmp/looptrace-integration.lock
if [[ -z "${LOOPTRACE_SOAK_LOCKED:-}" ]]; then
  echo "soak: waiting for $LOCK" >&2
  LOOPTRACE_SOAK_LOCKED=1 exec flock "$LOCK" "$0" "$@"
fi
[[ $(id -u) == 0 ]] || { echo "soak: needs root (BPF)" >&2; exit 2; }
for f in "$BUILD/looptrace" "$BUILD/looptrace-sample-app"; do
  [[ -x $f ]] || { echo "soak: $f missing (build first)" >&2; exit 2; }
done
ms=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60000 }')
out=$(mktemp -d /tmp/looptrace-soak.XXXXXX)
# LOOPTRACE_SOAK_KEEP=1 keeps the report, truth and stderr (the directory is printed).
if [[ -n ${LOOPTRACE_SOAK_KEEP:-} ]]; then echo "soak: keeping $out"; else trap 'rm -rf "$out"' EXIT; fi

"$BUILD/looptrace" -q run --profile "$(dirname "$0")/../tests/sample_app/profiles/sample.profile" \
  -f json -o "$out/report.json" -- \
  "$BUILD/looptrace-sample-app" --scenario storm --rate "$RATE" --count "$ms" \
  --truth "$out/truth.jsonl" 2>"$out/stderr" &
lt=$!
echo "soak: $MINUTES min at $RATE messages/s requested; looptrace pid $lt; RSS every 10 s"
start=$(date +%s.%N)
rss_series=()
own_series=()
sample() {
  local kb rings
  kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$lt/status" 2>/dev/null || true)
  [[ -n $kb ]] || return 0
  # The BPF rings mapped into looptrace (kernel memory, sized by --beat-buffer, --record-ring,
  # --ringbuf-size, --sample-ring; a ring buffer's data is mapped twice, so counted twice).
  rings=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { bpf = ($NF == "anon_inode:bpf-map") } /^Rss:/ && bpf { s += $2 } END { print s + 0 }' \
    "/proc/$lt/smaps" 2>/dev/null || echo 0)
  rss_series+=("$kb")
  own_series+=("$((kb - rings))")
  printf '  t=%5.0fs  looptrace RSS %7.1f MB (BPF rings %5.1f MB, own %6.1f MB)\n' \
    "$(echo "$(date +%s.%N) - $start" | bc)" "$(echo "$kb / 1024" | bc -l)" "$(echo "$rings / 1024" | bc -l)" \
    "$(echo "($kb - $rings) / 1024" | bc -l)"
}
sleep 1; sample
while kill -0 "$lt" 2>/dev/null; do
  for _ in $(seq 100); do kill -0 "$lt" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$lt" 2>/dev/null && sample
done
set +e; wait "$lt"; status=$?; set -e
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
[[ -s $out/stderr ]] && sed 's/^/  looptrace stderr: /' "$out/stderr" | head -20
printf '%s\n' "${rss_series[@]}" > "$out/rss"
printf '%s\n' "${own_series[@]}" > "$out/own"
python3 - "$out" "$status" "$RATE" "$elapsed" <<'PY'
import json, sys
out, status, rate, elapsed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rss = [int(l) / 1024 for l in open(f"{out}/rss") if l.strip()]
own = [int(l) / 1024 for l in open(f"{out}/own") if l.strip()]
truth = [json.loads(l) for l in open(f"{out}/truth.jsonl")]
made = sum(t["messages"] for t in truth if t["type"] == "message_count")
storm = next((t for t in truth if t["type"] == "storm"), {})
completed = unfinished = 0
counters = {}
for line in open(f"{out}/report.json"):
    r = json.loads(line)
    if r["type"] == "message_summary": completed += r["count"]
    elif r["type"] == "unfinished_message": unfinished += 1
    elif r["type"] == "stats": counters = r["counters"]
c = lambda k: counters.get(k, 0) if not isinstance(counters.get(k), dict) else counters[k].get("value", 0)
# Losses that can cost a message: records dropped or overwritten in BPF (a begin or an end).
lost_records = c("records_full") + c("records_overwritten") + c("ringbuf_full") + c("malformed_records")
reported = completed + unfinished
missing = made - reported
achieved = made / (storm.get("duration_ns", 0) / 1e9) if storm.get("duration_ns") else 0
print(f"looptrace exit status {status}; wall time {elapsed:.0f} s")
print(f"target: {made:,} messages made ({storm.get('method_calls', 0) * 2:,} method beats) in "
      f"{storm.get('duration_ns', 0) / 1e9:.1f} s: {achieved:,.0f} messages/s achieved (asked {rate:,})")
print(f"report: {completed:,} completed + {unfinished} unfinished = {reported:,}; "
      f"lost records counted {lost_records:,}; "
      f"unmatched_dispatch_end {c('unmatched_dispatch_end')}, method_beats_overwritten {c('method_beats_overwritten')}")
# Messages missing from the report: the end lost (closed by the next message, counted), the
# begin lost (its end unmatched, counted) or both (inside the counted lost records).
end_lost = c("message_end_lost") + c("message_nesting_capped")
begin_lost = c("unmatched_dispatch_end")
print(f"missing {missing:,} = end lost {end_lost:,} (message_end_lost + message_nesting_capped) + "
      f"begin lost {begin_lost:,} (unmatched_dispatch_end) + both lost {missing - end_lost - begin_lost:,}")
if rss:
    half = rss[len(rss) // 2:]
    print(f"looptrace RSS: {len(rss)} samples, first {rss[0]:.1f} MB, max {max(rss):.1f} MB, "
          f"last {rss[-1]:.1f} MB; second half min {min(half):.1f} / max {max(half):.1f} MB")
    print(f"looptrace's own memory (RSS without the BPF rings' mappings): first {own[0]:.1f} MB, "
          f"max {max(own):.1f} MB, last {own[-1]:.1f} MB")
ok = status == 0 and made > 0 and (missing == 0 or 0 <= missing <= lost_records) and \
    end_lost + begin_lost <= missing
# Flat: the second half of the run varies by less than 10% (+5 MB); bounded: looptrace's own
# memory stays under 100 MB (the rings add what their flags ask for, 63 MB at the defaults).
flat = not rss or (max(rss[len(rss) // 2:]) - min(rss[len(rss) // 2:])) < 0.1 * max(rss) + 5
bounded = not own or max(own) < 100
print(f"accounting: made {made:,} == reported {reported:,} + lost {missing:,} (counted losses {lost_records:,}): "
      f"{'ok' if ok else 'MISMATCH'}; RSS flat: {'ok' if flat else 'NO'}; "
      f"own memory under 100 MB: {'ok' if bounded else 'NO'} (RSS with the rings max {max(rss) if rss else 0:.1f} MB)")
flat = flat and bounded
print("PASS" if ok and flat else "FAIL")
sys.exit(0 if ok and flat else 1)
PY
