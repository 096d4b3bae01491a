#include "looptrace/symbols/data_pointer.h"

#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>

#include <cstring>
#include <optional>

namespace looptrace::symbols {
namespace {

struct DataSymbol {
  uint64_t address = 0;
  uint64_t size = 0;
};

// A defined symbol named `name` (data or function) in .dynsym or .symtab.
std::optional<DataSymbol> FindDefinedSymbol(Elf* elf, std::string_view name) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    if (shdr.sh_type != SHT_DYNSYM && shdr.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || shdr.sh_entsize == 0) continue;
    const size_t count = std::min<size_t>(shdr.sh_size / shdr.sh_entsize, kMaxSymbolTableEntries);
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || sym.st_shndx == SHN_UNDEF) continue;
      const char* sym_name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (sym_name == nullptr) continue;
      std::string_view n(sym_name);
      if (size_t at = n.find('@'); at != std::string_view::npos) n = n.substr(0, at);
      if (n == name) return DataSymbol{sym.st_value, sym.st_size};
    }
  }
  return std::nullopt;
}

// The value a dynamic relocation stores at `address`, if one does.
Result<std::optional<uint64_t>> RelocatedValue(Elf* elf, uint64_t address) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_RELA || shdr.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) continue;
    const size_t count = shdr.sh_size / shdr.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Rela rela;
      if (gelf_getrela(data, static_cast<int>(i), &rela) == nullptr || rela.r_offset != address) continue;
      const uint32_t type = GELF_R_TYPE(rela.r_info);
      if (type == R_X86_64_RELATIVE) return std::optional<uint64_t>(static_cast<uint64_t>(rela.r_addend));
      if (type != R_X86_64_64 && type != R_X86_64_GLOB_DAT)
        return MakeError(fmt::format("relocation type {} at {:#x} is not a plain pointer", type, address));
      // Against a symbol of the linked table: only one this file defines names code here.
      Elf_Scn* symtab = elf_getscn(elf, shdr.sh_link);
      GElf_Shdr sym_shdr;
      Elf_Data* sym_data = symtab ? elf_getdata(symtab, nullptr) : nullptr;
      GElf_Sym sym;
      if (sym_data == nullptr || gelf_getshdr(symtab, &sym_shdr) == nullptr ||
          gelf_getsym(sym_data, static_cast<int>(GELF_R_SYM(rela.r_info)), &sym) == nullptr)
        return MakeError(fmt::format("unreadable relocation symbol at {:#x}", address));
      if (sym.st_shndx == SHN_UNDEF) {
        const char* name = elf_strptr(elf, sym_shdr.sh_link, sym.st_name);
        return MakeError(
            fmt::format("the pointer at {:#x} is imported from another file ({})", address, name ? name : "?"));
      }
      return std::optional<uint64_t>(sym.st_value + static_cast<uint64_t>(rela.r_addend));
    }
  }
  return std::optional<uint64_t>();
}

}  // namespace

Result<uint64_t> ReadStoredPointer(const ElfFile& elf, std::string_view symbol, uint64_t offset) {
  Elf* handle = elf.elf();
  if (handle == nullptr) return MakeError(fmt::format("{}: no ELF handle", elf.path()));
  auto sym = FindDefinedSymbol(handle, symbol);
  if (!sym) return MakeError(fmt::format("data symbol '{}' not found in {}", symbol, elf.path()));
  if (sym->size && offset + 8 > sym->size)
    return MakeError(fmt::format("offset {} is outside '{}' ({} bytes) in {}", offset, symbol, sym->size, elf.path()));
  const uint64_t address = sym->address + offset;
  auto relocated = RelocatedValue(handle, address);
  if (!relocated)
    return MakeError(fmt::format("{}+{} in {}: {}", symbol, offset, elf.path(), relocated.error().message));
  uint64_t value = 0;
  if (*relocated) {
    value = **relocated;
  } else {
    auto bytes = elf.ReadAtAddress(address, 8);
    if (!bytes || bytes->size() != 8)
      return MakeError(fmt::format("{}+{} in {}: no stored pointer (zero-filled data)", symbol, offset, elf.path()));
    std::memcpy(&value, bytes->data(), 8);
  }
  if (value == 0) return MakeError(fmt::format("{}+{} in {} holds a null pointer", symbol, offset, elf.path()));
  return value;
}

}  // namespace looptrace::symbols
