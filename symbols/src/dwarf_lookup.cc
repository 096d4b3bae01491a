#include "dwarf_lookup.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "looptrace/symbols/demangle.h"

namespace looptrace::symbols {
namespace {

// eu-addr2line's get_diename: the linkage name (through abstract origins and
// specifications), else DW_AT_name, else "??"; demangled like `-C`.
std::string DieName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  if (name == nullptr) {
    name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  }
  if (name == nullptr) name = dwarf_diename(die);
  if (name == nullptr) return "??";
  if (name[0] == '_' && name[1] == 'Z') return Demangle(name);
  return name;
}

bool UData(Dwarf_Die* die, unsigned int attribute, Dwarf_Word* value) {
  Dwarf_Attribute attr;
  return dwarf_formudata(dwarf_attr(die, attribute, &attr), value) == 0;
}

}  // namespace

std::unique_ptr<DwarfLookup> DwarfLookup::Open(const std::string& path, OpenError* error) {
  std::unique_ptr<DwarfLookup> lookup(new DwarfLookup());
  lookup->fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (lookup->fd_ < 0) {
    error->failure = OpenFailure::kUnreadable;
    error->message = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  elf_version(EV_CURRENT);
  lookup->elf_ = elf_begin(lookup->fd_, ELF_C_READ_MMAP, nullptr);
  if (lookup->elf_ == nullptr || elf_kind(lookup->elf_) != ELF_K_ELF) {
    error->failure = OpenFailure::kUnreadable;
    error->message = "cannot read " + path + ": not an ELF file";
    return nullptr;
  }
  lookup->dwarf_ = dwarf_begin_elf(lookup->elf_, DWARF_C_READ, nullptr);
  if (lookup->dwarf_ == nullptr) {
    const char* message = dwarf_errmsg(-1);
    const std::string text = message != nullptr ? message : "unknown error";
    error->failure =
        text == "no DWARF information" ? OpenFailure::kNoDwarf : OpenFailure::kCorrupt;
    error->message = "cannot read the DWARF of " + path + ": " + text;
    return nullptr;
  }
  return lookup;
}

DwarfLookup::~DwarfLookup() {
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
  if (elf_ != nullptr) elf_end(elf_);
  if (fd_ >= 0) close(fd_);
}

bool DwarfLookup::FindCu(uint64_t address, Dwarf_Die* cudie) {
  if (!aranges_loaded_) {
    aranges_loaded_ = true;
    Dwarf_Aranges* aranges = nullptr;
    size_t count = 0;
    if (dwarf_getaranges(dwarf_, &aranges, &count) == 0) {
      aranges_.reserve(count);
      for (size_t i = 0; i < count; ++i) {
        Dwarf_Addr start = 0;
        Dwarf_Word length = 0;
        Dwarf_Off cu_offset = 0;
        if (dwarf_getarangeinfo(dwarf_onearange(aranges, i), &start, &length, &cu_offset) == 0) {
          aranges_.push_back({start, length, cu_offset});
        }
      }
      std::stable_sort(aranges_.begin(), aranges_.end(),
                       [](const Arange& a, const Arange& b) { return a.start < b.start; });
    }
  }
  // As libdwfl does: each range stands for its unit up to the start of the next range, and
  // the last one up to its end (inclusive).
  auto it = std::upper_bound(aranges_.begin(), aranges_.end(), address,
                             [](uint64_t a, const Arange& r) { return a < r.start; });
  if (it == aranges_.begin()) return false;
  --it;
  if (it + 1 == aranges_.end() && address > it->start + it->length) return false;
  return dwarf_offdie(dwarf_, it->cu_offset, cudie) != nullptr;
}

DwarfLookup::Answer DwarfLookup::Lookup(uint64_t address) {
  Answer answer;
  Dwarf_Die cudie;
  if (!FindCu(address, &cudie)) return answer;
  answer.status = Status::kFound;
  answer.frames.emplace_back();

  // The line of the address (eu-addr2line: dwfl_module_getsrc). eu-addr2line then takes
  // the inline chain at the start of that line-table row (dwfl_lineinfo updates its
  // address), which differs from `address` in gaps of the inlined scopes' ranges.
  uint64_t chain_address = address;
  if (Dwarf_Line* line = dwarf_getsrc_die(&cudie, address)) {
    Dwarf_Addr row_address = 0;
    if (dwarf_lineaddr(line, &row_address) == 0) chain_address = row_address;
    int lineno = 0;
    int column = 0;
    const char* file = dwarf_linesrc(line, nullptr, nullptr);
    dwarf_lineno(line, &lineno);
    dwarf_linecol(line, &column);
    if (file != nullptr) {
      answer.has_line = true;
      answer.frames[0].file = file;
      answer.frames[0].line = static_cast<uint32_t>(lineno);
      answer.frames[0].column = static_cast<uint32_t>(column);
    }
  }

  // The innermost function (eu-addr2line: print_dwarf_function).
  Dwarf_Die* scopes = nullptr;
  int nscopes = dwarf_getscopes(&cudie, address, &scopes);
  if (nscopes < 0) {
    answer.status = Status::kError;
    return answer;
  }
  for (int i = 0; i < nscopes; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
      answer.frames[0].function = DieName(&scopes[i]);
      answer.has_function = true;
      break;
    }
  }
  if (chain_address != address) {
    std::free(scopes);
    scopes = nullptr;
    nscopes = dwarf_getscopes(&cudie, chain_address, &scopes);
    if (nscopes < 0) {
      answer.status = Status::kError;
      return answer;
    }
  }
  if (nscopes == 0) {
    std::free(scopes);
    return answer;
  }

  // The inline chain (eu-addr2line -i): the DIE nesting of the innermost scope.
  Dwarf_Die subroutine;
  const Dwarf_Off offset = dwarf_dieoffset(&scopes[0]);
  std::free(scopes);
  scopes = nullptr;
  if (dwarf_offdie(dwarf_, offset, &subroutine) == nullptr) return answer;
  const int count = dwarf_getscopes_die(&subroutine, &scopes);
  if (count > 1) {
    Dwarf_Die cu;
    Dwarf_Files* files = nullptr;
    if (dwarf_diecu(&scopes[0], &cu, nullptr, nullptr) != nullptr &&
        dwarf_getsrcfiles(&cudie, &files, nullptr) == 0) {
      for (int i = 0; i < count - 1; ++i) {
        Dwarf_Die* die = &scopes[i];
        if (dwarf_tag(die) != DW_TAG_inlined_subroutine) continue;
        answer.frames.back().inlined = true;
        SymbolFrame frame;
        // The caller: the nearest enclosing inline, entry point or function.
        for (int j = i + 1; j < count; ++j) {
          const int tag = dwarf_tag(&scopes[j]);
          if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point ||
              tag == DW_TAG_subprogram) {
            frame.function = DieName(&scopes[j]);
            break;
          }
        }
        Dwarf_Word value = 0;
        if (UData(die, DW_AT_call_file, &value)) {
          if (const char* file = dwarf_filesrc(files, value, nullptr, nullptr)) frame.file = file;
        }
        if (UData(die, DW_AT_call_line, &value)) frame.line = static_cast<uint32_t>(value);
        if (UData(die, DW_AT_call_column, &value)) frame.column = static_cast<uint32_t>(value);
        answer.frames.push_back(std::move(frame));
      }
    }
  } else if (count < 0) {
    answer.status = Status::kError;
  }
  std::free(scopes);
  return answer;
}

}  // namespace looptrace::symbols
