// JavaScript frames from V8's own metadata, no flags (issue 29, item 2): /usr/bin/node runs a
// program of ours (tests/runtimes/node/frames.js) whose functions burn CPU and wait along
// known call paths from a timer and from an I/O callback; `record -p` on it must show them
// in the slow messages' sampled trees, each under its callers as the program calls them,
// named "function frames.js:LINE" with the line its source declares it at.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

const char* const kNode = "/usr/bin/node";

std::string App() { return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/runtimes/node/frames.js"; }

// The truth: "NAME frames.js:LINE" with the line of `function NAME(` in the program's source.
std::string Declared(const std::string& function) {
  std::ifstream in(App());
  std::string line;
  for (int number = 1; std::getline(in, line); ++number)
    if (line.starts_with("function " + function + "(")) return function + " frames.js:" + std::to_string(number);
  ADD_FAILURE() << function << " is not declared in " << App();
  return function;
}

struct Paths {
  std::map<std::string, double> cost;  // "outer > ... > inner" -> sampled ns, every node's path
  double total = 0;                    // the sampled trees' root cost
  double unknown = 0;                  // under unnamed JavaScript frames
  std::string text;
};

Paths PathsOf(const std::vector<json>& reports) {
  Paths paths;
  for (const json& report : reports) {
    // The frames every sample of the message shares sit above its tree's first level (all
    // of an I/O callback's whose samples are all in burn: its tree is then burn alone).
    std::vector<std::string> common;
    for (const json& frame : report["sampled"]["common_frames"]) common.push_back(frame.get<std::string>());
    std::vector<std::string> stack;
    for (const json& node : report["sampled_tree"]) {
      const size_t depth = node["depth"].get<size_t>();
      const std::string name = node["name"].get<std::string>();
      stack.resize(depth == 0 ? 0 : depth + common.size());
      stack.push_back(name);
      std::string path;
      for (const std::string& frame : stack) path += (path.empty() ? "" : " > ") + frame;
      paths.cost[path] += node["cost_ns"].get<double>();
      if (depth == 0) {
        paths.total += node["cost_ns"].get<double>();
        stack.insert(stack.end(), common.begin(), common.end());
        if (!common.empty()) paths.text += "under " + report["sampled"]["common_frames"].dump() + "\n";
      }
      if (name == "[unknown JavaScript frame]") paths.unknown += node["cost_ns"].get<double>();
      paths.text += std::string(2 * depth, ' ') + name + " " + std::to_string(node["percent"].get<double>()) + "\n";
    }
  }
  return paths;
}

// The sampled time under a path that ends with `chain` (callers first).
double CostEndingWith(const Paths& paths, const std::string& chain) {
  double cost = 0;
  for (const auto& [path, ns] : paths.cost)
    if (path.ends_with(chain) && (path.size() == chain.size() || path[path.size() - chain.size() - 1] == ' '))
      cost += ns;
  return cost;
}

class NodeFramesTest : public BpfTest {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(access(kNode, X_OK), 0) << kNode << " is missing: run scripts/setup.sh (nodejs)";
  }
  TempDir dir_;
};

TEST_F(NodeFramesTest, RecordNamesTheJavaScriptFunctionsOnEverySlowPathWithTheirCallers) {
  Process target({kNode, App(), "--seconds", "8", "--ready", dir_ / "ready"});
  WaitForFile(dir_ / "ready", 5000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // V8 has compiled the hot functions
  auto r = RunCommand({Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "3", "-f", "json", "-o",
                       dir_ / "out.json", "--evil-threshold", "15", "--sampled-max-nodes", "2000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("JavaScript frames are not shown"), std::string::npos) << r.err;
  target.Wait(15);
  auto lines = ReadJsonLines(dir_ / "out.json");
  ASSERT_EQ(OfType(lines, "session").at(0)["profile"], "node");
  auto reports = OfType(lines, "evil_method");
  ASSERT_GE(reports.size(), 5u);
  const Paths paths = PathsOf(reports);
  std::cout << "sampled trees:\n" << paths.text.substr(0, 20000);
  ASSERT_GT(paths.total, 0);

  const std::string render = Declared("renderReport"), rows = Declared("renderRows"), burn = Declared("burn"),
                    wait = Declared("waitForDisk"), parse = Declared("parseRecords"), read = Declared("onFileRead");
  // The timer's path and the I/O callback's, callers first. Slow messages with the same tree
  // are reported once (EvilMethod's key), so shares are compared within the timer's path:
  // renderReport burns 30 ms in renderRows, then waits 20 ms.
  const double timer_burn = CostEndingWith(paths, render + " > " + rows + " > " + burn);
  const double timer_wait = CostEndingWith(paths, render + " > " + wait);
  const double io_burn = CostEndingWith(paths, read + " > " + parse + " > " + burn);
  std::cout << "timer burn " << 100 * timer_burn / paths.total << "%, timer wait " << 100 * timer_wait / paths.total
            << "%, io burn " << 100 * io_burn / paths.total << "%, unknown " << 100 * paths.unknown / paths.total
            << "%\n";
  EXPECT_GT(timer_burn, 0) << paths.text;
  EXPECT_GT(timer_wait, 0) << paths.text;
  EXPECT_GT(io_burn, 0) << paths.text;
  // About half the slow messages are the I/O callback's 25 ms of burn (a third of the time).
  EXPECT_GE(io_burn / paths.total, 0.1) << paths.text;
  if (timer_burn + timer_wait > 0) EXPECT_NEAR(timer_burn / (timer_burn + timer_wait), 0.6, 0.15) << paths.text;
  // Most JavaScript samples are named.
  EXPECT_LE(paths.unknown / paths.total, 0.05) << paths.text;
  json stats = OfType(lines, "stats").at(0)["counters"];
  EXPECT_EQ(stats["interp_stacks_dropped"], 0);
}

}  // namespace
}  // namespace looptrace::testing
