// Turns the user stacks BPF captured into named frames, and says why a walk ended early:
//  - frame-pointer walks (bpf_get_stack ips) and DWARF unwinding of stack copies
//    (registers + stack bytes; symbols/unwinder.h);
//  - return addresses a pending uretprobe replaced with the kernel's trampoline are put back
//    from the shadow stack BPF keeps (events.h lt_shadow_stack), in the ips and in the
//    stack bytes, so both walks pass through a probed dispatch function;
//  - every frame must lie in an executable mapping of the target, the vDSO or the uprobe
//    trampoline page (named as such); the first that does not ends the walk, counted, with
//    the reason (frame pointers missing in a module, a return address outside every
//    mapping, no CFI for a module, the stack copy too short, ...);
//  - names come from ELF symbols and DWARF (inlined frames too), the vDSO image, and for
//    JIT code from the target's perf map (/tmp/perf-PID.map, re-read when it grows).
// Used for stack samples (sampled call trees) and stall snapshots.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "looptrace/events.h"
#include "looptrace/report/stats.h"
#include "looptrace/symbols/perf_map.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/symbols/process_symbolizer.h"
#include "looptrace/symbols/unwind_table.h"
#include "looptrace/symbols/unwinder.h"
#include "looptrace/tracers/event.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

struct ResolvedFrame {
  uint64_t pc = 0;             // the sampled ip (frame 0) or a return address
  std::string module;          // basename, "[vdso]", "[jit]", "[uprobes]"
  uint64_t module_offset = 0;  // file offset (or offset in the mapping)
  std::string function;        // "" when unknown
  // No symbol: where the function holding the pc starts (link-time address, from .eh_frame).
  std::optional<uint64_t> unnamed_function;
  std::string location;  // "file:line" from DWARF, else ""
  bool inlined = false;  // inlined into the next frame

  // How a sampled tree names it: the function; else sub_ADDRESS (module), the function's start
  // as a disassembler names a function without a symbol; else module+0xOFFSET.
  std::string Name() const;
  // How a stall snapshot shows it: "pc 0x... module (function) file:line".
  std::string Describe() const;
};

struct ResolvedStack {
  std::vector<ResolvedFrame> frames;  // innermost first
  std::string stop;                   // "" = reached the outermost frame; else why it ended
  // Counted in the data quality's whole stacks: a walk not cut at the interpreter on purpose
  // (`tried`), and whether it reached main or a thread's start (`whole`).
  bool tried = false, whole = false;
};

// Why a BPF walk ended at the interpreter's code on purpose (events.h LT_WALK_AT_INTERPRETER);
// the interpreter's frames sent with the sample replace it when they are spliced in.
inline constexpr std::string_view kCutAtInterpreter = "native callers of the interpreter not walked";

class StackResolver {
 public:
  // The target's mappings, read again when a frame lies outside all of them; an error when
  // the process is gone.
  using MapsReader = std::function<Result<std::vector<symbols::MapEntry>>()>;

  // `symbolizer` names frames (shared with the loader); `stats` counts what went wrong;
  // `read_maps` reads the mappings (default: /proc/PID/maps).
  StackResolver(pid_t pid, symbols::ProcessSymbolizer* symbolizer, Stats* stats, MapsReader read_maps = {});
  ~StackResolver();
  StackResolver(const StackResolver&) = delete;
  StackResolver& operator=(const StackResolver&) = delete;

  // The session saw the target exit (its pidfd): stacks decoded from now on count as
  // samples after exit. Without it, the process is looked for every 10 ms.
  void NoteTargetExited() { process_gone_ = true; }

  // A sample side record (LT_RECORD_SAMPLE / LT_RECORD_SAMPLE_COPY) as an event; nullopt when
  // it is malformed (counted in malformed_records). `resolved`, if given, gets its frames as
  // resolved (modules, for splicing interpreter frames in).
  std::optional<StackSample> Decode(std::span<const uint8_t> raw, ResolvedStack* resolved = nullptr);

  // A frame-pointer walk's ips (innermost first) with the shadow frames in effect.
  ResolvedStack FromIps(std::span<const uint64_t> ips, std::span<const lt_shadow_frame> shadow);
  // DWARF unwinding of registers and the stack bytes from `stack_base` up.
  ResolvedStack FromCopy(const symbols::UnwindRegisters& regs, uint64_t stack_base, std::span<const uint8_t> bytes,
                         std::span<const lt_shadow_frame> shadow);
  // A thread blocked in the kernel: its user sp and pc from /proc/PID/task/TID/syscall, its
  // stack read from the process, unwound with DWARF. nullopt when it runs or is gone.
  std::optional<ResolvedStack> FromBlockedThread(uint32_t tid, std::span<const lt_shadow_frame> shadow);
  // A thread still waiting where its user registers `regs` (pc and sp at least) were kept:
  // its stack read from the process now (unchanged while it waits), unwound with DWARF.
  std::optional<ResolvedStack> FromWaitingThread(const symbols::UnwindRegisters& regs,
                                                 std::span<const lt_shadow_frame> shadow);

  // The shadow frames of `shadow` (innermost first) whose slot no longer holds the real
  // return address, read from the live process (for stacks taken now).
  std::vector<lt_shadow_frame> LiveShadow(std::span<const lt_shadow_frame> shadow);

  // Adds the counters kept elsewhere (perf map lines, replaced modules) to the stats; call
  // once at the end.
  void Finish();
  // Stack copies decoded so far: outside --dwarf-unwind, samples whose BPF walk met a library
  // that has no rows in BPF yet.
  uint64_t copies_decoded() const { return copies_decoded_; }

  // The target exec()ed: its mappings and modules are new.
  void OnExec();

 private:
  enum class Where { kFile, kVdso, kTrampoline, kJit, kInvalid };
  Where Classify(uint64_t pc, const symbols::MapEntry** map);
  const symbols::MapEntry* Find(uint64_t pc);
  bool RefreshMaps();
  // The frames at `pc` (inlined ones first), named; `lookup` is pc, or pc - 1 for a return
  // address.
  const std::vector<ResolvedFrame>& Name(uint64_t pc, uint64_t lookup, Where where, const symbols::MapEntry* map);
  std::string FramePointerStop(const ResolvedFrame* last);
  // Whether the module `last` was named from is known to keep no frame pointers (read once).
  bool KeepsNoFramePointers(const ResolvedFrame& last);
  std::string DwarfStop(const std::string& reason, const ResolvedFrame* last, uint64_t last_pc);
  bool Validate(uint64_t pc, uint64_t lookup, std::vector<ResolvedFrame>* out, std::string* stop);

  pid_t pid_;
  symbols::ProcessSymbolizer* symbolizer_;
  Stats* stats_;
  MapsReader read_maps_;
  std::vector<symbols::MapEntry> maps_;  // sorted by start
  std::chrono::steady_clock::time_point maps_read_at_{};
  bool process_gone_ = false;
  static constexpr std::chrono::milliseconds kGoneCheck{10};
  std::chrono::steady_clock::time_point gone_checked_at_{};
  symbols::TableUnwinder table_unwinder_;
  symbols::Unwinder unwinder_;
  symbols::PerfMap perf_map_;
  // The time of the sample being resolved (CLOCK_MONOTONIC, as BPF stamps it), for the JIT
  // map line in force then; kNow for stacks taken now.
  uint64_t sample_at_ns_ = symbols::PerfMap::kNow;
  std::unordered_map<uint64_t, std::vector<ResolvedFrame>> names_;   // by lookup pc
  std::map<std::string, std::optional<bool>> keeps_frame_pointers_;  // by module path
  std::unique_ptr<lt_stack_copy> copy_;                              // scratch for decoding copies
  uint64_t copies_decoded_ = 0;
  std::vector<uint8_t> bytes_;  // scratch: a stack copy with return addresses put back
  uint64_t reported_replaced_ = 0;
};

}  // namespace looptrace::loader
