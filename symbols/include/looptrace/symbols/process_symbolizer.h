// Names addresses of a live process: /proc/PID/maps -> mapped file -> ELF symbol.
// Files are opened once per session (keyed by path); maps are re-read on a miss, so
// libraries loaded later are found.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"

namespace looptrace::symbols {

struct SymbolizedAddress {
  std::string module;          // path of the mapped file
  uint64_t module_offset = 0;  // file offset of the address
  std::string function;        // demangled; empty when no symbol covers the address
  uint64_t function_offset = 0;
};

class ProcessSymbolizer {
 public:
  explicit ProcessSymbolizer(int pid) : pid_(pid) {}
  std::optional<SymbolizedAddress> Symbolize(uint64_t address);
  // Reads /proc/PID/maps now: call it while the process surely lives, so addresses can
  // still be named after it exits.
  void ReadMaps();

 private:
  const MapEntry* FindMapping(uint64_t address) const;
  const ElfFile* Elf(const std::string& path);

  int pid_;
  std::vector<MapEntry> maps_;
  std::chrono::steady_clock::time_point maps_read_at_{};
  std::map<std::string, std::unique_ptr<ElfFile>> elves_;  // null: could not be opened
};

}  // namespace looptrace::symbols
