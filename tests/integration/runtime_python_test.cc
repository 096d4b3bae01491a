// CPython end to end: Debian's /usr/bin/python3.11 runs an asyncio program of ours
// (tests/runtimes/python/asyncio_app.py) that writes its own truth; looptrace, without
// --profile, must find every callback as a message with the slow one's cost within 1 ms,
// its call tree (under a profiler, see below) with every function within 1 ms, and the GC
// run inside a slow callback as a stall cause. Plus the bad inputs of this runtime.
#include <gtest/gtest.h>

#include <fstream>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

constexpr int kProfileError = 6;
constexpr int64_t kMs = 1'000'000;
const char* const kPython = "/usr/bin/python3.11";

std::string App() { return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/runtimes/python/asyncio_app.py"; }

class PythonRuntimeTest : public BpfTest {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(access(kPython, X_OK), 0) << kPython << " is missing: run scripts/setup.sh (python3.11)";
  }

  // The message of the loop thread that contains the truth record's [begin, end].
  static const json* MessageAround(const std::vector<json>& messages, const json& truth) {
    for (const auto& m : messages)
      if (m["begin_ns"] <= truth["begin_ns"] && m["end_ns"] >= truth["end_ns"]) return &m;
    return nullptr;
  }

  TempDir dir_;
};

TEST_F(PythonRuntimeTest, EveryAsyncioCallbackIsAMessageAndTheSlowOneIsTimedWithin1ms) {
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--evil-threshold", "50", "--",
                       kPython, App(), "--scenario", "slow", "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["profile"], "python-asyncio");  // detected, no --profile
  EXPECT_EQ(session[0]["threads"], "loop");
  auto messages = OfType(lines, "message");
  auto callbacks = OfType(truth, "callback");
  ASSERT_EQ(callbacks.size(), 11u);
  int64_t max_error = 0;
  for (const auto& cb : callbacks) {
    SCOPED_TRACE(cb.dump());
    const json* m = MessageAround(messages, cb);
    ASSERT_NE(m, nullptr) << "no message around this callback";
    EXPECT_EQ((*m)["tid"], session[0]["pid"]);  // asyncio.run's loop is the main thread here
    // The message is Handle._run's Context.run: the callback plus a call or two.
    const int64_t error = Cost(*m) - Cost(cb);
    EXPECT_GE(error, 0);
    EXPECT_LE(error, 1 * kMs);
    max_error = std::max(max_error, error);
  }
  std::cout << "11 callbacks, max message-vs-truth cost error " << max_error << " ns\n";
  // The slow one (70 ms) is the only one over --evil-threshold 50.
  auto evil = OfType(lines, "evil_method");
  ASSERT_EQ(evil.size(), 1u);
  EXPECT_LE(std::llabs(evil[0]["cost_ns"].get<int64_t>() - Cost(callbacks[5])), 1 * kMs);
  EXPECT_EQ(evil[0]["has_beats"], false);  // python-asyncio maps no method beats
}

// CPython 3.11 fires python:function__entry only while a profiler is active (CPython issue
// gh-98894): the program runs under cProfile, as the README tells users to.
TEST_F(PythonRuntimeTest, SlowCallbackTreeNamesThePythonFunctionsEachWithin1ms) {
  auto r = RunCommand({Looptrace(),
                       "run",
                       "--profile",
                       "python",
                       "-f",
                       "json",
                       "-o",
                       dir_ / "out.json",
                       "--evil-threshold",
                       "50",
                       "--max-nodes",
                       "1000",
                       "--",
                       kPython,
                       "-m",
                       "cProfile",
                       "-o",
                       "/dev/null",
                       App(),
                       "--scenario",
                       "slow",
                       "--truth",
                       dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("gh-98894"), std::string::npos) << "no warning under a profiler:\n" << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  auto evil = OfType(lines, "evil_method");
  ASSERT_EQ(evil.size(), 1u);
  const json& report = evil[0];
  EXPECT_EQ(report["method_id_kind"], "string");
  const auto& tree = report["tree"];
  // The callback's own function is the first Python frame of the message.
  ASSERT_GE(tree.size(), 2u) << report.dump(1);
  EXPECT_EQ(tree[1]["name"].get<std::string>().rfind("asyncio_app:slow:", 0), 0u) << tree[1];
  int64_t max_error = 0;
  for (const auto& fn : OfType(truth, "function")) {
    SCOPED_TRACE(fn.dump());
    const json* node = nullptr;
    for (const auto& n : tree)
      if (n["name"] == fn["name"]) node = &n;
    ASSERT_NE(node, nullptr) << "not in the tree:\n" << report["tree"].dump(1);
    const int64_t error = std::llabs((*node)["cost_ns"].get<int64_t>() - Cost(fn));
    EXPECT_LE(error, 1 * kMs);
    max_error = std::max(max_error, error);
  }
  std::cout << "tree of " << tree.size() << " nodes, max function cost error " << max_error << " ns\n";
  EXPECT_EQ(Counter(lines, "unmatched_method_exit"), 0u);
  EXPECT_EQ(Counter(lines, "method_names_unknown"), 0u);
}

TEST_F(PythonRuntimeTest, AGcInsideASlowCallbackIsAStallCause) {
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--evil-threshold", "30", "--",
                       kPython, App(), "--scenario", "gc", "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  auto gc = OfType(truth, "gc");
  ASSERT_EQ(gc.size(), 1u);
  auto evil = OfType(lines, "evil_method");
  ASSERT_EQ(evil.size(), 1u);
  const json* collect = nullptr;
  for (const auto& c : evil[0]["stall_causes"])
    if (c["kind"] == "gc" && c["begin_ns"] >= gc[0]["begin_ns"] && c["end_ns"] <= gc[0]["end_ns"]) collect = &c;
  ASSERT_NE(collect, nullptr) << "no GC run inside gc.collect():\n" << evil[0]["stall_causes"].dump(1);
  EXPECT_EQ((*collect)["detail"], "generation 2");  // gc.collect() collects the oldest generation
  // Inside gc.collect() and most of it (the rest is the call around the collection, and on a
  // loaded machine any preemption between the program's clock reads and the probes).
  EXPECT_GE(2 * (*collect)["cost_ns"].get<int64_t>(), Cost(gc[0]));
}

TEST_F(PythonRuntimeTest, APythonWithoutUsdtProbesGetsPythonAsyncioAndThePythonProfileSaysWhy) {
  // Debian's interpreter with its probe notes removed: what a pyenv or source build without
  // --with-dtrace looks like.
  const std::string bare = dir_ / "python3.11";
  ASSERT_EQ(RunCommand({"objcopy", "--remove-section=.note.stapsdt", kPython, bare}).exit_code, 0);
  // python-asyncio reads no USDT probe it cannot do without (GC runs are optional).
  auto r = RunCommand({Looptrace(), "probes", "--exe", bare});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile python-asyncio"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("detected profile epoll"), std::string::npos) << r.err;
  // The python profile's method beats are USDT probes: an error naming the cause and the fix.
  auto explicit_profile = RunCommand({Looptrace(), "probes", "--exe", bare, "--profile", "python"});
  EXPECT_EQ(explicit_profile.exit_code, kProfileError);
  EXPECT_NE(explicit_profile.err.find("a CPython built without USDT probes"), std::string::npos)
      << explicit_profile.err;
  EXPECT_NE(explicit_profile.err.find("--with-dtrace"), std::string::npos) << explicit_profile.err;
}

TEST_F(PythonRuntimeTest, RecordFindsTheLoopThreadOfARunningInterpreter) {
  Process target({kPython, App(), "--scenario", "forever", "--truth", dir_ / "truth.jsonl"});
  WaitForFile(dir_ / "truth.jsonl", 5000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto probes = RunCommand({Looptrace(), "probes", "-p", std::to_string(target.pid())});
  ASSERT_EQ(probes.exit_code, 0) << probes.err;
  EXPECT_NE(probes.out.find("profile python-asyncio"), std::string::npos) << probes.out;
  EXPECT_NE(probes.out.find("PyContext_Type.run"), std::string::npos) << probes.out;
  auto r = RunCommand({Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "1", "-f", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto messages = OfType(ParseJsonLines(r.out), "message");
  EXPECT_GE(messages.size(), 20u);  // a callback every 20 ms for 1 s
}

// A CPython that never imports asyncio (its own poll loop, like http.server's) dispatches no
// asyncio callback: auto-detection must pass over python-asyncio (no _asyncio module mapped)
// and trace the loop's iterations with the epoll profile, each slow one within 1 ms.
TEST_F(PythonRuntimeTest, APythonWithoutAsyncioIsTracedAsAPollLoop) {
  const std::string app = std::string(LOOPTRACE_SOURCE_DIR) + "/tests/runtimes/python/poll_app.py";
  Process target({kPython, app, "--truth", dir_ / "truth.jsonl", "--seconds", "4"});
  WaitForFile(dir_ / "truth.jsonl", 5000);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string pid = std::to_string(target.pid());
  auto probes = RunCommand({Looptrace(), "probes", "-p", pid});
  ASSERT_EQ(probes.exit_code, 0) << probes.err;
  EXPECT_NE(probes.out.find("needs _asyncio.* loaded: pid " + pid + " has no such file mapped"), std::string::npos)
      << probes.out;
  EXPECT_NE(probes.out.find("profile epoll (builtin:epoll)"), std::string::npos) << probes.out;

  auto r = RunCommand({Looptrace(), "record", "-p", pid, "-d", "2", "-f", "json", "-o", dir_ / "out.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  target.Wait(10);
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["profile"], "epoll");
  EXPECT_EQ(session[0]["message_definition"], "poll-bounded");
  auto messages = OfType(lines, "message");
  size_t slow = 0;
  for (const auto& iteration : OfType(ReadJsonLines(dir_ / "truth.jsonl"), "iteration")) {
    if (Cost(iteration) < 15 * kMs) continue;
    const json* m = MessageAround(messages, iteration);
    if (!m) continue;  // outside the session
    ++slow;
    EXPECT_LT(Cost(*m) - Cost(iteration), 1 * kMs) << m->dump() << " vs truth " << iteration.dump();
  }
  EXPECT_GE(slow, 5u);  // one every ~60 ms for 2 s
}

// `run` without -o: the program's own output and the report share stdout. The report comes
// in one piece, so a program still writing (past -d) never splits it; before, its 64 KiB
// chunks went out as they were rendered and the program's lines fell between them.
TEST_F(PythonRuntimeTest, RunWithoutOutputFileKeepsTheProgramsLinesOutOfTheReport) {
  const std::string code =
      "import asyncio, sys\n"
      "async def main():\n"
      "    loop = asyncio.get_running_loop()\n"
      "    n = 0\n"
      "    def tick():\n"
      "        nonlocal n\n"
      "        n += 1\n"
      "        sys.stdout.write(f'program-line {n}\\n'); sys.stdout.flush()\n"
      "        loop.call_later(0.0005, tick)\n"
      "    tick()\n"
      "    await asyncio.sleep(4)\n"
      "asyncio.run(main())\n";
  const std::string out = dir_ / "stdout.txt";
  // A regular file, as `looptrace run ... > out.txt` gives: one write(2) is not split there.
  auto r =
      RunCommand({"/bin/sh", "-c", "exec \"$0\" run -d 1.5 -f json -- " + std::string(kPython) + " -c \"$1\" > \"$2\"",
                  Looptrace(), code, out},
                 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Wait returned once the program closed stderr too: it has ended, its lines are all there.
  std::ifstream in(out);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  size_t first = lines.size(), last = 0, program = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with("{")) {
      first = std::min(first, i);
      last = i;
    } else {
      ++program;
      EXPECT_TRUE(lines[i].starts_with("program-line ")) << lines[i];
    }
  }
  ASSERT_LT(first, lines.size());
  EXPECT_GT(last - first, 500u) << "a report of many messages (more than one 64 KiB chunk)";
  for (size_t i = first; i <= last; ++i)
    ASSERT_TRUE(lines[i].starts_with("{")) << "line " << i << " inside the report: " << lines[i];
  EXPECT_GT(first, 100u) << "the program's lines before the report";
  EXPECT_GT(lines.size() - last, 100u) << "and after it (-d ended the session, the program went on)";
}

TEST_F(PythonRuntimeTest, APythonProfileOnAnotherRuntimeSaysWhatTheTargetRuns) {
  auto r = RunCommand({Looptrace(), "probes", "--exe", SampleApp(), "--profile", "python"});
  EXPECT_EQ(r.exit_code, kProfileError);
  EXPECT_NE(r.err.find("profile python is for CPython, but"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("runs no runtime looptrace knows"), std::string::npos) << r.err;
}

TEST_F(PythonRuntimeTest, ConditionsOnArgumentsTheProbeLacksOrOfTheWrongTypeAreErrors) {
  const std::string profile = dir_ / "bad.profile";
  std::ofstream(profile) << "probe gc.begin usdt exe python:gc__start if arg4 == 1\n"
                            "probe gc.end usdt exe python:gc__done\n";
  auto r = RunCommand({Looptrace(), "probes", "--exe", kPython, "--profile", profile});
  EXPECT_EQ(r.exit_code, kProfileError);
  EXPECT_NE(r.err.find("condition 'arg4 == 1' reads arg4, but usdt python:gc__start in /usr/bin/python3.11 has 1 "
                       "argument"),
            std::string::npos)
      << r.err;
  std::ofstream(profile, std::ios::trunc) << "probe gc.begin usdt exe python:gc__start if arg1:str == \"x\"\n"
                                             "probe gc.end usdt exe python:gc__done\n";
  r = RunCommand({Looptrace(), "probes", "--exe", kPython, "--profile", profile});
  EXPECT_EQ(r.exit_code, kProfileError);
  EXPECT_NE(r.err.find("reads arg1 as a string, but it is a 4-byte integer"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace looptrace::testing
