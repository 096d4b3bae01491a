// Stalls of a JVM started with no flags (how production JVMs run), from what HotSpot exposes
// anyway: monitor contention from libjvm.so's own lock code (ObjectMonitor::EnterI bounds a
// contended wait, ObjectMonitor::ExitEpilog names the holder that handed the monitor over),
// jstack's thread states and the Java line a stuck event dispatch thread waits on in stall
// snapshots. The program (tests/runtimes/java/EdtStalls.java) writes its own truth.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kMs = 1'000'000;

std::vector<std::string> EdtStalls(const std::vector<std::string>& app) { return AwtCommand("EdtStalls", app); }

const json* ThreadNamed(const json& snapshot, const std::string& name) {
  for (const auto& t : snapshot["threads"])
    if (t.value("name", "") == name) return &t;
  return nullptr;
}

bool StackHas(const json& thread, const std::string& frame) {
  for (const auto& f : thread.value("user_stack", json::array()))
    if (f.get<std::string>().find(frame) != std::string::npos) return true;
  return false;
}

class JvmStallsTest : public JvmTest {
 protected:
  JvmStallsTest() : JvmTest({"EdtStalls"}) {}

  // looptrace run -f json (no --profile: jvm-edt is picked) on one scenario of the program.
  std::vector<json> Run(const std::string& scenario, std::vector<std::string> options) {
    options.insert(options.begin(), {"-f", "json", "-o", dir_ / "out.json"});
    auto r =
        RunCommand(LooptraceRun(options, EdtStalls({"--scenario", scenario, "--truth", dir_ / "truth.jsonl"})), 300);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("profile jvm-edt"), std::string::npos) << r.err;
    return ReadJsonLines(dir_ / "out.json");
  }

  // The one message holding the truth's event (the event dispatch thread's).
  static const json* MessageOf(const std::vector<json>& messages, const json& event) {
    const json* found = nullptr;
    for (const auto& m : messages)
      if (m["begin_ns"] <= event["begin_ns"] && m["end_ns"] >= event["end_ns"]) found = &m;
    return found;
  }

  static std::vector<json> MonitorCauses(const json& record) {
    std::vector<json> out;
    for (const auto& c : record.value("stall_causes", json::array()))
      if (c["kind"] == "monitor") out.push_back(c);
    return out;
  }
};

TEST_F(JvmStallsTest, AContendedMonitorWithoutFlagsNamesItsHolderAndTheWaitWithin2ms) {
  if (IsSkipped()) return;
  // The holder keeps the monitor 300 ms: the LAG snapshot at 120 ms finds the thread blocked.
  auto lines = Run("lock", {"--evil-threshold", "50", "--lag-threshold", "120"});
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  auto waits = OfType(truth, "lock_wait");
  auto events = OfType(truth, "event");
  ASSERT_EQ(waits.size(), 1u);
  ASSERT_EQ(events.size(), 1u);
  auto check = [&](const json& record) {
    auto monitors = MonitorCauses(record);
    ASSERT_EQ(monitors.size(), 1u) << record["stall_causes"].dump(1);
    const json& monitor = monitors[0];
    // Its Java name, whole (the kernel keeps 15 bytes of it).
    EXPECT_EQ(monitor["holder_name"], "monitor-holder-thread");
    EXPECT_NE(monitor["holder_tid"], 0);
    EXPECT_NE(monitor["monitor"], 0);
    EXPECT_EQ(monitor.value("detail", ""), "");  // the class needs -XX:+DTraceMonitorProbes
    const int64_t error = std::llabs(monitor["cost_ns"].get<int64_t>() - Cost(waits[0]));
    EXPECT_LE(error, 2 * kMs) << monitor.dump();
    std::cout << fmt::format("{}: wait {:.3f} ms, truth {:.3f} ms\n", record["type"].get<std::string>(),
                             monitor["cost_ns"].get<int64_t>() / 1e6, Cost(waits[0]) / 1e6);
  };
  const auto evils = OfType(lines, "evil_method");
  const json* evil = MessageOf(evils, events[0]);
  ASSERT_NE(evil, nullptr) << "no slow message holds the event";
  check(*evil);
  const json* lag = nullptr;
  const auto lags = OfType(lines, "lag");
  for (const auto& l : lags)
    if (l["begin_ns"] == (*evil)["begin_ns"]) lag = &l;
  ASSERT_NE(lag, nullptr);
  EXPECT_EQ((*lag)["stuck_reason"], "monitor contention");
  check(*lag);
  // The snapshot's dump: the event dispatch thread blocked on the monitor in the event's
  // method, as jstack would say it; the holder running its Java code.
  const json* edt = ThreadNamed(*lag, "AWT-EventQueue-0");
  ASSERT_NE(edt, nullptr) << (*lag)["threads"].dump(1);
  EXPECT_EQ(edt->value("java_state", ""), "BLOCKED (on object monitor)") << edt->dump(1);
  EXPECT_TRUE(StackHas(*edt, "EdtStalls.contended (EdtStalls.java:")) << edt->dump(1);
  const json* holder = ThreadNamed(*lag, "monitor-holder-thread");
  ASSERT_NE(holder, nullptr);
  EXPECT_EQ(holder->value("java_state", ""), "RUNNABLE") << holder->dump(1);
  EXPECT_EQ((*holder)["tid"], MonitorCauses(*lag).at(0)["holder_tid"]);
}

TEST_F(JvmStallsTest, ObjectWaitIsNoMonitorContentionAndUncontendedMonitorsCostNoProbeHit) {
  if (IsSkipped()) return;
  for (const std::string scenario : {"wait", "uncontended"}) {
    SCOPED_TRACE(scenario);
    auto lines = Run(scenario, {"--evil-threshold", "20"});
    auto events = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "event");
    ASSERT_EQ(events.size(), 1u);
    const auto evils = OfType(lines, "evil_method");
    const json* evil = MessageOf(evils, events[0]);
    ASSERT_NE(evil, nullptr) << "no slow message holds the event";
    // A notified Object.wait() takes its monitor back through ReenterI (not probed), and an
    // uncontended monitor never reaches EnterI: no lock wait at all in the event.
    EXPECT_TRUE(MonitorCauses(*evil).empty()) << (*evil)["stall_causes"].dump(1);
  }
}

TEST_F(JvmStallsTest, AnAnrSnapshotOfAJvmWithoutFlagsNamesTheJavaLineItIsStuckOn) {
  if (IsSkipped()) return;
  auto lines = Run("stuck", {"--lag-threshold", "300", "--anr-threshold", "800"});
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  auto stuck = OfType(truth, "stuck");
  auto events = OfType(truth, "event");
  ASSERT_EQ(stuck.size(), 1u);
  ASSERT_EQ(events.size(), 1u);
  const auto anrs = OfType(lines, "anr");
  const json* anr = MessageOf(anrs, events[0]);
  ASSERT_NE(anr, nullptr) << "no ANR for the stuck event";
  EXPECT_EQ((*anr)["stuck_reason"], "sleep");
  EXPECT_EQ((*anr).value("thread_name", ""), "AWT-EventQueue-0");
  // The stalled thread first: its Java frames down to the line it sleeps on, and its state.
  const json& edt = (*anr)["threads"].at(0);
  EXPECT_EQ(edt.value("name", ""), "AWT-EventQueue-0");
  EXPECT_EQ(edt.value("java_state", ""), "TIMED_WAITING (sleeping)") << edt.dump(1);
  const std::string line = fmt::format("EdtStalls.stuck (EdtStalls.java:{})", stuck[0]["line"].get<int>());
  ASSERT_FALSE(edt.value("user_stack", json::array()).empty()) << edt.dump(1);
  EXPECT_TRUE(StackHas(edt, "java.lang.Thread.sleep")) << edt.dump(1);
  EXPECT_TRUE(StackHas(edt, line)) << line << "\n" << edt.dump(1);
  EXPECT_TRUE(StackHas(edt, "java.awt.EventQueue.dispatchEvent")) << edt.dump(1);
  // Every Java thread has its state (main polls with Thread.sleep(1): sleeping or running).
  const json* main = ThreadNamed(*anr, "main");
  ASSERT_NE(main, nullptr);
  EXPECT_NE(main->value("java_state", ""), "") << main->dump(1);
}

// The session's last report of this (helper 20's manual try gave an empty file): `attach` to a
// running JVM without flags, then `snapshot` while its event dispatch thread is stuck.
TEST_F(JvmStallsTest, ASnapshotOfAnAttachedJvmWithoutFlagsShowsTheStuckThreadsJavaLineAndState) {
  if (IsSkipped()) return;
  TempDir run_dir;  // the sessions' sockets, the test's own
  setenv("LOOPTRACE_RUN_DIR", run_dir.path().c_str(), 1);
  const std::string ready = dir_ / "ready";
  Process target(
      EdtStalls({"--scenario", "stuck", "--stuck-ms", "8000", "--truth", dir_ / "truth.jsonl", "--ready", ready}));
  WaitForFile(ready, 60000);
  ASSERT_TRUE(std::filesystem::exists(ready)) << "EdtStalls did not get ready";
  const std::string pid = std::to_string(target.pid());
  auto attached = RunCommand({Looptrace(), "attach", "-p", pid, "-o", dir_ / "final.json", "-f", "json"}, 120);
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_NE(attached.err.find("profile jvm-edt"), std::string::npos) << attached.err;
  std::ofstream(ready + ".go") << "";
  // 1.5 s of events, then the one that sleeps 8 s: snapshot 3 s into it.
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  auto snapshot = RunCommand({Looptrace(), "snapshot", "-p", pid, "-f", "json", "-o", dir_ / "dump.json"}, 60);
  auto text = RunCommand({Looptrace(), "snapshot", "-p", pid}, 60);
  EXPECT_EQ(RunCommand({Looptrace(), "detach", "-p", pid}, 60).exit_code, 0);
  unsetenv("LOOPTRACE_RUN_DIR");
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.err;
  auto dumps = OfType(ReadJsonLines(dir_ / "dump.json"), "thread_dump");
  ASSERT_EQ(dumps.size(), 1u) << "the snapshot file holds no dump";
  const json* edt = ThreadNamed(dumps[0], "AWT-EventQueue-0");
  ASSERT_NE(edt, nullptr) << dumps[0]["threads"].dump(1);
  EXPECT_EQ(edt->value("java_state", ""), "TIMED_WAITING (sleeping)") << edt->dump(1);
  EXPECT_TRUE(StackHas(*edt, "EdtStalls.stuck (EdtStalls.java:")) << edt->dump(1);
  EXPECT_EQ(dumps[0].value("main_state", ""), "sleep");  // the event dispatch thread's
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\"AWT-EventQueue-0\" tid="), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("java.lang.Thread.State: TIMED_WAITING (sleeping)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("EdtStalls.stuck (EdtStalls.java:"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace looptrace::testing
