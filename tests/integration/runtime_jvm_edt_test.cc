// The AWT event dispatch thread of a JVM started with no flags (how production JVMs run):
// looptrace, without --profile, picks jvm-edt and bounds that thread's messages by where it
// waits (a switch-out parked in EventQueue.getNextEvent ends one, the wake-up from it begins
// the next), from the Java frames BPF walks. The program (tests/runtimes/java/EdtWaits.java)
// posts events of known durations and writes its own truth: each must be one message within
// 2 ms of it (all boundaries but one: see CheckMessages), the one that sleeps inside the event
// not split at its sleep, and each named by its own method (the first frame of the program's
// code above EventQueue.dispatchEvent), so "messages by name" counts them. A slow event
// (tests/runtimes/java/EdtTree.java) gets its sampled call tree: the Java methods on its path,
// each with its share of the time, JIT-compiled or interpreted, and methods inlined into
// compiled code keep their frames (EdtInline.java).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kMs = 1'000'000;

// The programs, with `jvm_flags`: none (how production JVMs run), or -Xint (every frame
// interpreted).
std::vector<std::string> EdtWaits(const std::vector<std::string>& app, const std::vector<std::string>& jvm_flags = {}) {
  return AwtCommand("EdtWaits", app, jvm_flags);
}
std::vector<std::string> EdtTree(const std::vector<std::string>& app, const std::vector<std::string>& jvm_flags = {}) {
  return AwtCommand("EdtTree", app, jvm_flags);
}

// The Java method a sampled tree node names: "EdtTree.parse" of "EdtTree.parse (EdtTree.java:45)"
// (at its line) or "EdtTree.parse (EdtTree.java)" (a frame whose line is not known).
std::string MethodOf(const std::string& node) { return node.substr(0, node.find(" (")); }

// The tree as "name cost on/off-CPU" lines indented by depth, for failure messages.
std::string TreeText(const json& report) {
  std::string tree;
  for (const json& node : report["sampled_tree"])
    tree += fmt::format("{:{}}{} {:.1f} ms ({:.1f} on CPU)\n", "", 2 * node["depth"].get<int>(),
                        node["name"].get<std::string>(), node["cost_ns"].get<double>() / kMs,
                        node["on_cpu_ns"].get<double>() / kMs);
  return tree;
}

// The sampled nodes of `method` (any line) that no node of it holds (a subtree counts once),
// with the methods on the path to each, outermost first.
struct MethodNode {
  const json* node;
  std::vector<std::string> path;
};
std::vector<MethodNode> NodesOf(const json& report, const std::string& method) {
  std::vector<MethodNode> out;
  std::vector<std::string> path;  // the methods of the current node's ancestors, by depth
  for (const json& node : report["sampled_tree"]) {
    path.resize(node["depth"].get<size_t>());
    const std::string name = MethodOf(node["name"].get<std::string>());
    if (name == method && std::find(path.begin(), path.end(), method) == path.end()) out.push_back({&node, path});
    path.push_back(name);
  }
  return out;
}

// The subtrees of `method` in percent of the message.
double SampledShare(const json& report, const std::string& method) {
  double cost = 0;
  for (const MethodNode& n : NodesOf(report, method)) cost += (*n.node)["cost_ns"].get<double>();
  return 100.0 * cost / report["cost_ns"].get<double>();
}

// The slow messages (evil methods) of `lines` that overlap the truth's `event`.
std::vector<json> SlowMessagesOverlapping(const std::vector<json>& lines, const json& event) {
  std::vector<json> out;
  for (const json& e : OfType(lines, "evil_method"))
    if (e["begin_ns"].get<int64_t>() < event["end_ns"].get<int64_t>() &&
        e["end_ns"].get<int64_t>() > event["begin_ns"].get<int64_t>())
      out.push_back(e);
  return out;
}

class JvmEdtTest : public JvmTest {
 protected:
  JvmEdtTest() : JvmTest({"EdtWaits", "EdtTree", "EdtInline"}) {}

  // EdtTree's slow event: exactly one slow message holds it, within 20 ms of it (not cut at
  // its sleep), named by its runnable; its sampled tree names parse, pause and render under
  // slowEvent, each subtree's share of the message within 5 points of its truth, pause's
  // sleep off CPU under it, in Thread.sleep.
  void CheckSlowEventTree(const std::vector<json>& lines, const std::vector<json>& truth) {
    EXPECT_EQ(OfType(lines, "session").at(0)["profile"], "jvm-edt");
    const auto events = OfType(truth, "event");
    ASSERT_EQ(events.size(), 1u);
    ASSERT_EQ(OfType(truth, "method").size(), 3u);  // parse, pause, render
    const json& event = events[0];
    const std::vector<json> holding = SlowMessagesOverlapping(lines, event);
    ASSERT_EQ(holding.size(), 1u) << "slow messages overlapping the slow event: " << json(holding).dump(1);
    const json& report = holding[0];
    EXPECT_EQ(report.value("name", json()).dump(), event["name"].dump());
    EXPECT_EQ(report.value("thread_name", ""), "AWT-EventQueue-0");
    const int64_t begin_error = std::llabs(report["begin_ns"].get<int64_t>() - event["begin_ns"].get<int64_t>());
    const int64_t end_error = std::llabs(report["end_ns"].get<int64_t>() - event["end_ns"].get<int64_t>());
    EXPECT_LE(begin_error, 20 * kMs) << report["begin_ns"];
    EXPECT_LE(end_error, 20 * kMs) << report["end_ns"];

    const std::string tree = TreeText(report);
    std::cout << "the slow event's sampled tree:\n" << tree;
    std::cout << fmt::format("message {:.1f} ms, truth {:.1f} ms (begin {:+.3f} ms, end {:+.3f} ms)\n",
                             Cost(report) / 1e6, Cost(event) / 1e6,
                             (report["begin_ns"].get<int64_t>() - event["begin_ns"].get<int64_t>()) / 1e6,
                             (report["end_ns"].get<int64_t>() - event["end_ns"].get<int64_t>()) / 1e6);
    double worst = 0;
    for (const json& part : truth) {
      const std::string method = part["name"];
      const double truth_share = 100.0 * Cost(part) / report["cost_ns"].get<double>();
      const double sampled = SampledShare(report, method);
      EXPECT_NEAR(sampled, truth_share, 5.0) << method << "\n" << tree;
      worst = std::max(worst, std::abs(sampled - truth_share));
      std::cout << fmt::format("{}: truth {:.1f}%, sampled {:.1f}%\n", method, truth_share, sampled);
      if (part["type"] != "method") continue;
      // Each of its subtrees on the slow event's path.
      const auto nodes = NodesOf(report, method);
      ASSERT_FALSE(nodes.empty()) << method << " is not in the tree\n" << tree;
      for (const MethodNode& n : nodes)
        EXPECT_NE(std::find(n.path.begin(), n.path.end(), "EdtTree.slowEvent"), n.path.end()) << method << "\n" << tree;
    }
    std::cout << fmt::format("largest share error {:.1f} points\n", worst);
    // The sleep: pause's time is off CPU, below it Thread.sleep.
    double pause_cost = 0, pause_off_cpu = 0;
    for (const MethodNode& n : NodesOf(report, "EdtTree.pause")) {
      pause_cost += (*n.node)["cost_ns"].get<double>();
      pause_off_cpu += (*n.node)["off_cpu_ns"].get<double>();
    }
    EXPECT_GE(pause_off_cpu, 0.9 * pause_cost) << tree;
    const auto sleeps = NodesOf(report, "java.lang.Thread.sleep");
    ASSERT_EQ(sleeps.size(), 1u) << tree;
    EXPECT_EQ(sleeps[0].path.back(), "EdtTree.pause") << tree;
    // HotSpot sleeps on a futex, as a lock wait does: the Java frames say it is a sleep.
    const json& sleep = *sleeps[0].node;
    EXPECT_GE(sleep["off_cpu_by_reason"].value("sleep", 0.0), 0.9 * sleep["off_cpu_ns"].get<double>())
        << sleep["off_cpu_by_reason"];
    EXPECT_EQ(Counter(lines, "interp_stacks_dropped"), 0u);
  }

  // looptrace run of EdtTree, no JVM flag but `jvm_flags`: the report and the truth.
  std::pair<std::vector<json>, std::vector<json>> RunEdtTree(const std::vector<std::string>& app,
                                                             const std::vector<std::string>& jvm_flags = {}) {
    std::vector<std::string> app_argv = app;
    app_argv.insert(app_argv.end(), {"--truth", dir_ / "truth.jsonl"});
    auto r = RunCommand(
        LooptraceRun({"-f", "json", "-o", dir_ / "out.json", "--evil-threshold", "100", "--sampled-max-nodes", "1000"},
                     EdtTree(app_argv, jvm_flags)),
        300);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("profile jvm-edt"), std::string::npos) << r.err;
    return {ReadJsonLines(dir_ / "out.json"), ReadJsonLines(dir_ / "truth.jsonl")};
  }

  void CheckMessages(const std::vector<json>& lines, const std::vector<json>& events) {
    CheckWaitBoundedMessages(lines, events, {"jvm-edt", "java.awt.EventQueue.getNextEvent", "AWT-EventQueue-0"});
  }
};

TEST_F(JvmEdtTest, RunOfAJvmWithoutFlagsBoundsEventDispatchMessagesByItsWaits) {
  if (IsSkipped()) return;
  auto r = RunCommand(
      LooptraceRun({"-f", "json", "-o", dir_ / "out.json"}, EdtWaits({"--truth", dir_ / "truth.jsonl"})), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One line says what this mode gives and how to get the exact one.
  EXPECT_NE(r.err.find("profile jvm-edt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-XX:+DTraceMethodProbes"), std::string::npos) << r.err;
  auto events = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "event");
  ASSERT_EQ(events.size(), 6u);
  CheckMessages(ReadJsonLines(dir_ / "out.json"), events);
}

// The same with every frame interpreted (-Xint): the waits and the names come from
// interpreted frames only.
TEST_F(JvmEdtTest, RunOfAnInterpretedJvmBoundsAndNamesTheSameMessages) {
  if (IsSkipped()) return;
  auto r = RunCommand(
      LooptraceRun({"-f", "json", "-o", dir_ / "out.json"}, EdtWaits({"--truth", dir_ / "truth.jsonl"}, {"-Xint"})),
      300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto events = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "event");
  ASSERT_EQ(events.size(), 6u);
  CheckMessages(ReadJsonLines(dir_ / "out.json"), events);
}

TEST_F(JvmEdtTest, RecordOfARunningJvmWithoutFlagsFindsItsEventDispatchThread) {
  if (IsSkipped()) return;
  const std::string ready = dir_ / "ready";
  // Long enough a warm-up for the session to attach and find the thread by its name: on a
  // CI machine busy with other JVM tests the attach once took longer than 6 s.
  Process target(EdtWaits({"--truth", dir_ / "truth.jsonl", "--ready", ready, "--warmup", "12000"}));
  WaitForFile(ready, 60000);
  ASSERT_TRUE(std::filesystem::exists(ready)) << "EdtWaits did not get ready";
  auto r = RunCommand(
      {Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "60", "-f", "json", "-o", dir_ / "out.json"},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;  // the session ends with the program
  EXPECT_NE(r.err.find("profile jvm-edt"), std::string::npos) << r.err;
  auto events = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "event");
  ASSERT_EQ(events.size(), 6u);
  CheckMessages(ReadJsonLines(dir_ / "out.json"), events);
}

// A slow event's tree with the work JIT-compiled: parse, pause and render were called
// thousands of times before it (HotSpot compiles them; only slowEvent, run once, stays
// interpreted), and its samples name the compiled frames.
TEST_F(JvmEdtTest, TheSlowEventsTreeOfAJvmWithoutFlagsNamesItsCompiledMethodsWithTheirShares) {
  if (IsSkipped()) return;
  auto [lines, truth] = RunEdtTree({});
  CheckSlowEventTree(lines, truth);
}

// The same with every frame interpreted (-Xint, no warm-up: it would only take long).
TEST_F(JvmEdtTest, TheSlowEventsTreeOfAnInterpretedJvmNamesItsMethodsWithTheirShares) {
  if (IsSkipped()) return;
  auto [lines, truth] = RunEdtTree({"--warmup", "0"}, {"-Xint"});
  CheckSlowEventTree(lines, truth);
}

// record -p attached to a running JVM started with no flags (its methods JIT-compiled by the
// time it is ready): the same tree.
TEST_F(JvmEdtTest, RecordOfARunningJvmWithoutFlagsGivesTheSlowEventsTree) {
  if (IsSkipped()) return;
  const std::string ready = dir_ / "ready", err = dir_ / "record.err";
  Process target(EdtTree({"--truth", dir_ / "truth.jsonl", "--ready", ready}));
  WaitForFile(ready, 60000);
  ASSERT_TRUE(std::filesystem::exists(ready)) << "EdtTree did not get ready";
  // The session's log goes to a file, read while it runs: the slow event is let go once the
  // probes are attached (the program then posts events for 1.5 s: the session finds the
  // thread by its name meanwhile).
  Process session({"/bin/sh", "-c",
                   fmt::format("exec {} record -p {} -d 60 -f json -o {} --evil-threshold 100 --sampled-max-nodes "
                               "1000 2>{}",
                               Looptrace(), target.pid(), dir_ / "out.json", err)});
  std::string log;
  for (int i = 0; i < 6000 && log.find("attached in") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(err);
    log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_NE(log.find("attached in"), std::string::npos) << log;
  std::ofstream(ready + ".go") << "";
  auto r = session.Wait(120);
  ASSERT_EQ(r.exit_code, 0) << log;  // the session ends with the program
  EXPECT_NE(log.find("profile jvm-edt"), std::string::npos) << log;
  CheckSlowEventTree(ReadJsonLines(dir_ / "out.json"), ReadJsonLines(dir_ / "truth.jsonl"));
}

// A slow event in JIT-compiled code with methods inlined into it (tests/runtimes/java/
// EdtInline.java: work, compiled, holds stage and burn): the tree still goes work -> stage ->
// burn, though only work has a frame of its own, each of work and stage at the line of its
// call (the JVM's own stack trace of the same calls says which), burn's share within 5
// points of its truth.
TEST_F(JvmEdtTest, TheSlowEventsTreeShowsMethodsInlinedIntoCompiledCodeAtTheirLines) {
  if (IsSkipped()) return;
  auto r = RunCommand(
      LooptraceRun({"-f", "json", "-o", dir_ / "out.json", "--evil-threshold", "100", "--sampled-max-nodes", "1000"},
                   AwtCommand("EdtInline", {"--truth", dir_ / "truth.jsonl"})),
      300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = ReadJsonLines(dir_ / "out.json");
  const auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  const auto events = OfType(truth, "event");
  ASSERT_EQ(events.size(), 1u);
  const json& event = events[0];
  std::map<std::string, std::string> frame_of;  // "EdtInline.stage" -> "EdtInline.stage (EdtInline.java:42)"
  for (const json& l : OfType(truth, "line"))
    frame_of[l["name"]] =
        fmt::format("{} ({}:{})", l["name"].get<std::string>(), l["file"].get<std::string>(), l["line"].get<int>());
  ASSERT_EQ(frame_of.size(), 2u);
  const std::vector<json> holding = SlowMessagesOverlapping(lines, event);
  ASSERT_EQ(holding.size(), 1u) << "slow messages overlapping the slow event: " << json(holding).dump(1);
  const json& report = holding[0];
  EXPECT_EQ(report.value("name", json()).dump(), event["name"].dump());
  const std::string tree = TreeText(report);
  std::cout << "the slow event's sampled tree:\n" << tree;

  // Every outermost burn node sits under stage under work, both at their lines. The frames
  // every stack shares are listed once (common_frames), above the tree.
  std::vector<std::string> common;
  for (const json& frame : report["sampled"]["common_frames"]) common.push_back(frame.get<std::string>());
  std::cout << "every stack ran under: " << report["sampled"]["common_frames"].dump(1) << "\n";
  std::vector<std::string> path;  // the full names of the current node's ancestors
  double burn_cost = 0;
  int burn_nodes = 0;
  for (const json& node : report["sampled_tree"]) {
    const auto depth = node["depth"].get<size_t>();
    if (depth == 0) continue;  // the message itself
    path.resize(common.size() + depth - 1);
    std::copy(common.begin(), common.end(), path.begin());
    const std::string name = node["name"].get<std::string>();
    const bool outermost_burn =
        MethodOf(name) == "EdtInline.burn" &&
        std::none_of(path.begin(), path.end(), [](const std::string& p) { return MethodOf(p) == "EdtInline.burn"; });
    if (outermost_burn) {
      ++burn_nodes;
      burn_cost += node["cost_ns"].get<double>();
      ASSERT_GE(path.size(), 2u) << tree;
      EXPECT_EQ(path[path.size() - 1], frame_of["EdtInline.stage"]) << tree;
      EXPECT_EQ(path[path.size() - 2], frame_of["EdtInline.work"]) << tree;
    }
    path.push_back(name);
  }
  ASSERT_GT(burn_nodes, 0) << "EdtInline.burn is not in the tree\n" << tree;
  const json burn = OfType(truth, "method").at(0);
  const double truth_share = 100.0 * Cost(burn) / report["cost_ns"].get<double>();
  const double sampled_share = 100.0 * burn_cost / report["cost_ns"].get<double>();
  std::cout << fmt::format("EdtInline.burn: truth {:.1f}%, sampled {:.1f}%\n", truth_share, sampled_share);
  EXPECT_NEAR(sampled_share, truth_share, 5.0) << tree;
  EXPECT_EQ(Counter(lines, "interp_stacks_dropped"), 0u);
}

}  // namespace
}  // namespace looptrace::testing
