// The pipeline's own watches (Pipeline::Tick) and on-demand dumps (Pipeline::DumpNow): it asks
// its snapshot source when a watched span passes a tracer's threshold, once per span and
// threshold, hands the snapshot and the span's open slice to the tracers and the observers,
// and makes a thread dump of the running message without changing the report.
#include <gtest/gtest.h>

#include "event_script.h"
#include "looptrace/tracers/pipeline.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;
using testing::U;

constexpr uint32_t kMain = 100;
constexpr uint64_t kMs = 1'000'000;

// What the loader's session would return: the requests it was asked, in order.
class RecordingSnapshotSource : public SnapshotSource {
 public:
  uint32_t LoopThread() override { return loop_thread; }
  StallSnapshot Take(const SnapshotRequest& request) override {
    requests.push_back(request);
    StallSnapshot s;
    s.anr = request.anr;
    s.ts_ns = request.now_ns;
    s.tid = request.tid;
    s.message_begin_ns = request.stuck_since_ns;
    ThreadSnapshot main;
    main.tid = request.tid;
    main.name = "main\xff";  // from the target: made valid UTF-8 by the pipeline
    main.state = 'R';
    s.threads = {main};
    return s;
  }
  uint32_t loop_thread = kMain;
  std::vector<SnapshotRequest> requests;
};

class OpenSliceSource : public SliceSource {
 public:
  std::optional<MethodBeats> Slice(const SliceRequest& request) override {
    if (request.label != "open") return std::nullopt;
    MethodBeats open;
    open.span = "open";
    open.tid = request.tid;
    open.begin_ns = request.begin_ns;
    open.end_ns = request.end_ns;
    open.beats = {{request.begin_ns + 1 * kMs, 42, true}};
    open.names = {{42, "Work.run"}};
    return open;
  }
};

class CountingObserver : public EventSink {
 public:
  void OnEvent(const Event& event) override {
    snapshots += std::holds_alternative<StallSnapshot>(event);
    open_slices += std::holds_alternative<MethodBeats>(event);
    probes += std::holds_alternative<ProbeEvent>(event);
  }
  int snapshots = 0;
  int open_slices = 0;
  int probes = 0;
};

// A message that began before records were lost may have lost its end: its age proves no
// stall, so no snapshot is asked for it (the session passes when its last lossy drain began).
TEST(PipelineWatch, NoSnapshotOfAMessageThatBeganBeforeRecordsWereLost) {
  AnalysisOptions options;
  OpenSliceSource slices;
  RecordingSnapshotSource source;
  Pipeline pipeline(options, &slices);
  pipeline.SetSnapshotSource(&source);
  const uint64_t begin = 1'000 * kMs;
  pipeline.OnEvent(Probe(Role::kDispatchBegin, begin, {U("id", 7), S("name", "end.lost")}, kMain));
  pipeline.Tick(begin + 2'100 * kMs, begin + 500 * kMs);
  EXPECT_TRUE(source.requests.empty());
  pipeline.Tick(begin + 2'200 * kMs, begin);  // began at the loss: trusted
  EXPECT_EQ(source.requests.size(), 1u);
}

TEST(PipelineWatch, AsksForOneSnapshotPerThresholdWithTheOpenSlice) {
  AnalysisOptions options;
  OpenSliceSource slices;
  RecordingSnapshotSource source;
  Pipeline pipeline(options, &slices);
  pipeline.SetSnapshotSource(&source);
  CountingObserver recorder;
  pipeline.AddObserver(&recorder);
  const uint64_t begin = 1'000 * kMs;
  pipeline.OnEvent(Probe(Role::kDispatchBegin, begin, {U("id", 7), S("name", "slow.one")}, kMain));
  pipeline.Tick(begin + 1'000 * kMs);  // under the LAG threshold (2 s)
  EXPECT_TRUE(source.requests.empty());
  pipeline.Tick(begin + 2'100 * kMs);
  pipeline.Tick(begin + 2'200 * kMs);  // the LAG snapshot is taken once
  ASSERT_EQ(source.requests.size(), 1u);
  EXPECT_FALSE(source.requests[0].anr);
  EXPECT_FALSE(source.requests[0].on_demand);
  EXPECT_EQ(source.requests[0].tid, kMain);
  EXPECT_EQ(source.requests[0].stuck_since_ns, begin);
  pipeline.Tick(begin + 5'100 * kMs);
  ASSERT_EQ(source.requests.size(), 2u);
  EXPECT_TRUE(source.requests[1].anr);
  EXPECT_EQ(recorder.snapshots, 2);
  EXPECT_EQ(recorder.open_slices, 2);
  pipeline.OnEvent(Probe(Role::kDispatchEnd, begin + 6'000 * kMs, {U("id", 7)}, kMain));
  pipeline.OnEvent(SessionEnd{begin + 7'000 * kMs, "duration", std::nullopt});
  Report report = pipeline.TakeReport();
  ASSERT_EQ(report.stalls.size(), 2u);
  EXPECT_FALSE(report.stalls[0].anr);
  EXPECT_TRUE(report.stalls[1].anr);
  EXPECT_EQ(report.stalls[1].message.name, "slow.one");
  EXPECT_EQ(report.stalls[1].snapshot.threads.at(0).name, "main\uFFFD");
  ASSERT_EQ(report.stalls[1].tree.size(), 2u);
  EXPECT_EQ(report.stalls[1].tree[1].name, "Work.run");
}

TEST(PipelineWatch, WaitsForTheLoopThreadAndDoesNothingWithoutASource) {
  AnalysisOptions options;
  Pipeline without(options);
  without.OnEvent(Probe(Role::kDispatchBegin, 1'000 * kMs, {U("id", 1)}, kMain));
  without.Tick(9'000 * kMs);
  EXPECT_FALSE(without.DumpNow(9'000 * kMs, 0));

  RecordingSnapshotSource source;
  source.loop_thread = 0;  // not known yet
  Pipeline pipeline(options);
  pipeline.SetSnapshotSource(&source);
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 1'000 * kMs, {U("id", 1)}, kMain));
  pipeline.Tick(9'000 * kMs);
  EXPECT_TRUE(source.requests.empty());
  source.loop_thread = kMain;
  pipeline.Tick(9'000 * kMs);
  EXPECT_EQ(source.requests.size(), 2u);  // LAG and ANR at once
}

TEST(PipelineWatch, TypedObserversSeeOnlyTheirEvents) {
  AnalysisOptions options;
  Pipeline pipeline(options);
  CountingObserver snapshots_only;
  pipeline.AddObserver(&snapshots_only, EventBit<StallSnapshot>());
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 1'000 * kMs, {U("id", 1)}, kMain));
  StallSnapshot snapshot;
  snapshot.ts_ns = 1'500 * kMs;
  pipeline.OnEvent(snapshot);
  EXPECT_EQ(snapshots_only.probes, 0);
  EXPECT_EQ(snapshots_only.snapshots, 1);
  pipeline.RemoveObserver(&snapshots_only);
  pipeline.OnEvent(snapshot);
  EXPECT_EQ(snapshots_only.snapshots, 1);
}

TEST(PipelineWatch, DumpsTheRunningMessageWithoutChangingTheReport) {
  AnalysisOptions options;
  OpenSliceSource slices;
  RecordingSnapshotSource source;
  Pipeline pipeline(options, &slices);
  pipeline.SetSnapshotSource(&source);
  SessionStart start;
  start.pid = kMain;
  start.command = "app";
  start.ts_ns = 500 * kMs;
  pipeline.OnEvent(start);
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 1'000 * kMs, {U("id", 9), S("name", "busy")}, kMain));
  auto dump = pipeline.DumpNow(1'300 * kMs, 42);
  ASSERT_TRUE(dump);
  ASSERT_EQ(source.requests.size(), 1u);
  EXPECT_TRUE(source.requests[0].on_demand);
  EXPECT_EQ(dump->pid, kMain);
  EXPECT_EQ(dump->command, "app");
  EXPECT_EQ(dump->wall_time_ns, 42u);
  ASSERT_TRUE(dump->current);
  EXPECT_EQ(dump->current->name, "busy");
  EXPECT_EQ(dump->running_ns, 300 * kMs);
  ASSERT_EQ(dump->tree.size(), 2u);
  EXPECT_EQ(dump->tree[1].name, "Work.run");
  EXPECT_EQ(dump->snapshot.threads.at(0).name, "main\uFFFD");
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 1'400 * kMs, {U("id", 9)}, kMain));
  Report report = pipeline.TakeReport();
  EXPECT_TRUE(report.stalls.empty());
  EXPECT_EQ(report.messages.messages.size(), 1u);
}

}  // namespace
}  // namespace looptrace
