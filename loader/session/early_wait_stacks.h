// The stacks of the loop thread's early waits that turn out long (issue 32): BPF takes none at
// such a switch-out (LT_STACK_DEFERRED; a busy handler's many short waits each cost a walk) and
// wakes the loader once one still waits at the early age (LT_RECORD_WAIT_OUTLIVED). Its user
// stack is then read from outside, as a stall snapshot reads a waiting thread: unwound from the
// registers BPF kept at its switch-out over its stack memory, unchanged while it waits, with
// its runtime's frames read from the process.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>

#include "loader/bpf/bpf_session.h"
#include "loader/decode/stack_resolver.h"
#include "loader/runtimes/interpreter.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/event.h"

namespace looptrace::loader {

class EarlyWaitStacks {
 public:
  EarlyWaitStacks(const BpfSession* bpf, StackResolver* stacks, Stats* stats)
      : bpf_(bpf), stacks_(stacks), stats_(stats) {}

  // Whether a session can defer them: no runtime frames to read, or a runtime that reads its
  // threads' frames from the process itself, shown in its default view (not spliced into the
  // native stack, which only BPF's walk does).
  static bool CanDefer(const InterpreterSupport* interpreter, bool native_frames);

  // The target's runtime, whose frames take the place of its interpreter's native ones.
  void SetInterpreter(InterpreterSupport* interpreter) { interpreter_ = interpreter; }

  // The stack of the wait a LT_RECORD_WAIT_OUTLIVED record names, read now, as the sample of
  // its switch-out (same thread and time); nothing when the thread ran again before it was
  // read (counted in early_wait_stacks_missed) or the record is malformed.
  std::optional<StackSample> Read(std::span<const uint8_t> raw);

 private:
  const BpfSession* bpf_;
  StackResolver* stacks_;
  Stats* stats_;
  InterpreterSupport* interpreter_ = nullptr;
};

// When BPF may defer them: not while the loader reads a file it meets for the first time
// (symbols, unwind rows: it could not read a long wait before it ends), nor until it has read
// none for kSettleNs: such reads come in bursts a few ms apart at a session's start, and a wait
// begun just before one is read only after it (1-2 of ~20 long early waits in 5 s missed so).
class EarlyWaitDeferral {
 public:
  static constexpr uint64_t kSettleNs = 250'000'000;

  // `defer(true)` lets BPF defer them from now on, `defer(false)` has it take them at the
  // switch-out; not deferring to begin with.
  explicit EarlyWaitDeferral(std::function<void(bool)> defer) : defer_(std::move(defer)) {}

  // The loader began (true) or ended (false) its reads of files first met; any thread.
  void OnLoaderBusy(bool busy, uint64_t now_ns);
  // Defers again once the loader has settled.
  void Tick(uint64_t now_ns);
  bool deferring() const;

 private:
  mutable std::mutex mutex_;
  std::function<void(bool)> defer_;
  bool deferring_ = false;
  uint64_t resume_at_ns_ = 0;  // 0: busy, or deferring already
};

}  // namespace looptrace::loader
