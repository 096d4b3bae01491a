// Interpreter frames in stack samples: BPF sends the interpreter's frames of a thread
// (LT_RECORD_INTERP_STACK) right before that thread's native sample; they are named at once
// (the code objects are likeliest alive) and spliced into the sample when it comes.
//  - default view: the Python frames, innermost first, under the native frames the time is
//    spent in when they are not the interpreter's own (a C extension, `clock_nanosleep` of
//    time.sleep): what py-spy shows;
//  - merged view (--native-frames): the native stack with each run of the interpreter loop
//    (`_PyEval_EvalFrameDefault`) replaced by the interpreted frames it ran.
// Frames that cannot be named, and walks cut at the depth limit, are marked and counted.
// Where the runtime names a frame by its code alone, the names are kept by (code, offset,
// fingerprint): a busy loop's samples stop at the same few places, and formatting each frame's
// name anew at every sample was most of the loader's work on a Python server.
#pragma once

#include <cstdint>
#include <memory>
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
  static constexpr std::string_view kCutFrames = "outer Java, JavaScript or Python frames not walked (depth limit 64)";
  static constexpr std::string_view kBrokenChain = "a Java, JavaScript or Python frame could not be read";

 private:
  void CountWhole(const ResolvedStack& native, uint16_t flags);

  struct Named {
    std::string name;
    bool ends_run = false;   // outermost frame of one run of the interpreter loop
    bool user_code = false;  // InterpreterFrame::user_code
    std::string callable;    // InterpreterFrame::callable
  };
  using SharedNamed = std::shared_ptr<const Named>;
  struct Pending {
    uint64_t ts_ns = 0;
    uint16_t flags = 0;
    std::vector<SharedNamed> frames;  // innermost first
  };
  struct FrameKey {
    uint64_t code = 0;
    uint32_t offset = 0;
    uint32_t fingerprint = 0;
    bool operator==(const FrameKey&) const = default;
  };
  struct FrameKeyHash {
    size_t operator()(const FrameKey& key) const {
      const uint64_t rest = (uint64_t{key.offset} << 32) | key.fingerprint;
      return std::hash<uint64_t>()(key.code ^ (rest * 0x9E3779B97F4A7C15ull));
    }
  };
  // Kept names, bounded: emptied when full, then named again as they come.
  static constexpr size_t kMaxKeptFrames = 1 << 16;

  InterpreterSupport* interpreter_;
  Stats* stats_;
  bool merged_;
  std::unordered_map<uint32_t, Pending> pending_;  // by thread
  std::vector<InterpreterFrame> expanded_;         // one frame's, kept for its storage
  std::unordered_map<FrameKey, std::vector<SharedNamed>, FrameKeyHash> kept_;
};

}  // namespace looptrace::loader
