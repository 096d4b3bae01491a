// A session without messages (a JVM started with no flags): the sampled_tree tracer gives each
// sampled thread's profile instead (top frames by self and total samples, the thread's tree),
// rendered in text, JSON and folded; a session with messages gets none.
#include <gtest/gtest.h>

#include <sstream>

#include "event_script.h"
#include "looptrace/report/render.h"
#include "looptrace/tracers/sampled_tree.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::U;

constexpr uint32_t kPid = 100, kJavaMain = 102, kEdt = 107;
constexpr uint64_t kMs = 1'000'000;

StackSample OnCpu(uint64_t ts, uint32_t tid, std::vector<std::string> outermost_first) {
  StackSample s;
  s.ts_ns = ts;
  s.tid = tid;
  s.on_cpu = true;
  s.frames.assign(outermost_first.rbegin(), outermost_first.rend());
  return s;
}

SessionStart Start() {
  SessionStart s;
  s.pid = kPid;
  s.sample_hz = 100;
  return s;
}

// The main thread: 6 samples in heavy, 2 in light (one of them through heavy), all under run.
testing::EventScript TwoThreads() {
  testing::EventScript script;
  uint64_t ts = 0;
  for (int i = 0; i < 6; ++i) script.Add(OnCpu(ts += 10 * kMs, kJavaMain, {"Main.main", "Main.run", "Main.heavy"}));
  script.Add(OnCpu(ts += 10 * kMs, kJavaMain, {"Main.main", "Main.run", "Main.light"}));
  script.Add(OnCpu(ts += 10 * kMs, kJavaMain, {"Main.main", "Main.run", "Main.heavy", "Main.light"}));
  script.Add(OnCpu(ts += 10 * kMs, kEdt, {"java.lang.Thread.run", "EventQueue.dispatchEvent", "App.paint"}));
  ThreadName main_name;
  main_name.tid = kJavaMain;
  main_name.name = "main";
  script.Add(main_name);
  return script;
}

TEST(SessionProfile, ASessionWithoutMessagesShowsEachThreadsTopFramesAndTree) {
  Report r = TwoThreads().Run(AnalysisOptions{}, 2'000 * kMs, Start());
  ASSERT_EQ(r.session_profile.threads.size(), 2u);
  const ThreadProfile& main = r.session_profile.threads[0];  // most samples first
  EXPECT_EQ(main.tid, kJavaMain);
  EXPECT_EQ(main.samples, 8u);
  ASSERT_GE(main.top.size(), 2u);
  EXPECT_EQ(main.top[0].name, "Main.heavy");
  EXPECT_EQ(main.top[0].self_samples, 6u);
  EXPECT_EQ(main.top[0].total_samples, 7u);
  EXPECT_EQ(main.top[1].name, "Main.light");
  EXPECT_EQ(main.top[1].self_samples, 2u);
  EXPECT_EQ(main.tree.samples_on_cpu, 8u);
  EXPECT_EQ(main.tree.on_cpu_ns, 80 * kMs);  // 8 samples at 100 Hz
  EXPECT_EQ(r.session_profile.threads[1].tid, kEdt);

  std::ostringstream text, json, folded;
  MakeRenderer("text")->Render(r, text);
  MakeRenderer("json")->Render(r, json);
  MakeRenderer("folded")->Render(r, folded);
  EXPECT_NE(text.str().find("where the threads ran"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("thread 102 \"main\": 8 samples on CPU"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("   75.0%  87.5%  Main.heavy\n"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("[thread] thread 102 \"main\""), std::string::npos) << text.str();
  EXPECT_NE(json.str().find("\"type\":\"thread_profile\""), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"top\":[{\"name\":\"Main.heavy\",\"self_samples\":6,\"total_samples\":7}"),
            std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"thread_name\":\"main\""), std::string::npos) << json.str();
  // No slow span to draw: folded shows the session's stacks.
  EXPECT_NE(folded.str().find("[thread 102];Main.main;Main.run;Main.heavy 60000\n"), std::string::npos) << folded.str();
}

TEST(SessionProfile, ASessionWithMessagesHasNone) {
  testing::EventScript script = TwoThreads();
  script.Add(Probe(Role::kDispatchBegin, 500 * kMs, {U("id", 1)}, kPid));
  script.Add(Probe(Role::kDispatchEnd, 510 * kMs, {U("id", 1)}, kPid));
  Report r = script.Run(AnalysisOptions{}, 2'000 * kMs, Start());
  EXPECT_TRUE(r.session_profile.threads.empty());
  std::ostringstream text;
  MakeRenderer("text")->Render(r, text);
  EXPECT_EQ(text.str().find("where the threads ran"), std::string::npos) << text.str();
}

// A thread that only gets samples (no probe hit, no switch) does not keep them all queued.
TEST(SessionProfile, SamplesOfAThreadWithoutEventsGoToTheSessionAsTheyAge) {
  testing::EventScript script;
  for (uint64_t i = 1; i <= 400; ++i) script.Add(OnCpu(i * 10 * kMs, kJavaMain, {"Main.main", "Main.spin"}));
  Report r = script.Run(AnalysisOptions{}, 5'000 * kMs, Start());
  ASSERT_EQ(r.session_profile.threads.size(), 1u);
  EXPECT_EQ(r.session_profile.threads[0].samples, 400u);
}

}  // namespace
}  // namespace looptrace
