// Runtime stall causes (GC runs, monitor waits) through the pipeline: found inside slow
// messages and ANR/LAG reports, clipped to the message, with the monitor's holder.
#include "looptrace/tracers/stall_causes.h"

#include <gtest/gtest.h>

#include "event_script.h"
#include "looptrace/tracers/anr.h"
#include "looptrace/tracers/evil_method.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;
using testing::U;

constexpr uint32_t kEdt = 200;
constexpr uint32_t kVmThread = 201;
constexpr uint32_t kHolder = 202;
constexpr uint64_t kMs = 1'000'000;

void AddMessage(testing::EventScript& script, uint64_t begin_ms, uint64_t end_ms) {
  script.Add(Probe(Role::kDispatchBegin, begin_ms * kMs, {}, kEdt, 1));
  script.Add(Probe(Role::kDispatchEnd, end_ms * kMs, {}, kEdt, 1));
}

void AddGc(testing::EventScript& script, uint64_t begin_ms, uint64_t end_ms, uint64_t full) {
  script.Add(Probe(Role::kGcBegin, begin_ms * kMs, {U("full", full)}, kVmThread, 1));
  script.Add(Probe(Role::kGcEnd, end_ms * kMs, {}, kVmThread, 1));
}

void AddLockWait(testing::EventScript& script, uint64_t begin_ms, uint64_t release_ms, uint64_t end_ms) {
  script.Add(
      Probe(Role::kLockWaitBegin, begin_ms * kMs, {U("monitor", 0x77), S("class", "java/lang/Object")}, kEdt, 1));
  script.Add(Probe(Role::kLockRelease, release_ms * kMs, {U("monitor", 0x77), S("thread", "lock-holder")}, kHolder, 1));
  script.Add(Probe(Role::kLockWaitEnd, end_ms * kMs, {U("monitor", 0x77)}, kEdt, 1));
}

TEST(StallCauses, GcRunsAndMonitorWaitsInsideASlowMessageWithTheHolder) {
  testing::EventScript script;
  AddGc(script, 50, 60, 0);  // before the message: not its cause
  AddMessage(script, 100, 1000);
  AddGc(script, 90, 150, 1);  // began before the message: clipped to it
  AddLockWait(script, 300, 699, 700);
  AddGc(script, 800, 820, 0);
  // Another thread's monitor wait is not this message's.
  script.Add(Probe(Role::kLockWaitBegin, 400 * kMs, {U("monitor", 0x88)}, kHolder, 1));
  script.Add(Probe(Role::kLockWaitEnd, 500 * kMs, {U("monitor", 0x88)}, kHolder, 1));
  AnalysisOptions options;
  options.common.evil_threshold_ns = 500 * kMs;
  Report r = script.Run(options, 2'000 * kMs);
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const auto& causes = r.evil_methods[0].causes;
  ASSERT_EQ(causes.size(), 3u);
  EXPECT_EQ(causes[0].kind, "gc");
  EXPECT_EQ(causes[0].begin_ns, 100 * kMs);
  EXPECT_EQ(causes[0].cost_ns(), 50 * kMs);
  EXPECT_EQ(causes[0].detail, "full");
  EXPECT_EQ(causes[0].tid, kVmThread);
  EXPECT_EQ(causes[1].kind, "monitor");
  EXPECT_EQ(causes[1].cost_ns(), 400 * kMs);
  EXPECT_EQ(causes[1].detail, "java.lang.Object");
  EXPECT_EQ(causes[1].holder_tid, kHolder);
  EXPECT_EQ(causes[1].holder_name, "lock-holder");
  EXPECT_EQ(causes[2].detail, "young");
  auto totals = TotalByKind(causes);
  EXPECT_EQ(totals["gc"], 70 * kMs);
  EXPECT_EQ(totals["monitor"], 400 * kMs);
}

TEST(StallCauses, AMonitorWaitRunningAtTheSnapshotIsTheStuckReason) {
  testing::EventScript script;
  AddMessage(script, 100, 3000);
  AddLockWait(script, 200, 2899, 2900);
  StallSnapshot snapshot;
  snapshot.ts_ns = 2100 * kMs;
  snapshot.tid = kEdt;
  snapshot.message_begin_ns = 100 * kMs;
  ThreadSnapshot edt;
  edt.tid = kEdt;
  edt.state = 'S';
  snapshot.threads = {edt};
  script.Add(snapshot);
  AnalysisOptions options;
  Report r = script.Run(options, 4'000 * kMs);
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].stuck_reason, "monitor contention");
  ASSERT_EQ(r.stalls[0].causes.size(), 1u);
  EXPECT_EQ(r.stalls[0].causes[0].holder_name, "lock-holder");
  EXPECT_FALSE(r.stalls[0].causes[0].open);
}

TEST(StallCauses, AGcThatTookMostOfAMessageIsTheStuckReasonWhenTheSnapshotSawNothingElse) {
  testing::EventScript script;
  AddMessage(script, 100, 3000);
  AddGc(script, 2500, 2600, 1);
  AddGc(script, 150, 2400, 1);
  StallSnapshot snapshot;
  snapshot.ts_ns = 2450 * kMs;
  snapshot.tid = kEdt;
  snapshot.message_begin_ns = 100 * kMs;
  ThreadSnapshot edt;
  edt.tid = kEdt;
  edt.state = 'R';
  snapshot.threads = {edt};
  script.Add(snapshot);
  AnalysisOptions options;
  Report r = script.Run(options, 4'000 * kMs);
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].stuck_reason, "garbage collection");
  EXPECT_EQ(r.stalls[0].causes.size(), 2u);
}

TEST(StallCauses, OverlappingGcRunsCountOnce) {
  std::vector<StallCause> causes(2);
  causes[0].kind = causes[1].kind = "gc";
  causes[0].begin_ns = 0;
  causes[0].end_ns = 10;
  causes[1].begin_ns = 5;
  causes[1].end_ns = 12;
  EXPECT_EQ(TotalByKind(causes)["gc"], 12u);
}

}  // namespace
}  // namespace looptrace
