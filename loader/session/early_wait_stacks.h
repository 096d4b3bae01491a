// The stacks of the loop thread's early waits that turn out long (issue 32): BPF takes none at
// such a switch-out (LT_STACK_DEFERRED; a busy handler's many short waits each cost a walk) and
// wakes the loader once one still waits at the early age (LT_RECORD_WAIT_OUTLIVED). Its user
// stack is then read from outside, as a stall snapshot reads a waiting thread: unwound from the
// registers BPF kept at its switch-out over its stack memory, unchanged while it waits, with
// its runtime's frames read from the process.
#pragma once

#include <cstdint>
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

}  // namespace looptrace::loader
