#include "looptrace/symbols/unwinder.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <regex>

#include "looptrace/symbols/demangle.h"
#include "looptrace/symbols/symbolizer.h"
#include "looptrace/symbols/unwind_table.h"
#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

using test_util::FixturePath;
using test_util::RunCommand;
using test_util::SplitLines;

constexpr size_t kStackCopy = 64 * 1024;

// A fixture started with "stop": it sends itself SIGSTOP deep in a call chain.
class StoppedFixture {
 public:
  explicit StoppedFixture(const std::string& path) : StoppedFixture(std::vector<std::string>{path, "stop"}) {}
  // Any program that stops itself with SIGSTOP.
  explicit StoppedFixture(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      execv(args[0], args.data());
      _exit(127);
    }
    int status = 0;
    if (pid_ < 0 || waitpid(pid_, &status, WUNTRACED) != pid_ || !WIFSTOPPED(status)) {
      error_ = "fixture did not stop";
    }
  }
  ~StoppedFixture() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  StoppedFixture(const StoppedFixture&) = delete;
  StoppedFixture& operator=(const StoppedFixture&) = delete;
  pid_t pid() const { return pid_; }
  const std::string& error() const { return error_; }

 private:
  pid_t pid_ = -1;
  std::string error_;
};

// What a BPF sample would carry: registers (ptrace) and the stack bytes from rsp
// (/proc/PID/mem), plus the maps.
struct Capture {
  UnwindRegisters regs;
  std::vector<uint8_t> stack;
  std::vector<MapEntry> maps;
  std::string error;

  UnwindInput Input(int pid) const {
    UnwindInput input;
    input.pid = pid;
    input.regs = regs;
    input.stack_base = regs.rsp;
    input.stack = stack;
    input.maps = maps;
    return input;
  }
};

Capture CaptureStopped(pid_t pid) {
  Capture capture;
  if (ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) != 0) {
    capture.error = std::string("PTRACE_SEIZE: ") + std::strerror(errno);
    return capture;
  }
  ptrace(PTRACE_INTERRUPT, pid, nullptr, nullptr);
  int status = 0;
  waitpid(pid, &status, __WALL);
  user_regs_struct user{};
  if (ptrace(PTRACE_GETREGS, pid, nullptr, &user) != 0) {
    capture.error = std::string("PTRACE_GETREGS: ") + std::strerror(errno);
  } else {
    UnwindRegisters& r = capture.regs;
    r.Set(0, user.rax);
    r.Set(1, user.rdx);
    r.Set(2, user.rcx);
    r.Set(3, user.rbx);
    r.Set(4, user.rsi);
    r.Set(5, user.rdi);
    r.Set(6, user.rbp);
    r.Set(7, user.rsp);
    r.Set(8, user.r8);
    r.Set(9, user.r9);
    r.Set(10, user.r10);
    r.Set(11, user.r11);
    r.Set(12, user.r12);
    r.Set(13, user.r13);
    r.Set(14, user.r14);
    r.Set(15, user.r15);
    r.Set(16, user.rip);
    auto maps = ReadProcMaps(pid);
    if (maps) capture.maps = *maps;
    uint64_t stack_end = r.rsp + kStackCopy;
    for (const MapEntry& map : capture.maps) {
      if (r.rsp >= map.start && r.rsp < map.end) stack_end = std::min(stack_end, map.end);
    }
    capture.stack.resize(stack_end - r.rsp);
    const int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY);
    const ssize_t n = fd < 0 ? -1 : pread(fd, capture.stack.data(), capture.stack.size(), static_cast<off_t>(r.rsp));
    if (fd >= 0) close(fd);
    if (n <= 0) capture.error = "cannot read /proc/PID/mem";
    capture.stack.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  // Leave it stopped for gdb.
  ptrace(PTRACE_DETACH, pid, nullptr, reinterpret_cast<void*>(static_cast<long>(SIGSTOP)));
  return capture;
}

struct NamedFrame {
  std::string function;  // without parameters
  uint64_t pc = 0;       // set on the first frame of each physical frame (as gdb prints)
};

// Frames up to and including main, each physical frame expanded into its inlined frames.
std::vector<NamedFrame> Name(Symbolizer* symbolizer, int pid, const std::vector<UnwoundFrame>& frames) {
  std::vector<NamedFrame> out;
  for (const UnwoundFrame& frame : frames) {
    auto s = symbolizer->Symbolize(pid, frame.lookup_pc);
    bool first = true;
    bool reached_main = false;
    auto add = [&](std::string function) {
      out.push_back({std::move(function), first ? frame.pc : 0});
      first = false;
    };
    if (s->frames.empty()) add("??");
    for (const SymbolFrame& f : s->frames) {
      add(std::string(StripParameters(f.function)));
      reached_main = reached_main || f.function == "main";
    }
    if (reached_main) break;
  }
  return out;
}

// gdb's `bt` (which stops at main): "#N  [0xPC in ]NAME (ARGS) at FILE:LINE".
std::vector<NamedFrame> GdbBacktrace(int pid) {
  const std::string output = RunCommand(
      "gdb -nx -batch -iex 'set debuginfod enabled off' -ex 'set print frame-arguments none' "
      "-ex bt -p " +
      std::to_string(pid) + " 2>/dev/null");
  static const std::regex kFrame(R"(^#(\d+)\s+(?:0x([0-9a-f]+) in )?(.+?) \(.*$)");
  std::vector<NamedFrame> out;
  for (const std::string& line : SplitLines(output)) {
    std::smatch match;
    if (!std::regex_match(line, match, kFrame)) continue;
    NamedFrame frame;
    frame.function = match[3];
    if (match[2].matched) frame.pc = std::stoull(match[2], nullptr, 16);
    out.push_back(frame);
  }
  return out;
}

std::string Describe(const std::vector<NamedFrame>& frames) {
  std::string out;
  char pc[32];
  for (const NamedFrame& frame : frames) {
    std::snprintf(pc, sizeof(pc), "0x%llx", static_cast<unsigned long long>(frame.pc));
    out += "\n  " + std::string(frame.pc ? pc : "-") + " " + frame.function;
  }
  return out;
}

std::vector<uint64_t> Pcs(const std::vector<UnwoundFrame>& frames) {
  std::vector<uint64_t> pcs;
  for (const UnwoundFrame& frame : frames) pcs.push_back(frame.pc);
  return pcs;
}

struct UnwindCase {
  std::string fixture;
  bool has_frame_pointers;
  bool compare_names;  // C: gdb prints the same names; C++: gdb's DWARF names differ in form
};

class UnwindAgainstGdbTest : public ::testing::TestWithParam<UnwindCase> {};

// Unwinding a stopped fixture with DWARF CFI gives the frames gdb's bt shows: same pcs
// (for every frame gdb prints one), same count, and for C the same function names.
TEST_P(UnwindAgainstGdbTest, MatchesGdbBacktrace) {
  if (RunCommand("command -v gdb").empty()) GTEST_SKIP() << "gdb is not installed";
  const UnwindCase& c = GetParam();
  StoppedFixture fixture(FixturePath(c.fixture));
  ASSERT_EQ(fixture.error(), "");
  Capture capture = CaptureStopped(fixture.pid());
  if (capture.error.starts_with("PTRACE_SEIZE")) GTEST_SKIP() << capture.error;
  ASSERT_EQ(capture.error, "");
  ASSERT_GT(capture.stack.size(), 1024u);

  const UnwindInput input = capture.Input(fixture.pid());
  Unwinder unwinder;
  auto outcome = unwinder.Unwind(input);
  ASSERT_TRUE(outcome) << outcome.error().message;
  Symbolizer symbolizer;
  const std::vector<NamedFrame> ours = Name(&symbolizer, fixture.pid(), outcome->frames);

  auto fp_frames = UnwindFramePointers(input);
  ASSERT_TRUE(fp_frames);
  const std::vector<NamedFrame> by_fp = Name(&symbolizer, fixture.pid(), *fp_frames);

  const std::vector<NamedFrame> gdb = GdbBacktrace(fixture.pid());
  ASSERT_GE(gdb.size(), 5u) << "gdb printed no usable backtrace";
  ASSERT_EQ(ours.size(), gdb.size()) << "ours:" << Describe(ours) << "\ngdb:" << Describe(gdb);
  for (size_t i = 0; i < gdb.size(); ++i) {
    if (gdb[i].pc != 0) {
      EXPECT_EQ(ours[i].pc, gdb[i].pc) << "frame " << i << "\nours:" << Describe(ours) << "\ngdb:" << Describe(gdb);
    }
    if (c.compare_names) {
      EXPECT_EQ(ours[i].function, gdb[i].function) << "frame " << i;
    }
  }
  EXPECT_EQ(ours.back().function, "main");
  EXPECT_EQ(ours.front().pc, capture.regs.rip);

  // Second unwind with the same session reuses the reported modules.
  auto again = unwinder.Unwind(input);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->frames.size(), outcome->frames.size());
  EXPECT_EQ(again->modules_reported, 0u);

  // The frame-pointer walk agrees only when the code keeps frame pointers.
  auto pcs = [](const std::vector<NamedFrame>& frames) {
    std::vector<uint64_t> out;
    for (const NamedFrame& f : frames) {
      if (f.pc != 0) out.push_back(f.pc);
    }
    return out;
  };
  if (c.has_frame_pointers) {
    EXPECT_EQ(pcs(by_fp), pcs(ours)) << "fp:" << Describe(by_fp);
  } else {
    EXPECT_NE(pcs(by_fp), pcs(ours)) << "fp:" << Describe(by_fp);
    EXPECT_LT(pcs(by_fp).size(), pcs(ours).size()) << "fp:" << Describe(by_fp);
  }
  // The compiled tables walk the same frames as libdwfl's DWARF interpreter.
  TableUnwinder tables;
  auto by_table = tables.Unwind(input);
  ASSERT_TRUE(by_table) << by_table.error().message;
  EXPECT_EQ(Pcs(by_table->frames), Pcs(outcome->frames)) << "stopped: " << by_table->stop_reason;
  RecordProperty("frames", std::to_string(ours.size()));
  if (std::getenv("LOOPTRACE_TEST_VERBOSE") != nullptr) {
    std::fprintf(stderr, "ours:%s\ngdb:%s\nframe pointers:%s\n", Describe(ours).c_str(), Describe(gdb).c_str(),
                 Describe(by_fp).c_str());
  }
}

TEST(UnwinderTest, BadInputDegradesWithoutCrashing) {
  StoppedFixture fixture(FixturePath("symtest_o2_nofp_pie"));
  ASSERT_EQ(fixture.error(), "");
  Capture capture = CaptureStopped(fixture.pid());
  if (capture.error.starts_with("PTRACE_SEIZE")) GTEST_SKIP() << capture.error;
  ASSERT_EQ(capture.error, "");
  Unwinder unwinder;
  const UnwindInput full = capture.Input(fixture.pid());
  auto reference = unwinder.Unwind(full);
  ASSERT_TRUE(reference);
  ASSERT_GE(reference->frames.size(), 8u);

  // A short stack copy: fewer frames, with a reason.
  UnwindInput shorter = full;
  shorter.stack = std::span<const uint8_t>(capture.stack.data(), 128);
  auto partial = unwinder.Unwind(shorter);
  ASSERT_TRUE(partial);
  EXPECT_LT(partial->frames.size(), reference->frames.size());
  EXPECT_FALSE(partial->stop_reason.empty());
  EXPECT_EQ(partial->frames.front().pc, capture.regs.rip);

  // No stack at all, garbage stack bytes, no maps: frame 0 at least, never a crash.
  UnwindInput empty = full;
  empty.stack = {};
  auto none = UnwindStack(empty);
  ASSERT_TRUE(none);
  EXPECT_GE(none->size(), 1u);
  std::vector<uint8_t> garbage(capture.stack.size(), 0xAB);
  UnwindInput noise = full;
  noise.stack = garbage;
  ASSERT_TRUE(UnwindStack(noise));
  ASSERT_TRUE(UnwindFramePointers(noise));
  UnwindInput no_maps = full;
  no_maps.maps = {};
  auto unmapped = Unwinder().Unwind(no_maps);
  ASSERT_TRUE(unmapped);
  EXPECT_EQ(unmapped->frames.size(), 1u);

  // Missing rip or rsp is an error; a frame-pointer walk needs only rip.
  UnwindInput no_rip = full;
  no_rip.regs.valid_mask &= ~UnwindRegisters::Bit(16);
  EXPECT_FALSE(UnwindStack(no_rip));
  UnwindInput only_rip;
  only_rip.regs.Set(16, 0x1234);
  auto fp = UnwindFramePointers(only_rip);
  ASSERT_TRUE(fp);
  EXPECT_EQ(fp->size(), 1u);

  // The session survives all of this and still unwinds fully.
  auto again = unwinder.Unwind(full);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->frames.size(), reference->frames.size());
}

// Debian's own binaries, which keep no frame pointers: nearly all of their code is
// covered by rows a BPF walker can evaluate (rsp/rbp + offset, PLT stubs).
TEST(UnwindTableTest, DebianBinariesAreCoveredByCompactRows) {
  std::vector<std::string> modules = {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11", "/usr/bin/node"};
  const std::string libjvm = RunCommand("find /usr/lib/jvm -path '*17*' -name libjvm.so 2>/dev/null | head -n1");
  if (!libjvm.empty()) modules.push_back(libjvm.substr(0, libjvm.find('\n')));
  for (const std::string& module : modules) {
    if (access(module.c_str(), R_OK) != 0) continue;
    auto table = CompileUnwindTable(module);
    ASSERT_TRUE(table) << table.error().message;
    ASSERT_FALSE(table->rows.empty()) << module;
    EXPECT_GT(table->fdes, 1000u) << module;
    const double covered = static_cast<double>(table->covered_bytes) /
                           static_cast<double>(table->covered_bytes + table->unsupported_bytes);
    EXPECT_GE(covered, 0.99) << module;
    for (size_t i = 1; i < table->rows.size(); ++i) {
      ASSERT_LT(table->rows[i - 1].start, table->rows[i].start) << module << " row " << i;
      ASSERT_FALSE(table->rows[i - 1].SameRuleAs(table->rows[i])) << module << " row " << i << " not merged";
    }
    RecordProperty(module, std::to_string(table->rows.size()) + " rows");
  }
  EXPECT_FALSE(CompileUnwindTable("/nonexistent/libnothing.so"));
  EXPECT_FALSE(CompileUnwindTable("/proc/self/status"));
}

// Debian's python3.11 stopped 30 Python calls deep (in libc's kill): the compiled tables walk
// from libc through the interpreter to _start, frame for frame as libdwfl does.
TEST(UnwindTableTest, WalksAStoppedDebianPythonAsLibdwfl) {
  if (access("/usr/bin/python3.11", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3.11";
  StoppedFixture python({"/usr/bin/python3.11", "-c",
                         "import os, signal\n"
                         "def down(n):\n"
                         "    return down(n - 1) if n else os.kill(os.getpid(), signal.SIGSTOP)\n"
                         "down(30)\n"});
  ASSERT_EQ(python.error(), "");
  Capture capture = CaptureStopped(python.pid());
  if (capture.error.starts_with("PTRACE_SEIZE")) GTEST_SKIP() << capture.error;
  ASSERT_EQ(capture.error, "");
  const UnwindInput input = capture.Input(python.pid());
  auto reference = Unwinder().Unwind(input);
  ASSERT_TRUE(reference);
  TableUnwinder tables;
  auto walked = tables.Unwind(input);
  ASSERT_TRUE(walked) << walked.error().message;
  EXPECT_GE(walked->frames.size(), 10u);
  EXPECT_EQ(walked->stop_reason, "") << "the walk should reach the thread's first frame";
  EXPECT_EQ(Pcs(walked->frames), Pcs(reference->frames)) << "libdwfl stopped: " << reference->stop_reason;

  // Bad input: frame 0 at least, never a crash.
  UnwindInput noise = input;
  std::vector<uint8_t> garbage(capture.stack.size(), 0xAB);
  noise.stack = garbage;
  auto noisy = tables.Unwind(noise);
  ASSERT_TRUE(noisy);
  EXPECT_GE(noisy->frames.size(), 1u);
  UnwindInput no_maps = input;
  no_maps.maps = {};
  auto unmapped = tables.Unwind(no_maps);
  ASSERT_TRUE(unmapped);
  EXPECT_EQ(unmapped->frames.size(), 1u);
  EXPECT_EQ(unmapped->stop_reason, "no module at the return address");
  UnwindInput no_rsp = input;
  no_rsp.regs.valid_mask &= ~UnwindRegisters::Bit(7);
  EXPECT_FALSE(tables.Unwind(no_rsp));
}

TEST(UnwinderTest, RegistersArePlainData) {
  UnwindRegisters regs;
  regs.Set(16, 0x401000);
  regs.Set(7, 0x7ffd0000);
  regs.Set(99, 1);  // ignored
  EXPECT_EQ(regs.rip, 0x401000u);
  EXPECT_EQ(regs.Get(7), 0x7ffd0000u);
  EXPECT_EQ(regs.Get(99), 0u);
  EXPECT_TRUE(regs.Has(16));
  EXPECT_FALSE(regs.Has(6));
  EXPECT_EQ(regs.valid_mask, UnwindRegisters::Bit(16) | UnwindRegisters::Bit(7));
  EXPECT_EQ(UnwindRegisters::kNeeded & UnwindRegisters::kAll, UnwindRegisters::kNeeded);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, UnwindAgainstGdbTest,
                         ::testing::Values(UnwindCase{"symtest_o2_nofp_pie", false, true},
                                           UnwindCase{"symtest_o2_nofp_nopie", false, true},
                                           UnwindCase{"symtest_o0_nofp_pie", false, true},
                                           UnwindCase{"symtest_o0_fp_pie", true, true},
                                           UnwindCase{"symtest_o2_fp_nopie", true, true},
                                           UnwindCase{"symtest_cxx_o2_nofp_nopie", false, false},
                                           UnwindCase{"symtest_cxx_o2_pie", true, false}),
                         [](const auto& info) { return info.param.fixture; });

}  // namespace
}  // namespace looptrace::symbols
