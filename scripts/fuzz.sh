#!/usr/bin/env bash
# Builds the libFuzzer harnesses in tests/fuzz/ and runs each for a while. Not part of CI.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 120 s, all targets)
#
# Targets: elf_file (ElfFile + the whole Symbolizer: DWARF index, lines, inline chains,
# MiniDebugInfo), proguard_mapping, method_mapping, proc_maps.
#
# Toolchain: clang++-14 with -fsanitize=fuzzer,address,undefined. clang 14 cannot compile
# libstdc++ 12's <expected> (it needs __cpp_concepts >= 202002L), so the build puts
# tests/fuzz/compat/ first on the include path: a minimal std::expected covering what the
# project uses. The symbols and util sources are compiled into each harness (instrumented);
# libelf, libdw, liblzma and zlib are the system libraries (not instrumented).
#
# Seeds: the ELF fixtures of a normal build (build/tests/fixtures, if present) and the
# sample mappings. Corpora and crash artifacts go to build-fuzz/.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
seconds=${1:-120}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(elf_file proguard_mapping method_mapping proc_maps)
fi

CXX=${CXX:-clang++-14}
out=$root/build-fuzz
mkdir -p "$out/obj" "$out/artifacts"

flags=(-std=c++2b -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined
       -I"$root/tests/fuzz/compat" -I"$root/symbols/include" -I"$root/util/include"
       -I"$root/symbols/src" -Wno-unused-command-line-argument)
libs=(-lelf -ldw -llzma -lz -lfmt)

# The library sources, compiled once with coverage instrumentation (-fsanitize=fuzzer-no-link).
objects=()
for src in "$root"/symbols/src/*.cc "$root"/util/src/*.cc; do
  obj=$out/obj/$(basename "${src%.cc}").o
  if [[ ! -f $obj || $src -nt $obj || $root/tests/fuzz/compat/expected -nt $obj ]]; then
    echo "fuzz: compiling $(basename "$src")" >&2
    "$CXX" "${flags[@]/-fsanitize=fuzzer,address,undefined/-fsanitize=fuzzer-no-link,address,undefined}" \
      -c "$src" -o "$obj"
  fi
  objects+=("$obj")
done

seed_corpus() {
  local target=$1 corpus=$2
  mkdir -p "$corpus"
  case $target in
    elf_file)
      for f in "$root"/build/tests/fixtures/symtest_o2_fp_pie "$root"/build/tests/fixtures/symtest_o0_fp_nopie \
               "$root"/build/tests/fixtures/debug/symtest_o2_nofp_pie/symtest_o2_nofp_pie_mini \
               "$root"/build/tests/fixtures/debug/symtest_o2_nofp_pie/symtest_o2_nofp_pie_zdebug \
               "$root"/build/tests/fixtures/symtest_o2_gz_pie "$root"/build/tests/fixtures/libltfixture_stripped.so \
               "$root"/build/tests/fixtures/probe_shapes_pie; do
        [[ -f $f ]] && cp -n "$f" "$corpus/" 2>/dev/null || true
      done ;;
    proguard_mapping)
      cp -n "$root"/tests/fixtures/mappings/*.txt "$corpus/" 2>/dev/null || true ;;
    method_mapping)
      printf '1,4,sample.app.Main onCreate (Landroid.os.Bundle;)V\n1048574,1,android.os.Handler dispatchMessage (Landroid.os.Message;)V\n' \
        > "$corpus/seed.txt" ;;
    proc_maps)
      head -c 8192 /proc/self/maps > "$corpus/self_maps.txt" ;;
  esac
}

status=0
for target in "${targets[@]}"; do
  src=$root/tests/fuzz/${target}_fuzzer.cc
  bin=$out/${target}_fuzzer
  echo "fuzz: building $target" >&2
  "$CXX" "${flags[@]}" "$src" "${objects[@]}" "${libs[@]}" -o "$bin"
  corpus=$out/corpus/$target
  seed_corpus "$target" "$corpus"
  max_len=4096
  [[ $target == elf_file ]] && max_len=65536
  echo "fuzz: running $target for ${seconds}s" >&2
  if ! "$bin" "$corpus" -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=4096 \
         -timeout=20 -artifact_prefix="$out/artifacts/${target}-" -print_final_stats=1 \
         2> "$out/$target.log"; then
    echo "fuzz: $target FAILED, see $out/$target.log and $out/artifacts/" >&2
    tail -40 "$out/$target.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_runs|cov:" "$out/$target.log" | tail -2 >&2 || true
  fi
done
exit $status
