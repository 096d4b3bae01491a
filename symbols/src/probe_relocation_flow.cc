// ProbeRelocator, per function: whether its control flow is understood (no indirect jump,
// every byte decoded), the first emulated instruction of a basic block, the entry block's
// point, and whether the code before a function can fall through into it.
#include <capstone/capstone.h>
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "probe_relocation_impl.h"

namespace looptrace::symbols {

using relocation::ArgumentIndex;
using relocation::Describe;
using relocation::InGroup;
using relocation::IsIndirectJump;
using relocation::kAllArguments;
using relocation::kMaxEntryInstructions;
using relocation::TransfersControl;

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

}  // namespace looptrace::symbols
