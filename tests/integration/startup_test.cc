// End-to-end startup: `looptrace run` sees the exec and every lifecycle milestone of the
// sample target, to the millisecond of its truth, cold and warm.
#include <gtest/gtest.h>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

class StartupTest : public BpfTest {
 protected:
  std::vector<json> Run(const std::string& scenario, std::vector<std::string> options = {}) {
    std::vector<std::string> argv = {Looptrace(),
                                     "run",
                                     "--profile",
                                     SampleProfile(),
                                     "-f",
                                     "json",
                                     "-o",
                                     dir_ / "out.json",
                                     "--method-mapping",
                                     std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app.methodMapping.txt"};
    argv.insert(argv.end(), options.begin(), options.end());
    for (const auto& a : {std::string("--"), SampleApp(), std::string("--scenario"), scenario, std::string("--truth"),
                          dir_ / "truth.jsonl"})
      argv.push_back(a);
    auto r = RunCommand(argv, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    truth_ = ReadJsonLines(dir_ / "truth.jsonl");
    return ReadJsonLines(dir_ / "out.json");
  }

  // Every truth milestone (but process.start: looptrace sees the exec instead) must be in
  // the report, in order, within 1 ms.
  void ExpectMilestonesMatch(const json& startup) {
    std::vector<json> ours;
    for (const auto& m : startup["milestones"])
      if (m["name"] != "exec" && m["name"] != "fully.drawn.frame") ours.push_back(m);
    std::vector<json> truth;
    for (const auto& m : OfType(truth_, "milestone"))
      if (m["name"] != "process.start") truth.push_back(m);
    ASSERT_EQ(ours.size(), truth.size()) << startup["milestones"].dump(1);
    int64_t max_error = 0;
    for (size_t i = 0; i < truth.size(); ++i) {
      SCOPED_TRACE(truth[i].dump());
      EXPECT_EQ(ours[i]["name"], truth[i]["name"]);
      EXPECT_EQ(ours[i]["warm"], truth[i]["warm"]);
      if (truth[i].contains("activity")) {
        EXPECT_EQ(ours[i]["activity"], truth[i]["activity"]);
      }
      int64_t error = std::llabs(ours[i]["ts_ns"].get<int64_t>() - truth[i]["ts_ns"].get<int64_t>());
      EXPECT_LE(error, 1'000'000);
      max_error = std::max(max_error, error);
    }
    std::cout << truth.size() << " milestones, max error " << max_error << " ns\n";
    // The exec comes before the app's own first instruction (truth's process.start).
    auto start = OfType(truth_, "milestone").front();
    ASSERT_EQ(start["name"], "process.start");
    ASSERT_FALSE(startup["exec_ns"].is_null());
    EXPECT_LT(startup["exec_ns"].get<int64_t>(), start["ts_ns"].get<int64_t>());
  }

  TempDir dir_;
  std::vector<json> truth_;
};

TEST_F(StartupTest, ColdStartMilestones) {
  auto lines = Run("startup");
  auto startups = OfType(lines, "startup");
  ASSERT_EQ(startups.size(), 1u);
  const json& s = startups[0];
  EXPECT_EQ(s["tag"], "Trace_StartUp");
  EXPECT_FALSE(s["is_warm_start_up"].get<bool>());
  EXPECT_TRUE(s["cold_complete"].get<bool>());
  EXPECT_EQ(s["care_scene"], "sample.app.MainActivity");
  EXPECT_GT(s["exec_to_app_create_ns"].get<int64_t>(), 0);
  EXPECT_TRUE(s["missing"].empty());
  ExpectMilestonesMatch(s);
}

TEST_F(StartupTest, SplashThenCareScene) {
  auto lines = Run("startup-splash", {"--splash", "sample.app.SplashActivity"});
  auto s = OfType(lines, "startup").at(0);
  EXPECT_EQ(s["care_scene"], "sample.app.MainActivity");
  EXPECT_EQ(s["application_create_scene"], "sample.app.SplashActivity");
  ExpectMilestonesMatch(s);
  // The cold start runs to the care scene's focus, after the splash.
  int64_t main_focus = 0;
  for (const auto& m : OfType(truth_, "milestone"))
    if (m["name"] == "activity.focus" && m["activity"] == "sample.app.MainActivity") main_focus = m["ts_ns"];
  EXPECT_NEAR(s["care_focus_ns"].get<int64_t>(), main_focus, 1'000'000);
}

TEST_F(StartupTest, WarmStartIsClassifiedWarm) {
  auto lines = Run("startup-warm");
  auto startups = OfType(lines, "startup");
  ASSERT_EQ(startups.size(), 2u);
  EXPECT_FALSE(startups[0]["is_warm_start_up"].get<bool>());
  EXPECT_TRUE(startups[1]["is_warm_start_up"].get<bool>());
  ExpectMilestonesMatch(startups[0]);
  int64_t launch = 0, focus = 0;
  for (const auto& m : OfType(truth_, "milestone")) {
    if (!m["warm"].get<bool>()) continue;
    if (m["name"] == "activity.launch") launch = m["ts_ns"];
    if (m["name"] == "activity.focus") focus = m["ts_ns"];
  }
  EXPECT_NEAR(startups[1]["warm_ns"].get<int64_t>(), focus - launch, 1'000'000);
}

TEST_F(StartupTest, SlowCreateCallTreeMatchesTruth) {
  auto lines = Run("startup-slow-create", {"--startup-threshold", "1000"});
  auto s = OfType(lines, "startup").at(0);
  EXPECT_TRUE(s["over_threshold"].get<bool>());
  ASSERT_EQ(OfType(lines, "startup_evil_method").size(), 1u);
  // Methods in the startup span, in call order, against the tree.
  std::vector<json> methods;
  for (const auto& m : OfType(truth_, "method"))
    if (m["begin_ns"].get<int64_t>() >= s["app_create_begin_ns"].get<int64_t>() &&
        m["end_ns"].get<int64_t>() <= s["care_focus_ns"].get<int64_t>())
      methods.push_back(m);
  std::stable_sort(methods.begin(), methods.end(), [](const json& a, const json& b) {
    return a["begin_ns"].get<int64_t>() < b["begin_ns"].get<int64_t>();
  });
  const json& tree = s["tree"];
  ASSERT_EQ(tree.size(), methods.size() + 1) << tree.dump(1);
  for (size_t i = 0; i < methods.size(); ++i) {
    SCOPED_TRACE(methods[i].dump());
    EXPECT_EQ(tree[i + 1]["id"], methods[i]["method_id"]);
    EXPECT_EQ(tree[i + 1]["depth"].get<int>(), methods[i]["depth"].get<int>() + 1);
    int64_t cost = methods[i]["end_ns"].get<int64_t>() - methods[i]["begin_ns"].get<int64_t>();
    EXPECT_NEAR(tree[i + 1]["cost_ns"].get<int64_t>(), cost, 1'000'000);
  }
}

TEST_F(StartupTest, SessionEndingBeforeTheMilestonesSaysWhatWasReached) {
  auto lines = Run("startup", {"-d", "0.1"});
  auto s = OfType(lines, "startup");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0]["cold_complete"].get<bool>());
  EXPECT_FALSE(s[0]["missing"].empty());
  EXPECT_EQ(OfType(lines, "session")[0]["end_reason"], "duration");
}

TEST_F(StartupTest, CommandExitStatusIsReported) {
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "--", "/bin/sh", "-c", "exit 3"});
  // /bin/sh matches no built-in profile: a clear profile error, nothing attached.
  EXPECT_EQ(r.exit_code, 6) << r.err;
  auto ok = RunCommand(
      {Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "--", SampleApp(), "--scenario", "nope"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto session = OfType(ParseJsonLines(ok.out), "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["exit_status"], 2);  // the sample app's usage error
  EXPECT_NE(ok.err.find("exited with status 2"), std::string::npos) << ok.err;
}

}  // namespace
}  // namespace looptrace::testing
