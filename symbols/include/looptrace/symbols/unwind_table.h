// Compact unwind tables compiled from a module's .eh_frame, and the walk over them.
//
// A DWARF CFI interpreter is too big for BPF, but on x86-64 almost every row of compiled
// code says the same few things: the CFA (the caller's rsp) is rsp or rbp plus a constant,
// the return address sits at CFA-8, and rbp is either unchanged or saved at CFA plus a
// constant. The OpenTelemetry eBPF profiler unwinds production binaries from such rows
// ("stack deltas"). CompileUnwindTable turns .eh_frame into sorted rows of that shape,
// keeping PLT stubs (one fixed DWARF expression) and marking everything else (signal
// trampolines, other expressions) as unsupported, so a walk stops there with a reason
// instead of guessing. TableUnwinder is the walk, in user space: the reference for a BPF
// walker reading the same rows, and checked against libdwfl's full interpreter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "looptrace/symbols/unwinder.h"
#include "looptrace/util/result.h"

namespace looptrace::symbols {

enum class CfaRule : uint8_t {
  kNoCfi,        // no FDE covers the address
  kRspOffset,    // CFA = rsp + cfa_offset
  kRbpOffset,    // CFA = rbp + cfa_offset
  kPltStub,      // CFA = rsp + cfa_offset + 8 * ((rip & 15) >= plt_threshold): lazy-binding PLT
  kUnsupported,  // a rule this table cannot express (DWARF expression, signal frame)
};

enum class RbpRule : uint8_t {
  kUnchanged,  // the caller's rbp is the current one
  kAtCfa,      // the caller's rbp is saved at CFA + rbp_offset
};

struct UnwindRow {
  uint64_t start = 0;  // first address (the module's virtual addresses) the row covers
  int32_t cfa_offset = 0;
  int32_t rbp_offset = 0;
  CfaRule cfa = CfaRule::kNoCfi;
  RbpRule rbp = RbpRule::kUnchanged;
  uint8_t plt_threshold = 0;
  bool outermost = false;  // the return address is undefined: the thread's first frame

  bool SameRuleAs(const UnwindRow& other) const {
    return cfa_offset == other.cfa_offset && rbp_offset == other.rbp_offset && cfa == other.cfa && rbp == other.rbp &&
           plt_threshold == other.plt_threshold && outermost == other.outermost;
  }
};

struct UnwindTable {
  // Sorted by start; each row lasts until the next one's start (the last one is kNoCfi).
  std::vector<UnwindRow> rows;
  size_t fdes = 0;
  uint64_t covered_bytes = 0;      // bytes of code under a row this table can walk
  uint64_t unsupported_bytes = 0;  // bytes of code under kUnsupported rows

  // The row covering `vaddr`, or nullptr before the first row.
  const UnwindRow* Find(uint64_t vaddr) const;
};

// Compiles the .eh_frame of the ELF file at `path` (found through .eh_frame_hdr's sorted
// FDE table). Errors name the file and what is missing.
Result<UnwindTable> CompileUnwindTable(const std::string& path);

// Walks a stack copy (the input of Unwinder::Unwind) with compiled tables, compiling each
// module's table once. Not thread-safe.
class TableUnwinder {
 public:
  // stop_reason is "" when the walk reached the outermost frame or a zero return address.
  Result<UnwindOutcome> Unwind(const UnwindInput& input, size_t max_frames = 256);

  // Drops what is known of the mappings of `pid` (after an exec); tables stay.
  void Forget(int pid);

  // The table of a module, compiled on first use; nullptr if it cannot be compiled.
  const UnwindTable* TableFor(const std::string& path);

  struct MappedModule {
    const UnwindTable* table = nullptr;
    uint64_t bias = 0;  // runtime address - the module's virtual address
    std::string path;   // where the mapped file was opened
  };
  // The module of an executable mapping of `pid` (a file, or the vDSO), by (pid, start,
  // inode), located and compiled once; nullptr when it has no table.
  const MappedModule* ModuleOf(int pid, const MapEntry& map);

 private:
  std::map<std::string, std::unique_ptr<UnwindTable>> tables_;  // by the file's device, inode, size, mtime
  std::map<std::tuple<int, uint64_t, uint64_t>, MappedModule> modules_;
};

}  // namespace looptrace::symbols
