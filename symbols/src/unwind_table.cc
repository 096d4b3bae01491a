#include "looptrace/symbols/unwind_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "looptrace/symbols/vdso.h"
#include "looptrace/util/first_use_cost.h"
#include "looptrace/util/safe_file.h"
#include "unwind_common.h"

namespace looptrace::symbols {
namespace {

constexpr int kRbp = 6;
constexpr int kRsp = 7;
constexpr int kRip = 16;

// Owns the file descriptor, the libelf handle and libdw's CFI of one file.
class CfiFile {
 public:
  explicit CfiFile(const std::string& path) : fd_(OpenForReading(path)) {
    struct stat st;
    if (fd_ < 0 || fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return;
    elf_version(EV_CURRENT);
    elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
    if (elf_ != nullptr && elf_kind(elf_) == ELF_K_ELF) cfi_ = dwarf_getcfi_elf(elf_);
  }
  ~CfiFile() {
    if (cfi_ != nullptr) dwarf_cfi_end(cfi_);
    if (elf_ != nullptr) elf_end(elf_);
    if (fd_ >= 0) close(fd_);
  }
  CfiFile(const CfiFile&) = delete;
  CfiFile& operator=(const CfiFile&) = delete;

  bool opened() const { return elf_ != nullptr; }
  Elf* elf() const { return elf_; }
  Dwarf_CFI* cfi() const { return cfi_; }

 private:
  int fd_ = -1;
  Elf* elf_ = nullptr;
  Dwarf_CFI* cfi_ = nullptr;
};

Elf_Scn* SectionNamed(Elf* elf, const char* name, GElf_Shdr* header) {
  size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    if (gelf_getshdr(scn, header) == nullptr) continue;
    const char* section_name = elf_strptr(elf, names, header->sh_name);
    if (section_name != nullptr && std::strcmp(section_name, name) == 0) return scn;
  }
  return nullptr;
}

// Reads one pointer of .eh_frame_hdr in `encoding` (the absolute and pc-relative 4- and
// 8-byte forms linkers write); false for others.
bool ReadEncoded(std::span<const uint8_t> bytes, size_t* at, uint8_t encoding, uint64_t section_address,
                 uint64_t* value) {
  const uint8_t format = encoding & 0x0f;
  const size_t size = format == DW_EH_PE_udata4 || format == DW_EH_PE_sdata4   ? 4
                      : format == DW_EH_PE_udata8 || format == DW_EH_PE_sdata8 ? 8
                                                                               : 0;
  if (size == 0 || *at + size > bytes.size()) return false;
  int64_t raw = 0;
  if (size == 4) {
    int32_t v32 = 0;
    std::memcpy(&v32, bytes.data() + *at, 4);
    raw = format == DW_EH_PE_sdata4 ? v32 : static_cast<int64_t>(static_cast<uint32_t>(v32));
  } else {
    std::memcpy(&raw, bytes.data() + *at, 8);
  }
  const uint8_t application = encoding & 0x70;
  if (application == DW_EH_PE_pcrel) {
    raw += static_cast<int64_t>(section_address + *at);
  } else if (application == DW_EH_PE_datarel) {
    raw += static_cast<int64_t>(section_address);
  } else if (application != DW_EH_PE_absptr) {
    return false;
  }
  *at += size;
  *value = static_cast<uint64_t>(raw);
  return true;
}

// The sorted initial locations of every FDE, from .eh_frame_hdr's binary-search table.
Result<std::vector<uint64_t>> FdeStarts(Elf* elf, const std::string& path) {
  GElf_Shdr header;
  Elf_Scn* scn = SectionNamed(elf, ".eh_frame_hdr", &header);
  if (scn == nullptr) return MakeError(path + " has no .eh_frame_hdr");
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr || data->d_size < 4) return MakeError(path + ": empty .eh_frame_hdr");
  const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data->d_buf), data->d_size);
  const uint8_t version = bytes[0];
  const uint8_t frame_pointer_encoding = bytes[1];
  const uint8_t count_encoding = bytes[2];
  const uint8_t table_encoding = bytes[3];
  size_t at = 4;
  uint64_t ignored = 0;
  uint64_t count = 0;
  if (version != 1 || !ReadEncoded(bytes, &at, frame_pointer_encoding, header.sh_addr, &ignored) ||
      !ReadEncoded(bytes, &at, count_encoding, header.sh_addr, &count)) {
    return MakeError(path + ": unreadable .eh_frame_hdr");
  }
  if (count > bytes.size()) return MakeError(path + ": .eh_frame_hdr counts more FDEs than it holds");
  std::vector<uint64_t> starts;
  starts.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t location = 0;
    uint64_t fde = 0;
    if (!ReadEncoded(bytes, &at, table_encoding, header.sh_addr, &location) ||
        !ReadEncoded(bytes, &at, table_encoding, header.sh_addr, &fde)) {
      return MakeError(path + ": truncated .eh_frame_hdr table");
    }
    starts.push_back(location);
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

bool IsOp(const Dwarf_Op& op, uint8_t atom, int64_t number = 0) {
  return op.atom == atom && static_cast<int64_t>(op.number) == number;
}

// The PLT's CFA expression as GNU ld writes it: rsp + 8 + 8 * ((rip & 15) >= K).
bool IsPltExpression(std::span<const Dwarf_Op> ops, uint8_t* threshold) {
  if (ops.size() != 9 || ops[0].atom != DW_OP_breg7 || !IsOp(ops[1], DW_OP_breg16) || !IsOp(ops[2], DW_OP_lit15) ||
      !IsOp(ops[3], DW_OP_and) || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31 || !IsOp(ops[5], DW_OP_ge) ||
      !IsOp(ops[6], DW_OP_lit3) || !IsOp(ops[7], DW_OP_shl) || !IsOp(ops[8], DW_OP_plus)) {
    return false;
  }
  *threshold = static_cast<uint8_t>(ops[4].atom - DW_OP_lit0);
  return true;
}

// "Saved at CFA + N" as libdw describes it: DW_OP_call_frame_cfa, then an optional
// DW_OP_plus_uconst / DW_OP_consts+DW_OP_plus / DW_OP_lit0+... (libdw folds the offset in
// one of these forms).
bool SavedAtCfa(std::span<const Dwarf_Op> ops, int32_t* offset) {
  if (ops.empty() || ops[0].atom != DW_OP_call_frame_cfa) return false;
  if (ops.size() == 1) {
    *offset = 0;
    return true;
  }
  if (ops.size() == 2 && ops[1].atom == DW_OP_plus_uconst) {
    *offset = static_cast<int32_t>(ops[1].number);
    return true;
  }
  if (ops.size() == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) && ops[2].atom == DW_OP_plus) {
    *offset = static_cast<int32_t>(static_cast<int64_t>(ops[1].number));
    return true;
  }
  return false;
}

// The row libdw computes for `frame`, in the table's terms.
UnwindRow RowOf(Dwarf_Frame* frame, uint64_t start, bool signal_frame) {
  UnwindRow row;
  row.start = start;
  row.cfa = CfaRule::kUnsupported;
  if (signal_frame) return row;
  Dwarf_Op* ops = nullptr;
  size_t count = 0;
  if (dwarf_frame_cfa(frame, &ops, &count) != 0 || ops == nullptr) return row;
  const std::span<const Dwarf_Op> cfa(ops, count);
  // libdw gives "register + offset" as DW_OP_bregx (register, offset) or DW_OP_bregN.
  int cfa_register = -1;
  int64_t cfa_offset = 0;
  if (count == 1 && cfa[0].atom == DW_OP_bregx) {
    cfa_register = static_cast<int>(cfa[0].number);
    cfa_offset = static_cast<int64_t>(cfa[0].number2);
  } else if (count == 1 && cfa[0].atom >= DW_OP_breg0 && cfa[0].atom <= DW_OP_breg31) {
    cfa_register = cfa[0].atom - DW_OP_breg0;
    cfa_offset = static_cast<int64_t>(cfa[0].number);
  }
  if (cfa_register == kRsp || cfa_register == kRbp) {
    row.cfa = cfa_register == kRsp ? CfaRule::kRspOffset : CfaRule::kRbpOffset;
    row.cfa_offset = static_cast<int32_t>(cfa_offset);
  } else if (IsPltExpression(cfa, &row.plt_threshold)) {
    row.cfa = CfaRule::kPltStub;
    row.cfa_offset = static_cast<int32_t>(static_cast<int64_t>(cfa[0].number));
  } else {
    return row;
  }

  Dwarf_Op memory[3];
  if (dwarf_frame_register(frame, kRip, memory, &ops, &count) != 0) {
    row.cfa = CfaRule::kUnsupported;
    return row;
  }
  int32_t return_address_offset = 0;
  if (count == 0 && ops == memory) {
    row.outermost = true;  // "undefined": nothing called this frame
  } else if (!SavedAtCfa({ops, count}, &return_address_offset) || return_address_offset != -8) {
    row.cfa = CfaRule::kUnsupported;
    return row;
  }

  if (dwarf_frame_register(frame, kRbp, memory, &ops, &count) != 0) {
    row.cfa = CfaRule::kUnsupported;
  } else if (count == 0) {
    row.rbp = RbpRule::kUnchanged;  // same value; "undefined" rbp is left as it is too
  } else if (SavedAtCfa({ops, count}, &row.rbp_offset)) {
    row.rbp = RbpRule::kAtCfa;
  } else {
    row.cfa = CfaRule::kUnsupported;
  }
  return row;
}

void Append(std::vector<UnwindRow>* rows, const UnwindRow& row) {
  if (!rows->empty() && rows->back().SameRuleAs(row)) return;
  if (!rows->empty() && rows->back().start == row.start) {
    rows->back() = row;
    return;
  }
  rows->push_back(row);
}

}  // namespace

const UnwindRow* UnwindTable::Find(uint64_t vaddr) const {
  auto after = std::upper_bound(rows.begin(), rows.end(), vaddr,
                                [](uint64_t address, const UnwindRow& row) { return address < row.start; });
  if (after == rows.begin()) return nullptr;
  return &*(after - 1);
}

Result<UnwindTable> CompileUnwindTable(const std::string& path) {
  CfiFile file(path);
  if (!file.opened()) return MakeError("cannot read " + path + " as ELF");
  if (file.cfi() == nullptr) return MakeError(path + " has no .eh_frame");
  auto starts = FdeStarts(file.elf(), path);
  if (!starts) return std::unexpected(starts.error());

  UnwindTable table;
  table.fdes = starts->size();
  uint64_t address = 0;
  for (size_t i = 0; i < starts->size(); ++i) {
    const uint64_t next_fde = i + 1 < starts->size() ? (*starts)[i + 1] : UINT64_MAX;
    address = std::max(address, (*starts)[i]);
    while (address < next_fde) {
      Dwarf_Frame* frame = nullptr;
      if (dwarf_cfi_addrframe(file.cfi(), address, &frame) != 0) break;
      Dwarf_Addr start = 0;
      Dwarf_Addr end = 0;
      bool signal_frame = false;
      const int return_register = dwarf_frame_info(frame, &start, &end, &signal_frame);
      UnwindRow row = RowOf(frame, address, signal_frame || return_register != kRip);
      free(frame);
      if (end <= address) break;
      const uint64_t row_end = std::min<uint64_t>(end, next_fde);
      if (row.cfa == CfaRule::kUnsupported) {
        table.unsupported_bytes += row_end - address;
      } else {
        table.covered_bytes += row_end - address;
      }
      Append(&table.rows, row);
      address = row_end;
    }
    if (address < next_fde) {  // a gap after this FDE
      UnwindRow gap;
      gap.start = address;
      Append(&table.rows, gap);
    }
  }
  return table;
}

const UnwindTable* TableUnwinder::TableFor(const std::string& path) {
  // By the file's identity: one file reached by several paths (through /proc/PID/root, a
  // symlink) is compiled once.
  struct stat st;
  const std::string key = stat(path.c_str(), &st) == 0
                              ? fmt::format("{}:{}:{}:{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec)
                              : path;
  auto [it, inserted] = tables_.try_emplace(key);
  if (inserted) {
    FirstUseScope first_use;
    auto table = CompileUnwindTable(path);
    if (table) it->second = std::make_unique<UnwindTable>(std::move(*table));
  }
  return it->second.get();
}

void TableUnwinder::Forget(int pid) {
  std::erase_if(modules_, [pid](const auto& entry) { return std::get<0>(entry.first) == pid; });
}

const TableUnwinder::MappedModule* TableUnwinder::ModuleOf(int pid, const MapEntry& map) {
  const auto key = std::make_tuple(pid, map.start, map.inode);
  auto [it, inserted] = modules_.try_emplace(key);
  if (inserted) {
    std::string path;
    if (map.path == "[vdso]") {
      path = TargetVdsoImagePath(pid, map.start, map.end);
    } else if (map.is_file()) {
      MappedFileLocation located = LocateMappedFile(pid, map);
      if (located.trusted) path = std::move(located.path);
    }
    bool is_exec = false;
    MappedModule module;
    if (!path.empty() && internal::MappingLoadBias(path, map, &module.bias, &is_exec)) {
      module.table = TableFor(path);
      module.path = std::move(path);
      it->second = std::move(module);
    }
  }
  return it->second.table == nullptr ? nullptr : &it->second;
}

Result<UnwindOutcome> TableUnwinder::Unwind(const UnwindInput& input, size_t max_frames) {
  if (!input.regs.Has(kRip) || !input.regs.Has(kRsp)) return MakeError("no rip or rsp in the sample");
  UnwindOutcome outcome;
  uint64_t pc = input.regs.rip;
  uint64_t rsp = input.regs.rsp;
  uint64_t rbp = input.regs.rbp;
  bool rbp_known = input.regs.Has(kRbp);
  for (;;) {
    const bool activation = outcome.frames.empty();
    outcome.frames.push_back({pc, activation ? pc : pc - 1, activation});
    if (outcome.frames.size() >= max_frames) {
      outcome.stop_reason = "max frames";
      break;
    }
    const uint64_t lookup = outcome.frames.back().lookup_pc;
    const MapEntry* map = internal::FindMapping(input.maps, lookup);
    const MappedModule* module = map == nullptr ? nullptr : ModuleOf(input.pid, *map);
    if (module == nullptr) {
      outcome.stop_reason = "no module at the return address";
      break;
    }
    const UnwindTable* table = module->table;
    const uint64_t bias = module->bias;
    const UnwindRow* row = table == nullptr ? nullptr : table->Find(lookup - bias);
    if (row == nullptr || row->cfa == CfaRule::kNoCfi) {
      outcome.stop_reason = "no CFI for the address";
      break;
    }
    if (row->cfa == CfaRule::kUnsupported) {
      outcome.stop_reason = "CFI this table cannot express";
      break;
    }
    if (row->outermost) break;
    if (row->cfa == CfaRule::kRbpOffset && !rbp_known) {
      outcome.stop_reason = "rbp unknown";
      break;
    }
    uint64_t cfa = (row->cfa == CfaRule::kRbpOffset ? rbp : rsp) + static_cast<int64_t>(row->cfa_offset);
    if (row->cfa == CfaRule::kPltStub && (pc & 15) >= row->plt_threshold) cfa += 8;
    uint64_t return_address = 0;
    if (!internal::ReadStackCopy(input, cfa - 8, &return_address)) {
      outcome.stop_reason = "stack copy exhausted";
      break;
    }
    if (row->rbp == RbpRule::kAtCfa) {
      rbp_known = internal::ReadStackCopy(input, cfa + static_cast<int64_t>(row->rbp_offset), &rbp);
    }
    if (cfa <= rsp) {
      outcome.stop_reason = "the stack did not grow";
      break;
    }
    rsp = cfa;
    pc = return_address;
    if (pc == 0) break;
  }
  return outcome;
}

}  // namespace looptrace::symbols
