// HotSpot's Java frames read from outside through the structures the JVM exports for
// debuggers (loader/runtimes/jvm/), on a JVM started with no flags running a program of ours
// (tests/runtimes/java/JvmFrames.java) whose threads sit in known methods: a thread dump
// (`looptrace snapshot`) must name every Java thread's frames as the JVM's own
// `jcmd PID Thread.print` does, and the stacks BPF samples (`record -p`) must name the Java
// methods a thread burns CPU or sleeps in, callers after callees.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

// The JDKs the tests run: Debian's OpenJDK 17, and one other JDK of /usr/lib/jvm when one is
// installed (its `release` names another version), else that case is skipped.
std::string OtherJdk() {
  std::error_code ec;
  std::vector<std::string> homes;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/jvm", ec)) homes.push_back(entry.path());
  std::sort(homes.begin(), homes.end());
  const auto jdk17 = std::filesystem::canonical(Jdk17(), ec);
  for (const auto& home : homes) {
    if (std::filesystem::canonical(home, ec) == jdk17 || access((home + "/bin/jcmd").c_str(), X_OK) != 0) continue;
    std::ifstream release(home + "/release");
    std::string text((std::istreambuf_iterator<char>(release)), std::istreambuf_iterator<char>());
    if (text.find("JAVA_VERSION=\"17.") == std::string::npos) return home;
  }
  return "";
}

std::string JdkHome(std::string_view which) { return which == "jdk17" ? Jdk17() : OtherJdk(); }

// The line of JvmFrames.java that holds `text` first: the truth for line numbers.
int SourceLine(std::string_view text) {
  std::ifstream in(std::string(LOOPTRACE_SOURCE_DIR) + "/tests/runtimes/java/JvmFrames.java");
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find(text) != std::string::npos) return number;
  }
  return -1;
}

struct JstackFrame {
  std::string function;
  int line = 0;  // 0: no line (a native method)
};

// `jcmd PID Thread.print`: each thread's "at" lines by its nid (the kernel's thread id).
std::map<uint32_t, std::vector<JstackFrame>> Jstack(const std::string& home, int pid) {
  auto r = RunCommand({home + "/bin/jcmd", std::to_string(pid), "Thread.print"}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<uint32_t, std::vector<JstackFrame>> out;
  std::istringstream in(r.out);
  // nid: hex to JDK 17, decimal since JDK 19.
  static const std::regex kThread(R"(^".*" .*nid=(0x[0-9a-f]+|[0-9]+) )");
  static const std::regex kAt(R"(^\s+at ([^(]+)\(([^)]*)\))");
  std::vector<JstackFrame>* current = nullptr;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kThread)) {
      current = &out[static_cast<uint32_t>(std::stoul(m[1], nullptr, 0))];
    } else if (current && std::regex_search(line, m, kAt)) {
      JstackFrame f{m[1], 0};
      const std::string where = m[2];
      if (auto colon = where.rfind(':'); colon != std::string::npos) f.line = std::stoi(where.substr(colon + 1));
      current->push_back(f);
    } else if (line.empty()) {
      current = nullptr;
    }
  }
  return out;
}

// A Java frame as a stall snapshot shows it: "JvmFrames.napper (JvmFrames.java:12)".
struct DumpFrame {
  std::string function;
  int line = 0;
};

// The Java frames of each thread of a `looptrace snapshot -f json` dump (native frames,
// "pc 0x... module (function)", left out), by tid, innermost first.
std::map<uint32_t, std::vector<DumpFrame>> JavaFramesOf(const json& dump, std::string* text) {
  std::map<uint32_t, std::vector<DumpFrame>> out;
  static const std::regex kFrame(R"(^([^ ]+)(?: \(([^:)]*)(?::(\d+))?\))?$)");
  for (const json& thread : dump["threads"]) {
    const uint32_t tid = thread["tid"].get<uint32_t>();
    for (const json& f : thread.value("user_stack", json::array())) {
      const std::string name = f.get<std::string>();
      *text += std::to_string(tid) + " " + name + "\n";
      std::smatch m;
      if (name.starts_with("pc 0x") || !std::regex_match(name, m, kFrame)) continue;
      out[tid].push_back({m[1], m[3].matched ? std::stoi(m[3]) : 0});
    }
  }
  return out;
}

std::vector<std::string> Functions(const std::vector<DumpFrame>& frames) {
  std::vector<std::string> out;
  for (const auto& f : frames) out.push_back(f.function);
  return out;
}

// Whether `chain` appears in `functions` in this order (other frames may lie between).
bool Subsequence(const std::vector<std::string>& functions, const std::vector<std::string>& chain) {
  size_t at = 0;
  for (const auto& f : functions)
    if (at < chain.size() && f == chain[at]) ++at;
  return at == chain.size();
}

// The same without lambda proxies (hidden classes named by their address).
std::vector<std::string> SourceFunctions(const std::vector<DumpFrame>& frames) {
  std::vector<std::string> out;
  for (const auto& f : frames)
    if (f.function.find("$$Lambda$") == std::string::npos) out.push_back(f.function);
  return out;
}

// JvmFrames is ready once its compiled sleeper has been JIT-compiled, with its two burners on
// both cores: ~8 s here, over 30 s once on a CI machine busy with other tests.
constexpr int kJvmFramesReadyMs = 90000;

class JvmThreadDumpTest : public BpfTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    home_ = JdkHome(GetParam());
    if (home_.empty()) GTEST_SKIP() << "no JDK other than 17 in /usr/lib/jvm";
  }
  // The program on this test's JDK: its threads stop where the tests look for them.
  std::vector<std::string> JvmFrames(const std::string& ready) const {
    return JavaCommand(home_, {}, "JvmFrames", {ready});
  }
  std::string home_;
  TempDir dir_;
};

// A JVM started with no flags whose threads stop in known methods: `looptrace snapshot`
// (a background session's thread dump) names every Java thread's frames as the JVM's own
// `jcmd PID Thread.print` does, interpreted and compiled, with the source lines.
TEST_P(JvmThreadDumpTest, ThreadDumpOfAJvmWithoutFlagsNamesEveryJavaFrameAsJcmdDoes) {
  if (IsSkipped()) return;
  const std::string ready = dir_ / "ready";
  Process target(JvmFrames(ready));
  WaitForFile(ready, kJvmFramesReadyMs);
  ASSERT_TRUE(std::filesystem::exists(ready)) << "JvmFrames did not get ready";
  const std::string pid = std::to_string(target.pid());
  auto attach = RunCommand({Looptrace(), "attach", "-p", pid, "--threads", "all", "-o", dir_ / "final.json"}, 120);
  ASSERT_EQ(attach.exit_code, 0) << attach.err;
  auto snapshot = RunCommand({Looptrace(), "snapshot", "-p", pid, "-f", "json"}, 60);
  auto truth = Jstack(home_, target.pid());
  auto detach = RunCommand({Looptrace(), "detach", "-p", pid}, 120);
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.err;
  EXPECT_EQ(detach.exit_code, 0) << detach.err;
  EXPECT_EQ(attach.err.find("no Java frames"), std::string::npos) << attach.err;

  std::string text;
  auto dump = JavaFramesOf(json::parse(snapshot.out.substr(0, snapshot.out.find('\n'))), &text);
  auto thread_with = [&](std::string_view method) -> const std::vector<DumpFrame>* {
    for (const auto& [tid, frames] : dump)
      for (const auto& f : frames)
        if (f.function == method) return &frames;
    return nullptr;
  };
  const auto* napper = thread_with("JvmFrames.napper");
  ASSERT_NE(napper, nullptr) << "no thread in JvmFrames.napper:\n" << text;
  const std::vector<std::string> napper_chain = {"JvmFrames.napper", "JvmFrames.sleepyCaller",
                                                 "JvmFrames.lambda$quietly$0", "java.lang.Thread.run"};
  EXPECT_TRUE((*napper)[0].function.starts_with("java.lang.Thread.sleep")) << text;
  EXPECT_TRUE(Subsequence(SourceFunctions(*napper), napper_chain)) << text;
  // Interpreted frames carry their source line.
  for (const auto& f : *napper) {
    if (f.function == "JvmFrames.napper") {
      EXPECT_EQ(f.line, SourceLine("Thread.sleep(600_000)")) << text;
    }
    if (f.function == "JvmFrames.sleepyCaller") {
      EXPECT_EQ(f.line, SourceLine("    napper();")) << text;
    }
  }

  const auto* waiter = thread_with("JvmFrames.waiter");
  ASSERT_NE(waiter, nullptr) << text;
  EXPECT_TRUE((*waiter)[0].function.starts_with("java.lang.Object.wait")) << text;

  // tick() was called 60,000 times before its long sleep: JIT-compiled by then.
  const auto* compiled = thread_with("JvmFrames.tick");
  ASSERT_NE(compiled, nullptr) << text;
  EXPECT_TRUE(Subsequence(SourceFunctions(*compiled), {"JvmFrames.tick", "JvmFrames.compiledSleeper",
                                                       "JvmFrames.lambda$quietly$0", "java.lang.Thread.run"}))
      << text;

  // Every thread jcmd shows stopped with Java frames is in the dump with the same frames,
  // lambda proxies named as jstack names them (a thread running Java code has no anchor to
  // walk from: the burner, the ticker at times); lines agree wherever both have one.
  int compared = 0, exact = 0;
  for (const auto& [tid, expected] : truth) {
    auto runs = [&](std::string_view method) {
      return std::any_of(expected.begin(), expected.end(), [&](const JstackFrame& f) { return f.function == method; });
    };
    if (expected.empty() || runs("JvmFrames.burner") || runs("JvmFrames.ticker")) continue;
    auto it = dump.find(tid);
    ASSERT_NE(it, dump.end()) << "thread " << tid << " (" << expected[0].function << ") is not in the dump\n" << text;
    std::vector<std::string> theirs;
    for (const auto& f : expected) theirs.push_back(f.function);
    const auto ours = Functions(it->second);
    // jcmd expands the methods a compiled frame inlined; the dump names the compiled method
    // only (JDK 25 inlines Thread.sleepNanos into Thread.sleep): its frames are jcmd's, in
    // jcmd's order, maybe fewer.
    EXPECT_TRUE(Subsequence(theirs, ours) && !ours.empty() && ours.front() == theirs.front())
        << "thread " << tid << "\n"
        << text;
    exact += ours == theirs;
    if (ours == theirs)
      for (size_t i = 0; i < expected.size(); ++i) {
        if (it->second[i].line > 0 && expected[i].line > 0) {
          EXPECT_EQ(it->second[i].line, expected[i].line) << expected[i].function;
        }
      }
    ++compared;
  }
  EXPECT_GE(compared, 5) << "jcmd showed too few threads with Java frames";
  // OpenJDK 17 inlines nothing into the compiled frames these threads stop in: all equal.
  if (GetParam() == "jdk17") {
    EXPECT_EQ(exact, compared) << text;
  }
}

// The frames of a stack_sample event, innermost first, and where the first one starting with
// `prefix` is (npos when none).
size_t FrameIndex(const nlohmann::json& frames, std::string_view prefix) {
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames[i].get<std::string>().starts_with(prefix)) return i;
  return std::string::npos;
}

// Whether the frames hold each of `chain` (prefixes), in this order, innermost first.
bool InOrder(const nlohmann::json& frames, const std::vector<std::string>& chain) {
  size_t at = 0;
  for (const auto& name : chain) {
    size_t i = at;
    while (i < frames.size() && !frames[i].get<std::string>().starts_with(name)) ++i;
    if (i == frames.size()) return false;
    at = i + 1;
  }
  return true;
}

class JvmSampledFramesTest : public JvmThreadDumpTest {};

// record -p on a JVM started with no flags: the CPU samples of a thread burning in a
// JIT-compiled method and the switch-outs of a thread sleeping under interpreted calls name
// their Java methods, callers after callees, spliced where HotSpot's code runs.
TEST_P(JvmSampledFramesTest, SamplesAndSwitchOutsOfAJvmWithoutFlagsNameItsJavaMethods) {
  if (IsSkipped()) return;
  const std::string ready = dir_ / "ready";
  Process target(JvmFrames(ready));
  WaitForFile(ready, kJvmFramesReadyMs);
  ASSERT_TRUE(std::filesystem::exists(ready)) << "JvmFrames did not get ready";
  auto r = RunCommand({Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "3", "--threads", "all",
                       "--save", dir_ / "rec.jsonl", "-f", "json", "-o", dir_ / "out.json"},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Not refused: one line says what the session gives without method probes.
  EXPECT_NE(r.err.find("runs HotSpot with its method probes off"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no Java frames"), std::string::npos) << r.err;

  auto events = ReadJsonLines(dir_ / "rec.jsonl");
  // Every stack of the session: CPU samples and switch-outs (the burner's are preemptions).
  auto samples = OfType(events, "stack_sample");
  ASSERT_FALSE(samples.empty());
  // The burner: its thread is the one whose stacks are in JvmFrames.hot.
  std::optional<uint32_t> burner;
  for (const auto& s : samples)
    if (FrameIndex(s["frames"], "JvmFrames.hot") != std::string::npos) burner = s["tid"].get<uint32_t>();
  ASSERT_TRUE(burner) << "no stack names JvmFrames.hot";
  int stacks = 0, in_hot = 0, in_order = 0;
  std::string example;
  for (const auto& s : samples) {
    if (s["tid"].get<uint32_t>() != *burner) continue;
    ++stacks;
    if (FrameIndex(s["frames"], "JvmFrames.hot") == std::string::npos) {
      if (example.empty()) example = s["frames"].dump(1);
      continue;
    }
    ++in_hot;
    in_order += InOrder(s["frames"], {"JvmFrames.hot", "JvmFrames.burner", "java.lang.Thread.run"});
  }
  // hot() is nearly all the burner does; its stacks name it, under its callers. (Its stacks
  // are preemptions: the second burner keeps both cores busy so that there are many.)
  EXPECT_GE(stacks, 20);
  EXPECT_GE(in_hot, stacks * 8 / 10) << "a stack without JvmFrames.hot: " << example;
  EXPECT_GE(in_order, in_hot * 9 / 10);

  // The ticker's switch-outs: Thread.sleep under pause() under ticker().
  int ticker_switches = 0;
  for (const auto& s : samples)
    if (!s["on_cpu"].get<bool>() &&
        InOrder(s["frames"], {"java.lang.Thread.sleep", "JvmFrames.pause", "JvmFrames.ticker", "java.lang.Thread.run"}))
      ++ticker_switches;
  EXPECT_GE(ticker_switches, 50) << "the ticker sleeps 5 ms at a time for 3 s";

  auto lines = ReadJsonLines(dir_ / "out.json");
  json stats = OfType(lines, "stats").at(0)["counters"];
  EXPECT_EQ(stats["interp_stacks_dropped"], 0);
  std::cout << "burner: " << in_hot << " of " << stacks << " stacks in JvmFrames.hot, " << in_order
            << " under their callers; ticker: " << ticker_switches << " switch-outs; unnamed Java frames "
            << stats["interp_frames_unnamed"] << "\n";
}

INSTANTIATE_TEST_SUITE_P(Jdk, JvmThreadDumpTest, ::testing::Values("jdk17", "other"));
INSTANTIATE_TEST_SUITE_P(Jdk, JvmSampledFramesTest, ::testing::Values("jdk17", "other"));

}  // namespace
}  // namespace looptrace::testing
