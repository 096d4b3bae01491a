// looptrace on a JVM serving from a thread pool, started with no flags (how Java services
// run): `record -p` picks jvm-executor by itself (a pool-* thread, no AWT event dispatch
// thread) and each task the pool's worker runs is one message, bounded by the worker's waits
// for its next task in ThreadPoolExecutor.getTask, within 2 ms of the begin and end the task
// timed itself (tests/runtimes/java/JvmPool.java), the one that sleeps inside not split at
// its sleep, each named by its own method, so "messages by name" counts them.
#include <gtest/gtest.h>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

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
  CheckWaitBoundedMessages(lines, events,
                           {"jvm-executor", "java.util.concurrent.ThreadPoolExecutor.getTask", "pool-1-thread-1"});
  // Each wait's off-CPU stretch ends at the wake-up that begins the next task, not counted
  // as a stretch whose switch record was lost.
  const json stats = OfType(lines, "stats").at(0)["counters"];
  EXPECT_EQ(stats.value("switch_record_lost", 0), 0) << stats.dump();
}

}  // namespace
}  // namespace looptrace::testing
