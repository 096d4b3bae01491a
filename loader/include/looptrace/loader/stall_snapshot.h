// Reads everything an ANR/LAG snapshot needs from the live process and the BPF maps:
// thread states and stacks, futex waits and their owners, memory, recent CPU use.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "looptrace/loader/bpf_session.h"
#include "looptrace/loader/event_decoder.h"
#include "looptrace/symbols/kernel_symbols.h"
#include "looptrace/symbols/process_symbolizer.h"
#include "looptrace/symbols/unwinder.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/stats.h"

namespace looptrace::loader {

// Kernel stack ids -> function names (kallsyms), cached per id.
class BpfKernelStacks : public KernelStackNamer {
 public:
  explicit BpfKernelStacks(const BpfSession* bpf) : bpf_(bpf) {}
  std::vector<std::string> KernelStack(int32_t stack_id) override;
  std::vector<std::string> Names(const std::vector<uint64_t>& ips);

 private:
  const BpfSession* bpf_;
  std::optional<symbols::KernelSymbols> kallsyms_;
  bool kallsyms_tried_ = false;
  std::map<int32_t, std::vector<std::string>> cache_;
};

class SnapshotTaker {
 public:
  SnapshotTaker(pid_t pid, const BpfSession* bpf, BpfKernelStacks* kernel_stacks,
                symbols::ProcessSymbolizer* symbolizer, Stats* stats)
      : pid_(pid), bpf_(bpf), kernel_stacks_(kernel_stacks), symbolizer_(symbolizer), stats_(stats),
        unwinder_(symbols::UnwindOptions{}) {}

  // Samples the process's CPU time; call about twice a second.
  void SampleCpu(uint64_t now_ns);
  StallSnapshot Take(uint32_t tid, uint64_t message_begin_ns, bool anr, uint64_t now_ns);
  // Where incomplete snapshots are counted from now on; returns the previous counters (an
  // on-demand dump counts apart from the session's report).
  Stats* SwapStats(Stats* stats) { return std::exchange(stats_, stats); }

 private:
  std::vector<std::string> UserStack(const std::vector<uint64_t>& ips);
  // DWARF unwinding of the captured stack copy, when it is the thread's latest state.
  std::optional<std::vector<std::string>> DwarfStack(uint32_t tid, uint64_t state_since_ns);

  pid_t pid_;
  const BpfSession* bpf_;
  BpfKernelStacks* kernel_stacks_;
  symbols::ProcessSymbolizer* symbolizer_;
  Stats* stats_;
  std::deque<std::pair<uint64_t, uint64_t>> cpu_samples_;  // (monotonic ns, utime+stime ticks)
  symbols::Unwinder unwinder_;
};

}  // namespace looptrace::loader
