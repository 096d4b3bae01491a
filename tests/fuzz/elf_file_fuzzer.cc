// libFuzzer harness for the ELF reader (ElfFile) and the symbolizer on top of it (DWARF
// index, line tables, inline chains, MiniDebugInfo, debuglink handling). Built and run
// by scripts/fuzz.sh (not part of the CMake build). The input is written to a memfd and
// opened through /proc/self/fd/N, as a file of a target process would be.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/symbolizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace looptrace::symbols;
  const int fd = memfd_create("elf_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size > 0 && write(fd, data, size) != static_cast<ssize_t>(size)) {
    close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  if (auto elf = ElfFile::Open(path)) {
    uint64_t last = 0;
    for (const Symbol& symbol : elf->functions()) {
      if (symbol.address < last) std::abort();  // sorted by address
      last = symbol.address;
    }
    const uint64_t probes[] = {0, 0x1000, 0x1139, 0x401000, last, last + 1, ~uint64_t{0}};
    for (uint64_t address : probes) {
      if (const Symbol* s = elf->FindFunctionByAddress(address)) {
        if (s->address > address) std::abort();
      }
      if (const Symbol* s = elf->FindFunctionOrLabel(address)) {
        if (s->address > address) std::abort();
      }
      if (auto offset = elf->AddressToFileOffset(address)) (void)elf->FileOffsetToAddress(*offset);
      (void)elf->ReadAtAddress(address, 16);
    }
    (void)elf->FindFunctions("main");
    (void)elf->FindFunctions("st_*");
    (void)elf->ClosestNames("mian", 3);
    (void)elf->FindUsdt("", "");
    for (const Symbol& symbol : elf->functions()) {
      if (symbol.name.empty()) std::abort();
    }
  }

  // The whole symbolizer: module load, DWARF index, lines, inline frames. No debug
  // directories, so nothing outside the input is read.
  ModuleCacheOptions options;
  options.debug.debug_directories.clear();
  options.debug.use_debuglink = false;
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>(options));
  uint64_t address = 0x1000;
  for (int i = 0; i < 24; ++i) {
    auto result = symbolizer.SymbolizeModule(path, address);
    if (result->module != path) std::abort();
    for (const SymbolFrame& frame : result->frames) (void)frame.Location();
    address += 0x35 + static_cast<uint64_t>(i) * 0x101;
    if (i == 12) address = 0x401000;
  }
  (void)symbolizer.stats().ToString();
  close(fd);
  return 0;
}
