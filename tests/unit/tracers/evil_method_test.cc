// EvilMethodTracer through the pipeline: only slow messages, their slices, trees and keys.
#include "looptrace/tracers/evil_method.h"

#include <gtest/gtest.h>

#include "event_script.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;
using testing::U;

constexpr uint32_t kMain = 100;
constexpr uint64_t kMs = 1'000'000;

void AddMessage(testing::EventScript& script, uint64_t id, uint64_t begin_ms, uint64_t end_ms) {
  script.Add(Probe(Role::kDispatchBegin, begin_ms * kMs, {U("id", id), S("name", "msg" + std::to_string(id))}, kMain));
  script.Add(Probe(Role::kDispatchEnd, end_ms * kMs, {U("id", id)}, kMain));
}

MethodBeats Slice(uint64_t begin_ms, uint64_t end_ms, std::vector<MethodBeat> beats) {
  MethodBeats b;
  b.tid = kMain;
  b.begin_ns = begin_ms * kMs;
  b.end_ns = end_ms * kMs;
  b.beats = std::move(beats);
  b.names = {{1, "A"}, {2, "B"}};
  return b;
}

TEST(EvilMethodTracer, OnlyMessagesOverTheThresholdWithTheirTreeAndKey) {
  testing::EventScript script;
  AddMessage(script, 1, 10, 20);  // 10 ms: fast
  AddMessage(script, 2, 100, 1100);
  script.Add(
      Slice(100, 1100, {{100 * kMs, 1, true}, {150 * kMs, 2, true}, {950 * kMs, 2, false}, {1000 * kMs, 1, false}}));
  AnalysisOptions options;
  options.common.evil_threshold_ns = 500 * kMs;
  Report r = script.Run(options, 2'000 * kMs);
  EXPECT_EQ(r.evil_threshold_ns, 500 * kMs);
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const EvilMethodReport& e = r.evil_methods[0];
  EXPECT_EQ(e.message.name, "msg2");
  EXPECT_TRUE(e.has_beats);
  ASSERT_EQ(e.tree.size(), 3u);
  EXPECT_EQ(e.tree[1].name, "A");
  EXPECT_EQ(e.tree[2].name, "B");
  EXPECT_EQ(e.tree[2].node.cost_ns, 800 * kMs);
  // Weights: A 2 x 900, B 3 x 800: B is the key.
  EXPECT_EQ(e.stack_key, "2|");
  EXPECT_EQ(e.stack_key_name, "B");
  EXPECT_EQ(e.matrix_stack, "0,1048574,1,1000\n1,1,1,900\n2,2,1,800\n");
}

// A message costing exactly the threshold is slow and gets its slice; one a nanosecond under
// it is not (the pipeline asks for no slice below the threshold).
TEST(EvilMethodTracer, TheThresholdItselfIsSlow) {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 100 * kMs, {U("id", 1), S("name", "under")}, kMain));
  script.Add(Probe(Role::kDispatchEnd, 600 * kMs - 1, {U("id", 1)}, kMain));
  script.Add(Slice(100, 600, {{100 * kMs, 1, true}, {599 * kMs, 1, false}}));
  AddMessage(script, 2, 1000, 1500);
  script.Add(Slice(1000, 1500,
                   {{1000 * kMs, 1, true}, {1100 * kMs, 2, true}, {1400 * kMs, 2, false}, {1499 * kMs, 1, false}}));
  AnalysisOptions options;
  options.common.evil_threshold_ns = 500 * kMs;
  Report r = script.Run(options, 2'000 * kMs);
  ASSERT_EQ(r.evil_methods.size(), 1u);
  EXPECT_EQ(r.evil_methods[0].message.name, "msg2");
  EXPECT_TRUE(r.evil_methods[0].has_beats);
  ASSERT_EQ(r.evil_methods[0].tree.size(), 3u);
  EXPECT_EQ(r.evil_methods[0].tree[2].name, "B");
}

TEST(EvilMethodTracer, ASlowMessageWithoutBeatsOrWithoutMethodsHasNoKey) {
  testing::EventScript script;
  AddMessage(script, 1, 100, 900);  // no slice recorded: no method beats
  AddMessage(script, 2, 1000, 1900);
  script.Add(Slice(1000, 1900, {}));  // beats, but no method ran
  AnalysisOptions options;
  Report r = script.Run(options, 2'000 * kMs);
  ASSERT_EQ(r.evil_methods.size(), 2u);
  EXPECT_FALSE(r.evil_methods[0].has_beats);
  EXPECT_EQ(r.evil_methods[0].stack_key, "");
  EXPECT_TRUE(r.evil_methods[1].has_beats);
  EXPECT_EQ(r.evil_methods[1].tree.size(), 1u);
  EXPECT_EQ(r.evil_methods[1].stack_key, "");  // not Matrix's dispatch sentinel
}

TEST(EvilMethodTracer, AnUnfinishedMessageIsNotReported) {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 100 * kMs, {U("id", 1)}, kMain));
  AnalysisOptions options;
  Report r = script.Run(options, 5'000 * kMs);
  EXPECT_TRUE(r.evil_methods.empty());
  EXPECT_EQ(r.messages.unfinished.size(), 1u);
}

}  // namespace
}  // namespace looptrace
