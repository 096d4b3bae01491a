// CPython without flags, from outside (issue 27): an asyncio program of ours
// (tests/runtimes/python/frames_app.py) that writes its truth runs on Debian's 3.11 and on
// pyenv's shared builds 3.8, 3.10, 3.12 and 3.13 (no USDT probes, no frame pointers, no
// environment, no profiler). looptrace must name every callback as asyncio's repr does, and
// show the slow one's sampled tree as the Python functions on its path, each with its share
// of the time (a sleeping one under its own line, off CPU), read from the interpreter's own
// frames; `record -p` on a running interpreter too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

std::string App() { return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/runtimes/python/frames_app.py"; }

// The interpreter of CPython 3.MINOR: Debian's 3.11, else pyenv's build ("" when missing).
std::string Interpreter(int minor) {
  if (minor == 11) return "/usr/bin/python3.11";
  const char* home = getenv("HOME");
  const std::string root = getenv("PYENV_ROOT") ? getenv("PYENV_ROOT") : std::string(home ? home : "/root") + "/.pyenv";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root + "/versions", ec)) {
    const std::string version = entry.path().filename();
    if (version.starts_with("3." + std::to_string(minor) + ".")) {
      const std::string python = entry.path() / "bin" / ("python3." + std::to_string(minor));
      if (access(python.c_str(), X_OK) == 0) return python;
    }
  }
  return "";
}

// The C function time.sleep waits in: select() before CPython 3.11, clock_nanosleep() since.
std::string SleepLeaf(int minor) { return minor >= 11 ? "clock_nanosleep" : "select"; }

// The sum of the sampled nodes of `function` (any line), in percent of the message.
double SampledShare(const json& report, const std::string& function) {
  double sampled = 0;
  for (const json& node : report["sampled_tree"])
    if (node["name"].get<std::string>().starts_with(function + " (frames_app.py:"))
      sampled += node["cost_ns"].get<double>();
  return 100.0 * sampled / report["cost_ns"].get<double>();
}

class PythonFramesTest : public BpfTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    python_ = Interpreter(GetParam());
    if (python_.empty()) GTEST_SKIP() << "no CPython 3." << GetParam() << " on this machine";
  }
  std::string python_;
  TempDir dir_;
};

TEST_P(PythonFramesTest, CallbacksAreNamedAsAsyncioNamesThemAndTheSlowOnesTreeNamesItsPythonFunctions) {
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--evil-threshold", "50",
                       "--sampled-max-nodes", "1000", "--", python_, App(), "--truth", dir_ / "truth.jsonl"},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("no Python frames"), std::string::npos) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["profile"], "python-asyncio");
  auto messages = OfType(lines, "message");

  // Every Python callback: the message around its truth bears its repr name.
  size_t named = 0;
  for (const json& cb : OfType(truth, "callback")) {
    SCOPED_TRACE(cb.dump());
    const json* around = nullptr;
    for (const json& m : messages)
      if (m["begin_ns"] <= cb["begin_ns"] && m["end_ns"] >= cb["end_ns"]) around = &m;
    ASSERT_NE(around, nullptr);
    EXPECT_EQ((*around)["name"], cb["name"]);
    ++named;
  }
  EXPECT_EQ(named, 4u);  // quick_tick, Report.refresh, partial(with_argument), render_report
  // A C method and a task step.
  std::set<std::string> names;
  for (const json& m : messages)
    if (m["name"].is_string()) names.insert(m["name"].get<std::string>());
  EXPECT_TRUE(names.count("Future.set_result()")) << json(names).dump(1);
  const std::string task =
      OfType(truth, "task").at(0)["name"].get<std::string>() + " handle_client() at frames_app.py:";
  EXPECT_TRUE(std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.starts_with(task); }))
      << json(names).dump(1);

  // The slow callback's sampled tree: its functions with their share of it.
  auto evil = OfType(lines, "evil_method");
  ASSERT_EQ(evil.size(), 1u) << json(evil).dump(1);
  const json& report = evil[0];
  json truth_slow;
  for (const json& cb : OfType(truth, "callback"))
    if (cb.value("slow", false)) truth_slow = cb;
  EXPECT_EQ(report["name"], truth_slow["name"]);
  std::string tree;
  for (const json& node : report["sampled_tree"])
    tree += std::string(2 * node["depth"].get<int>(), ' ') + node["name"].get<std::string>() + " " +
            std::to_string(node["percent"].get<double>()) + "\n";
  std::cout << "CPython 3." << GetParam() << " sampled tree:\n" << tree;
  EXPECT_GE(SampledShare(report, "render_report"), 90.0) << tree;
  double worst = 0;
  for (const json& fn : OfType(truth, "function")) {
    const double truth_share = 100.0 * Cost(fn) / report["cost_ns"].get<double>();
    const double sampled = SampledShare(report, fn["name"].get<std::string>());
    EXPECT_NEAR(sampled, truth_share, 5.0) << fn["name"] << "\n" << tree;
    std::cout << fn["name"].get<std::string>() << ": truth " << truth_share << "%, sampled " << sampled << "%\n";
    worst = std::max(worst, std::abs(sampled - truth_share));
  }
  std::cout << "CPython 3." << GetParam() << ": largest share error " << worst << " points\n";
  // time.sleep's wait is under wait_for_disk's own line, off CPU, with the native leaf.
  const size_t sleeper = tree.find("wait_for_disk (frames_app.py:72)");
  ASSERT_NE(sleeper, std::string::npos) << tree;
  EXPECT_NE(tree.find(SleepLeaf(GetParam()), sleeper), std::string::npos) << tree;
  json stats = OfType(lines, "stats").at(0)["counters"];
  EXPECT_EQ(stats["interp_stacks_dropped"], 0);
}

INSTANTIATE_TEST_SUITE_P(CPython, PythonFramesTest, ::testing::Values(8, 10, 11, 12, 13),
                         [](const ::testing::TestParamInfo<int>& info) { return "3_" + std::to_string(info.param); });

// A callback stuck in time.sleep: the ANR snapshot's dump of the loop thread names the
// Python line that waits, under the C function it waits in.
TEST_P(PythonFramesTest, AnAnrSnapshotNamesThePythonLineThatIsStuck) {
  auto r = RunCommand({Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--anr-threshold", "500", "--",
                       python_, App(), "--scenario", "stuck", "--truth", dir_ / "truth.jsonl"},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto anrs = OfType(ReadJsonLines(dir_ / "out.json"), "anr");
  ASSERT_EQ(anrs.size(), 1u);
  EXPECT_EQ(anrs[0]["name"], "stuck_callback() at frames_app.py:130");
  const json& stack = anrs[0]["threads"][0]["user_stack"];
  ASSERT_FALSE(stack.empty()) << anrs[0].dump(1);
  std::string text;
  for (const json& frame : stack) text += frame.get<std::string>() + "\n";
  std::cout << "CPython 3." << GetParam() << " stuck thread:\n" << text;
  size_t at = text.find("wait_on_lock (frames_app.py:127)");
  EXPECT_NE(at, std::string::npos) << text;
  EXPECT_NE(text.find("stuck_callback (frames_app.py:132)"), std::string::npos) << text;
  EXPECT_LT(text.find(SleepLeaf(GetParam())), at) << text;  // the native leaf first

  // The sleep began as the message did (an early wait): BPF took no stack at its switch-out,
  // and the loader read it from outside once the wait outlived the early age (issue 32), or,
  // had the loader been reading a file it met first then, BPF took it at the switch-out. The
  // slow message's sampled tree has it all the same: the sleep under the Python line.
  auto evil = OfType(ReadJsonLines(dir_ / "out.json"), "evil_method");
  ASSERT_EQ(evil.size(), 1u);
  std::string sampled;
  for (const json& frame : evil[0]["sampled"]["common_frames"]) sampled += frame.get<std::string>() + "\n";
  for (const json& node : evil[0]["sampled_tree"]) sampled += node["name"].get<std::string>() + "\n";
  const size_t waiter = sampled.find("wait_on_lock (frames_app.py:127)");
  ASSERT_NE(waiter, std::string::npos) << sampled;
  EXPECT_NE(sampled.find(SleepLeaf(GetParam()), waiter), std::string::npos) << sampled;
  const json stats = OfType(ReadJsonLines(dir_ / "out.json"), "stats").at(0)["counters"];
  EXPECT_GE(stats["early_wait_stacks_late"].get<uint64_t>() + stats["early_wait_stacks_at_switch_out"].get<uint64_t>(),
            1u)
      << stats.dump();
  EXPECT_EQ(stats["early_wait_stacks_missed"], 0) << stats.dump();
}

// The loop on a thread of its own while the main thread and another one run Python: the
// callbacks are the loop thread's, and its samples hold its own Python frames, not theirs
// (BPF finds a thread's interpreter state by the thread's pointer).
TEST_P(PythonFramesTest, ALoopOnItsOwnThreadAmongBusyPythonThreadsGetsItsOwnFrames) {
  auto r = RunCommand(
      {Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--evil-threshold", "50", "--sampled-max-nodes",
       "1000", "--", python_, App(), "--scenario", "threaded", "--truth", dir_ / "truth.jsonl"},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["threads"], "loop");
  // render_report is the slow callback; a quick one can be slow too when the busy threads
  // hold the GIL long on a loaded machine: each slow one must be slow by the program's clock,
  // or have waited (off CPU) for most of it: a message also holds the loop's own code around
  // the callback, where the thread may wait for the GIL out of the callback's clock (CI saw a
  // 55 ms message, 1.2 ms of it on CPU, around a quick callback).
  std::map<std::string, int64_t> slowest_by_truth;
  for (const json& callback : OfType(ReadJsonLines(dir_ / "truth.jsonl"), "callback")) {
    int64_t& slowest = slowest_by_truth[callback["name"].get<std::string>()];
    slowest = std::max(slowest, callback["end_ns"].get<int64_t>() - callback["begin_ns"].get<int64_t>());
  }
  const std::vector<json> evil = OfType(lines, "evil_method");
  const json* render = nullptr;
  for (const json& e : evil) {
    const std::string name = e["name"].is_string() ? e["name"].get<std::string>() : "";
    const bool waited = e["cpu_ns"].get<double>() < 0.5 * e["cost_ns"].get<double>();
    EXPECT_TRUE(slowest_by_truth[name] >= 45'000'000 || waited)
        << "not slow by the program's clock, and on CPU: " << e.dump(1);
    EXPECT_NE(e["tid"], session[0]["pid"]);  // not the main thread
    if (name == "render_report() at frames_app.py:75") render = &e;
  }
  ASSERT_NE(render, nullptr) << json(evil).dump(1);
  std::string tree;
  for (const json& node : (*render)["sampled_tree"]) tree += node["name"].get<std::string>() + "\n";
  EXPECT_NE(tree.find("parse_records (frames_app.py:"), std::string::npos) << tree;
  EXPECT_EQ(tree.find("background_work"), std::string::npos) << tree;
  EXPECT_EQ(tree.find("main_thread_work"), std::string::npos) << tree;
}

// The tree of `report` as "name" lines indented by depth.
std::string TreeText(const json& report) {
  std::string tree;
  for (const json& node : report["sampled_tree"])
    tree += std::string(2 * node["depth"].get<int>(), ' ') + node["name"].get<std::string>() + "\n";
  return tree;
}

// A slow callback whose time is in a C extension (zlib's deflate, in a stripped libz): the
// Python line that calls it, then the C functions, each of libz's static functions under
// one name (where .eh_frame says it starts), never one name per sampled instruction.
TEST_P(PythonFramesTest, ASlowCallbackInACExtensionShowsThePythonLineOverTheCFunctions) {
  auto r = RunCommand(
      {Looptrace(), "run", "-f", "json", "-o", dir_ / "out.json", "--evil-threshold", "50", "--sampled-max-nodes",
       "1000", "--", python_, App(), "--scenario", "cext", "--truth", dir_ / "truth.jsonl"},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto evil = OfType(ReadJsonLines(dir_ / "out.json"), "evil_method");
  ASSERT_EQ(evil.size(), 1u) << json(evil).dump(1);
  EXPECT_EQ(evil[0]["name"], "archive_callback() at frames_app.py:196");
  const std::string tree = TreeText(evil[0]);
  const size_t caller = tree.find("compress_logs (frames_app.py:193)");
  ASSERT_NE(caller, std::string::npos) << tree;
  EXPECT_NE(tree.find("(libz.so", caller), std::string::npos) << tree;
  EXPECT_EQ(tree.find("libz.so.1.2.13+0x"), std::string::npos) << tree;  // no per-instruction names
  for (const json& fn : OfType(ReadJsonLines(dir_ / "truth.jsonl"), "function")) {
    const double truth_share = 100.0 * Cost(fn) / evil[0]["cost_ns"].get<double>();
    EXPECT_NEAR(SampledShare(evil[0], fn["name"].get<std::string>()), truth_share, 5.0) << tree;
  }
}

// --native-frames with --dwarf-unwind (Debian's python3.11 keeps no frame pointers): the
// native stack, each interpreter loop replaced by the Python frames it ran, so the C path from
// the Python line to the library is whole.
class PythonNativeFramesTest : public BpfTest {};

TEST_F(PythonNativeFramesTest, TheMergedViewRunsFromThePythonLineThroughTheExtensionIntoTheLibrary) {
  TempDir dir;
  auto r = RunCommand({Looptrace(), "run", "--native-frames", "--dwarf-unwind", "-f", "json", "-o", dir / "out.json",
                       "--evil-threshold", "50", "--sampled-max-nodes", "1000", "--", "/usr/bin/python3.11", App(),
                       "--scenario", "cext", "--truth", dir / "truth.jsonl"},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto evil = OfType(ReadJsonLines(dir / "out.json"), "evil_method");
  ASSERT_EQ(evil.size(), 1u) << json(evil).dump(1);
  const std::string tree = TreeText(evil[0]);
  std::string common;
  for (const json& frame : evil[0]["sampled"]["common_frames"]) common += frame.get<std::string>() + "\n";
  // Native frames below, Python frames among them: under every stack, or (when one sample's
  // walk ended elsewhere, as on CI once) on the tree's paths.
  const std::string whole = common + tree;
  EXPECT_NE(whole.find("Py_BytesMain"), std::string::npos) << whole;
  EXPECT_NE(whole.find("Handle._run (events.py:"), std::string::npos) << whole;
  const size_t caller = tree.find("compress_logs (frames_app.py:193)");
  ASSERT_NE(caller, std::string::npos) << tree;
  const size_t deflate = tree.find("  deflate\n", caller);
  ASSERT_NE(deflate, std::string::npos) << tree;
  EXPECT_NE(tree.find("(libz.so", deflate), std::string::npos) << tree;
  EXPECT_EQ(tree.find("_PyEval_EvalFrameDefault"), std::string::npos) << tree;  // replaced
}

// The BPF walk from .eh_frame rows (Debian's python3.11 keeps no frame pointers, issue 32):
// with --native-frames it walks every stack whole; in the default view, where the Python frames
// take the place of the interpreter's own, it stops at the interpreter's code, and the tree is
// the same Python functions.
TEST_F(PythonNativeFramesTest, TheBpfWalkIsWholeForTheMergedViewAndStopsAtTheInterpreterForTheDefaultOne) {
  TempDir dir;
  auto counters_of = [&](const std::vector<std::string>& options) -> json {
    std::vector<std::string> argv = {
        Looptrace(),           "run", "-f", "json", "-o", dir / "out.json", "--evil-threshold", "50",
        "--sampled-max-nodes", "1000"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--", "/usr/bin/python3.11", App(), "--truth", dir / "truth.jsonl"});
    auto r = RunCommand(argv, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto lines = ReadJsonLines(dir / "out.json");
    auto evil = OfType(lines, "evil_method");
    EXPECT_FALSE(evil.empty());
    if (!evil.empty()) {
      const std::string tree = TreeText(evil[0]);
      EXPECT_NE(tree.find("(frames_app.py:"), std::string::npos) << tree;
      EXPECT_EQ(tree.find("not walked"), std::string::npos) << tree;
    }
    auto stats = OfType(lines, "stats");
    return stats.size() == 1 ? stats[0]["counters"] : json::object();
  };
  const json merged = counters_of({"--native-frames"});
  ASSERT_GT(merged.value("user_stacks_sampled", 0u), 20u) << merged.dump();
  EXPECT_GE(merged["user_stacks_complete"].get<double>() / merged["user_stacks_sampled"].get<double>(), 0.99)
      << merged.dump();
  EXPECT_EQ(merged["stack_walks_cut_at_interpreter"], 0u);
  EXPECT_EQ(merged["stack_modules_without_rows"], 0u);  // libcrypto (ssl) left _asyncio none once
  const json view = counters_of({});
  EXPECT_GT(view.value("stack_walks_cut_at_interpreter", 0u), 20u) << view.dump();
}

// A library dlopened while the session runs (decimal's first import, 3 s in, after the rows of
// the start are out): the BPF walk meets code it has no rows for yet, sends those samples as
// stack copies that user space walks, and the loader publishes the library's rows at once.
// Before, those stacks stopped in the library: 2 of 307 whole.
TEST_F(PythonNativeFramesTest, ALibraryLoadedMidSessionIsWalkedWholeFromItsFirstSample) {
  TempDir dir;
  auto r = RunCommand({Looptrace(), "run", "--native-frames", "-f", "json", "-o", dir / "out.json", "--evil-threshold",
                       "50", "--sampled-max-nodes", "1000", "--", "/usr/bin/python3.11", App(), "--scenario",
                       "late-import", "--truth", dir / "truth.jsonl"},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir / "out.json");
  auto evil = OfType(lines, "evil_method");
  ASSERT_EQ(evil.size(), 1u) << json(evil).dump(1);
  EXPECT_EQ(evil[0]["name"], "late_import_callback() at frames_app.py:227");
  const std::string tree = TreeText(evil[0]);
  const size_t caller = tree.find("compute_with_a_library_loaded_now (frames_app.py:");
  ASSERT_NE(caller, std::string::npos) << tree;
  EXPECT_NE(tree.find("(_decimal.cpython-311", caller), std::string::npos) << tree;
  const json counters = OfType(lines, "stats").at(0)["counters"];
  ASSERT_GT(counters.value("user_stacks_sampled", 0u), 100u) << counters.dump();
  EXPECT_GE(counters["user_stacks_complete"].get<double>() / counters["user_stacks_sampled"].get<double>(), 0.99)
      << counters.dump();
  EXPECT_EQ(counters["stack_walks_no_frame_pointer"], 0u) << counters.dump();
  // The library's symbols and rows were read after the start, once: the cost block counts
  // them apart from the running cost a --cpu-budget keeps.
  const uint64_t first_use = counters.value("cost_loader_first_use_cpu_ns", 0u);
  EXPECT_GT(first_use, 0u) << counters.dump();
  EXPECT_LE(first_use,
            counters["cost_loader_cpu_ns"].get<uint64_t>() - counters["cost_loader_start_cpu_ns"].get<uint64_t>())
      << counters.dump();
  std::cout << counters["stack_walks_finished_from_copy"] << " stacks walked from copies of "
            << counters["user_stacks_sampled"] << "\n";
}

class PythonRecordTest : public BpfTest {
 protected:
  TempDir dir_;
};

// The common case: attach to a running service (pyenv's 3.13, a shared build whose
// Context.run lives in libpython3.13.so).
TEST_F(PythonRecordTest, RecordOnARunningPyenvInterpreterPicksPythonAsyncioAndNamesCallbacksAndFrames) {
  const std::string python = Interpreter(13);
  if (python.empty()) GTEST_SKIP() << "no CPython 3.13";
  Process target({python, App(), "--scenario", "forever", "--truth", dir_ / "truth.jsonl"});
  WaitForFile(dir_ / "truth.jsonl", 5000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto r = RunCommand({Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "2", "-f", "json",
                       "--evil-threshold", "50", "-o", dir_ / "out.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("no built-in profile"), std::string::npos) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  EXPECT_EQ(session[0]["profile"], "python-asyncio");
  size_t slow = 0;
  for (const json& m : OfType(lines, "message"))
    if (m["name"] == "render_report() at frames_app.py:75") ++slow;
  EXPECT_GE(slow, 5u);  // a round every ~130 ms for 2 s
  // Every slow message is sampled on CPU from its start, the first one too (the main
  // thread's sampler runs before its first message names it the loop thread), and names
  // the function the time is in.
  auto evil = OfType(lines, "evil_method");
  ASSERT_GE(evil.size(), 3u);
  for (const json& e : evil) {
    EXPECT_GT(e["sampled"]["samples_on_cpu"].get<int>(), 0) << e.dump(1);
    std::string tree;
    for (const json& node : e["sampled_tree"]) tree += node["name"].get<std::string>() + "\n";
    EXPECT_NE(tree.find("parse_records (frames_app.py:"), std::string::npos) << tree;
  }
}

// A service whose callbacks sleep as they begin (early waits: BPF takes no stack then), every
// 10th for 50 ms (a slow message), attached to as it runs, with Debian's python3.11: every
// slow message's tree has its Python line over the sleep, those of the session's first second
// too, when the loader is still reading the files its first stacks reach (issue 32: it reads a
// long early wait's stack from outside, and could not read one in time then; BPF takes them at
// the switch-out until it has settled). Before that, 1 of ~40 in each of 4 sessions of 4 s went
// without its stack.
TEST_F(PythonRecordTest, EveryLongEarlyWaitKeepsItsPythonLineFromTheSessionsFirstSecondOn) {
  Process target({"/usr/bin/python3.11", App(), "--scenario", "early-waits", "--truth", dir_ / "truth.jsonl"});
  WaitForFile(dir_ / "truth.jsonl", 5000);
  auto r = RunCommand({Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "4", "-f", "json",
                       "--evil-threshold", "40", "-o", dir_ / "out.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto session = OfType(lines, "session");
  ASSERT_EQ(session.size(), 1u);
  // The slow callbacks the program ran inside the session, by its own clock.
  size_t slow = 0;
  for (const json& t : ReadJsonLines(dir_ / "truth.jsonl"))
    if (t.value("slow", false) && t["begin_ns"] >= session[0]["begin_ns"] && t["end_ns"] <= session[0]["end_ns"])
      ++slow;
  ASSERT_GE(slow, 15u);  // one every ~100 ms
  auto evil = OfType(lines, "evil_method");
  EXPECT_GE(evil.size(), slow);
  for (const json& e : evil) {
    std::string tree;
    for (const json& frame : e["sampled"]["common_frames"]) tree += frame.get<std::string>() + "\n";
    for (const json& node : e["sampled_tree"]) tree += node["name"].get<std::string>() + "\n";
    const size_t line = tree.find("sleep_as_it_begins (frames_app.py:234)");
    ASSERT_NE(line, std::string::npos) << e.dump(1);
    EXPECT_NE(tree.find("clock_nanosleep", line), std::string::npos) << tree;
  }
  const json stats = OfType(lines, "stats").at(0)["counters"];
  EXPECT_EQ(stats["early_wait_stacks_missed"], 0) << stats.dump();
  EXPECT_GE(stats["early_wait_stacks_at_switch_out"].get<uint64_t>(), 1u) << stats.dump();  // at the start
  EXPECT_GE(stats["early_wait_stacks_late"].get<uint64_t>(), 1u) << stats.dump();           // once settled
}

}  // namespace
}  // namespace looptrace::testing
