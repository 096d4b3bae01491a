#include "looptrace/symbols/probe_relocation.h"

#include <capstone/capstone.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace looptrace::symbols {
namespace {

constexpr const char* kArgumentRegisters[7] = {"%rdi", "%rsi", "%rdx", "%rcx", "%r8", "%r9", "%rax"};
constexpr ArgumentMask kAllArguments = 0x7f;  // and %rax

#ifndef SHT_RELR
constexpr uint32_t SHT_RELR = 19;
#endif
constexpr uint32_t kRelative = 8, kIrelative = 37, kAbs64 = 1, kGlobDat = 6, kJumpSlot = 7;
constexpr int64_t kDtInit = 12, kDtFini = 13, kDtTextrel = 22, kDtFlags = 30;
constexpr uint64_t kDfTextrel = 0x4;

// Most code Scan disassembles to verify candidate references (capstone decodes about 0.5 M
// instructions, ~2 MiB, per second on our VMs): beyond it, relocation gives up with a reason.
constexpr uint64_t kDecodeBudgetBytes = 4u << 20;

// Longest entry block we look into (instructions).
constexpr int kMaxEntryInstructions = 32;

int ArgumentIndex(unsigned reg) {
  switch (reg) {
    case X86_REG_RDI:
    case X86_REG_EDI:
    case X86_REG_DI:
    case X86_REG_DIL:
      return 0;
    case X86_REG_RSI:
    case X86_REG_ESI:
    case X86_REG_SI:
    case X86_REG_SIL:
      return 1;
    case X86_REG_RDX:
    case X86_REG_EDX:
    case X86_REG_DX:
    case X86_REG_DL:
    case X86_REG_DH:
      return 2;
    case X86_REG_RCX:
    case X86_REG_ECX:
    case X86_REG_CX:
    case X86_REG_CL:
    case X86_REG_CH:
      return 3;
    case X86_REG_R8:
    case X86_REG_R8D:
    case X86_REG_R8W:
    case X86_REG_R8B:
      return 4;
    case X86_REG_R9:
    case X86_REG_R9D:
    case X86_REG_R9W:
    case X86_REG_R9B:
      return 5;
    case X86_REG_RAX:
    case X86_REG_EAX:
    case X86_REG_AX:
    case X86_REG_AL:
    case X86_REG_AH:
      return 6;
    default:
      return -1;
  }
}

bool InGroup(const cs_insn& insn, uint8_t group) {
  const cs_detail* d = insn.detail;
  return std::find(d->groups, d->groups + d->groups_count, group) != d->groups + d->groups_count;
}

// Instructions after which execution does not continue with the next instruction
// (a call continues, but only when it returns; see FallsThrough).
bool TransfersControl(const cs_insn& insn) {
  if (InGroup(insn, X86_GRP_JUMP) || InGroup(insn, X86_GRP_CALL) || InGroup(insn, X86_GRP_RET) ||
      InGroup(insn, X86_GRP_INT) || InGroup(insn, X86_GRP_IRET))
    return true;
  switch (insn.id) {
    case X86_INS_UD2:
    case X86_INS_HLT:
    case X86_INS_INT3:
    case X86_INS_SYSCALL:
    case X86_INS_SYSENTER:
    case X86_INS_INTO:
      return true;
    default:
      return false;
  }
}

// The target of a direct call/jmp/jcc/loop, if this is one.
std::optional<uint64_t> DirectTarget(const cs_insn& insn) {
  if (!InGroup(insn, X86_GRP_JUMP) && !InGroup(insn, X86_GRP_CALL)) return std::nullopt;
  const cs_x86& x86 = insn.detail->x86;
  if (x86.op_count != 1 || x86.operands[0].type != X86_OP_IMM) return std::nullopt;
  return static_cast<uint64_t>(x86.operands[0].imm);
}

bool IsIndirectJump(const cs_insn& insn) { return InGroup(insn, X86_GRP_JUMP) && !DirectTarget(insn).has_value(); }

std::string Describe(const cs_insn& insn) {
  std::string text = insn.mnemonic;
  if (insn.op_str[0] != '\0') text += fmt::format(" {}", insn.op_str);
  return text;
}

enum class RefKind { kCall, kJump, kConditionalJump, kOperand, kData, kRelocation, kLoader, kUnverified };

struct Reference {
  uint64_t at = 0;      // instruction or datum holding the reference
  uint64_t target = 0;  // the address it reaches
  RefKind kind = RefKind::kUnverified;
  uint8_t size = 0;  // instruction bytes (code references)
  std::string what;  // "lea 0x10f6(%rip), %rdi", ".data.rel.ro", ...
};

std::string DescribeReference(const Reference& ref) {
  switch (ref.kind) {
    case RefKind::kCall:
      return fmt::format("a call at {:#x}", ref.at);
    case RefKind::kJump:
      return fmt::format("a jump at {:#x}", ref.at);
    case RefKind::kConditionalJump:
      return fmt::format("a conditional jump at {:#x} ({})", ref.at, ref.what);
    case RefKind::kOperand:
      return fmt::format("'{}' at {:#x}", ref.what, ref.at);
    case RefKind::kData:
      return fmt::format("a pointer in {} at {:#x}", ref.what, ref.at);
    case RefKind::kRelocation:
      return fmt::format("a relocation of {:#x} ({})", ref.at, ref.what);
    case RefKind::kLoader:
      return ref.what;
    case RefKind::kUnverified:
      return fmt::format("bytes at {:#x} that could not be decoded", ref.at);
  }
  return "?";
}

struct Region {
  uint64_t address = 0;
  uint64_t size = 0;
  const uint8_t* data = nullptr;
  std::string name;
  uint32_t type = 0;
  bool contains(uint64_t a) const { return a >= address && a - address < size; }
};

// Addresses to look for, as a bitmap over the code span plus the ranges they came from.
class TargetSet {
 public:
  TargetSet(uint64_t low, uint64_t high) : low_(low), high_(high), bits_((high - low + 63) / 64) {}
  void Add(uint64_t first, uint64_t last) {
    for (uint64_t a = std::max(first, low_); a <= last && a < high_; ++a)
      bits_[(a - low_) / 64] |= uint64_t{1} << ((a - low_) % 64);
    ranges_.push_back({first, last});
  }
  bool Has(uint64_t a) const { return a >= low_ && a < high_ && ((bits_[(a - low_) / 64] >> ((a - low_) % 64)) & 1); }
  const std::vector<std::pair<uint64_t, uint64_t>>& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }

 private:
  uint64_t low_, high_;
  std::vector<uint64_t> bits_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

// Why an exported function may be entered from another module ("" if no known module
// imports it; `note` then says what the conclusion rests on).
std::string ExportedWhy(const Symbol& fn, const OtherModules* others, std::string* note) {
  if (!others) return "it is exported (.dynsym): other modules may call it";
  for (const auto& [path, names] : others->imports)
    if (std::binary_search(names.begin(), names.end(), fn.name))
      return fmt::format("it is exported (.dynsym) and {} imports it: calls from there would be missed", path);
  *note = fmt::format(
      "exported (.dynsym) but imported by none of the target's {} other modules; a "
      "library loaded later that calls it would be missed, --exact-entry keeps the entry",
      others->imports.size());
  return "";
}

}  // namespace

const char* ArgumentRegisterName(int index) { return index >= 0 && index < 7 ? kArgumentRegisters[index] : "?"; }

struct ProbeRelocator::Impl {
  const ElfFile& elf;
  csh cs = 0;
  cs_insn* insn = nullptr;
  std::vector<Region> code;  // executable sections, by address
  std::vector<Region> data;  // other allocated sections with contents
  std::unordered_set<uint64_t> exported;
  std::vector<Reference> loader_calls;                   // program entry, DT_INIT, DT_FINI
  std::vector<std::pair<uint64_t, uint64_t>> relocated;  // (place, value), ET_DYN
  std::vector<std::string> relocation_section;           // parallel to `relocated`
  bool absolute_addresses = false;                       // ET_EXEC or text relocations: addresses appear as-is
  struct Flow {
    bool understood = true;      // decoded completely
    uint64_t indirect_jump = 0;  // address of an indirect jump, 0 if none
    std::string why;             // what is wrong, when !understood or indirect_jump
  };
  std::unordered_map<uint64_t, Flow> flows;
  std::string budget_note;  // why the last Scan gave up

  explicit Impl(const ElfFile& file) : elf(file) {}
  ~Impl() {
    if (insn) cs_free(insn, 1);
    if (cs) cs_close(&cs);
  }

  Result<void> Load();
  const Region* CodeRegion(uint64_t address) const {
    auto it =
        std::upper_bound(code.begin(), code.end(), address, [](uint64_t a, const Region& r) { return a < r.address; });
    if (it == code.begin()) return nullptr;
    --it;
    return it->contains(address) ? &*it : nullptr;
  }
  std::optional<uint64_t> ReadWord(uint64_t address) const {
    for (const Region& r : data)
      if (r.data && r.contains(address) && address + 8 <= r.address + r.size) {
        uint64_t value;
        std::memcpy(&value, r.data + (address - r.address), 8);
        return value;
      }
    return std::nullopt;
  }

  // Decodes [begin, end) calling f(insn) until it returns false. Returns the address of the
  // first undecodable byte, or 0 when everything decoded (or f stopped).
  template <typename F>
  uint64_t Decode(uint64_t begin, uint64_t end, F&& f) {
    const Region* region = CodeRegion(begin);
    if (!region) return begin;
    end = std::min(end, region->address + region->size);
    const uint8_t* p = region->data + (begin - region->address);
    size_t size = end > begin ? end - begin : 0;
    uint64_t address = begin;
    while (size > 0) {
      if (!cs_disasm_iter(cs, &p, &size, &address, insn)) return address;
      if (!f(*insn)) return 0;
    }
    return 0;
  }

  CodeLocation Locate(uint64_t address) {
    CodeLocation location;
    location.address = address;
    if (auto offset = elf.AddressToFileOffset(address)) location.file_offset = *offset;
    if (const Region* r = CodeRegion(address)) {
      size_t n = std::min<uint64_t>(16, r->address + r->size - address);
      location.instruction = ClassifyProbeInstruction({r->data + (address - r->address), n});
    }
    return location;
  }

  const Flow& FlowOf(const Symbol& fn);
  // The first emulated instruction after `begin` in the basic block `begin` starts.
  struct BlockWalk {
    std::optional<uint64_t> point;
    std::string skipped;
    ArgumentMask written = 0;
    bool writes_memory = false;
    std::string why_not;
  };
  BlockWalk WalkBlock(uint64_t begin, uint64_t end);
  EntryBlockPoint EntryBlock(const Symbol& fn);
  std::string FallThroughInto(const Symbol& fn);
  // Sets *over_budget (and returns nothing) when verifying the candidates would
  // disassemble more than kDecodeBudgetBytes.
  std::vector<Reference> Scan(const TargetSet& targets, bool* over_budget);
  void DecodeReferences(uint64_t begin, uint64_t end, const TargetSet& targets, std::vector<Reference>* out,
                        const std::vector<uint64_t>& hits);
};

Result<void> ProbeRelocator::Impl::Load() {
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
    return MakeError("cannot initialise the capstone x86-64 disassembler");
  cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
  cs_option(cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);  // as objdump and the rest of looptrace
  insn = cs_malloc(cs);

  Elf* e = elf.elf();
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(e, &ehdr)) return MakeError("cannot read the ELF header of " + elf.path());
  if (ehdr.e_machine != EM_X86_64) return MakeError(fmt::format("{} is not an x86-64 binary", elf.path()));
  absolute_addresses = ehdr.e_type == ET_EXEC;
  if (ehdr.e_entry)
    loader_calls.push_back({ehdr.e_entry, ehdr.e_entry, RefKind::kLoader, 0, "the program's entry point"});
  size_t shstrndx = 0;
  elf_getshdrstrndx(e, &shstrndx);
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    const char* raw_name = elf_strptr(e, shstrndx, shdr.sh_name);
    std::string name = raw_name ? raw_name : "";
    if (shdr.sh_type == SHT_DYNSYM) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
      for (size_t i = 0; d && i < count; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(d, static_cast<int>(i), &sym) && sym.st_shndx != SHN_UNDEF && sym.st_value)
          exported.insert(sym.st_value);
      }
    }
    if (shdr.sh_type == SHT_DYNAMIC) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
      for (size_t i = 0; d && i < count; ++i) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(d, static_cast<int>(i), &dyn)) continue;
        if (dyn.d_tag == kDtInit || dyn.d_tag == kDtFini)
          loader_calls.push_back(
              {dyn.d_un.d_ptr, dyn.d_un.d_ptr, RefKind::kLoader, 0,
               dyn.d_tag == kDtInit ? "the dynamic loader (DT_INIT)" : "the dynamic loader (DT_FINI)"});
        if (dyn.d_tag == kDtTextrel || (dyn.d_tag == kDtFlags && (dyn.d_un.d_val & kDfTextrel)))
          absolute_addresses = true;
      }
    }
    if (shdr.sh_type == SHT_RELA && ehdr.e_type == ET_DYN) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      Elf_Scn* symtab = elf_getscn(e, shdr.sh_link);
      Elf_Data* syms = symtab ? elf_getdata(symtab, nullptr) : nullptr;
      size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
      for (size_t i = 0; d && i < count; ++i) {
        GElf_Rela rela;
        if (!gelf_getrela(d, static_cast<int>(i), &rela)) continue;
        const uint32_t type = GELF_R_TYPE(rela.r_info);
        uint64_t value = 0;
        if (type == kRelative || type == kIrelative) {
          value = static_cast<uint64_t>(rela.r_addend);
        } else if (type == kAbs64 || type == kGlobDat || type == kJumpSlot) {
          GElf_Sym sym;
          if (!syms || !gelf_getsym(syms, static_cast<int>(GELF_R_SYM(rela.r_info)), &sym) || sym.st_shndx == SHN_UNDEF)
            continue;
          value = sym.st_value + static_cast<uint64_t>(rela.r_addend);
        } else {
          continue;
        }
        relocated.emplace_back(rela.r_offset, value);
        relocation_section.push_back(name);
      }
    }
    if (!(shdr.sh_flags & SHF_ALLOC) || shdr.sh_type == SHT_NOBITS || shdr.sh_size == 0) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    Region region{shdr.sh_addr, shdr.sh_size, d ? static_cast<const uint8_t*>(d->d_buf) : nullptr, name, shdr.sh_type};
    if (region.data && d->d_size < region.size) region.size = d->d_size;
    if ((shdr.sh_flags & SHF_EXECINSTR) && shdr.sh_type == SHT_PROGBITS && region.data)
      code.push_back(region);
    else
      data.push_back(region);
  }
  std::sort(code.begin(), code.end(), [](const Region& a, const Region& b) { return a.address < b.address; });
  // RELR (packed relative relocations): the addend is the word at each place.
  for (const Region& r : data) {
    if (r.type != SHT_RELR || !r.data || ehdr.e_type != ET_DYN) continue;
    uint64_t where = 0;
    for (uint64_t off = 0; off + 8 <= r.size; off += 8) {
      uint64_t entry;
      std::memcpy(&entry, r.data + off, 8);
      auto add = [&](uint64_t place) {
        if (auto value = ReadWord(place)) {
          relocated.emplace_back(place, *value);
          relocation_section.push_back(r.name);
        }
      };
      if ((entry & 1) == 0) {
        add(entry);
        where = entry + 8;
      } else {
        for (int bit = 0; bit < 63; ++bit)
          if ((entry >> (bit + 1)) & 1) add(where + 8 * static_cast<uint64_t>(bit));
        where += 63 * 8;
      }
    }
  }
  return {};
}

const ProbeRelocator::Impl::Flow& ProbeRelocator::Impl::FlowOf(const Symbol& fn) {
  auto [it, fresh] = flows.try_emplace(fn.address);
  if (!fresh) return it->second;
  Flow& flow = it->second;
  // The function and its hot/cold split part (gcc's "fn.cold"), which jumps back into it.
  std::vector<const Symbol*> parts = {&fn};
  for (const Symbol* cold : elf.FindFunctions(fn.name + ".cold"))
    if (cold->size) parts.push_back(cold);
  for (const Symbol* part : parts) {
    // Most functions have no byte sequence that could encode an indirect jmp (ff /4, ff /5):
    // those need no disassembly (capstone decodes ~0.5 M instructions/s here).
    const Region* region = CodeRegion(part->address);
    if (region && part->address + part->size <= region->address + region->size) {
      const uint8_t* bytes = region->data + (part->address - region->address);
      bool maybe = false;
      for (uint64_t k = 0; k + 1 < part->size && !maybe; ++k)
        maybe = bytes[k] == 0xff && (((bytes[k + 1] >> 3) & 7) == 4 || ((bytes[k + 1] >> 3) & 7) == 5);
      if (!maybe) continue;
    }
    uint64_t bad = Decode(part->address, part->address + part->size, [&](const cs_insn& i) {
      if (IsIndirectJump(i)) {
        flow.indirect_jump = i.address;
        flow.why = fmt::format("{} has an indirect jump at {:#x} ('{}'), whose targets are unknown", part->demangled,
                               i.address, Describe(i));
        return false;
      }
      return true;
    });
    if (bad) {
      flow.understood = false;
      flow.why = fmt::format("{} has bytes at {:#x} that could not be decoded", part->demangled, bad);
    }
    if (!flow.understood || flow.indirect_jump) break;
  }
  return flow;
}

ProbeRelocator::Impl::BlockWalk ProbeRelocator::Impl::WalkBlock(uint64_t begin, uint64_t end) {
  BlockWalk walk;
  int count = 0;
  uint64_t bad = Decode(begin, end, [&](const cs_insn& i) {
    const InstructionInfo info = ClassifyProbeInstruction({i.bytes, i.size});
    if (count > 0 && info.cost == ProbeCost::kEmulated) {
      walk.point = i.address;
      return false;
    }
    if (TransfersControl(i)) {
      walk.why_not = fmt::format("the block ends at '{}' (+{:#x}) before any emulated instruction", Describe(i),
                                 i.address - begin);
      return false;
    }
    if (++count > kMaxEntryInstructions) {
      walk.why_not = fmt::format("no emulated instruction in the block's first {} instructions", kMaxEntryInstructions);
      return false;
    }
    if (!walk.skipped.empty()) walk.skipped += ", ";
    walk.skipped += i.mnemonic;
    cs_regs reads, writes;
    uint8_t read_count = 0, write_count = 0;
    if (cs_regs_access(cs, &i, reads, &read_count, writes, &write_count) != CS_ERR_OK) {
      walk.written = kAllArguments;
      walk.writes_memory = true;
    }
    for (uint8_t w = 0; w < write_count; ++w)
      if (int arg = ArgumentIndex(writes[w]); arg >= 0) walk.written |= 1u << arg;
    const cs_x86& x86 = i.detail->x86;
    for (uint8_t o = 0; o < x86.op_count; ++o) {
      const cs_x86_op& op = x86.operands[o];
      if (op.type == X86_OP_MEM && (op.access & CS_AC_WRITE) && op.mem.base != X86_REG_RSP) walk.writes_memory = true;
    }
    return true;
  });
  if (!walk.point && walk.why_not.empty()) {
    walk.why_not =
        bad ? fmt::format("bytes at {:#x} could not be decoded", bad) : "no emulated instruction in the block";
  }
  return walk;
}

EntryBlockPoint ProbeRelocator::Impl::EntryBlock(const Symbol& fn) {
  EntryBlockPoint result;
  if (fn.size == 0) {
    result.why_not = "its size is unknown";
    return result;
  }
  BlockWalk walk = WalkBlock(fn.address, fn.address + fn.size);
  result.skipped = walk.skipped;
  result.written_arguments = walk.written & ~kReturnRegister;
  result.writes_memory = walk.writes_memory;
  if (!walk.point) {
    result.why_not = walk.why_not;
    size_t at = result.why_not.find("the block ");
    if (at == 0) result.why_not.replace(0, 9, "the entry block");
    return result;
  }
  const std::optional<uint64_t> point = walk.point;
  // Another symbol inside the skipped range is an entry of its own.
  const auto& functions = elf.functions();
  auto it = std::upper_bound(functions.begin(), functions.end(), fn.address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (it != functions.end() && it->address <= *point) {
    result.why_not = fmt::format("symbol {} starts at +{:#x}, among the skipped instructions", it->demangled,
                                 it->address - fn.address);
    return result;
  }
  const Flow& flow = FlowOf(fn);
  if (!flow.understood || flow.indirect_jump) {
    result.why_not = flow.why;
    return result;
  }
  result.point = Locate(*point);
  return result;
}

// Why code before `fn` might run into it without a call ("" if it cannot).
std::string ProbeRelocator::Impl::FallThroughInto(const Symbol& fn) {
  const Region* region = CodeRegion(fn.address);
  if (!region) return "it is not in an executable section";
  if (fn.address == region->address) return "";
  const auto& functions = elf.functions();
  auto it = std::lower_bound(functions.begin(), functions.end(), fn.address,
                             [](const Symbol& s, uint64_t a) { return s.address < a; });
  const Symbol* previous = nullptr;
  while (it != functions.begin()) {
    --it;
    if (it->size && region->contains(it->address)) {
      previous = &*it;
      break;
    }
  }
  if (!previous || previous->address + previous->size > fn.address)
    return "the code before it is not a function the disassembler can delimit";
  std::string mnemonic;
  bool stops = false;
  uint64_t bad = Decode(previous->address, previous->address + previous->size, [&](const cs_insn& i) {
    // Only the last instruction counts: ret, an unconditional jump, a trap, or a call (a
    // call last in a function is a call to a noreturn function).
    stops = InGroup(i, X86_GRP_RET) || i.id == X86_INS_JMP || InGroup(i, X86_GRP_CALL) || i.id == X86_INS_UD2 ||
            i.id == X86_INS_HLT || i.id == X86_INS_INT3;
    mnemonic = Describe(i);
    return true;
  });
  if (bad || !stops)
    return fmt::format("{} before it may fall through into it (it ends with '{}')", previous->demangled, mnemonic);
  return "";
}

void ProbeRelocator::Impl::DecodeReferences(uint64_t begin, uint64_t end, const TargetSet& targets,
                                            std::vector<Reference>* out, const std::vector<uint64_t>& hits) {
  uint64_t bad = Decode(begin, end, [&](const cs_insn& i) {
    const cs_x86& x86 = i.detail->x86;
    auto direct = DirectTarget(i);
    if (direct && targets.Has(*direct)) {
      RefKind kind = InGroup(i, X86_GRP_CALL) ? RefKind::kCall
                     : i.id == X86_INS_JMP    ? RefKind::kJump
                                              : RefKind::kConditionalJump;
      out->push_back({i.address, *direct, kind, static_cast<uint8_t>(i.size), Describe(i)});
    }
    for (uint8_t o = 0; o < x86.op_count; ++o) {
      const cs_x86_op& op = x86.operands[o];
      std::optional<uint64_t> value;
      if (op.type == X86_OP_IMM && !direct && absolute_addresses) value = static_cast<uint64_t>(op.imm);
      if (op.type == X86_OP_MEM && op.mem.base == X86_REG_RIP)
        value = i.address + i.size + static_cast<uint64_t>(op.mem.disp);
      if (op.type == X86_OP_MEM && op.mem.base == X86_REG_INVALID && op.mem.index == X86_REG_INVALID)
        value = static_cast<uint64_t>(op.mem.disp);
      if (value && targets.Has(*value))
        out->push_back({i.address, *value, RefKind::kOperand, static_cast<uint8_t>(i.size), Describe(i)});
    }
    return true;
  });
  if (bad) {
    // The candidates beyond the undecodable byte stay unexplained: report them.
    for (uint64_t hit : hits)
      if (hit >= bad && hit < end) out->push_back({hit, 0, RefKind::kUnverified, 0, ""});
  }
}

// Every instruction, datum and relocation of the binary that reaches an address of
// `targets`. Code is searched byte by byte for the encodings that could (rel32 and
// rip-relative displacements, rel8 branches nearby, absolute values where addresses are
// absolute); each function holding a candidate is then disassembled from its start to
// keep only real instructions.
std::vector<Reference> ProbeRelocator::Impl::Scan(const TargetSet& targets, bool* over_budget) {
  *over_budget = false;
  std::vector<Reference> refs;
  if (targets.empty()) return refs;
  std::vector<uint64_t> hits;
  for (const Region& r : code) {
    const uint8_t* p = r.data;
    for (uint64_t i = 1; i + 4 <= r.size; ++i) {
      int32_t disp;
      std::memcpy(&disp, p + i, 4);
      const uint64_t next = r.address + i + 4 + static_cast<uint64_t>(static_cast<int64_t>(disp));
      const uint8_t op = p[i - 1];
      // call/jmp rel32 (e8, e9) and jcc rel32 (0f 8x) end with their displacement; a
      // rip-relative operand's ModRM (mod 00, r/m 101) precedes its displacement, which an
      // immediate of 1, 2 or 4 bytes may follow.
      const bool branch = op == 0xe8 || op == 0xe9 || (i >= 2 && p[i - 2] == 0x0f && (op & 0xf0) == 0x80);
      const bool rip_relative = (op & 0xc7) == 0x05;
      if ((branch && targets.Has(next)) ||
          (rip_relative &&
           (targets.Has(next) || targets.Has(next + 1) || targets.Has(next + 2) || targets.Has(next + 4))) ||
          (absolute_addresses && targets.Has(static_cast<uint32_t>(disp)))) {
        hits.push_back(r.address + i);
      }
    }
    for (auto [first, last] : targets.ranges()) {
      // rel8 branches (jmp, jcc, loop, jrcxz) reach 128 bytes either way.
      if (last + 126 < r.address || first > r.address + r.size + 129) continue;
      uint64_t from = first > r.address + 129 ? first - 129 : r.address;
      for (uint64_t j = from; j + 1 < r.address + r.size && j <= last + 126; ++j) {
        const uint8_t op = p[j - r.address];
        if (op != 0xeb && !(op >= 0x70 && op <= 0x7f) && !(op >= 0xe0 && op <= 0xe3)) continue;
        const uint64_t to =
            j + 2 + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(p[j + 1 - r.address])));
        if (to >= first && to <= last) hits.push_back(j);
      }
    }
  }
  std::sort(hits.begin(), hits.end());
  hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
  // Each function (or stretch of unnamed code) holding a candidate, disassembled once.
  struct Stretch {
    uint64_t begin, end;
    std::vector<uint64_t> hits;
  };
  std::vector<Stretch> stretches;
  std::set<uint64_t> seen;
  uint64_t bytes = 0;
  for (size_t h = 0; h < hits.size(); ++h) {
    const uint64_t hit = hits[h];
    uint64_t begin = 0, end = 0;
    const Symbol* fn = elf.FindFunctionByAddress(hit);
    if (fn && fn->size) {
      begin = fn->address;
      end = fn->address + fn->size;
    } else {
      // Unnamed code (a PLT, padding): decode from the end of the previous function.
      const Region* region = CodeRegion(hit);
      if (!region) continue;
      begin = region->address;
      const auto& functions = elf.functions();
      auto it = std::upper_bound(functions.begin(), functions.end(), hit,
                                 [](uint64_t a, const Symbol& s) { return a < s.address; });
      end = it != functions.end() && it->address <= region->address + region->size ? it->address
                                                                                   : region->address + region->size;
      while (it != functions.begin()) {
        --it;
        if (it->size && it->address + it->size <= hit && region->contains(it->address)) {
          begin = std::max(begin, it->address + it->size);
          break;
        }
      }
    }
    if (!seen.insert(begin).second) continue;
    Stretch stretch{begin, end, {}};
    for (size_t k = h; k < hits.size() && hits[k] < end; ++k) stretch.hits.push_back(hits[k]);
    bytes += end - begin;
    stretches.push_back(std::move(stretch));
  }
  if (bytes > kDecodeBudgetBytes) {
    *over_budget = true;
    budget_note = fmt::format(
        "checking every candidate reference would disassemble {:.1f} MiB of code, over "
        "the {} MiB budget",
        static_cast<double>(bytes) / (1 << 20), kDecodeBudgetBytes >> 20);
    return refs;
  }
  for (const Stretch& stretch : stretches) DecodeReferences(stretch.begin, stretch.end, targets, &refs, stretch.hits);
  // Data: pointers stored as-is (ET_EXEC), or relocated (ET_DYN).
  if (absolute_addresses) {
    for (const Region& r : data) {
      if (!r.data || r.type == SHT_NOTE || r.type == SHT_DYNSYM || r.type == SHT_SYMTAB || r.type == SHT_GNU_HASH ||
          r.type == SHT_HASH || r.type == SHT_GNU_versym || r.type == SHT_GNU_verdef || r.type == SHT_GNU_verneed ||
          r.type == SHT_STRTAB || r.name == ".eh_frame" || r.name == ".eh_frame_hdr" || r.name == ".gcc_except_table")
        continue;
      const uint64_t start = (r.address + 3) & ~uint64_t{3};
      for (uint64_t a = start; a + 4 <= r.address + r.size; a += 4) {
        uint32_t word;
        std::memcpy(&word, r.data + (a - r.address), 4);
        if (targets.Has(word)) refs.push_back({a, word, RefKind::kData, 0, r.name});
      }
    }
  }
  for (size_t i = 0; i < relocated.size(); ++i)
    if (targets.Has(relocated[i].second))
      refs.push_back({relocated[i].first, relocated[i].second, RefKind::kRelocation, 0, relocation_section[i]});
  for (const Reference& call : loader_calls)
    if (targets.Has(call.target)) refs.push_back(call);
  return refs;
}

ProbeRelocator::ProbeRelocator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProbeRelocator::~ProbeRelocator() = default;

Result<std::unique_ptr<ProbeRelocator>> ProbeRelocator::Create(const ElfFile& elf) {
  auto impl = std::make_unique<Impl>(elf);
  RETURN_IF_ERROR(impl->Load());
  return std::unique_ptr<ProbeRelocator>(new ProbeRelocator(std::move(impl)));
}

Result<std::vector<std::string>> ReadDynamicImports(const std::string& path) {
  ASSIGN_OR_RETURN(ElfFile elf, ElfFile::Open(path));
  std::vector<std::string> names;
  Elf* e = elf.elf();
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
    for (size_t i = 1; d && i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(d, static_cast<int>(i), &sym) || sym.st_shndx != SHN_UNDEF) continue;
      if (const char* name = elf_strptr(e, shdr.sh_link, sym.st_name); name && *name) names.emplace_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<RelocationAnalysis> ProbeRelocator::Analyze(std::span<const Symbol* const> functions,
                                                        const OtherModules* others) {
  Impl& m = *impl_;
  std::vector<RelocationAnalysis> results(functions.size());
  if (m.code.empty()) {
    for (auto& r : results) {
      r.entry_block.why_not = r.call_sites.why_not = "the binary has no executable section";
    }
    return results;
  }
  const uint64_t low = m.code.front().address;
  const uint64_t high = m.code.back().address + m.code.back().size;

  // Pass 1: references to the entries (call sites) and to the skipped instructions.
  TargetSet targets(low, high);
  std::unordered_map<uint64_t, std::vector<size_t>> by_entry;
  std::vector<std::tuple<uint64_t, uint64_t, size_t>> skipped;  // (first, last, index)
  for (size_t i = 0; i < functions.size(); ++i) {
    const Symbol& fn = *functions[i];
    RelocationAnalysis& r = results[i];
    r.entry_block = m.EntryBlock(fn);
    if (r.entry_block.point) {
      targets.Add(fn.address + 1, r.entry_block.point->address);
      skipped.emplace_back(fn.address + 1, r.entry_block.point->address, i);
    }
    std::string& why = r.call_sites.why_not;
    if (fn.is_ifunc)
      why = "it is an IFUNC resolver";
    else if (m.exported.contains(fn.address))
      why = ExportedWhy(fn, others, &r.call_sites.note);
    if (why.empty()) why = m.FallThroughInto(fn);
    if (why.empty()) {
      targets.Add(fn.address, fn.address);
      by_entry[fn.address].push_back(i);
    }
  }
  std::sort(skipped.begin(), skipped.end());
  bool over_budget = false;
  std::vector<Reference> refs = m.Scan(targets, &over_budget);
  if (over_budget) {
    // Give up the call sites (they need the most checking), then try the entry blocks alone.
    for (auto& [entry, indices] : by_entry)
      for (size_t i : indices) results[i].call_sites.why_not = m.budget_note;
    by_entry.clear();
    TargetSet blocks(low, high);
    for (auto& [first, last, i] : skipped) blocks.Add(first, last);
    refs = m.Scan(blocks, &over_budget);
    if (over_budget) {
      for (auto& [first, last, i] : skipped) {
        results[i].entry_block.point.reset();
        results[i].entry_block.why_not = m.budget_note;
      }
      skipped.clear();
    }
  }
  for (const Reference& ref : refs) {
    if (auto it = by_entry.find(ref.target); it != by_entry.end()) {
      for (size_t i : it->second) {
        CallSites& cs = results[i].call_sites;
        if (ref.kind == RefKind::kCall || ref.kind == RefKind::kJump) {
          CallSite site;
          site.site = m.Locate(ref.at);
          site.tail_call = ref.kind == RefKind::kJump;
          if (const Symbol* caller = m.elf.FindFunctionByAddress(ref.at)) site.caller = caller->demangled;
          cs.sites.push_back(std::move(site));
          // the after-call candidate is the next instruction: remember its address
          cs.sites.back().after = CodeLocation{ref.at + ref.size, 0, {}};
        } else if (cs.why_not.empty()) {
          cs.why_not = "it is reached by " + DescribeReference(ref) +
                       (ref.kind == RefKind::kConditionalJump ? "" : ", not only by direct calls");
          if (ref.kind == RefKind::kOperand || ref.kind == RefKind::kData || ref.kind == RefKind::kRelocation)
            cs.why_not =
                "its address is taken: " + DescribeReference(ref) + " (calls through pointers would be missed)";
        }
      }
      continue;
    }
    // A reference into a skipped range. Ranges of different functions do not overlap;
    // aliases of one function share theirs.
    auto it = std::upper_bound(skipped.begin(), skipped.end(), ref.target,
                               [](uint64_t t, const auto& s) { return t < std::get<0>(s); });
    if (it == skipped.begin()) continue;
    const uint64_t first = std::get<0>(*std::prev(it));
    while (it != skipped.begin() && std::get<0>(*std::prev(it)) == first) {
      --it;
      auto& [range_first, last, i] = *it;
      if (ref.target > last) continue;
      EntryBlockPoint& eb = results[i].entry_block;
      if (eb.point) {
        eb.why_not = fmt::format("{} reaches +{:#x}, inside the entry block", DescribeReference(ref),
                                 ref.target - functions[i]->address);
        eb.point.reset();
      }
    }
  }

  // Pass 2: the instruction after each call must be reachable only by that return.
  TargetSet afters(low, high);
  std::vector<std::tuple<uint64_t, uint64_t, CallSite*>> after_ranges;  // [after, last]
  for (size_t i = 0; i < functions.size(); ++i) {
    CallSites& cs = results[i].call_sites;
    if (!cs.why_not.empty()) {
      cs.sites.clear();
      continue;
    }
    std::sort(cs.sites.begin(), cs.sites.end(),
              [](const CallSite& a, const CallSite& b) { return a.site.address < b.site.address; });
    if (cs.sites.empty()) {
      cs.why_not = "it has no direct call site";
      continue;
    }
    cs.complete = true;
    const CallSite* tail = nullptr;
    for (const CallSite& s : cs.sites)
      if (s.tail_call && !tail) tail = &s;
    for (CallSite& s : cs.sites) {
      const uint64_t after = s.after ? s.after->address : 0;
      s.after.reset();
      if (s.tail_call) {
        s.after_why_not = "a tail call returns to its caller's caller";
        continue;
      }
      if (tail) {
        s.after_why_not =
            fmt::format("the function is also tail-called at {:#x}, returning elsewhere", tail->site.address);
        continue;
      }
      const Symbol* caller = m.elf.FindFunctionByAddress(s.site.address);
      if (!caller || caller->size == 0) {
        s.after_why_not = "the call is outside any sized function";
        continue;
      }
      if (after >= caller->address + caller->size) {
        s.after_why_not = fmt::format("the call is the last instruction of {}", caller->demangled);
        continue;
      }
      const Impl::Flow& flow = m.FlowOf(*caller);
      if (!flow.understood || flow.indirect_jump) {
        s.after_why_not = flow.why;
        continue;
      }
      s.after = m.Locate(after);
      uint64_t last = after;
      if (s.after->instruction.cost != ProbeCost::kEmulated) {
        Impl::BlockWalk walk = m.WalkBlock(after, caller->address + caller->size);
        if (walk.point) {
          s.after_emulated = m.Locate(*walk.point);
          s.after_skipped = walk.skipped;
          s.after_written = walk.written;
          s.after_writes_memory = walk.writes_memory;
          last = *walk.point;
        }
      }
      afters.Add(after, last);
      after_ranges.emplace_back(after, last, &s);
    }
  }
  std::sort(after_ranges.begin(), after_ranges.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::vector<Reference> after_refs = m.Scan(afters, &over_budget);
  if (over_budget) {
    for (auto& [first, last, site] : after_ranges) {
      site->after.reset();
      site->after_emulated.reset();
      site->after_why_not = m.budget_note;
    }
    after_ranges.clear();
  }
  for (const Reference& ref : after_refs) {
    // The ranges of different sites do not overlap (each ends before the next call).
    auto it = std::upper_bound(after_ranges.begin(), after_ranges.end(), ref.target,
                               [](uint64_t t, const auto& r) { return t < std::get<0>(r); });
    if (it == after_ranges.begin()) continue;
    auto& [first, last, s] = *std::prev(it);
    if (ref.target > last) continue;
    if (ref.target == first) {
      if (!s->after) continue;
      s->after.reset();
      s->after_emulated.reset();
      s->after_why_not = DescribeReference(ref) + " reaches it as well";
    } else if (s->after_emulated) {
      s->after_emulated.reset();
    }
  }
  return results;
}

}  // namespace looptrace::symbols
