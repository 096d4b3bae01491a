#include "looptrace/tracers/frames.h"
#include "looptrace/tracers/evil_method.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>

#include "event_script.h"
#include "looptrace/report/chrome_trace.h"

namespace looptrace {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kUs = 1'000;
constexpr uint32_t kTid = 100;
constexpr uint64_t kBase = 1'000'000'000'000;  // CLOCK_MONOTONIC of the first vsync

using testing::S;
using testing::U;

ProbeEvent Probe(Role role, uint64_t ts, std::vector<EventArg> args, uint32_t tid = kTid) {
  return testing::Probe(role, ts, std::move(args), tid, kTid);
}

// A vsync grid: tick k at origin + floor(k * 1e9 / hz), like the sample app's vsync thread.
struct Grid {
  uint64_t origin;
  uint64_t hz;
  uint64_t Tick(uint64_t k) const { return origin + k * 1'000'000'000 / hz; }
  uint64_t Interval() const { return 1'000'000'000 / hz; }
  // The first tick strictly after `ts`.
  uint64_t After(uint64_t ts) const {
    uint64_t k = ts <= origin ? 0 : (ts - origin) * hz / 1'000'000'000;
    while (Tick(k) <= ts) ++k;
    while (k > 0 && Tick(k - 1) > ts) --k;
    return Tick(k);
  }
};

// Drives the pipeline like the sample app's Choreographer: each frame's vsync is requested
// 1 ms into the previous frame, received when the thread is free, doFrame runs in a message,
// frames starting an interval or more late are moved to the latest vsync (Android's skip).
class Sim {
 public:
  Sim() = default;
  // Changes the frame tracer's options from their defaults.
  explicit Sim(const std::function<void(FrameOptions&)>& configure) {
    configure(options_.Mutable<FrameOptions>("frames"));
  }

  uint64_t now() const { return now_; }
  AnalysisOptions& options() { return options_; }
  const std::vector<Message>& messages() const { return messages_; }
  const Stats& stats() const { return report_.stats; }

  void Add(ProbeEvent e) { script_.Add(std::move(e)); }
  void Focus(const std::string& scene) { Add(Probe(Role::kActivityFocus, now_, {S("name", scene)})); }

  // A non-UI message from now.
  void Busy(uint64_t cost_ns, uint64_t gap_ns = 0) {
    now_ += gap_ns;
    AddMessage(now_, now_ + cost_ns, "bg.work");
    now_ += cost_ns;
  }

  // One frame on `grid`; `end_at` (absolute) stretches it, else it costs `cost_ns`.
  // Returns the frame's (adjusted) vsync.
  uint64_t Frame(const Grid& grid, uint64_t cost_ns = 3 * kMs, uint64_t end_at = 0, bool emit_vsync = true) {
    const uint64_t tick = grid.After(request_);
    const uint64_t received = std::max(tick, now_) + 50 * kUs;
    if (emit_vsync) Add(Probe(Role::kVsync, received, {U("vsync_ns", tick)}));
    const uint64_t msg_begin = received + 10 * kUs;
    const uint64_t begin = msg_begin + 10 * kUs;
    const uint64_t interval = grid.Interval();
    uint64_t vsync = tick;
    if (begin - tick >= interval) vsync = tick + (begin - tick) / interval * interval;
    const uint64_t id = ++frame_id_;
    uint64_t end = end_at ? end_at : begin + cost_ns;
    // N + 1/2 intervals (+ 0.1 ms, as measured: exactly N - 1/2 would be Matrix's rounding edge).
    if (drop_next_) end = vsync + *drop_next_ * interval + interval / 2 + 100 * kUs;
    drop_next_.reset();
    Add(Probe(Role::kFrameBegin, begin, {U("frame_id", id), U("vsync_ns", vsync)}));
    // Five phases splitting [begin, end].
    const uint64_t step = (end - begin) / 5;
    for (uint32_t p = 0; p < 5; ++p) {
      Add(Probe(Role::kPhaseBegin, begin + p * step, {U("phase", p)}));
      Add(Probe(Role::kPhaseEnd, p == 4 ? end : begin + (p + 1) * step, {U("phase", p)}));
    }
    request_ = begin + std::min<uint64_t>(kMs, end - begin);  // the ANIMATION phase asks for the next one
    Add(Probe(Role::kFrameEnd, end, {U("frame_id", id)}));
    if (beats_for_next_) {
      MethodBeats b = *beats_for_next_;
      b.begin_ns = msg_begin;
      b.end_ns = end + 10 * kUs;
      script_.Add(b);  // recorded slice of the doFrame message
      beats_for_next_.reset();
    }
    AddMessage(msg_begin, end + 10 * kUs, "Choreographer#doFrame");
    now_ = end + 10 * kUs;
    return vsync;
  }

  void BeatsForNextFrame(MethodBeats beats) { beats_for_next_ = std::move(beats); }
  // The next frame ends at its vsync + (n + 1/2) intervals (the sample app's frames-jank).
  void DropNext(uint64_t n) { drop_next_ = n; }

  FramesReport Finish(uint64_t end_ns = 0) {
    report_ = script_.Run(options_, end_ns ? end_ns : now_ + kMs);
    return report_.frames;
  }

  void AddMessage(uint64_t begin, uint64_t end, const std::string& name) {
    Message m;
    m.tid = kTid;
    m.begin_ns = begin;
    m.end_ns = end;
    m.msg_id = ++msg_id_;
    m.name = name;
    AddMessage(m);
  }
  void AddMessage(const Message& m) {
    messages_.push_back(m);
    script_.AddMessage(m);
  }

 private:
  AnalysisOptions options_;
  testing::EventScript script_;
  Report report_;
  uint64_t now_ = kBase - 5 * kMs;
  uint64_t request_ = kBase - 5 * kMs;
  uint64_t frame_id_ = 0;
  uint64_t msg_id_ = 0;
  std::vector<Message> messages_;
  std::optional<MethodBeats> beats_for_next_;
  std::optional<uint64_t> drop_next_;
};

bool NoProblems(const Stats& p) {
  uint64_t sum = 0;
  for (StatId id :
       {StatId::phase_without_frame, StatId::phase_end_without_begin, StatId::phase_mismatch, StatId::phase_unclosed,
        StatId::frame_end_without_begin, StatId::frame_id_mismatch, StatId::nested_frames, StatId::frame_end_lost,
        StatId::unfinished_frames, StatId::frame_without_vsync, StatId::vsync_without_timestamp,
        StatId::refresh_rate_assumed, StatId::refresh_rate_changes})
    sum += p.Get(id);
  return sum == 0;
}

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
  Message inner{kTid, t0 + 2 * kMs, t0 + 12 * kMs, 90, "inner", 1, 0};
  Message outer{kTid, t0, t0 + 20 * kMs, 91, "outer", 0, 0};
  Message other{kTid + 1, t0, t0 + 30 * kMs, 92, "other", 0, 0};
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
  Message m{kTid, v + 20 * kMs, v + 30 * kMs, 5, "Choreographer#doFrame", 0, 0};
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

MethodBeats JankBeats() {
  MethodBeats b;
  b.tid = kTid;
  b.kind = MethodIdKind::kAddress;
  b.names = {{0x1000, "View::draw"}, {0x2000, "Layout::measure"}};
  return b;
}

// The frame's message is asked for its beats however high the slow-message threshold is
// (the pipeline asks for slices only above the lowest threshold of the tracers that want them).
void CheckJankyFrameKeepsItsMessageCallTree(uint64_t slow_message_threshold_ns) {
  Sim sim;
  sim.options().common.evil_threshold_ns = slow_message_threshold_ns;
  Grid grid{kBase, 60};
  for (int i = 0; i < 5; ++i) sim.Frame(grid);
  // Beats relative to the doFrame message, which begins 20 us before the frame.
  MethodBeats beats = JankBeats();
  const uint64_t tick = grid.After(sim.now() - 3 * kMs + kMs - 10 * kUs);
  const uint64_t msg_begin = tick + 60 * kUs;
  beats.beats = {{msg_begin + 100 * kUs, 0x1000, true},
                 {msg_begin + 200 * kUs, 0x2000, true},
                 {msg_begin + 600 * kMs, 0x2000, false},
                 {msg_begin + 790 * kMs, 0x1000, false}};
  sim.BeatsForNextFrame(beats);
  sim.Frame(grid, 800 * kMs);  // janky and over 700 ms
  sim.BeatsForNextFrame(JankBeats());
  sim.Frame(grid, 100 * kMs);  // janky but under the threshold
  sim.Frame(grid, 750 * kMs);  // long, without beats
  FramesReport r = sim.Finish();
  ASSERT_EQ(r.frames.size(), 8u);
  const FrameRecord& f = r.frames[5];
  EXPECT_TRUE(f.frozen);
  ASSERT_GE(f.tree.size(), 3u);
  EXPECT_EQ(f.tree[0].node.id, kDispatchMethodId);
  EXPECT_EQ(f.tree[1].name, "View::draw");
  EXPECT_EQ(f.tree[2].name, "Layout::measure");
  EXPECT_EQ(f.tree[2].node.depth, 2u);
  EXPECT_TRUE(r.frames[6].tree.empty());
  EXPECT_TRUE(r.frames[6].deadline_missed);
  EXPECT_TRUE(r.frames[7].tree.empty());
}

TEST(Frames, JankyFrameKeepsItsMessageCallTree) { CheckJankyFrameKeepsItsMessageCallTree(700 * kMs); }
TEST(Frames, JankyFrameKeepsItsMessageCallTreeUnderAHigherSlowMessageThreshold) {
  CheckJankyFrameKeepsItsMessageCallTree(10'000 * kMs);
}

TEST(Frames, MatrixWindowsOfTenSecondsWithMoreThanTwentyFrames) {
  Sim sim;
  Grid grid{kBase, 60};
  sim.Focus("A");
  while (sim.now() < kBase + 25'000 * kMs) sim.Frame(grid);
  sim.Focus("B");
  for (int i = 0; i < 15; ++i) sim.Frame(grid);  // too few for a window
  sim.Focus("C");
  for (int i = 0; i < 21; ++i) sim.Frame(grid);  // just enough
  FramesReport r = sim.Finish();
  ASSERT_EQ(r.windows.size(), 4u);
  EXPECT_EQ(r.windows[0].scene, "A");
  EXPECT_EQ(r.windows[0].frames, 601u);  // the 601st frame ends 10 s after the first
  EXPECT_EQ(r.windows[1].frames, 601u);
  EXPECT_EQ(r.windows[2].scene, "A");
  EXPECT_EQ(r.windows[3].scene, "C");
  EXPECT_EQ(r.windows[3].frames, 21u);
  for (const auto& w : r.windows) {
    EXPECT_DOUBLE_EQ(w.matrix_fps, 60);
    EXPECT_LE(w.begin_ns, w.end_ns);
  }
  ASSERT_EQ(r.scenes.size(), 3u);
  EXPECT_EQ(r.scenes[1].scene, "B");
  EXPECT_EQ(r.scenes[1].frames, 15u);

  Sim small([](FrameOptions& o) {
    o.window_ns = 1'000 * kMs;
    o.min_window_frames = 50;
  });
  for (int i = 0; i < 150; ++i) small.Frame(grid);
  FramesReport s = small.Finish();
  // 61 + 61 + 28 frames (frame 60 ends exactly 1 s after frame 0): the last is too small.
  ASSERT_EQ(s.windows.size(), 2u);
  EXPECT_EQ(s.windows[0].frames, 61u);
  EXPECT_EQ(s.windows[1].frames, 61u);
}

std::string Render(const FramesReport& frames, const std::vector<Message>& messages) {
  Report report;
  report.session.pid = kTid;
  report.session.begin_ns = kBase - 10 * kMs;
  report.messages.enabled = true;
  report.messages.messages = messages;
  report.frames = frames;
  std::ostringstream out;
  RenderChromeTrace(report, out);
  return out.str();
}

TEST(Frames, Deterministic) {
  auto run = [] {
    Sim sim;
    Grid grid{kBase, 60};
    sim.Focus("A");
    for (int i = 0; i < 60; ++i) {
      sim.Frame(grid, (i % 7 == 3) ? 40 * kMs : 3 * kMs);
      if (i % 5 == 1) sim.Busy(20 * kMs, kMs);
    }
    FramesReport r = sim.Finish();
    return Render(r, sim.messages());
  };
  const std::string a = run();
  EXPECT_EQ(a, run());
  EXPECT_GT(a.size(), 1000u);
}

}  // namespace
}  // namespace looptrace
