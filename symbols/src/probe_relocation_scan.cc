// ProbeRelocator: every instruction, datum and relocation of a binary that reaches one of
// a set of addresses (a function's entry, the instructions a moved probe skips).
#include <capstone/capstone.h>
#include <fmt/format.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "probe_relocation_impl.h"

namespace looptrace::symbols {
namespace relocation {

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

}  // namespace relocation

using relocation::Describe;
using relocation::DirectTarget;
using relocation::InGroup;
using relocation::kDecodeBudgetBytes;
using relocation::Reference;
using relocation::RefKind;

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

}  // namespace looptrace::symbols
