#!/usr/bin/env bash
# Where user space spends its instructions per message: the decoder, the span tracker and
# pipeline, each tracer, and the report at the end. Counted by callgrind on the userspace
# bench's decode + analysis loop (dispatch records, default 997 Hz sampling session), so the
# figures do not depend on how busy the machine is; timings are bench/userspace_bench.cc's.
#
#   bench/analysis_breakdown.sh [BUILD_DIR]     (default: build)
#
# Needs valgrind (scripts/setup.sh installs it). Takes about 20 s.
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
echo "analysis_breakdown: counting instructions under callgrind (~20 s)..." >&2
# The same records through the decoder alone (BM_DecodeOnly) and through decoder + pipeline
# (BM_DecodeAndAnalyze). The decoder is inline in the record loop, so it is told apart by
# the difference, not by function.
for name in DecodeOnly DecodeAndAnalyze; do
  valgrind --tool=callgrind --callgrind-out-file="$work/$name.cg" --toggle-collect='*RunSession*' \
    "$bench" --benchmark_filter="^BM_$name\$" --benchmark_min_time=0.01 >"$work/$name.txt" 2>"$work/valgrind.txt" || {
    echo "analysis_breakdown: callgrind failed (see below)" >&2
    tail -5 "$work/valgrind.txt" >&2
    exit 1
  }
  callgrind_annotate --inclusive=yes "$work/$name.cg" >"$work/$name.inclusive" 2>/dev/null
done

python3 - "$work" <<'EOF'
import re, sys

RECORDS_PER_ITERATION = 1 << 16  # bench/userspace_bench.cc: Records(1 << 16), two per message
work = sys.argv[1]


def load(name):
    """Messages run, and inclusive instruction counts by function, of one benchmark."""
    bench = open(f"{work}/{name}.txt").read()
    m = re.search(rf"^BM_{name}\s.*?\s(\d+)\s+items_per_second", bench, re.M)
    if not m:
        sys.exit(f"analysis_breakdown: no BM_{name} line in the bench output")
    messages = int(m.group(1)) * RECORDS_PER_ITERATION // 2
    # A function inlined into several files is listed once per file: the largest is its own.
    counts, total = {}, None
    for line in open(f"{work}/{name}.inclusive").read().splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*)", line)
        if not m:
            continue
        n, where = int(m.group(1).replace(",", "")), m.group(2)
        if "PROGRAM TOTALS" in where:
            total = n
            continue
        if where.startswith("=>") or ":" not in where:
            continue
        fn = re.sub(r"\(.*", "", where.split(":", 1)[1].split(" [")[0])
        counts[fn] = max(counts.get(fn, 0), n)
    if total is None:
        sys.exit("analysis_breakdown: no program total in callgrind's output")
    return messages, counts, total


decode_messages, _, decode_total = load("DecodeOnly")
messages, counts, total = load("DecodeAndAnalyze")
per_message = total / messages
decoder = decode_total / decode_messages  # with the record loop around it


def of(*names):
    return sum(counts.get(n, 0) for n in names) / messages


tracers = ["MessagesTracer", "FrameTracer", "EvilMethodTracer", "AnrTracer", "SpanLagTracer",
           "StartupTracer", "LiveStatsTracer", "SampledTreeTracer"]  # SampleStore: inline in the pipeline
report = of("looptrace::Pipeline::TakeReport")
per_tracer = {t: of(*(f"looptrace::{t}::{m}" for m in ("OnSpanEnd", "OnSpanBegin", "OnEvent", "WantSlice")))
              for t in tracers}
rows = [("decoder and record loop (BM_DecodeOnly)", decoder),
        ("span tracker, sample store, pipeline fan-out", per_message - decoder - report - sum(per_tracer.values()))]
rows += [(f"  {t}", n) for t, n in per_tracer.items() if n >= 0.5]
rows.append(("report at the end (percentiles, sorting)", report))
print(f"instructions per message ({messages} messages, 2 records each):")
for name, n in rows:
    print(f"  {name:<44} {n:8.0f}")
print(f"  {'total':<44} {per_message:8.0f}   ({per_message / 2:.0f} per record)")
EOF
