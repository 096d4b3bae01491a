// End-to-end on real event-loop runtimes: a GLib main loop, Android's native Looper
// (Debian's android-libutils) and a plain C epoll loop, each a small program of its own
// (tests/loops/) that writes the truth about its work. looptrace must pick the right profile
// without --profile, find every message, name them, and time the slow one within 1 ms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kToleranceNs = 1'000'000;  // 1 ms (issue #11)

std::string Program(const std::string& name) { return std::string(LOOPTRACE_BINARY_DIR) + "/" + name; }

int64_t I(const json& j, const char* key) { return j[key].get<int64_t>(); }
std::string Name(const json& m) { return m["name"].is_string() ? m["name"].get<std::string>() : ""; }

std::vector<json> WithName(const std::vector<json>& lines, const std::string& name) {
  std::vector<json> out;
  for (const auto& l : lines)
    if (Name(l) == name) out.push_back(l);
  return out;
}

// Truth entries of a kind and name, in time order.
std::vector<json> Truth(const std::vector<json>& truth, const std::string& type, const std::string& name) {
  std::vector<json> out;
  for (const auto& t : truth)
    if (t["type"] == type && (name.empty() || t["name"] == name)) out.push_back(t);
  return out;
}

// Every truth entry has exactly one measured message of the same name around it (the probe
// fires just outside the program's own timestamps) whose cost is within 1 ms of the truth's,
// and nothing else carries that name. Returns the worst cost error. A message may be longer
// than its truth by the time its thread spent off CPU in it: a preemption between the probe and
// the program's own clock read is in the message and not in the truth (CI's loaded machine
// once put over 1 ms there in one of 40 ticks), so only an excess the thread spent off CPU
// is allowed beyond the tolerance; a message shorter than its truth is not.
int64_t ExpectNamedMessagesMatch(const std::vector<json>& messages, const std::vector<json>& truth,
                                 const std::string& name) {
  auto measured = WithName(messages, name);
  auto expected = Truth(truth, truth.empty() ? "" : std::string(truth.front()["type"]), name);
  EXPECT_EQ(measured.size(), expected.size()) << name;
  auto matches = [&](const json& m, const json& t) {
    const int64_t excess = Cost(m) - Cost(t);
    const int64_t off_cpu = std::max<int64_t>(Cost(m) - I(m, "cpu_ns"), 0);
    return I(m, "begin_ns") <= I(t, "begin_ns") + kToleranceNs && I(m, "end_ns") >= I(t, "end_ns") - kToleranceNs &&
           excess >= -kToleranceNs && excess <= kToleranceNs + off_cpu;
  };
  int64_t worst = 0;
  for (const auto& t : expected) {
    auto it = std::find_if(measured.begin(), measured.end(), [&](const json& m) { return matches(m, t); });
    if (it == measured.end()) {
      const auto nearest = std::min_element(measured.begin(), measured.end(), [&](const json& a, const json& b) {
        return std::abs(I(a, "begin_ns") - I(t, "begin_ns")) < std::abs(I(b, "begin_ns") - I(t, "begin_ns"));
      });
      ADD_FAILURE() << "no message '" << name << "' matches the truth " << t.dump()
                    << (nearest != measured.end() ? "; nearest: " + nearest->dump() : std::string());
      continue;
    }
    worst = std::max(worst, std::abs(Cost(*it) - Cost(t)));
    measured.erase(it);
  }
  return worst;
}

// The depth-0 message (loop iteration / main-loop dispatch) containing [begin, end].
const json* Enclosing(const std::vector<json>& messages, const json& t) {
  for (const auto& m : messages)
    if (m["depth"] == 0 && I(m, "begin_ns") <= I(t, "begin_ns") && I(m, "end_ns") >= I(t, "end_ns")) return &m;
  return nullptr;
}

class LoopsTest : public BpfTest {
 protected:
  // `looptrace run` without --profile; the JSON report's lines.
  std::vector<json> Run(const std::vector<std::string>& program, std::string* err = nullptr) {
    return Run({}, program, err);
  }
  std::vector<json> Run(const std::vector<std::string>& options, const std::vector<std::string>& program,
                        std::string* err = nullptr) {
    std::vector<std::string> argv = {Looptrace(), "run", "-v", "-f", "json", "-o", dir_ / "out.json"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--");
    argv.insert(argv.end(), program.begin(), program.end());
    auto r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (err) *err = r.err;
    return ReadJsonLines(dir_ / "out.json");
  }

  // The epoll loop program (tests/loops/epoll_loop.c) waiting in `wait` ("epoll_wait" or
  // "select"): every iteration a message at its own boundaries, and the session's cost said.
  void ExpectIterationsMatchTheProgramsOwn(const std::string& wait);

  static void ExpectCleanSession(const std::vector<json>& lines, const std::string& profile,
                                 const std::string& definition) {
    auto session = OfType(lines, "session");
    ASSERT_EQ(session.size(), 1u);
    EXPECT_EQ(session[0]["profile"], profile);
    EXPECT_EQ(session[0]["message_definition"], definition);
    EXPECT_EQ(session[0]["end_reason"], "target-exited");
    EXPECT_EQ(Counter(lines, "ringbuf_full"), 0u);
    EXPECT_EQ(Counter(lines, "unmatched_dispatch_end"), 0u);
    EXPECT_EQ(Counter(lines, "dispatch_id_mismatch"), 0u);
  }

  TempDir dir_;
};

TEST_F(LoopsTest, GlibMessagesAreDispatchesWithTheirSourcesNamedByCallback) {
  std::string err;
  auto lines =
      Run({Program("looptrace-glib-loop"), "--truth", dir_ / "truth.jsonl", "--ticks", "40", "--slow-ms", "120"}, &err);
  EXPECT_NE(err.find("profile glib matches the target"), std::string::npos) << err;
  ExpectCleanSession(lines, "glib", "dispatch");
  auto messages = OfType(lines, "message");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  ASSERT_EQ(Truth(truth, "message", "on_tick").size(), 40u);
  ExpectNamedMessagesMatch(messages, truth, "on_tick");
  ExpectNamedMessagesMatch(messages, truth, "on_pipe_readable");
  int64_t slow_error = ExpectNamedMessagesMatch(messages, truth, "on_slow_idle");
  std::cout << "glib: slow callback's cost off by " << slow_error << " ns\n";
  // Named sources are nested in their g_main_context_dispatch; nothing else is named.
  for (const auto& m : messages) {
    if (Name(m).empty()) continue;
    EXPECT_EQ(m["depth"], 1) << m.dump();
    EXPECT_TRUE(Name(m) == "on_tick" || Name(m) == "on_pipe_readable" || Name(m) == "on_slow_idle") << m.dump();
  }
  // The program's own source type is not named, but its work is inside a message: its
  // dispatch, whose CPU time is the callback's. Its wall time is too, unless the thread was
  // preempted inside the dispatch but outside the callback (CI's loaded machine did that for
  // 2.6 ms once): a message that wrongly held a poll wait would be off in every dispatch, so
  // the wall time is checked on the median.
  auto custom = Truth(truth, "custom", "custom_callback");
  ASSERT_GE(custom.size(), 5u);
  std::vector<int64_t> wall_errors;
  for (const auto& t : custom) {
    const json* m = Enclosing(messages, t);
    ASSERT_NE(m, nullptr) << t.dump();
    EXPECT_LE(I(*m, "cpu_ns") - Cost(t), kToleranceNs) << m->dump();
    wall_errors.push_back(Cost(*m) - Cost(t));
  }
  std::nth_element(wall_errors.begin(), wall_errors.begin() + wall_errors.size() / 2, wall_errors.end());
  EXPECT_LE(wall_errors[wall_errors.size() / 2], kToleranceNs);
}

TEST_F(LoopsTest, AndroidLooperIterationsHoldNativeHandlersAndJavaMessages) {
  std::string err;
  auto lines = Run(
      {Program("looptrace-android-looper"), "--truth", dir_ / "truth.jsonl", "--messages", "24", "--slow-ms", "120"},
      &err);
  EXPECT_NE(err.find("profile android-looper matches the target"), std::string::npos) << err;
  ExpectCleanSession(lines, "android-looper", "poll-bounded");
  auto messages = OfType(lines, "message");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  // Native handlers and fd callbacks: nested messages named by their function.
  ExpectNamedMessagesMatch(messages, truth, "TickHandler::handleMessage");
  ExpectNamedMessagesMatch(messages, truth, "PipeCallback::handleEvent");
  ExpectNamedMessagesMatch(messages, truth, "android::SimpleLooperCallback::handleEvent");
  int64_t slow_error = ExpectNamedMessagesMatch(messages, truth, "SlowHandler::handleMessage");
  EXPECT_EQ(WithName(messages, "SlowHandler::handleMessage").size(), 1u);
  std::cout << "android-looper: slow handler's cost off by " << slow_error << " ns\n";
  for (const auto& m : messages)
    if (!Name(m).empty()) {
      EXPECT_EQ(m["depth"], 1) << m.dump();
      EXPECT_NE(Enclosing(messages, m), nullptr) << m.dump();
    }
  // "Java" messages run between pollOnce calls: each is in a loop iteration that holds
  // nothing else but its nested native work (within 1 ms).
  auto java = Truth(truth, "java", "JavaMessage");
  ASSERT_GE(java.size(), 12u);
  int64_t worst = 0;
  for (const auto& t : java) {
    const json* iteration = Enclosing(messages, t);
    ASSERT_NE(iteration, nullptr) << t.dump();
    EXPECT_TRUE(Name(*iteration).empty());
    int64_t nested = 0;
    for (const auto& m : messages)
      if (m["depth"] == 1 && I(m, "begin_ns") >= I(*iteration, "begin_ns") && I(m, "end_ns") <= I(*iteration, "end_ns"))
        nested += Cost(m);
    int64_t rest = Cost(*iteration) - nested - Cost(t);
    EXPECT_GE(rest, 0) << iteration->dump();
    EXPECT_LE(rest, kToleranceNs) << iteration->dump() << " vs " << t.dump();
    worst = std::max(worst, rest);
  }
  std::cout << "android-looper: Java message iterations hold at most " << worst << " ns of loop overhead\n";
}

TEST_F(LoopsTest, EpollLoopIterationsMatchTheProgramsOwn) { ExpectIterationsMatchTheProgramsOwn("epoll_wait"); }

// The same loop waiting in select(2): Python's select.select loops (pydoc's server) too.
TEST_F(LoopsTest, SelectLoopIterationsMatchTheProgramsOwn) { ExpectIterationsMatchTheProgramsOwn("select"); }

void LoopsTest::ExpectIterationsMatchTheProgramsOwn(const std::string& wait) {
  std::string err;
  std::vector<std::string> argv = {
      Program("looptrace-epoll-loop"), "--truth", dir_ / "truth.jsonl", "--iterations", "60", "--slow-ms", "120"};
  if (wait == "select") argv.insert(argv.end(), {"--select", "1"});
  auto lines = Run(argv, &err);
  EXPECT_NE(err.find("profile epoll matches the target"), std::string::npos) << err;
  ExpectCleanSession(lines, "epoll", "poll-bounded");
  auto messages = OfType(lines, "message");
  auto truth = Truth(ReadJsonLines(dir_ / "truth.jsonl"), "iteration", "");
  ASSERT_EQ(truth.size(), 59u);
  ASSERT_EQ(messages.size(), truth.size()) << "every iteration, and nothing else";
  int64_t worst = 0;
  size_t outside = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    const json& m = messages[i];
    const json& t = truth[i];
    EXPECT_EQ(m["depth"], 0);
    // The poll's return comes just before the program's first timestamp, the next call just
    // after its last.
    EXPECT_LE(I(m, "begin_ns"), I(t, "begin_ns")) << i;
    EXPECT_GE(I(m, "end_ns"), I(t, "end_ns")) << i;
    int64_t error = std::max(I(t, "begin_ns") - I(m, "begin_ns"), I(m, "end_ns") - I(t, "end_ns"));
    // One iteration of the 59 may lose its CPU between the program's clock read and the probe
    // (CI once held one 2.3 ms there, on CPU by the thread's own accounting: a busy virtual
    // machine's steal or interrupts), never by more than a few ms.
    if (error > kToleranceNs) {
      ++outside;
      std::cout << "outside the tolerance: " << m.dump() << " vs " << t.dump() << "\n";
    }
    EXPECT_LE(error, 5 * kToleranceNs) << m.dump() << " vs " << t.dump();
    worst = std::max(worst, error);
    if (t["name"] == "slow") {
      EXPECT_LE(std::abs(Cost(m) - Cost(t)), kToleranceNs);
    }
  }
  EXPECT_LE(outside, 1u) << "iterations whose boundaries are off by more than " << kToleranceNs << " ns";
  std::cout << wait << ": " << messages.size() << " iterations, boundaries off by at most " << worst << " ns\n";
  // Issue 32: between iterations the loop waits in epoll_wait without a stack taken, and the
  // report says what the session cost (probe hits, BPF time, a hit's measured cost, the
  // loader's CPU).
  auto stats = OfType(lines, "stats");
  ASSERT_EQ(stats.size(), 1u);
  const json& counters = stats[0]["counters"];
  EXPECT_GT(counters["switch_stacks_idle"].get<uint64_t>(), 0u) << counters.dump();
  for (const char* name : {"cost_probe_hits", "cost_probe_bpf_ns", "cost_uprobe_hit_ns", "cost_loader_cpu_ns"})
    EXPECT_GT(counters[name].get<uint64_t>(), 0u) << name;
  // Hits are counted, only their BPF time is estimated: the program called its wait once
  // per iteration (the last, unlogged one too), an entry hit and a return hit each.
  EXPECT_EQ(counters["cost_probe_hits"].get<uint64_t>(), 2 * (truth.size() + 1)) << counters.dump();
}

// --cpu-budget below what any session costs: the sample rate halves each second while the
// loop spins through a 3 s iteration, the report says so, and the samples taken at the lower
// rates still add up to the CPU time the program spent (each weighs its own period).
TEST_F(LoopsTest, CpuBudgetLowersTheSampleRateAndKeepsSampledTimeTrue) {
  const std::string saved = dir_ / "events.jsonl";
  auto lines = Run(
      {"--cpu-budget", "0.001", "--save", saved},
      {Program("looptrace-epoll-loop"), "--truth", dir_ / "truth.jsonl", "--iterations", "20", "--slow-ms", "3000"});
  EXPECT_EQ(Counter(lines, "cost_budget_ns_per_s"), 10'000u);  // 0.001% of one CPU
  EXPECT_LT(Counter(lines, "cost_budget_lowest_hz"), 997u);
  EXPECT_GT(Counter(lines, "cost_budget_lowered_ns"), 1'000'000'000u);
  EXPECT_GT(Counter(lines, "cost_budget_over_ns"), 1'000'000'000u);
  uint64_t busy_ns = 0;  // the program's own iterations, each spinning on CPU
  for (const json& t : Truth(ReadJsonLines(dir_ / "truth.jsonl"), "iteration", "")) busy_ns += Cost(t);
  ASSERT_GT(busy_ns, 3'000'000'000u);
  uint64_t samples = 0;
  for (const json& e : OfType(lines, "evil_method")) samples += e["sampled"]["samples_on_cpu"].get<uint64_t>();
  const double at_full_rate = busy_ns / 1e9 * 997;
  EXPECT_GT(samples, 0u);
  EXPECT_LT(samples, 0.8 * at_full_rate);
  // The session's folded stacks, from the saved events: on-CPU samples weigh their periods (us).
  auto r = RunCommand(
      {Looptrace(), "report", saved, "-f", "folded", "--folded-scope", "session", "-o", dir_ / "session.folded"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream folded(dir_ / "session.folded");
  double on_cpu_us = 0;
  for (std::string line; std::getline(folded, line);)
    if (line.find("[off-cpu") == std::string::npos) on_cpu_us += std::stod(line.substr(line.rfind(' ') + 1));
  EXPECT_NEAR(on_cpu_us * 1000, static_cast<double>(busy_ns), 0.15 * busy_ns);
  std::cout << samples << " samples on CPU in slow iterations (" << at_full_rate << " at 997 Hz); sampled " << on_cpu_us
            << " us on CPU of " << busy_ns / 1000 << " us busy\n";
}

TEST_F(LoopsTest, StallAndEvilMethodReportsWorkOnLoopIterations) {
  // Low thresholds so the 600 ms handler is a LAG (snapshot taken while it runs, with room
  // for a loaded machine) and an EvilMethod: both on the poll-bounded iteration, the stall
  // named after the handler.
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--lag-threshold", "100",
                       "--evil-threshold", "400", "--", Program("looptrace-android-looper"), "--truth",
                       dir_ / "truth.jsonl", "--messages", "12", "--slow-ms", "600"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  auto slow = Truth(truth, "native", "SlowHandler::handleMessage");
  ASSERT_EQ(slow.size(), 1u);
  auto lags = OfType(lines, "lag");
  ASSERT_EQ(lags.size(), 1u) << r.err;
  EXPECT_EQ(lags[0]["name"], "SlowHandler::handleMessage");
  EXPECT_LE(I(lags[0], "begin_ns"), I(slow[0], "begin_ns"));  // the iteration it runs in
  // One slow event, one evil method: the iteration, with the handler nested in it (issue 30).
  auto evil = OfType(lines, "evil_method");
  ASSERT_EQ(evil.size(), 1u) << "the iteration, the handler nested in it";
  // The iteration holds the handler (and the ticks that became due meanwhile, which
  // pollInner runs right after it).
  EXPECT_TRUE(Name(evil[0]).empty()) << evil[0].dump();
  EXPECT_GE(I(evil[0], "cost_ns"), Cost(slow[0])) << evil[0].dump();
  ASSERT_TRUE(evil[0].contains("nested")) << evil[0].dump();
  ASSERT_EQ(evil[0]["nested"].size(), 1u) << evil[0].dump();
  const json& handler = evil[0]["nested"][0];
  EXPECT_EQ(Name(handler), "SlowHandler::handleMessage");
  // The handler as the program timed it.
  EXPECT_LE(std::abs(I(handler, "cost_ns") - Cost(slow[0])), kToleranceNs) << handler.dump();
}

TEST_F(LoopsTest, ProbesExplainsWhichProfileFitsARunningProcessAndWhy) {
  Process glib({Program("looptrace-glib-loop"), "--start-delay-ms", "4000"});
  Process looper({Program("looptrace-android-looper"), "--start-delay-ms", "4000"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // libraries mapped
  auto r = RunCommand({Looptrace(), "probes", "-p", std::to_string(glib.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("auto-detection"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("glib           picked"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("epoll          fits too"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("android-looper no       "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libutils.so"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("profile glib (builtin:glib), messages dispatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("*(g_idle_funcs+16)"), std::string::npos) << r.out;

  auto a = RunCommand({Looptrace(), "probes", "-p", std::to_string(looper.pid())});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("android-looper picked"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("SlowHandler::handleMessage"), std::string::npos) << a.out;

  // A profile for a runtime the process does not have: one error line naming what is missing.
  auto wrong = RunCommand({Looptrace(), "record", "-p", std::to_string(glib.pid()), "--profile", "android-looper"});
  EXPECT_EQ(wrong.exit_code, 6) << wrong.err;
  EXPECT_NE(wrong.err.find("profile android-looper does not fit pid"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("libutils.so"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("hint: `looptrace probes -p"), std::string::npos) << wrong.err;
}

TEST_F(LoopsTest, RecordByPidDetectsGlibAndTimesTheSlowCallback) {
  Process app({Program("looptrace-glib-loop"), "--truth", dir_ / "truth.jsonl", "--ticks", "30", "--slow-ms", "80",
               "--start-delay-ms", "1500"});
  // Auto-detection reads the libraries the process has mapped: let the loader map them.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto r = RunCommand({Looptrace(), "record", "-p", std::to_string(app.pid()), "-f", "json", "-o", dir_ / "out.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(app.Wait(30).exit_code, 0);
  auto lines = ReadJsonLines(dir_ / "out.json");
  ExpectCleanSession(lines, "glib", "dispatch");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  ExpectNamedMessagesMatch(OfType(lines, "message"), truth, "on_slow_idle");
  ExpectNamedMessagesMatch(OfType(lines, "message"), truth, "on_tick");
}

TEST_F(LoopsTest, ComposedLoopAndRuntimeProfilesAreOneSession) {
  // A loop layer plus another layer of the same program: the GLib dispatches and the
  // epoll-style poll-bounded profile define messages differently, which is an error naming
  // both lines; glib composed with itself is the same lines once.
  auto conflict =
      RunCommand({Looptrace(), "probes", "--exe", Program("looptrace-glib-loop"), "--profile", "glib,epoll"});
  EXPECT_EQ(conflict.exit_code, 6);
  EXPECT_NE(conflict.err.find("builtin:epoll:"), std::string::npos) << conflict.err;
  EXPECT_NE(conflict.err.find("builtin:glib:"), std::string::npos) << conflict.err;
  auto same = RunCommand({Looptrace(), "probes", "--exe", Program("looptrace-glib-loop"), "--profile", "glib,glib"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
}

}  // namespace
}  // namespace looptrace::testing
