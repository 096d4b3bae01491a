// The runtime's side of naming messages and dumping stalled threads: a sample's callable is
// the outermost frame of the program's own in a whole walk (InterpreterFrame::user_code),
// and the runtime hears each thread's latest walk (NoteThreadStack), emptied by a sample
// that had none.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

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

// Names a frame "f<code>:<fingerprint>", except code 0 (unnamed) and code 9 (a marker), and
// counts how often it is asked.
class CountingRuntime : public FakeRuntime {
 public:
  explicit CountingRuntime(bool by_code_alone) : by_code_alone_(by_code_alone) {}
  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats*) override {
    ++asked;
    if (frame.code == 0) return std::nullopt;
    if (frame.code == 9) return InterpreterFrame::Marker("[unreadable]");
    return InterpreterFrame{fmt::format("f{}:{}", frame.code, frame.fingerprint), "", 0, true, ""};
  }
  bool NamesFramesByCodeAlone() const override { return by_code_alone_; }
  int asked = 0;

 private:
  bool by_code_alone_;
};

std::vector<std::string> SplicedNames(InterpreterStacks& stacks, uint64_t ts,
                                      const std::vector<std::pair<uint64_t, uint32_t>>& frames) {
  std::vector<uint64_t> codes;
  for (const auto& [code, fingerprint] : frames) codes.push_back(code);
  std::vector<uint8_t> raw = Record(7, ts, codes);
  auto* rec = reinterpret_cast<lt_interp_stack*>(raw.data());
  for (size_t i = 0; i < frames.size(); ++i) rec->frames[i].fingerprint = frames[i].second;
  EXPECT_TRUE(stacks.Add(raw));
  StackSample sample = SampleAt(7, ts);
  stacks.Splice(ResolvedStack{}, &sample);
  return sample.frames;
}

TEST(InterpreterStacksNames, KeptByCodeOffsetAndFingerprintWhereTheRuntimeNamesByCodeAlone) {
  CountingRuntime runtime(/*by_code_alone=*/true);
  Stats stats;
  InterpreterStacks stacks(&runtime, &stats, /*merged=*/false);
  using V = std::vector<std::string>;
  EXPECT_EQ(SplicedNames(stacks, 1, {{1, 5}, {2, 5}}), (V{"f1:5", "f2:5"}));
  EXPECT_EQ(runtime.asked, 2);
  EXPECT_EQ(SplicedNames(stacks, 2, {{2, 5}, {1, 5}, {2, 5}}), (V{"f2:5", "f1:5", "f2:5"}));
  EXPECT_EQ(runtime.asked, 2);  // every frame kept
  // Another code object at a reused address (its fingerprint differs) is named anew.
  EXPECT_EQ(SplicedNames(stacks, 3, {{1, 6}}), (V{"f1:6"}));
  EXPECT_EQ(runtime.asked, 3);
  // A frame that could not be named is asked again next time: it may be named then.
  EXPECT_EQ(SplicedNames(stacks, 4, {{0, 5}}), (V{std::string(InterpreterStacks::kUnknownFrame)}));
  EXPECT_EQ(SplicedNames(stacks, 5, {{0, 5}}), (V{std::string(InterpreterStacks::kUnknownFrame)}));
  EXPECT_EQ(runtime.asked, 5);
  // Nor is one the runtime named by a marker (V8's "[unknown JavaScript frame]").
  EXPECT_EQ(SplicedNames(stacks, 6, {{9, 5}}), (V{"[unreadable]"}));
  EXPECT_EQ(SplicedNames(stacks, 7, {{9, 5}}), (V{"[unreadable]"}));
  EXPECT_EQ(runtime.asked, 7);
}

TEST(InterpreterStacksNames, AskedAtEveryFrameWhereTheRuntimeNamesByMoreThanCode) {
  CountingRuntime runtime(/*by_code_alone=*/false);
  Stats stats;
  InterpreterStacks stacks(&runtime, &stats, /*merged=*/false);
  using V = std::vector<std::string>;
  EXPECT_EQ(SplicedNames(stacks, 1, {{1, 5}, {2, 5}}), (V{"f1:5", "f2:5"}));
  EXPECT_EQ(SplicedNames(stacks, 2, {{1, 5}, {2, 5}}), (V{"f1:5", "f2:5"}));
  EXPECT_EQ(runtime.asked, 4);
}

}  // namespace
}  // namespace looptrace::loader
