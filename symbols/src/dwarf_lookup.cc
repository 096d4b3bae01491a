#include "dwarf_lookup.h"

#include "looptrace/util/safe_file.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "looptrace/symbols/demangle.h"
#include "looptrace/util/safe_file.h"

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

// Uncompressed size of a section: SHF_COMPRESSED's header, .zdebug_*'s "ZLIB" + 64-bit
// big-endian size, else sh_size.
uint64_t UncompressedSize(Elf_Scn* scn, const GElf_Shdr& shdr, std::string_view name) {
  if ((shdr.sh_flags & SHF_COMPRESSED) != 0) {
    GElf_Chdr chdr;
    return gelf_getchdr(scn, &chdr) != nullptr ? chdr.ch_size : 0;
  }
  if (name.starts_with(".zdebug")) {
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (data == nullptr || data->d_size < 12 || std::memcmp(data->d_buf, "ZLIB", 4) != 0) {
      return shdr.sh_size;  // not compressed (or already decompressed)
    }
    const auto* bytes = static_cast<const uint8_t*>(data->d_buf) + 4;
    uint64_t size = 0;
    for (int i = 0; i < 8; ++i) size = (size << 8) | bytes[i];
    return size;
  }
  return shdr.sh_size;
}

// Bytes of the DWARF sections that describe scopes and their address ranges.
uint64_t ScopeSectionBytes(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return 0;
  uint64_t total = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name == nullptr) continue;
    std::string_view section(name);
    if (section.starts_with(".zdebug"))
      section.remove_prefix(2);
    else if (section.starts_with(".debug"))
      section.remove_prefix(1);
    else
      continue;
    if (section == "debug_info" || section == "debug_ranges" || section == "debug_rnglists") {
      total += std::min<uint64_t>(UncompressedSize(scn, shdr, name), uint64_t{1} << 40);
    }
  }
  return total;
}

}  // namespace

std::unique_ptr<DwarfLookup> DwarfLookup::Open(const std::string& path, OpenError* error) {
  std::unique_ptr<DwarfLookup> lookup(new DwarfLookup());
  lookup->fd_ = OpenForReading(path);
  if (lookup->fd_ < 0) {
    error->failure = OpenFailure::kUnreadable;
    error->message = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(lookup->fd_, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > kMaxElfBytes) {
    error->failure = OpenFailure::kUnreadable;
    error->message = "cannot open " + path + ": not a regular file of at most " + FormatBytes(kMaxElfBytes);
    return nullptr;
  }
  elf_version(EV_CURRENT);
  lookup->elf_ = elf_begin(lookup->fd_, ELF_C_READ_MMAP, nullptr);
  if (lookup->elf_ == nullptr || elf_kind(lookup->elf_) != ELF_K_ELF) {
    error->failure = OpenFailure::kUnreadable;
    error->message = "cannot read " + path + ": not an ELF file";
    return nullptr;
  }
  // Sizes before libdw decompresses sections in place.
  const uint64_t bytes = ScopeSectionBytes(lookup->elf_);
  lookup->dwarf_ = dwarf_begin_elf(lookup->elf_, DWARF_C_READ, nullptr);
  if (lookup->dwarf_ == nullptr) {
    const char* message = dwarf_errmsg(-1);
    const std::string text = message != nullptr ? message : "unknown error";
    error->failure = text == "no DWARF information" ? OpenFailure::kNoDwarf : OpenFailure::kCorrupt;
    error->message = "cannot read the DWARF of " + path + ": " + text;
    return nullptr;
  }
  lookup->range_budget_ = bytes + 1024;
  lookup->die_budget_ = bytes + 1024;
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

// The line of the address (eu-addr2line: dwfl_module_getsrc) into answer->frames[0].
// eu-addr2line then takes the inline chain at the start of that line-table row
// (dwfl_lineinfo updates its address), which differs from `address` in gaps of the
// inlined scopes' ranges: returns that address.
uint64_t DwarfLookup::FindLine(Dwarf_Die* cudie, uint64_t address, Answer* answer) {
  uint64_t chain_address = address;
  if (Dwarf_Line* line = dwarf_getsrc_die(cudie, address)) {
    Dwarf_Addr row_address = 0;
    if (dwarf_lineaddr(line, &row_address) == 0) chain_address = row_address;
    int lineno = 0;
    int column = 0;
    const char* file = dwarf_linesrc(line, nullptr, nullptr);
    dwarf_lineno(line, &lineno);
    dwarf_linecol(line, &column);
    if (file != nullptr) {
      answer->has_line = true;
      answer->frames[0].file = file;
      answer->frames[0].line = static_cast<uint32_t>(lineno);
      answer->frames[0].column = static_cast<uint32_t>(column);
    }
  }
  return chain_address;
}

DwarfLookup::Answer DwarfLookup::Lookup(uint64_t address) {
  Answer answer;
  Dwarf_Die cudie;
  if (!FindCu(address, &cudie)) return answer;
  answer.status = Status::kFound;
  answer.frames.emplace_back();
  const uint64_t chain_address = FindLine(&cudie, address, &answer);
  CuIndex* index = use_index_ ? IndexFor(&cudie) : nullptr;
  if (index != nullptr && !index->complete) {
    answer.status = Status::kError;
    return answer;
  }
  if (index == nullptr) {
    LookupWithLibdw(&cudie, address, chain_address, &answer);
    return answer;
  }

  // The innermost function: the deepest inlined instance containing the address, else
  // the innermost subprogram (what dwarf_getscopes + print_dwarf_function yield).
  const int innermost = index->Innermost(address);
  int function = -1;
  for (int i = innermost; i >= 0; i = index->nodes[i].parent) {
    const int tag = index->nodes[i].tag;
    if (tag == DW_TAG_inlined_subroutine) {
      function = i;
      break;
    }
    if (tag == DW_TAG_subprogram && function < 0) function = i;
  }
  if (function >= 0) {
    answer.frames[0].function = NodeName(index, function);
    answer.has_function = true;
  }

  // The inline chain at chain_address: each inlined instance on the DIE path gives a
  // frame named after its nearest enclosing function, at the instance's call site.
  const int chain_start = chain_address == address ? innermost : index->Innermost(chain_address);
  for (int i = chain_start; i >= 0; i = index->nodes[i].parent) {
    Node& node = index->nodes[i];
    if (node.tag != DW_TAG_inlined_subroutine || node.parent < 0) continue;
    answer.frames.back().inlined = true;
    SymbolFrame frame;
    for (int j = node.parent; j >= 0; j = index->nodes[j].parent) {
      const int tag = index->nodes[j].tag;
      if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point || tag == DW_TAG_subprogram) {
        frame.function = NodeName(index, j);
        break;
      }
    }
    if (node.call_file >= 0 && index->files != nullptr) {
      if (const char* file = dwarf_filesrc(index->files, static_cast<size_t>(node.call_file), nullptr, nullptr)) {
        frame.file = file;
      }
    }
    frame.line = node.call_line;
    frame.column = node.call_column;
    answer.frames.push_back(std::move(frame));
  }
  return answer;
}

const std::string& DwarfLookup::NodeName(CuIndex* index, int i) {
  Node& node = index->nodes[i];
  if (!node.name_done) {
    Dwarf_Die die;
    node.name = dwarf_offdie(dwarf_, node.offset, &die) != nullptr ? DieName(&die) : "??";
    node.name_done = true;
  }
  return node.name;
}

// What libdw's scope walk descends into (libdw_visit_scopes.c: may_have_scopes).
static bool MayHaveScopes(int tag) {
  switch (tag) {
    case DW_TAG_compile_unit:
    case DW_TAG_module:
    case DW_TAG_lexical_block:
    case DW_TAG_with_stmt:
    case DW_TAG_catch_block:
    case DW_TAG_try_block:
    case DW_TAG_entry_point:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_subprogram:
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
      return true;
    default:
      return false;
  }
}

int DwarfLookup::CuIndex::Innermost(uint64_t address) const {
  auto it = std::upper_bound(segments.begin(), segments.end(), address,
                             [](uint64_t a, const Segment& s) { return a < s.start; });
  if (it == segments.begin()) return -1;
  --it;
  return address < it->end ? it->node : -1;
}

DwarfLookup::CuIndex* DwarfLookup::IndexFor(Dwarf_Die* cudie) {
  const Dwarf_Off cu_offset = dwarf_dieoffset(cudie);
  auto [it, inserted] = indexes_.try_emplace(cu_offset);
  if (!inserted) return it->second.get();
  auto index = std::make_unique<CuIndex>();
  if (dwarf_getsrcfiles(cudie, &index->files, nullptr) != 0) index->files = nullptr;

  // Nodes: the CU and every scope DIE with address ranges, reachable through scope DIEs
  // with ranges (libdw prunes the rest for every address).
  struct Range {
    uint64_t start;
    uint64_t end;
    int node;
  };
  std::vector<Range> ranges;
  auto add_ranges = [&](Dwarf_Die* die, int node) {
    ptrdiff_t offset = 0;
    Dwarf_Addr base = 0;
    Dwarf_Addr start = 0;
    Dwarf_Addr end = 0;
    bool any = false;
    while ((offset = dwarf_ranges(die, offset, &base, &start, &end)) > 0) {
      if (range_budget_ == 0) {
        index->complete = false;
        break;
      }
      --range_budget_;
      if (end > start) ranges.push_back({start, end, node});
      any = true;
    }
    return any;
  };
  index->nodes.push_back({dwarf_dieoffset(cudie), -1, DW_TAG_compile_unit, 0, -1, 0, 0, {}, false});
  if (!add_ranges(cudie, 0) || !index->complete) {
    it->second = std::move(index);
    return it->second.get();  // no ranges: nothing matches, like libdw
  }
  // Iterative depth-first walk.
  struct Pending {
    Dwarf_Die die;
    int parent;
    uint32_t depth;
  };
  std::vector<Pending> stack;
  Dwarf_Die child;
  if (dwarf_child(cudie, &child) == 0) stack.push_back({child, 0, 1});
  while (!stack.empty() && index->complete) {
    Pending current = stack.back();
    stack.pop_back();
    if (die_budget_ == 0) {  // more DIEs than bytes: linked in a loop
      index->complete = false;
      break;
    }
    --die_budget_;
    Dwarf_Die sibling;
    if (dwarf_siblingof(&current.die, &sibling) == 0) {
      stack.push_back({sibling, current.parent, current.depth});
    }
    const int tag = dwarf_tag(&current.die);
    if (!MayHaveScopes(tag)) continue;
    const int node = static_cast<int>(index->nodes.size());
    index->nodes.push_back({dwarf_dieoffset(&current.die), current.parent, tag, current.depth, -1, 0, 0, {}, false});
    if (!add_ranges(&current.die, node)) {
      index->nodes.pop_back();
      continue;
    }
    if (tag == DW_TAG_inlined_subroutine) {
      Dwarf_Word value = 0;
      Node& n = index->nodes.back();
      if (UData(&current.die, DW_AT_call_file, &value)) n.call_file = static_cast<int64_t>(value);
      if (UData(&current.die, DW_AT_call_line, &value)) n.call_line = static_cast<uint32_t>(value);
      if (UData(&current.die, DW_AT_call_column, &value)) {
        n.call_column = static_cast<uint32_t>(value);
      }
    }
    Dwarf_Die first_child;
    if (dwarf_child(&current.die, &first_child) == 0) {
      stack.push_back({first_child, node, current.depth + 1});
    }
  }

  if (!index->complete) {
    index->nodes.clear();
    index->segments.clear();
    it->second = std::move(index);
    return it->second.get();
  }

  // Elementary segments, each owned by the deepest node covering it (ties: the first
  // node in DIE order). Nodes are numbered in DIE pre-order.
  std::vector<uint64_t> points;
  points.reserve(ranges.size() * 2);
  for (const Range& r : ranges) {
    points.push_back(r.start);
    points.push_back(r.end);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  // Active ranges ordered by (depth desc, node asc); ended ones are dropped lazily.
  auto worse = [&](const Range& a, const Range& b) {
    const uint32_t da = index->nodes[a.node].depth;
    const uint32_t db = index->nodes[b.node].depth;
    return da != db ? da < db : a.node > b.node;
  };
  std::vector<Range> heap;
  size_t next = 0;
  for (size_t p = 0; p + 1 < points.size(); ++p) {
    const uint64_t start = points[p];
    const uint64_t end = points[p + 1];
    while (next < ranges.size() && ranges[next].start <= start) {
      heap.push_back(ranges[next++]);
      std::push_heap(heap.begin(), heap.end(), worse);
    }
    while (!heap.empty() && heap.front().end <= start) {
      std::pop_heap(heap.begin(), heap.end(), worse);
      heap.pop_back();
    }
    if (heap.empty()) continue;
    // The best active range may still be fine while a worse one ended: only the top
    // matters, and ended tops were removed above.
    const int node = heap.front().node;
    if (!index->segments.empty() && index->segments.back().end == start && index->segments.back().node == node) {
      index->segments.back().end = end;
    } else {
      index->segments.push_back({start, end, node});
    }
  }
  it->second = std::move(index);
  return it->second.get();
}

void DwarfLookup::LookupWithLibdw(Dwarf_Die* cudie_ptr, uint64_t address, uint64_t chain_address, Answer* out) {
  Answer& answer = *out;
  Dwarf_Die& cudie = *cudie_ptr;
  // The innermost function (eu-addr2line: print_dwarf_function).
  Dwarf_Die* scopes = nullptr;
  int nscopes = dwarf_getscopes(&cudie, address, &scopes);
  if (nscopes < 0) {
    answer.status = Status::kError;
    return;
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
      return;
    }
  }
  if (nscopes == 0) {
    std::free(scopes);
    return;
  }

  // The inline chain (eu-addr2line -i): the DIE nesting of the innermost scope.
  Dwarf_Die subroutine;
  const Dwarf_Off offset = dwarf_dieoffset(&scopes[0]);
  std::free(scopes);
  scopes = nullptr;
  if (dwarf_offdie(dwarf_, offset, &subroutine) == nullptr) return;
  const int count = dwarf_getscopes_die(&subroutine, &scopes);
  if (count > 1) {
    Dwarf_Die cu;
    Dwarf_Files* files = nullptr;
    if (dwarf_diecu(&scopes[0], &cu, nullptr, nullptr) != nullptr && dwarf_getsrcfiles(&cudie, &files, nullptr) == 0) {
      for (int i = 0; i < count - 1; ++i) {
        Dwarf_Die* die = &scopes[i];
        if (dwarf_tag(die) != DW_TAG_inlined_subroutine) continue;
        answer.frames.back().inlined = true;
        SymbolFrame frame;
        // The caller: the nearest enclosing inline, entry point or function.
        for (int j = i + 1; j < count; ++j) {
          const int tag = dwarf_tag(&scopes[j]);
          if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point || tag == DW_TAG_subprogram) {
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
}

}  // namespace looptrace::symbols
