// The AWT event dispatch thread of a JVM started with no flags (how production JVMs run):
// looptrace, without --profile, picks jvm-edt and bounds that thread's messages by where it
// waits (a switch-out parked in EventQueue.getNextEvent ends one, the wake-up from it begins
// the next), from the Java frames BPF walks. The program (tests/runtimes/java/EdtWaits.java)
// posts events of known durations and writes its own truth: each must be one message within
// 2 ms of it (all boundaries but one: see CheckMessages), the one that sleeps inside the event
// not split at its sleep, and each named by its own method (the first frame of the program's
// code above EventQueue.dispatchEvent), so "messages by name" counts them.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <map>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kMs = 1'000'000;

std::string Java() { return std::string(LOOPTRACE_JDK17) + "/bin/java"; }
std::string Classes() { return std::string(LOOPTRACE_RUNTIME_PROGRAMS_DIR) + "/java"; }

// `jvm_flags`: none (how production JVMs run), or -Xint (every frame interpreted).
std::vector<std::string> EdtWaits(const std::vector<std::string>& app, const std::vector<std::string>& jvm_flags = {}) {
  std::vector<std::string> argv = {Java(), "-Djava.awt.headless=true"};
  argv.insert(argv.end(), jvm_flags.begin(), jvm_flags.end());
  argv.insert(argv.end(), {"-cp", Classes(), "EdtWaits"});
  argv.insert(argv.end(), app.begin(), app.end());
  return argv;
}

class JvmEdtTest : public BpfTest {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(access(Java().c_str(), X_OK), 0)
        << Java() << " is missing: run scripts/setup.sh (openjdk-17-jdk-headless)";
    ASSERT_EQ(access((Classes() + "/EdtWaits.class").c_str(), R_OK), 0)
        << "EdtWaits.class was not built: javac was missing when looptrace was configured (run scripts/setup.sh)";
  }

  // Every event of the truth is one message of the event dispatch thread, within 2 ms of
  // it, named by its method; the by-name summary counts each name's events.
  void CheckMessages(const std::vector<json>& lines, const std::vector<json>& events) {
    auto session = OfType(lines, "session").at(0);
    EXPECT_EQ(session["profile"], "jvm-edt");
    EXPECT_EQ(session["message_definition"],
              "wait-bounded: a thread's messages bounded by its waits in java.awt.EventQueue.getNextEvent");
    auto messages = OfType(lines, "message");
    ASSERT_FALSE(messages.empty());
    std::map<std::string, size_t> truth_by_name;
    int64_t max_error = 0;
    int late = 0;  // boundaries more than 2 ms off
    for (const auto& e : events) {
      SCOPED_TRACE(e.dump());
      ++truth_by_name[e["name"].get<std::string>()];
      const int64_t begin = e["begin_ns"], end = e["end_ns"];
      // The messages overlapping the event: exactly one (a wait inside it splits nothing).
      std::vector<const json*> overlapping;
      for (const auto& m : messages)
        if (m["begin_ns"].get<int64_t>() < end && m["end_ns"].get<int64_t>() > begin) overlapping.push_back(&m);
      ASSERT_EQ(overlapping.size(), 1u) << "messages overlapping the event";
      const json& m = *overlapping[0];
      EXPECT_NE(m["tid"], session["pid"]);  // the event dispatch thread, not the main thread
      EXPECT_EQ(m.value("thread_name", ""), "AWT-EventQueue-0") << m.dump();  // its Java name, whole
      const int64_t begin_error = std::llabs(m["begin_ns"].get<int64_t>() - begin);
      const int64_t end_error = std::llabs(m["end_ns"].get<int64_t>() - end);
      // The bar is 20 ms; ours is 2 ms for all boundaries but one. One end may be late
      // by a preemption after the event read its clock and before it returned to the queue:
      // no sample can tell that stretch from the event (CI saw 2.7 ms once).
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
    // The measured events and those of the program's unmeasured first round.
    for (const auto& [name, count] : truth_by_name) EXPECT_EQ(counted[name], count + 1) << name;
    std::cout << fmt::format("{} events, each one message; worst begin/end error {:.3f} ms\n", events.size(),
                             static_cast<double>(max_error) / kMs);
  }

  TempDir dir_;
};

TEST_F(JvmEdtTest, RunOfAJvmWithoutFlagsBoundsEventDispatchMessagesByItsWaits) {
  if (IsSkipped()) return;
  std::vector<std::string> argv = {Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--"};
  for (auto& a : EdtWaits({"--truth", dir_ / "truth.jsonl"})) argv.push_back(a);
  auto r = RunCommand(argv, 300);
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
  std::vector<std::string> argv = {Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--"};
  for (auto& a : EdtWaits({"--truth", dir_ / "truth.jsonl"}, {"-Xint"})) argv.push_back(a);
  auto r = RunCommand(argv, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto events = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "event");
  ASSERT_EQ(events.size(), 6u);
  CheckMessages(ReadJsonLines(dir_ / "out.json"), events);
}

TEST_F(JvmEdtTest, RecordOfARunningJvmWithoutFlagsFindsItsEventDispatchThread) {
  if (IsSkipped()) return;
  const std::string ready = dir_ / "ready";
  // Long enough a warm-up for the session to attach and find the thread by its name.
  Process target(EdtWaits({"--truth", dir_ / "truth.jsonl", "--ready", ready, "--warmup", "6000"}));
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

}  // namespace
}  // namespace looptrace::testing
