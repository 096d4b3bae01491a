// libFuzzer harness for stack unwinding: libdwfl's CFI unwinder driven by our Unwinder
// (module reporting, load bias, stack and file reads), the walk over rows compiled from the
// file's .eh_frame (hostile .eh_frame_hdr tables and CFI included) and the frame-pointer walker, over
// a sample (registers + stack copy) and the ELF file "mapped" where the sample says. The
// input layout is unwind_input.h; seeds/unwind_seed_gen.c captures real ones.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_file.h"
#include "looptrace/symbols/unwind_table.h"
#include "looptrace/symbols/unwinder.h"
#include "looptrace/util/log.h"
#include "unwind_input.h"

namespace {
// A pid no process has, so file paths are used as they are (no /proc/PID/root).
constexpr int kFakePid = 0x3ffffff0;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  looptrace::log::Verbosity() = looptrace::log::Level::kError;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace looptrace::symbols;
  LtUnwindInputHeader header;
  if (size < sizeof(header)) return 0;
  std::memcpy(&header, data, sizeof(header));
  data += sizeof(header);
  size -= sizeof(header);
  const size_t stack_size = std::min<size_t>(header.stack_size, size);
  const std::span<const uint8_t> stack(data, stack_size);
  data += stack_size;
  size -= stack_size;

  FuzzFile file(data, size);
  if (!file.ok()) return 0;
  const uint64_t map_start = header.map_start & ~uint64_t{0xfff};
  const uint64_t map_size = (static_cast<uint64_t>(size) + 0xfff) & ~uint64_t{0xfff};
  std::vector<MapEntry> maps;
  if (map_size > 0 && map_start <= ~uint64_t{0} - map_size) {
    MapEntry map;
    map.start = map_start;
    map.end = map_start + map_size;
    map.perms = "r-xp";
    map.path = file.path();
    maps.push_back(map);
  }

  UnwindInput input;
  input.pid = kFakePid;
  for (int i = 0; i < UnwindRegisters::kCount; ++i) {
    if ((header.valid_mask & (1u << i)) != 0) input.regs.Set(i, header.regs[i]);
  }
  input.stack_base = header.stack_base;
  input.stack = stack;
  input.maps = maps;

  UnwindOptions options;
  options.debug_directories.clear();
  options.max_frames = 64;
  Unwinder unwinder(options);
  if (auto outcome = unwinder.Unwind(input)) {
    if (std::getenv("LT_FUZZ_DEBUG") != nullptr) {  // seed checks: what the walk reached
      std::fprintf(stderr, "unwind: %zu frames, %zu modules, stop: %s\n", outcome->frames.size(),
                   outcome->modules_reported, outcome->stop_reason.c_str());
    }
    if (outcome->frames.empty() || outcome->frames.size() > options.max_frames) std::abort();
    if (outcome->frames[0].pc != input.regs.rip) std::abort();
  } else if (input.regs.Has(16) && input.regs.Has(7)) {
    std::abort();  // documented: an error only without rip or rsp
  }
  TableUnwinder tables;
  if (auto outcome = tables.Unwind(input, 64)) {
    if (outcome->frames.empty() || outcome->frames.size() > 64) std::abort();
    if (outcome->frames[0].pc != input.regs.rip) std::abort();
  } else if (input.regs.Has(16) && input.regs.Has(7)) {
    std::abort();
  }
  if (auto frames = UnwindFramePointers(input, 64)) {
    if (frames->empty() || frames->size() > 64) std::abort();
  }
  return 0;
}
