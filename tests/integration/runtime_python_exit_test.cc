// A CPython target that dies in the middle of a session (issue 27 item 7): Debian's
// /usr/bin/python3.11 runs tests/runtimes/python/exit_app.py, which ends itself inside a
// callback it never ran before, with os._exit(3) or SIGKILL, under `run` and under
// `record -p`. The session must end as a target exit does (exit code 0, end reason
// "target-exited", the program's status), write its whole report atomically, leave no
// probe attached, and name every message as asyncio names its callback, those of the last
// callbacks too, whose records are read after the process is gone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

const char* const kPython = "/usr/bin/python3.11";

std::string App() { return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/runtimes/python/exit_app.py"; }

class PythonExitTest : public BpfTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(access(kPython, X_OK), 0) << kPython << " is missing: run scripts/setup.sh (python3.11)";
  }

  // The report is whole, the session ended by the target's exit, and every callback the
  // program ran is a message bearing asyncio's name for it; no name is an address or "-".
  void ExpectWholeReportNamingEveryCallback(const std::string& report_path, const std::string& truth_path,
                                            std::optional<int> exit_status) {
    // Only the report and the truth: no temporary file of an output written halfway.
    std::set<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path()))
      files.insert(entry.path().filename().string());
    EXPECT_EQ(files, (std::set<std::string>{"out.json", "truth.jsonl"}));

    auto lines = ReadJsonLines(report_path);
    auto truth = ReadJsonLines(truth_path);
    auto session = OfType(lines, "session");
    ASSERT_EQ(session.size(), 1u) << "the report is not whole";
    EXPECT_EQ(session[0]["profile"], "python-asyncio");
    EXPECT_EQ(session[0]["end_reason"], "target-exited");
    if (exit_status) EXPECT_EQ(session[0]["exit_status"], *exit_status);
    ASSERT_FALSE(OfType(lines, "stats").empty()) << "no counters: the report stops early";

    std::map<std::string, int> names;
    for (const char* type : {"message", "unfinished_message"})
      for (const json& m : OfType(lines, type))
        if (m["name"].is_string()) ++names[m["name"].get<std::string>()];
    for (const auto& [name, count] : names) {
      SCOPED_TRACE(name);
      EXPECT_FALSE(name.empty() || name == "-" || name.starts_with("0x")) << json(names).dump(1);
    }
    auto callbacks = OfType(truth, "callback");
    ASSERT_EQ(callbacks.size(), 3u);  // tick, last_words, farewell
    // tick ran for a while: its name was read while the program lived, and every one of its
    // messages keeps it, those whose records were read after the exit too.
    const std::string tick = callbacks[0]["name"];
    ASSERT_TRUE(tick.starts_with("tick() at exit_app.py:")) << tick;
    EXPECT_GE(names[tick], 20) << json(names).dump(1);
    for (const auto& [name, count] : names)
      if (name.starts_with("tick")) EXPECT_EQ(name, tick) << json(names).dump(1);
    // The last two ran once, within a few ms of the end, so their records are likely read
    // after the process is gone, with no code object left to read their file and line from:
    // then they keep the qualified name BPF read at the hit.
    for (const json& cb : {callbacks[1], callbacks[2]}) {
      const std::string full = cb["name"];
      const std::string bare = full.substr(0, full.find(" at "));
      EXPECT_TRUE(names.contains(full) || names.contains(bare)) << full << " not among\n" << json(names).dump(1);
    }
    EXPECT_EQ(Counter(lines, "interp_callables_unnamed"), 0u);
  }

  TempDir dir_;
};

TEST_P(PythonExitTest, RunEndsCleanlyWhenTheProgramDiesAndNamesItsLastCallbacks) {
  const std::string end = GetParam();
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--", kPython, App(), "--after", "1",
                       "--end", end, "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(end == "kill" ? "was killed by signal" : "exited with status 3"), std::string::npos) << r.err;
  ExpectWholeReportNamingEveryCallback(dir_ / "out.json", dir_ / "truth.jsonl", end == "kill" ? 128 + SIGKILL : 3);
}

TEST_P(PythonExitTest, RecordEndsCleanlyWhenTheTracedProcessDiesAndNamesItsLastCallbacks) {
  const std::string end = GetParam();
  Process target({kPython, App(), "--trigger", dir_ / "die", "--end", end, "--truth", dir_ / "truth.jsonl"});
  WaitForFile(dir_ / "truth.jsonl", 5000);
  // looptrace's log in a file, to see when it is attached (its start line).
  Process looptrace({"sh", "-c", "exec \"$0\" record -p \"$1\" -f json -o \"$2\" 2>\"$3\"", Looptrace(),
                     std::to_string(target.pid()), dir_ / "out.json", dir_ / "looptrace.log"});
  std::string log;
  for (int i = 0; i < 6000 && log.find("tracing pid") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(dir_ / "looptrace.log");
    log.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_NE(log.find("tracing pid"), std::string::npos) << log;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a few rounds of tick traced
  std::ofstream(dir_ / "die") << "now\n";
  auto program = target.Wait(10);
  EXPECT_EQ(program.exit_code, end == "kill" ? 128 + SIGKILL : 3);
  auto r = looptrace.Wait(60);
  std::ifstream in(dir_ / "looptrace.log");
  log.assign(std::istreambuf_iterator<char>(in), {});
  ASSERT_EQ(r.exit_code, 0) << log;
  EXPECT_NE(log.find("exited"), std::string::npos) << log;
  std::filesystem::remove(dir_ / "die");
  std::filesystem::remove(dir_ / "looptrace.log");
  ExpectWholeReportNamingEveryCallback(dir_ / "out.json", dir_ / "truth.jsonl", std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Ends, PythonExitTest, ::testing::Values("exit", "kill"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace looptrace::testing
