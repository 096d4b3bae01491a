#!/usr/bin/env bash
# Installs every build and test dependency from Debian packages (bookworm).
# Idempotent: skips apt when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  clang llvm                 # clang -target bpf for the BPF objects
  clang-14 libclang-rt-14-dev  # libFuzzer + ASan/UBSan runtimes for the fuzz build (build-fuzz)
  clang-format               # the format check (scripts/lint.sh --format; 14, as .clang-format was applied with)
  clang-tidy-16              # scripts/lint.sh: clang 14 cannot parse libstdc++ 12's std::expected
  libbpf-dev bpftool         # libbpf 1.1.2 + skeleton generation
  libelf-dev libdw-dev elfutils zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev         # JSON reading/writing
  libsimdjson-dev            # fast JSON reading: Matrix issues by the million (report ISSUES)
  libcli11-dev               # command-line parsing
  libcpp-httplib-dev         # HTTP in tests and benchmarks: scrapers and stand-in servers
  libfmt-dev                 # string formatting (g++ 12 has no <format>)
  systemtap-sdt-dev          # sys/sdt.h for USDT probes in the sample target
  liblzma-dev xz-utils       # MiniDebugInfo (.gnu_debugdata) and its test fixtures
  binutils gdb               # fixture debug files (objcopy), unwinding compared with gdb
  util-linux procps          # setpriv, ps: used by integration tests
  libcapstone-dev            # x86 disassembly: probe relocation to emulated instructions
  bpftrace                   # peer benchmark (bench/peer_overhead.cc)
  python3
  python3.11                 # CPython with USDT probes: the python profile's integration tests
  openjdk-17-jdk-headless    # HotSpot with USDT probes + javac: the jvm profile's integration tests
  chromium                   # headless browser for the HTML report tests
  libglib2.0-dev             # GLib main-loop test program (glib profile)
  python3-gi                 # pygobject: a GLib loop run from python3.11 (glib profile names its closures)
  android-libutils-dev       # AOSP's android::Looper (libutils) test program (android-looper profile)
  prometheus                 # live sessions: scrapes --metrics in the integration test
  clickhouse-server          # live sessions: receives --clickhouse rows in the integration test
  tmux                       # drives `looptrace top` in its integration test
  valgrind                   # bench/analysis_breakdown.sh: instructions per stage (callgrind)
  austin                     # bench/python_frames_overhead.sh: Debian's CPython sampler, side by side
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Peers the benchmarks run side by side (bench/peers/package.json, npm): 0x for
# bench/node_peers.py. Benchmarks only: the tests do not need them, so a failure only warns.
peers="$(cd "$(dirname "$0")/.." && pwd)/bench/peers"
if command -v npm >/dev/null && [[ ! -x "$peers/node_modules/.bin/0x" ]]; then
  echo "setup: installing the benchmarks' npm peers into bench/peers" >&2
  (cd "$peers" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    echo "setup: warning: npm could not install bench/peers (bench/node_peers.py needs it)" >&2
fi
