#!/usr/bin/env bash
# What looptrace's default costs a call-heavy asyncio program (tests/runtimes/python/
# asyncio_app.py --scenario busy: small function calls inside callbacks), next to Debian's
# austin sampler at the same rate, on each CPython here with no flags: interleaved rounds of
# no tracer, `looptrace run` (python-asyncio, Python frames walked in BPF at 997 Hz) and
# `austin -i 1000` (1 ms, where austin supports the version: Debian's austin 1.0 does not
# read CPython 3.11+). Prints, from one run, the median of the program's own wall time per
# setup (its CPU time, where a probe's trap and a sample's BPF walk are charged, and its wall
# time) and the ratios to no tracer. The machines are shared: run it when they are quiet (wall
# times on a loaded machine also count the waits for a CPU).
# Usage: sudo bench/python_frames_overhead.sh [ROUNDS=5] [CALLS=1000000] [BUILD_DIR=build]
set -euo pipefail
ROUNDS=${1:-5}
CALLS=${2:-1000000}
BUILD=${3:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
APP="$HERE/../tests/runtimes/python/asyncio_app.py"
LT="$BUILD/looptrace"
PYENV=${PYENV_ROOT:-$HOME/.pyenv}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

interpreters=(/usr/bin/python3.11)
for minor in 8 10 12 13; do
  for python in "$PYENV"/versions/3."$minor".*/bin/python3."$minor"; do
    [[ -x $python ]] && interpreters+=("$python") && break
  done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# "busy N calls CPU ns cpu WALL ns wall": the program's own CPU and wall time.
times() { awk '{ print $4, $7 }'; }
column() { awk -v c="$1" '{ print $c }' | median; }

printf '%-8s %10s %10s %12s %12s %10s %10s %12s %12s\n' version plain_cpu plain_wall looptrace_cpu looptrace_wall \
  austin_cpu austin_wall lt_ratio_cpu lt_ratio_wall
for python in "${interpreters[@]}"; do
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  austin_ok=1
  for ((round = 0; round < ROUNDS; ++round)); do
    "$python" "$APP" --scenario busy --calls "$CALLS" | times >>"$out/$version.plain"
    "$LT" -q run -o "$out/report.txt" -- "$python" "$APP" --scenario busy --calls "$CALLS" | times >>"$out/$version.looptrace"
    if ((austin_ok)) && command -v austin >/dev/null; then
      austin -i 1000 -o "$out/austin.samples" "$python" "$APP" --scenario busy --calls "$CALLS" 2>"$out/austin.err" |
        times >>"$out/$version.austin" || true
      if grep -q "timed out" "$out/austin.err" || [[ ! -s $out/austin.samples ]]; then
        austin_ok=0  # this austin cannot read this CPython
        : >"$out/$version.austin"
      fi
    fi
  done
  pc=$(column 1 <"$out/$version.plain") pw=$(column 2 <"$out/$version.plain")
  lc=$(column 1 <"$out/$version.looptrace") lw=$(column 2 <"$out/$version.looptrace")
  ac=- aw=-
  if [[ -s $out/$version.austin ]]; then
    ac=$(column 1 <"$out/$version.austin") aw=$(column 2 <"$out/$version.austin")
  fi
  awk -v v="$version" -v pc="$pc" -v pw="$pw" -v lc="$lc" -v lw="$lw" -v ac="$ac" -v aw="$aw" 'BEGIN {
    ms = 1e6
    as = ac == "-" ? "unsupported" : sprintf("%.1f", ac / ms); aws = aw == "-" ? "-" : sprintf("%.1f", aw / ms)
    printf "%-8s %10.1f %10.1f %12.1f %12.1f %10s %10s %12.3f %12.3f\n", v, pc / ms, pw / ms, lc / ms, lw / ms, as, aws,
      lc / pc, lw / pw
    if (ac != "-") printf "%-8s austin/plain: cpu %.3f wall %.3f\n", v, ac / pc, aw / pw
  }'
done
