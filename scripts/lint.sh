#!/usr/bin/env bash
# Format and lint checks (docs/coding-guidelines.md).
#   scripts/lint.sh                  the format check, then clang-tidy over the product code
#   scripts/lint.sh --format         the format check only (seconds; scripts/test.sh runs it)
#   scripts/lint.sh --tidy [FILE...] clang-tidy only: every .cc of util/, symbols/, tracers/
#                                    and loader/, or the files named
# The format check: clang-format --dry-run -Werror over every tracked C and C++ file outside
# bpf/ (kernel style, kept by hand). clang-tidy: the checks of .clang-tidy, with the build's
# compile_commands.json ($BUILD_DIR, default build; run scripts/build.sh first), LINT_JOBS
# files at a time (default 2). It takes a while: about 10-20 s a file per core.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# clang-tidy 16: clang 14 cannot compile libstdc++ 12's std::expected (it needs conditionally
# trivial destructors, P0848, which clang has since 16).
CLANG_TIDY=${CLANG_TIDY:-clang-tidy-16}
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}

format_check() {
  local files
  mapfile -d '' files < <(git ls-files -z -- '*.c' '*.cc' '*.h' '*.cpp' | grep -zv '^bpf/')
  if ! "$CLANG_FORMAT" --dry-run -Werror "${files[@]}"; then
    echo "lint: files above are not formatted: clang-format -i FILE..." >&2
    return 1
  fi
  echo "lint: ${#files[@]} files formatted" >&2
}

tidy() {
  if [[ ! -f $BUILD_DIR/compile_commands.json ]]; then
    echo "lint: $BUILD_DIR/compile_commands.json is missing: configure the build first (scripts/build.sh)" >&2
    return 1
  fi
  local files=("$@")
  if ((${#files[@]} == 0)); then
    mapfile -t files < <(git ls-files -- 'util/*.cc' 'symbols/*.cc' 'tracers/*.cc' 'loader/*.cc')
  fi
  # Our compile flags say -std=c++23, which clang 16 spells c++2b; clang 16 announces an older
  # __cpp_concepts than libstdc++'s <expected> asks for, though it has what it needs; the BPF
  # skeletons use C's _Bool, which g++ accepts in C++ and clang does not; and compiler
  # warnings are g++'s to judge (-Wall -Wextra in the build): clang alone calls the fold
  # expression of VariantIndex (tracers' event.h) an unused value.
  printf '%s\0' "${files[@]}" |
    xargs -0 -n 1 -P "${LINT_JOBS:-2}" "$CLANG_TIDY" -p "$BUILD_DIR" --quiet --extra-arg=-std=c++2b \
      --extra-arg=-U__cpp_concepts --extra-arg=-D__cpp_concepts=202002L \
      --extra-arg=-D_Bool=bool --extra-arg=-Wno-unused-value
  echo "lint: clang-tidy clean over ${#files[@]} files" >&2
}

case "${1:-}" in
  --format) format_check ;;
  --tidy)
    shift
    tidy "$@"
    ;;
  "")
    format_check
    tidy
    ;;
  *)
    echo "usage: scripts/lint.sh [--format | --tidy [FILE...]]" >&2
    exit 2
    ;;
esac
