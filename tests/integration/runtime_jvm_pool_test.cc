// looptrace on a JVM serving from a thread pool, started with no flags (how Java services
// run): `record -p` picks jvm-executor by itself (a pool-* thread, no AWT event dispatch
// thread) and each task the pool's worker runs is one message, bounded by the worker's waits
// for its next task in ThreadPoolExecutor.getTask, within 2 ms of the begin and end the task
// timed itself (tests/runtimes/java/JvmPool.java), the one that sleeps inside not split at
// its sleep, each named by its own method, so "messages by name" counts them.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kMs = 1'000'000;

class JvmPoolTest : public JvmTest {
 protected:
  JvmPoolTest() : JvmTest({"JvmPool"}) {}
};

TEST_F(JvmPoolTest, RecordOfAJvmServingFromAThreadPoolBoundsEachTaskByTheWorkersWaits) {
  if (IsSkipped()) return;
  const std::string ready = dir_ / "ready";
  // A warm-up long enough for the session to attach before the measured tasks (a CI machine
  // busy with other JVM tests once took over 6 s to attach).
  Process target(
      JavaCommand(Jdk17(), {}, "JvmPool", {"--truth", dir_ / "truth.jsonl", "--ready", ready, "--warmup", "12000"}));
  WaitForFile(ready, 60000);
  ASSERT_TRUE(std::filesystem::exists(ready)) << "JvmPool did not get ready";
  auto r = RunCommand(
      {Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "60", "-f", "json", "-o", dir_ / "out.json"},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;  // the session ends with the program
  EXPECT_NE(r.err.find("profile jvm-executor"), std::string::npos) << r.err;
  const auto events = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "event");
  ASSERT_EQ(events.size(), 6u);

  const auto lines = ReadJsonLines(dir_ / "out.json");
  auto session = OfType(lines, "session").at(0);
  EXPECT_EQ(session["profile"], "jvm-executor");
  EXPECT_EQ(
      session["message_definition"],
      "wait-bounded: a thread's messages bounded by its waits in java.util.concurrent.ThreadPoolExecutor.getTask");
  auto messages = OfType(lines, "message");
  ASSERT_FALSE(messages.empty());
  std::map<std::string, size_t> truth_by_name;
  int64_t max_error = 0;
  int late = 0;  // boundaries more than 2 ms off
  for (const auto& e : events) {
    SCOPED_TRACE(e.dump());
    ++truth_by_name[e["name"].get<std::string>()];
    const int64_t begin = e["begin_ns"], end = e["end_ns"];
    // The messages overlapping the task: exactly one (a wait inside it splits nothing).
    std::vector<const json*> overlapping;
    for (const auto& m : messages)
      if (m["begin_ns"].get<int64_t>() < end && m["end_ns"].get<int64_t>() > begin) overlapping.push_back(&m);
    ASSERT_EQ(overlapping.size(), 1u) << "messages overlapping the task";
    const json& m = *overlapping[0];
    EXPECT_EQ(m.value("thread_name", ""), "pool-1-thread-1") << m.dump();
    const int64_t begin_error = std::llabs(m["begin_ns"].get<int64_t>() - begin);
    const int64_t end_error = std::llabs(m["end_ns"].get<int64_t>() - end);
    // As for the event dispatch thread (runtime_jvm_edt_test.cc): one end may be late by a
    // preemption after the task read its clock and before it returned to the pool.
    EXPECT_LE(begin_error, 20 * kMs) << m.dump();
    EXPECT_LE(end_error, 20 * kMs) << m.dump();
    late += (begin_error > 2 * kMs) + (end_error > 2 * kMs);
    max_error = std::max({max_error, begin_error, end_error});
    EXPECT_EQ(m.value("name", json()).dump(), json(e["name"]).dump()) << m.dump();
  }
  EXPECT_LE(late, 1) << "message boundaries more than 2 ms from the truth";
  std::map<std::string, uint64_t> counted;
  for (const auto& n : OfType(lines, "message_name_summary"))
    if (!n["name"].is_null()) counted[n["name"].get<std::string>()] = n["count"].get<uint64_t>();
  // The measured tasks and those of the program's unmeasured first round.
  for (const auto& [name, count] : truth_by_name) EXPECT_EQ(counted[name], count + 1) << name;
  // Each wait's off-CPU stretch ends at the wake-up that begins the next task, not counted
  // as a stretch whose switch record was lost.
  const json stats = OfType(lines, "stats").at(0)["counters"];
  EXPECT_EQ(stats.value("switch_record_lost", 0), 0) << stats.dump();
  std::cout << fmt::format("{} tasks, each one message; worst begin/end error {:.3f} ms\n", events.size(),
                           static_cast<double>(max_error) / kMs);
}

}  // namespace
}  // namespace looptrace::testing
