// Node.js end to end: /usr/bin/node (Node 20, NodeSource's build, libuv linked statically
// with its symbol table) runs programs of ours (tests/runtimes/node/app.js) that write their
// truth; looptrace, without --profile, must pick the node profile and find libuv's
// callbacks as messages named by their phase: a slow timer within 2 ms of the truth, a slow
// setImmediate as `check`, an http server's slow route as `io: stream`, live and by record -p.
// A Node without libuv's symbols gets one line saying so and the epoll profile.
#include <gtest/gtest.h>

#include <cstdlib>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kMs = 1'000'000;
const char* const kNode = "/usr/bin/node";

std::string App() { return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/runtimes/node/app.js"; }

int64_t Cost(const json& j) { return j["end_ns"].get<int64_t>() - j["begin_ns"].get<int64_t>(); }

// The innermost message that contains the truth record's [begin, end].
const json* InnermostAround(const std::vector<json>& messages, const json& truth) {
  const json* best = nullptr;
  for (const auto& m : messages)
    if (m["begin_ns"] <= truth["begin_ns"] && m["end_ns"] >= truth["end_ns"])
      if (!best || Cost(m) < Cost(*best)) best = &m;
  return best;
}

std::string NameOf(const json& message) {
  return message.contains("name") && message["name"].is_string() ? message["name"].get<std::string>() : "";
}

class NodeRuntimeTest : public BpfTest {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(access(kNode, X_OK), 0) << kNode << " is missing: run scripts/setup.sh (nodejs)";
  }
  TempDir dir_;
};

TEST_F(NodeRuntimeTest, ProbesPicksNodeWithNoSingleSteppedPoint) {
  auto r = RunCommand({Looptrace(), "probes", "--exe", kNode});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile node (builtin:node)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("single-step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uv__stream_io"), std::string::npos) << r.out;
}

// The largest cost error of the truth's callbacks against their innermost messages (-1: one
// has no message around it).
int64_t WorstCallbackError(const std::vector<json>& messages, const std::vector<json>& truth) {
  int64_t worst = 0;
  for (const auto& cb : OfType(truth, "callback")) {
    const json* m = InnermostAround(messages, cb);
    if (!m) return -1;
    worst = std::max(worst, Cost(*m) - Cost(cb));
  }
  return worst;
}

TEST_F(NodeRuntimeTest, SlowTimerAndImmediateAreMessagesNamedByPhaseWithin2ms) {
  // A message also holds Node's own work before the JavaScript callback (processTimers): on
  // a machine loaded by other work, the thread may be preempted there. Up to 3 runs, the
  // first whose every callback is within 2 ms is checked (each run's figure is printed).
  std::vector<json> lines;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--", kNode, App(), "--truth",
                         dir_ / "truth.jsonl"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    lines = ReadJsonLines(dir_ / "out.json");
    const int64_t worst = WorstCallbackError(OfType(lines, "message"), ReadJsonLines(dir_ / "truth.jsonl"));
    std::cout << "run " << attempt << ": worst callback cost error " << worst << " ns\n";
    if (worst >= 0 && worst <= 2 * kMs) break;
  }
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["profile"], "node");  // detected, no --profile
  EXPECT_EQ(session[0]["message_definition"], "poll-bounded");
  auto messages = OfType(lines, "message");
  std::map<std::string, int> names;
  for (const auto& m : messages) ++names[NameOf(m)];
  EXPECT_GE(names["timers"], 20) << "the 10 ms interval";
  EXPECT_GE(names["check"], 20) << "Node's check handle runs every iteration";
  for (const auto& cb : OfType(ReadJsonLines(dir_ / "truth.jsonl"), "callback")) {
    SCOPED_TRACE(cb.dump());
    const json* m = InnermostAround(messages, cb);
    ASSERT_NE(m, nullptr) << "no message around this callback";
    EXPECT_EQ(NameOf(*m), cb["name"] == "slow_timer" ? "timers" : "check") << m->dump();
    EXPECT_EQ((*m)["depth"], 1) << "nested in its loop iteration";
    const int64_t error = Cost(*m) - Cost(cb);
    EXPECT_GE(error, 0);
    EXPECT_LE(error, 2 * kMs);
    std::cout << cb["name"] << ": message " << NameOf(*m) << ", cost error " << error << " ns\n";
  }
  // Event-loop delay: the late timer's message says how late it ran, within a few ms of the
  // program's own figure (libuv's due times are loop-clock milliseconds).
  auto late = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "late_timer");
  ASSERT_EQ(late.size(), 1u);
  json ran = {{"begin_ns", late[0]["end_ns"]}, {"end_ns", late[0]["end_ns"]}};
  const json* m = InnermostAround(messages, ran);
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->contains("loop_delay_ns")) << m->dump();
  const int64_t truth_delay = Cost(late[0]);
  EXPECT_GE(truth_delay, 30 * kMs);
  EXPECT_LE(std::llabs((*m)["loop_delay_ns"].get<int64_t>() - truth_delay), 4 * kMs)
      << m->dump() << " vs truth " << truth_delay;
  auto summary = OfType(lines, "loop_delay_summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_GE(summary[0]["max_ns"].get<int64_t>(), (*m)["loop_delay_ns"].get<int64_t>());
  EXPECT_EQ(summary[0]["count"], names["timers"]);
}

// Every slow request's handler runs in the read callback of its keep-alive connection.
void ExpectSlowRequestsAreIoMessages(const std::vector<json>& messages, const std::vector<json>& truth,
                                     size_t at_least) {
  size_t slow = 0;
  for (const auto& request : truth) {
    if (request["type"] != "request" || request["name"] != "/slow") continue;
    const json* m = InnermostAround(messages, request);
    if (!m) continue;  // outside the session
    ++slow;
    EXPECT_EQ(NameOf(*m), "io: stream") << m->dump();
    // The read callback also parses the request in JavaScript before the handler runs: one
    // request's message, not an iteration's worth of them.
    EXPECT_LE(Cost(*m) - Cost(request), 10 * kMs) << m->dump() << " vs " << request.dump();
  }
  EXPECT_GE(slow, at_least);
}

TEST_F(NodeRuntimeTest, HttpServersSlowRouteIsAnIoMessage) {
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--", kNode, App(), "--scenario",
                       "http", "--seconds", "2", "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  EXPECT_EQ(OfType(lines, "session")[0]["profile"], "node");
  ExpectSlowRequestsAreIoMessages(OfType(lines, "message"), ReadJsonLines(dir_ / "truth.jsonl"), 5);
}

TEST_F(NodeRuntimeTest, RecordPicksNodeForARunningServer) {
  Process target({kNode, App(), "--scenario", "http", "--seconds", "5", "--truth", dir_ / "truth.jsonl"});
  WaitForFile(dir_ / "truth.jsonl", 5000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto r = RunCommand(
      {Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "2", "-f", "json", "-o", dir_ / "out.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  target.Wait(15);
  auto lines = ReadJsonLines(dir_ / "out.json");
  EXPECT_EQ(OfType(lines, "session")[0]["profile"], "node");
  ExpectSlowRequestsAreIoMessages(OfType(lines, "message"), ReadJsonLines(dir_ / "truth.jsonl"), 5);
}

// A stripped node: one line names what is missing, and the loop is traced as a poll loop.
TEST_F(NodeRuntimeTest, ANodeWithoutLibuvSymbolsSaysSoAndGetsEpoll) {
  const std::string stripped = dir_ / "node";
  ASSERT_EQ(std::system(("objcopy --strip-all " + std::string(kNode) + " " + stripped).c_str()), 0);
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--", stripped, App(), "--truth",
                       dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no libuv symbol table (uv__io_poll is missing"), std::string::npos) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  EXPECT_EQ(OfType(lines, "session")[0]["profile"], "epoll");
}

}  // namespace
}  // namespace looptrace::testing
