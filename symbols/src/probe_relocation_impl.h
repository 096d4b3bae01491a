// What the parts of ProbeRelocator share (internal to looptrace_symbols):
// probe_relocation_code.cc reads the binary and classifies x86-64 instructions,
// probe_relocation_flow.cc follows a function's control flow (entry blocks, fall-through,
// indirect jumps), probe_relocation_scan.cc finds every reference to a set of addresses,
// and probe_relocation.cc puts them together (Analyze).
#pragma once

#include <capstone/capstone.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "looptrace/symbols/probe_relocation.h"

namespace looptrace::symbols {
namespace relocation {

inline constexpr ArgumentMask kAllArguments = 0x7f;  // and %rax

// Most code Scan disassembles to verify candidate references (capstone decodes about 0.5 M
// instructions, ~2 MiB, per second on our VMs): beyond it, relocation gives up with a reason.
inline constexpr uint64_t kDecodeBudgetBytes = 4u << 20;

// Longest entry block we look into (instructions).
inline constexpr int kMaxEntryInstructions = 32;

// The argument register (index as in ArgumentMask) that `reg` is part of; -1 if none.
int ArgumentIndex(unsigned reg);
bool InGroup(const cs_insn& insn, uint8_t group);
// Instructions after which execution does not continue with the next instruction
// (a call continues, but only when it returns; see FallsThrough).
bool TransfersControl(const cs_insn& insn);
// The target of a direct call/jmp/jcc/loop, if this is one.
std::optional<uint64_t> DirectTarget(const cs_insn& insn);
bool IsIndirectJump(const cs_insn& insn);
// "mov %rdi, %rbx".
std::string Describe(const cs_insn& insn);

enum class RefKind { kCall, kJump, kConditionalJump, kOperand, kData, kRelocation, kLoader, kUnverified };

struct Reference {
  uint64_t at = 0;      // instruction or datum holding the reference
  uint64_t target = 0;  // the address it reaches
  RefKind kind = RefKind::kUnverified;
  uint8_t size = 0;  // instruction bytes (code references)
  std::string what;  // "lea 0x10f6(%rip), %rdi", ".data.rel.ro", ...
};

// "a call at 0x1234", "'lea 0x10f6(%rip), %rdi' at 0x1234", ...
std::string DescribeReference(const Reference& ref);

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

}  // namespace relocation

struct ProbeRelocator::Impl {
  using Region = relocation::Region;
  using Reference = relocation::Reference;
  using TargetSet = relocation::TargetSet;

  explicit Impl(const ElfFile& file) : elf(file) {}
  ~Impl() {
    if (insn) cs_free(insn, 1);
    if (cs) cs_close(&cs);
  }

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

  // Sections, exported addresses, the loader's entries and relocated pointers
  // (probe_relocation_code.cc).
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

  // Per function (probe_relocation_flow.cc).
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
  // References (probe_relocation_scan.cc). Sets *over_budget (and returns nothing) when
  // verifying the candidates would disassemble more than kDecodeBudgetBytes.
  std::vector<Reference> Scan(const TargetSet& targets, bool* over_budget);
  void DecodeReferences(uint64_t begin, uint64_t end, const TargetSet& targets, std::vector<Reference>* out,
                        const std::vector<uint64_t>& hits);
};

}  // namespace looptrace::symbols
