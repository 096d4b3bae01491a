// HotSpot's self-description for debuggers (the Serviceability Agent's contract): libjvm.so
// exports gHotSpotVMStructs (fields: offsets, or addresses of statics), gHotSpotVMTypes (type
// sizes) and gHotSpotVMIntConstants/LongConstants, each an array whose entry layout is given
// by the exported *EntryXxxOffset and *ArrayStride variables. The arrays' string pointers are
// relocated at load, so they are read from the running process.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "loader/runtimes/python/code_namer.h"  // Memory
#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/result.h"

namespace looptrace::loader::jvm {

using python::Memory;

struct VmStructs {
  std::map<std::string, uint64_t, std::less<>> offsets;    // "JavaThread::_anchor" -> offset
  std::map<std::string, uint64_t, std::less<>> addresses;  // "CodeCache::_heaps" -> address
  std::map<std::string, uint64_t, std::less<>> sizes;      // "ConstMethod" -> sizeof
  std::map<std::string, int64_t, std::less<>> constants;   // int and long constants

  std::optional<uint64_t> Offset(std::string_view field) const;
  std::optional<uint64_t> Address(std::string_view field) const;
  std::optional<uint64_t> Size(std::string_view type) const;
  std::optional<int64_t> Constant(std::string_view name) const;
};

// Reads the tables of the libjvm.so `elf`, mapped at `bias` in the process `memory` reads.
// An error names what is missing (the JVM is not initialized yet, or not a HotSpot).
Result<VmStructs> ReadVmStructs(const symbols::ElfFile& elf, uint64_t bias, Memory& memory);

}  // namespace looptrace::loader::jvm
