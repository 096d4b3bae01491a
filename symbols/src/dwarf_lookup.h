// DWARF lookups with libdw: the function, file:line and chain of inlined frames of an
// address, computed as elfutils' eu-addr2line -f -i does (same libdw calls, same order).
// Internal to looptrace_symbols.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
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
    bool has_function = false;        // DWARF named the innermost function (frames[0].function)
    bool has_line = false;            // frames[0] has file:line
    std::vector<SymbolFrame> frames;  // innermost first; empty for kNoCu
  };
  // `address` is a link-time virtual address.
  Answer Lookup(uint64_t address);

  // false: answer every lookup with libdw's dwarf_getscopes (slow; for comparisons).
  void set_use_index(bool use_index) { use_index_ = use_index; }

 private:
  // A scope DIE with address ranges, in DIE pre-order.
  struct Node {
    Dwarf_Off offset;
    int parent;  // -1 for the CU
    int tag;
    uint32_t depth;
    int64_t call_file;  // DW_AT_call_file of an inlined instance, -1 if none
    uint32_t call_line;
    uint32_t call_column;
    std::string name;  // DieName, computed on first use
    bool name_done;
  };
  struct Segment {
    uint64_t start;
    uint64_t end;
    int node;  // the deepest node covering [start, end)
  };
  // Per compile unit, built on its first lookup: one walk of its DIE tree.
  struct CuIndex {
    std::vector<Node> nodes;
    std::vector<Segment> segments;  // disjoint, by address
    Dwarf_Files* files = nullptr;
    // False when building the index ran out of budget (DWARF whose address ranges are
    // shared or looped far beyond its size): lookups in the unit fail as corrupt.
    bool complete = true;
    int Innermost(uint64_t address) const;
  };
  struct Arange {
    uint64_t start;
    uint64_t length;
    uint64_t cu_offset;
  };
  DwarfLookup() = default;
  bool FindCu(uint64_t address, Dwarf_Die* cudie);
  uint64_t FindLine(Dwarf_Die* cudie, uint64_t address, Answer* answer);
  CuIndex* IndexFor(Dwarf_Die* cudie);
  const std::string& NodeName(CuIndex* index, int node);
  void LookupWithLibdw(Dwarf_Die* cudie, uint64_t address, uint64_t chain_address, Answer* answer);

  int fd_ = -1;
  Elf* elf_ = nullptr;
  Dwarf* dwarf_ = nullptr;
  bool aranges_loaded_ = false;
  bool use_index_ = true;
  std::unordered_map<uint64_t, std::unique_ptr<CuIndex>> indexes_;
  // What all the indexes of this file may still read: address ranges and DIEs. Valid
  // DWARF spends at least one byte of .debug_info / .debug_ranges / .debug_rnglists on
  // each range and on each DIE, so the budget is their (uncompressed) size: index work
  // stays linear in the file, however its range lists are shared or its DIEs linked.
  uint64_t range_budget_ = 0;
  uint64_t die_budget_ = 0;
  std::vector<Arange> aranges_;
};

}  // namespace looptrace::symbols
