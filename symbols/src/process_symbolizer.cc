#include "looptrace/symbols/process_symbolizer.h"

#include <fmt/format.h>

#include <chrono>

namespace looptrace::symbols {

const MapEntry* ProcessSymbolizer::FindMapping(uint64_t address) const {
  for (const auto& m : maps_)
    if (address >= m.start && address < m.end && !m.path.empty() && m.path.front() == '/') return &m;
  return nullptr;
}

const ElfFile* ProcessSymbolizer::Elf(const std::string& path) {
  auto it = elves_.find(path);
  if (it == elves_.end()) {
    // Through /proc/PID/root, so files of targets in containers or chroots resolve.
    auto elf = ElfFile::Open(ProcRootPath(pid_, path));
    if (!elf) elf = ElfFile::Open(path);  // the process is gone: its files may remain
    it = elves_.emplace(path, elf ? std::make_unique<ElfFile>(std::move(*elf)) : nullptr).first;
  }
  return it->second.get();
}

void ProcessSymbolizer::ReadMaps() {
  if (auto maps = ReadProcMaps(pid_)) maps_ = std::move(*maps);
  maps_read_at_ = std::chrono::steady_clock::now();
}

std::optional<SymbolizedAddress> ProcessSymbolizer::Symbolize(uint64_t address) {
  const MapEntry* mapping = FindMapping(address);
  // A miss re-reads the maps (a library may have been loaded since), at most every 200 ms.
  auto now = std::chrono::steady_clock::now();
  if (!mapping && now - maps_read_at_ > std::chrono::milliseconds(200)) {
    ReadMaps();
    mapping = FindMapping(address);
  }
  if (!mapping) return std::nullopt;
  SymbolizedAddress out;
  out.module = mapping->path;
  out.module_offset = address - mapping->start + mapping->offset;
  if (const ElfFile* elf = Elf(mapping->path)) {
    if (auto vaddr = elf->FileOffsetToAddress(out.module_offset)) {
      if (const Symbol* fn = elf->FindFunctionByAddress(*vaddr)) {
        out.function = fn->demangled;
        out.function_offset = *vaddr - fn->address;
      }
    }
  }
  return out;
}

}  // namespace looptrace::symbols
