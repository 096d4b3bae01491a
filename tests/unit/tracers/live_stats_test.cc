// LiveStatsTracer: the figures `status`, `top` and /metrics read while a session runs, fed
// through the real pipeline, and checked against what the final report says.
#include "looptrace/tracers/live_stats.h"

#include <gtest/gtest.h>

#include "event_script.h"
#include "looptrace/tracers/anr.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/frames.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;
using testing::U;

constexpr uint32_t kPid = 100;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;

SessionStart Start(uint64_t ts) {
  SessionStart s;
  s.ts_ns = ts;
  s.pid = kPid;
  s.command = "app";
  s.profile = "sample";
  s.probes = {{1, Role::kDispatchBegin, "uprobe", "/app", "begin", 0},
              {2, Role::kDispatchEnd, "uprobe", "/app", "end", 0}};
  return s;
}

ProbeEvent Begin(uint64_t ts, uint64_t id, std::string name, uint32_t tid = kPid) {
  return Probe(Role::kDispatchBegin, ts, {U("id", id), S("name", name)}, tid, kPid);
}
ProbeEvent End(uint64_t ts, uint64_t id, uint32_t tid = kPid) {
  return Probe(Role::kDispatchEnd, ts, {U("id", id)}, tid, kPid);
}

const LiveStatsTracer& Live(const Pipeline& p) {
  auto* tracer = dynamic_cast<const LiveStatsTracer*>(p.FindTracer("live_stats"));
  EXPECT_NE(tracer, nullptr);
  return *tracer;
}

TEST(LiveStats, BucketsCoverOneMillisecondToTenSeconds) {
  EXPECT_EQ(MessageBucketOf(0), 0u);
  EXPECT_EQ(MessageBucketOf(1 * kMs), 0u);  // le="0.001" includes 1 ms
  EXPECT_EQ(MessageBucketOf(1 * kMs + 1), 1u);
  EXPECT_EQ(MessageBucketOf(10 * kS), kMessageBuckets - 2);
  EXPECT_EQ(MessageBucketOf(10 * kS + 1), kMessageBuckets - 1);  // +Inf
}

// Live figures are read only while a live session runs: a report's pipeline (trace, record,
// report) does not run the tracer at every message, and its report is the same without it.
TEST(LiveStats, RunsOnlyInLivePipelines) {
  AnalysisOptions options;
  Pipeline report_only(options);
  Pipeline live(options, nullptr, PipelineUse::kLive);
  EXPECT_EQ(report_only.FindTracer("live_stats"), nullptr);
  ASSERT_NE(live.FindTracer("live_stats"), nullptr);
  EXPECT_NE(report_only.FindTracer("messages"), nullptr);
  for (Pipeline* p : {&report_only, &live}) {
    p->OnEvent(Start(1 * kS));
    p->OnEvent(Begin(1 * kS + 1 * kMs, 1, "m"));
    p->OnEvent(End(1 * kS + 3 * kMs, 1));
  }
  EXPECT_EQ(Live(live).Read(2 * kS).threads.size(), 1u);
  const Report a = report_only.TakeReport(), b = live.TakeReport();
  ASSERT_EQ(a.messages.messages.size(), 1u);
  EXPECT_EQ(a.messages.messages.size(), b.messages.messages.size());
  EXPECT_EQ(a.messages.messages[0].cost_ns(), b.messages.messages[0].cost_ns());
}

TEST(LiveStats, CountsMessagesPerThreadAndTheWindowOfTheMainThread) {
  AnalysisOptions options;
  Pipeline p(options, nullptr, PipelineUse::kLive);
  p.OnEvent(Start(1 * kS));
  // Main thread: 10 messages of 2 ms, one of 30 ms; a worker: one of 500 ms.
  uint64_t t = 1 * kS;
  for (uint64_t i = 1; i <= 10; ++i) {
    p.OnEvent(Begin(t, i, "m.short"));
    p.OnEvent(End(t + 2 * kMs, i));
    t += 10 * kMs;
  }
  p.OnEvent(Begin(t, 11, "m.slow"));
  p.OnEvent(End(t + 30 * kMs, 11));
  p.OnEvent(Begin(t, 50, "w.job", 101));
  p.OnEvent(End(t + 500 * kMs, 50, 101));
  t += 500 * kMs;
  p.OnEvent(Begin(t, 12, "m.running"));

  LiveStatus s = Live(p).Read(t + 100 * kMs);
  ASSERT_EQ(s.threads.size(), 2u);
  EXPECT_EQ(s.threads[0].tid, kPid);
  EXPECT_EQ(s.threads[0].messages, 11u);
  EXPECT_EQ(s.threads[0].busy_ns, 50 * kMs);
  EXPECT_EQ(s.threads[0].buckets[MessageBucketOf(2 * kMs)], 10u);
  EXPECT_EQ(s.threads[0].buckets[MessageBucketOf(30 * kMs)], 1u);
  EXPECT_EQ(s.threads[1].messages, 1u);
  // The session is 0.7 s old (1.0 s -> 1.7 s): the window is all of it.
  EXPECT_EQ(s.window_ns, 700 * kMs);
  EXPECT_EQ(s.window_messages, 11u);
  EXPECT_NEAR(s.messages_per_s, 11 / 0.7, 1e-9);
  EXPECT_EQ(s.p50_ns, 2 * kMs);
  EXPECT_EQ(s.p99_ns, 30 * kMs);
  // Busy: 50 ms done + 100 ms of the running message, of 700 ms.
  EXPECT_NEAR(s.busy_percent, 150.0 / 7, 1e-9);
  ASSERT_TRUE(s.current);
  EXPECT_EQ(s.current->name, "m.running");
  EXPECT_EQ(s.current_running_ns, 100 * kMs);
  EXPECT_EQ(s.state, "running");
  // Slow ones (>= 16 ms), newest first, any thread.
  ASSERT_EQ(s.recent_slow.size(), 2u);
  EXPECT_EQ(s.recent_slow[0].name, "w.job");
  EXPECT_EQ(s.recent_slow[1].name, "m.slow");
  EXPECT_TRUE(s.messages_enabled);

  // Twelve seconds later, only the running message is in the window.
  s = Live(p).Read(t + 12 * kS);
  EXPECT_EQ(s.window_ns, 10 * kS);
  EXPECT_EQ(s.window_messages, 0u);
  EXPECT_NEAR(s.busy_percent, 100.0, 1e-9);
  EXPECT_EQ(s.state, "anr");  // 12 s > the 5 s ANR threshold
}

TEST(LiveStats, StateFollowsTheAnrOptions) {
  AnalysisOptions options;
  options.common.lag_threshold_ns = 100 * kMs;
  options.common.anr_threshold_ns = 300 * kMs;
  Pipeline p(options, nullptr, PipelineUse::kLive);
  p.OnEvent(Start(0));
  p.OnEvent(Begin(10, 1, "x"));
  EXPECT_EQ(Live(p).Read(50 * kMs).state, "running");
  EXPECT_EQ(Live(p).Read(150 * kMs).state, "lag");
  EXPECT_EQ(Live(p).Read(350 * kMs).state, "anr");
  p.OnEvent(End(400 * kMs, 1));
  EXPECT_EQ(Live(p).Read(450 * kMs).state, "idle");
  EXPECT_EQ(Live(p).Read(450 * kMs).lag_threshold_ns, 100 * kMs);
}

TEST(LiveStats, CountsWhatTheReportWillHaveAsItHappens) {
  AnalysisOptions options;
  options.common.evil_threshold_ns = 100 * kMs;
  Pipeline p(options, nullptr, PipelineUse::kLive);
  p.OnEvent(Start(0));
  // An evil message, a stalled one with a LAG and an ANR snapshot (each twice: the ANR
  // tracer reports one per level), a SIGQUIT from outside and one from the app itself.
  p.OnEvent(Begin(1 * kMs, 1, "evil"));
  p.OnEvent(End(200 * kMs, 1));
  p.OnEvent(Begin(1 * kS, 2, "stuck"));
  for (bool anr : {false, false, true, true}) {
    StallSnapshot snap;
    snap.anr = anr;
    snap.ts_ns = (anr ? 6 : 3) * kS;
    snap.tid = kPid;
    snap.message_begin_ns = 1 * kS;
    p.OnEvent(snap);
  }
  SignalSent outside;
  outside.ts_ns = 7 * kS;
  outside.signal = 3;
  outside.sender_pid = 42;
  p.OnEvent(outside);
  SignalSent self = outside;
  self.sender_pid = kPid;
  self.ts_ns = 7 * kS + 1;
  p.OnEvent(self);
  LiveStatus live = Live(p).Read(8 * kS);
  EXPECT_EQ(live.evil_methods, 1u);
  EXPECT_EQ(live.lags, 1u);
  EXPECT_EQ(live.anrs, 1u);
  EXPECT_EQ(live.signal_anrs, 1u);
  EXPECT_EQ(live.self_sigquits, 1u);
  ASSERT_TRUE(live.last_stall);
  EXPECT_EQ(live.last_stall->kind, "anr");
  EXPECT_EQ(live.last_stall->name, "stuck");

  // The stuck message ends 8 s long: an evil method too, counted as it ends.
  p.OnEvent(End(9 * kS, 2));
  live = Live(p).Read(9 * kS);
  EXPECT_EQ(live.evil_methods, 2u);
  p.OnEvent(SessionEnd{10 * kS, "duration", std::nullopt});
  Report r = p.TakeReport();
  EXPECT_EQ(r.evil_methods.size(), live.evil_methods);
  size_t anrs = 0, lags = 0;
  for (const auto& s : r.stalls) ++(s.anr ? anrs : lags);
  EXPECT_EQ(anrs, live.anrs);
  EXPECT_EQ(lags, live.lags);
  size_t from_self = 0;
  for (const auto& s : r.signal_anrs) from_self += s.from_self;
  EXPECT_EQ(from_self, live.self_sigquits);
  EXPECT_EQ(r.signal_anrs.size() - from_self, live.signal_anrs);
}

TEST(LiveStats, CountsSlowIdleHandlersInputEventsAndBarrierLeaks) {
  AnalysisOptions options;
  Pipeline p(options, nullptr, PipelineUse::kLive);
  p.OnEvent(Start(0));
  p.OnEvent(Probe(Role::kIdleBegin, 1 * kMs, {S("name", "gc")}, kPid));
  p.OnEvent(Probe(Role::kIdleEnd, 3 * kS, {}, kPid));
  p.OnEvent(Probe(Role::kIdleBegin, 4 * kS, {S("name", "gc")}, kPid));
  p.OnEvent(Probe(Role::kIdleEnd, 4 * kS + kMs, {}, kPid));  // fast: not a lag
  p.OnEvent(Probe(Role::kInputReceive, 5 * kS, {U("seq", 7)}, kPid));
  p.OnEvent(Probe(Role::kInputFinish, 8 * kS, {U("seq", 7)}, kPid));
  p.OnEvent(Probe(Role::kBarrierPost, 9 * kS, {U("token", 3)}, kPid));
  p.OnEvent(Probe(Role::kMessageEnqueue, 9 * kS + kMs, {U("async", 0)}, kPid));
  p.OnEvent(Probe(Role::kBarrierRemove, 12 * kS, {U("token", 3)}, kPid));
  LiveStatus live = Live(p).Read(13 * kS);
  EXPECT_EQ(live.idle_lags, 1u);
  EXPECT_EQ(live.input_lags, 1u);
  EXPECT_EQ(live.barrier_leaks, 1u);
  p.OnEvent(SessionEnd{13 * kS, "duration", std::nullopt});
  Report r = p.TakeReport();
  EXPECT_EQ(r.span_lags.size(), 2u);
  EXPECT_EQ(r.barrier_leaks.size(), 1u);
}

ProbeEvent FrameBegin(uint64_t ts, uint64_t vsync, uint64_t id) {
  return Probe(Role::kFrameBegin, ts, {U("vsync_ns", vsync), U("frame_id", id)}, kPid);
}
ProbeEvent FrameEnd(uint64_t ts, uint64_t id) { return Probe(Role::kFrameEnd, ts, {U("frame_id", id)}, kPid); }

TEST(LiveStats, ClassifiesFramesAsTheFrameTracerDoes) {
  AnalysisOptions options;
  Pipeline p(options, nullptr, PipelineUse::kLive);
  p.OnEvent(Start(0));
  const uint64_t period = 16'666'666;
  // 60 smooth frames (4 ms), then one janky (20 ms: 1 dropped), one frozen (800 ms).
  uint64_t vsync = 1 * kS;
  uint64_t id = 1;
  for (int i = 0; i < 60; ++i, vsync += period, ++id) {
    p.OnEvent(FrameBegin(vsync + kMs, vsync, id));
    p.OnEvent(FrameEnd(vsync + 4 * kMs, id));
  }
  p.OnEvent(FrameBegin(vsync + kMs, vsync, id));
  p.OnEvent(FrameEnd(vsync + 20 * kMs, id));
  vsync += 2 * period;
  ++id;
  p.OnEvent(FrameBegin(vsync + kMs, vsync, id));
  p.OnEvent(FrameEnd(vsync + 800 * kMs, id));
  const uint64_t end = vsync + 800 * kMs;
  LiveStatus live = Live(p).Read(end);
  EXPECT_EQ(live.frames, 62u);
  EXPECT_EQ(live.frames_by_jank[0], 60u);  // smooth
  EXPECT_EQ(live.frames_by_jank[1], 1u);   // janky
  EXPECT_EQ(live.frames_by_jank[2], 1u);   // frozen
  EXPECT_EQ(live.slow_frames, 2u);
  EXPECT_NEAR(live.refresh_hz, 60, 1e-9);
  EXPECT_TRUE(live.frames_enabled);
  EXPECT_EQ(live.window_frames, 62u);
  EXPECT_EQ(live.window_janky, 2u);

  p.OnEvent(SessionEnd{end + 1, "duration", std::nullopt});
  Report r = p.TakeReport();
  uint64_t dropped = 0;
  std::map<std::string, uint64_t> buckets;
  size_t janky = 0, frozen = 0, slow = 0;
  for (const FrameRecord& f : r.frames.frames) {
    dropped += f.dropped_frames;
    ++buckets[f.bucket];
    janky += f.deadline_missed && !f.frozen;
    frozen += f.frozen;
    slow += f.slow;
  }
  EXPECT_EQ(live.dropped_frames, dropped);
  EXPECT_EQ(live.frames_by_jank[1], janky);
  EXPECT_EQ(live.frames_by_jank[2], frozen);
  EXPECT_EQ(live.slow_frames, slow);
  for (const auto& [bucket, n] : buckets) EXPECT_EQ(live.frames_by_bucket[bucket], n) << bucket;
  // Matrix's FPS over the report's scene (one scene: the whole session).
  ASSERT_EQ(r.frames.scenes.size(), 1u);
  EXPECT_NEAR(live.fps, r.frames.scenes[0].matrix_fps, 0.01);
}

TEST(LiveStats, IntervalsSumToTheReportsCounts) {
  AnalysisOptions options;
  Pipeline p(options, nullptr, PipelineUse::kLive);
  p.OnEvent(Start(0));
  dynamic_cast<LiveStatsTracer*>(p.FindTracer("live_stats"))->KeepIntervals();
  std::vector<MessageInterval> taken;
  auto take = [&](uint64_t now) {
    auto more = dynamic_cast<LiveStatsTracer*>(p.FindTracer("live_stats"))->TakeIntervals(now);
    taken.insert(taken.end(), more.begin(), more.end());
  };
  uint64_t t = 0;
  for (uint64_t i = 1; i <= 300; ++i) {
    p.OnEvent(Begin(t, i, "m", i % 3 ? kPid : kPid + 1));
    p.OnEvent(End(t + i * 1000, i, i % 3 ? kPid : kPid + 1));
    t += 1 * kMs;
    if (i % 100 == 0) take(t);
  }
  p.OnEvent(Begin(t, 999, "open"));
  p.OnEvent(SessionEnd{t + kMs, "duration", std::nullopt});
  Report r = p.TakeReport();
  take(t + kMs);
  uint64_t counted = 0, total = 0;
  for (const auto& i : taken) {
    counted += i.cost.count;
    total += i.cost.total_ns;
    EXPECT_LT(i.begin_ns, i.end_ns);
  }
  uint64_t report_count = 0, report_total = 0;
  for (const auto& th : r.messages.threads) {
    report_count += th.cost.count;
    report_total += th.cost.total_ns;
  }
  EXPECT_EQ(counted, 300u);
  EXPECT_EQ(counted, report_count);
  EXPECT_EQ(total, report_total);
  EXPECT_EQ(taken.size(), 6u);  // 3 takes x 2 threads; the last take found nothing new
}

}  // namespace
}  // namespace looptrace
