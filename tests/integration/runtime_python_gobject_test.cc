// A GLib main loop run from Python through pygobject (Debian's python3-gi on its python3.11):
// every callback is a libffi closure in anonymous memory, so GLib's callback pointer names
// nothing; the glib profile names each message by the Python callable the closure holds, as
// asyncio's repr names it, checked against the truth the program writes
// (tests/runtimes/python/gobject_app.py).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int64_t kToleranceNs = 1'000'000;
const char* const kPython = "/usr/bin/python3.11";

std::string App() { return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/runtimes/python/gobject_app.py"; }

int64_t I(const json& j, const char* key) { return j[key].get<int64_t>(); }
std::string Name(const json& m) { return m["name"].is_string() ? m["name"].get<std::string>() : ""; }

class PyGObjectTest : public BpfTest {
 protected:
  TempDir dir_;
};

TEST_F(PyGObjectTest, EachCallbackIsAMessageNamedByItsPythonCallable) {
  auto r = RunCommand({Looptrace(), "run", "--profile", "glib", "-f", "json", "-o", dir_ / "out.json", "--", kPython,
                       App(), "--truth", dir_ / "truth.jsonl", "--ticks", "40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto messages = OfType(lines, "message");
  auto truth = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "callback");
  ASSERT_GE(truth.size(), 50u);  // 40 ticks, a refresh every 25 ms, an idle every 10 ticks
  std::map<std::string, int> expected, measured;
  for (const json& t : truth) ++expected[t["name"]];
  ASSERT_EQ(expected.size(), 3u);  // a function, a bound method, and idle callbacks added afresh
  for (const json& m : messages)
    if (expected.contains(Name(m))) ++measured[Name(m)];
  EXPECT_EQ(measured, expected);
  // Each truth callback inside a message of its name, as long as it.
  for (const json& t : truth) {
    bool found = false;
    for (const json& m : messages)
      found |= Name(m) == t["name"] && I(m, "begin_ns") <= I(t, "begin_ns") && I(m, "end_ns") >= I(t, "end_ns") &&
               (I(m, "end_ns") - I(m, "begin_ns")) - (I(t, "end_ns") - I(t, "begin_ns")) <= kToleranceNs;
    EXPECT_TRUE(found) << t.dump();
  }
  for (const json& m : messages) EXPECT_FALSE(Name(m).starts_with("0x")) << m.dump();  // no closure by address
  EXPECT_EQ(Counter(lines, "method_names_unknown"), 0u);
}

// The common case: attached to a running program, which the glib profile fits by itself.
TEST_F(PyGObjectTest, RecordOnARunningProgramPicksGlibAndNamesItsCallbacks) {
  Process target({kPython, App(), "--truth", dir_ / "truth.jsonl", "--ticks", "400"});
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // gi imported, the loop running
  auto r = RunCommand(
      {Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "1", "-f", "json", "-o", dir_ / "out.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["profile"], "glib");
  int ticks = 0, refreshes = 0;
  for (const json& m : OfType(lines, "message")) {
    ticks += Name(m) == "on_tick() at gobject_app.py:42";
    refreshes += Name(m) == "Widget.refresh() at gobject_app.py:64";
  }
  EXPECT_GE(ticks, 40);  // every 10 ms for 1 s, on a loaded machine
  EXPECT_GE(refreshes, 15);
}

}  // namespace
}  // namespace looptrace::testing
