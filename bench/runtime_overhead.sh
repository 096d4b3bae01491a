#!/usr/bin/env bash
# What tracing costs a CPython program that makes a million small function calls inside
# asyncio callbacks (tests/runtimes/python/asyncio_app.py --scenario busy). Interleaved
# rounds of: no looptrace, the built-in python-asyncio profile (callbacks through
# Context.run uprobes), a dispatch condition on the busy USDT probes (bench/profiles:
# the string condition, and an integer one that never holds as its floor), and the python
# profile's method beats (also under cProfile, where CPython 3.11 fires function__entry).
# The machines are shared: run it when they are quiet, with enough rounds for the medians.
# Prints the median of the program's own timing per setup and the ratios, from one run: the
# loop thread's CPU time (a probe's trap is charged to it), not its wall time, which on a
# shared machine also counts the time it waited for a CPU.
# Then the same for a JVM: small method calls on the event dispatch thread, plain, traced at
# looptrace's defaults with no JVM flag (jvm-edt: Java frames walked in BPF at each sample
# and switch-out), with HotSpot's method probes on, and traced with the jvm profile.
# Usage: sudo bench/runtime_overhead.sh [ROUNDS=5] [CALLS=1000000] [BUILD_DIR=build] [ONLY=all|java]
set -euo pipefail
ROUNDS=${1:-5}
CALLS=${2:-1000000}
BUILD=${3:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
APP="$HERE/../tests/runtimes/python/asyncio_app.py"
PY=/usr/bin/python3.11
LT="$BUILD/looptrace"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# name|looptrace options ("-" = none)|interpreter options
setups=(
  "plain|-|"
  "python-asyncio|--profile python-asyncio|"
  "python-asyncio-no-tracking|--profile python-asyncio --no-thread-tracking|"
  "usdt-string-condition|--profile $HERE/profiles/python-usdt-dispatch.profile|"
  "usdt-integer-floor|--profile $HERE/profiles/python-usdt-floor.profile|"
  "python-method-beats|--profile python|"
  "cprofile-plain|-|-m cProfile -o /dev/null"
  "cprofile-python-method-beats|--profile python|-m cProfile -o /dev/null"
)
ONLY=${4:-all}
for ((round = 0; round < ROUNDS; ++round)); do
  [[ $ONLY == java ]] && break
  for setup in "${setups[@]}"; do
    IFS='|' read -r name options interp <<<"$setup"
    # shellcheck disable=SC2086
    if [[ $options == - ]]; then
      $PY $interp "$APP" --scenario busy --calls "$CALLS" >>"$out/$name"
    else
      "$LT" -q run $options -o "$out/report.txt" -- $PY $interp "$APP" --scenario busy --calls "$CALLS" >>"$out/$name"
    fi
  done
done
# HotSpot: the same number of small method calls on the event dispatch thread
# (tests/runtimes/java/EdtApp.java --scenario busy, built into BUILD_DIR/tests/runtimes/java):
# plain, with -XX:+DTraceMethodProbes (HotSpot's own cost of the probe sites), and traced.
JAVA=${JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}
CLASSES="$BUILD/tests/runtimes/java"
jsetups=(
  "java-plain|-|"
  "java-method-probes-on|-|-XX:+DTraceMethodProbes"
  "java-jvm-profile|--profile jvm|-XX:+DTraceMethodProbes"
)
for ((round = 0; round < ROUNDS; ++round)); do
  for setup in "${jsetups[@]}"; do
    IFS='|' read -r name options flags <<<"$setup"
    # shellcheck disable=SC2086
    if [[ $options == - ]]; then
      "$JAVA" -Djava.awt.headless=true $flags -cp "$CLASSES" EdtApp --scenario busy --calls "$CALLS" >>"$out/$name"
    else
      "$LT" -q run $options -o "$out/report.txt" -- "$JAVA" -Djava.awt.headless=true $flags -cp "$CLASSES" EdtApp \
        --scenario busy --calls "$CALLS" >>"$out/$name"
    fi
  done
done
# The default mode (no JVM flag: jvm-edt) against plain, on a run long enough for its
# sampling to show (JAVA_LONG_CALLS, ~3 s plain): the issue's goal is on the wall time.
# Next to it, the floor of sampling stacks at looptrace's default rate (997 Hz): perf
# sampling the same program at that rate with frame-pointer call chains (no Java frames).
JAVA_LONG_CALLS=${JAVA_LONG_CALLS:-2000000000}
for ((round = 0; round < ROUNDS; ++round)); do
  "$JAVA" -Djava.awt.headless=true -cp "$CLASSES" EdtApp --scenario work --calls "$JAVA_LONG_CALLS" >>"$out/java-plain-long"
  "$LT" -q run -o "$out/report.txt" -- "$JAVA" -Djava.awt.headless=true -cp "$CLASSES" EdtApp --scenario work \
    --calls "$JAVA_LONG_CALLS" >>"$out/java-default-long"
  if command -v perf >/dev/null; then
    perf record -q -F 997 -e cpu-clock -g -o "$out/perf.data" -- "$JAVA" -Djava.awt.headless=true -cp "$CLASSES" EdtApp \
      --scenario work --calls "$JAVA_LONG_CALLS" 2>/dev/null >>"$out/java-perf-long"
  fi
done
python3 - "$out" "$CALLS" <<'PY'
import statistics, sys
out, calls = sys.argv[1], int(sys.argv[2])
def median(name, field=3):  # 3: the loop thread's CPU time; 6: its wall time
    return statistics.median(int(line.split()[field]) for line in open(f"{out}/{name}") if line.startswith("busy"))
rows = ["plain", "python-asyncio", "python-asyncio-no-tracking", "usdt-string-condition", "usdt-integer-floor", "python-method-beats",
        "cprofile-plain", "cprofile-python-method-beats"]
import os
t = {name: median(name) for name in rows} if os.path.exists(f"{out}/plain") else {}
for name in rows if t else []:
    print(f"{name:30} {t[name] / 1e6:10.1f} ms cpu  {t[name] / calls:8.1f} ns/call")
if t:
    print(f"ratio python-asyncio / plain                       {t['python-asyncio'] / t['plain']:.2f}")
    print(f"ratio python-asyncio, no thread tracking / plain   {t['python-asyncio-no-tracking'] / t['plain']:.2f}")
    print(f"ratio usdt string condition / plain                {t['usdt-string-condition'] / t['plain']:.2f}")
    print(f"ratio usdt string condition / integer floor        {t['usdt-string-condition'] / t['usdt-integer-floor']:.2f}")
    print(f"ratio python method beats / plain                  {t['python-method-beats'] / t['plain']:.2f}")
    print(f"ratio python method beats under cProfile / cProfile {t['cprofile-python-method-beats'] / t['cprofile-plain']:.2f}")
j = {name: median(name) for name in ["java-plain", "java-method-probes-on", "java-jvm-profile"]}
for name, value in j.items():
    print(f"{name:30} {value / 1e6:10.1f} ms cpu  {value / calls:8.1f} ns/call")
print(f"java plain, long run {median('java-plain-long', 6) / 1e6:10.1f} ms wall; looptrace default (jvm-edt, no JVM flag) "
      f"{median('java-default-long', 6) / 1e6:.1f} ms wall")
print(f"ratio looptrace default, no JVM flag / plain        {median('java-default-long', 6) / median('java-plain-long', 6):.3f} wall, "
      f"{median('java-default-long') / median('java-plain-long'):.3f} cpu (goal 1.03)")
if os.path.exists(f"{out}/java-perf-long"):
    print(f"ratio perf -F 997 -g (the floor of sampling) / plain {median('java-perf-long', 6) / median('java-plain-long', 6):.3f} wall, "
          f"{median('java-perf-long') / median('java-plain-long'):.3f} cpu")
print(f"ratio java -XX:+DTraceMethodProbes / plain          {j['java-method-probes-on'] / j['java-plain']:.2f}")
print(f"ratio jvm profile / -XX:+DTraceMethodProbes         {j['java-jvm-profile'] / j['java-method-probes-on']:.2f}")
print(f"ratio jvm profile / plain                           {j['java-jvm-profile'] / j['java-plain']:.2f}")
PY
