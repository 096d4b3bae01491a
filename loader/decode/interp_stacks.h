// Interpreter frames in stack samples: BPF sends the interpreter's frames of a thread
// (LT_RECORD_INTERP_STACK) right before that thread's native sample; they are named at once
// (the code objects are likeliest alive) and spliced into the sample when it comes.
//  - default view: the Python frames, innermost first, under the native frames the time is
//    spent in when they are not the interpreter's own (a C extension, `clock_nanosleep` of
//    time.sleep): what py-spy shows;
//  - merged view (--native-frames): the native stack with each run of the interpreter loop
//    (`_PyEval_EvalFrameDefault`) replaced by the interpreted frames it ran.
// Frames that cannot be named, and walks cut at the depth limit, are marked and counted.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loader/decode/stack_resolver.h"
#include "loader/runtimes/interpreter.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/event.h"

namespace looptrace::loader {

class InterpreterStacks {
 public:
  InterpreterStacks(InterpreterSupport* interpreter, Stats* stats, bool merged)
      : interpreter_(interpreter), stats_(stats), merged_(merged) {}

  // An LT_RECORD_INTERP_STACK record; false when malformed.
  bool Add(std::span<const uint8_t> raw);
  // Splices the frames that came for `sample` (same thread and time) into it; a sample
  // without them is left as it is.
  void Splice(const ResolvedStack& native, StackSample* sample);

  // How a frame that could not be named, and the end of a cut walk, are shown.
  static constexpr std::string_view kUnknownFrame = "[unknown Python frame]";
  static constexpr std::string_view kCutFrames = "outer Python frames not walked (depth limit 64)";
  static constexpr std::string_view kBrokenChain = "a Python frame could not be read";

 private:
  struct Named {
    std::string name;
    bool ends_run = false;   // outermost frame of one run of the interpreter loop
    bool user_code = false;  // InterpreterFrame::user_code
    std::string callable;    // InterpreterFrame::callable
  };
  struct Pending {
    uint64_t ts_ns = 0;
    uint16_t flags = 0;
    std::vector<Named> frames;  // innermost first
  };

  InterpreterSupport* interpreter_;
  Stats* stats_;
  bool merged_;
  std::unordered_map<uint32_t, Pending> pending_;  // by thread
  std::vector<InterpreterFrame> expanded_;         // one frame's, kept for its storage
};

}  // namespace looptrace::loader
