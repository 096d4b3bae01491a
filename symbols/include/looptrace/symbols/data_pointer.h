// Function pointers stored in an ELF file's data: `*(g_idle_funcs+16)` in a profile is the
// function whose address GLib's exported GSourceFuncs table keeps at offset 16 (its dispatch
// function), which a stripped library does not name otherwise.
#pragma once

#include <cstdint>
#include <string_view>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/result.h"

namespace looptrace::symbols {

// The address (in the file's virtual addresses) stored in the 8 bytes at data symbol
// `symbol` + `offset`: from the dynamic relocation that fills it (R_X86_64_RELATIVE, or
// R_X86_64_64 / GLOB_DAT against a symbol the file defines), else from the file's bytes
// (non-PIE). Errors name the symbol: not found, offset outside it, no pointer there, or a
// pointer to another file (an imported symbol).
Result<uint64_t> ReadStoredPointer(const ElfFile& elf, std::string_view symbol, uint64_t offset);

}  // namespace looptrace::symbols
