// ElfFile's functions: the defined functions of .symtab and .dynsym (with symbol versions),
// one entry per (address, name), and the lookups by name, glob and address.
#include <cxxabi.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>

#include "elf_internal.h"
#include "looptrace/symbols/demangle.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/log.h"

namespace looptrace::symbols {
namespace {

// Binding order for symbols sharing an address: global, weak, then local and others.
int BindingRank(uint8_t binding) {
  switch (binding) {
    case STB_GLOBAL:
      return 0;
    case STB_WEAK:
      return 1;
    default:
      return 2;
  }
}

// Version names by version index, from .gnu.version_d; the base (file) entry is left
// empty since it does not version a symbol.
std::vector<std::string> ReadVersionDefinitions(Elf* elf, Elf_Scn* scn, size_t* malformed) {
  std::vector<std::string> names;
  GElf_Shdr shdr;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (gelf_getshdr(scn, &shdr) == nullptr || data == nullptr) {
    ++*malformed;
    return names;
  }
  size_t offset = 0;
  for (size_t n = 0; n < 0x10000; ++n) {
    GElf_Verdef verdef;
    GElf_Verdaux aux;
    if (gelf_getverdef(data, static_cast<int>(offset), &verdef) == nullptr ||
        gelf_getverdaux(data, static_cast<int>(offset + verdef.vd_aux), &aux) == nullptr) {
      ++*malformed;
      break;
    }
    const char* name = elf_strptr(elf, shdr.sh_link, aux.vda_name);
    if (verdef.vd_ndx >= names.size()) names.resize(verdef.vd_ndx + 1u);
    if (name != nullptr && (verdef.vd_flags & VER_FLG_BASE) == 0) names[verdef.vd_ndx] = name;
    if (verdef.vd_next == 0) break;
    offset += verdef.vd_next;
  }
  return names;
}

}  // namespace

namespace internal {

bool IsSymbolGlob(std::string_view pattern) { return pattern.find_first_of("*?[") != std::string_view::npos; }

// Appends the defined functions of one symbol table to `out`.
Result<void> ReadFunctionSymbols(Elf* elf, Elf_Scn* scn, Elf_Data* versym,
                                 const std::vector<std::string>& version_names, const std::string& path,
                                 std::vector<Symbol>* out, size_t* malformed) {
  GElf_Shdr shdr;
  if (gelf_getshdr(scn, &shdr) == nullptr) {
    return MakeError("cannot read symbol table header of " + path + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  const char* table = shdr.sh_type == SHT_DYNSYM ? ".dynsym" : ".symtab";
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) {
    return MakeError(std::string("cannot read ") + table + " of " + path + ": " + ElfErrorMessage(),
                     ExitCode::kProfile);
  }
  const size_t entry_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  const size_t count = entry_size == 0 ? 0 : data->d_size / entry_size;
  if (count > kMaxSymbolTableEntries) {
    return MakeError(std::string("cannot read ") + table + " of " + path + ": " + std::to_string(count) +
                         " entries exceed the limit of " + std::to_string(kMaxSymbolTableEntries),
                     ExitCode::kProfile);
  }
  size_t versym_count = 0;
  if (versym != nullptr) {
    const size_t half = gelf_fsize(elf, ELF_T_HALF, 1, EV_CURRENT);
    versym_count = half == 0 ? 0 : versym->d_size / half;
  }
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) {
      ++*malformed;
      continue;
    }
    const int type = GELF_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF) continue;
    const char* raw = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (raw == nullptr) {
      ++*malformed;
      continue;
    }
    std::string_view full(raw);
    if (full.empty()) continue;

    Symbol symbol;
    // "memcpy@GLIBC_2.2.5" / "foo@@VERS_2" in static symbol tables of versioned libraries.
    if (size_t at = full.find('@'); at != std::string_view::npos && at > 0) {
      symbol.name = std::string(full.substr(0, at));
      std::string_view version = full.substr(at + 1);
      symbol.is_default_version = version.starts_with('@');
      if (symbol.is_default_version) version.remove_prefix(1);
      symbol.version = std::string(version);
    } else {
      symbol.name = std::string(full);
    }
    if (symbol.version.empty() && i < versym_count) {
      GElf_Versym index;
      if (gelf_getversym(versym, static_cast<int>(i), &index) != nullptr) {
        const size_t ndx = index & 0x7fff;
        if (ndx >= 2 && ndx < version_names.size()) {
          symbol.version = version_names[ndx];
          symbol.is_default_version = (index & 0x8000) == 0;  // high bit: hidden
        }
      }
    }
    symbol.address = sym.st_value;
    symbol.size = sym.st_size;
    symbol.is_ifunc = type == STT_GNU_IFUNC;
    symbol.binding = static_cast<uint8_t>(GELF_ST_BIND(sym.st_info));
    symbol.section = sym.st_shndx;
    out->push_back(std::move(symbol));
  }
  return {};
}

}  // namespace internal

using internal::IsSymbolGlob;
using internal::ReadFunctionSymbols;
using internal::ReadMiniDebugInfo;

// The defined functions of .symtab and .dynsym (with its symbol versions) and, for a file
// without .symtab, of the MiniDebugInfo: an xz-compressed ELF whose .symtab holds the local
// functions that stripping removed (Fedora's "mini debuginfo").
Result<std::vector<Symbol>> ElfFile::ReadSymbols(const SectionRefs& refs) {
  Elf* elf = handle_.elf;
  std::vector<Symbol> symbols;
  if (refs.symtab != nullptr) {
    RETURN_IF_ERROR(ReadFunctionSymbols(elf, refs.symtab, nullptr, {}, path_, &symbols, &malformed_entries_));
  }
  if (refs.dynsym != nullptr) {
    std::vector<std::string> version_names;
    if (refs.verdef != nullptr) {
      version_names = ReadVersionDefinitions(elf, refs.verdef, &malformed_entries_);
    }
    Elf_Data* versym_data = refs.versym != nullptr ? elf_getdata(refs.versym, nullptr) : nullptr;
    RETURN_IF_ERROR(
        ReadFunctionSymbols(elf, refs.dynsym, versym_data, version_names, path_, &symbols, &malformed_entries_));
  }
  if (refs.symtab == nullptr && refs.gnu_debugdata != nullptr) {
    const size_t before = symbols.size();
    if (auto status = ReadMiniDebugInfo(refs.gnu_debugdata, path_, &symbols, &malformed_entries_); !status) {
      minidebuginfo_error_ = status.error().message;
      log::V1("{}", minidebuginfo_error_);
    }
    minidebuginfo_functions_ = symbols.size() - before;
  }
  return symbols;
}

// functions_ from the symbols of all tables: one entry per (address, name), ordered by
// address then binding; demangled names, file offsets and the lookup indexes.
void ElfFile::IndexFunctions(std::vector<Symbol> symbols) {
  // One entry per (address, name); the .dynsym copy contributes the version.
  std::sort(symbols.begin(), symbols.end(),
            [](const Symbol& a, const Symbol& b) { return std::tie(a.address, a.name) < std::tie(b.address, b.name); });
  functions_.reserve(symbols.size());
  for (Symbol& symbol : symbols) {
    if (!functions_.empty() && functions_.back().address == symbol.address && functions_.back().name == symbol.name) {
      Symbol& kept = functions_.back();
      if (kept.version.empty() || (!kept.is_default_version && symbol.is_default_version && !symbol.version.empty())) {
        kept.version = std::move(symbol.version);
        kept.is_default_version = symbol.is_default_version;
      }
      kept.size = std::max(kept.size, symbol.size);
      if (BindingRank(symbol.binding) < BindingRank(kept.binding)) kept.binding = symbol.binding;
      kept.is_ifunc = kept.is_ifunc || symbol.is_ifunc;
      continue;
    }
    functions_.push_back(std::move(symbol));
  }
  // Within one address: global, weak, then local (already by name within each).
  for (size_t begin = 0; begin < functions_.size();) {
    size_t end = begin + 1;
    while (end < functions_.size() && functions_[end].address == functions_[begin].address) ++end;
    if (end - begin > 1) {
      std::stable_sort(
          functions_.begin() + static_cast<ptrdiff_t>(begin), functions_.begin() + static_cast<ptrdiff_t>(end),
          [](const Symbol& a, const Symbol& b) { return BindingRank(a.binding) < BindingRank(b.binding); });
    }
    begin = end;
  }

  // Demangle (reusing one buffer), file offsets, indexes.
  char* buffer = nullptr;
  size_t buffer_size = 0;
  const Segment* segment = nullptr;
  max_end_.reserve(functions_.size());
  by_name_.reserve(functions_.size() + functions_.size() / 4);
  uint64_t max_end = 0;
  for (uint32_t i = 0; i < functions_.size(); ++i) {
    Symbol& symbol = functions_[i];
    if (IsMangled(symbol.name)) {
      int status = 0;
      char* out = abi::__cxa_demangle(symbol.name.c_str(), buffer, &buffer_size, &status);
      if (status == 0 && out != nullptr) {
        buffer = out;
        symbol.demangled = out;
      } else {
        symbol.demangled = symbol.name;
      }
    } else {
      symbol.demangled = symbol.name;
    }
    if (segment == nullptr || symbol.address < segment->vaddr || symbol.address - segment->vaddr >= segment->memsz) {
      segment = SegmentFor(symbol.address);
    }
    symbol.file_offset = segment != nullptr ? symbol.address - segment->vaddr + segment->offset : 0;
    max_end = std::max(max_end, symbol.address + symbol.size);
    max_end_.push_back(max_end);
  }
  std::free(buffer);
  // Raw names and, for C++, the demangled name without parameters; a full demangled
  // name is found through its parameter-less prefix (see FindFunctions).
  for (uint32_t i = 0; i < functions_.size(); ++i) {
    const Symbol& symbol = functions_[i];
    by_name_.emplace(symbol.name, i);
    if (symbol.demangled != symbol.name) {
      const std::string_view stripped = StripParameters(symbol.demangled);
      if (stripped != symbol.name) by_name_.emplace(stripped, i);
    }
  }
}

std::vector<const Symbol*> ElfFile::FindFunctions(std::string_view name_or_glob) const {
  std::vector<const Symbol*> result;
  if (IsSymbolGlob(name_or_glob)) {
    const std::string pattern(name_or_glob);
    for (const Symbol& symbol : functions_) {
      if (fnmatch(pattern.c_str(), symbol.name.c_str(), 0) == 0 ||
          (symbol.demangled != symbol.name && fnmatch(pattern.c_str(), symbol.demangled.c_str(), 0) == 0)) {
        result.push_back(&symbol);
      }
    }
    return result;  // already in address order, each symbol once
  }
  auto [begin, end] = by_name_.equal_range(name_or_glob);
  for (auto it = begin; it != end; ++it) result.push_back(&functions_[it->second]);
  // "ns::Foo::bar(int) const": the symbols indexed under "ns::Foo::bar" with exactly
  // that demangled name.
  if (const std::string_view stripped = StripParameters(name_or_glob); stripped != name_or_glob) {
    auto [sbegin, send] = by_name_.equal_range(stripped);
    for (auto it = sbegin; it != send; ++it) {
      const Symbol& symbol = functions_[it->second];
      if (symbol.demangled == name_or_glob) result.push_back(&symbol);
    }
  }
  // functions_ is sorted by address, so pointer order is address order.
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

const Symbol* ElfFile::FindFunctionByAddress(uint64_t address) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  // Walk back from the last symbol starting at or before `address` while some earlier
  // symbol may still reach it (max_end_ is a running maximum of the ends).
  size_t i = static_cast<size_t>(it - functions_.begin());
  const Symbol* exact_zero_size = nullptr;
  while (i > 0) {
    --i;
    if (max_end_[i] <= address && functions_[i].address != address) break;
    const Symbol& symbol = functions_[i];
    if (symbol.size == 0) {
      if (symbol.address == address && exact_zero_size == nullptr) exact_zero_size = &symbol;
      continue;
    }
    if (address - symbol.address < symbol.size) {
      // Prefer the first symbol of the nearest start address (global before local).
      size_t first = i;
      while (first > 0 && functions_[first - 1].address == symbol.address && functions_[first - 1].size > 0 &&
             address - functions_[first - 1].address < functions_[first - 1].size) {
        --first;
      }
      const Symbol* found = &functions_[first];
      if (exact_zero_size != nullptr && exact_zero_size->address > found->address) {
        return exact_zero_size;
      }
      return found;
    }
  }
  return exact_zero_size;
}

const Symbol* ElfFile::FindFunctionOrLabel(uint64_t address) const {
  const Symbol* found = FindFunctionByAddress(address);
  if (found != nullptr) return found;
  auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (it == functions_.begin()) return nullptr;
  const size_t last = static_cast<size_t>(it - functions_.begin()) - 1;
  // No sized function covers `address`; a label qualifies only at or above the end of
  // every function starting before it (max_end_ is that running maximum).
  const uint64_t min_label = max_end_[last];
  // The section holding `address`.
  auto section = std::upper_bound(sections_.begin(), sections_.end(), address,
                                  [](uint64_t a, const Section& s) { return a < s.address; });
  if (section == sections_.begin()) return nullptr;
  --section;
  if (address - section->address >= section->size) return nullptr;
  for (size_t i = last + 1; i-- > 0;) {
    const Symbol& symbol = functions_[i];
    if (symbol.address < min_label) break;
    if (symbol.size == 0 && symbol.section == section->index) return &symbol;
  }
  return nullptr;
}

}  // namespace looptrace::symbols
