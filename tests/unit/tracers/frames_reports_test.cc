// Frames in reports: a janky frame's call tree, Matrix's FPS windows, determinism.
#include "looptrace/tracers/frames.h"

#include <gtest/gtest.h>

#include "frames_sim.h"

namespace looptrace {
namespace {

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
