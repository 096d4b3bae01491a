// StartupTracer through the pipeline: milestones, cold start through a splash screen, warm
// starts, and the call tree of a slow cold start from application create to the care scene.
#include "looptrace/tracers/startup.h"

#include <gtest/gtest.h>

#include "event_script.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;
using testing::U;

constexpr uint32_t kMain = 100;
constexpr uint64_t kMs = 1'000'000;

struct Startup {
  testing::EventScript script;
  void At(uint64_t ms, Role role, std::vector<EventArg> args = {}) {
    ProbeEvent e = Probe(role, ms * kMs, std::move(args), kMain);
    e.beat_index = ms;  // one beat per ms before it, so slices have bounds
    script.Add(e);
  }
  Report Run(const std::function<void(StartupOptions&)>& configure = nullptr) {
    AnalysisOptions options;
    if (configure) configure(options.Mutable<StartupOptions>("startup"));
    return script.Run(options, 100'000 * kMs);
  }
};

TEST(StartupTracer, ColdStartThroughASplashScreen) {
  Startup s;
  ProcessExec exec;
  exec.ts_ns = 10 * kMs;
  exec.pid = kMain;
  s.script.Add(exec);
  s.At(20, Role::kAppCreateBegin);
  s.At(220, Role::kAppCreateEnd);
  s.At(230, Role::kActivityLaunch, {S("name", "Splash")});
  s.At(300, Role::kFrameBegin, {U("frame_id", 1)});
  s.At(310, Role::kFrameEnd, {U("frame_id", 1)});
  s.At(320, Role::kActivityFocus, {S("name", "Splash")});
  s.At(600, Role::kActivityLaunch, {S("name", "Main")});
  s.At(900, Role::kActivityFocus, {S("name", "Main")});
  s.At(950, Role::kFullyDrawn);
  s.At(960, Role::kFrameBegin, {U("frame_id", 2)});
  s.At(970, Role::kFrameEnd, {U("frame_id", 2)});
  Report r = s.Run([](StartupOptions& o) { o.splash = {"Splash"}; });
  const StartupReport& st = r.startup;
  ASSERT_TRUE(st.seen);
  EXPECT_TRUE(st.cold_complete);
  EXPECT_EQ(st.care_scene, "Main");
  EXPECT_EQ(st.app_create_scene, "Splash");
  EXPECT_EQ(st.exec_to_app_create_ns, 10 * kMs);
  EXPECT_EQ(st.application_create_ns, 200 * kMs);
  EXPECT_EQ(st.first_screen_ns, 300 * kMs);  // app create -> first focus (the splash)
  EXPECT_EQ(st.cold_ns, 880 * kMs);          // app create -> the care scene's focus
  EXPECT_EQ(st.cold_from_exec_ns, 890 * kMs);
  EXPECT_EQ(st.ttid_ns, 300 * kMs);  // exec -> end of the first frame after the launch
  EXPECT_EQ(st.ttfd_ns, 960 * kMs);  // exec -> end of the first frame after fully drawn
  EXPECT_FALSE(st.over_threshold);
  EXPECT_TRUE(st.missing.empty());
  EXPECT_TRUE(st.tree.empty());  // under the threshold: no call tree
}

TEST(StartupTracer, SlowColdStartGetsTheTreeFromAppCreateToTheCareFocus) {
  Startup s;
  s.At(20, Role::kAppCreateBegin);
  s.At(1500, Role::kAppCreateEnd);
  s.At(1510, Role::kActivityLaunch, {S("name", "Main")});
  s.At(1800, Role::kActivityFocus, {S("name", "Main")});
  // The slice recorded for it (live: copied from the beat ring at the focus).
  MethodBeats beats;
  beats.span = "startup";
  beats.tid = kMain;
  beats.begin_ns = 20 * kMs;
  beats.end_ns = 1800 * kMs;
  beats.beats = {{30 * kMs, 15, true}, {1400 * kMs, 15, false}};
  s.script.Add(beats);
  Report r = s.Run([](StartupOptions& o) { o.cold_threshold_ns = 1'000 * kMs; });
  const StartupReport& st = r.startup;
  EXPECT_TRUE(st.over_threshold);
  EXPECT_TRUE(st.excessive == false);
  ASSERT_EQ(st.tree.size(), 2u);
  EXPECT_EQ(st.tree[0].node.cost_ns, 1780 * kMs);
  EXPECT_EQ(st.tree[1].node.id, 15u);
  EXPECT_EQ(st.tree[1].node.cost_ns, 1370 * kMs);
}

TEST(StartupTracer, WarmStartAfterTheColdOneAndAMissingFocus) {
  Startup s;
  s.At(20, Role::kAppCreateBegin);
  s.At(120, Role::kAppCreateEnd);
  s.At(130, Role::kActivityLaunch, {S("name", "Main")});
  s.At(200, Role::kActivityFocus, {S("name", "Main")});
  s.At(5000, Role::kActivityLaunch, {S("name", "Main")});  // launched again: warm
  s.At(7500, Role::kActivityFocus, {S("name", "Main")});
  s.At(9000, Role::kActivityLaunch, {S("name", "Detail")});  // never focused
  Report r = s.Run();
  const StartupReport& st = r.startup;
  ASSERT_EQ(st.warm_starts.size(), 2u);
  EXPECT_EQ(st.warm_starts[0].activity, "Main");
  EXPECT_EQ(st.warm_starts[0].cost_ns(), 2'500 * kMs);
  EXPECT_TRUE(st.warm_starts[0].excessive);        // Android vitals: over 2 s
  EXPECT_FALSE(st.warm_starts[0].over_threshold);  // Matrix: under 4 s
  EXPECT_EQ(st.warm_starts[1].activity, "Detail");
  EXPECT_EQ(st.warm_starts[1].focus_ns, 0u);
}

TEST(StartupTracer, ASessionEndingEarlyListsWhatWasMissed) {
  Startup s;
  s.At(20, Role::kAppCreateBegin);
  Report r = s.Run();
  EXPECT_FALSE(r.startup.cold_complete);
  EXPECT_EQ(r.startup.missing, (std::vector<std::string>{"app.create.end", "activity.launch", "first.frame",
                                                         "activity.focus", "care scene focus"}));
}

}  // namespace
}  // namespace looptrace
