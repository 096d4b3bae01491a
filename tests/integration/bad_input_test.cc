// Bad input: every failure is one clear stderr line naming the object and the cause,
// a documented exit code, and no probe left attached.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "harness.h"

namespace looptrace::testing {
namespace {

constexpr int kUsage = 2, kTarget = 3, kPermission = 4, kUnsupported = 5, kProfile = 6, kOutput = 7;

class BadInputTest : public BpfTest {
 protected:
  // A long-running target for the duration of one test.
  Process& Target() {
    if (!target_) {
      target_ =
          std::make_unique<Process>(std::vector<std::string>{SampleApp(), "--scenario", "idle", "--count", "20000"});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return *target_;
  }
  std::string TargetPid() { return std::to_string(Target().pid()); }

  std::string WriteProfile(const std::string& text) {
    std::string path = dir_ / "test.profile";
    std::ofstream(path) << text;
    return path;
  }

  static void ExpectOneLineError(const CommandResult& r, int code, const std::string& needle) {
    EXPECT_EQ(r.exit_code, code) << r.err;
    EXPECT_NE(r.err.find("looptrace: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "want '" << needle << "' in:\n" << r.err;
    // One error line, optionally one hint line.
    size_t error_lines = 0;
    std::istringstream lines(r.err);
    for (std::string line; std::getline(lines, line);)
      if (line.find("error: ") != std::string::npos || line.find("usage: ") != std::string::npos) ++error_lines;
    EXPECT_EQ(error_lines, 1u) << r.err;
  }

  TempDir dir_;
  std::unique_ptr<Process> target_;
};

TEST_F(BadInputTest, NonexistentPid) {
  auto r = RunCommand({Looptrace(), "record", "-p", "999999999"});
  ExpectOneLineError(r, kTarget, "no process with pid 999999999");
}

TEST_F(BadInputTest, UsageErrorsHaveTheirOwnExitCode) {
  ExpectOneLineError(RunCommand({Looptrace(), "record"}), kUsage, "pid");
  ExpectOneLineError(RunCommand({Looptrace(), "record", "-p", "12x"}), kUsage, "12x");
  ExpectOneLineError(RunCommand({Looptrace(), "record", "-p", "1", "--threads", "some"}), kUsage, "some");
  ExpectOneLineError(RunCommand({Looptrace(), "record", "-p", "1", "-f", "xml"}), kUsage, "xml");
  ExpectOneLineError(RunCommand({Looptrace(), "record", "-p", "1", "--ringbuf-size", "3M"}), kUsage, "power of two");
  ExpectOneLineError(RunCommand({Looptrace(), "frobnicate"}), kUsage, "frobnicate");
  ExpectOneLineError(RunCommand({Looptrace(), "run"}), kUsage, "command");
}

// A mistyped command or option: the nearest known one, first, on a line of its own.
TEST_F(BadInputTest, MistypedCommandsAndOptionsGetDidYouMean) {
  auto command = RunCommand({Looptrace(), "recrod", "-p", "1"});
  ExpectOneLineError(command, kUsage, "unknown command 'recrod'");
  EXPECT_NE(command.err.find("\nhint: did you mean 'record'?\n"), std::string::npos) << command.err;
  auto option = RunCommand({Looptrace(), "record", "-p", "1", "--duraton", "5"});
  ExpectOneLineError(option, kUsage, "--duraton");
  EXPECT_NE(option.err.find("hint: did you mean '--duration'?\n"), std::string::npos) << option.err;
  auto run_option = RunCommand({Looptrace(), "run", "--evil-treshold", "5", "--", "true"});
  ExpectOneLineError(run_option, kUsage, "--evil-treshold");
  EXPECT_NE(run_option.err.find("hint: did you mean '--evil-threshold'?\n"), std::string::npos) << run_option.err;
  // Nothing close: no guess.
  auto far = RunCommand({Looptrace(), "frobnicate"});
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST_F(BadInputTest, HelpHasExamples) {
  auto r = RunCommand({Looptrace(), "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("EXAMPLES"), std::string::npos);
  EXPECT_NE(r.out.find("EXIT CODES"), std::string::npos);
}

TEST_F(BadInputTest, NotRoot) {
  auto r = RunCommand(
      {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", Looptrace(), "record", "-p", TargetPid()});
  ExpectOneLineError(r, kPermission, "permission denied");
  EXPECT_NE(r.err.find("hint: run looptrace as root"), std::string::npos) << r.err;
}

TEST_F(BadInputTest, RunNotRootDoesNotStartTheCommand) {
  std::string marker = dir_ / "ran";
  chmod(dir_.path().c_str(), 0777);
  auto r = RunCommand({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", Looptrace(), "run", "--profile",
                       SampleProfile(), "--", "/bin/sh", "-c", "touch " + marker});
  ExpectOneLineError(r, kPermission, "permission denied");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command must not run untraced";
}

TEST_F(BadInputTest, RootWithoutCapabilities) {
  auto r = RunCommand({"setpriv", "--inh-caps=-all", "--bounding-set=-all", Looptrace(), "record", "-p", TargetPid()});
  ExpectOneLineError(r, kPermission, "CAP_BPF");
}

TEST_F(BadInputTest, MissingOrCorruptBtf) {
  ExpectOneLineError(RunCommand({Looptrace(), "record", "-p", TargetPid(), "--btf", "/nonexistent/vmlinux"}),
                     kUnsupported, "kernel BTF /nonexistent/vmlinux is not available");
  std::string corrupt = dir_ / "corrupt.btf";
  std::ofstream(corrupt) << "definitely not BTF";
  ExpectOneLineError(RunCommand({Looptrace(), "record", "-p", TargetPid(), "--btf", corrupt}), kUnsupported,
                     "cannot parse BTF file " + corrupt);
}

TEST_F(BadInputTest, SymbolNotFoundListsClosestNames) {
  std::string profile = WriteProfile(
      "profile typo\n"
      "probe dispatch.begin uprobe exe sample_looper_dispatch_begn\n"
      "probe dispatch.end uprobe exe sample_looper_dispatch_end\n");
  auto r = RunCommand({Looptrace(), "record", "-p", TargetPid(), "--profile", profile});
  ExpectOneLineError(r, kProfile, "symbol 'sample_looper_dispatch_begn' not found in " + SampleApp());
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hint: closest names: sample_looper_dispatch_begin"), std::string::npos) << r.err;
}

TEST_F(BadInputTest, UsdtProbeNotFound) {
  std::string profile = WriteProfile(
      "probe dispatch.begin usdt exe looptrace_sample:nope\n"
      "probe dispatch.end usdt exe looptrace_sample:dispatch__end\n");
  auto r = RunCommand({Looptrace(), "record", "-p", TargetPid(), "--profile", profile});
  ExpectOneLineError(r, kProfile, "usdt probe looptrace_sample:nope not found");
  EXPECT_NE(r.err.find("looptrace_sample:dispatch__begin"), std::string::npos) << r.err;
}

TEST_F(BadInputTest, LibraryNotMapped) {
  std::string profile = WriteProfile(
      "probe dispatch.begin uprobe libglib-2.0.so g_main_context_dispatch\n"
      "probe dispatch.end uretprobe libglib-2.0.so g_main_context_dispatch\n");
  auto r = RunCommand({Looptrace(), "record", "-p", TargetPid(), "--profile", profile});
  ExpectOneLineError(r, kProfile, "has no library 'libglib-2.0.so' mapped");
}

TEST_F(BadInputTest, NoBuiltinProfileMatches) {
  Process sleeper({"sleep", "30"});
  auto r = RunCommand({Looptrace(), "record", "-p", std::to_string(sleeper.pid())});
  ExpectOneLineError(r, kProfile, "no built-in profile matches pid");
  EXPECT_NE(r.err.find("hint: pass --profile FILE"), std::string::npos) << r.err;
}

TEST_F(BadInputTest, MalformedProfileNamesFileAndLine) {
  std::string profile = WriteProfile(
      "profile broken\n"
      "# a comment\n"
      "probe dispatch.bgin uprobe exe sample_looper_dispatch_begin\n");
  auto r = RunCommand({Looptrace(), "record", "-p", TargetPid(), "--profile", profile});
  ExpectOneLineError(r, kProfile, profile + ":3: unknown role 'dispatch.bgin'");
  auto missing = RunCommand({Looptrace(), "record", "-p", TargetPid(), "--profile", dir_ / "nope.profile"});
  ExpectOneLineError(missing, kProfile, "cannot read profile " + (dir_ / "nope.profile"));
}

TEST_F(BadInputTest, UnwritableOutputFailsBeforeAttaching) {
  auto r = RunCommand({Looptrace(), "record", "-p", TargetPid(), "-o", "/nonexistent/dir/out.txt"});
  ExpectOneLineError(r, kOutput, "cannot write /nonexistent/dir/out.txt");
  auto save = RunCommand({Looptrace(), "record", "-p", TargetPid(), "--save", "/nonexistent/rec.jsonl"});
  ExpectOneLineError(save, kOutput, "cannot write /nonexistent/rec.jsonl");
  EXPECT_EQ(kill(Target().pid(), 0), 0);
}

TEST_F(BadInputTest, RunWithMissingCommand) {
  ExpectOneLineError(RunCommand({Looptrace(), "run", "--", "no-such-command-xyz"}), kTarget,
                     "command not found: no-such-command-xyz");
  ExpectOneLineError(RunCommand({Looptrace(), "run", "--", "/nonexistent/app"}), kTarget,
                     "cannot run /nonexistent/app");
}

TEST_F(BadInputTest, ReportOfAFileThatIsNotARecording) {
  std::string bogus = dir_ / "bogus.jsonl";
  std::ofstream(bogus) << "hello\n";
  ExpectOneLineError(RunCommand({Looptrace(), "report", bogus}), kUsage, "not a looptrace recording");
  ExpectOneLineError(RunCommand({Looptrace(), "report", dir_ / "missing.jsonl"}), kUsage,
                     "cannot read " + (dir_ / "missing.jsonl"));
}

TEST_F(BadInputTest, TargetExitingDuringTheSessionStillGetsAReport) {
  Process app({SampleApp(), "--scenario", "quick", "--start-delay-ms", "700"});
  auto r =
      RunCommand({Looptrace(), "record", "--profile", SampleProfile(), "-p", std::to_string(app.pid()), "-f", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = ParseJsonLines(r.out);
  EXPECT_EQ(OfType(lines, "session").at(0)["end_reason"], "target-exited");
  EXPECT_EQ(OfType(lines, "message").size(), 20u);
}

// SIGINT while many probe points are being attached: looptrace stops, detaches what it
// attached, exits 130 (or, if attaching already finished, reports normally with 0).
TEST_F(BadInputTest, SigintDuringAttachDetachesEverything) {
  std::string profile = WriteProfile(
      "probe dispatch.begin uprobe libc.so.6 *\n"
      "probe dispatch.end uprobe exe sample_looper_dispatch_end\n");
  for (int delay_ms : {5, 20, 60}) {
    Process tracer({Looptrace(), "record", "-p", TargetPid(), "--profile", profile});
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    tracer.Signal(SIGINT);
    auto r = tracer.Wait(60);
    EXPECT_TRUE(r.exit_code == 130 || r.exit_code == 0) << r.exit_code << " " << r.err;
    EXPECT_EQ(AttachedLooptracePrograms(), std::vector<std::string>{}) << "delay " << delay_ms;
  }
  EXPECT_EQ(kill(Target().pid(), 0), 0);
}

// Outputs that would overwrite each other, and numbers that mean nothing, are usage errors
// before anything is attached (before: exit 0 with the recording overwritten, "-d nan" and
// "-d 1e-300" as "no limit", "-d 0" answered with a 309-digit range).
TEST_F(BadInputTest, ClashingOutputsAndMeaninglessNumbersAreRefused) {
  const std::string same = dir_ / "same.json";
  ExpectOneLineError(RunCommand({Looptrace(), "record", "-p", TargetPid(), "-o", same, "--save", same}), kUsage,
                     "are the same file: the report would overwrite it");
  std::filesystem::create_symlink(same, dir_ / "link.json");
  std::ofstream(same) << "{}\n";
  ExpectOneLineError(RunCommand({Looptrace(), "run", "-o", dir_ / "link.json", "--save", same, "--", SampleApp(),
                                 "--scenario", "quick"}),
                     kUsage, "are the same file");
  ExpectOneLineError(RunCommand({Looptrace(), "report", same, "-o", same}), kUsage, "the recording");
  for (const char* bad : {"nan", "inf", "1e-300", "0", "5s"}) {
    auto r = RunCommand({Looptrace(), "record", "-p", TargetPid(), "-d", bad});
    ExpectOneLineError(r, kUsage, "'" + std::string(bad) + "' is");
    EXPECT_NE(r.err.find("seconds from 0.001 to 31536000"), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 400u) << r.err;
  }
  ExpectOneLineError(RunCommand({Looptrace(), "attach", "-p", TargetPid(), "--clickhouse-interval", "nan"}), kUsage,
                     "'nan' is not a number");
}

// A .gz recording cut short says so, and where; its events up to the cut are reported and
// the loss counted (before: one "bad line", nothing else).
TEST_F(BadInputTest, ATruncatedRecordingSaysWhere) {
  const std::string recording = dir_ / "rec.jsonl.gz";
  auto made = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-o", dir_ / "r.json", "--save", recording,
                          "--", SampleApp(), "--scenario", "quick"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::filesystem::resize_file(recording, std::filesystem::file_size(recording) * 2 / 3);
  auto r = RunCommand({Looptrace(), "report", recording, "-f", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(recording + ": truncated after line "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("bad line"), std::string::npos) << r.err;
  auto stats = OfType(ParseJsonLines(r.out), "stats");
  ASSERT_EQ(stats.size(), 1u) << r.out;
  EXPECT_EQ(stats[0]["counters"].value("recording_truncated", 0), 1) << stats[0].dump();
}

// Inputs that could block or take all memory: a FIFO as --exe, 1 GiB rings (said first).
TEST_F(BadInputTest, BlockingAndHugeInputsAreBounded) {
  const std::string fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto r = RunCommand({Looptrace(), "probes", "--exe", fifo}, 20);
  EXPECT_NE(r.exit_code, 0) << r.err;
  // Refused before any profile is tried.
  EXPECT_NE((r.out + r.err).find("it is a FIFO, not a regular file"), std::string::npos) << r.out << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  auto huge = RunCommand({Looptrace(), "record", "-p", "999999999", "--ringbuf-size", "1G", "--sample-ring", "1G"});
  EXPECT_EQ(huge.exit_code, kTarget) << huge.err;
  EXPECT_NE(huge.err.find("the BPF buffers will take about 4."), std::string::npos) << huge.err;
}

}  // namespace
}  // namespace looptrace::testing
