// libFuzzer harness for the DWARF side of symbolization: Symbolizer::SymbolizeModule on an
// arbitrary ELF file (module load, the DWARF compile-unit and scope index, line tables,
// inline chains; degradations instead of crashes). Addresses come from the file itself
// (every function's start, middle and end) plus a few fixed ones. No debug directories
// or debuglinks are searched, so nothing outside the input is read.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_file.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/symbolizer.h"
#include "looptrace/util/log.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  looptrace::log::Verbosity() = looptrace::log::Level::kError;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace looptrace::symbols;
  FuzzFile file(data, size);
  if (!file.ok()) return 0;
  const std::string& path = file.path();

  std::vector<uint64_t> addresses = {0, 0x1000, 0x1139, 0x401000, 0x401139, ~uint64_t{0}};
  if (auto elf = ElfFile::Open(path)) {
    for (const Symbol& symbol : elf->functions()) {
      if (addresses.size() > 96) break;
      addresses.push_back(symbol.address);
      addresses.push_back(symbol.address + symbol.size / 2);
      addresses.push_back(symbol.address + symbol.size);
    }
  }

  ModuleCacheOptions options;
  options.debug.debug_directories.clear();
  options.debug.use_debuglink = false;
  options.debug.use_build_id = false;
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>(options));
  for (uint64_t address : addresses) {
    auto result = symbolizer.SymbolizeModule(path, address);
    if (result == nullptr || result->module != path) std::abort();
    if (result->degradation == Degradation::kNone &&
        (result->frames.empty() || result->frames.front().function.empty())) {
      std::abort();
    }
    for (size_t i = 0; i < result->frames.size(); ++i) {
      const SymbolFrame& frame = result->frames[i];
      // Every frame but the outermost was inlined into the next one.
      if (frame.inlined != (i + 1 < result->frames.size())) std::abort();
      (void)frame.Location();
    }
    (void)DegradationName(result->degradation);
  }
  (void)symbolizer.stats().ToString();
  return 0;
}
