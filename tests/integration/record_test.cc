// End-to-end: looptrace attaches to the real sample target with real BPF programs and
// must report exactly the messages the target's own truth file lists.
#include <gtest/gtest.h>

#include <unistd.h>
#include <zlib.h>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kToleranceNs = 200'000;  // 0.2 ms (issue #2)

struct Accuracy {
  size_t matched = 0;
  int64_t max_error_ns = 0;
};

// Every truth message must be reported once with begin/end within tolerance, and
// nothing else may be reported.
Accuracy ExpectMatchesTruth(const std::vector<json>& measured, const std::vector<json>& truth) {
  Accuracy acc;
  std::map<std::pair<uint64_t, uint64_t>, json> by_key;
  for (const auto& m : measured) {
    auto key = std::pair{m["tid"].get<uint64_t>(), m["msg_id"].get<uint64_t>()};
    EXPECT_TRUE(by_key.emplace(key, m).second) << "message reported twice: " << m.dump();
  }
  for (const auto& t : truth) {
    auto key = std::pair{t["tid"].get<uint64_t>(), t["msg_id"].get<uint64_t>()};
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      ADD_FAILURE() << "missing message: " << t.dump();
      continue;
    }
    // Error = distance from the window [before hook, after hook] the truth measured
    // (the hook's instant is somewhere in it; it is ~1 us wide unless preempted).
    auto error = [](int64_t measured, int64_t before, int64_t after) -> int64_t {
      if (measured < before) return before - measured;
      if (measured > after) return measured - after;
      return 0;
    };
    int64_t begin_err = error(it->second["begin_ns"].get<int64_t>(), t["begin_ns"].get<int64_t>(),
                              t.value("begin_after_ns", t["begin_ns"].get<int64_t>()));
    int64_t end_err = error(it->second["end_ns"].get<int64_t>(), t["end_ns"].get<int64_t>(),
                            t.value("end_after_ns", t["end_ns"].get<int64_t>()));
    EXPECT_LE(begin_err, kToleranceNs) << t.dump();
    EXPECT_LE(end_err, kToleranceNs) << t.dump();
    if (t.contains("name") && it->second["name"].is_string()) {
      EXPECT_EQ(it->second["name"], t["name"]);
    }
    acc.max_error_ns = std::max({acc.max_error_ns, begin_err, end_err});
    ++acc.matched;
    by_key.erase(it);
  }
  for (const auto& [key, m] : by_key) ADD_FAILURE() << "invented message: " << m.dump();
  EXPECT_EQ(acc.matched, truth.size());
  return acc;
}

class RecordTest : public BpfTest {
 protected:
  TempDir dir_;
};

// The machine's steal time so far (/proc/stat, every CPU), in ns: USER_HZ ticks, so up to a
// tick per CPU short of what was stolen.
int64_t StolenNs() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  int64_t field = 0, steal = 0;
  in >> cpu;
  for (int i = 0; i < 8 && in >> field; ++i) steal = field;  // user nice system idle iowait irq softirq steal
  return steal * (1'000'000'000 / sysconf(_SC_CLK_TCK));
}

// Every message's CPU time against the thread's own CPU clock, read by the target just
// before the begin hook and just after the end hook. looptrace counts the time the thread
// held a CPU between the two hooks. The thread clock differs by what no switch edge bounds:
// each sleep and wake-up adds 10-60 us to it (more under load), and it leaves out time the
// hypervisor stole from the guest; hence the allowance both ways. The kernel's tick-granular
// sum_exec_runtime, used before, was off by up to a tick (4 ms here, on 1 ms messages) and
// fails this check on most messages. A stretch the kernel ran without a sched_switch event
// falls back to that figure (cpu_switch_untraced): each may put one message outside.
//
// Time a hypervisor steals from the guest while the thread holds its CPU is in looptrace's
// figure (the edges are timestamps) and not in the thread clock (the kernel leaves steal out
// of a thread's runtime): a message looptrace puts above the window is explained when the
// machine's steal counter moved by at least that much over the run (`stolen_ns`, tick-granular:
// /proc/stat counts in 10 ms steps, so a few hundred us stolen inside one message often shows
// as none). The target also counts its context switches over each message (getrusage): a
// message above the window that never left its CPU held it for its whole wall time, so its CPU
// time is that wall time (between the hooks' windows), whatever the thread clock was charged.
void ExpectCpuMatchesTruth(const std::vector<json>& report, const std::vector<json>& truth, int64_t stolen_ns) {
  std::map<uint64_t, json> by_id;
  for (const json& m : OfType(report, "message"))
    if (!m["msg_id"].is_null()) by_id[m["msg_id"].get<uint64_t>()] = m;
  size_t compared = 0, outside = 0, above = 0, held_throughout = 0;
  int64_t max_error = 0, above_ns = 0;
  for (const json& t : truth) {
    if (!t.contains("cpu_after_ns")) continue;
    auto it = by_id.find(t["msg_id"].get<uint64_t>());
    if (it == by_id.end()) continue;  // ExpectMatchesTruth reports missing messages
    const int64_t window = t["cpu_after_ns"].get<int64_t>() - t["cpu_before_ns"].get<int64_t>();
    const int64_t cpu = it->second["cpu_ns"].get<int64_t>();
    const int64_t cost = it->second["cost_ns"].get<int64_t>();
    // The window also holds both hooks' own windows (before hook .. after hook): a thread
    // held in a hook (a trap that took 350 us of a loaded guest's CPU) spends CPU the
    // message's edges cannot place on either side of them.
    const int64_t begin_hook = t.value("begin_after_ns", t["begin_ns"].get<int64_t>()) - t["begin_ns"].get<int64_t>();
    const int64_t end_hook = t.value("end_after_ns", t["end_ns"].get<int64_t>()) - t["end_ns"].get<int64_t>();
    const bool inside =
        cpu <= window + 250'000 + cost / 20 && cpu >= window - 250'000 - cost / 50 - begin_hook - end_hook;
    const int64_t wall_min = t["end_ns"].get<int64_t>() - t.value("begin_after_ns", t["begin_ns"].get<int64_t>());
    const int64_t wall_max = t.value("end_after_ns", t["end_ns"].get<int64_t>()) - t["begin_ns"].get<int64_t>();
    const bool never_switched = t.value("context_switches", uint64_t{1}) == 0;
    if (!inside && cpu > window && never_switched && cpu >= wall_min && cpu <= wall_max) {
      ++held_throughout;
      std::cout << "above, held its CPU throughout: cpu " << cpu << " ns, wall " << wall_min << ".." << wall_max
                << " ns, thread clock " << window << " ns: " << t.dump() << "\n";
    } else if (!inside && cpu > window) {
      ++above;
      above_ns += cpu - window;
      std::cout << "above: cpu " << cpu << " ns, thread clock " << window << " ns: " << t.dump() << "\n";
    } else if (!inside) {
      ++outside;
      std::cout << "outside: cpu " << cpu << " ns, thread clock " << window << " ns: " << t.dump() << "\n";
    } else {
      max_error = std::max(max_error, std::abs(cpu - window));
    }
    ++compared;
  }
  EXPECT_GE(compared, truth.size() / 2);
  const uint64_t untraced = Counter(report, "cpu_switch_untraced");
  // Above the window by more than the steal explains: each untraced switch may put one there.
  // (stolen_ns is whole ticks per CPU: a tick per CPU of rounding, once some steal showed.)
  const int64_t tick_ns = 1'000'000'000 / sysconf(_SC_CLK_TCK);
  const bool explained = stolen_ns > 0 && above_ns <= stolen_ns + tick_ns * sysconf(_SC_NPROCESSORS_ONLN);
  const size_t unexplained_above = explained ? 0 : above;
  EXPECT_LE(outside + unexplained_above, untraced)
      << outside << " of " << compared << " messages below the thread clock's window, " << above << " above it by "
      << above_ns << " ns with " << stolen_ns << " ns stolen";
  std::cout << "cpu time of " << compared << " messages: " << outside << " below, " << above << " above by " << above_ns
            << " ns, " << held_throughout << " above that held their CPU throughout (" << stolen_ns << " ns stolen; "
            << untraced << " untraced switches), the rest at most " << max_error << " ns from the thread clock\n";
}

TEST_F(RecordTest, RunReportsEveryMessageOfTheTruthWithin200us) {
  const int64_t stolen_before = StolenNs();
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "out.json", "--",
                       SampleApp(), "--scenario", "messages", "--truth", dir_ / "truth.jsonl"});
  const int64_t stolen_ns = StolenNs() - stolen_before;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto truth = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message");
  ASSERT_GE(truth.size(), 200u);
  Accuracy acc = ExpectMatchesTruth(OfType(lines, "message"), truth);
  std::cout << "matched " << acc.matched << " messages, max error " << acc.max_error_ns << " ns\n";
  ExpectCpuMatchesTruth(lines, truth, stolen_ns);
  EXPECT_EQ(Counter(lines, "ringbuf_full"), 0u);
  EXPECT_EQ(Counter(lines, "unmatched_dispatch_end"), 0u);
  EXPECT_EQ(Counter(lines, "string_read_failed"), 0u);
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["end_reason"], "target-exited");
  EXPECT_EQ(session[0]["profile"], "sample");
}

TEST_F(RecordTest, RecordAttachesToARunningProcessAndEndsWhenItExits) {
  Process app({SampleApp(), "--scenario", "messages", "--count", "150", "--start-delay-ms", "1500", "--truth",
               dir_ / "truth.jsonl"});
  const int64_t stolen_before = StolenNs();
  auto r = RunCommand({Looptrace(), "record", "--profile", SampleProfile(), "-p", std::to_string(app.pid()), "-f",
                       "json", "-o", dir_ / "out.json"});
  const int64_t stolen_ns = StolenNs() - stolen_before;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("exited"), std::string::npos) << r.err;
  EXPECT_EQ(app.Wait(30).exit_code, 0);
  auto lines = ReadJsonLines(dir_ / "out.json");
  ExpectMatchesTruth(OfType(lines, "message"), OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message"));
  ExpectCpuMatchesTruth(lines, OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message"), stolen_ns);
}

TEST_F(RecordTest, UsdtProfileSeesTheSameMessages) {
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile("sample-usdt"), "-f", "json", "-o",
                       dir_ / "out.json", "--", SampleApp(), "--scenario", "quick", "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  EXPECT_EQ(OfType(lines, "session")[0]["profile"], "sample-usdt");
  ExpectMatchesTruth(OfType(lines, "message"), OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message"));
}

TEST_F(RecordTest, ThreadFilterMainOrAll) {
  auto all = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "--threads", "all", "-f", "json", "-o",
                         dir_ / "all.json", "--", SampleApp(), "--scenario", "two-loopers", "--truth",
                         dir_ / "truth_all.jsonl"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto truth_all = OfType(ReadJsonLines(dir_ / "truth_all.jsonl"), "message");
  auto lines_all = ReadJsonLines(dir_ / "all.json");
  ExpectMatchesTruth(OfType(lines_all, "message"), truth_all);
  EXPECT_EQ(OfType(lines_all, "message_summary").size(), 2u);

  auto main_only = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "main.json",
                               "--", SampleApp(), "--scenario", "two-loopers", "--truth", dir_ / "truth_main.jsonl"});
  ASSERT_EQ(main_only.exit_code, 0) << main_only.err;
  auto process = OfType(ReadJsonLines(dir_ / "truth_main.jsonl"), "process");
  ASSERT_EQ(process.size(), 1u);
  std::vector<json> truth_main;
  for (const auto& m : OfType(ReadJsonLines(dir_ / "truth_main.jsonl"), "message"))
    if (m["tid"] == process[0]["pid"]) truth_main.push_back(m);
  auto lines_main = ReadJsonLines(dir_ / "main.json");
  ExpectMatchesTruth(OfType(lines_main, "message"), truth_main);
  EXPECT_GT(Counter(lines_main, "other_thread_hits"), 0u);
}

// Every place a uprobe profile reads a value from reaches the record unchanged, in 64 bits:
// each of the six register parameters, the two on the stack and the return value (BPF reads
// registers by index and the stack through a user read: a wrong index or width shows here).
TEST_F(RecordTest, EveryArgumentSourceOfAUprobeIsRecordedExactly) {
  const std::string fixture = std::string(LOOPTRACE_FIXTURE_DIR) + "/arg_sources";
  constexpr size_t kCalls = 20;
  for (int which = 1; which <= 8; ++which) {
    SCOPED_TRACE("id=arg" + std::to_string(which));
    const std::string profile = dir_ / ("arg" + std::to_string(which) + ".profile");
    std::ofstream(profile) << "profile arg-sources\n"
                           << "probe dispatch.begin uprobe exe lt_args8 id=arg" << which << "\n"
                           << "probe dispatch.end uretprobe exe lt_args8 id=ret\n";
    auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--profile", profile, "--", fixture,
                         std::to_string(which), std::to_string(kCalls)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The fixture's truth: "call I ARG1 ... ARG8" per call; the id is argument `which`, and
    // the return value (the end's id) is the same value.
    std::vector<uint64_t> expected;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("call ")) continue;
      std::istringstream words(line.substr(5));
      uint64_t call = 0, value = 0;
      words >> call;
      for (int k = 1; k <= which; ++k) words >> value;
      expected.push_back(value);
    }
    ASSERT_EQ(expected.size(), kCalls) << r.out;
    auto report = ReadJsonLines(dir_ / "out.json");
    std::vector<uint64_t> recorded;
    for (const json& m : OfType(report, "message")) recorded.push_back(m["msg_id"].get<uint64_t>());
    EXPECT_EQ(recorded, expected);
    EXPECT_EQ(Counter(report, "arg_read_failed"), 0u);
    EXPECT_EQ(Counter(report, "dispatch_id_mismatch"), 0u);
  }
}

TEST_F(RecordTest, SavedRecordingReplaysToTheSameReport) {
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "live.json",
                       "--save", dir_ / "rec.jsonl.gz", "--", SampleApp(), "--scenario", "quick"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto replay = RunCommand({Looptrace(), "report", dir_ / "rec.jsonl.gz", "-f", "json"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  std::ifstream live(dir_ / "live.json");
  std::stringstream live_text;
  live_text << live.rdbuf();
  EXPECT_EQ(replay.out, live_text.str());
  // The saved file really is gzip.
  std::ifstream raw(dir_ / "rec.jsonl.gz", std::ios::binary);
  unsigned char magic[2] = {0, 0};
  raw.read(reinterpret_cast<char*>(magic), 2);
  EXPECT_EQ(magic[0], 0x1f);
  EXPECT_EQ(magic[1], 0x8b);
}

TEST_F(RecordTest, TextReportHasSummaryAndGzOutputDecompresses) {
  auto text = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "--", SampleApp(), "--scenario", "quick"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* needle : {"messages on thread", "p50", "p99", "slowest messages", "msg.", "data quality"}) {
    EXPECT_NE(text.out.find(needle), std::string::npos) << needle << "\n" << text.out;
  }

  auto gz = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "out.json.gz",
                        "--", SampleApp(), "--scenario", "quick", "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(gz.exit_code, 0) << gz.err;
  gzFile f = gzopen((dir_ / "out.json.gz").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string content;
  char buf[4096];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) content.append(buf, n);
  gzclose(f);
  ExpectMatchesTruth(OfType(ParseJsonLines(content), "message"),
                     OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message"));
}

TEST_F(RecordTest, DurationStopsTheSessionAndLeavesTheTargetRunning) {
  Process app({SampleApp(), "--scenario", "idle", "--count", "4000"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  auto r = RunCommand(
      {Looptrace(), "record", "--profile", SampleProfile(), "-p", std::to_string(app.pid()), "-d", "1", "-f", "json"});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(took, 3.5);
  auto lines = ParseJsonLines(r.out);
  EXPECT_EQ(OfType(lines, "session")[0]["end_reason"], "duration");
  EXPECT_EQ(kill(app.pid(), 0), 0) << "target must keep running";
  EXPECT_EQ(app.Wait(30).exit_code, 0);
}

TEST_F(RecordTest, SigtermEndsTheSessionWithAReport) {
  Process app({SampleApp(), "--scenario", "idle", "--count", "4000"});
  Process tracer({Looptrace(), "record", "--profile", SampleProfile(), "-p", std::to_string(app.pid()), "-f", "json"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  tracer.Signal(SIGTERM);
  auto r = tracer.Wait(30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(OfType(ParseJsonLines(r.out), "session")[0]["end_reason"], "interrupted");
  EXPECT_EQ(app.Wait(30).exit_code, 0);
}

TEST_F(RecordTest, KillNineMidSessionLeavesTargetRunningAndNoProbes) {
  Process app({SampleApp(), "--scenario", "messages", "--start-delay-ms", "500", "--truth", dir_ / "truth.jsonl"});
  Process tracer({Looptrace(), "record", "--profile", SampleProfile(), "-p", std::to_string(app.pid())});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  tracer.Signal(SIGKILL);
  EXPECT_EQ(tracer.Wait(30).exit_code, 128 + SIGKILL);
  EXPECT_EQ(AttachedLooptracePrograms(), std::vector<std::string>{});
  EXPECT_EQ(app.Wait(60).exit_code, 0);
  EXPECT_GE(OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message").size(), 200u);
}

TEST_F(RecordTest, ProbesListsResolvedPointsWithTheirCost) {
  auto r = RunCommand({Looptrace(), "probes", "--exe", SampleApp(), "--profile", SampleProfile()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* needle :
       {"dispatch.begin", "sample_looper_dispatch_begin", "emulated (nop5)", "dispatch.end", "looptrace-sample-app"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }
  EXPECT_EQ(r.err.find("single-step"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace looptrace::testing
