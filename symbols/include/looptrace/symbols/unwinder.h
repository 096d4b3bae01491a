// User-space stack unwinding from a sample: registers + a copy of the top of the user
// stack + the process's mappings, as perf does for DWARF call graphs
// (tools/perf/util/unwind-libdw.c). Two walkers over the same input:
//  - UnwindStack: libdw's unwinder (dwfl_getthread_frames) with CFI from .eh_frame and
//    .debug_frame (in the file or its separate debug file); needs no frame pointers.
//    Stack reads are served from the copy, other reads from the mapped files.
//  - UnwindFramePointers: the rbp chain, the fast path when the target keeps frame
//    pointers (and what bpf_get_stack does in the kernel).
//
// UnwindInput is plain data so a BPF record (pt_regs fields + bytes copied from rsp) can
// fill it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "looptrace/symbols/proc_maps.h"
#include "looptrace/util/result.h"

namespace looptrace::symbols {

// x86-64 user registers, in DWARF register-number order (rax = 0 ... r15 = 15, rip = 16).
struct UnwindRegisters {
  uint64_t rax = 0;
  uint64_t rdx = 0;
  uint64_t rcx = 0;
  uint64_t rbx = 0;
  uint64_t rsi = 0;
  uint64_t rdi = 0;
  uint64_t rbp = 0;
  uint64_t rsp = 0;
  uint64_t r8 = 0;
  uint64_t r9 = 0;
  uint64_t r10 = 0;
  uint64_t r11 = 0;
  uint64_t r12 = 0;
  uint64_t r13 = 0;
  uint64_t r14 = 0;
  uint64_t r15 = 0;
  uint64_t rip = 0;
  // Bit n set: the register with DWARF number n holds a sampled value. The unwinder
  // needs rip and rsp; rbp, rbx and r12-r15 (callee-saved) let it recover callers'
  // registers; the caller-saved ones are optional.
  uint32_t valid_mask = 0;
  uint32_t reserved = 0;

  static constexpr int kCount = 17;
  static constexpr uint32_t Bit(int dwarf_regno) { return 1u << dwarf_regno; }
  // rip, rsp, rbp, rbx, r12-r15: what a sampler should capture.
  static constexpr uint32_t kNeeded =
      (1u << 16) | (1u << 7) | (1u << 6) | (1u << 3) | (1u << 12) | (1u << 13) | (1u << 14) | (1u << 15);
  static constexpr uint32_t kAll = (1u << kCount) - 1;

  bool Has(int dwarf_regno) const { return (valid_mask & Bit(dwarf_regno)) != 0; }
  // 0 for numbers outside [0, kCount).
  uint64_t Get(int dwarf_regno) const;
  // Sets a register and marks it valid; ignores numbers outside [0, kCount).
  void Set(int dwarf_regno, uint64_t value);
};
static_assert(sizeof(UnwindRegisters) == 17 * 8 + 8, "plain data, no padding");

struct UnwindInput {
  int pid = 0;
  UnwindRegisters regs;
  // User address of stack[0]; normally regs.rsp (bytes below rsp are never needed).
  uint64_t stack_base = 0;
  // A copy of the user stack from stack_base upwards, e.g. 16-64 KiB.
  std::span<const uint8_t> stack;
  // The process's mappings at the sample (from /proc/PID/maps or a recording).
  std::span<const MapEntry> maps;
};

struct UnwoundFrame {
  uint64_t pc = 0;  // the sampled rip for frame 0, then return addresses
  // The address to symbolize: pc for activations, pc - 1 for return addresses (so a call
  // at the end of a function or before an inlined block names the caller correctly).
  uint64_t lookup_pc = 0;
  bool is_activation = false;  // frame 0, or a frame interrupted by a signal
};

struct UnwindOptions {
  size_t max_frames = 256;
  // Where libdwfl looks for separate debug files with .debug_frame (libdwfl's
  // debuginfo_path syntax is built from these: the file's dir, its .debug/, each root).
  std::vector<std::string> debug_directories = {"/usr/lib/debug"};
};

// Why an unwind stopped, for counters.
struct UnwindOutcome {
  std::vector<UnwoundFrame> frames;
  // "" when the walk reached the outermost frame (e.g. _start, whose CFI marks rip
  // undefined); else what stopped it ("max frames", "stack copy exhausted", a libdwfl error).
  std::string stop_reason;
  size_t modules_reported = 0;
};

// Keeps one libdwfl session per process, so modules are opened once across samples.
// Not thread-safe.
class Unwinder {
 public:
  explicit Unwinder(UnwindOptions options = {});
  ~Unwinder();
  Unwinder(const Unwinder&) = delete;
  Unwinder& operator=(const Unwinder&) = delete;

  // DWARF CFI unwinding. An error only when not even frame 0 can be produced (no rip, no
  // rsp); partial stacks carry the reason in stop_reason.
  Result<UnwindOutcome> Unwind(const UnwindInput& input);
  // Drops the session of `pid` (its modules may have changed).
  void Forget(int pid);

 private:
  struct Session;
  Session* GetSession(const UnwindInput& input);

  UnwindOptions options_;
  std::string debuginfo_path_;
  std::vector<std::unique_ptr<Session>> sessions_;
};

// One-shot DWARF unwinding (a temporary Unwinder).
Result<std::vector<UnwoundFrame>> UnwindStack(const UnwindInput& input);

// The frame-pointer chain: frame 0 is rip, then [rbp + 8] while rbp points into the stack
// copy and grows. Stops at the end of the copy, at a return address outside every
// executable mapping (when maps are given), or after max_frames.
Result<std::vector<UnwoundFrame>> UnwindFramePointers(const UnwindInput& input, size_t max_frames = 256);

}  // namespace looptrace::symbols
