// DWARF lookups with libdw: the function, file:line and chain of inlined frames of an
// address, computed as elfutils' eu-addr2line -f -i does (same libdw calls, same order).
// Internal to looptrace_symbols.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "looptrace/symbols/symbolizer.h"
#include "looptrace/util/result.h"

#include <elfutils/libdw.h>

namespace looptrace::symbols {

class DwarfLookup {
 public:
  enum class OpenFailure { kNoDwarf, kUnreadable, kCorrupt };
  struct OpenError {
    OpenFailure failure;
    std::string message;
  };

  // Reads the DWARF of the ELF file at `path` (its own descriptor and libelf handle).
  static std::unique_ptr<DwarfLookup> Open(const std::string& path, OpenError* error);
  ~DwarfLookup();
  DwarfLookup(const DwarfLookup&) = delete;
  DwarfLookup& operator=(const DwarfLookup&) = delete;

  enum class Status {
    kFound,  // a compile unit covers the address
    kNoCu,   // no compile unit covers it
    kError,  // the DWARF of that unit could not be read
  };
  struct Answer {
    Status status = Status::kNoCu;
    bool has_function = false;  // DWARF named the innermost function (frames[0].function)
    bool has_line = false;      // frames[0] has file:line
    std::vector<SymbolFrame> frames;  // innermost first; empty for kNoCu
  };
  // `address` is a link-time virtual address.
  Answer Lookup(uint64_t address);

 private:
  struct Arange {
    uint64_t start;
    uint64_t length;
    uint64_t cu_offset;
  };
  DwarfLookup() = default;
  bool FindCu(uint64_t address, Dwarf_Die* cudie);

  int fd_ = -1;
  Elf* elf_ = nullptr;
  Dwarf* dwarf_ = nullptr;
  bool aranges_loaded_ = false;
  std::vector<Arange> aranges_;
};

}  // namespace looptrace::symbols
