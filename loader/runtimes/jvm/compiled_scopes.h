// Which Java methods a pc of JIT-compiled code is in: an nmethod's debug info (HotSpot's
// PcDesc table and ScopeDesc stream) gives, for each pc the compiler recorded (calls,
// safepoints), the chain of scopes there: the method inlined innermost, the bytecode it is
// at, then its callers up to the nmethod's own method. A sampled pc between two records is
// given the next one's scopes, as HotSpot's own approximate lookup (and async-profiler)
// does; a return address (every caller frame's pc) is a record of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "loader/runtimes/jvm/hotspot_layout.h"

namespace looptrace::loader::jvm {

// A method (Method*) at a bytecode index (-1: none recorded, e.g. its entry).
struct Scope {
  uint64_t method = 0;
  int bci = -1;
};

// A PcDesc as the decoder needs it: its pc (from the code's start) and its scope's offset
// in the debug info stream (0: none).
struct PcDescEntry {
  int32_t pc_offset = 0;
  int32_t scope_decode_offset = 0;
};

// The scope decode offset of the record covering `pc_offset` (the first whose pc is at or
// after it), or nothing when the pc lies after the last one.
std::optional<int32_t> ScopeAt(std::span<const PcDescEntry> descs, int32_t pc_offset);

// The scope chain at `decode_offset` of the debug info stream `scopes_data`, innermost first;
// each method is an index into `metadata` (1-based, HotSpot's metadata_at). Offset 0 is the
// nmethod's own method without a bytecode. Nothing when the stream is cut, an index is out
// of range, or the outermost scope is not `nmethod_method` (the bytes are not what the
// layout says: another JDK's format): never a guessed chain.
std::optional<std::vector<Scope>> DecodeScopes(std::span<const uint8_t> scopes_data, int32_t decode_offset,
                                               std::span<const uint64_t> metadata, uint64_t nmethod_method,
                                               bool exclude_zero);

// The scopes of pcs of the target's nmethods, their debug info read once per nmethod.
class CompiledScopes {
 public:
  CompiledScopes(const HotSpotLayout& layout, Memory& memory) : layout_(layout), memory_(memory) {}

  // The scopes at `pc` in the nmethod at `nmethod`, innermost first, if it is still the one
  // compiled as `compile_id` (freed code's memory is reused by other nmethods: then
  // nothing). A chain that cannot be decoded is the nmethod's own method alone.
  std::optional<std::vector<Scope>> At(uint64_t nmethod, uint32_t compile_id, uint64_t pc);

 private:
  struct DebugInfo {
    uint32_t compile_id = 0;
    uint64_t method = 0, code_begin = 0;
    std::vector<PcDescEntry> descs;
    std::vector<uint8_t> scopes_data;
    std::vector<uint64_t> metadata;
    bool readable = false;  // descs, scopes_data and metadata were read
  };
  std::optional<DebugInfo> Read(uint64_t nmethod, uint32_t compile_id);
  std::optional<uint64_t> Pointer(uint64_t address);
  std::optional<int32_t> Int(uint64_t address);

  const HotSpotLayout& layout_;
  Memory& memory_;
  std::unordered_map<uint64_t, DebugInfo> cache_;  // by nmethod address
};

}  // namespace looptrace::loader::jvm
