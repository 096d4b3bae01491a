// What the tracers keep per thread id (issue 30 item 7): a session of many short-lived
// threads, each running one message with a stack sample and a switch, must not pay a span
// slot, a stack per kind and a deque per tracer for every thread that ever ran. Measured as
// the heap the pipeline holds (mallinfo2), with generous bounds: the state kept per thread
// is what a report shows of it, plus a few small entries.
#include <gtest/gtest.h>
#include <malloc.h>

#include "event_script.h"
#include "looptrace/tracers/compact_queue.h"
#include "looptrace/tracers/pipeline.h"
#include "looptrace/tracers/span_tracker.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;

constexpr uint32_t kPid = 4242;
constexpr uint32_t kFirstTid = 10'000;

size_t HeapInUse() { return mallinfo2().uordblks; }

SessionStart ManyThreadsStart() {
  SessionStart start;
  start.ts_ns = 1'000'000'000;
  start.pid = kPid;
  start.thread_filter = "all";
  start.sample_hz = 997;
  for (Role r : {Role::kDispatchBegin, Role::kDispatchEnd, Role::kFrameBegin, Role::kFrameEnd})
    start.probes.push_back({0, r, "uprobe", "/opt/app", "p", 0});
  return start;
}

// One short-lived thread: a 40 us message with an on-CPU sample and a switch out and in.
void RunThread(Pipeline& pipeline, uint32_t tid, uint64_t ts) {
  pipeline.OnEvent(Probe(Role::kDispatchBegin, ts, {S("name", "task")}, tid, kPid));
  StackSample sample;
  sample.ts_ns = ts + 10'000;
  sample.tid = tid;
  sample.frames = {"work", "main"};
  pipeline.OnEvent(sample);
  ThreadSwitch out;
  out.ts_ns = ts + 20'000;
  out.tid = tid;
  out.off_cpu = true;
  out.state = 1;
  out.kernel_stack = {"schedule"};
  pipeline.OnEvent(out);
  ThreadSwitch in;
  in.ts_ns = ts + 30'000;
  in.tid = tid;
  pipeline.OnEvent(in);
  pipeline.OnEvent(Probe(Role::kDispatchEnd, ts + 40'000, {}, tid, kPid));
}

TEST(ThreadFootprint, ManyShortLivedThreadsKeepLittleEach) {
  AnalysisOptions options;
  ASSERT_TRUE(options.Declarations().Set("keep-messages", "16"));  // the message list apart
  Pipeline pipeline(options);
  pipeline.OnEvent(ManyThreadsStart());
  uint64_t ts = 1'001'000'000;
  uint32_t tid = kFirstTid;
  for (int i = 0; i < 2'000; ++i, ts += 50'000) RunThread(pipeline, tid++, ts);  // warm: sizes settle
  const size_t before = HeapInUse();
  constexpr size_t kThreads = 20'000;
  for (size_t i = 0; i < kThreads; ++i, ts += 50'000) RunThread(pipeline, tid++, ts);
  const size_t after = HeapInUse();
  const size_t per_thread = after > before ? (after - before) / kThreads : 0;
  // Kept per thread here: its message costs (the per-thread table), its folded stacks, its
  // sample-store and frame-tracer entries and the span tracker's flags, about 1.2 KB; about
  // 2.5 KB more before the empty deques and span stacks went (massif).
  EXPECT_LT(per_thread, 2'000u);
  pipeline.OnEvent(SessionEnd{ts, "duration", std::nullopt});
  Report report = pipeline.TakeReport();
  EXPECT_EQ(report.messages.threads.size(), kThreads + 2'000);
}

struct NoListener : SpanListener {
  void OnSpanBegin(const Span&) override {}
  void OnSpanEnd(Span&) override {}
};

TEST(ThreadFootprint, SpanTrackerGivesBackTheTracksOfThreadsWithNothingOpen) {
  Stats stats;
  SpanTracker tracker(&stats);
  NoListener listener;
  SessionStart start = ManyThreadsStart();
  tracker.Configure(start);
  uint64_t ts = 1'000;
  uint32_t tid = kFirstTid;
  auto run = [&](size_t threads) {
    for (size_t i = 0; i < threads; ++i, ts += 100) {
      tracker.OnProbe(Probe(Role::kDispatchBegin, ts, {}, tid, kPid), listener);
      tracker.OnProbe(Probe(Role::kDispatchEnd, ts + 50, {}, tid, kPid), listener);
      ++tid;
    }
  };
  run(2'000);
  const size_t before = HeapInUse();
  constexpr size_t kThreads = 50'000;
  run(kThreads);
  const size_t per_thread = (HeapInUse() - before) / kThreads;
  EXPECT_LT(per_thread, 250u);  // a map node and the thread's flags; a span slot is ~1 KB
  // A thread still in a message keeps it across sweeps.
  tracker.OnProbe(Probe(Role::kDispatchBegin, ts, {}, 7, kPid), listener);
  run(10'000);
  ASSERT_NE(tracker.Innermost(7, SpanKind::kMessage), nullptr);
  EXPECT_EQ(tracker.Innermost(7, SpanKind::kMessage)->begin_ns, ts - 10'000 * 100);
}

TEST(CompactQueue, EmptyCostsNothingAndKeepsFifoOrder) {
  CompactQueue<int> q;
  EXPECT_EQ(q.capacity(), 0u);
  for (int i = 0; i < 100; ++i) q.push_back(i);
  for (int i = 0; i < 60; ++i) {
    ASSERT_EQ(q.front(), i);
    q.pop_front();
  }
  EXPECT_EQ(q.size(), 40u);
  EXPECT_EQ(*q.rbegin(), 99);
  q.insert(q.begin(), -1);
  EXPECT_EQ(q.front(), -1);
  int expect = -1;
  for (int v : q) {
    EXPECT_EQ(v, expect);
    expect = expect == -1 ? 60 : expect + 1;
  }
  while (!q.empty()) q.pop_front();
  EXPECT_EQ(q.size(), 0u);
  q.release();
  EXPECT_EQ(q.capacity(), 0u);
}

}  // namespace
}  // namespace looptrace
