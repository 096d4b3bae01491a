// Names addresses of a live process: /proc/PID/maps -> mapped file -> ELF symbol.
// A thin wrapper over Symbolizer (ELF symbols only, no DWARF, unless asked) that shares the
// process-wide ModuleCache, so each file is read once per run (keyed by file identity and
// build id); maps are re-read on a miss at most every 200 ms, so libraries loaded later
// are found.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "looptrace/symbols/symbolizer.h"

namespace looptrace::symbols {

struct SymbolizedAddress {
  std::string module;          // path of the mapped file
  uint64_t module_offset = 0;  // file offset of the address
  std::string function;        // demangled; empty when no symbol covers the address
  uint64_t function_offset = 0;
};

class ProcessSymbolizer {
 public:
  explicit ProcessSymbolizer(int pid, std::shared_ptr<ModuleCache> cache = ModuleCache::Default())
      : pid_(pid), symbolizer_(SymbolizerOptions{.use_dwarf = false}, std::move(cache)) {}

  // nullopt when no file mapping holds the address.
  std::optional<SymbolizedAddress> Symbolize(uint64_t address);
  // The same address with DWARF (file:line, inlined frames) when available.
  std::shared_ptr<const Symbolization> SymbolizeFull(uint64_t address);
  // Reads /proc/PID/maps now: call it while the process surely lives, so addresses can
  // still be named after it exits.
  void ReadMaps();
  SymbolizerStats stats() const { return symbolizer_.stats(); }
  // The modules it names frames from (read once per file identity).
  ModuleCache& cache() { return symbolizer_.cache(); }

 private:
  int pid_;
  Symbolizer symbolizer_;
};

}  // namespace looptrace::symbols
