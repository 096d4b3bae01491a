// ProbeRelocator's view of a binary: its code and data sections, the addresses other
// modules and the dynamic loader may enter, and the pointers relocations write (Impl::Load);
// and what an x86-64 instruction does, as capstone decodes it.
#include <capstone/capstone.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>

#include "probe_relocation_impl.h"

namespace looptrace::symbols {
namespace {

using relocation::RefKind;

#ifndef SHT_RELR
constexpr uint32_t SHT_RELR = 19;
#endif
constexpr uint32_t kRelative = 8, kIrelative = 37, kAbs64 = 1, kGlobDat = 6, kJumpSlot = 7;
constexpr int64_t kDtInit = 12, kDtFini = 13, kDtTextrel = 22, kDtFlags = 30;
constexpr uint64_t kDfTextrel = 0x4;

}  // namespace

namespace relocation {

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

}  // namespace relocation

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

}  // namespace looptrace::symbols
