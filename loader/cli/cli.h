// The command line: one file per command (like perf's builtin-*.c), each owning its
// options, help and examples; shared option groups and error handling here.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loader/decode/mapping_namer.h"
#include "loader/session/session.h"
#include "looptrace/tracers/pipeline.h"
#include "looptrace/util/result.h"

namespace looptrace::cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual std::string_view name() const = 0;
  // Declares the subcommand's options, help and examples.
  virtual void Setup(CLI::App* command) = 0;
  // `trailing`: what followed the command's options untouched (run's COMMAND ARGS).
  virtual int Run(std::vector<std::string> trailing) = 0;
  // True when words after the options belong to a program (run): see main.cc.
  virtual bool TakesCommand() const { return false; }
};

std::unique_ptr<Command> MakeRecordCommand();
std::unique_ptr<Command> MakeRunCommand();
std::unique_ptr<Command> MakeReportCommand();
std::unique_ptr<Command> MakeProbesCommand();
std::unique_ptr<Command> MakeProfilesCommand();
std::unique_ptr<Command> MakeAttachCommand();
std::unique_ptr<Command> MakeSessionsCommand();
std::unique_ptr<Command> MakeStatusCommand();
std::unique_ptr<Command> MakeSnapshotCommand();
std::unique_ptr<Command> MakeDetachCommand();
std::unique_ptr<Command> MakeTopCommand();
std::unique_ptr<Command> MakeClickHouseSchemaCommand();

// Prints "looptrace: error: ..." (+ "hint: ...") and returns the error's exit code.
int Fail(const Error& error);

// --top, --max-nodes and every option the registered tracers declare, bound to `options`.
void AddAnalysisOptions(CLI::App* command, AnalysisOptions& options);

// What a report needs besides the analysis options: where, which format, which names.
struct ReportOutput {
  std::string path;             // -o FILE ("" = stdout)
  std::string format = "text";  // -f
  std::string method_mapping;   // --method-mapping FILE
  bool full = false;            // --full: the whole text report, not its short view
};
void AddReportOutputOptions(CLI::App* command, ReportOutput& output);
// The renderer of -f for the report of record, run and report: the text report's short
// view unless --full or -v (which adds the filter counters).
std::unique_ptr<Renderer> ReportRenderer(const AnalysisOptions& analysis, const ReportOutput& output);
// Checks -f against the renderer registry.
Result<void> CheckFormat(const std::string& format);
// --method-mapping FILE loaded and set as `analysis`'s namer (null without the option); the
// caller keeps it alive as long as the analysis runs.
Result<std::unique_ptr<loader::MappingNamer>> LoadMethodMapping(const ReportOutput& output, AnalysisOptions& analysis);

// A number of `unit` (seconds, ms) from `min` to `max`, strictly: "nan", "inf", "1e-300"
// (no limit once made nanoseconds) and trailing junk are usage errors naming the range.
CLI::Validator FiniteNumber(double min, double max, std::string unit);

// The report (`report_path`, -o) and another file looptrace reads or writes (`other`,
// --save or the recording read) must differ: the same path, or one file by two names (a
// link), would overwrite the one with the other. "" is stdout or none: no clash.
Result<void> CheckNotSameFile(const std::string& report_path, const std::string& other, std::string_view other_flag);

// "16M" -> bytes; a power of two in [min, max].
Result<size_t> ParseSize(std::string_view flag, std::string_view text, size_t min, size_t max);

// How to trace (record, run, attach, top): profile, threads, ring sizes, BTF, thread
// tracking, DWARF unwinding, exact entries; Resolve() checks the sizes into `session`.
struct SessionFlags {
  loader::SessionOptions session;
  std::string threads;  // "" = the profile's choice
  std::string ringbuf_size = "4M";
  std::string record_ring = "65536";
  std::string beat_buffer = "1048576";
  std::string sample_ring = "8M";
  bool no_thread_tracking = false;
  // Checks the sizes; warns when the buffers will take over 1 GiB of memory.
  Result<void> Resolve();
  void WarnAboutRingMemory() const;
};
void AddSessionOptions(CLI::App* command, SessionFlags& flags);

// Overwrites with '*', in place, the passwords of --clickhouse URLs among the arguments
// (user:PASSWORD@ and password=PASSWORD), so that `ps` and /proc/PID/cmdline no longer
// show them. Returns whether one was there. Call it once the arguments are parsed.
bool HideSecretsInArguments(int argc, char** argv);

// EXAMPLES / TROUBLESHOOTING / EXIT CODES footers.
std::string Footer(std::string_view examples);

}  // namespace looptrace::cli
