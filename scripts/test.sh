#!/usr/bin/env bash
# Installs dependencies, checks the formatting, builds, and runs every test: unit + golden
# tests, then the root/BPF integration tests against the real sample target, then the fuzz
# targets. (clang-tidy is not run here: it takes long; scripts/lint.sh runs it.)
# Integration tests fail (they do not skip) without root, unless LOOPTRACE_ALLOW_SKIP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/lint.sh --format
./scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
if [[ $(id -u) -ne 0 && ${LOOPTRACE_ALLOW_SKIP:-0} != 1 ]]; then
  echo "test.sh: the integration tests need root (BPF); rerun with sudo, or set LOOPTRACE_ALLOW_SKIP=1" >&2
  exit 1
fi
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$(nproc)" "$@")
# Then every libFuzzer target for 20 s in build-fuzz/ (tests/fuzz/README.md);
# LOOPTRACE_SKIP_FUZZ=1 skips them.
if [[ ${LOOPTRACE_SKIP_FUZZ:-0} != 1 ]]; then
  ./scripts/fuzz.sh --ci
fi
