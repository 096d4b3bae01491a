// What the parts of ElfFile share (internal to looptrace_symbols): elf_file.cc opens and
// loads a file, elf_addresses.cc maps and reads its addresses, elf_symbols.cc indexes its
// functions, elf_notes.cc reads its notes (build id, USDT), elf_minidebuginfo.cc the
// symbols of its .gnu_debugdata, elf_suggestions.cc suggests names ("did you mean").
#pragma once

#include <gelf.h>
#include <libelf.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/result.h"

namespace looptrace::symbols {

// What ScanSections finds: the sections the later steps read.
struct ElfFile::SectionRefs {
  Elf_Scn* symtab = nullptr;
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* versym = nullptr;
  Elf_Scn* verdef = nullptr;
  Elf_Scn* debuglink = nullptr;
  Elf_Scn* gnu_debugdata = nullptr;
  std::vector<Elf_Scn*> notes;
  uint64_t stapsdt_base = 0;  // sh_addr of .stapsdt.base (0 if none)
  size_t count = 0;           // sections seen
};

namespace internal {

// libelf's last error, as text.
std::string ElfErrorMessage();
// "0x1234".
std::string Hex(uint64_t value);
// True for an fnmatch(3) pattern ('*', '?' or '[').
bool IsSymbolGlob(std::string_view pattern);

// Appends the defined functions of one symbol table to `out`.
Result<void> ReadFunctionSymbols(Elf* elf, Elf_Scn* scn, Elf_Data* versym,
                                 const std::vector<std::string>& version_names, const std::string& path,
                                 std::vector<Symbol>* out, size_t* malformed);

// The functions of the .symtab inside .gnu_debugdata (an xz-compressed ELF), appended to
// `out`.
Result<void> ReadMiniDebugInfo(Elf_Scn* scn, const std::string& path, std::vector<Symbol>* out, size_t* malformed);

}  // namespace internal
}  // namespace looptrace::symbols
