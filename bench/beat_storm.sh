#!/usr/bin/env bash
# Sustained method beats: the sample target calls an instrumented leaf at RATE beats/s
# for SECONDS; looptrace copies every 100 ms message's beats (--evil-threshold 50) and
# this script checks that every call made reached a call tree (no beat lost).
# Usage: sudo bench/beat_storm.sh [RATE=1000000] [SECONDS=30] [BUILD_DIR=build]
set -euo pipefail
RATE=${1:-1000000}
SECONDS_TOTAL=${2:-30}
BUILD=${3:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$BUILD/looptrace" -q run --profile "$(dirname "$0")/../tests/sample_app/profiles/sample.profile" \
  -f json -o "$out/report.json" --evil-threshold 50 -- \
  "$BUILD/looptrace-sample-app" --scenario method-storm --rate "$RATE" \
  --count "$((SECONDS_TOTAL * 1000))" --truth "$out/truth.jsonl"
python3 - "$out" "$RATE" "$SECONDS_TOTAL" <<'PY'
import json, sys
out, rate, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
truth = [json.loads(l) for l in open(f"{out}/truth.jsonl")]
report = [json.loads(l) for l in open(f"{out}/report.json")]
calls = {m["msg_id"]: m["method_calls"] for m in truth if m["type"] == "message" and "method_calls" in m}
made = sum(calls.values())
seen, overwritten, mismatched = 0, 0, 0
for e in (r for r in report if r["type"] == "evil_method"):
    n = sum(node["count"] for node in e["tree"][1:])
    seen += n
    overwritten += e["beats_overwritten"]
    mismatched += n != calls.get(e["msg_id"], -1)
span = sum(m["end_ns"] - m["begin_ns"] for m in truth if m["type"] == "message") / 1e9
print(f"beat storm: target {rate} beats/s for {seconds} s; achieved {2 * made / span:,.0f} beats/s "
      f"inside messages; {2 * made:,} beats made, {2 * seen:,} in call trees, "
      f"{overwritten} overwritten, {mismatched} messages with a count mismatch")
sys.exit(0 if seen == made and overwritten == 0 and mismatched == 0 else 1)
PY
