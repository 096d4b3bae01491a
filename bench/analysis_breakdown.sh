#!/usr/bin/env bash
# Where user space spends its instructions per message: the decoder, the span tracker and
# pipeline, each tracer, and the report at the end. Counted by callgrind on the userspace
# bench's decode + analysis loop (dispatch records, default 997 Hz sampling session), so the
# figures do not depend on how busy the machine is; timings are bench/userspace_bench.cc's.
#
#   bench/analysis_breakdown.sh [BUILD_DIR]     (default: build)
#
# Needs valgrind (scripts/setup.sh installs it). Takes about 10 s.
set -euo pipefail

build=${1:-build}
bench="$build/looptrace_userspace_bench"
if [[ ! -x $bench ]]; then
  echo "analysis_breakdown: $bench not found (build first: cmake --build $build)" >&2
  exit 2
fi
for tool in valgrind callgrind_annotate python3; do
  command -v "$tool" >/dev/null || { echo "analysis_breakdown: $tool not found (scripts/setup.sh installs it)" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "analysis_breakdown: counting instructions under callgrind (~10 s)..." >&2
valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" --toggle-collect='*RunSession*' \
  "$bench" --benchmark_filter='^BM_DecodeAndAnalyze$' --benchmark_min_time=0.01 >"$work/bench.txt" 2>"$work/valgrind.txt" || {
  echo "analysis_breakdown: callgrind failed (see below)" >&2
  tail -5 "$work/valgrind.txt" >&2
  exit 1
}
callgrind_annotate --inclusive=yes "$work/cg.out" >"$work/inclusive.txt" 2>/dev/null

python3 - "$work/bench.txt" "$work/inclusive.txt" <<'EOF'
import re, sys

RECORDS_PER_ITERATION = 1 << 16  # bench/userspace_bench.cc: Records(1 << 16), two per message
bench, inclusive = open(sys.argv[1]).read(), open(sys.argv[2]).read()
m = re.search(r"^BM_DecodeAndAnalyze\s.*?\s(\d+)\s+items_per_second", bench, re.M)
if not m:
    sys.exit("analysis_breakdown: no BM_DecodeAndAnalyze line in the bench output")
messages = int(m.group(1)) * RECORDS_PER_ITERATION // 2

# Inclusive instruction counts by function (a function inlined into several files is listed
# once per file: the largest is the function's own).
counts = {}
total = None
for line in inclusive.splitlines():
    m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*)", line)
    if not m:
        continue
    n, where = int(m.group(1).replace(",", "")), m.group(2)
    if "PROGRAM TOTALS" in where:
        total = n
        continue
    if where.startswith("=>") or ":" not in where:
        continue
    fn = where.split(":", 1)[1].split(" [")[0]
    fn = re.sub(r"\(.*", "", fn)
    counts[fn] = max(counts.get(fn, 0), n)

def of(*names):
    return sum(counts.get(n, 0) for n in names)

tracers = ["MessagesTracer", "FrameTracer", "EvilMethodTracer", "AnrTracer", "SpanLagTracer",
           "StartupTracer", "LiveStatsTracer", "SampledTreeTracer"]
rows = []
# Decode dispatches inline (event_decoder.h): its callees are the decoder.
decoder = of("looptrace::loader::EventDecoder::Decode") or of("looptrace::loader::EventDecoder::DecodeProbe",
                                                             "looptrace::loader::EventDecoder::DecodeOther")
report = of("looptrace::Pipeline::TakeReport")
per_tracer = {t: of(*(f"looptrace::{t}::{m}" for m in ("OnSpanEnd", "OnSpanBegin", "OnEvent", "WantSlice")))
              for t in tracers}
analysis = total - decoder - report - sum(per_tracer.values())
rows.append(("decoder (raw record -> event)", decoder))
rows.append(("span tracker, pipeline fan-out, bench loop", analysis))
for t, n in per_tracer.items():
    if n:
        rows.append((f"  {t}", n))
rows.append(("report at the end (percentiles, sorting)", report))
print(f"instructions per message ({messages} messages, 2 records each):")
for name, n in rows:
    print(f"  {name:<44} {n / messages:8.0f}")
print(f"  {'total':<44} {total / messages:8.0f}   ({total / messages / 2:.0f} per record)")
EOF
