// Reads everything an ANR/LAG snapshot needs from the live process and the BPF maps:
// thread states and stacks (checked and named by the stack resolver; DWARF-unwound for the
// threads the stalled one waits for, too, with --dwarf-unwind), futex waits and their
// owners, memory, recent CPU use.
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

#include "loader/bpf/bpf_session.h"
#include "loader/decode/event_decoder.h"
#include "loader/decode/stack_resolver.h"
#include "looptrace/report/stats.h"
#include "looptrace/symbols/kernel_symbols.h"
#include "looptrace/tracers/event.h"

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
  // `stacks` names and checks user stacks; `dwarf`: --dwarf-unwind (stack copies of watched
  // threads, and of the threads the stalled one waits for); `all_threads`: --threads all.
  SnapshotTaker(pid_t pid, const BpfSession* bpf, BpfKernelStacks* kernel_stacks, StackResolver* stacks, Stats* stats,
                bool dwarf, bool all_threads)
      : pid_(pid),
        bpf_(bpf),
        kernel_stacks_(kernel_stacks),
        stacks_(stacks),
        stats_(stats),
        dwarf_(dwarf),
        all_threads_(all_threads) {}

  // Samples the process's CPU time; call about twice a second.
  void SampleCpu(uint64_t now_ns);
  // The thread that last woke `tid` (sched_waking), one the stalled thread may wait for.
  void SetLastWaker(uint32_t tid, uint32_t waker_tid) { last_waker_[tid] = waker_tid; }
  StallSnapshot Take(uint32_t tid, uint64_t message_begin_ns, bool anr, uint64_t now_ns);
  // The target's interpreter: its threads' user stacks show their interpreted frames (a
  // py-spy-style dump), under the native frames the thread is in when those are not the
  // interpreter's own. Null: none.
  void SetInterpreter(InterpreterSupport* interpreter) { interpreter_ = interpreter; }
  // Where incomplete snapshots are counted from now on; returns the previous counters (an
  // on-demand dump counts apart from the session's report).
  Stats* SwapStats(Stats* stats) { return std::exchange(stats_, stats); }

 private:
  // A thread whose switch-out into a wait took no stack (LT_STACK_AT_SNAPSHOT) and that has
  // not run since: its stacks are read now.
  static bool StillWaiting(const lt_thread_state& state);
  std::vector<std::string> WaitingKernelStack(uint32_t tid) const;
  // The user stack of thread `t`: DWARF-unwound from its stack read now when it still waits
  // where its switch-out took none, from a stack copy when there is a fresh one (or, for a
  // thread the stalled one waits for, one read now), else the frame-pointer walk.
  void UserStack(ThreadSnapshot* ts, const lt_thread_state& state, int32_t ustack, bool in_chain);
  // Replaces a thread's user stack by its interpreted frames (`native`: its native walk).
  void InterpreterStack(ThreadSnapshot* ts, const ResolvedStack* native, const std::vector<InterpreterFrame>& frames);

  pid_t pid_;
  const BpfSession* bpf_;
  BpfKernelStacks* kernel_stacks_;
  StackResolver* stacks_;
  Stats* stats_;
  bool dwarf_;
  bool all_threads_;
  InterpreterSupport* interpreter_ = nullptr;
  std::map<uint32_t, std::vector<InterpreterFrame>> interp_stacks_;  // while Take runs
  std::deque<std::pair<uint64_t, uint64_t>> cpu_samples_;            // (monotonic ns, utime+stime ticks)
  std::map<uint32_t, uint32_t> last_waker_;
};

}  // namespace looptrace::loader
