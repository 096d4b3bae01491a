// libFuzzer harness for the ELF reader (ElfFile: headers, symbol tables and versions,
// dynamic section, notes and USDT probes, build id, debuglink, MiniDebugInfo) and what
// reads ELF files next to it (ReadDynamicInfo, ReadBuildId, DebuglinkCrc32, the probe
// instruction classifier at every function). The DWARF side is the symbolizer target.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_file.h"
#include "looptrace/symbols/debug_file.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/probe_cost.h"
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

  if (auto elf = ElfFile::Open(path)) {
    uint64_t last = 0;
    size_t checked = 0;
    for (const Symbol& symbol : elf->functions()) {
      if (symbol.address < last) std::abort();  // sorted by address
      if (symbol.name.empty() || symbol.demangled.empty()) std::abort();
      last = symbol.address;
      if (checked++ < 64) {
        const Symbol* found = elf->FindFunctionByAddress(symbol.address);
        if (found == nullptr || found->address > symbol.address) std::abort();
        // A name with glob characters is taken as a glob (documented), which it need not match.
        if (symbol.name.find_first_of("*?[") == std::string::npos && elf->FindFunctions(symbol.name).empty()) {
          std::abort();
        }
        if (auto bytes = elf->ReadAtAddress(symbol.address, 16)) {
          if (bytes->empty() || bytes->size() > 16) std::abort();
          (void)ClassifyProbeInstruction(*bytes);
        }
      }
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
    (void)elf->FindFunctions("seed_*");
    (void)elf->FindFunctions("seed::Counter::Add(int)");
    (void)elf->ClosestNames("seed_mid", 3);
    for (const UsdtProbe* probe : elf->FindUsdt("", "")) {
      if (probe->provider.empty() || probe->name.empty()) std::abort();
    }
    (void)elf->FindUsdt("se*", "l?af");
    if (!elf->build_id().empty()) (void)BuildIdDebugPath("/nonexistent", elf->build_id());
    // What ElfFile read must agree with the cheaper single-purpose readers.
    auto dynamic = ReadDynamicInfo(path);
    if (dynamic && dynamic->needed != elf->dynamic().needed) std::abort();
    auto build_id = ReadBuildId(path);
    if (build_id && !elf->build_id().empty() && *build_id != elf->build_id()) std::abort();
  } else {
    (void)ReadDynamicInfo(path);
    (void)ReadBuildId(path);
  }
  (void)DebuglinkCrc32(path);
  return 0;
}
