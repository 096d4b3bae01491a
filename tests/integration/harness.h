// Helpers for end-to-end tests: run the real looptrace against the real sample target.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace looptrace::testing {

inline std::string Looptrace() { return std::string(LOOPTRACE_BINARY_DIR) + "/looptrace"; }
inline std::string SampleApp() { return std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app"; }
// The sample target's profiles (tests/sample_app/profiles/NAME.profile): test files, passed
// with --profile, never built into looptrace. "sample" for the id hooks (looptrace-sample-app,
// -nofp), "sample-cyg" for -finstrument-functions (-cyg), "sample-usdt" for its USDT probes.
inline std::string SampleProfile(const std::string& name = "sample") {
  return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/sample_app/profiles/" + name + ".profile";
}

struct CommandResult {
  int exit_code = -1;  // 128+signal when killed
  std::string out;
  std::string err;
};

// A child process with captured stdout/stderr.
class Process {
 public:
  explicit Process(const std::vector<std::string>& argv) {
    int out_pipe[2], err_pipe[2], exec_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(exec_pipe, O_CLOEXEC) != 0)
      std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      close(exec_pipe[0]);
      dup2(out_pipe[1], 1);
      dup2(err_pipe[1], 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    // The exec pipe closes when the child execs: return only once it runs its program,
    // so a test can attach to it by pid right away.
    close(exec_pipe[1]);
    char ignored;
    while (read(exec_pipe[0], &ignored, 1) < 0 && errno == EINTR) {
    }
    close(exec_pipe[0]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
  }
  ~Process() {
    if (!waited_) {
      kill(pid_, SIGKILL);
      Wait(10);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
  }
  pid_t pid() const { return pid_; }
  void Signal(int sig) { kill(pid_, sig); }

  // Reads output until the process exits or the timeout passes (then SIGKILL).
  CommandResult Wait(int timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    bool out_open = out_fd_ >= 0, err_open = err_fd_ >= 0;
    while (out_open || err_open) {
      pollfd fds[2] = {{out_open ? out_fd_ : -1, POLLIN, 0}, {err_open ? err_fd_ : -1, POLLIN, 0}};
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) {
        kill(pid_, SIGKILL);
        ADD_FAILURE() << "process " << pid_ << " timed out after " << timeout_s << " s";
        left = 1000;
        deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      }
      if (poll(fds, 2, left) < 0) break;
      char buf[65536];
      if (out_open && (fds[0].revents & (POLLIN | POLLHUP))) {
        ssize_t n = read(out_fd_, buf, sizeof(buf));
        if (n <= 0)
          out_open = false;
        else
          result_.out.append(buf, n);
      }
      if (err_open && (fds[1].revents & (POLLIN | POLLHUP))) {
        ssize_t n = read(err_fd_, buf, sizeof(buf));
        if (n <= 0)
          err_open = false;
        else
          result_.err.append(buf, n);
      }
    }
    int status = 0;
    if (!waited_) {
      waitpid(pid_, &status, 0);
      waited_ = true;
      result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return result_;
  }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  bool waited_ = false;
  CommandResult result_;
};

inline CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_s = 120) {
  Process p(argv);
  return p.Wait(timeout_s);
}

inline std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

inline std::vector<nlohmann::json> ParseJsonLines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

inline std::vector<nlohmann::json> OfType(const std::vector<nlohmann::json>& lines, const std::string& type) {
  std::vector<nlohmann::json> out;
  for (const auto& l : lines)
    if (l.value("type", "") == type) out.push_back(l);
  return out;
}

// Counter `name` of a JSON report's data quality (its last "stats" line). A counter the
// report does not have fails the test, naming it and the counters the report has: a renamed
// or removed counter must not pass a check that it stayed zero. (0 is returned then, and the
// test has already failed.)
inline uint64_t Counter(const std::vector<nlohmann::json>& lines, const std::string& name) {
  const std::vector<nlohmann::json> stats = OfType(lines, "stats");
  if (stats.empty()) {
    ADD_FAILURE() << "counter " << name << ": the report has no \"stats\" line (" << lines.size() << " lines)";
    return 0;
  }
  const nlohmann::json counters = stats.back().value("counters", nlohmann::json::object());
  const auto it = counters.find(name);
  if (it == counters.end() || !it->is_number_unsigned()) {
    ADD_FAILURE() << "counter " << name << " is not in the report's counters: " << counters.dump();
    return 0;
  }
  return it->get<uint64_t>();
}

// How far `measured[EDGE_ns]` (EDGE: "begin" or "end") lies outside the window the target's
// truth measured around that hook, [truth[EDGE_ns], truth[EDGE_after_ns]]: the hook's instant
// is somewhere in it (about 1 us wide, unless the target was preempted right there).
inline int64_t WindowError(const nlohmann::json& measured, const nlohmann::json& truth, const std::string& edge) {
  const int64_t at = measured[edge + "_ns"];
  const int64_t before = truth[edge + "_ns"];
  const int64_t after = truth.value(edge + "_after_ns", before);
  return at < before ? before - at : at > after ? at - after : 0;
}

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char templ[] = "/tmp/looptrace-test-XXXXXX";
    path_ = mkdtemp(templ);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Names of BPF programs that are attached anywhere on the system through links or perf
// events (bpftool), so tests can prove that looptrace left nothing behind.
inline std::vector<std::string> AttachedLooptracePrograms() {
  std::vector<std::string> found;
  for (const char* what : {"link", "perf"}) {
    CommandResult r = RunCommand({"bpftool", "-j", what, "show"}, 30);
    if (r.exit_code != 0 || r.out.empty()) continue;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_array()) continue;
    for (const auto& entry : j) {
      int prog_id = entry.value("prog_id", 0);
      if (!prog_id) continue;
      CommandResult prog = RunCommand({"bpftool", "-j", "prog", "show", "id", std::to_string(prog_id)}, 30);
      auto pj = nlohmann::json::parse(prog.out, nullptr, false);
      std::string name = pj.is_object() ? pj.value("name", "") : "";
      if (name.starts_with("lt_")) found.push_back(std::string(what) + ":" + name);
    }
  }
  return found;
}

// Fails loudly when the environment cannot run BPF tests, unless skipping is allowed.
inline void RequireRootOrSkip() {
  if (geteuid() == 0) return;
  if (const char* allow = std::getenv("LOOPTRACE_ALLOW_SKIP"); allow && std::string(allow) == "1")
    GTEST_SKIP() << "integration tests need root (LOOPTRACE_ALLOW_SKIP=1 set)";
  FAIL() << "integration tests need root and BPF; run as root or set LOOPTRACE_ALLOW_SKIP=1";
}

// Base of the root/BPF test fixtures: fails (or skips, if allowed) without root, and
// proves after every test that no looptrace program stayed attached.
class BpfTest : public ::testing::Test {
 protected:
  void SetUp() override { RequireRootOrSkip(); }
  void TearDown() override {
    if (!IsSkipped()) {
      EXPECT_EQ(AttachedLooptracePrograms(), std::vector<std::string>{});
    }
  }
};

inline void WaitForFile(const std::string& path, int timeout_ms) {
  for (int i = 0; i < timeout_ms / 10 && !std::filesystem::exists(path); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// The duration of a record or truth line with begin_ns and end_ns.
inline int64_t Cost(const nlohmann::json& span) {
  return span["end_ns"].get<int64_t>() - span["begin_ns"].get<int64_t>();
}

// `looptrace run OPTIONS -- COMMAND`.
inline std::vector<std::string> LooptraceRun(const std::vector<std::string>& options,
                                             const std::vector<std::string>& command) {
  std::vector<std::string> argv = {Looptrace(), "run"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// ---- The JVM tests (runtime_jvm_*_test.cc): Debian's OpenJDK 17 and the programs of
// tests/runtimes/java/, compiled with it when looptrace is built.

inline std::string Jdk17() { return LOOPTRACE_JDK17; }
inline std::string JavaClasses() { return std::string(LOOPTRACE_RUNTIME_PROGRAMS_DIR) + "/java"; }

// The java command of the JDK at `home` running test program `program` with `app` as its
// arguments, after `jvm_flags` (none: how production JVMs run).
inline std::vector<std::string> JavaCommand(const std::string& home, const std::vector<std::string>& jvm_flags,
                                            const std::string& program, const std::vector<std::string>& app) {
  std::vector<std::string> argv = {home + "/bin/java"};
  argv.insert(argv.end(), jvm_flags.begin(), jvm_flags.end());
  argv.insert(argv.end(), {"-cp", JavaClasses(), program});
  argv.insert(argv.end(), app.begin(), app.end());
  return argv;
}

// An AWT program of the tests (EdtApp, EdtWaits, ...) on OpenJDK 17, headless.
inline std::vector<std::string> AwtCommand(const std::string& program, const std::vector<std::string>& app,
                                           const std::vector<std::string>& jvm_flags = {}) {
  std::vector<std::string> flags = {"-Djava.awt.headless=true"};
  flags.insert(flags.end(), jvm_flags.begin(), jvm_flags.end());
  return JavaCommand(Jdk17(), flags, program, app);
}

// Base of the JVM fixtures: a BpfTest that fails, saying how to get them, when OpenJDK 17's
// java or the classes of the fixture's programs are missing; with a scratch directory.
class JvmTest : public BpfTest {
 protected:
  explicit JvmTest(std::vector<std::string> programs) : programs_(std::move(programs)) {}
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    const std::string java = Jdk17() + "/bin/java";
    ASSERT_EQ(access(java.c_str(), X_OK), 0) << java << " is missing: run scripts/setup.sh (openjdk-17-jdk-headless)";
    for (const std::string& program : programs_)
      ASSERT_EQ(access((JavaClasses() + "/" + program + ".class").c_str(), R_OK), 0)
          << program << ".class was not built: javac was missing when looptrace was configured (run scripts/setup.sh)";
  }

  TempDir dir_;

 private:
  std::vector<std::string> programs_;
};

// What a wait-bounded JVM profile promises, against the events the program timed itself
// (type "event": begin_ns, end_ns, name): each event is exactly one message of the thread named
// `thread_name` (a wait inside it splits nothing), its begin and end within 2 ms of the truth
// (all boundaries but one: one end may be late by a preemption after the event read its clock
// and before it returned to its wait, which no sample can tell from the event; 20 ms at most),
// named by its method; "messages by name" counts each name's events and the program's
// unmeasured first round.
struct WaitBoundedMessages {
  std::string profile;
  std::string waits_in;  // the wait that bounds messages, as the session's definition names it
  std::string thread_name;
};

inline void CheckWaitBoundedMessages(const std::vector<nlohmann::json>& lines,
                                     const std::vector<nlohmann::json>& events, const WaitBoundedMessages& expected) {
  constexpr int64_t kMs = 1'000'000;
  const nlohmann::json session = OfType(lines, "session").at(0);
  EXPECT_EQ(session["profile"], expected.profile);
  EXPECT_EQ(session["message_definition"],
            "wait-bounded: a thread's messages bounded by its waits in " + expected.waits_in);
  const auto messages = OfType(lines, "message");
  ASSERT_FALSE(messages.empty());
  std::map<std::string, size_t> truth_by_name;
  int64_t max_error = 0;
  int late = 0;  // boundaries more than 2 ms off
  for (const auto& e : events) {
    SCOPED_TRACE(e.dump());
    ++truth_by_name[e["name"].get<std::string>()];
    const int64_t begin = e["begin_ns"], end = e["end_ns"];
    std::vector<const nlohmann::json*> overlapping;
    for (const auto& m : messages)
      if (m["begin_ns"].get<int64_t>() < end && m["end_ns"].get<int64_t>() > begin) overlapping.push_back(&m);
    ASSERT_EQ(overlapping.size(), 1u) << "messages overlapping the event";
    const nlohmann::json& m = *overlapping[0];
    EXPECT_NE(m["tid"], session["pid"]);                                      // the watched thread, not the main thread
    EXPECT_EQ(m.value("thread_name", ""), expected.thread_name) << m.dump();  // its Java name, whole
    const int64_t begin_error = std::llabs(m["begin_ns"].get<int64_t>() - begin);
    const int64_t end_error = std::llabs(m["end_ns"].get<int64_t>() - end);
    EXPECT_LE(begin_error, 20 * kMs) << m.dump();
    EXPECT_LE(end_error, 20 * kMs) << m.dump();
    late += (begin_error > 2 * kMs) + (end_error > 2 * kMs);
    max_error = std::max({max_error, begin_error, end_error});
    EXPECT_EQ(m.value("name", nlohmann::json()).dump(), nlohmann::json(e["name"]).dump()) << m.dump();
  }
  EXPECT_LE(late, 1) << "message boundaries more than 2 ms from the truth";
  std::map<std::string, uint64_t> counted;
  for (const auto& n : OfType(lines, "message_name_summary"))
    if (!n["name"].is_null()) counted[n["name"].get<std::string>()] = n["count"].get<uint64_t>();
  for (const auto& [name, count] : truth_by_name) EXPECT_EQ(counted[name], count + 1) << name;
  std::cout << fmt::format("{} events, each one message; worst begin/end error {:.3f} ms\n", events.size(),
                           static_cast<double>(max_error) / kMs);
}

}  // namespace looptrace::testing
