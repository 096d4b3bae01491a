#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ (clang, ASan + UBSan) into build-fuzz/ and
# runs them. Targets, seeds and how to add one: tests/fuzz/README.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   every target (or the named ones) for SECONDS each
#                                           (default 300), one after the other
#   scripts/fuzz.sh --ci                    what CI runs (scripts/test.sh): every target for
#                                           20 s (LOOPTRACE_FUZZ_SECONDS), two at a time
#
# Both run the ctest tests of build-fuzz (label fuzz), so a long run uses the very command
# line CI uses. New corpus entries go to build-fuzz/corpus/TARGET/ (kept between runs),
# crashes to build-fuzz/artifacts/TARGET-crash-*: reproduce one with
# `build-fuzz/TARGET_fuzzer FILE`, then add it to tests/fuzz/corpus/TARGET/ and a unit test.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
CC=${FUZZ_CC:-clang-14}
CXX=${FUZZ_CXX:-clang++-14}

ci=0
if [[ ${1:-} == --ci ]]; then
  ci=1
  shift
fi
seconds=${LOOPTRACE_FUZZ_SECONDS:-20}
if ((!ci)); then
  seconds=${1:-300}
  shift || true
fi
targets=("$@")

cmake -S tests/fuzz -B "$BUILD_DIR" -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DLOOPTRACE_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"

filter=()
if ((${#targets[@]})); then
  filter=(-R "^fuzz\\.($(IFS='|'; echo "${targets[*]}"))\$")
fi
jobs=1
((ci)) && jobs=2
status=0
ctest --test-dir "$BUILD_DIR" -L fuzz --output-on-failure -j"$jobs" "${filter[@]}" || status=$?

# Per target: inputs run, new coverage found, peak memory (from ctest's log).
log=$BUILD_DIR/Testing/Temporary/LastTest.log
if [[ -f $log ]]; then
  awk '/^[0-9]+\/[0-9]+ Test: fuzz\./ { name = $3 }
       /stat::number_of_executed_units/ { runs = $2 }
       /stat::new_units_added/ { added = $2 }
       /stat::peak_rss_mb/ { printf "%-24s %10s inputs %6s new  peak rss %s MB\n", name, runs, added, $2 }' \
    "$log" >&2 || true
fi
if ((status)); then
  echo "fuzz: failures above; inputs in $BUILD_DIR/artifacts/" >&2
fi
exit $status
