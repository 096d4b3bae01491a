// Sampled call trees against the sample target's truth, and stacks that are right on every
// thread: through a dispatch function probed with a uretprobe, for the thread holding the
// lock the main thread waits for, never a bogus frame.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "harness.h"
#include "looptrace/events.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

std::string Mapping() { return std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app.methodMapping.txt"; }
std::string NofpApp() { return std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app-nofp"; }

class SampledTreeTest : public BpfTest {
 protected:
  // Runs `app --scenario scenario` under looptrace with `extra` options; the JSON report lines.
  std::vector<json> Run(const std::string& app, const std::string& scenario, std::vector<std::string> extra,
                        std::vector<std::string> app_args = {}) {
    std::vector<std::string> argv = {Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json"};
    // The sample target's profile, unless the test brings its own.
    if (std::find(extra.begin(), extra.end(), "--profile") == extra.end())
      argv.insert(argv.end(), {"--profile", SampleProfile()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (const auto& a :
         {std::string("--"), app, std::string("--scenario"), scenario, std::string("--truth"), dir_ / "truth.jsonl"})
      argv.push_back(a);
    argv.insert(argv.end(), app_args.begin(), app_args.end());
    auto r = RunCommand(argv, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ReadJsonLines(dir_ / "out.json");
  }

  // Each instrumented method of the truth's message `msg_id`: its share of the message and
  // the share of the sampled-tree nodes named after it (summed), within `tolerance` points.
  // Returns the largest error; with `expect` false it only measures.
  static double ExpectSharesMatchTruth(const json& report, const std::vector<json>& truth, double tolerance,
                                       bool expect = true) {
    const auto& tree = report["sampled_tree"];
    EXPECT_TRUE(tree.is_array() && !tree.empty()) << report.dump(1);
    if (!tree.is_array() || tree.empty()) return 100;
    const double cost = report["cost_ns"].get<double>();
    size_t methods = 0;
    double worst = 0;
    for (const json& m : OfType(truth, "method")) {
      if (m["msg_id"] != report["msg_id"]) continue;
      ++methods;
      const double truth_share = 100.0 * (m["end_ns"].get<double>() - m["begin_ns"].get<double>()) / cost;
      // The function's own frame ("sample::app::TestTraceMainActivity::A()").
      const std::string name = "::" + m["name"].get<std::string>() + "()";
      double sampled = 0;
      for (const json& node : tree)
        if (node["name"].get<std::string>().ends_with(name)) sampled += node["cost_ns"].get<double>();
      const double sampled_share = 100.0 * sampled / cost;
      if (expect) {
        EXPECT_NEAR(sampled_share, truth_share, tolerance) << name << "\n" << report["sampled_tree"].dump(1);
      }
      std::cout << name << ": truth " << truth_share << "%, sampled " << sampled_share << "%\n";
      worst = std::max(worst, std::abs(sampled_share - truth_share));
    }
    EXPECT_GT(methods, 3u);
    std::cout << methods << " methods, largest share error " << worst << " percentage points\n";
    return worst;
  }

  // The slow-message report named `name` (a copy: two look-ups never share one result).
  static std::optional<json> Evil(const std::vector<json>& lines, const std::string& name) {
    for (const json& l : OfType(lines, "evil_method"))
      if (l["name"] == name) return l;
    return std::nullopt;
  }

  TempDir dir_;
};

// The evil message sleeps in every method (A..L): its time is off CPU, attributed by the
// switch-out stacks and the time until the thread ran again.
TEST_F(SampledTreeTest, EvilMessageSharesMatchTheTruth) {
  auto lines = Run(SampleApp(), "evil", {"--method-mapping", Mapping(), "--sampled-max-nodes", "1000"});
  const std::optional<json> report = Evil(lines, "evil.jank");
  ASSERT_TRUE(report.has_value());
  EXPECT_GT(report->at("tree").size(), 10u) << "the instrumented tree is there too";
  EXPECT_EQ(report->at("sampled")["dwarf"], false);
  EXPECT_GE(report->at("sampled")["samples_off_cpu"].get<int>(), 12);  // a sleep in each method
  ExpectSharesMatchTruth(*report, ReadJsonLines(dir_ / "truth.jsonl"), 5.0);
}

TEST_F(SampledTreeTest, EvilMessageSharesMatchTheTruthWithoutFramePointers) {
  auto lines = Run(NofpApp(), "evil", {"--dwarf-unwind", "--sampled-max-nodes", "1000"});
  const std::optional<json> report = Evil(lines, "evil.jank");
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->at("sampled")["dwarf"], true);
  ExpectSharesMatchTruth(*report, ReadJsonLines(dir_ / "truth.jsonl"), 5.0);
}

// The default mode on a program without frame pointers: BPF walks the sampled stacks with
// the rows compiled from .eh_frame, so the tree is as right as with --dwarf-unwind; the
// kernel's frame-pointer walk (--fp-unwind) loses the callers of every sleep.
// (The program idles 100 ms first: `run` publishes the rows of the libraries ld.so maps after
// the exec at its next drain, and samples before that are walked by frame pointers.)
TEST_F(SampledTreeTest, EvilMessageSharesMatchTheTruthWithoutFramePointersByDefault) {
  auto lines = Run(NofpApp(), "evil", {"--sampled-max-nodes", "1000"}, {"--start-delay-ms", "100"});
  const std::optional<json> report = Evil(lines, "evil.jank");
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->at("sampled")["dwarf"], false);
  EXPECT_GE(report->at("sampled")["samples_off_cpu"].get<int>(), 12);
  ExpectSharesMatchTruth(*report, ReadJsonLines(dir_ / "truth.jsonl"), 5.0);
  // Issue 32: the share of stacks that reach main or the thread's start. Short of the 99%
  // goal here (85-96% measured): the samples `run` takes before the command's rows are out
  // (the first drain after its exec) are walked by the kernel's frame-pointer walk, and those
  // in a library ld.so mapped after that drain stop there (stack_walks_no_frame_pointer) until
  // the next one. (The vDSO's frames have rows: StackWalkGapsTest.)
  auto stats = OfType(lines, "stats");
  ASSERT_EQ(stats.size(), 1u);
  const json& counters = stats[0]["counters"];
  ASSERT_GT(counters["user_stacks_sampled"].get<uint64_t>(), 20u) << counters.dump();
  EXPECT_GE(counters["user_stacks_complete"].get<double>() / counters["user_stacks_sampled"].get<double>(), 0.75)
      << counters.dump();

  auto by_frame_pointers =
      Run(NofpApp(), "evil", {"--fp-unwind", "--sampled-max-nodes", "1000"}, {"--start-delay-ms", "100"});
  const std::optional<json> fp_report = Evil(by_frame_pointers, "evil.jank");
  ASSERT_TRUE(fp_report.has_value());
  EXPECT_GT(ExpectSharesMatchTruth(*fp_report, ReadJsonLines(dir_ / "truth.jsonl"), 5.0, false), 20.0)
      << "the frame-pointer walk should lose the callers in this build";
}

// Spinning and sleeping methods (SampleApplication.onCreate, ~1.5 s): on-CPU samples share
// the message's CPU time.
TEST_F(SampledTreeTest, OnCpuSharesMatchTheTruth) {
  auto lines = Run(SampleApp(), "startup-slow-create", {"--sampled-max-nodes", "1000"});
  const std::optional<json> report = Evil(lines, "bindApplication");
  ASSERT_TRUE(report.has_value());
  // ~0.8 s of spinning; fewer samples when other work on the machine preempts it (that
  // time is off CPU, "preempted", at the stack it was preempted in).
  EXPECT_GT(report->at("sampled")["samples_on_cpu"].get<int>(), 100);
  ExpectSharesMatchTruth(*report, ReadJsonLines(dir_ / "truth.jsonl"), 5.0);
  // Without the raised node limit the default tree keeps the big methods (Matrix's trim).
  auto trimmed = Run(SampleApp(), "startup-slow-create", {});
  const std::optional<json> t = Evil(trimmed, "bindApplication");
  ASSERT_TRUE(t.has_value());
  EXPECT_LE(t->at("sampled_tree").size(), 60u);
  std::string names;
  for (const auto& n : t->at("sampled_tree")) names += n["name"].get<std::string>() + "\n";
  for (const char* m : {"initImageLoader", "migrateSchema", "connectPool", "initCrashReporter"})
    EXPECT_NE(names.find(m), std::string::npos) << m << "\n" << names;
}

// With `--threads all` every watched thread's time on CPU is sampled at the rate, not only the
// main thread's: the two loopers' slow messages each get about sample_hz samples a second of
// the CPU time the target measured (the report's on_cpu_ns), the HandlerThread's too.
TEST_F(SampledTreeTest, WithThreadsAllEveryLoopersTimeOnCpuIsSampledAtTheRate) {
  auto lines = Run(SampleApp(), "two-loopers", {"--threads", "all", "--evil-threshold", "5"});
  std::map<uint64_t, std::pair<double, double>> by_thread;  // tid -> samples on CPU, expected
  for (const json& report : OfType(lines, "evil_method")) {
    const json& sampled = report["sampled"];
    auto& [samples, expected] = by_thread[report["tid"].get<uint64_t>()];
    samples += sampled["samples_on_cpu"].get<double>();
    expected += sampled["on_cpu_ns"].get<double>() * sampled["sample_hz"].get<double>() / 1e9;
  }
  ASSERT_EQ(by_thread.size(), 2u) << "slow messages on both loopers";
  for (const auto& [tid, counts] : by_thread) {
    std::cout << "thread " << tid << ": " << counts.first << " samples on CPU, " << counts.second << " expected\n";
    ASSERT_GT(counts.second, 50) << "thread " << tid;
    EXPECT_NEAR(counts.first / counts.second, 1.0, 0.3) << "thread " << tid;
  }
}

TEST_F(SampledTreeTest, FoldedStacksOfTheSlowMessage) {
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "folded", "-o", dir_ / "out.folded",
                       "--", SampleApp(), "--scenario", "evil", "--truth", dir_ / "truth.jsonl"},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(dir_ / "out.folded");
  std::string line;
  uint64_t total_us = 0, lines = 0;
  std::string all;
  std::set<std::string> roots;
  // A line with the root alone is on-CPU time no sample fell in.
  const std::regex shape(R"(^\[message evil\.jank \+[0-9.]+s\](;[^;]+)* [0-9]+$)");
  while (std::getline(in, line)) {
    ++lines;
    all += line + "\n";
    EXPECT_TRUE(std::regex_match(line, shape)) << line;
    roots.insert(line.substr(0, std::min(line.find(';'), line.rfind(' '))));
    total_us += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_GT(lines, 10u);
  // One slow message (~2.24 s, longer on a loaded machine), whose stacks add up to the time
  // the target measured itself, to rounding (a microsecond per line, plus the probes' own
  // distance from the target's clock reads).
  EXPECT_EQ(roots.size(), 1u) << all << r.err;
  double truth_us = 0;
  for (const json& m : OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message"))
    if (m["name"] == "evil.jank") truth_us = (m["end_ns"].get<double>() - m["begin_ns"].get<double>()) / 1e3;
  ASSERT_GT(truth_us, 2.2e6) << "the truth's evil.jank message";
  EXPECT_NEAR(static_cast<double>(total_us), truth_us, 1000.0 + static_cast<double>(lines)) << all << r.err;
  std::cout << "folded stacks " << total_us << " us, truth " << static_cast<uint64_t>(truth_us) << " us\n";
}

// Shadow stacks are direct-mapped by thread id (LT_SHADOW_SLOTS): a thread entering a uretprobed
// function in the slot of another thread still inside one takes the slot over, and the
// entry the other one loses is counted, not silently wrong. The fixture's main thread waits
// in `held` while it starts threads until one gets an id in its slot and enters `held` too.
TEST_F(SampledTreeTest, AThreadTakingOverAShadowSlotCountsTheEntryItDrops) {
  const std::string profile = dir_ / "held.profile";
  std::ofstream(profile) << "profile held\n"
                            "thread all\n"
                            "probe dispatch.begin uprobe exe held\n"
                            "probe dispatch.end uretprobe exe held\n";
  const std::string fixture = std::string(LOOPTRACE_FIXTURE_DIR) + "/shadow_slots";
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--profile", profile,
                       "--dwarf-unwind", "--", fixture},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int main_tid = 0, collider_tid = 0, threads = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "main %d collider %d threads %d", &main_tid, &collider_tid, &threads), 3)
      << r.out;
  ASSERT_EQ(main_tid % LT_SHADOW_SLOTS, collider_tid % LT_SHADOW_SLOTS);
  std::cout << "main " << main_tid << ", collider " << collider_tid << " after " << threads << " threads\n";

  auto lines = ReadJsonLines(dir_ / "out.json");
  EXPECT_EQ(Counter(lines, "shadow_overflow"), 1u);
  // Both calls of `held` are still messages, each on its own thread.
  std::set<int> tids;
  for (const json& m : OfType(lines, "message")) tids.insert(m["tid"].get<int>());
  EXPECT_EQ(tids, (std::set<int>{main_tid, collider_tid}));
}

std::string Profile(const TempDir& dir) {
  // The dispatch function itself, with a uprobe and a uretprobe (like the glib profile's
  // g_main_context_dispatch): every message's stack has a pending uretprobe.
  const std::string path = dir / "uretprobe.profile";
  std::ofstream out(path);
  out << "profile dispatch-uretprobe\n"
         "probe dispatch.begin uprobe exe looptrace::sample::Looper::Dispatch\n"
         "probe dispatch.end uretprobe exe looptrace::sample::Looper::Dispatch\n";
  return path;
}

bool Contains(const json& stack, const std::string& needle) {
  for (const auto& frame : stack)
    if (frame.get<std::string>().find(needle) != std::string::npos) return true;
  return false;
}

// A return address replaced by the uretprobe trampoline ([uprobes]) ends a DWARF walk there
// unless BPF's shadow stack puts it back: the ANR stack must reach main through Dispatch.
TEST_F(SampledTreeTest, AnrStackThroughADispatchProbedWithAUretprobeReachesMain) {
  for (bool dwarf : {true, false}) {
    SCOPED_TRACE(dwarf ? "--dwarf-unwind, no frame pointers" : "frame pointers");
    std::vector<std::string> extra = {"--profile", Profile(dir_), "--anr-threshold", "1500"};
    if (dwarf) extra.push_back("--dwarf-unwind");
    auto lines = Run(dwarf ? NofpApp() : SampleApp(), "anr-sleep", extra, {"--stall-ms", "2000"});
    auto anrs = OfType(lines, "anr");
    ASSERT_EQ(anrs.size(), 1u);
    const json& stack = anrs[0]["threads"][0]["user_stack"];
    EXPECT_TRUE(Contains(stack, "Looper::Dispatch")) << stack.dump(1);
    // main itself tail-calls Main: the caller of both is where the stack ends.
    EXPECT_TRUE(Contains(stack, "(Main)")) << stack.dump(1);
    EXPECT_TRUE(Contains(stack, "(__libc_start_call_main)")) << stack.dump(1);
    EXPECT_FALSE(Contains(stack, "[uretprobe trampoline]")) << stack.dump(1);
    EXPECT_FALSE(Contains(stack, "pc 0x7fffffffe")) << stack.dump(1);
    // The sleep began early in its message, under Dispatch's pending uretprobe: its switch-out
    // kept only its system call (issue 32), the snapshot unwound the still-sleeping thread with
    // Dispatch's return address put back from the shadow stack, and the reason is the sleep.
    EXPECT_GT(Counter(lines, "early_waits_by_syscall"), 0u);
    ASSERT_FALSE(anrs[0]["off_cpu_by_reason"].empty()) << anrs[0].dump(1);
    EXPECT_EQ(anrs[0]["off_cpu_by_reason"][0]["reason"], "sleep") << anrs[0]["off_cpu_by_reason"];
    // The slow message's sampled tree goes through the same frames.
    if (dwarf) {
      auto stats = OfType(lines, "stats");
      ASSERT_EQ(stats.size(), 1u);
      EXPECT_GT(Counter(lines, "uretprobe_frames_restored"), 0u);
    }
  }
}

// The thread holding the lock the main thread waits for (asleep with it) gets its whole
// stack with and without --dwarf-unwind, in a program without frame pointers: its switch-out
// into that wait took no stack, and the snapshot unwinds it from the registers kept then
// over its stack read at the snapshot (LT_STACK_AT_SNAPSHOT). Its kernel stack is read then
// too; the walk never shows garbage.
TEST_F(SampledTreeTest, TheLockHoldersStackIsWholeWithoutFramePointers) {
  for (bool dwarf : {true, false}) {
    SCOPED_TRACE(dwarf ? "--dwarf-unwind" : "default");
    std::vector<std::string> extra = {"--anr-threshold", "1500"};
    if (dwarf) extra.push_back("--dwarf-unwind");
    auto lines = Run(NofpApp(), "anr-lock", extra, {"--stall-ms", "2000"});
    auto anrs = OfType(lines, "anr");
    ASSERT_EQ(anrs.size(), 1u);
    json holder;
    for (const auto& t : anrs[0]["threads"])
      if (t["name"] == "sample-holder") holder = t;
    ASSERT_TRUE(holder.is_object()) << anrs[0].dump(1);
    EXPECT_TRUE(Contains(holder["user_stack"], "SleepUntil")) << holder.dump(1);
    EXPECT_TRUE(Contains(holder["user_stack"], "AnrLockScenario")) << holder.dump(1);
    EXPECT_TRUE(Contains(holder["user_stack"], "work.cc:")) << "file:line from DWARF\n" << holder.dump(1);
    EXPECT_EQ(holder.value("user_stack_stop", ""), "") << holder.dump(1);
    EXPECT_TRUE(Contains(holder["kernel_stack"], "nanosleep")) << holder.dump(1);
    for (const auto& frame : holder["user_stack"]) {
      std::smatch m;
      const std::string text = frame.get<std::string>();
      if (std::regex_search(text, m, std::regex("^pc (0x[0-9a-f]+)")))
        EXPECT_LT(std::stoull(m[1].str(), nullptr, 16), 0x800000000000ull) << "a kernel-half address: garbage\n"
                                                                           << holder.dump(1);
    }
    EXPECT_GT(Counter(lines, "switch_stacks_waiting"), 0u);
  }
}

}  // namespace
}  // namespace looptrace::testing
