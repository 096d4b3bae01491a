// Frames: drops, jank classes, refresh rates, delays by other messages, phases, bad input.
#include "looptrace/tracers/frames.h"

#include <gtest/gtest.h>

#include "frames_sim.h"

namespace looptrace {
namespace {

TEST(Frames, SmoothSixtyHzDropsNothing) {
  Sim sim;
  Grid grid{kBase, 60};
  sim.Focus("sample.app.MainActivity");
  for (int i = 0; i < 120; ++i) sim.Frame(grid);
  FramesReport r = sim.Finish();
  EXPECT_TRUE(r.enabled);
  ASSERT_EQ(r.frames.size(), 120u);
  for (const auto& f : r.frames) {
    EXPECT_EQ(f.interval_ns, 16'666'666u);
    EXPECT_EQ(f.refresh_hz, 60);
    EXPECT_EQ(f.dropped_frames, 0u);
    EXPECT_EQ(f.matrix_dropped, 0);
    EXPECT_EQ(f.bucket, "BEST");
    EXPECT_FALSE(f.deadline_missed || f.slow || f.frozen);
    EXPECT_EQ(f.skipped_frames, 0u);
    EXPECT_EQ(f.delay_by_messages_ns, 0u);
    EXPECT_EQ(f.scene, "sample.app.MainActivity");
    EXPECT_TRUE(f.finished);
    EXPECT_EQ(f.phases.size(), 5u);
  }
  ASSERT_EQ(r.scenes.size(), 1u);
  EXPECT_EQ(r.scenes[0].frames, 120u);
  EXPECT_DOUBLE_EQ(r.scenes[0].matrix_fps, 60);
  EXPECT_DOUBLE_EQ(r.scenes[0].delivered_fps, 60);
  EXPECT_EQ(r.scenes[0].drop_level.at("BEST"), 120u);
  EXPECT_EQ(r.scenes[0].drop_level.size(), 5u);
  EXPECT_EQ(r.scenes[0].janky, 0u);
  ASSERT_EQ(r.windows.size(), 1u);  // 2 s: flushed at the session end
  EXPECT_EQ(r.windows[0].frames, 120u);
  EXPECT_EQ(r.refresh_rates, std::vector<double>{60});
  EXPECT_EQ(r.worst.size(), 10u);
  EXPECT_TRUE(NoProblems(sim.stats()));
}

class JankFrames : public ::testing::TestWithParam<uint64_t> {};

TEST_P(JankFrames, DropsNPlusHalfIntervalsAsNFrames) {
  const uint64_t hz = GetParam();
  Sim sim;
  Grid grid{kBase, hz};
  sim.Focus("sample.app.MainActivity");
  const std::map<int, uint64_t> planned = {{20, 1}, {45, 3}, {70, 9}, {95, 24}, {120, 42}};
  const uint64_t interval = grid.Interval();
  std::map<uint64_t, uint64_t> planned_by_id;
  for (int i = 0; i < 150; ++i) {
    if (auto it = planned.find(i); it != planned.end()) {
      planned_by_id[i + 1] = it->second;
      sim.DropNext(it->second);
    }
    // The frame after a stretched one does 1 ms of work.
    sim.Frame(grid, (i > 0 && planned.contains(i - 1)) ? kMs : 3 * kMs);
  }
  FramesReport r = sim.Finish();
  ASSERT_EQ(r.frames.size(), 150u);
  const std::map<uint64_t, std::string> bucket = {
      {1, "BEST"}, {3, "NORMAL"}, {9, "MIDDLE"}, {24, "HIGH"}, {42, "FROZEN"}};
  size_t unplanned = 0;
  for (const auto& f : r.frames) {
    EXPECT_EQ(f.interval_ns, interval);
    EXPECT_EQ(f.refresh_hz, static_cast<double>(hz));
    auto it = planned_by_id.find(f.frame_id);
    if (it == planned_by_id.end()) {
      unplanned += f.dropped_frames > 0;
      continue;
    }
    const uint64_t n = it->second;
    EXPECT_EQ(f.dropped_frames, n) << "frame " << f.frame_id;
    EXPECT_NEAR(f.matrix_dropped, n - 0.5 + 100.0 * kUs / interval, 1e-6) << "frame " << f.frame_id;
    EXPECT_EQ(f.bucket, bucket.at(n)) << "frame " << f.frame_id;
    EXPECT_TRUE(f.deadline_missed);
    EXPECT_TRUE(f.slow);
    EXPECT_EQ(f.frozen, f.total_ns() >= 700 * kMs);
  }
  EXPECT_EQ(unplanned, 0u);
  // The frame after the 24-frame one starts ~23.5 intervals after its vsync: skipped 23.
  EXPECT_EQ(r.frames[96].frame_id, 97u);
  EXPECT_EQ(r.frames[95].skipped_frames, 0u);
  EXPECT_EQ(r.frames[96].skipped_frames, 23u);
  EXPECT_EQ(r.frames[96].dropped_frames, 0u);
  ASSERT_EQ(r.scenes.size(), 1u);
  const FpsSummary& s = r.scenes[0];
  EXPECT_EQ(s.drop_level.at("BEST"), 146u);
  EXPECT_EQ(s.drop_level.at("NORMAL"), 1u);
  EXPECT_EQ(s.drop_level.at("MIDDLE"), 1u);
  EXPECT_EQ(s.drop_level.at("HIGH"), 1u);
  EXPECT_EQ(s.drop_level.at("FROZEN"), 1u);
  EXPECT_EQ(s.drop_sum.at("BEST"), 1);  // round(0.5)
  EXPECT_EQ(s.drop_sum.at("NORMAL"), 3);
  EXPECT_EQ(s.drop_sum.at("FROZEN"), 42);
  EXPECT_EQ(s.janky, 5u);
  EXPECT_EQ(s.dropped_frames, 1u + 3 + 9 + 24 + 42);
  // Matrix: 145 frames of one interval, five of N + 1/2.
  const double matrix = 150 * 1e9 / ((145 + 1.5 + 3.5 + 9.5 + 24.5 + 42.5) * interval + 5 * 100.0 * kUs);
  EXPECT_NEAR(s.matrix_fps, matrix, 1e-6);
  EXPECT_LT(s.delivered_fps, s.matrix_fps + 1e-9);
  EXPECT_EQ(r.frames[r.worst[0]].frame_id, 121u);  // the 42-frame one
  EXPECT_EQ(r.frames[r.worst[1]].frame_id, 96u);
  EXPECT_EQ(sim.stats().Get(StatId::refresh_rate_changes), 0u);
}

INSTANTIATE_TEST_SUITE_P(Rates, JankFrames, ::testing::Values(60, 90, 120));

TEST(Frames, NinetyAndOneTwentyHzSmooth) {
  for (uint64_t hz : {90u, 120u}) {
    Sim sim;
    Grid grid{kBase, hz};
    for (int i = 0; i < 100; ++i) sim.Frame(grid, 2 * kMs);
    FramesReport r = sim.Finish();
    ASSERT_EQ(r.scenes.size(), 1u);
    EXPECT_EQ(r.frames[50].interval_ns, 1'000'000'000 / hz);
    EXPECT_DOUBLE_EQ(r.scenes[0].matrix_fps, static_cast<double>(hz));
    EXPECT_DOUBLE_EQ(r.scenes[0].refresh_hz, static_cast<double>(hz));
    EXPECT_EQ(r.scenes[0].janky, 0u);
    // 16 ms scaled: at 120 Hz a frame over 8 ms is slow.
  }
}

TEST(Frames, BusyEveryOtherVsyncStaysAtTheDisplayRate) {
  // 17 ms frames at 120 Hz: the app receives every other tick, but each frame starts more
  // than an interval late and its vsync moves to the tick in between.
  Sim sim;
  Grid grid{kBase, 120};
  for (int i = 0; i < 60; ++i) sim.Frame(grid, 17 * kMs);
  FramesReport r = sim.Finish();
  size_t skipped = 0;
  for (const auto& f : r.frames) {
    EXPECT_EQ(f.refresh_hz, 120) << f.frame_id;
    skipped += f.skipped_frames;
  }
  EXPECT_GT(skipped, 50u);
  EXPECT_EQ(sim.stats().Get(StatId::refresh_rate_changes), 0u);
  // 17 ms plus the start's lag behind the moved vsync: under 1e9 / 17 ms.
  EXPECT_LT(r.scenes[0].matrix_fps, 1e9 / (17 * kMs));
  EXPECT_GT(r.scenes[0].matrix_fps, 1e9 / (17 * kMs + 8'333'333));
}

TEST(Frames, SlowThresholdScalesWithTheRefreshRate) {
  Sim sim;
  Grid grid{kBase, 120};
  for (int i = 0; i < 10; ++i) sim.Frame(grid, 2 * kMs);
  const uint64_t vsync = sim.Frame(grid, 9 * kMs);  // 9 ms after its vsync: > 8 ms at 120 Hz
  FramesReport r = sim.Finish();
  const FrameRecord& f = r.frames.back();
  EXPECT_EQ(f.vsync_ns, vsync);
  EXPECT_TRUE(f.slow);
  EXPECT_TRUE(f.deadline_missed);
  EXPECT_EQ(f.dropped_frames, 1u);
  EXPECT_FALSE(r.frames[5].slow);
}

// 60 Hz for a second, then 120 Hz (and the reverse): every frame gets its own rate, even
// those while the detector was still collecting evidence.
void RefreshChange(uint64_t from_hz, uint64_t to_hz) {
  Sim sim;
  Grid first{kBase, from_hz};
  sim.Focus("sample.app.MainActivity");
  uint64_t last_vsync = 0;
  size_t first_count = 0;
  while (sim.now() < kBase + 1'000 * kMs) {
    last_vsync = sim.Frame(first, 3 * kMs);
    ++first_count;
  }
  sim.Focus("sample.app.VideoActivity");
  // Like the sample app's VsyncSource::SetRefreshRate: the next tick of the old grid is the
  // first of the new one (and its frame has the new rate: its next vsync is one new period on).
  Grid second{last_vsync + 1'000'000'000 / from_hz, to_hz};
  const uint64_t switch_at = second.origin;
  while (sim.now() < kBase + 2'000 * kMs) sim.Frame(second, 3 * kMs);
  FramesReport r = sim.Finish();
  size_t n_first = 0, n_second = 0;
  for (const auto& f : r.frames) {
    const uint64_t hz = f.vsync_ns < switch_at ? from_hz : to_hz;
    EXPECT_EQ(f.refresh_hz, static_cast<double>(hz)) << "frame " << f.frame_id;
    EXPECT_EQ(f.interval_ns, 1'000'000'000 / hz) << "frame " << f.frame_id;
    EXPECT_EQ(f.dropped_frames, 0u) << "frame " << f.frame_id;
    (hz == from_hz ? n_first : n_second)++;
  }
  EXPECT_EQ(n_first, first_count);
  EXPECT_NEAR(static_cast<double>(n_second), static_cast<double>(to_hz), 2.0);
  EXPECT_EQ(sim.stats().Get(StatId::refresh_rate_changes), 1u);
  EXPECT_EQ(r.refresh_rates, (std::vector<double>{double(from_hz), double(to_hz)}));
  ASSERT_EQ(r.scenes.size(), 2u);
  EXPECT_EQ(r.scenes[0].scene, "sample.app.MainActivity");
  EXPECT_DOUBLE_EQ(r.scenes[0].matrix_fps, static_cast<double>(from_hz));
  EXPECT_EQ(r.scenes[1].scene, "sample.app.VideoActivity");
  EXPECT_DOUBLE_EQ(r.scenes[1].matrix_fps, static_cast<double>(to_hz));
  // A scene change ends a window.
  ASSERT_EQ(r.windows.size(), 2u);
  EXPECT_EQ(r.windows[0].scene, "sample.app.MainActivity");
  EXPECT_EQ(r.windows[1].frames, n_second);
  EXPECT_EQ(r.scenes[1].frames, n_second);
}

TEST(Frames, RefreshChangeSixtyToOneTwenty) { RefreshChange(60, 120); }
TEST(Frames, RefreshChangeOneTwentyToSixty) { RefreshChange(120, 60); }

TEST(RefreshDetection, SkippedVsyncsKeepTheRate) {
  Grid grid{kBase, 60};
  std::vector<uint64_t> ts;
  // 1, 2, 1, 1, 3, 1, 2, 2, 1 ... ticks apart, and a 2 s pause.
  const int steps[] = {1, 2, 1, 1, 3, 1, 2, 2, 1, 1, 1, 4, 1, 1, 120, 1, 1, 2, 1};
  uint64_t k = 0;
  ts.push_back(grid.Tick(k));
  for (int s : steps) ts.push_back(grid.Tick(k += s));
  bool guessed = true;
  auto segments = DetectRefreshRate(ts, &guessed);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_FALSE(guessed);
  EXPECT_EQ(segments[0].from_ns, 0u);
  EXPECT_EQ(segments[0].hz, 60);
  EXPECT_EQ(segments[0].interval_ns, 16'666'666u);
}

TEST(RefreshDetection, StartingWithSkipsFindsTheBasePeriod) {
  Grid grid{kBase, 120};
  std::vector<uint64_t> ts = {grid.Tick(0), grid.Tick(2), grid.Tick(4), grid.Tick(5),
                              grid.Tick(6), grid.Tick(7), grid.Tick(8)};
  bool guessed = true;
  auto segments = DetectRefreshRate(ts, &guessed);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].hz, 120);
}

TEST(RefreshDetection, ShortBurstsOfDoublePeriodsDoNotHalveTheRate) {
  Grid grid{kBase, 120};
  std::vector<uint64_t> ts;
  uint64_t k = 0;
  for (int i = 0; i < 20; ++i) ts.push_back(grid.Tick(k++));
  for (int i = 0; i < 5; ++i) ts.push_back(grid.Tick(k += 2));  // 5 frames every other vsync
  for (int i = 0; i < 20; ++i) ts.push_back(grid.Tick(++k));
  auto segments = DetectRefreshRate(ts, nullptr);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].hz, 120);
}

TEST(RefreshDetection, NonIntegerRatesAndTooFewTimestamps) {
  std::vector<uint64_t> ts;
  for (int i = 0; i < 10; ++i) ts.push_back(kBase + i * 16'683'350ULL);  // 59.94 Hz
  auto segments = DetectRefreshRate(ts, nullptr);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_NEAR(segments[0].hz, 59.94, 0.001);
  EXPECT_EQ(segments[0].interval_ns, 16'683'350u);

  bool guessed = false;
  EXPECT_TRUE(DetectRefreshRate({kBase}, &guessed).empty());
  auto two = DetectRefreshRate({kBase, kBase + 11'111'111}, &guessed);
  EXPECT_TRUE(guessed);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].hz, 90);
}

TEST(Frames, ForcedRefreshRate) {
  Sim sim;
  sim.options().common.refresh_hz = 30;
  Grid grid{kBase, 60};
  for (int i = 0; i < 30; ++i) sim.Frame(grid, 20 * kMs);  // 60 Hz vsyncs, 20 ms frames
  FramesReport r = sim.Finish();
  size_t missed = 0;
  for (const auto& f : r.frames) {
    EXPECT_EQ(f.interval_ns, 33'333'333u);
    EXPECT_EQ(f.refresh_hz, 30);
    EXPECT_EQ(f.deadline_missed, f.total_ns() > 33'333'333u);
    missed += f.total_ns() > 16'666'666u;
  }
  EXPECT_GT(missed, 0u);  // they would have missed at 60 Hz
  EXPECT_EQ(sim.stats().Get(StatId::refresh_rate_assumed), 0u);
}

TEST(Frames, NonUiMessagesDelayFrames) {
  Sim sim;
  Grid grid{kBase, 60};
  for (int i = 0; i < 40; ++i) {
    sim.Frame(grid);
    if (i % 4 == 2) sim.Busy(35 * kMs, 2 * kMs);  // still running at the next vsync, and one more
  }
  FramesReport r = sim.Finish();
  ASSERT_EQ(r.frames.size(), 40u);
  size_t delayed = 0;
  for (size_t i = 0; i < r.frames.size(); ++i) {
    const FrameRecord& f = r.frames[i];
    if (i % 4 == 3) {
      ++delayed;
      // The vsync came during the message: it delayed the frame from the vsync to its end.
      const Message& busy = *std::find_if(sim.messages().begin(), sim.messages().end(), [&](const Message& m) {
        return m.name == "bg.work" && m.end_ns <= f.begin_ns && m.end_ns > f.intended_vsync_ns;
      });
      EXPECT_EQ(f.delay_by_messages_ns, busy.end_ns - f.intended_vsync_ns) << i;
      EXPECT_GT(f.skipped_frames, 0u) << i;
      EXPECT_EQ(f.dropped_frames, 0u) << i;  // Android does not see it: the vsync moved
    } else {
      EXPECT_EQ(f.delay_by_messages_ns, 0u) << i;
    }
  }
  EXPECT_EQ(delayed, 10u);
  ASSERT_EQ(r.scenes.size(), 1u);
  EXPECT_EQ(r.scenes[0].delay_by_messages_ns > 0, true);
  EXPECT_DOUBLE_EQ(r.scenes[0].matrix_fps, 60);
  // Per 4 frames: 3 intervals and a frame 3 ms long ending ~26.5 ms after its vsync.
  EXPECT_LT(r.scenes[0].delivered_fps, 55);
  EXPECT_GT(r.scenes[0].delivered_fps, 50);
}

TEST(Frames, DelayCountsNestedMessagesOnceAndIgnoresOtherThreads) {
  Sim sim;
  Grid grid{kBase, 60};
  sim.Frame(grid);
  // Nested 10 ms inside 20 ms, both before the next frame's vsync is handled; another thread too.
  const uint64_t t0 = sim.now() + 5 * kMs;
  Message inner{kTid, t0 + 2 * kMs, t0 + 12 * kMs, 90, "inner", 1, 0, std::nullopt};
  Message outer{kTid, t0, t0 + 20 * kMs, 91, "outer", 0, 0, std::nullopt};
  Message other{kTid + 1, t0, t0 + 30 * kMs, 92, "other", 0, 0, std::nullopt};
  sim.AddMessage(inner);
  sim.AddMessage(outer);
  sim.AddMessage(other);
  sim.Busy(0, 25 * kMs);  // move time past the messages
  sim.Frame(grid);
  FramesReport r = sim.Finish();
  ASSERT_EQ(r.frames.size(), 2u);
  const FrameRecord& f = r.frames[1];
  const uint64_t from = f.intended_vsync_ns;
  EXPECT_EQ(f.delay_by_messages_ns, t0 + 20 * kMs - std::max(from, t0));
}

TEST(Frames, PhaseCosts) {
  Sim sim;
  const uint64_t v = kBase;
  sim.Add(Probe(Role::kFrameBegin, v + kMs, {U("frame_id", 7), U("vsync_ns", v)}));
  sim.Add(Probe(Role::kPhaseBegin, v + 1 * kMs, {U("phase", 0)}));
  sim.Add(Probe(Role::kPhaseEnd, v + 2 * kMs, {U("phase", 0)}));
  sim.Add(Probe(Role::kPhaseBegin, v + 2 * kMs, {U("phase", 1)}));
  sim.Add(Probe(Role::kPhaseEnd, v + 5 * kMs, {U("phase", 1)}));
  sim.Add(Probe(Role::kPhaseBegin, v + 5 * kMs, {U("phase", 3)}));
  sim.Add(Probe(Role::kPhaseEnd, v + 12 * kMs, {U("phase", 3)}));
  sim.Add(Probe(Role::kFrameEnd, v + 13 * kMs, {U("frame_id", 7)}));
  FramesReport r = sim.Finish();
  ASSERT_EQ(r.frames.size(), 1u);
  const auto& phases = r.frames[0].phases;
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases[0].phase, kPhaseInput);
  EXPECT_EQ(phases[0].cost_ns(), 1 * kMs);
  EXPECT_EQ(phases[1].phase, kPhaseAnimation);
  EXPECT_EQ(phases[1].cost_ns(), 3 * kMs);
  EXPECT_EQ(phases[2].phase, kPhaseTraversal);
  EXPECT_EQ(phases[2].cost_ns(), 7 * kMs);
  EXPECT_EQ(r.frames[0].cost_ns(), 12 * kMs);
  EXPECT_EQ(r.frames[0].total_ns(), 13 * kMs);
  EXPECT_EQ(PhaseName(2), "INSETS_ANIMATION");
  EXPECT_EQ(PhaseName(4), "COMMIT");
  EXPECT_EQ(PhaseName(9), "PHASE_9");
  // One frame only: the rate is guessed (60 Hz), and that is counted.
  EXPECT_EQ(r.frames[0].interval_ns, 16'666'666u);
  EXPECT_EQ(sim.stats().Get(StatId::refresh_rate_assumed), 1u);
}

TEST(Frames, BadPhaseAndFrameEventsAreCounted) {
  Sim sim;
  const uint64_t v = kBase;
  sim.Add(Probe(Role::kPhaseBegin, v, {U("phase", 0)}));   // no frame
  sim.Add(Probe(Role::kPhaseEnd, v, {U("phase", 0)}));     // no frame
  sim.Add(Probe(Role::kFrameEnd, v, {U("frame_id", 1)}));  // no frame
  sim.Add(Probe(Role::kFrameBegin, v + kMs, {U("frame_id", 2), U("vsync_ns", v)}));
  sim.Add(Probe(Role::kPhaseEnd, v + 2 * kMs, {U("phase", 1)}));  // never began
  sim.Add(Probe(Role::kPhaseBegin, v + 2 * kMs, {U("phase", 1)}));
  sim.Add(Probe(Role::kPhaseBegin, v + 3 * kMs, {U("phase", 3)}));     // 1 never ended
  sim.Add(Probe(Role::kPhaseEnd, v + 4 * kMs, {U("phase", 4)}));       // mismatch
  sim.Add(Probe(Role::kPhaseBegin, v + 4 * kMs, {U("phase", 4)}));     // open at the frame's end
  sim.Add(Probe(Role::kFrameEnd, v + 5 * kMs, {U("frame_id", 99)}));   // wrong id
  sim.Add(Probe(Role::kFrameBegin, v + 6 * kMs, {U("frame_id", 3)}));  // no vsync_ns
  sim.Add(Probe(Role::kFrameEnd, v + 7 * kMs, {U("frame_id", 3)}));
  sim.Add(Probe(Role::kFrameBegin, v + 8 * kMs, {U("frame_id", 4), U("vsync_ns", v + 9 * kMs)}));  // vsync after begin
  sim.Add(Probe(Role::kFrameEnd, v + 9 * kMs, {U("frame_id", 4)}));
  sim.Add(Probe(Role::kVsync, v + 9 * kMs, {}));
  FramesReport r = sim.Finish();
  const Stats& p = sim.stats();
  EXPECT_EQ(p.Get(StatId::phase_without_frame), 2u);
  EXPECT_EQ(p.Get(StatId::frame_end_without_begin), 1u);
  EXPECT_EQ(p.Get(StatId::phase_end_without_begin), 1u);
  EXPECT_EQ(p.Get(StatId::phase_unclosed), 2u);
  EXPECT_EQ(p.Get(StatId::phase_mismatch), 1u);
  EXPECT_EQ(p.Get(StatId::frame_id_mismatch), 1u);
  EXPECT_EQ(p.Get(StatId::frame_without_vsync), 2u);
  EXPECT_EQ(p.Get(StatId::vsync_without_timestamp), 1u);
  ASSERT_EQ(r.frames.size(), 3u);
  ASSERT_EQ(r.frames[0].phases.size(), 3u);
  EXPECT_EQ(r.frames[0].phases[0].end_ns, v + 3 * kMs);
  EXPECT_EQ(r.frames[0].phases[2].end_ns, v + 5 * kMs);
  EXPECT_TRUE(r.frames[0].finished);
  EXPECT_EQ(r.frames[1].vsync_ns, v + 6 * kMs);
  EXPECT_EQ(r.frames[2].vsync_ns, v + 8 * kMs);
}

TEST(Frames, UnfinishedFrameEndsAtTheSessionEnd) {
  Sim sim;
  Grid grid{kBase, 60};
  for (int i = 0; i < 30; ++i) sim.Frame(grid);
  const uint64_t begin = sim.now() + 5 * kMs;
  sim.Add(Probe(Role::kFrameBegin, begin, {U("frame_id", 31), U("vsync_ns", begin - kMs)}));
  sim.Add(Probe(Role::kPhaseBegin, begin, {U("phase", 0)}));
  FramesReport r = sim.Finish(begin + 3'000 * kMs);
  ASSERT_EQ(r.frames.size(), 31u);
  const FrameRecord& f = r.frames.back();
  EXPECT_FALSE(f.finished);
  EXPECT_EQ(f.end_ns, begin + 3'000 * kMs);
  EXPECT_TRUE(f.frozen);
  ASSERT_EQ(f.phases.size(), 1u);
  EXPECT_EQ(f.phases[0].end_ns, f.end_ns);
  EXPECT_EQ(sim.stats().Get(StatId::unfinished_frames), 1u);
  EXPECT_EQ(r.scenes[0].frames, 30u);  // not in the FPS
  EXPECT_EQ(r.worst[0], 30u);          // but the worst frame
}

TEST(Frames, NestedFramesAndLostEnds) {
  Sim sim;
  const uint64_t v = kBase;
  sim.Add(Probe(Role::kFrameBegin, v + 1 * kMs, {U("frame_id", 1), U("vsync_ns", v)}));
  sim.Add(Probe(Role::kFrameBegin, v + 2 * kMs, {U("frame_id", 2), U("vsync_ns", v)}));
  sim.Add(Probe(Role::kFrameEnd, v + 5 * kMs, {U("frame_id", 1)}));  // 2 lost its end
  // Frame 3 begins in a message that ends without frame.end.
  Message m{kTid, v + 20 * kMs, v + 30 * kMs, 5, "Choreographer#doFrame", 0, 0, std::nullopt};
  sim.Add(Probe(Role::kFrameBegin, v + 21 * kMs, {U("frame_id", 3), U("vsync_ns", v + 16 * kMs)}));
  sim.AddMessage(m);
  // A frame.end on another thread with no frame.
  sim.Add(Probe(Role::kFrameEnd, v + 31 * kMs, {U("frame_id", 3)}, kTid + 1));
  FramesReport r = sim.Finish(v + 100 * kMs);
  ASSERT_EQ(r.frames.size(), 3u);
  EXPECT_EQ(r.frames[0].frame_id, 1u);
  EXPECT_TRUE(r.frames[0].finished);
  EXPECT_EQ(r.frames[1].frame_id, 2u);
  EXPECT_FALSE(r.frames[1].finished);
  EXPECT_EQ(r.frames[1].end_ns, v + 5 * kMs);
  EXPECT_EQ(r.frames[2].frame_id, 3u);
  EXPECT_FALSE(r.frames[2].finished);
  EXPECT_EQ(r.frames[2].end_ns, v + 30 * kMs);
  const Stats& p = sim.stats();
  EXPECT_EQ(p.Get(StatId::nested_frames), 1u);
  EXPECT_EQ(p.Get(StatId::frame_end_lost), 2u);
  EXPECT_EQ(p.Get(StatId::frame_end_without_begin), 1u);
  EXPECT_EQ(p.Get(StatId::unfinished_frames), 0u);
}

}  // namespace
}  // namespace looptrace
