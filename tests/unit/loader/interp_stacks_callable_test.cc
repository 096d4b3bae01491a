// The runtime's side of naming messages and dumping stalled threads: a sample's callable is
// the outermost frame of the program's own in a whole walk (InterpreterFrame::user_code),
// and the runtime hears each thread's latest walk (NoteThreadStack), emptied by a sample
// that had none.
#include <gtest/gtest.h>

#include <cstddef>

#include "loader/decode/interp_stacks.h"

namespace looptrace::loader {
namespace {

// Frames named "f<code>"; codes from 100 on are the program's own, the rest the runtime's.
class FakeRuntime : public InterpreterSupport {
 public:
  const std::string& what() const override { return what_; }
  void DescribeLayout(InterpreterBpfConfig*) const override {}
  Result<bool> Locate(InterpreterBpfConfig*) override { return true; }
  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats*) override {
    return InterpreterFrame{"f" + std::to_string(frame.code), "", 0, frame.code >= 100, ""};
  }
  CallableName NameCallable(std::span<const uint64_t>, const TargetTextLookup&, Stats*) override { return {}; }
  std::map<uint32_t, std::vector<InterpreterFrame>> ThreadStacks(Stats*) override { return {}; }
  void NoteThreadStack(uint32_t tid, std::span<const lt_interp_frame> frames) override { latest[tid] = frames.size(); }
  bool IsInterpreterModule(std::string_view module) const override { return module == "node"; }
  bool IsInterpreterLoop(std::string_view) const override { return false; }
  bool EndsLoopRun(const lt_interp_frame&) const override { return false; }

  std::map<uint32_t, size_t> latest;  // frames of each thread's latest walk

 private:
  std::string what_ = "fake";
};

std::vector<uint8_t> Record(uint32_t tid, uint64_t ts, std::vector<uint64_t> codes, uint16_t flags = 0) {
  lt_interp_stack rec{};
  rec.header.type = LT_RECORD_INTERP_STACK;
  rec.header.size = static_cast<uint32_t>(offsetof(lt_interp_stack, frames) + codes.size() * sizeof(lt_interp_frame));
  rec.ts_ns = ts;
  rec.tid = tid;
  rec.nr_frames = static_cast<uint16_t>(codes.size());
  rec.flags = flags;
  for (size_t i = 0; i < codes.size(); ++i) rec.frames[i] = {codes[i], LT_INTERP_NO_OFFSET, 0};
  const auto* bytes = reinterpret_cast<const uint8_t*>(&rec);
  return std::vector<uint8_t>(bytes, bytes + rec.header.size);
}

StackSample SampleAt(uint32_t tid, uint64_t ts) {
  StackSample s;
  s.tid = tid;
  s.ts_ns = ts;
  s.frames = {"Builtins_InterpreterEntryTrampoline"};
  return s;
}

TEST(InterpreterStacksCallable, TheOutermostFrameOfTheProgramsOwnNamesTheSample) {
  FakeRuntime runtime;
  Stats stats;
  InterpreterStacks stacks(&runtime, &stats, /*merged=*/false);
  ResolvedStack native;
  // Innermost first: a builtin, compute (own), renderReport (own), Node's listOnTimeout.
  ASSERT_TRUE(stacks.Add(Record(7, 100, {1, 101, 102, 2})));
  StackSample sample = SampleAt(7, 100);
  stacks.Splice(native, &sample);
  EXPECT_EQ(sample.callable, "f102");
  EXPECT_EQ(runtime.latest[7], 4u);

  // A walk cut at the depth limit may miss the outermost: no callable.
  ASSERT_TRUE(stacks.Add(Record(7, 200, {101, 102}, LT_INTERP_TRUNCATED)));
  sample = SampleAt(7, 200);
  stacks.Splice(native, &sample);
  EXPECT_EQ(sample.callable, "");

  // Only the runtime's own frames: none.
  ASSERT_TRUE(stacks.Add(Record(7, 300, {1, 2})));
  sample = SampleAt(7, 300);
  stacks.Splice(native, &sample);
  EXPECT_EQ(sample.callable, "");

  // A sample with no walk: the thread's latest stack has no interpreted frames.
  sample = SampleAt(7, 400);
  stacks.Splice(native, &sample);
  EXPECT_EQ(sample.callable, "");
  EXPECT_EQ(runtime.latest[7], 0u);
}

}  // namespace
}  // namespace looptrace::loader
