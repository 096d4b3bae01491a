// What the two unwinders share (internal to looptrace_symbols): reads from the stack copy,
// the mapping of an address, the load bias of a mapped ELF file.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "looptrace/symbols/proc_maps.h"
#include "looptrace/symbols/unwinder.h"

namespace looptrace::symbols::internal {

// 8 bytes at `address` from the stack copy; false outside it.
bool ReadStackCopy(const UnwindInput& input, uint64_t address, uint64_t* value);
// The mapping holding `address`, or nullptr.
const MapEntry* FindMapping(std::span<const MapEntry> maps, uint64_t address);

// The load bias of the ELF file at `path` mapped by `map`: map.start minus the virtual
// address that the file offset map.offset has in the file's PT_LOAD segments. False when
// the file cannot be read or no PT_LOAD segment holds that offset. *is_exec: ET_EXEC.
bool MappingLoadBias(const std::string& path, const MapEntry& map, uint64_t* bias, bool* is_exec);

}  // namespace looptrace::symbols::internal
