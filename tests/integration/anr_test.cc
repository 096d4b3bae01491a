// End-to-end ANR: snapshots taken while the main thread is still stuck, with the reason,
// compared with the sample target's truth.
#include <gtest/gtest.h>

#include <set>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kSnapshotSlackNs = 100'000'000;  // snapshot by threshold + 100 ms

class AnrTest : public BpfTest {
 protected:
  struct Outcome {
    std::vector<json> lines;
    std::vector<json> truth;
    json stall;  // the truth's stall record
  };

  Outcome RunScenario(const std::string& scenario, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {Looptrace(), "run",  "--profile", SampleProfile(),
                                     "-f",        "json", "-o",        dir_ / "out.json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("--");
    for (const auto& a :
         {SampleApp(), std::string("--scenario"), scenario, std::string("--truth"), dir_ / "truth.jsonl"})
      argv.push_back(a);
    auto r = RunCommand(argv, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Outcome o;
    o.lines = ReadJsonLines(dir_ / "out.json");
    o.truth = ReadJsonLines(dir_ / "truth.jsonl");
    auto stalls = OfType(o.truth, "stall");
    if (!stalls.empty()) o.stall = stalls.front();
    return o;
  }

  // The one ANR report of the truth's stalled message, checked for timing.
  static json TheAnr(const Outcome& o) {
    auto anrs = OfType(o.lines, "anr");
    EXPECT_EQ(anrs.size(), 1u) << "one ANR per message";
    if (anrs.empty()) return json::object();
    const json& anr = anrs[0];
    EXPECT_EQ(anr["msg_id"], o.stall["msg_id"]);
    int64_t waited = anr["snapshot_ns"].get<int64_t>() - anr["begin_ns"].get<int64_t>();
    EXPECT_GE(waited, anr["threshold_ns"].get<int64_t>());
    EXPECT_LE(waited, anr["threshold_ns"].get<int64_t>() + kSnapshotSlackNs);
    std::cout << o.stall["kind"] << ": snapshot " << (waited - anr["threshold_ns"].get<int64_t>()) / 1e6
              << " ms after the threshold, stuck_reason " << anr["stuck_reason"] << "\n";
    // Final record: the full cost once the message ended.
    if (o.stall.contains("end_ns")) {
      EXPECT_TRUE(anr["finished"].get<bool>());
      int64_t truth_cost = o.stall["end_ns"].get<int64_t>() - o.stall["begin_ns"].get<int64_t>();
      EXPECT_NEAR(anr["cost_ns"].get<int64_t>(), truth_cost, 1'000'000);
    }
    // Matrix's ANR keys.
    for (const char* key : {"detail", "cost", "stackKey", "scene", "stack", "threadStack", "processPriority",
                            "processNice", "isProcessForeground", "memory", "tag", "process", "time"})
      EXPECT_TRUE(anr.contains(key)) << key;
    EXPECT_EQ(anr["detail"], "ANR");
    return anr;
  }

  static const json* Thread(const json& anr, uint64_t tid) {
    for (const auto& t : anr["threads"])
      if (t["tid"] == tid) return &t;
    return nullptr;
  }

  TempDir dir_;
};

TEST_F(AnrTest, BusyLoopIsRunning) {
  auto o = RunScenario("anr-busy");
  json anr = TheAnr(o);
  EXPECT_EQ(anr["stuck_reason"], "running");
  EXPECT_EQ(anr["threads"][0]["state"], "R");
  EXPECT_GT(anr["on_cpu_ns"].get<int64_t>(), anr["cost_ns"].get<int64_t>() / 2);
  // The LAG level came first, at 2 s.
  auto lags = OfType(o.lines, "lag");
  ASSERT_EQ(lags.size(), 1u);
  EXPECT_LE(lags[0]["snapshot_ns"].get<int64_t>() - lags[0]["begin_ns"].get<int64_t>(),
            2'000'000'000 + kSnapshotSlackNs);
}

TEST_F(AnrTest, SleepIsSleeping) {
  auto o = RunScenario("anr-sleep");
  json anr = TheAnr(o);
  // The report's `Cmd line:` is the whole command line, not the program's name alone.
  auto sessions = OfType(o.lines, "session");
  ASSERT_EQ(sessions.size(), 1u);
  const std::string command_line = sessions[0].value("command_line", "");
  EXPECT_TRUE(command_line.starts_with(SampleApp() + " --scenario anr-sleep --truth ")) << command_line;
  // Every record about a thread names it (the main thread by the program's comm).
  EXPECT_EQ(anr.value("thread_name", ""), "looptrace-sampl") << anr.dump().substr(0, 300);
  for (const auto& m : OfType(o.lines, "message")) EXPECT_EQ(m.value("thread_name", ""), "looptrace-sampl");
  EXPECT_EQ(anr["stuck_reason"], "sleep");
  EXPECT_EQ(anr["threads"][0]["state"], "S");
  EXPECT_EQ(anr["off_cpu_by_reason"][0]["reason"], "sleep");
  // The snapshot read the kernel stack of the thread still waiting.
  bool nanosleep = false;
  for (const auto& frame : anr["threads"][0]["kernel_stack"])
    nanosleep |= frame.get<std::string>().find("nanosleep") != std::string::npos;
  EXPECT_TRUE(nanosleep) << anr["threads"][0].dump(1);
}

TEST_F(AnrTest, LockWaitNamesTheHolder) {
  auto o = RunScenario("anr-lock");
  json anr = TheAnr(o);
  EXPECT_EQ(anr["stuck_reason"], "lock wait");
  EXPECT_EQ(anr["threads"][0]["futex_owner_tid"], o.stall["holder_tid"]);
  // When the wait ended, the holder woke the main thread.
  ASSERT_FALSE(anr["off_cpu"].empty());
  EXPECT_EQ(anr["off_cpu"][0]["reason"], "lock");
  EXPECT_EQ(anr["off_cpu"][0]["waker_tid"], o.stall["holder_tid"]);
}

TEST_F(AnrTest, DiskIo) {
  json anr = TheAnr(RunScenario("anr-io"));
  EXPECT_EQ(anr["stuck_reason"], "disk I/O");
  bool io = false;
  for (const auto& r : anr["off_cpu_by_reason"]) io |= r["reason"] == "io";
  EXPECT_TRUE(io) << anr["off_cpu_by_reason"];
}

TEST_F(AnrTest, DeadlockNamesBothThreads) {
  // The deadlocked target never ends: looptrace records for 6 s, then it is killed.
  Process app({SampleApp(), "--scenario", "anr-deadlock", "--start-delay-ms", "800", "--truth", dir_ / "truth.jsonl"});
  auto r = RunCommand({Looptrace(), "record", "--profile", SampleProfile(), "-p", std::to_string(app.pid()), "-d",
                       "6.5", "-f", "json", "-o", dir_ / "out.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  app.Signal(SIGKILL);
  app.Wait(10);
  auto stall = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "stall");
  ASSERT_EQ(stall.size(), 1u);
  auto anrs = OfType(ReadJsonLines(dir_ / "out.json"), "anr");
  ASSERT_EQ(anrs.size(), 1u);
  EXPECT_EQ(anrs[0]["stuck_reason"], "deadlock");
  EXPECT_FALSE(anrs[0]["finished"].get<bool>());
  std::set<uint64_t> cycle;
  for (const auto& tid : anrs[0]["deadlock_cycle"]) cycle.insert(tid.get<uint64_t>());
  EXPECT_EQ(cycle, (std::set<uint64_t>{stall[0]["main_tid"], stall[0]["worker_tid"]}));
}

TEST_F(AnrTest, IdleLooperIsNotAnAnr) {
  auto o = RunScenario("idle-long");
  EXPECT_TRUE(OfType(o.lines, "anr").empty());
  EXPECT_TRUE(OfType(o.lines, "lag").empty());
}

TEST_F(AnrTest, OpenMethodSliceMatchesTheTruth) {
  // ANR at 1 s inside the evil message: A, L running; B, C, D..G, H, I, J, K done.
  auto o = RunScenario("evil", {"--anr-threshold", "1000", "--lag-threshold", "900"});
  auto anrs = OfType(o.lines, "anr");
  ASSERT_EQ(anrs.size(), 1u);
  const json& tree = anrs[0]["tree"];
  std::map<uint64_t, json> truth_by_id;
  for (const auto& m : OfType(o.truth, "method"))
    if (m["msg_id"] == anrs[0]["msg_id"]) truth_by_id[m["method_id"]] = m;
  int64_t snapshot = anrs[0]["snapshot_ns"];
  size_t checked = 0;
  for (const auto& node : tree) {
    if (node["depth"] == 0) continue;
    const json& t = truth_by_id.at(node["id"]);
    EXPECT_EQ(node["depth"].get<int>(), t["depth"].get<int>() + 1);
    int64_t end = std::min(t["end_ns"].get<int64_t>(), snapshot);  // running methods end at the snapshot
    int64_t truth_cost = end - t["begin_ns"].get<int64_t>();
    EXPECT_NEAR(node["cost_ns"].get<int64_t>(), truth_cost, 1'000'000) << node;
    ++checked;
  }
  size_t begun = 0;
  for (const auto& [id, t] : truth_by_id) begun += t["begin_ns"].get<int64_t>() < snapshot;
  EXPECT_EQ(checked, begun);
}

TEST_F(AnrTest, SigquitFromAnotherProcessIsAConfirmedAnr) {
  Process app({SampleApp(), "--scenario", "anr-sleep", "--start-delay-ms", "500"});
  Process tracer({Looptrace(), "record", "--profile", SampleProfile(), "-p", std::to_string(app.pid()), "-f", "json"});
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // inside the 6 s sleep
  ASSERT_EQ(kill(app.pid(), SIGQUIT), 0);
  EXPECT_EQ(app.Wait(30).exit_code, 0) << "the target's signal catcher keeps it running";
  auto r = tracer.Wait(30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ParseJsonLines(r.out);
  auto signals = OfType(lines, "signal_anr");
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0]["sender_pid"].get<pid_t>(), getpid());
  EXPECT_EQ(signals[0]["detail"], "SIGNAL_ANR");
  EXPECT_TRUE(signals[0]["stalled"].get<bool>());
  EXPECT_EQ(signals[0]["name"], "anr.sleep");
  EXPECT_TRUE(OfType(lines, "self_sigquit").empty());
}

TEST_F(AnrTest, IdleHandlerAndInputLagAndLeakedBarrier) {
  auto idle = RunScenario("idle-stall");
  auto idle_lags = OfType(idle.lines, "idle_lag");
  ASSERT_EQ(idle_lags.size(), 1u);
  EXPECT_EQ(idle_lags[0]["detail"], "LAG_IDLE_HANDLER");
  EXPECT_GE(idle_lags[0]["cost_ns"].get<int64_t>(), 2'000'000'000);

  auto input = RunScenario("input-lag");
  auto input_lags = OfType(input.lines, "input_lag");
  ASSERT_EQ(input_lags.size(), 1u);
  EXPECT_EQ(input_lags[0]["detail"], "LAG_TOUCH");
  // Each edge between the target's clock reads around its hook (a target preempted between
  // a read and the hook is no error: CI saw 237 us).
  for (const auto& in : OfType(input.truth, "input")) {
    if (in["finish_ns"].get<int64_t>() - in["receive_ns"].get<int64_t>() < 2'000'000'000) continue;
    const int64_t begin = input_lags[0]["begin_ns"].get<int64_t>(), end = input_lags[0]["end_ns"].get<int64_t>();
    EXPECT_GE(begin, in["receive_ns"].get<int64_t>());
    EXPECT_LE(begin, in["receive_after_ns"].get<int64_t>());
    EXPECT_GE(end, in["finish_ns"].get<int64_t>());
    EXPECT_LE(end, in["finish_after_ns"].get<int64_t>());
  }

  auto barrier = RunScenario("barrier-leak");
  auto leaks = OfType(barrier.lines, "barrier_leak");
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ(leaks[0]["sync_messages_enqueued"], barrier.stall["sync_waited"]);
  EXPECT_GE(leaks[0]["duration_ns"].get<int64_t>(), 2'900'000'000);
}

}  // namespace
}  // namespace looptrace::testing

namespace looptrace::testing {
namespace {

// Without frame pointers the BPF frame-pointer walk loses the callers; --dwarf-unwind
// copies the stack top and unwinds it with DWARF CFI: the whole chain down to main.
TEST(AnrDwarfUnwind, StackOfAProgramWithoutFramePointers) {
  RequireRootOrSkip();
  TempDir dir;
  const std::string app = std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app-nofp";
  auto stack_of = [&](bool dwarf) {
    // One snapshot (no LAG first): the first unwind of the session.
    std::vector<std::string> argv = {Looptrace(), "run", "--profile",      SampleProfile(),   "-f",
                                     "json",      "-o",  dir / "out.json", "--anr-threshold", "1500"};
    if (dwarf) argv.push_back("--dwarf-unwind");
    for (const auto& a : {std::string("--"), app, std::string("--scenario"), std::string("anr-sleep"),
                          std::string("--stall-ms"), std::string("2000")})
      argv.push_back(a);
    auto r = RunCommand(argv, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto anrs = OfType(ReadJsonLines(dir / "out.json"), "anr");
    EXPECT_EQ(anrs.size(), 1u);
    return anrs.empty() ? json::array() : anrs[0]["threads"][0]["user_stack"];
  };
  auto contains = [](const json& stack, const std::string& needle) {
    for (const auto& frame : stack)
      if (frame.get<std::string>().find(needle) != std::string::npos) return true;
    return false;
  };
  json dwarf = stack_of(true);
  // The DWARF path names the sleeping frames with file:line from the debug info.
  EXPECT_TRUE(contains(dwarf, "SleepUntil")) << dwarf.dump(1);
  EXPECT_TRUE(contains(dwarf, "work.cc:")) << "file:line from DWARF\n" << dwarf.dump(1);
  EXPECT_TRUE(contains(dwarf, "Looper::Loop")) << dwarf.dump(1);
  EXPECT_TRUE(contains(dwarf, "Main")) << dwarf.dump(1);
  json fp = stack_of(false);
  EXPECT_FALSE(contains(fp, "work.cc:")) << "the frame-pointer walk has no line info\n" << fp.dump(1);
  EXPECT_FALSE(contains(fp, "Looper::Loop")) << "the frame-pointer walk should lose the callers\n" << fp.dump(1);
}

}  // namespace
}  // namespace looptrace::testing
