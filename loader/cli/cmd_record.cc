// looptrace record -p PID / looptrace run [options] COMMAND [ARGS...]: trace, then report.
#include <fmt/format.h>

#include <sstream>

#include "loader/cli/cli.h"
#include "loader/decode/mapping_namer.h"
#include "loader/session/output_file.h"
#include "loader/session/recording.h"
#include "loader/session/trace.h"
#include "looptrace/report/render.h"
#include "looptrace/util/log.h"

namespace looptrace::cli {
namespace {

constexpr const char* kRecordExamples =
    R"(  looptrace record -p 1234                    trace pid 1234 until Ctrl-C, text report
  looptrace record -p 1234 -d 10 -f json -o msgs.json.gz
  looptrace record -p 1234 --save rec.jsonl.gz   also keep the event stream
  looptrace record -p 1234 --cpu-budget 2       sample less while it costs over 2% of one CPU
  looptrace record -p 1234 --evil-threshold 300 --method-mapping methodMapping.txt
)";
constexpr const char* kRunExamples = R"(  looptrace run /usr/bin/python3.11 app.py
  looptrace run -f json -o out.json -- ./app --flag     "--" is optional
  looptrace run --profile glib -d 5 gnome-calculator
)";
// Where the program's output and the report go (run only).
constexpr const char* kRunOutput = R"(
OUTPUT:
  The program keeps looptrace's stdin, stdout and stderr. Without -o the report goes to
  stdout as well, in one piece once the session ends: after all the program wrote when it
  exited first; with -d the program runs on and may write before and after the report.
  -o FILE keeps the report apart from the program's output.)";

class TraceCommand : public Command {
 public:
  explicit TraceCommand(bool run) : run_(run) {}
  std::string_view name() const override { return run_ ? "run" : "record"; }
  bool TakesCommand() const override { return run_; }

  void Setup(CLI::App* cmd) override {
    if (!run_) cmd->add_option("-p,--pid", pid_, "process to trace")->required()->check(CLI::PositiveNumber);
    AddSessionOptions(cmd, flags_);
    cmd->add_option("-d,--duration", flags_.session.duration_s, "stop after S seconds")
        ->check(FiniteNumber(0.001, 31'536'000, "seconds"));
    cmd->add_option("--save", save_, "also save the decoded event stream (JSON lines, .gz ok)");
    AddReportOutputOptions(cmd, output_);
    AddAnalysisOptions(cmd, analysis_);
    cmd->footer(run_ ? kRunOutput + Footer(kRunExamples) : Footer(kRecordExamples));
  }

  int Run(std::vector<std::string> command) override {
    if (run_ && command.empty())
      return Fail(Error{"run needs a command", "looptrace run ./app --flag", ExitCode::kUsage});
    if (auto ok = CheckFormat(output_.format); !ok) return Fail(ok.error());
    if (auto ok = flags_.Resolve(); !ok) return Fail(ok.error());
    if (auto ok = CheckNotSameFile(output_.path, save_, "--save"); !ok) return Fail(ok.error());
    // The session's folded stacks show every wait, idle ones included.
    if (output_.format == "folded" && analysis_.Rendering().folded_scope == "session")
      flags_.session.idle_stacks = true;

    // Inputs are read and outputs opened before anything is attached: a bad path fails
    // before the target is touched.
    auto namer = LoadMethodMapping(output_, analysis_);
    if (!namer) return Fail(namer.error());
    auto out = loader::OutputFile::Create(output_.path);
    if (!out) return Fail(out.error());
    std::unique_ptr<loader::RecordingWriter> recording;
    if (!save_.empty()) {
      auto writer = loader::RecordingWriter::Create(save_);
      if (!writer) return Fail(writer.error());
      recording = std::move(*writer);
    }
    auto signal_fd = loader::BlockTerminationSignals();
    if (!signal_fd) return Fail(signal_fd.error());

    Pipeline pipeline(analysis_);
    if (recording) pipeline.AddObserver(recording.get());
    Result<void> traced;
    if (run_) {
      auto result = loader::RunCommand(command, flags_.session, signal_fd->get(), pipeline);
      traced = result ? Result<void>{} : std::unexpected(result.error());
    } else {
      traced = loader::RecordProcess(pid_, flags_.session, signal_fd->get(), pipeline);
    }
    if (!traced) return Fail(traced.error());

    // Each output is written even when the other fails.
    int status = 0;
    if (recording) {
      if (auto ok = recording->Commit(); !ok) status = Fail(ok.error());
    }
    const auto renderer = ReportRenderer(analysis_, output_);
    Report report = pipeline.TakeReport();
    if (run_ && (*out)->is_stdout()) {
      // The program's own output shares stdout: the report comes after the session, in one
      // piece, so that no line of the program's (still running after -d, or its children's)
      // falls inside it.
      std::ostringstream text;
      renderer->Render(report, text);
      (*out)->WriteWhole(text.view());
    } else {
      renderer->Render(report, (*out)->stream());
    }
    if (auto ok = (*out)->Commit(); !ok) return Fail(ok.error());
    if (!output_.path.empty()) log::Info("report written to {}", output_.path);
    return status;
  }

 private:
  bool run_;
  pid_t pid_ = 0;
  SessionFlags flags_;
  std::string save_;
  ReportOutput output_;
  AnalysisOptions analysis_;
};

}  // namespace

std::unique_ptr<Command> MakeRecordCommand() { return std::make_unique<TraceCommand>(false); }
std::unique_ptr<Command> MakeRunCommand() { return std::make_unique<TraceCommand>(true); }

}  // namespace looptrace::cli
