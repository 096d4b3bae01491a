// End-to-end frames: every Choreographer frame of the sample target, with phases, dropped
// frames, buckets and delivered FPS, against its truth.
#include <gtest/gtest.h>

#include <cmath>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kToleranceNs = 500'000;  // 0.5 ms (issue #4)

std::string MatrixBucket(double dropped) {
  long rounded = std::lround(std::floor(dropped + 0.5));  // Java Math.round
  if (rounded >= 42) return "FROZEN";
  if (rounded >= 24) return "HIGH";
  if (rounded >= 9) return "MIDDLE";
  if (rounded >= 3) return "NORMAL";
  return "BEST";
}

class FramesTest : public BpfTest, public ::testing::WithParamInterface<std::pair<std::string, int>> {
 protected:
  TempDir dir_;
};

TEST_P(FramesTest, EveryFrameMatchesTheTruth) {
  auto [scenario, hz] = GetParam();
  std::vector<std::string> argv = {
      Looptrace(),       "run", "--profile", SampleProfile(), "-f",     "json",    "-o",
      dir_ / "out.json", "--",  SampleApp(), "--scenario",    scenario, "--truth", dir_ / "truth.jsonl"};
  if (hz) {
    argv.push_back("--refresh-rate");
    argv.push_back(std::to_string(hz));
  }
  auto r = RunCommand(argv, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto truth = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "frame");
  std::map<uint64_t, json> ours;
  for (const auto& f : OfType(lines, "frame")) ours[f["frame_id"]] = f;
  ASSERT_EQ(ours.size(), truth.size()) << "no frame missing or invented";

  int64_t max_error = 0;
  double denominator = 0;
  int64_t previous_end = 0;
  for (const auto& t : truth) {
    SCOPED_TRACE(t.dump().substr(0, 300));
    ASSERT_TRUE(ours.contains(t["frame_id"]));
    const json& f = ours[t["frame_id"]];
    int64_t interval = t["interval_ns"];
    EXPECT_EQ(f["interval_ns"].get<int64_t>(), interval);
    // Errors are distances from the truth's window around each hook (harness.h WindowError).
    auto near = [&](const json& measured, const json& truth_window, const std::string& what) {
      for (const std::string edge : {"begin", "end"}) {
        const int64_t error = WindowError(measured, truth_window, edge);
        EXPECT_LE(error, kToleranceNs) << what << " " << edge << " of frame " << t["frame_id"] << ": measured "
                                       << measured[edge + "_ns"] << ", truth " << truth_window.dump();
        max_error = std::max(max_error, error);
      }
    };
    int64_t vsync = t["vsync_ns"], end = t["end_ns"];
    near(f, t, "frame");
    EXPECT_EQ(f["cost_ns"].get<int64_t>(), f["end_ns"].get<int64_t>() - f["begin_ns"].get<int64_t>());
    EXPECT_EQ(f["vsync_ns"].get<int64_t>(), vsync);
    EXPECT_EQ(f["total_ns"].get<int64_t>(), f["end_ns"].get<int64_t>() - vsync) << "total counts from the vsync";
    ASSERT_EQ(f["phases"].size(), t["phases"].size());
    for (size_t i = 0; i < t["phases"].size(); ++i) {
      EXPECT_EQ(f["phases"][i]["phase"], t["phases"][i]["phase"]);
      near(f["phases"][i], t["phases"][i], "phase " + t["phases"][i]["phase"].dump());
    }
    // Dropped frames and buckets as computed from the truth.
    EXPECT_EQ(f["dropped_frames"].get<int64_t>(), (end - vsync) / interval);
    double matrix_dropped = std::max(0.0, double(end - vsync - interval) / double(interval));
    EXPECT_EQ(f["bucket"], MatrixBucket(matrix_dropped));
    EXPECT_EQ(f["scene"], t["scene"]);
    // Delivered FPS from the truth (FrameTracer's definition, README "Frames").
    int64_t from = std::max(t["intended_vsync_ns"].get<int64_t>(), previous_end);
    denominator += std::max<double>(double(end - from), double(interval));
    previous_end = end;
  }
  std::cout << scenario << (hz ? " @" + std::to_string(hz) + " Hz" : "") << ": " << truth.size()
            << " frames, max timestamp error " << max_error << " ns\n";
  if (scenario != "frames-refresh-change") {
    double refresh = 1e9 / truth.front()["interval_ns"].get<double>();
    double truth_fps = std::min(refresh, truth.size() * 1e9 / denominator);
    auto scenes = OfType(lines, "fps_scene");
    ASSERT_EQ(scenes.size(), 1u);
    EXPECT_NEAR(scenes[0]["delivered_fps"].get<double>(), truth_fps, truth_fps / 100);
    std::cout << "  delivered fps " << scenes[0]["delivered_fps"] << " (truth " << truth_fps << "), Matrix fps "
              << scenes[0]["fps"] << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, FramesTest,
                         ::testing::Values(std::pair{"frames-smooth", 0}, std::pair{"frames-jank", 60},
                                           std::pair{"frames-jank", 90}, std::pair{"frames-jank", 120},
                                           std::pair{"frames-busy-between", 0}, std::pair{"frames-refresh-change", 0}),
                         [](const auto& info) {
                           std::string name =
                               info.param.first + (info.param.second ? std::to_string(info.param.second) : "");
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST(FramesOff, ProfileWithoutFrameRolesSaysSoOnce) {
  RequireRootOrSkip();
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile("sample-usdt"), "--", SampleApp(), "--scenario",
                       "frames-smooth", "--count", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t at = r.out.find("frames: off");
  EXPECT_NE(at, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("frames: off", at + 1), std::string::npos);
}

TEST(ChromeTrace, LoadsAsTraceEventJson) {
  RequireRootOrSkip();
  TempDir dir;
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "chrome", "-o", dir / "trace.json", "--",
                       SampleApp(), "--scenario", "frames-jank"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(dir / "trace.json");
  json trace = json::parse(in);
  ASSERT_TRUE(trace["traceEvents"].is_array());
  size_t slices = 0, frames = 0, counters = 0;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid")) << e;
    if (e["ph"] == "X") {
      ++slices;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      if (e["name"].get<std::string>().starts_with("Frame")) ++frames;
    }
    if (e["ph"] == "C") ++counters;
  }
  EXPECT_EQ(frames, 150u);
  EXPECT_GT(slices, 150u * 6);  // frames, their 5 phases, and the messages
  EXPECT_GT(counters, 0u);
}

}  // namespace
}  // namespace looptrace::testing
